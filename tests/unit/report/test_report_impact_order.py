"""Verdict first, everywhere: one impact order, a subject within SNS's limit, commands never cut."""

from __future__ import annotations

import pytest
from report_builders import finding, hot_gpu, node, report

from hyperpod_perf.domain.findings import RunbookSection, Severity
from hyperpod_perf.domain.report import SNS_SUBJECT_MAX_CHARS
from hyperpod_perf.report.chatbot import DESCRIPTION_MAX_CHARS, NEXT_STEPS_MAX_CHARS, render_chatbot
from hyperpod_perf.report.email import LINE_WIDTH, _wrap, email_subject, render_email
from hyperpod_perf.report.markdown import md, render_markdown
from hyperpod_perf.report.verdict import IMPACT_CLASSES, group_findings, impact_class

LONG_COMMAND = (
    "aws fsx update-file-system --file-system-id fs-0123456789abcdef0 "
    "--lustre-configuration PerUnitStorageThroughput=500 --storage-capacity 9600 --region us-west-2"
)


def one_of_each_class() -> list:
    """A concern of every class, listed in the reverse of the impact order."""
    return [
        finding(None, "coverage.node_recovery", section=RunbookSection.COVERAGE),
        finding("n7", "collect.node", section=RunbookSection.COLLECTION),
        finding(None, "topology.az_spread", section=RunbookSection.NCCL, summary="job nodes span 2 AZs"),
        finding("n5", "host.cpu_governor", section=RunbookSection.RESOURCES),
        finding(
            None,
            "fs.throughput",
            section=RunbookSection.FILE_SYSTEM,
            summary="fs-0abc saturated",
            evidence={"file_system_id": "fs-0abc"},
        ),
        finding("n3", "efa.counters", section=RunbookSection.NCCL),
        hot_gpu("n1", 95),
    ]


def test_every_rendering_orders_concerns_by_the_one_impact_order() -> None:
    # Given one concern of each class, in reverse order
    r = report(one_of_each_class(), [node(f"n{k}") for k in range(8)])

    # When grouped (what the e-mail, Slack and the report list)
    groups = group_findings(r.findings)

    # Then the order is hardware, network, storage, host, topology, collection, coverage
    assert [impact_class(g.findings[0]) for g in groups] == list(IMPACT_CLASSES)
    assert [g.check for g in groups] == [
        "gpu.temperature",
        "efa.counters",
        "fs.throughput",
        "host.cpu_governor",
        "topology.az_spread",
        "collect.node",
        "coverage.node_recovery",
    ]
    # and the e-mail, Slack and the Markdown report list them in that order
    email = render_email(r)
    assert email.index("gpu.temperature") < email.index("efa.counters") < email.index("fs.throughput")
    assert email.index("host.cpu_governor") < email.index("topology.az_spread")
    description = render_chatbot(r)["content"]["description"]
    assert description.index("gpu.temperature") < description.index("efa.counters")
    markdown = render_markdown(r)
    concerns = markdown[markdown.index("## Concerns") :]
    assert concerns.index("gpu.temperature") < concerns.index("fs.throughput")
    assert concerns.index("fs.throughput") < concerns.index("collect.node")


@pytest.mark.parametrize("nodes", [8, 64, 1000])
def test_subject_counts_affected_nodes_and_leads_with_the_worst_class(nodes: int) -> None:
    # Given half the nodes with host concerns and one with a GPU fault
    half = nodes // 2
    findings = [finding(f"n{k}", "host.cpu_governor", section=RunbookSection.RESOURCES) for k in range(half)]
    findings.append(hot_gpu(f"n{nodes - 1}", 95))
    findings.append(finding(None, "topology.az_spread", section=RunbookSection.NCCL, summary="2 AZs"))
    r = report(findings, [node(f"n{k}") for k in range(nodes)])

    subject = email_subject(r)

    # Then it fits SNS, counts the affected nodes whole (topology blames placement, not nodes)
    # and names the GPU fault first
    assert len(subject) <= SNS_SUBJECT_MAX_CHARS
    assert subject.startswith(
        f"[hyperpod-perf] c1: FIX SOON {half + 1}/{nodes} nodes - 1 node has GPU faults"
    )
    assert subject.isascii()
    assert "…" not in subject


def test_subject_with_the_longest_cluster_name_still_fits_and_keeps_the_count() -> None:
    # Given a 63-character cluster name (HyperPod's maximum) and a concern on 1000 of 1000 nodes
    r = report([hot_gpu(f"n{k}", 95) for k in range(1000)], [node(f"n{k}") for k in range(1000)])
    r = r.model_copy(update={"cluster": r.cluster.model_copy(update={"name": "c" * 63})})

    subject = email_subject(r)

    assert len(subject) <= SNS_SUBJECT_MAX_CHARS
    assert "FIX SOON 1000/1000 nodes - " in subject
    assert subject.endswith("1000 nodes have GPU faults")


def test_subject_without_concern_says_ok_or_info() -> None:
    r = report([finding("n0", "gpu.temperature", Severity.OK)], [node("n0")])
    assert email_subject(r) == "[hyperpod-perf] c1: OK - No concerns on 1 node"


