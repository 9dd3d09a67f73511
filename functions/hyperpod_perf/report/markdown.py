"""The report in Markdown: the HTML report's content for a ticket, a wiki page or a PR comment.

Pictures stay in the HTML report; here each one is replaced by the figures it shows (FSx peak
and time above the line, GPU outliers, slowest NCCL pairs). Text from nodes and logs is escaped
so it can neither break a table (`|`, newlines) nor inject HTML (`<`, `>`, `&`).
"""

from __future__ import annotations

import statistics

from hyperpod_perf.domain import escaping
from hyperpod_perf.domain.findings import TIER_MEANINGS, Finding, Severity
from hyperpod_perf.domain.report import HistoryDelta, Report
from hyperpod_perf.report.alarm_answer import markdown_lines as alarm_markdown
from hyperpod_perf.report.commands import command_lines, plans_for
from hyperpod_perf.report.history import describe_drift
from hyperpod_perf.report.html import DETAIL_NODE_LIMIT, HISTORY_LIMIT
from hyperpod_perf.report.html_figures import SLOWEST_PAIRS
from hyperpod_perf.report.verdict import FAMILIES, ICON, TIER_WORD, WORD, headline_word, overall_severity
from hyperpod_perf.report.view import (
    GpuNode,
    ReportView,
    build_view,
    dashboard_link,
    describe_fs,
    evidence_text,
    follow_ups,
    gpu_nodes,
    gpu_outliers,
    history_lists,
    nccl_pairs_sorted,
    nccl_stats,
    report_html_location,
    run_facts,
)
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds


def md(text: object) -> str:
    """Text for Markdown prose and table cells: CommonMark-safe (domain.escaping.markdown)."""
    return escaping.markdown(text)


def code(text: object) -> str:
    """A code span: shown literally (domain.escaping.markdown_code)."""
    return escaping.markdown_code(text)


def sev(severity: Severity | None) -> str:
    return "– not checked" if severity is None else f"{ICON[severity]} {WORD[severity]}"


def _status(status: str | None) -> str:
    return f" *({status})*" if status else ""


def _finding_lines(f: Finding, view: ReportView, indent: str = "") -> list[str]:
    lines = [f"{indent}- {sev(f.severity)} {code(f.check)} {md(f.summary)}{_status(view.history.status(f))}"]
    sub = indent + "  "
    if f.evidence:
        lines.append(f"{sub}- Evidence: {code(evidence_text(f.evidence))}")
    return lines + [f"{sub}- {label}: {md(value)}" for label, value in follow_ups(f)]


