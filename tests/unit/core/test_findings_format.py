"""The terminal renderings of findings (`evaluate`, `snapshot --local`, `diagnose` text/md/json).

Inline expected outputs: these are what an operator reads (and what scripts parse), so a change
to them must be a deliberate change to this file too.
"""

from __future__ import annotations

import json

import pytest

from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.report.findings_format import (
    counts,
    group_by_node,
    in_urgency_order,
    render,
    render_json,
    render_markdown,
    render_text,
)
from hyperpod_perf.rules.urgency import with_tiers

NODE_A = "i-0a1b2c3d4e5f60003"
NODE_B = "ip-10-1-0-7"


@pytest.fixture
def findings() -> list[Finding]:
    """Two nodes and one cluster-level finding, interleaved, covering every severity."""
    return [
        Finding(
            node=NODE_A,
            check="gpu.temperature",
            severity=Severity.OK,
            section=RunbookSection.GPU,
            summary="8 GPUs, max 62 C",
            evidence={"max_temperature_c": 62.0},
            threshold="temperature.gpu >= 88 C -> CONCERN",
            handoff=Handoff.NODE_G,
        ),
        Finding(
            node=NODE_A,
            check="gpu.pcie_width",
            severity=Severity.CONCERN,
            section=RunbookSection.GPU,
            summary="GPU 3 PCIe link at x8 of x16",
            evidence={"gpu": 3, "width": 8, "max_width": 16},
            threshold="pcie.link.width.current < max -> CONCERN",
            next_step="Drain the node and hand off.",
            handoff=Handoff.NODE_G,
        ),
        Finding(
            node=None,
            check="topology.az_spread",
            severity=Severity.CONCERN,
            section=RunbookSection.NCCL,
            summary="job nodes span 2 AZs",
            next_step="Run tightly coupled jobs in one AZ.",
            handoff=Handoff.CLUSTER_B,
        ),
        Finding(
            node=NODE_B,
            check="efa.devices",
            severity=Severity.INFO,
            section=RunbookSection.NCCL,
            summary="no EFA device (instance type unknown)",
        ),
        Finding(
            node=NODE_A,
            check="host.cpu_governor",
            severity=Severity.CONCERN,
            section=RunbookSection.NCCL,
            summary="192 of 192 CPU(s) not on the performance governor",
            next_step="sudo cpupower frequency-set -g performance",
        ),
    ]


def test_text_groups_per_node_with_tags_handoffs_and_summary_lines(findings):
    # Given findings of two nodes and the cluster, interleaved
    # When they are rendered as text
    text = render_text(findings)

    # Then each node is one block in first-seen order, concerns carry the hand-off arrow and
    # their next step, OK/INFO lines carry neither, and every block and the run end in a summary
    assert text == (
        f"== {NODE_A} ==\n"
        "[OK] gpu.temperature: 8 GPUs, max 62 C\n"
        "[CONCERN] (fix soon) gpu.pcie_width: GPU 3 PCIe link at x8 of x16 → hyperpod-node-debugger § G\n"
        "    why fix soon: a narrow PCIe link cuts host-GPU and GPUDirect bandwidth: a steady slowdown\n"
        "    next: Drain the node and hand off.\n"
        "[CONCERN] (fix soon) host.cpu_governor: 192 of 192 CPU(s) not on the performance governor\n"
        "    why fix soon: CPUs not on the performance governor: a steady tax on data loading\n"
        "    next: sudo cpupower frequency-set -g performance\n"
        f"-- {NODE_A}: 2 concern(s), 0 info, 1 ok\n"
        "\n"
        "== cluster ==\n"
        "[CONCERN] (fix soon) topology.az_spread: job nodes span 2 AZs → hyperpod-cluster-debugger § B\n"
        "    why fix soon: nodes in two Availability Zones: cross-AZ collectives are slower\n"
        "    next: Run tightly coupled jobs in one AZ.\n"
        "-- cluster: 1 concern(s), 0 info, 0 ok\n"
        "\n"
        f"== {NODE_B} ==\n"
        "[INFO] efa.devices: no EFA device (instance type unknown)\n"
        f"-- {NODE_B}: 0 concern(s), 1 info, 0 ok\n"
        "\n"
        "Summary: 3 concern(s) on 2 of 3 node(s)/scope(s); 1 info; 1 ok; 0 act now, 3 fix soon, 1 watch\n"
    )


