"""The e-mail (plain text, SNS): the answer in the first line, fits a phone screen or two.

Order is what an operator woken by an alarm needs: verdict, the grouped concerns (each marked
"new" or "still present" when the previous run is known), which nodes, what changed, what was
not checked, what to do, and where the full report is. Identical findings are grouped across
nodes, and every section is capped, so a 1,000-node cluster still fits in MAX_LINES, plus the
report's console and direct links (up to four lines a phone taps, not read: they take no concern's
place).
"""

from __future__ import annotations

from hyperpod_perf.domain import escaping
from hyperpod_perf.domain.findings import TIER_MEANINGS, Severity, Tier
from hyperpod_perf.domain.links import ReportLinks
from hyperpod_perf.domain.report import SNS_SUBJECT_MAX_CHARS, Report
from hyperpod_perf.report.alarm_answer import email_lines as alarm_lines
from hyperpod_perf.report.commands import batched_api_commands, command_lines, plans_for
from hyperpod_perf.report.history import describe_drift
from hyperpod_perf.report.verdict import (
    ICON,
    IMPACT_LABEL,
    TIER_WORD,
    WORD,
    affected_nodes,
    fit_clauses,
    headline_word,
    node_list,
    overall_severity,
    plural,
    report_tier,
    tier_nodes,
    verdict_clauses,
    worst_class,
)
from hyperpod_perf.report.view import (
    ReportView,
    build_view,
    dashboard_link,
    report_html_location,
    safe_link,
)
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds
from hyperpod_perf.rules.urgency import tier_counts

MAX_LINES = 60
TOP_GROUPS = 8
TOP_NODES = 6
TOP_HISTORY = 3
TOP_NOT_CHECKED = 3
TOP_NEXT_STEPS = 5
TOP_PLANS = 2
#: Prose lines wrap at this width (hanging indent); nothing is ever cut. Next steps are written
#: one per line, whole, however long: a command split over two lines breaks on copy and paste.
LINE_WIDTH = 100
SUBJECT_PREFIX = "[hyperpod-perf] "


def _wrap(text: str, width: int = LINE_WIDTH) -> list[str]:
    """One logical line as one or more lines of at most `width` characters where possible.

    Breaks only at spaces outside `code spans`, continuation lines indented under the text,
    so a word or a command in backticks is never split; a single longer token stays whole.
    """
    indent = text[: len(text) - len(text.lstrip(" "))]
    tokens = _tokens(" ".join(text.split()))
    hang = indent + "   "
    lines: list[str] = []
    current = indent
    for token in tokens:
        if current.strip() and len(current) + 1 + len(token) > width:
            lines.append(current)
            current = hang + token
        else:
            current = f"{current} {token}" if current.strip() else current + token
    lines.append(current)
    return lines


def _tokens(text: str) -> list[str]:
    """Space-separated words, a `code span` (with what is glued to it) counted as one word."""
    tokens: list[str] = []
    in_code = glue = False
    for word in text.split(" "):
        if (in_code or glue or word == "§") and tokens:
            tokens[-1] += " " + word
        else:
            tokens.append(word)
        if word.count("`") % 2:
            in_code = not in_code
        glue = word in _GLUED
    return tokens


#: Words that stay on the line of the word after them; `§` also stays with the word before it
#: (`→ hyperpod-node-debugger § G` is one unit).
_GLUED = frozenset({"→", "§"})


def _one_line(text: str) -> str:
    """Log text may hold newlines; a next step is one line, whole."""
    indent = text[: len(text) - len(text.lstrip(" "))]
    return indent + " ".join(text.split())


def _tag(status: str | None) -> str:
    return {"new": "[NEW] ", "still present": "[STILL PRESENT] "}.get(status or "", "")


