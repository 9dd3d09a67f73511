"""The Slack / Teams message: an Amazon Q Developer in chat applications (AWS Chatbot) custom notification.

Format (AWS docs, "Custom notifications using Amazon Q Developer in chat applications"):
`{"version": "1.0", "source": "custom", "id"?, "content": {"textType": "client-markdown", "title",
"description", "nextSteps": [...], "keywords": [...]}, "metadata": {"threadId", "summary",
"eventType", "relatedResources": [...], "additionalContext": {str: str}}}`, published to the SNS
topic the chat channel subscribes to. `threadId` is per cluster, so every run for one cluster
lands in one chat thread.

Chat markdown treats `&`, `<` and `>` as control characters (Slack links are `<url|text>`), so
every piece of node- or log-derived text is escaped; a node called `<!channel>` cannot ping.
"""

from __future__ import annotations

import json
from typing import Any

from hyperpod_perf.domain import escaping
from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.domain.links import ReportLinks
from hyperpod_perf.domain.report import Report
from hyperpod_perf.report.alarm_answer import chat_lines as alarm_chat_lines
from hyperpod_perf.report.alarm_answer import chat_steps as alarm_chat_steps
from hyperpod_perf.report.commands import plans_for
from hyperpod_perf.report.verdict import (
    FAMILY_ORDER,
    ICON,
    TIER_WORD,
    WORD,
    affected_nodes,
    fit_clauses,
    fit_named_clauses,
    headline_word,
    overall_severity,
    plural,
    report_tier,
    verdict_clauses,
)
from hyperpod_perf.report.view import build_view, dashboard_link, report_html_location, safe_link
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

MAX_CONCERNS = 5
MAX_NEXT_STEPS = 5
MAX_KEYWORDS = 8
#: Character budgets. AWS's custom-notification page ("Custom notifications using Amazon Q
#: Developer in chat applications", docs.aws.amazon.com/chatbot/latest/adminguide/custom-notifs.html)
#: defines the fields but states no length per field; Slack's documented limit for a text object
#: is 3,000 characters (api.slack.com/reference/block-kit/composition-objects#text), so each
#: field we fill stays within it. Nothing is cut: a concern line or a next step that does not fit
#: is left out whole and counted in a "+N more in the report" line.
DESCRIPTION_MAX_CHARS = 3000
NEXT_STEPS_MAX_CHARS = 3000
SUMMARY_MAX_CHARS = 300
EVENT_TYPE = "HyperPodPerfReport"


def chat_escape(text: object) -> str:
    """One piece of node-, log- or request-derived text for the chat (domain.escaping.slack)."""
    return escaping.slack(text)


def _safe_message(message: Any) -> Any:
    """The last pass over every string of the message (its own `*bold*`, `<url|text>` kept): no
    terminal control, no `@channel`-style mention, whatever a later edit put in a field."""
    if isinstance(message, str):
        return escaping.slack_message(message)
    if isinstance(message, list):
        return [_safe_message(v) for v in message]
    if isinstance(message, dict):
        return {k: _safe_message(v) for k, v in message.items()}
    return message


def _within(lines: list[str], budget: int, more: str) -> tuple[list[str], int]:
    """The leading whole lines whose total (joined by newlines, plus the `more` line) fits."""
    kept: list[str] = []
    for i, line in enumerate(lines):
        rest = len(lines) - i - 1
        tail = [more.format(n=rest)] if rest else []
        if len("\n".join([*kept, line, *tail])) > budget:
            break
        kept.append(line)
    return kept, len(lines) - len(kept)