def test_text_of_no_findings_is_just_the_summary():
    assert render_text([]) == (
        "Summary: 0 concern(s) on 0 of 0 node(s)/scope(s); 0 info; 0 ok; 0 act now, 0 fix soon, 0 watch\n"
    )


def test_json_is_an_object_of_findings_with_exactly_the_design_fields(findings):
    # When rendered as JSON
    payload = json.loads(render_json(findings))

    # Then the top level is {"findings": [...]} and each finding has the design's nine fields
    assert list(payload) == ["findings"]
    assert [list(f) for f in payload["findings"]] == [
        ["node", "check", "severity", "section", "summary", "evidence", "threshold", "next_step", "handoff"]
    ] * len(findings)
    assert payload["findings"][1] == {
        "node": NODE_A,
        "check": "gpu.pcie_width",
        "severity": "CONCERN",
        "section": "G",
        "summary": "GPU 3 PCIe link at x8 of x16",
        "evidence": {"gpu": 3, "width": 8, "max_width": 16},
        "threshold": "pcie.link.width.current < max -> CONCERN",
        "next_step": "Drain the node and hand off.",
        "handoff": "hyperpod-node-debugger § G",
    }
    # a cluster-level finding keeps node null (it is not invented as "cluster")
    assert payload["findings"][2]["node"] is None


def test_json_keeps_non_ascii_readable_and_accepts_extra_top_level_keys(findings):
    text = render_json(findings[:1], cluster="c1")
    assert "§" in text  # ensure_ascii=False: the hand-off reads as printed
    assert text.endswith("}\n")
    assert json.loads(text) == {
        "findings": [
            {
                "node": NODE_A,
                "check": "gpu.temperature",
                "severity": "OK",
                "section": "G",
                "summary": "8 GPUs, max 62 C",
                "evidence": {"max_temperature_c": 62.0},
                "threshold": "temperature.gpu >= 88 C -> CONCERN",
                "next_step": None,
                "handoff": "hyperpod-node-debugger § G",
            }
        ],
        "cluster": "c1",
    }


def test_markdown_is_a_table_one_row_per_finding(findings):
    # When rendered as Markdown
    md = render_markdown(findings[:3])

    # Then it is a header, a separator and one row per finding; empty cells stay empty; `<`, `>`
    # are entities (CommonMark-safe: a renderer shows them, it does not read them as HTML)
    assert md == (
        "| node | check | severity | section | summary | threshold | next step | hand-off |\n"
        "|---|---|---|---|---|---|---|---|\n"
        f"| {NODE_A} | gpu.temperature | OK | G | 8 GPUs, max 62 C | temperature.gpu &gt;= 88 C -&gt; CONCERN"
        " |  | hyperpod-node-debugger § G |\n"
        f"| {NODE_A} | gpu.pcie_width | CONCERN | G | GPU 3 PCIe link at x8 of x16"
        " | pcie.link.width.current &lt; max -&gt; CONCERN | Drain the node and hand off."
        " | hyperpod-node-debugger § G |\n"
        "| cluster | topology.az_spread | CONCERN | A | job nodes span 2 AZs |  "
        "| Run tightly coupled jobs in one AZ. | hyperpod-cluster-debugger § B |\n"
    )


