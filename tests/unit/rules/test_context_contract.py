"""What every node rule sees (reviewed): section states and reasons per exit code, the parse-once cache,
the collect.node finding a garbled section becomes (field by field), the INFO a missing section gives,
and the instance type / node name read from meta."""

from __future__ import annotations

import pytest

from hyperpod_perf.collect.snapshot import RawSection, RawSnapshot, parse_container, render_container
from hyperpod_perf.domain.findings import RunbookSection, Severity
from hyperpod_perf.rules.context import NodeContext, Section, SectionState
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

META = "hostname=ip-10-1-2-3\ninstance_id=i-0a1b2c3d4e5f60001\ninstance_type=ml.p5.48xlarge\n"
RERUN = "Re-run the collection on this node; the raw output is kept next to the report."


def ctx_of(*sections: tuple[str, str, int], meta: str = META, **kw) -> NodeContext:
    return NodeContext(parse_container(render_container([("meta", meta, 0), *sections]), "node.txt"), **kw)


def lines(text: str) -> list[str]:
    if text.startswith("boom"):
        raise ValueError("boom " + "x" * 400)
    return text.splitlines()


def test_node_instance_type_and_thresholds_defaults():
    ctx = ctx_of()
    assert (ctx.node, ctx.instance_type, ctx.thresholds) == (
        "i-0a1b2c3d4e5f60001",
        "p5.48xlarge",
        DEFAULT_THRESHOLDS,
    )
    assert ctx.collection_findings == []
    named = ctx_of(node="n7", thresholds=Thresholds(gpu_temperature_c=80))
    assert (named.node, named.thresholds.gpu_temperature_c) == ("n7", 80)


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ("instance_type=  ml.p4d.24xlarge  \n", "p4d.24xlarge"),
        ("instance_type=p4d.24xlarge\n", "p4d.24xlarge"),
        ("instance_type=\n", None),
        ("instance_type=ml.\n", None),
        ("hostname=h\n", None),
    ],
)
def test_instance_type_normalised(meta, expected):
    assert ctx_of(meta=meta).instance_type == expected


def test_section_states_and_reasons_per_exit_code():
    ctx = ctx_of(("a", "x\n", 0), ("b", "x\n", 127), ("c", "x\n", 124), ("d", "x\n", 2), ("e", "x\ny\n", 1))
    assert ctx.section("a", lines) == Section("a", SectionState.OK, value=["x"], rc=0)
    assert ctx.section("b", lines) == Section(
        "b", SectionState.ABSENT, rc=127, reason="tool not installed (rc=127)"
    )
    assert ctx.section("c", lines) == Section(
        "c", SectionState.TIMEOUT, rc=124, reason="command timed out (rc=124)"
    )
    # a non-zero exit that the rule does not accept: FAILED, but the parsed value is kept
    assert ctx.section("d", lines) == Section("d", SectionState.FAILED, value=["x"], rc=2, reason="rc=2")
    assert ctx.section("e", lines, accept_rc=(0, 1)) == Section("e", SectionState.OK, value=["x", "y"], rc=1)
    assert ctx.section("missing", lines) == Section(
        "missing", SectionState.ABSENT, reason="section not in snapshot"
    )
    assert ctx.collection_findings == []


def test_a_cut_off_section_is_failed_and_not_parsed():
    # Given a section whose end marker never arrived (rc unknown), named by the file's instance id
    snapshot = RawSnapshot(
        source="i-0a1b2c3d4e5f60002.txt", sections={"cut": RawSection("cut", "boom\n", None)}
    )
    ctx = NodeContext(snapshot)
    assert ctx.node == "i-0a1b2c3d4e5f60002"
    assert ctx.section("cut", lines) == Section(
        "cut", SectionState.FAILED, reason="section cut off in transit"
    )
    assert ctx.collection_findings == []  # not parsed: the container's own cut-off finding names it


def test_a_section_is_parsed_once_and_the_same_outcome_returned():
    calls = []

    def counting(text: str) -> str:
        calls.append(text)
        return text.strip()

    ctx = ctx_of(("a", "v\n", 0))
    first = ctx.section("a", counting)
    assert ctx.section("a", counting) is first
    assert calls == ["v\n"]


def test_garbled_section_is_one_collect_node_finding_with_the_reason_cut_at_300():
    ctx = ctx_of(("a", "boom\n", 0))
    section = ctx.section("a", lines)
    reason = f"ValueError: boom {'x' * 400}"[:300]
    assert section == Section("a", SectionState.FAILED, rc=0, reason=reason)
    assert ctx.section("a", lines) is section  # the failure is cached: one finding, not one per rule
    assert [f.model_dump(mode="json") for f in ctx.collection_findings] == [
        {
            "node": "i-0a1b2c3d4e5f60001",
            "check": "collect.node",
            "severity": "CONCERN",
            "section": "X",
            "summary": f"section a: output could not be parsed ({reason})",
            "evidence": {"section": "a", "reason": f"output could not be parsed ({reason})"},
            "threshold": None,
            "next_step": RERUN,
            "handoff": "hyperpod-ssm",
        }
    ]


def test_a_container_problem_is_reported_under_the_section_it_names():
    # Given a container whose `xid` section was cut off (no end marker)
    text = render_container([("meta", META, 0)]) + "=== hpd:begin xid ===\nNVRM: Xid\n"
    ctx = NodeContext(parse_container(text, "node.txt"))
    problem = "section 'xid' was cut off (no end marker): output truncated"
    ctx.collection_problem("container", problem)
    ctx.collection_problem("container", "2 line(s) outside any section were ignored")
    assert [(f.summary, f.evidence) for f in ctx.collection_findings] == [
        (f"section xid: {problem}", {"section": "xid", "reason": problem}),
        (
            "section container: 2 line(s) outside any section were ignored",
            {"section": "container", "reason": "2 line(s) outside any section were ignored"},
        ),
    ]


def test_finding_factory_and_not_present():
    ctx = ctx_of(("b", "", 127))
    made = ctx.finding("efa.devices", Severity.OK, RunbookSection.NCCL, "fine")
    assert made.model_dump(mode="json") == {
        "node": "i-0a1b2c3d4e5f60001",
        "check": "efa.devices",
        "severity": "OK",
        "section": "A",
        "summary": "fine",
        "evidence": {},
        "threshold": None,
        "next_step": None,
        "handoff": None,
    }
    full = ctx.finding(
        "efa.devices",
        Severity.CONCERN,
        RunbookSection.NCCL,
        "bad",
        evidence={"k": 1},
        threshold="t",
        next_step="n",
        handoff="h",
    )
    assert (full.evidence, full.threshold, full.next_step, full.handoff) == ({"k": 1}, "t", "n", "h")
    missing = ctx.not_present("efa.devices", RunbookSection.NCCL, "EFA devices", ctx.section("b", lines))
    assert missing.model_dump(mode="json") == {
        "node": "i-0a1b2c3d4e5f60001",
        "check": "efa.devices",
        "severity": "INFO",
        "section": "A",
        "summary": "EFA devices: not present (tool not installed (rc=127))",
        "evidence": {"section": "b", "state": "absent", "rc": 127},
        "threshold": None,
        "next_step": None,
        "handoff": None,
    }


def test_raw_returns_the_section_or_none():
    ctx = ctx_of(("a", "v\n", 3))
    assert ctx.raw("a") == RawSection("a", "v\n", 3)
    assert ctx.raw("b") is None
