"""The answer first: one verdict line, findings grouped by family and across nodes.

Every rendering (HTML, Markdown, e-mail, Slack) leads with the same verdict and the same
grouped concerns, so they are computed once here. Grouping matters at fleet scale: 12 nodes
over the temperature line is one concern with a node list, not 12 lines in an e-mail.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity, Tier
from hyperpod_perf.domain.names import NodeNames
from hyperpod_perf.domain.report import Report
from hyperpod_perf.rules.urgency import age_key, tier_rank, top_tier, urgency_of

#: Columns of the fleet table, in the order an operator reads them (runbook: G, A, host, B, ...).
FAMILIES: tuple[str, ...] = ("gpu", "efa", "host", "fs", "nccl", "health", "collect")

#: Check-id prefixes that name their family directly.
_PREFIX_FAMILY = {
    "gpu": "gpu",
    "efa": "efa",
    "host": "host",
    "fs": "fs",
    "nccl": "nccl",
    "health": "health",
    "collect": "collect",
    "coverage": "coverage",
}

#: Checks whose prefix is not a family (topology.*, fleet.*) fall in by runbook section.
_SECTION_FAMILY = {
    RunbookSection.NCCL: "nccl",
    RunbookSection.FILE_SYSTEM: "fs",
    RunbookSection.GPU: "gpu",
    RunbookSection.RESOURCES: "host",
    RunbookSection.COLLECTION: "collect",
    RunbookSection.COVERAGE: "coverage",
}

ICON = {Severity.OK: "✔", Severity.INFO: "ℹ", Severity.CONCERN: "⚠"}
WORD = {Severity.OK: "ok", Severity.INFO: "info", Severity.CONCERN: "concern"}
#: How a tier leads a line (the subject, the first line of the e-mail and of Slack).
TIER_WORD = {Tier.ACT_NOW: "ACT NOW", Tier.FIX_SOON: "FIX SOON", Tier.WATCH: "WATCH"}

#: How many node names a grouped line lists before "+N more".
LISTED_NODES = 2
#: How many verdict clauses before "+N more".
VERDICT_CLAUSES = 4


def family_of(finding: Finding) -> str:
    prefix = finding.check.split(".", 1)[0]
    return _PREFIX_FAMILY.get(prefix) or _SECTION_FAMILY.get(finding.section, "collect")


def plural(count: int, noun: str, plural_noun: str | None = None) -> str:
    return f"{count} {noun if count == 1 else (plural_noun or noun + 's')}"


def node_list(nodes: Sequence[str], listed: int = LISTED_NODES) -> str:
    """`i-a, i-b +10 more`: enough to act on, short enough for a phone."""
    shown = ", ".join(nodes[:listed])
    return f"{shown} +{len(nodes) - listed} more" if len(nodes) > listed else shown


def report_tier(report: Report) -> Tier | None:
    """The most urgent tier of the run (None: every check passed)."""
    return top_tier(report.findings)


def headline_word(report: Report) -> str:
    """`ACT NOW` / `FIX SOON` / `WATCH` / `OK`: what the first line and the subject lead with."""
    tier = report_tier(report)
    return TIER_WORD[tier] if tier else "OK"


def tier_nodes(report: Report, tier: Tier) -> list[str]:
    """Fleet nodes with a finding in `tier`."""
    return [
        node
        for node, findings in node_findings(report).items()
        if node is not None and any((u := urgency_of(f)) is not None and u.tier is tier for f in findings)
    ]


@dataclass
class FindingGroup:
    """Identical findings (same check, severity and threshold) across nodes; `names` labels
    each node with its host name beside its id in the title."""

    check: str
    severity: Severity
    family: str
    section: RunbookSection
    threshold: str | None
    findings: list[Finding] = field(default_factory=list)
    names: NodeNames = field(default_factory=NodeNames, repr=False, compare=False)

    @property
    def nodes(self) -> list[str]:
        return list(dict.fromkeys(f.node for f in self.findings if f.node))

    @property
    def node_labels(self) -> list[str]:
        """`ip-10-1-125-188 (i-0a1b…)` per node, in `nodes` order."""
        return self.names.labels(self.nodes)

    @property
    def next_step(self) -> str | None:
        return next((f.next_step for f in self.findings if f.next_step), None)

    @property
    def tier(self) -> Tier | None:
        found = urgency_of(self.findings[0])
        return found.tier if found else None

    @property
    def tier_reason(self) -> str:
        found = urgency_of(self.findings[0])
        return found.reason if found else ""

    @property
    def handoff(self) -> str | None:
        return next((f.handoff for f in self.findings if f.handoff), None)

    @property
    def title(self) -> str:
        """The shared summary when all agree, else the check and its threshold."""
        summaries = {f.summary for f in self.findings}
        nodes = self.nodes
        if len(summaries) == 1 or not nodes:
            base = self.findings[0].summary
            if len(self.findings) > 1 and not nodes:
                base += f" (+{len(self.findings) - 1} similar)"
        else:
            base = f"{self.check} ({self.threshold})" if self.threshold else self.check
        if len(nodes) > 1 or (nodes and len(summaries) > 1):
            return f"{base} on {plural(len(nodes), 'node')}: {node_list(self.node_labels)}"
        if len(nodes) == 1:
            return self._named(nodes[0], base)
        return base

    def _named(self, node: str, base: str) -> str:
        """`ip-… (i-…): summary`; a summary that already opens with the node's id or host name
        gets the label in place of that name, so it is never said twice."""
        label = self.names.label(node)
        for said in dict.fromkeys((node, self.names.host(node))):
            rest = base[len(said) :] if said and base.startswith(said) else None
            if rest is not None and not rest[:1].isalnum() and rest[:1] not in "-.":
                return base if label == said else f"{label}{rest}"
        return f"{label}: {base}"


def group_findings(
    findings: Iterable[Finding],
    *,
    min_severity: Severity = Severity.INFO,
    names: NodeNames | None = None,
) -> list[FindingGroup]:
    """Non-OK findings grouped across nodes, most urgent and widest first; `names` (the report's
    nodes) puts each node's host name beside its id in the titles."""
    index = names if names is not None else NodeNames()
    groups: dict[tuple[str, Severity, str | None, int], FindingGroup] = {}
    for f in findings:
        if f.severity.rank < min_severity.rank:
            continue
        key = (f.check, f.severity, f.threshold, tier_rank(f))  # an old Xid is not grouped with a new one
        if key not in groups:
            groups[key] = FindingGroup(f.check, f.severity, family_of(f), f.section, f.threshold, names=index)
        groups[key].findings.append(f)
    return sorted(
        groups.values(),
        key=lambda g: (*order_key(g.findings[0]), -len(g.nodes), g.check),
    )


