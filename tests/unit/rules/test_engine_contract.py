"""The node engine (reviewed): container problems first, then every rule family in report order (GPU,
EFA, host, file system); a family that raises becomes one collect.node finding naming it while the
others still run; the thresholds given reach the rules."""

from __future__ import annotations

import pytest

from hyperpod_perf.collect.snapshot import parse_container
from hyperpod_perf.collect.snapshot import render_container as _render
from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.rules import efa, engine, filesystem, gpu, host
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.thresholds import Thresholds

NONCE = "5" * 32


def render_container(sections):
    """Collector-2 output (a nonce in every marker), as the pipeline receives it."""
    return _render(sections, NONCE)


META = "hostname=ip-10-1-2-3\ninstance_id=i-0a1b2c3d4e5f60001\ninstance_type=ml.p5.48xlarge\n"
QUERY = "index, name, temperature.gpu\n0, NVIDIA H100 80GB HBM3, 85\n"
RERUN = "Re-run the collection on this node; the raw output is kept next to the report."


def collect_node(section: str, reason: str) -> dict:
    return {
        "node": "i-0a1b2c3d4e5f60001",
        "check": "collect.node",
        "severity": "CONCERN",
        "section": "X",
        "summary": f"section {section}: {reason}",
        "evidence": {"section": section, "reason": reason},
        "threshold": None,
        "next_step": RERUN,
        "handoff": "hyperpod-ssm",
    }


def test_empty_output_is_one_collection_finding_and_nothing_else():
    assert [f.model_dump(mode="json") for f in engine.evaluate_text("", "i-0a1b2c3d4e5f60001.txt")] == [
        {**collect_node("container", "empty snapshot: the collector printed nothing")}
    ]


def test_container_problems_come_first_then_the_families_in_report_order():
    # Given a stray line before the sections, a GPU query and the EFA sections
    text = "stray\n" + render_container([("meta", META, 0), ("gpu-query", QUERY, 0), ("efa-ports", "", 0)])
    findings = engine.evaluate_text(text, "node.txt")
    assert findings[0].model_dump(mode="json") == collect_node(
        "container", "1 line(s) outside any section were ignored"
    )
    # and the rest is each family's findings in turn: GPU, EFA, host, file system
    ctx = NodeContext(parse_container(text, "node.txt"))
    in_order = [*gpu.evaluate(ctx), *efa.evaluate(ctx), *host.evaluate(ctx), *filesystem.evaluate(ctx)]
    assert findings[1:] == in_order
    assert {"gpu.temperature", "efa.devices", "efa.counters"} <= {f.check for f in findings}


@pytest.mark.parametrize(("limit", "severity"), [(85.0, Severity.CONCERN), (86.0, Severity.OK)])
def test_the_thresholds_given_reach_the_rules(limit, severity):
    text = render_container([("meta", META, 0), ("gpu-query", QUERY, 0)])
    findings = engine.evaluate_text(text, "node.txt", Thresholds(gpu_temperature_c=limit))
    (temperature,) = [f for f in findings if f.check == "gpu.temperature"]
    assert temperature.severity is severity


def test_a_family_that_raises_is_one_collection_finding_and_the_others_still_run(monkeypatch):
    def broken(ctx):
        raise RuntimeError("bad rule")

    families = dict(engine.NODE_RULE_FAMILIES)
    families["efa"] = broken
    monkeypatch.setattr(engine, "NODE_RULE_FAMILIES", tuple(families.items()))
    text = render_container([("meta", META, 0), ("gpu-query", QUERY, 0), ("efa-ports", "", 0)])
    findings = engine.evaluate_text(text, "node.txt")
    assert findings[0].model_dump(mode="json") == collect_node(
        "efa", "rule family failed (RuntimeError: bad rule)"
    )
    checks = {f.check for f in findings}
    assert "gpu.temperature" in checks and not any(c.startswith("efa.") for c in checks)
    assert any(c.startswith(("host.", "fs.")) for c in checks)


def test_the_families_and_their_order():
    assert [name for name, _ in engine.NODE_RULE_FAMILIES] == ["gpu", "efa", "host", "filesystem"]