def test_email_wraps_prose_and_never_cuts_a_next_step_command() -> None:
    # Given a concern whose next step holds a 150-character command
    step = f"Scale the file system: `{LONG_COMMAND}` (online)."
    r = report(
        [finding("n0", "host.cpu_governor", section=RunbookSection.RESOURCES, next_step=step)], [node("n0")]
    )

    email = render_email(r)

    # Then the next step is there whole, on one line; no line is cut with an ellipsis
    assert f"- (#1) {step}" in email.splitlines()
    assert "…" not in email


def test_wrap_breaks_at_spaces_outside_code_spans_only() -> None:
    # Given a long line with a command in backticks
    text = "1. ⚠ host.x: " + "word " * 15 + f"`{LONG_COMMAND}` and more words after it"

    lines = _wrap(text)

    # Then every line but the one holding the command is within the width, the command is whole
    # on one line, and joining the lines gives back the text
    assert any(f"`{LONG_COMMAND}`" in line for line in lines)
    assert all(len(line) <= LINE_WIDTH for line in lines if LONG_COMMAND not in line)
    assert " ".join(line.strip() for line in lines) == " ".join(text.split())


def test_chatbot_keeps_each_next_step_whole_within_its_budget() -> None:
    # Given five concerns whose next steps are long commands (600 characters each)
    steps = [f"Run `{LONG_COMMAND} --tag {k}` " + "x" * 440 for k in range(5)]
    findings = [
        finding(f"n{k}", f"host.check_{k}", section=RunbookSection.RESOURCES, next_step=steps[k])
        for k in range(5)
    ]
    message = render_chatbot(report(findings, [node(f"n{k}") for k in range(5)]))

    next_steps = message["content"]["nextSteps"]

    # Then every step shown is one of the originals, whole; the rest are counted; budgets hold
    shown = [s for s in next_steps if not s.startswith(("+", "Open the full report"))]
    assert shown and all(s in steps for s in shown)
    assert any(s.startswith("+") and "more next step(s) in the report" in s for s in next_steps)
    assert len("\n".join(next_steps)) <= NEXT_STEPS_MAX_CHARS
    assert len(message["content"]["description"]) <= DESCRIPTION_MAX_CHARS


def test_chatbot_description_drops_whole_concern_lines_beyond_its_budget() -> None:
    # Given concern titles of 900 characters each
    findings = [
        finding(f"n{k}", f"host.check_{k}", section=RunbookSection.RESOURCES, summary=f"{k} " + "y" * 900)
        for k in range(5)
    ]
    message = render_chatbot(report(findings, [node(f"n{k}") for k in range(5)]))
    description = message["content"]["description"]

    # Then it stays within budget, each concern line shown is whole, and the rest are counted
    assert len(description) <= DESCRIPTION_MAX_CHARS
    assert all(line.endswith("y" * 900) for line in description.splitlines() if line.startswith("• ⚠"))
    assert "more concern group(s) in the report" in description


def test_markdown_code_spans_show_commands_literally_and_prose_stays_escaped() -> None:
    # Given a next step with a placeholder inside a code span and HTML in the prose
    text = "Read `/sys/class/infiniband/<dev>/ports/1/state` & check <b>this</b> | x"

    # Then the span keeps <dev> literally (Markdown shows code as is) and the prose is escaped
    assert md(text) == (
        "Read `/sys/class/infiniband/<dev>/ports/1/state` &amp; check &lt;b&gt;this&lt;/b&gt; \\| x"
    )
    # and a pipe inside a span cannot end a table cell, an unmatched backtick is prose
    assert md("`a | b`") == "`a \\| b`"
    assert md("odd ` <x>") == "odd \\` &lt;x&gt;"


def test_markdown_calls_nodes_outliers_only_when_they_are_beyond_a_threshold() -> None:
    from report_builders import gpus

    # Given 40 healthy nodes (60-69 °C, full clock) and the same fleet with two nodes at 91 °C
    healthy = [node(f"n{k:02d}", gpus=gpus(60 + k % 10, 1980.0)) for k in range(40)]
    hot = [*healthy[:38], *(node(f"n{k}", gpus=gpus(91, 1980.0)) for k in (38, 39))]

    calm = render_markdown(report([], healthy))
    warm = render_markdown(report([hot_gpu("n38", 91), hot_gpu("n39", 91)], hot))

    # Then a healthy fleet shows "for reference" nodes, never "24 outliers"; a hot one names how
    # many are beyond a threshold
    assert "The 24 outliers:" not in calm
    assert "No node beyond a threshold; the 24 hottest or slowest, for reference:" in calm
    assert "2 node(s) beyond a threshold, then the next hottest or slowest:" in warm


def test_subject_names_the_class_when_the_worst_clause_itself_does_not_fit() -> None:
    # Given one cluster-level concern whose summary is longer than a subject (the AZ spread)
    summary = (
        "job nodes span 2 Availability Zones (us-west-2a (usw2-az1): 4, us-west-2b (usw2-az2): 4): "
        "cross-AZ traffic slows NCCL"
    )
    r = report(
        [finding(None, "topology.az_spread", section=RunbookSection.NCCL, summary=summary)],
        [node(f"n{k}") for k in range(8)],
    )

    # Then the subject is not cut: it counts 0 affected nodes and names the class instead
    assert (
        email_subject(r) == "[hyperpod-perf] c1: FIX SOON - topology concern"
    )  # no node is in the tier: no count