#: THE impact order of classes of concern, most training-impacting first. Every rendering (the
#: verdict and e-mail subject, the e-mail, Slack, the report's concern list) orders by it.
#:
#: 1. hardware   - a GPU fault, Xid, thermal or clock throttling, a failed health check: one rank
#:                 stops or slows, and synchronous training runs at the pace of its slowest rank.
#: 2. network    - EFA errors and counters, slow NCCL pairs and the node behind them: every
#:                 collective through that node slows, so every step does.
#: 3. storage    - FSx saturation: data loading and checkpoints stall on all nodes, often in bursts.
#: 4. host       - host configuration (CPU governor, fabric manager, driver drift): a steady tax.
#: 5. topology   - placement (nodes spread over AZs, mixed instance types): slower cross-AZ paths,
#:                 fixed by re-provisioning rather than by repairing a node.
#: 6. collection - a node that could not be read: unknown, not a known fault.
#: 7. coverage   - cluster features not enabled (NodeRecovery, deep health checks): no slowdown now.
IMPACT_CLASSES: tuple[str, ...] = (
    "hardware",
    "network",
    "storage",
    "host",
    "topology",
    "collection",
    "coverage",
)

#: How each class is named where space is short (the e-mail subject, chat keywords).
IMPACT_LABEL = {
    "hardware": "node hardware",
    "network": "EFA/NCCL network",
    "storage": "FSx storage",
    "host": "host configuration",
    "topology": "topology",
    "collection": "collection",
    "coverage": "coverage",
}

_FAMILY_IMPACT = {
    "gpu": "hardware",
    "health": "hardware",
    "efa": "network",
    "nccl": "network",
    "fs": "storage",
    "host": "host",
    "collect": "collection",
    "coverage": "coverage",
}
#: Checks whose class is not their family's (topology.* sit in the NCCL runbook section).
_CHECK_IMPACT = {
    "topology.az_spread": "topology",
    "topology.ultraserver": "topology",
    "fleet.instance_types": "topology",
    "fleet.version_drift": "host",
}

#: Family order within the impact order (the fleet table's families, ranked by their class).
FAMILY_ORDER = {"gpu": 0, "health": 1, "efa": 2, "nccl": 3, "fs": 4, "host": 5, "collect": 6, "coverage": 7}


def impact_class(finding: Finding) -> str:
    """The finding's class of concern in IMPACT_CLASSES."""
    return _CHECK_IMPACT.get(finding.check) or _FAMILY_IMPACT.get(family_of(finding), "collection")


