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

from hyperpod_perf.models import Report, Severity
from hyperpod_perf.report.verdict import FAMILY_ORDER, ICON, WORD, overall_severity, plural
from hyperpod_perf.report.view import build_view, report_html_location
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

MAX_CONCERNS = 5
MAX_NEXT_STEPS = 5
MAX_KEYWORDS = 8
#: Chat clients fold long messages; each concern line is cut to this.
LINE_WIDTH = 220
EVENT_TYPE = "HyperPodPerfReport"


def chat_escape(text: object) -> str:
    s = "" if text is None else " ".join(str(text).split())
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cut(text: str, width: int = LINE_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render_chatbot(report: Report, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> dict[str, Any]:
    view = build_view(report, thresholds)
    worst = overall_severity(report)
    counts = view.counts
    lines = [f"*{WORD[worst].capitalize()}:* {chat_escape(view.verdict)}"]
    lines.append(
        f"{plural(len(view.rows), 'node')} · {counts[Severity.CONCERN]} concern(s) · "
        f"{counts[Severity.INFO]} info · {chat_escape(report.run.reason)}"
    )
    groups = view.concern_groups
    for g in groups[:MAX_CONCERNS]:
        status = view.history.group_status(g.findings)
        tag = f" _({status})_" if status else ""
        lines.append(_cut(f"• {ICON[g.severity]} `{chat_escape(g.check)}` {chat_escape(g.title)}{tag}"))
    if len(groups) > MAX_CONCERNS:
        lines.append(f"• +{len(groups) - MAX_CONCERNS} more concern group(s) in the report")
    h = report.history
    if h is not None:
        lines.append(
            f"Since last run: {len(h.new)} new, {len(h.resolved)} resolved, "
            f"{len(h.still_present)} still present"
        )
    where = report_html_location(report)
    steps = [chat_escape(s) for s in dict.fromkeys(g.next_step for g in groups if g.next_step)]
    steps = [_cut(s) for s in steps[: MAX_NEXT_STEPS - (1 if where else 0)]]
    if where:
        steps.append(f"Open the full report: `aws s3 cp {chat_escape(where)} .`")
    families = sorted({g.family for g in groups}, key=lambda f: FAMILY_ORDER.get(f, 99))
    keywords = [report.cluster.name, WORD[worst].upper(), *families][:MAX_KEYWORDS]
    content: dict[str, Any] = {
        "textType": "client-markdown",
        "title": f"{ICON[worst]} HyperPod perf: {chat_escape(report.cluster.name)}",
        "description": "\n".join(lines),
        "nextSteps": steps,
        "keywords": [chat_escape(k) for k in keywords],
    }
    metadata: dict[str, Any] = {
        "threadId": f"hyperpod-perf-{report.cluster.name}",
        "summary": _cut(f"{report.cluster.name}: {view.verdict}", 300),
        "eventType": EVENT_TYPE,
        "relatedResources": [r for r in (report.cluster.arn, where) if r],
        "additionalContext": {
            k: str(v)
            for k, v in (
                ("cluster", report.cluster.name),
                ("execution", report.run.execution),
                ("severity", worst.value),
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
    return message


def render_problem_chatbot(
    cluster: str, reason: str, detail: str, next_step: str, execution: str
) -> dict[str, Any]:
    """The Chatbot message of a run that could not finish. Every field may carry text from the
    rejected input (a cluster name, a validation message), so it is escaped like a report's."""
    return {
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


def render_chatbot_json(report: Report, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> str:
    return json.dumps(render_chatbot(report, thresholds), ensure_ascii=False, indent=2) + "\n"