def email_subject(report: Report, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> str:
    """At most 99 characters (SNS), ASCII: how many nodes are affected and the worst class first.

    `[hyperpod-perf] ml-cluster: ACT NOW 1/64 nodes - 1 node is failing the job (gpu.xid); +2 more`:
    the most urgent tier and how many nodes are in it, then the clauses in the one order (tier, then
    impact), never cut; those that do not fit become `+N more`. When one node is in that tier it is
    named instead of counted, host name and id, where that fits:
    `[hyperpod-perf] ml-cluster: FIX SOON - ip-10-1-125-188 (i-0a1b2c3d4e5f60005) has GPU faults`.
    """
    view = build_view(report, thresholds)
    worst = overall_severity(report)
    nodes = len(view.rows) or report.cluster.node_count
    tier = report_tier(report)
    if worst is not Severity.CONCERN or tier is None:
        return _fit_subject(report, WORD[worst].upper(), [view.verdict], f"{plural(nodes, 'node')} checked")
    urgent = tier_nodes(report, tier)
    fallback = f"{IMPACT_LABEL.get(worst_class(report) or '', 'concerns')} concern"
    if len(urgent) == 1:
        named = verdict_clauses(report, view.names)
        subject = _fit_subject(report, TIER_WORD[tier], named, fallback)
        if _ascii(view.names.label(urgent[0])) in subject:
            return subject
    status = TIER_WORD[tier] + (f" {len(urgent)}/{plural(nodes, 'node')}" if urgent else "")
    return _fit_subject(report, status, verdict_clauses(report), fallback)


def _fit_subject(report: Report, status: str, clauses: list[str], fallback: str) -> str:
    name = _ascii(report.cluster.name)
    room = SNS_SUBJECT_MAX_CHARS - len(SUBJECT_PREFIX) - len(f": {status} - ") - len(fallback) - 10
    if len(name) > room:  # only an overlong cluster name is shortened; the body names it whole
        name = name[: max(room - 1, 8)] + "~"
    prefix = f"{SUBJECT_PREFIX}{name}: {status} - "
    subject = fit_clauses(prefix, [_ascii(c) for c in clauses], SNS_SUBJECT_MAX_CHARS, fallback)
    return subject if len(subject) <= SNS_SUBJECT_MAX_CHARS else prefix.rstrip(" -")


def _ascii(text: str) -> str:
    """SNS subjects must be ASCII: the few non-ASCII characters we write get ASCII stand-ins."""
    text = text.replace("…", "...").replace("°", " deg").replace("→", "->").replace("·", "-")
    return text.encode("ascii", "replace").decode("ascii")


def render_email(
    report: Report,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    *,
    max_lines: int = MAX_LINES,
    links: ReportLinks | None = None,
) -> str:
    """The e-mail body; `links` (Publish signs them) adds the report's console page and direct link."""
    view = build_view(report, thresholds)
    worst = overall_severity(report)
    counts = view.counts
    affected = len(affected_nodes(report))
    lead = headline_word(report) if worst is Severity.CONCERN else WORD[worst].upper()
    tiers = tier_counts(report.findings)
    head = [
        *_wrap(f"{ICON[worst]} {lead}: {view.verdict}"),
        *_wrap(
            f"Cluster {report.cluster.name} · {report.run.reason} · window {report.run.window_minutes} min · "
            f"{affected} of {plural(len(view.rows), 'node')} affected · "
            f"{counts[Severity.CONCERN]} concern(s), {counts[Severity.INFO]} info · "
            + ", ".join(f"{n} {t.value}" for t, n in tiers.items())
        ),
    ]
    tail = _location(report, links)
    budget = max_lines + len(tail) - len(_location(report))
    limits = {
        "groups": TOP_GROUPS,
        "nodes": TOP_NODES,
        "history": TOP_HISTORY,
        "next": TOP_NEXT_STEPS,
        "not_checked": TOP_NOT_CHECKED,
        "plans": TOP_PLANS,
    }
    floors = {"groups": 3, "nodes": 1, "history": 0, "next": 1, "not_checked": 0, "plans": 1}
    alarm = alarm_lines(report, _wrap, _one_line, thresholds)
    while True:
        sections = [
            alarm,
            _concerns(view, limits["groups"]),
            _commands(report, limits["plans"]),
            _nodes(view, limits["nodes"]),
            _history(view, limits["history"]),
            _next_steps(view, limits["next"]),
            _not_checked(report, limits["not_checked"]),
        ]
        used = len(head) + len(tail) + 1 + sum(len(s) + 1 for s in sections if s)
        # Shrink the least important section that can still shrink until the message fits.
        shrinkable = [
            k for k in ("not_checked", "history", "nodes", "next", "plans", "groups") if limits[k] > floors[k]
        ]
        if used <= budget or not shrinkable:
            break
        limits[shrinkable[0]] -= 1
    lines = list(head)
    for section in sections:
        if section:
            lines += ["", *section]
    lines += ["", *tail]
    return escaping.terminal("\n".join(lines) + "\n")


def _concerns(view: ReportView, limit: int = TOP_GROUPS) -> list[str]:
    """The grouped findings under their tier (act now, fix soon, watch), each with why it is there."""
    groups = view.notable_groups
    if not groups:
        return ["✔ No concerns: every check passed."]
    any_concern = any(g.severity is Severity.CONCERN for g in groups)
    heading = "TOP CONCERNS" if any_concern else "NO CONCERNS - FOR INFORMATION"
    out = [f"{heading} (most urgent first; identical findings grouped across nodes)"]
    tier = None
    for i, g in enumerate(groups[:limit], 1):
        if g.tier is not tier and g.tier is not None:
            tier = g.tier
            out.append(f"{TIER_WORD[tier]} - {TIER_MEANINGS[tier]}")
        status = view.history.group_status(g.findings)
        handoff = f" → {g.handoff}" if g.handoff else ""
        out += _wrap(f"{i}. {ICON[g.severity]} {_tag(status)}{g.check}: {g.title}{handoff}")
        if g.severity is Severity.CONCERN and g.tier is Tier.ACT_NOW:  # the others: their heading says
            out += _wrap(f"   why act now: {g.tier_reason}")
    if len(groups) > limit:
        out.append(f"+{len(groups) - limit} more group(s) in the report")
    return out


def _commands(report: Report, limit: int = TOP_PLANS) -> list[str]:
    """The act-now nodes' commands, whole lines to paste (printed here, never run by this tool)."""
    plans = plans_for(report)
    if not plans:
        return []
    out = [f"COMMANDS TO PASTE for the {plural(len(plans), 'act-now node')} (printed, never run)"]
    for plan in plans[:limit]:
        out += _wrap(f"- {plan.label}: {plan.action} ({', '.join(dict.fromkeys(plan.checks))})")
        out += command_lines(plan)
    if len(plans) > limit:
        rest = plans[limit:]
        out.append(
            f"- +{len(rest)} more node(s) in the report; HyperPod's calls for all of them, after draining:"
        )
        out += [f"   {line}" for line in batched_api_commands(rest, report.cluster.name)]
    return out


def _nodes(view: ReportView, limit: int = TOP_NODES) -> list[str]:
    rows = view.nodes_with_concern
    if not rows:
        return []
    out = [f"NODES WITH CONCERNS ({len(rows)} of {len(view.rows)}, worst first)"]
    for row in rows[:limit]:
        checks = list(dict.fromkeys(f.check for f in row.concerns))
        out += _wrap(f"- {row.label}: {', '.join(checks)}")
    if len(rows) > limit:
        out.append(f"- +{len(rows) - limit} more node(s): {node_list([r.label for r in rows[limit:]])}")
    return out


def _history(view: ReportView, limit: int = TOP_HISTORY) -> list[str]:
    h = view.report.history
    if h is None:
        return ["SINCE LAST RUN: no previous report to compare with"]
    out = [
        f"SINCE LAST RUN: {len(h.new)} new, {len(h.resolved)} resolved, "
        f"{len(h.still_present)} still present, "
        f"{len(h.drift)} figure(s) drifted"
    ]
    for f in h.resolved[:limit]:
        out += _wrap(f"- resolved: {view.names.label(f.node)}: {f.check} ({f.summary})")
    for d in h.drift[:limit]:
        out += _wrap(f"- drift: {describe_drift(d, view.names)}")
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
        out.append(_one_line(f"- ({refs}) {step}"))
    if len(steps) > limit:
        out.append(f"- +{len(steps) - limit} more in the report")
    return out


def _not_checked(report: Report, limit: int = TOP_NOT_CHECKED) -> list[str]:
    if not report.not_checked:
        return []
    out = [f"NOT CHECKED ({len(report.not_checked)})"]
    for n in report.not_checked[:limit]:
        out += _wrap(f"- {n.what}: {n.why}")
    if len(report.not_checked) > limit:
        out.append(f"- +{len(report.not_checked) - limit} more in the report")
    return out


def _location(report: Report, links: ReportLinks | None = None) -> list[str]:
    """Where the report is: its address, then what a phone can open (each URL on a line of its own,
    whole, so a mail client links it), then the command for a terminal."""
    where = report_html_location(report)
    dashboard = dashboard_link(report)
    fleet = [f"The fleet over time (CloudWatch dashboard): {dashboard}"] if dashboard else []
    if not where:
        return ["Full report: not stored (no report location for this run)", *fleet]
    opened: list[str] = []
    if links is not None and links.s3_uri == where:
        console = safe_link(links.console_url)
        direct = safe_link(links.presigned_url)
        if console:
            opened += ["Open it in the S3 console (console sign-in; the link does not expire):"]
            opened.append(f"  {console}")
        if direct:
            opened += [f"Open it directly, no sign-in ({links.presigned_lifetime()}):", f"  {direct}"]
    return [f"Full report: {where}", *opened, f"Fetch it: aws s3 cp {where} .", *fleet]
