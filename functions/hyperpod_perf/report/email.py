"""The e-mail (plain text, SNS): the answer in the first line, fits a phone screen or two.

Order is what an operator woken by an alarm needs: verdict, the grouped concerns (each marked
"new" or "still present" when the previous run is known), which nodes, what changed, what was
not checked, what to do, and where the full report is. Identical findings are grouped across
nodes, and every section is capped, so a 1,000-node cluster still fits in MAX_LINES.
"""

from __future__ import annotations

from hyperpod_perf.models import SNS_SUBJECT_MAX_CHARS, Report, Severity
from hyperpod_perf.report.history import describe_drift
from hyperpod_perf.report.verdict import ICON, WORD, node_list, overall_severity, plural
from hyperpod_perf.report.view import ReportView, build_view, report_html_location
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

MAX_LINES = 60
TOP_GROUPS = 8
TOP_NODES = 6
TOP_HISTORY = 3
TOP_NOT_CHECKED = 3
TOP_NEXT_STEPS = 5
#: Long lines are cut so one finding cannot take a screen.
LINE_WIDTH = 160


def _cut(text: str, width: int = LINE_WIDTH) -> str:
    """One line (log text may hold newlines), indentation kept, at most `width` characters."""
    indent = text[: len(text) - len(text.lstrip(" "))]
    text = indent + " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _tag(status: str | None) -> str:
    return {"new": "[NEW] ", "still present": "[STILL PRESENT] "}.get(status or "", "")


def email_subject(report: Report, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> str:
    """SNS subjects are ASCII-safe-ish and fewer than 100 characters."""
    view = build_view(report, thresholds)
    worst = overall_severity(report)
    return _cut(
        f"[hyperpod-perf] {report.cluster.name}: {WORD[worst].upper()} - {view.verdict}",
        SNS_SUBJECT_MAX_CHARS,
    )


def render_email(
    report: Report, thresholds: Thresholds = DEFAULT_THRESHOLDS, *, max_lines: int = MAX_LINES
) -> str:
    view = build_view(report, thresholds)
    worst = overall_severity(report)
    counts = view.counts
    head = [
        _cut(f"{ICON[worst]} {WORD[worst].upper()}: {view.verdict}"),
        _cut(
            f"Cluster {report.cluster.name} · {report.run.reason} · window {report.run.window_minutes} min · "
            f"{plural(len(view.rows), 'node')} · {counts[Severity.CONCERN]} concern(s), "
            f"{counts[Severity.INFO]} info"
        ),
    ]
    tail = _location(report)
    limits = {
        "groups": TOP_GROUPS,
        "nodes": TOP_NODES,
        "history": TOP_HISTORY,
        "next": TOP_NEXT_STEPS,
        "not_checked": TOP_NOT_CHECKED,
    }
    floors = {"groups": 3, "nodes": 1, "history": 0, "next": 1, "not_checked": 0}
    while True:
        sections = [
            _concerns(view, limits["groups"]),
            _nodes(view, limits["nodes"]),
            _history(report, limits["history"]),
            _next_steps(view, limits["next"]),
            _not_checked(report, limits["not_checked"]),
        ]
        used = len(head) + len(tail) + 1 + sum(len(s) + 1 for s in sections if s)
        # Shrink the least important section that can still shrink until the message fits.
        shrinkable = [
            k for k in ("not_checked", "history", "nodes", "next", "groups") if limits[k] > floors[k]
        ]
        if used <= max_lines or not shrinkable:
            break
        limits[shrinkable[0]] -= 1
    lines = list(head)
    for section in sections:
        if section:
            lines += ["", *section]
    lines += ["", *tail]
    return "\n".join(lines) + "\n"


def _concerns(view: ReportView, limit: int = TOP_GROUPS) -> list[str]:
    groups = view.notable_groups
    if not groups:
        return ["✔ No concerns: every check passed."]
    any_concern = any(g.severity is Severity.CONCERN for g in groups)
    heading = "TOP CONCERNS" if any_concern else "NO CONCERNS - FOR INFORMATION"
    out = [f"{heading} (identical findings grouped across nodes)"]
    for i, g in enumerate(groups[:limit], 1):
        status = view.history.group_status(g.findings)
        handoff = f" → {g.handoff}" if g.handoff else ""
        out.append(_cut(f"{i}. {ICON[g.severity]} {_tag(status)}{g.check}: {g.title}{handoff}"))
    if len(groups) > limit:
        out.append(f"+{len(groups) - limit} more group(s) in the report")
    return out


def _nodes(view: ReportView, limit: int = TOP_NODES) -> list[str]:
    rows = view.nodes_with_concern
    if not rows:
        return []
    out = [f"NODES WITH CONCERNS ({len(rows)} of {len(view.rows)}, worst first)"]
    for row in rows[:limit]:
        checks = list(dict.fromkeys(f.check for f in row.concerns))
        out.append(_cut(f"- {row.node}: {', '.join(checks)}"))
    if len(rows) > limit:
        out.append(f"- +{len(rows) - limit} more node(s): {node_list([r.node for r in rows[limit:]])}")
    return out


def _history(report: Report, limit: int = TOP_HISTORY) -> list[str]:
    h = report.history
    if h is None:
        return ["SINCE LAST RUN: no previous report to compare with"]
    out = [
        f"SINCE LAST RUN: {len(h.new)} new, {len(h.resolved)} resolved, "
        f"{len(h.still_present)} still present, "
        f"{len(h.drift)} figure(s) drifted"
    ]
    out += [_cut(f"- resolved: {f.node or 'cluster'}: {f.check} ({f.summary})") for f in h.resolved[:limit]]
    out += [_cut(f"- drift: {describe_drift(d)}") for d in h.drift[:limit]]
    return out


def _next_steps(view: ReportView, limit: int = TOP_NEXT_STEPS) -> list[str]:
    """Each distinct next step once, pointing back at the concern numbers it answers."""
    groups = view.notable_groups
    steps: dict[str, list[int]] = {}
    for number, g in enumerate(groups, 1):
        if g.next_step and g.severity is Severity.CONCERN:
            steps.setdefault(g.next_step, []).append(number)
    if not steps:
        return []
    out = ["NEXT STEPS"]
    for step, numbers in list(steps.items())[:limit]:
        refs = ", ".join(f"#{n}" for n in numbers)
        out.append(_cut(f"- ({refs}) {step}"))
    if len(steps) > limit:
        out.append(f"- +{len(steps) - limit} more in the report")
    return out


def _not_checked(report: Report, limit: int = TOP_NOT_CHECKED) -> list[str]:
    if not report.not_checked:
        return []
    out = [f"NOT CHECKED ({len(report.not_checked)})"]
    out += [_cut(f"- {n.what}: {n.why}") for n in report.not_checked[:limit]]
    if len(report.not_checked) > limit:
        out.append(f"- +{len(report.not_checked) - limit} more in the report")
    return out


def _location(report: Report) -> list[str]:
    where = report_html_location(report)
    if not where:
        return ["Full report: not stored (no report location for this run)"]
    return [f"Full report: {where}", f"Fetch it: aws s3 cp {where} ."]
