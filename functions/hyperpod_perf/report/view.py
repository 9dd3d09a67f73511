"""Derived views every rendering shares: fleet rows, file-system figures, GPU outliers, NCCL pairs.

Computed once from the Report so HTML, Markdown, e-mail and Slack can never disagree.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from hyperpod_perf.domain.findings import Finding, Severity, Tier
from hyperpod_perf.domain.names import NodeName, NodeNames, node_label
from hyperpod_perf.domain.report import FileSystemSummary, HistoryDelta, NodeSummary, Report
from hyperpod_perf.report.fsx_figures import lustre_sentences
from hyperpod_perf.report.history import HistoryIndex
from hyperpod_perf.report.verdict import (
    FAMILIES,
    FindingGroup,
    group_findings,
    node_findings,
    report_names,
    verdict_of,
    worst_by_family,
)
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds
from hyperpod_perf.rules.urgency import top_tier, urgency_of

#: Above this many nodes the GPU small multiples show outliers plus a distribution.
SMALL_MULTIPLES_LIMIT = 24


@dataclass
class FleetRow:
    node: str
    summary: NodeSummary | None
    findings: list[Finding]
    families: dict[str, Severity | None]  # None: nothing in that family was checked

    @property
    def worst(self) -> Severity:
        return max((f.severity for f in self.findings), key=lambda s: s.rank, default=Severity.OK)

    @property
    def concerns(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.CONCERN]

    @property
    def infos(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.INFO]

    @property
    def tier(self) -> Tier | None:
        """The node's most urgent tier (None: nothing but OK)."""
        return top_tier(self.findings)

    @property
    def sort_key(self) -> tuple[int, int, int, str]:
        tier = self.tier
        return (tier.rank if tier else 3, -self.worst.rank, -len(self.concerns), self.node)

    @property
    def group_and_type(self) -> str:
        """`worker / ml.p5.48xlarge`: the fleet table's group column ("" when not described)."""
        s = self.summary
        return " / ".join(x for x in ((s.instance_group, s.instance_type) if s else ()) if x)

    @property
    def availability_zone(self) -> str:
        return (self.summary.availability_zone or "") if self.summary else ""

    @property
    def label(self) -> str:
        """`ip-10-1-125-188 (i-0a1b2c3d4e5f60005)`: how every rendering names the node."""
        s = self.summary
        return NodeName(self.node, s.instance_id, s.hostname).label if s else node_label(self.node, None)

    @property
    def placement(self) -> str:
        """`ml.p5.48xlarge, us-west-2a`: what a node's heading adds after its label (which
        already carries the host name)."""
        s = self.summary
        return ", ".join(x for x in ((s.instance_type, s.availability_zone) if s else ()) if x)


@dataclass
class FsFigures:
    fs: FileSystemSummary
    kind: str  # "throughput" (Lustre, MB/s vs provisioned) or "iops" (OpenZFS, % vs limit)
    peak: float | None
    mean: float | None
    limit: float | None  # the line the chart draws (provisioned MB/s or the % limit)
    share_at_or_above: float | None  # fraction of datapoints at/above the saturation level
    level: float | None  # the saturation level in the series' unit
    thresholds: Thresholds = DEFAULT_THRESHOLDS


@dataclass
class GpuNode:
    row: FleetRow
    max_temperature: float | None
    min_clock_ratio: float | None
    gpu_concern: bool


@dataclass
class ReportView:
    report: Report
    thresholds: Thresholds
    verdict: str
    groups: list[FindingGroup]
    rows: list[FleetRow]
    cluster_findings: list[Finding]
    history: HistoryIndex
    filesystems: list[FsFigures] = field(default_factory=list)
    #: Every node's names (host name beside instance id), for the renderings' node labels.
    names: NodeNames = field(default_factory=NodeNames)

    @property
    def concern_groups(self) -> list[FindingGroup]:
        return [g for g in self.groups if g.severity is Severity.CONCERN]

    @property
    def notable_groups(self) -> list[FindingGroup]:
        """The groups every rendering lists and numbers (concerns and infos); OK groups are only counted."""
        return [g for g in self.groups if g.severity is not Severity.OK]

    @property
    def nodes_with_concern(self) -> list[FleetRow]:
        return [r for r in self.rows if r.concerns]

    @property
    def counts(self) -> dict[Severity, int]:
        tally = dict.fromkeys(Severity, 0)
        for f in self.report.findings:
            tally[f.severity] += 1
        return tally


