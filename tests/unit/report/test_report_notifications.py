"""E-mail and Chatbot message: the answer first, bounded size, new vs still present, escaping."""

from __future__ import annotations

from report_builders import finding, hot_gpu, node, report

from hyperpod_perf.domain.findings import RunbookSection
from hyperpod_perf.report.chatbot import render_chatbot
from hyperpod_perf.report.email import MAX_LINES, email_subject, render_email
from hyperpod_perf_dev.synthetic import synthetic_report_with_history

FETCH = "aws s3 cp s3://hyperpod-perf-reports-111122223333/demo-cluster/exec-0001/report.html ."


def test_email_for_a_1000_node_cluster_stays_under_60_lines_and_ends_with_the_fetch_command() -> None:
    # Given a 1,000-node report with 13 hot nodes, drops, a straggler, a saturated FSx and history
    text = render_email(synthetic_report_with_history(1000))
    lines = text.splitlines()
    # Then it fits, leads with the verdict, groups the hot nodes and ends with where the report is
    assert len(lines) < MAX_LINES
    assert lines[0].startswith(
        "⚠ FIX SOON: 13 nodes have GPU faults; 1 node has EFA problems; 1 node degrades NCCL; FSx"
    )
    assert any("[STILL PRESENT] gpu.temperature: GPU 3 at 91 °C on 13 nodes:" in line for line in lines)
    assert any("[NEW] efa.counters:" in line for line in lines)
    assert lines[-1] == f"Fetch it: {FETCH}"


def test_email_shrinks_sections_rather_than_exceed_the_budget() -> None:
    # Given 40 distinct concern checks on 40 nodes (far more than fit)
    findings = [
        finding(f"n{k}", f"host.check_{k}", section=RunbookSection.RESOURCES, next_step=f"fix {k}")
        for k in range(40)
    ]
    r = report(findings, [node(f"n{k}") for k in range(40)])
    # When rendered with a 30-line budget
    lines = render_email(r, max_lines=30).splitlines()
    # Then it fits and says how many groups were left for the report
    assert len(lines) <= 30
    assert any(line.startswith("+") and "more group(s) in the report" in line for line in lines)


def test_the_report_links_take_no_concern_s_place_in_the_budget() -> None:
    from hyperpod_perf.domain.links import ReportLinks

    # Given 40 distinct concerns, rendered within 30 lines, once without links and once with both
    findings = [
        finding(f"n{k}", f"host.check_{k}", section=RunbookSection.RESOURCES, next_step=f"fix {k}")
        for k in range(40)
    ]
    r = report(findings, [node(f"n{k}") for k in range(40)])
    plain = render_email(r, max_lines=30).splitlines()
    where = next(line for line in plain if line.startswith("Full report: ")).removeprefix("Full report: ")
    links = ReportLinks(
        s3_uri=where,
        console_url="https://us-west-2.console.aws.amazon.com/s3/object/b?region=us-west-2&prefix=k",
        presigned_url="https://b.s3.us-west-2.amazonaws.com/k?X-Amz-Expires=43200&X-Amz-Signature=ab",
        presigned_expires_s=43200,
    )
    linked = render_email(r, max_lines=30, links=links).splitlines()
    # Then the links add their four lines and every concern line of the plain one is still there
    assert len(linked) == len(plain) + 4
    assert [line for line in linked if "host.check_" in line] == [
        line for line in plain if "host.check_" in line
    ]


def test_email_subject_is_short() -> None:
    # Given 1,000 nodes, 15 with concerns, the worst class a GPU fault on 13 of them
    subject = email_subject(synthetic_report_with_history(1000))
    # Then the subject counts the affected nodes and leads with the worst class, within SNS's limit
    assert subject == (
        "[hyperpod-perf] demo-cluster: FIX SOON 15/1000 nodes - 13 nodes have GPU faults; +3 more"
    )
    assert len(subject) <= 99  # SNS: "less than 100 characters long"


def test_chatbot_message_has_the_custom_notification_shape_and_at_most_5_concerns() -> None:
    msg = render_chatbot(synthetic_report_with_history(1000))
    assert (msg["version"], msg["source"]) == ("1.0", "custom")
    content = msg["content"]
    assert content["textType"] == "client-markdown"
    assert content["description"].startswith("*FIX SOON:* 13 nodes have GPU faults; 1 node has EFA problems")
    assert sum(line.startswith("• ⚠") for line in content["description"].splitlines()) == 5
    assert len(content["nextSteps"]) <= 5
    assert content["nextSteps"][-1] == f"Open the full report: `{FETCH}`"
    assert msg["metadata"]["threadId"] == "hyperpod-perf-demo-cluster"


def test_chatbot_escapes_chat_control_characters_from_node_text() -> None:
    # Given a node whose name and finding try to ping the channel
    r = report([hot_gpu("<!channel>", 95)], [node("<!channel>")])
    msg = render_chatbot(r)
    # Then the text arrives escaped, never as a mention
    assert "<!channel>" not in msg["content"]["description"]
    assert "&lt;!channel&gt;" in msg["content"]["description"]


def test_email_of_a_run_without_concern_does_not_call_its_notes_concerns():
    # Given a run whose only findings are INFO notes
    from hyperpod_perf.domain.findings import Severity

    notes = report(
        [finding(None, "health.deep_check", Severity.INFO, "no deep health check results in the window")],
        [node("i-0a"), node("i-0b")],
    )
    # When the e-mail is written
    text = render_email(notes)
    # Then the notes are listed as information, never under a "concerns" heading
    assert (
        "NO CONCERNS - FOR INFORMATION (most urgent first; identical findings grouped across nodes)" in text
    )
    assert "TOP CONCERNS" not in text
    assert "health.deep_check: no deep health check results in the window" in text