def impact_key(finding: Finding) -> tuple[int, int, int]:
    """Sort key: the urgency tier first (act now, fix soon, watch), then the impact class, then the
    family within it."""
    return (
        tier_rank(finding),
        IMPACT_CLASSES.index(impact_class(finding)),
        FAMILY_ORDER.get(family_of(finding), 99),
    )


def order_key(finding: Finding) -> tuple[int, int, float, int, int]:
    """THE order of every list of findings: tier, severity within it (a coverage CONCERN before an
    INFO, both 'watch'), the more recent event first, then the impact order."""
    tier, cls, family = impact_key(finding)
    return tier, -finding.severity.rank, age_key(finding), cls, family


_NODE_CLAUSE = {
    "nccl": ("degrades NCCL", "degrade NCCL"),
    "gpu": ("has GPU faults", "have GPU faults"),
    "efa": ("has EFA problems", "have EFA problems"),
    "host": ("has host concerns", "have host concerns"),
    "fs": ("has file-system concerns", "have file-system concerns"),
    "health": ("failed health checks", "failed health checks"),
    "collect": ("could not be collected", "could not be collected"),
    "coverage": ("has coverage gaps", "have coverage gaps"),
}


def fleet_node_names(report: Report) -> list[str]:
    """Every node the report covers: the summaries first, then any named only by findings."""
    names = [n.node for n in report.nodes]
    known = set(names)
    aliases = NodeNames.of(report.nodes).aliases()
    for f in report.findings:
        if f.node and f.node not in known and f.node not in aliases:
            known.add(f.node)
            names.append(f.node)
    return names


def report_names(report: Report) -> NodeNames:
    """Every name of every node the report lists (host name, instance id; NCCL logs name hosts
    and AWS names instances), from its node summaries."""
    return NodeNames.of(report.nodes)


def node_findings(report: Report) -> dict[str | None, list[Finding]]:
    """Findings per fleet node name (cluster-level ones under None)."""
    alias = report_names(report).aliases()
    out: dict[str | None, list[Finding]] = defaultdict(list)
    for f in report.findings:
        out[alias.get(f.node, f.node) if f.node else None].append(f)
    return out


def _fs_clause(f: Finding) -> str:
    fs_id = next(
        (str(f.evidence[k]) for k in ("file_system_id", "fs_id", "filesystem") if f.evidence.get(k)), None
    )
    text = f.summary.lower()
    if "saturat" in text:
        state = "saturated"
    elif "inefficient" in text:
        state = "inefficient I/O pattern"
    elif f.check == "fs.openzfs_iops":
        state = "IOPS saturated"
    else:
        state = f.summary
    return f"FSx {fs_id} {state}" if fs_id else f"file system: {state}"


def verdict_clauses(report: Report, names: NodeNames | None = None) -> list[str]:
    """The act-now nodes first (`1 node is failing the job (gpu.xid)`), then one clause per family
    with other concerns (node counts) and the cluster-level concerns, in the one order (tier, then
    IMPACT_CLASSES). With `names`, a clause about one node names it instead of counting it
    (`ip-10-1-125-188 (i-…) is failing the job (gpu.xid)`): the subject line an operator acts on."""
    per_node = node_findings(report)
    family_nodes: dict[str, set[str]] = defaultdict(set)
    family_key: dict[str, tuple[int, int, int]] = {}
    cluster_clauses: list[tuple[tuple[int, int, int], str]] = []
    failing: dict[str, list[str]] = {}  # act-now node -> its act-now checks: the first clause
    for node, findings in per_node.items():
        for f in findings:
            if f.severity is not Severity.CONCERN:
                continue
            if node is not None and (u := urgency_of(f)) is not None and u.tier is Tier.ACT_NOW:
                failing.setdefault(node, []).append(f.check)
                continue
            family = family_of(f)
            key = impact_key(f)
            if node is not None and impact_class(f) != "topology":
                family_nodes[family].add(node)
                family_key[family] = min(key, family_key.get(family, key))
            elif family == "fs":
                cluster_clauses.append((key, _fs_clause(f)))
            elif f.check == "nccl.pair_slow":
                count = f.evidence.get("slow_pairs")
                if isinstance(count, int) and "pairs" in f.evidence:
                    cluster_clauses.append((key, f"{count} of {f.evidence['pairs']} NCCL pairs slow"))
            else:
                cluster_clauses.append((key, f.summary))
    clauses: list[tuple[tuple[int, int, int], str]] = []
    if failing:
        ids = list(dict.fromkeys(c for cs in failing.values() for c in cs))
        checks = ids[0] + (f" +{len(ids) - 1}" if len(ids) > 1 else "")  # fits a subject
        many = len(failing) > 1
        one = names.label(next(iter(failing))) if names is not None and not many else None
        who = one or f"{plural(len(failing), 'node')} {'are' if many else 'is'}"
        clauses.append(((-1, 0, 0), f"{who}{' is' if one else ''} failing the job ({checks})"))
    for family, nodes in family_nodes.items():
        singular, many = _NODE_CLAUSE.get(family, ("has concerns", "have concerns"))
        who = names.label(next(iter(nodes))) if names is not None and len(nodes) == 1 else None
        clauses.append(
            (
                family_key[family],
                f"{who} {singular}"
                if who
                else f"{plural(len(nodes), 'node')} {singular if len(nodes) == 1 else many}",
            )
        )
    if "nccl" in family_nodes:  # the suspect nodes explain the slow pairs: one clause says it
        cluster_clauses = [c for c in cluster_clauses if not c[1].endswith("NCCL pairs slow")]
    clauses.extend(dict.fromkeys(cluster_clauses))  # same text twice is one clause
    return [text for _, text in sorted(clauses, key=lambda c: c[0])]