def render_markdown(report: Report, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> str:
    view = build_view(report, thresholds)
    worst = overall_severity(report)
    lead = headline_word(report) if worst is Severity.CONCERN else WORD[worst].capitalize()
    out: list[str] = [
        f"# HyperPod performance report: {md(report.cluster.name)}",
        "",
        f"> {ICON[worst]} **{lead}:** {md(view.verdict)}",
        "",
    ]
    out.append(" · ".join(md(fact) for fact in run_facts(view, "node(s)")))
    where = report_html_location(report)
    if where:
        out += ["", f"HTML report: {code(where)} — fetch: {code(f'aws s3 cp {where} .')}"]
    dashboard = dashboard_link(report)
    if dashboard:
        out += ["", f"The fleet over time: [CloudWatch dashboard](<{dashboard}>)"]
    out += alarm_markdown(report, md, code, thresholds)
    out += _concerns(view) + _fleet(view) + _cluster(view) + _nodes(view)
    out += _nccl(report) + _filesystems(view) + _gpus(view) + _not_checked(report) + _history(view)
    return escaping.markdown_document("\n".join(out).rstrip() + "\n")


def _concerns(view: ReportView) -> list[str]:
    groups = view.notable_groups
    out = ["", "## Concerns, grouped across nodes", ""]
    if not groups:
        return [*out, "✔ No concerns and nothing to note."]
    tier = None
    for i, g in enumerate(groups, 1):
        if g.tier is not tier and g.tier is not None:
            tier = g.tier
            out += [*([""] if out[-1] else []), f"### {TIER_WORD[tier]} — {md(TIER_MEANINGS[tier])}", ""]
        status = view.history.group_status(g.findings)
        out.append(f"{i}. {sev(g.severity)} {code(g.check)} {md(g.title)}{_status(status)}")
        out += [f"   - {label}: {md(value)}" for label, value in follow_ups(g)]
    plans = plans_for(view.report)
    if plans:
        out += ["", "### Commands to paste for the act-now nodes (printed, never run)", ""]
        for plan in plans:
            out += [f"- **{md(plan.label)}**: {md(plan.action)} — {md(plan.because)}", "", "  ```sh"]
            out += [f"  {line}" for line in command_lines(plan, indent="")]
            out += ["  ```", ""]
    return out


def _fleet(view: ReportView) -> list[str]:
    out = [
        "",
        "## Fleet at a glance",
        "",
        "Worst result per check family: ⚠ concern, ℹ info, ✔ ok, – not checked. Worst nodes first.",
        "",
        "| node | group / type | AZ | " + " | ".join(FAMILIES) + " |",
        "|---|---|---|" + "---|" * len(FAMILIES),
    ]
    for row in view.rows:
        cells = " | ".join(sev(row.families[f]) for f in FAMILIES)
        out.append(f"| {md(row.label)} | {md(row.group_and_type)} | {md(row.availability_zone)} | {cells} |")
    return out


def _cluster(view: ReportView) -> list[str]:
    if not view.cluster_findings:
        return []
    out = ["", "## Cluster-wide", ""]
    for f in view.cluster_findings:
        if f.severity is not Severity.OK:
            out += _finding_lines(f, view)
    oks = sorted({f.check for f in view.cluster_findings if f.severity is Severity.OK})
    if oks:
        out += ["", f"✔ Checked OK: {', '.join(code(c) for c in oks)}"]
    return out


def _nodes(view: ReportView) -> list[str]:
    out = ["", "## Per-node detail"]
    detail = [r for r in view.rows if r.concerns or r.infos]
    if not detail:
        return [*out, "", "✔ Every node passed every check it was given."]
    for row in detail[:DETAIL_NODE_LIMIT]:
        s, sub = row.summary, row.placement
        out += ["", f"### {sev(row.worst)} {md(row.label)}" + (f" — {md(sub)}" if sub else ""), ""]
        if s and s.collection != "collected":
            out.append(f"Collection: {md(s.collection)} — {md(s.collection_error or 'no reason given')}")
        for f in row.findings:
            if f.severity is not Severity.OK:
                out += _finding_lines(f, view)
        oks = sorted({f.check for f in row.findings if f.severity is Severity.OK})
        if oks:
            out.append(f"- ✔ Checked OK: {', '.join(code(c) for c in oks)}")
    if len(detail) > DETAIL_NODE_LIMIT:
        out += [
            "",
            f"+{len(detail) - DETAIL_NODE_LIMIT} more node(s) with findings: "
            "see the grouped concerns and the JSON report.",
        ]
    clean = len(view.rows) - len(detail)
    if clean:
        out += ["", f"✔ {clean} node(s) passed every check they were given."]
    return out


def _nccl(report: Report) -> list[str]:
    out = ["", "## NCCL pairwise bandwidth", ""]
    nccl = report.nccl
    if not nccl:
        return [*out, "No NCCL pairwise results in this run (see “Not checked”)."]
    pairs = nccl_pairs_sorted(nccl)
    out.append(", ".join(nccl_stats(nccl, pairs)) + ". The pairwise heatmap is in the HTML report.")
    for s in nccl.get("suspects") or []:
        drain = " — drain candidate" if s.get("drain_candidate") else ""
        out.append(
            f"- ⚠ suspect {md(s.get('node'))}: in {md(s.get('slow_pairs'))} slow of "
            f"{md(s.get('pairs'))} pairs{drain}"
        )
    if pairs:
        out += [
            "",
            f"Slowest {min(len(pairs), SLOWEST_PAIRS)} pairs:",
            "",
            "| node a | node b | busbw GB/s | runs |",
            "|---|---|---|---|",
        ]
        for p in pairs[:SLOWEST_PAIRS]:
            out.append(
                f"| {md(p.get('a'))} | {md(p.get('b'))} | {float(p['busbw_gbps']):.1f} | "
                f"{md(p.get('runs', ''))} |"
            )
    return out


def _filesystems(view: ReportView) -> list[str]:
    out = ["", "## File systems", ""]
    if not view.filesystems:
        return [*out, "No FSx file system metrics in this run (see “Not checked”)."]
    return out + [f"- {md(describe_fs(fig))}" for fig in view.filesystems]


def _gpu_abnormal(n: GpuNode, t: Thresholds) -> bool:
    """An outlier is abnormal: a GPU concern, or a figure beyond its threshold (not merely the
    hottest of a healthy fleet)."""
    hot = n.max_temperature is not None and n.max_temperature >= t.gpu_temperature_c
    slow = n.min_clock_ratio is not None and n.min_clock_ratio < t.gpu_throttle_clock_ratio
    return n.gpu_concern or hot or slow


def _gpus(view: ReportView) -> list[str]:
    nodes = gpu_nodes(view)
    out = ["", "## GPU temperature and SM clock per node", ""]
    if not nodes:
        return [*out, "No GPU figures in this run."]
    t = view.thresholds
    shown = gpu_outliers(nodes)
    if len(shown) < len(nodes):
        temps = [n.max_temperature for n in nodes if n.max_temperature is not None]
        clocks = [n.min_clock_ratio for n in nodes if n.min_clock_ratio is not None]
        if temps:
            out.append(
                f"Hottest GPU per node across {len(nodes)} nodes: median {statistics.median(temps):g} °C, "
                f"max {max(temps):g} °C; {sum(x >= t.gpu_temperature_c for x in temps)} node(s) at or above "
                f"{t.gpu_temperature_c:g} °C."
            )
        if clocks:
            out.append(
                f"Lowest SM clock per node: median {statistics.median(clocks):.0%} of max, "
                f"min {min(clocks):.0%}; {sum(x < t.gpu_throttle_clock_ratio for x in clocks)} node(s) "
                f"below {t.gpu_throttle_clock_ratio:.0%}."
            )
        abnormal = [n for n in shown if _gpu_abnormal(n, t)]
        if len(abnormal) == len(shown):
            out += ["", f"The {len(shown)} outliers:", ""]
        elif abnormal:
            out += ["", f"{len(abnormal)} node(s) beyond a threshold, then the next hottest or slowest:", ""]
        else:
            out += [
                "",
                f"No node beyond a threshold; the {len(shown)} hottest or slowest, for reference:",
                "",
            ]
    out += ["| node | hottest GPU °C | lowest SM clock (% of max) | GPU family |", "|---|---|---|---|"]
    for n in shown:
        temp = (
            "?"
            if n.max_temperature is None
            else f"{n.max_temperature:g}" + (" ▲" if n.max_temperature >= t.gpu_temperature_c else "")
        )
        clock = (
            "?"
            if n.min_clock_ratio is None
            else f"{n.min_clock_ratio:.0%}" + (" ▼" if n.min_clock_ratio < t.gpu_throttle_clock_ratio else "")
        )
        out.append(f"| {md(n.row.label)} | {temp} | {clock} | {sev(n.row.families.get('gpu'))} |")
    return out


def _not_checked(report: Report) -> list[str]:
    out = ["", "## Not checked, and why", ""]
    if not report.not_checked:
        return [*out, "✔ Everything planned was checked."]
    out += ["| what | why |", "|---|---|"]
    return out + [f"| {md(n.what)} | {md(n.why)} |" for n in report.not_checked]


def _history(view: ReportView) -> list[str]:
    out = ["", "## Since the last run", ""]
    h = view.report.history
    if h is None:
        return [*out, "No previous report to compare with."]
    out.append(f"Compared with {code(h.previous_location or 'the previous report')}.")
    for title, items, icon in history_lists(h):
        out += ["", f"**{title}: {len(items)}**"]
        out += [
            f"- {icon} {md(view.names.label(f.node))}: {code(f.check)} {md(f.summary)}"
            for f in items[:HISTORY_LIMIT]
        ]
        if len(items) > HISTORY_LIMIT:
            out.append(f"- … +{len(items) - HISTORY_LIMIT} more")
    out += ["", f"**Drift of key figures: {len(h.drift)}**"]
    out += [f"- ↕ {md(describe_drift(d, view.names))}" for d in h.drift[:HISTORY_LIMIT]]
    return out


def render_diff_markdown(delta: HistoryDelta, *, limit: int = 50) -> str:
    """`report diff --format md`: what is new, resolved, still present and drifting, for a ticket."""
    out = [
        "# hyperpod-perf: changes between two reports",
        "",
        f"Compared with: {code(delta.previous_location or 'the previous report')}",
    ]
    for title, items in (
        ("New since last run", delta.new),
        ("Resolved since last run", delta.resolved),
        ("Still present", delta.still_present),
    ):
        out += ["", f"## {title} ({len(items)})", ""]
        out += [
            f"- {sev(f.severity)} {md(f.node or 'cluster')}: {code(f.check)} {md(f.summary)}"
            for f in items[:limit]
        ]
        if len(items) > limit:
            out.append(f"- +{len(items) - limit} more")
    out += ["", f"## Drift of key figures ({len(delta.drift)})", ""]
    out += [f"- {md(describe_drift(d))}" for d in delta.drift[:limit]]
    if len(delta.drift) > limit:
        out.append(f"- +{len(delta.drift) - limit} more")
    return escaping.markdown_document("\n".join(out) + "\n")
