"""Fleet findings at their limits (reviewed): 3 nodes (the minimum to compare) against 2, a deviation just
under 1 unit, a MAD scale under 1, an outlier from a zero median, the OK finding field by field, the
fleet order of version keys, and nodes without an instance type grouped as "unknown"."""

from __future__ import annotations

import pytest

from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.rules import fleet
from hyperpod_perf.rules.fleet_signals import EFA_ERRORS, SM_CLOCK, TEMPERATURE, NodeSignals
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS

THRESHOLD = "robust z (|x - median| / (1.4826 x MAD)) >= 3.5 and >= 5% from the median, in the bad direction"


def signals_of(
    name: str, values: list[float], instance_type: str | None = "ml.p5.48xlarge"
) -> list[NodeSignals]:
    return [
        NodeSignals(node=f"n{i}", instance_type=instance_type, values={name: v}) for i, v in enumerate(values)
    ]


def test_three_nodes_are_compared_and_two_are_not():
    # Given the minimum fleet of 3 (uniform clocks) and the same with only 2 nodes
    assert [f.model_dump(mode="json") for f in fleet.outliers(signals_of(SM_CLOCK.name, [1980.0] * 3))] == [
        {
            "node": None,
            "check": "fleet.outlier",
            "severity": "OK",
            "section": "A",
            "summary": "no outlier among 3 p5.48xlarge node(s) on gpu.sm_clock_under_load_mhz",
            "evidence": {
                "instance_type": "p5.48xlarge",
                "nodes_compared": {"gpu.sm_clock_under_load_mhz": 3},
            },
            "threshold": THRESHOLD,
            "next_step": None,
            "handoff": None,
        }
    ]
    (two,) = fleet.outliers(signals_of(SM_CLOCK.name, [1980.0] * 2))
    assert (two.severity.value, two.check) == ("INFO", "fleet.outlier")


def test_a_signal_too_sparse_to_compare_does_not_stop_the_next_one():
    # Given 4 nodes: only 2 report a clock, all 4 a temperature and the EFA total
    signals = [
        NodeSignals(
            node=f"n{i}",
            instance_type="p5.48xlarge",
            values={
                TEMPERATURE.name: 60.0,
                EFA_ERRORS.name: 0.0,
                **({SM_CLOCK.name: 1980.0} if i < 2 else {}),
            },
        )
        for i in range(4)
    ]
    (ok,) = fleet.outliers(signals)
    assert (
        ok.summary
        == "no outlier among 4 p5.48xlarge node(s) on gpu.temperature_max_c, efa.error_counters_total"
    )
    assert ok.evidence["nodes_compared"] == {TEMPERATURE.name: 4, EFA_ERRORS.name: 4}


def test_a_hot_node_is_higher_and_a_deviation_under_one_unit_still_counts():
    # Given 5 GPUs' hottest temperatures: 4 at 10.0 C and one at 10.6 C (6 % above; MAD 0)
    (hot,) = fleet.outliers(signals_of(TEMPERATURE.name, [10.0, 10.0, 10.6, 10.0, 10.0]), specs=[TEMPERATURE])
    assert hot.node == "n2"
    assert (
        hot.summary == "hottest GPU on the node is 10.6 C, fleet median 10 C (6% higher; 5 p5.48xlarge nodes)"
    )
    assert hot.evidence == {
        "signal": TEMPERATURE.name,
        "value": 10.6,
        "fleet_median": 10.0,
        "fleet_mad": 0.0,
        "robust_z": None,
        "relative_deviation": 0.06,
        "nodes_compared": 5,
        "instance_type": "p5.48xlarge",
    }
    assert (hot.threshold, hot.handoff) == (THRESHOLD, "hyperpod-node-debugger § G")


def test_a_mad_scale_below_one_still_gives_a_finite_z():
    # Given clocks with MAD 0.5 (scale 0.74) and one node at half the median
    values = [100.0, 100.5, 99.5, 100.0, 100.5, 99.5, 50.0]
    (slow,) = fleet.outliers(signals_of(SM_CLOCK.name, values), specs=[SM_CLOCK])
    assert (slow.node, slow.evidence["fleet_mad"]) == ("n6", 0.5)
    assert slow.evidence["robust_z"] == round(50.0 / (1.4826 * 0.5), 2)