def affected_nodes(report: Report) -> list[str]:
    """Fleet nodes with at least one CONCERN (topology findings name nodes but blame placement)."""
    return [
        node
        for node, findings in node_findings(report).items()
        if node is not None
        and any(f.severity is Severity.CONCERN and impact_class(f) != "topology" for f in findings)
    ]


def worst_class(report: Report) -> str | None:
    """The highest-impact class among the concerns, None without concern."""
    concerns = [f for f in report.findings if f.severity is Severity.CONCERN]
    return impact_class(min(concerns, key=impact_key)) if concerns else None


def compute_verdict(report: Report) -> str:
    """`2 nodes degrade NCCL; FSx fs-… saturated` or `No concerns on 8 nodes; 3 info`."""
    nodes = len(fleet_node_names(report)) or report.cluster.node_count
    clauses = verdict_clauses(report)
    if not clauses:
        info = sum(1 for f in report.findings if f.severity is Severity.INFO)
        text = f"No concerns on {plural(nodes, 'node')}"
        return f"{text}; {info} info" if info else text
    if len(clauses) > VERDICT_CLAUSES:
        clauses = [*clauses[:VERDICT_CLAUSES], f"+{len(clauses) - VERDICT_CLAUSES} more"]
    return "; ".join(clauses)


def fit_named_clauses(
    report: Report, prefix: str, budget: int, fallback: str, convert: Callable[[str], str] = str
) -> str:
    """fit_clauses over the clauses that name a lone node (host name and id), when the first of
    them fits; else over the counted ones, so a long host name never pushes the answer out of
    a short line. `convert` rewrites each clause for its medium (ASCII for an e-mail subject)."""
    named = [convert(c) for c in verdict_clauses(report, report_names(report))]
    text = fit_clauses(prefix, named, budget, fallback)
    if named and named[0] in text:
        return text
    return fit_clauses(prefix, [convert(c) for c in verdict_clauses(report)], budget, fallback)


def fit_clauses(prefix: str, clauses: Sequence[str], budget: int, fallback: str) -> str:
    """`prefix` + as many whole clauses as fit in `budget` characters, then `+N more`.

    Clauses are never cut: one that does not fit is left for the `+N more`. When not even the
    first fits, `fallback` (a short name of the worst class) stands in for it.
    """
    shown: list[str] = []
    for i, clause in enumerate(clauses):
        rest = len(clauses) - i - 1
        candidate = [*shown, clause] + ([f"+{rest} more"] if rest else [])
        if len(prefix + "; ".join(candidate)) <= budget:
            shown.append(clause)
            continue
        break
    if not shown and clauses:
        shown = [fallback]
        hidden = len(clauses) - 1
    else:
        hidden = len(clauses) - len(shown)
    text = prefix + "; ".join([*shown, *([f"+{hidden} more"] if hidden else [])])
    return text


def verdict_of(report: Report) -> str:
    """The stored verdict when the pipeline set one, else computed."""
    return report.verdict or compute_verdict(report)


def worst_by_family(findings: Iterable[Finding]) -> dict[str, Severity]:
    out: dict[str, Severity] = {}
    for f in findings:
        family = family_of(f)
        if family not in out or f.severity.rank > out[family].rank:
            out[family] = f.severity
    return out


def overall_severity(report: Report) -> Severity:
    return max((f.severity for f in report.findings), key=lambda s: s.rank, default=Severity.OK)