def render_chatbot(
    report: Report, thresholds: Thresholds = DEFAULT_THRESHOLDS, *, links: ReportLinks | None = None
) -> dict[str, Any]:
    """The Chatbot message; `links` (Publish signs them) adds the report's console page and direct
    link to the last next step, before the `aws s3 cp` line."""
    view = build_view(report, thresholds)
    worst = overall_severity(report)
    counts = view.counts
    lead = headline_word(report) if worst is Severity.CONCERN else WORD[worst].capitalize()
    head = [f"*{lead}:* {chat_escape(view.verdict)}"]
    head.append(
        f"{len(affected_nodes(report))} of {plural(len(view.rows), 'node')} affected · "
        f"{counts[Severity.CONCERN]} concern(s) · {counts[Severity.INFO]} info · "
        f"{chat_escape(report.run.reason)}"
    )
    head += alarm_chat_lines(report, chat_escape, thresholds)
    groups = view.concern_groups  # in the impact order (verdict.IMPACT_CLASSES)
    concern_lines = []
    for g in groups:
        status = view.history.group_status(g.findings)
        tag = f" _({status})_" if status else ""
        tier = f"*{TIER_WORD[g.tier]}* " if g.tier else ""
        concern_lines.append(
            f"• {ICON[g.severity]} {tier}`{chat_escape(g.check)}` {chat_escape(g.title)}{tag}"
        )
    h = report.history
    tail = []
    dashboard = dashboard_link(report)
    if dashboard:
        tail.append(escaping.slack_link(dashboard, "Fleet dashboard"))
    if h is not None:
        tail.append(
            f"Since last run: {len(h.new)} new, {len(h.resolved)} resolved, "
            f"{len(h.still_present)} still present"
        )
    more_line = "• +{n} more concern group(s) in the report"
    budget = DESCRIPTION_MAX_CHARS - len("\n".join(head + tail)) - 2
    shown, hidden = _within(concern_lines[:MAX_CONCERNS], budget, more_line)
    hidden += max(0, len(concern_lines) - MAX_CONCERNS)
    description = [*head, *shown, *([more_line.format(n=hidden)] if hidden else []), *tail]
    where = report_html_location(report)
    steps = alarm_chat_steps(report, chat_escape, thresholds)
    # The act-now nodes' first command to paste leads (drain: no new work lands there); the rest of
    # each plan is in the e-mail and the report.
    for plan in plans_for(report)[:2]:
        first = next((c for c in plan.commands if c.text), None)
        if first:
            steps.append(f"{chat_escape(plan.label)}: {plan.action} it; first `{chat_escape(first.text)}`")
    steps += [chat_escape(s) for s in dict.fromkeys(g.next_step for g in groups if g.next_step)]
    where_steps = _where_steps(where, links)
    step_budget = NEXT_STEPS_MAX_CHARS - sum(len(s) + 1 for s in where_steps)
    room = MAX_NEXT_STEPS - len(where_steps)
    if len(steps) > room:  # keep a slot for the "+N more" line
        room -= 1
    kept, left = _within(steps[:room], step_budget, "+{n} more next step(s) in the report")
    left += max(0, len(steps) - room)
    if left:
        kept.append(f"+{left} more next step(s) in the report")
    kept += where_steps
    families = sorted({g.family for g in groups}, key=lambda f: FAMILY_ORDER.get(f, 99))
    keywords = [
        report.cluster.name,
        headline_word(report) if worst is Severity.CONCERN else WORD[worst].upper(),
        *families,
    ][:MAX_KEYWORDS]
    content: dict[str, Any] = {
        "textType": "client-markdown",
        "title": f"{ICON[worst]} HyperPod perf: {chat_escape(report.cluster.name)}",
        "description": "\n".join(description),
        "nextSteps": kept,
        "keywords": [chat_escape(k) for k in keywords],
    }
    prefix = f"{report.cluster.name}: "
    summary = (
        fit_named_clauses(report, prefix, SUMMARY_MAX_CHARS, "concerns")
        if verdict_clauses(report)
        else fit_clauses(prefix, [view.verdict], SUMMARY_MAX_CHARS, "concerns")
    )
    run_tier = report_tier(report)
    metadata: dict[str, Any] = {
        "threadId": f"hyperpod-perf-{report.cluster.name}",
        "summary": chat_escape(summary),
        "eventType": EVENT_TYPE,
        "relatedResources": [r for r in (report.cluster.arn, where) if r],
        "additionalContext": {
            k: str(v)
            for k, v in (
                ("cluster", report.cluster.name),
                ("execution", report.run.execution),
                ("severity", worst.value),
                ("tier", run_tier.value if run_tier else None),
                ("concerns", counts[Severity.CONCERN]),
                ("schemaVersion", report.schema_version),
            )
            if v is not None
        },
    }
    message: dict[str, Any] = {"version": "1.0", "source": "custom"}
    if report.run.execution:
        message["id"] = report.run.execution
    message["content"] = content
    message["metadata"] = metadata
    return _safe_message(message)


def _where_steps(where: str | None, links: ReportLinks | None) -> list[str]:
    """The report's links a phone opens (one step), then the command for a terminal (one step).

    The URLs are kept whole (`escaping.slack_link`); the presigned one is ~1.5 KB with a Lambda
    role's session token, so it is left out rather than let it crowd the other steps out of the
    budget when it would take more than half of it."""
    if not where:
        return []
    fetch = f"Open the full report: `aws s3 cp {chat_escape(where)} .`"
    if links is None or links.s3_uri != where:
        return [fetch]
    opened = []
    console = safe_link(links.console_url)
    direct = safe_link(links.presigned_url)
    if console:
        link = escaping.slack_link(console, "in the S3 console")
        opened.append(f"{link} (console sign-in, does not expire)")
    if direct and len(direct) <= NEXT_STEPS_MAX_CHARS // 2:
        link = escaping.slack_link(direct, "directly, no sign-in")
        opened.append(f"{link} ({chat_escape(links.presigned_lifetime())})")
    if not opened:
        return [fetch]
    return ["Open the report " + " · or ".join(opened), f"Or fetch it: `aws s3 cp {chat_escape(where)} .`"]


def render_problem_chatbot(
    cluster: str, reason: str, detail: str, next_step: str, execution: str
) -> dict[str, Any]:
    """The Chatbot message of a run that could not finish. Every field may carry text from the
    rejected input (a cluster name, a validation message), so it is escaped like a report's."""
    return _safe_message(
        {
            "version": "1.0",
            "source": "custom",
            "content": {
                "textType": "client-markdown",
                "title": f":warning: hyperpod-perf could not diagnose {chat_escape(cluster)}",
                "description": f"*{chat_escape(reason)}*: {chat_escape(detail[:500])}",
                "nextSteps": [chat_escape(next_step)],
            },
            "metadata": {"additionalContext": {"execution": chat_escape(execution[:80])}},
        }
    )


def render_chatbot_json(report: Report, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> str:
    return json.dumps(render_chatbot(report, thresholds), ensure_ascii=False, indent=2) + "\n"