def test_an_outlier_from_a_zero_median_says_from_zero():
    (efa,) = fleet.outliers(signals_of(EFA_ERRORS.name, [0.0, 0.0, 37.0, 0.0]), specs=[EFA_ERRORS])
    assert efa.summary == (
        "sum of the EFA error counters over all devices (since boot) is 37 events, fleet median 0 events "
        "(from zero higher; 4 p5.48xlarge nodes)"
    )
    assert (efa.evidence["robust_z"], efa.evidence["relative_deviation"]) == (None, None)


@pytest.mark.parametrize("instance_type", [None, ""])
def test_nodes_without_an_instance_type_are_compared_as_unknown(instance_type):
    findings = fleet.outliers(signals_of(SM_CLOCK.name, [1980.0] * 3, instance_type=instance_type))
    assert [f.evidence["instance_type"] for f in findings] == ["unknown"]
    versions = [NodeSignals(node="a", versions={"nccl": "1"}), NodeSignals(node="b", versions={"nccl": "1"})]
    assert [f.evidence["instance_type"] for f in fleet.version_drift(versions)] == ["unknown"]


def test_version_keys_in_the_fleet_order_not_alphabetical_and_the_first_node_shown():
    # Given 2 nodes with identical shared versions; the second also reports a key the first does not
    signals = [
        NodeSignals(
            node="a", instance_type="p5.48xlarge", versions={"nccl": "2.21.5", "cuda": "12.4", "driver": "5"}
        ),
        NodeSignals(
            node="b",
            instance_type="p5.48xlarge",
            versions={"nccl": "2.21.5", "cuda": "12.4", "driver": "5", "aaa": "x"},
        ),
    ]
    (ok,) = fleet.version_drift(signals)
    assert ok.model_dump(mode="json") == {
        "node": None,
        "check": "fleet.version_drift",
        "severity": "OK",
        "section": "A",
        "summary": "2 p5.48xlarge node(s) run identical versions of driver, cuda, nccl, aaa",
        "evidence": {
            "instance_type": "p5.48xlarge",
            "versions": {"cuda": "12.4", "driver": "5", "nccl": "2.21.5"},
        },
        "threshold": "any version differing between nodes",
        "next_step": None,
        "handoff": None,
    }


def test_a_single_node_type_does_not_stop_the_next_type_and_two_drifting_keys_are_listed():
    signals = [
        NodeSignals(node="a", instance_type="g5.48xlarge", versions={"nccl": "1"}),
        NodeSignals(node="p0", instance_type="p5.48xlarge", versions={"nccl": "2.21.5", "cuda": "12.4"}),
        NodeSignals(node="p1", instance_type="p5.48xlarge", versions={"nccl": "2.18.5", "cuda": "12.2"}),
    ]
    info, drift = fleet.version_drift(signals)
    assert info.severity.value == "INFO"
    assert drift.summary == (
        "versions differ across 2 p5.48xlarge nodes: cuda: 12.4 (1), 12.2 (1); nccl: 2.21.5 (1), 2.18.5 (1)"
    )


def test_evaluate_is_instance_types_then_version_drift_then_outliers():
    nodes = [
        ClusterNode(instance_id=f"n{i}", group="w", instance_type="ml.p5.48xlarge", status="Running")
        for i in range(3)
    ]
    signals = [
        NodeSignals(
            node=f"n{i}",
            instance_type="ml.p5.48xlarge",
            values={SM_CLOCK.name: 1980.0},
            versions={"nccl": "1"},
        )
        for i in range(3)
    ]
    findings = fleet.evaluate(
        nodes, signals, DEFAULT_THRESHOLDS.model_copy(update={"fleet_outlier_robust_z": 6.0})
    )
    assert [(f.check, f.severity.value) for f in findings] == [
        ("fleet.instance_types", "OK"),
        ("fleet.version_drift", "OK"),
        ("fleet.outlier", "OK"),
    ]
    assert findings[2].threshold == THRESHOLD.replace(">= 3.5", ">= 6")


def test_a_type_without_drift_does_not_stop_the_next_type():
    signals = [
        NodeSignals(node="g0", instance_type="g5.48xlarge", versions={"nccl": "1"}),
        NodeSignals(node="g1", instance_type="g5.48xlarge", versions={"nccl": "1"}),
        NodeSignals(node="p0", instance_type="p5.48xlarge", versions={"nccl": "2.21.5"}),
        NodeSignals(node="p1", instance_type="p5.48xlarge", versions={"nccl": "2.18.5"}),
    ]
    assert [(f.severity.value, f.evidence["instance_type"]) for f in fleet.version_drift(signals)] == [
        ("OK", "g5.48xlarge"),
        ("CONCERN", "p5.48xlarge"),
    ]