def build_view(report: Report, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> ReportView:
    index = report_names(report)
    per_node = node_findings(report)
    summaries = {n.node: n for n in report.nodes}
    names = [n.node for n in report.nodes] + [k for k in per_node if k and k not in summaries]
    in_nccl = nccl_participants(report.nccl)
    rows: list[FleetRow] = []
    for name in names:
        findings = per_node.get(name, [])
        families: dict[str, Severity | None] = {fam: None for fam in FAMILIES}
        families.update(worst_by_family(findings))
        summary = summaries.get(name)
        aliases = {name} | ({summary.hostname, summary.instance_id} if summary else set())
        # Checked without a finding of its own: a pair test ran on it, or its snapshot was read.
        if families["nccl"] is None and aliases & in_nccl:
            families["nccl"] = Severity.OK
        if families["collect"] is None and summary is not None and summary.collection == "collected":
            families["collect"] = Severity.OK
        rows.append(FleetRow(name, summary, findings, {fam: families[fam] for fam in FAMILIES}))
    rows.sort(key=lambda r: r.sort_key)
    return ReportView(
        report=report,
        thresholds=thresholds,
        verdict=verdict_of(report),
        groups=group_findings(report.findings, names=index),
        rows=rows,
        cluster_findings=per_node.get(None, []),
        history=HistoryIndex(report.history),
        filesystems=[fs_figures(fs, thresholds) for fs in report.filesystems],
        names=index,
    )


def run_facts(view: ReportView, nodes: str) -> list[str]:
    """The facts of the report's header line, unescaped: why and when it ran, how big, how bad.

    `nodes` names the node count ("node(s)", "node(s) in this report").
    """
    run, counts = view.report.run, view.counts
    facts = [
        f"Reason: {run.reason}",
        f"window {run.window_minutes} min",
        f"started {run.started}" if run.started else "",
        f"region {run.region}" if run.region else "",
        f"{len(view.rows)} {nodes}",
        f"{counts[Severity.CONCERN]} concern(s), {counts[Severity.INFO]} info, {counts[Severity.OK]} ok",
    ]
    return [fact for fact in facts if fact]


def follow_ups(item: Finding | FindingGroup) -> list[tuple[str, str]]:
    """What a finding or a group says after its summary, labelled, in reading order; blanks left out."""
    found = urgency_of(item if isinstance(item, Finding) else item.findings[0])
    why = (
        (f"Why {found.tier.value}", found.reason) if found and item.severity is Severity.CONCERN else ("", "")
    )
    fields = (
        why,
        ("Threshold", item.threshold),
        ("Next step", item.next_step),
        ("Hand-off", item.handoff),
    )
    return [(label, value) for label, value in fields if value]


def history_lists(history: HistoryDelta) -> list[tuple[str, list[Finding], str]]:
    """The three finding lists of a comparison with the previous run: (title, findings, icon)."""
    return [
        ("New", history.new, "⚠"),
        ("Resolved", history.resolved, "✔"),
        ("Still present", history.still_present, "•"),
    ]


def nccl_participants(nccl: dict[str, Any] | None) -> set[str]:
    """Every host named by a measured pair (NCCL logs name hosts, not instances)."""
    if not nccl:
        return set()
    return {str(p[k]) for p in nccl.get("pairs", []) if isinstance(p, dict) for k in ("a", "b") if p.get(k)}


def fs_figures(fs: FileSystemSummary, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> FsFigures:
    if fs.iops_utilization_pct and not fs.throughput_mbps:
        values = [p.value for p in fs.iops_utilization_pct]
        level = thresholds.openzfs_iops_utilization_pct
        return FsFigures(
            fs,
            "iops",
            max(values),
            statistics.fmean(values),
            level,
            sum(v >= level for v in values) / len(values),
            level,
        )
    values = [p.value for p in fs.throughput_mbps]
    level = (
        fs.provisioned_mbps * thresholds.fs_throughput_saturated_pct / 100 if fs.provisioned_mbps else None
    )
    return FsFigures(
        fs,
        "throughput",
        max(values) if values else None,
        statistics.fmean(values) if values else None,
        fs.provisioned_mbps,
        (sum(v >= level for v in values) / len(values)) if values and level else None,
        level,
        thresholds,
    )


def describe_fs(figures: FsFigures) -> str:
    """One sentence a phone can show: peak and mean against the line, and time above it."""
    fs = figures.fs
    if figures.peak is None:
        return f"{fs.file_system_id} ({fs.type}): no datapoints in the window"
    if figures.kind == "iops":
        return (
            f"{fs.file_system_id} ({fs.type}): disk IOPS utilisation peak {figures.peak:.0f}%, mean "
            f"{figures.mean:.0f}%; {figures.share_at_or_above:.0%} of the window at or above "
            f"{figures.level:g}%"
        )
    text = (
        f"{fs.file_system_id} ({fs.type}): throughput peak {figures.peak:,.0f} MB/s, "
        f"mean {figures.mean:,.0f} MB/s"
    )
    if figures.limit:
        text += (
            f" of {figures.limit:,.0f} MB/s provisioned (peak {figures.peak / figures.limit:.0%}); "
            f"{figures.share_at_or_above:.0%} of the window at or above {figures.level:,.0f} MB/s"
        )
    else:
        text += "; provisioned throughput unknown"
    return "; ".join([text, *lustre_sentences(fs, figures.thresholds)])


def gpu_nodes(view: ReportView) -> list[GpuNode]:
    out = []
    for row in view.rows:
        gpus = row.summary.gpus if row.summary else []
        if not gpus:
            continue
        absent = gpu_absences(row)
        gpus = [g for g in gpus if g.index not in absent]  # an off-bus GPU's last figures are no reading
        temps = [g.temperature_c for g in gpus if g.temperature_c is not None]
        ratios = [
            g.sm_clock_mhz / g.max_sm_clock_mhz
            for g in gpus
            if g.sm_clock_mhz is not None and g.max_sm_clock_mhz
        ]
        out.append(
            GpuNode(
                row,
                max(temps) if temps else None,
                min(ratios) if ratios else None,
                row.families.get("gpu") is Severity.CONCERN,
            )
        )
    return out


def gpu_outliers(nodes: list[GpuNode], limit: int = SMALL_MULTIPLES_LIMIT) -> list[GpuNode]:
    """The nodes worth a picture: GPU concerns first, then hottest and slowest-clocked."""
    if len(nodes) <= limit:
        return nodes

    def badness(n: GpuNode) -> tuple[int, float]:
        temp = (n.max_temperature or 0) / 100
        clock = 1 - (n.min_clock_ratio if n.min_clock_ratio is not None else 1)
        return (int(n.gpu_concern), max(temp, clock))

    return sorted(nodes, key=badness, reverse=True)[:limit]


def nccl_pairs_sorted(nccl: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not nccl:
        return []
    pairs = [p for p in nccl.get("pairs", []) if isinstance(p, dict) and p.get("busbw_gbps") is not None]
    return sorted(pairs, key=lambda p: float(p["busbw_gbps"]))


def nccl_stats(nccl: dict[str, Any], pairs: list[dict[str, Any]]) -> list[str]:
    """`12 pair(s)`, the mean and median bus bandwidth when the analysis has them, `1 slow`."""
    stats = [f"{len(pairs)} pair(s)"]
    for key in ("mean", "median"):
        if isinstance(nccl.get(key), int | float):
            stats.append(f"{key} {nccl[key]:.1f} GB/s")
    stats.append(f"{len(nccl.get('slow_pairs', []))} slow")
    return stats


def evidence_text(evidence: dict[str, Any], limit: int = 400) -> str:
    """`key=value, ...` — compact, truncated, for tables and e-mail."""
    parts = []
    for key, value in evidence.items():
        if isinstance(value, float):
            value = f"{value:g}"
        parts.append(f"{key}={value}")
    text = ", ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def report_html_location(report: Report) -> str | None:
    """s3://bucket/prefix/report.html for this run, when the run knows where it is stored."""
    loc = report.run.location
    if not loc:
        return None
    if loc.endswith((".html", ".json", ".md")):
        return loc.rsplit("/", 1)[0] + "/report.html"
    return loc.rstrip("/") + "/report.html"


#: The node map names at most this many bad nodes beside the picture (the concerns list names all).
NODE_MAP_NAMED = 24


@dataclass
class NodeGroup:
    """One block of the node map: nodes sharing an AZ, an instance group and an UltraServer."""

    label: str
    rows: list[FleetRow]

    def count(self, severity: Severity) -> int:
        return sum(1 for r in self.rows if r.worst is severity)


def node_groups(view: ReportView) -> list[NodeGroup]:
    """The node map's blocks, in a stable order (by place, then by node name) so a cell never moves
    between runs just because its node got worse: the icon and colour tell bad from good."""
    blocks: dict[tuple[str, str, str], list[FleetRow]] = {}
    for row in view.rows:
        s = row.summary
        key = (
            (s.availability_zone if s else None) or "AZ unknown",
            (s.instance_group if s else None) or "group unknown",
            (s.ultraserver_id if s else None) or "",
        )
        blocks.setdefault(key, []).append(row)
    groups = []
    for (az, group, ultra), rows in sorted(blocks.items()):
        label = " · ".join(x for x in (az, group, f"UltraServer {ultra}" if ultra else "") if x)
        groups.append(NodeGroup(label, sorted(rows, key=lambda r: r.node)))
    return groups


def worst_finding(row: FleetRow) -> Finding | None:
    """The finding that decides a node's cell in the map (its first concern, else its first note)."""
    for severity in (Severity.CONCERN, Severity.INFO):
        for f in row.findings:
            if f.severity is severity:
                return f
    return None


def collection_failed(row: FleetRow) -> bool:
    return row.summary is not None and row.summary.collection != "collected"


def _gpu_indices(evidence: dict[str, Any]) -> list[int]:
    value = evidence.get("gpu")
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    many = evidence.get("gpus")
    if isinstance(many, list):
        return [g for g in many if isinstance(g, int) and not isinstance(g, bool)]
    return []


def _gpu_mark_label(f: Finding) -> str:
    """`PCIe x8`, `Xid 79`, `91 °C`: what the GPU picture writes under the GPU behind a finding."""
    ev = f.evidence or {}
    if isinstance(ev.get("width_current"), int):
        return f"PCIe x{ev['width_current']}"
    if ev.get("kind") in ("xid", "sxid") and ev.get("code") is not None:
        return f"{'SXid' if ev.get('kind') == 'sxid' else 'Xid'} {ev['code']}"
    if isinstance(ev.get("temperature_c"), int | float):
        return f"{ev['temperature_c']:g} °C"
    return f.check.rsplit(".", 1)[-1]


#: Xid codes after which a GPU is off the bus: whatever nvidia-smi printed for it last is not a
#: reading of a working GPU (NVIDIA's Xid catalog: 79 "GPU has fallen off the bus").
OFF_BUS_XIDS = frozenset({79})


def gpu_absences(row: FleetRow) -> dict[int, str]:
    """GPU index -> why the GPU picture draws it as missing instead of as temperature and clock bars.

    Why: a picture at normal temperature and full clock for the GPU a concern says fell off the
    bus, or no trace at all of the GPU nvidia-smi stopped listing, contradicts the findings it sits
    next to. Two sources: a concerning Xid 79 naming the GPU, and gpu.count's shortfall (the
    indices missing from those listed; nvidia-smi keeps the others' indices until the driver
    reloads, and when it renumbered, the last indices stand for the missing GPUs)."""
    listed = {g.index for g in (row.summary.gpus if row.summary else [])}
    out: dict[int, str] = {}
    for f in row.concerns:
        ev = f.evidence or {}
        gpu = ev.get("gpu")
        off_bus = f.check == "gpu.xid" and ev.get("kind") == "xid" and ev.get("code") in OFF_BUS_XIDS
        if off_bus and isinstance(gpu, int) and not isinstance(gpu, bool):
            out.setdefault(gpu, f"fell off the bus (Xid {ev['code']}): its last figures are not drawn")
    count = next((f for f in row.concerns if f.check == "gpu.count"), None)
    ev = count.evidence if count else {}
    expected, shown = ev.get("expected"), ev.get("gpus")
    if isinstance(expected, int) and isinstance(shown, int) and expected > shown:
        why = f"not listed by nvidia-smi ({shown} of {expected} GPUs listed)"
        gaps = [i for i in range(expected) if i not in listed]
        for index in gaps[: expected - shown]:
            out.setdefault(index, why)
    return out


def gpu_marks(row: FleetRow) -> dict[int, list[tuple[Finding, str]]]:
    """GPU index -> the non-OK findings that name that GPU in their evidence, with a short label."""
    marks: dict[int, list[tuple[Finding, str]]] = {}
    for f in row.findings:
        if f.severity is Severity.OK or not f.evidence:
            continue
        for index in _gpu_indices(f.evidence):
            marks.setdefault(index, []).append((f, _gpu_mark_label(f)))
    return marks


def dashboard_link(report: Report) -> str | None:
    """The deployment's CloudWatch dashboard URL, for every rendering (HTML, e-mail, Slack) to link.

    Only an https:// URL of URL-safe characters is offered: the value comes from the environment,
    and a link is markup in every channel (HTML attribute, Slack `<url|text>`, Markdown `<url>`).
    """
    return safe_link(report.run.dashboard_url)


def safe_link(url: str | None) -> str | None:
    """The URL when it is https:// and holds only URL-safe characters (nothing that ends markup in
    any channel), else None: every link a rendering shows passes here."""
    return url if url and _SAFE_URL.fullmatch(url) else None


#: https, then only RFC 3986 unreserved / reserved characters minus the ones that end markup
#: (`<`, `>`, `|`, quotes, whitespace, backslash, backtick).
_SAFE_URL = re.compile(r"https://[A-Za-z0-9._~:/?#\[\]@!$&()*+,;=%-]+")
