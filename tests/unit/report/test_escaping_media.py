"""Every output medium escapes node and request text for itself (issue 24, findings 3 and 4).

Each field that comes from a node or a request is given each payload class in turn — HTML,
Markdown links / images / emphasis / headings, mentions, Slack control syntax, terminal escape
sequences and C0/C1 controls, bidi overrides — and every output is checked as its own reader
reads it: the Markdown through a real CommonMark parser (markdown-it-py), the HTML through
Python's HTML parser, the chat message as Slack mrkdwn, the text as a terminal. The invariant is
structural: a payload adds no element, link, heading, mention or control to any output — the
same output with a harmless placeholder in that field has the same structure.

The audit's reproductions: `<script>`, `<img onerror>` and links passed into `--format md`
(evaluate, diagnose, snapshot, logs analyze) and report.md prose; plain `@channel` and
`[text](https://…)` reached the Chatbot description and title (a rejected request's cluster
text too); ESC / BEL sequences (`ESC[2J`, window-title sets) reached the terminal and report.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from report_builders import finding, node, report

from hyperpod_perf.domain import escaping
from hyperpod_perf.domain.alarm import AlarmContext
from hyperpod_perf.domain.findings import Finding
from hyperpod_perf.domain.report import NotChecked, Report
from hyperpod_perf.pipeline.request import report_problem
from hyperpod_perf.report import chatbot, email, findings_format, history, html, markdown

PAYLOADS: dict[str, str] = {
    "html script": "<script>alert(1)</script>",
    "html img onerror": '<img src=x onerror="alert(1)">',
    "html entity": "&lt;b&gt; &amp;",
    "markdown link": "[click here](https://evil.example/x)",
    "markdown image": "![pixel](https://evil.example/p.png)",
    "markdown autolink": "<https://evil.example/>",
    "markdown emphasis": "**bold** _em_ ~~gone~~",
    "markdown heading": "# Heading",
    "markdown list": "- item",
    "markdown table pipe": "a | b | c",
    "mention": "@channel @here @alice",
    "slack control": "<!channel> <!here> <@U012AB3CD> <https://evil.example|click>",
    "ansi clear screen": "\x1b[2J\x1b[H",
    "ansi window title": "\x1b]0;pwned\x07",
    "ansi colour": "\x1b[31mred\x1b[0m",
    "bel": "ring\x07",
    "c1 csi": "\x9b31m\x85next",
    "carriage return": "real\rfake",
    "bidi override": "admin\u202egnp.exe",
    "nul": "a\x00b",
}
PLACEHOLDER = "placeholder"
FIELDS = (
    "node",
    "summary",
    "evidence",
    "next_step",
    "threshold",
    "handoff",
    "hostname",
    "reason",
    "not_checked",
    "alarm name",
    "alarm description",
)
#: What no output may contain after escaping: a C0 (but tab/newline) or C1 control, DEL, a bidi override.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def build(field: str, value: str) -> Report:
    """A small report whose `field` carries `value` (everything else benign)."""
    f = {
        "summary": "GPU 3 at 91 °C",
        "evidence": {"gpu": 3, "note": "fine"},
        "next_step": "Check cooling.",
        "threshold": "temperature.gpu >= 88 C",
        "handoff": "hyperpod-node-debugger § G",
    }
    name = "i-0123456789abcdef0"
    if field == "evidence":
        f["evidence"] = {"gpu": 3, "note": value}
    elif field in f:
        f[field] = value
    if field == "node":
        name = value
    concern = finding(name, "gpu.temperature", **f)
    summary = node(name, hostname=value if field == "hostname" else "ip-10-0-0-1")
    extra = {
        "not_checked": [NotChecked(what="fs.throughput", why=value if field == "not_checked" else "no FSx")]
    }
    built = report([concern], [summary], **extra)
    if field == "reason":
        built = built.model_copy(update={"run": built.run.model_copy(update={"reason": value})})
    if field.startswith("alarm"):  # the alarm that started the run: its text comes from the event
        name = value if field == "alarm name" else "ml-cluster-p5-step-time-high"
        description = value if field == "alarm description" else "Training step time"
        built = built.model_copy(update={"alarm": AlarmContext(name=name or "x", description=description)})
    return built


def outputs(r: Report) -> dict[str, str]:
    findings: list[Finding] = list(r.findings)
    delta = history.diff_reports(report([], []), r)
    return {
        "findings text": findings_format.render_text(findings),
        "findings md": findings_format.render_markdown(findings),
        "findings html": findings_format.render_html(findings),
        "report md": markdown.render_markdown(r),
        "report html": html.render_html(r),
        "email": email.render_email(r),
        "chatbot": json.dumps(chatbot.render_chatbot(r), ensure_ascii=False),
        "diff text": history.render_diff_text(delta),
        "diff md": markdown.render_diff_markdown(delta),
    }


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: Counter[str] = Counter()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        self.hrefs += [v or "" for k, v in attrs if k in ("href", "src")]


def html_structure(text: str) -> tuple[Counter[str], list[str]]:
    parser = _Tags()
    parser.feed(text)
    return parser.tags, parser.hrefs


def markdown_structure(text: str) -> tuple[Counter[str], list[str]]:
    """Elements and link targets as CommonMark (+ GFM tables, strikethrough) renders the document;
    `code` left out: a backtick pair makes a code span, which shows its text literally."""
    tags, hrefs = html_structure(MD.render(text))
    tags.pop("code", None)
    return tags, hrefs


def _check(field: str, value: str) -> None:
    hostile, benign = outputs(build(field, value)), outputs(build(field, PLACEHOLDER))
    for medium, text in hostile.items():
        # every medium: no terminal control, no bidi override
        assert not CONTROLS.search(text.replace("\\u001b", "")), (medium, field, text)
        if medium.endswith(" md"):
            assert markdown_structure(text) == markdown_structure(benign[medium]), (medium, field)
            assert not re.search(r"@(channel|here|alice)\b", text), (medium, field)
        elif medium.endswith(" html"):
            assert html_structure(text) == html_structure(benign[medium]), (medium, field)
        elif medium == "chatbot":
            message = json.loads(text)
            chat = json.dumps(message["content"], ensure_ascii=False) + json.dumps(message["metadata"])
            assert not re.search(r"<[!@]|<https://evil|@(channel|here)\b|\]\(", chat), (field, chat)
    assert "\x1b" not in "".join(hostile.values()), field


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("field", FIELDS)
def test_a_payload_in_any_field_changes_no_outputs_structure(field: str, payload: str, outcome) -> None:
    _check(field, PAYLOADS[payload])
    outcome(
        f"{payload} in `{field}`",
        "escaped in every medium: md/html structure unchanged, no mention, no terminal control",
    )


@settings(max_examples=25, deadline=None)
@given(
    field=st.sampled_from(FIELDS),
    parts=st.lists(st.sampled_from(list(PAYLOADS.values())), min_size=1, max_size=3),
    noise=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12),
)
def test_mixed_payloads_and_random_text_change_no_outputs_structure(
    field: str, parts: list[str], noise: str
) -> None:
    # Backticks make code spans (shown literally), which a placeholder has none of: not compared
    _check(field, noise.replace("`", "'") + "".join(parts))


def test_the_rejected_requests_cluster_text_reaches_no_chat_mention_or_link() -> None:
    # Given a rejected request whose cluster text carries Slack and Markdown syntax
    sent = []
    report_problem(
        {"cluster": "@channel [x](https://evil.example) <!here> \x1b[2J"},
        "exec-1",
        {"Error": "InvalidRequest", "Cause": json.dumps({"errorMessage": "invalid request field 'cluster'"})},
        store=None,
        notify=lambda subject, text, chat: sent.append((subject, text, chat)) or "m",
        rejected=True,
    )
    ((subject, text, chat),) = sent
    body = json.dumps(chat, ensure_ascii=False)
    # Then neither the chat message nor the e-mail acts on it
    assert not re.search(r"@(channel|here)\b|<!|\]\(", body), body
    assert "\x1b" not in subject + text + body


def test_the_terminal_function_keeps_text_and_drops_every_escape_sequence() -> None:
    assert escaping.terminal("a\tb\nc") == "a\tb\nc"
    assert escaping.terminal("x\x1b[2J\x1b]0;title\x07\x1bPq#0\x1b\\y\x1b(Bz") == "xyz"
    assert escaping.terminal("\u202eabc\u2066") == "abc"
    assert escaping.terminal("température °C →") == "température °C →"


def test_cli_text_output_drops_escapes_but_keeps_the_tools_own_colours() -> None:
    import argparse
    import io

    from hyperpod_perf.cli import conventions

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Tty()
    stream = conventions.output_stream(argparse.Namespace(format="text"), screen)
    stream.write("[CONCERN] gpu.xid: \x1b]0;pwned\x07Xid 79\x1b[2J\n")
    assert screen.getvalue() == "\x1b[1;31m[CONCERN]\x1b[0m gpu.xid: Xid 79\n"


def test_a_slack_link_keeps_its_url_whole_and_escapes_only_its_text() -> None:
    # Given a presigned URL (query separators `&`) and a label holding chat control characters
    url = "https://b.s3.us-west-2.amazonaws.com/reports/c/r/report.html?X-Amz-Expires=43200&X-Amz-Date=2"
    # Then the link carries the URL byte for byte and the label escaped, with no `|` to end it early
    assert escaping.slack_link(url, "open <!channel> | now") == f"<{url}|open &lt;!channel&gt; ¦ now>"
    # And a URL that would end or break the link, or is not https, is shown as text, never linked
    for bad in ("https://x/a>b", "https://x/a|<!channel>", "https://x/a b", "http://x/a", "javascript:x"):
        shown = escaping.slack_link(bad, "report")
        assert not shown.startswith("<") and "<!channel>" not in shown and shown.startswith("report: ")