def test_markdown_escapes_pipes_and_flattens_newlines_so_the_table_keeps_its_columns():
    # Given a finding whose text carries pipes and a newline (e.g. a shell pipeline in next_step)
    finding = Finding(
        node="n|1",
        check="host.cpu_governor",
        severity=Severity.CONCERN,
        section=RunbookSection.NCCL,
        summary="a | b",
        threshold="x|y",
        next_step="echo performance | sudo tee /sys/x\nthen re-run",
    )

    # When rendered as Markdown
    row = render_markdown([finding]).splitlines()[2]

    # Then every pipe inside a cell is escaped and the row stays on one line with 8 cells
    assert row == (
        r"| n\|1 | host.cpu_governor | CONCERN | A | a \| b | x\|y "
        r"| echo performance \| sudo tee /sys/x then re-run |  |"
    )
    unescaped = row.replace("\\|", "")
    assert unescaped.count("|") == 9


def test_render_dispatches_on_format_and_defaults_to_text(findings):
    # (render lists in the one urgency order, each finding with its tier)
    ordered = in_urgency_order(with_tiers(findings))
    assert render(findings, "json") == render_json(ordered)
    assert render(findings, "md") == render_markdown(ordered)
    assert render(findings, "text") == render_text(ordered)


def test_render_puts_the_act_now_node_first_and_its_failing_check_first(findings):
    # Given a third node whose GPU fell off the bus, listed last, after an OK line of its own
    xid = Finding(
        node="i-0fallen",
        check="gpu.xid",
        severity=Severity.CONCERN,
        section=RunbookSection.GPU,
        summary="Xid 79 on GPU 5",
        evidence={"code": 79, "action": "restart_node"},
    )
    ok = Finding(
        node="i-0fallen",
        check="gpu.temperature",
        severity=Severity.OK,
        section=RunbookSection.GPU,
        summary="8 GPUs, max 60 C",
    )
    # When rendered in JSON
    rows = json.loads(render([*findings, ok, xid], "json"))["findings"]
    # Then that node comes first, its Xid before its OK line, tiered act now with the reason
    assert [(r["node"], r["check"]) for r in rows[:2]] == [
        ("i-0fallen", "gpu.xid"),
        ("i-0fallen", "gpu.temperature"),
    ]
    assert rows[0]["tier"] == "act now" and "failing the job" in rows[0]["tier_reason"]
    assert "tier" not in rows[1]  # OK: no tier
    # and the powersave governor (fix soon) comes after it, the INFO (watch) node last
    assert [r["check"] for r in rows].index("host.cpu_governor") > 0
    assert rows[-1]["node"] == NODE_B


def test_grouping_and_counts(findings):
    groups = group_by_node(findings)
    assert list(groups) == [NODE_A, "cluster", NODE_B]
    assert [f.check for f in groups[NODE_A]] == ["gpu.temperature", "gpu.pcie_width", "host.cpu_governor"]
    assert counts(findings) == {Severity.OK: 1, Severity.INFO: 1, Severity.CONCERN: 3}


def test_text_writes_an_info_note_shared_by_several_nodes_once():
    # Given the same INFO note on five nodes, a different one on a sixth, and a concern
    note = "GPU temperature: not present (tool not installed (rc=127))"
    shared = [
        Finding(
            node=f"cpu-{k}",
            check="gpu.temperature",
            severity=Severity.INFO,
            section=RunbookSection.GPU,
            summary=note,
        )
        for k in range(5)
    ]
    alone = Finding(
        node="cpu-5",
        check="gpu.temperature",
        severity=Severity.INFO,
        section=RunbookSection.GPU,
        summary="other",
    )
    text = render_text([*shared, alone])
    lines = text.splitlines()

    # Then the shared note is one line listing the nodes; the lone note stays in its node's block;
    # each node's summary still counts its note
    assert lines.count(f"[INFO] gpu.temperature: {note} (5 nodes: cpu-0, cpu-1, cpu-2 +2 more)") == 1
    assert sum(note in line for line in lines) == 1
    assert "[INFO] gpu.temperature: other" in lines
    assert "-- cpu-0: 0 concern(s), 1 info, 0 ok (1 info shared with other nodes, below)" in lines
    assert "-- cpu-5: 0 concern(s), 1 info, 0 ok" in lines
    assert (
        lines[-1]
        == "Summary: 0 concern(s) on 0 of 6 node(s)/scope(s); 6 info; 0 ok; 0 act now, 0 fix soon, 6 watch"
    )
