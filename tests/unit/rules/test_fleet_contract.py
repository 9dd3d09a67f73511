"""Fleet findings field by field (reviewed): instance types per group, version drift per instance type,
outliers — what each says, its threshold and its hand-off."""

from __future__ import annotations

from test_cluster_rules import _fleet_signals, _node

from hyperpod_perf.rules import fleet
from hyperpod_perf.rules.fleet_signals import NodeSignals


def dumped(findings):
    return [f.model_dump(mode="json") for f in findings]


def test_instance_types_uniform_and_mixed_groups_and_undescribed_nodes():
    # Given a worker group of 3 p5 + 1 p4d (+1 node not described), and a controller group of one m5
    nodes = [
        *(_node(i) for i in range(3)),
        _node(3, instance_type="ml.p4d.24xlarge"),
        _node(4, instance_type=None),
        _node(5, group="ctrl", instance_type="ml.m5.xlarge"),
    ]
    assert dumped(fleet.instance_types(nodes)) == [
        {
            "node": None,
            "check": "fleet.instance_types",
            "severity": "OK",
            "section": "A",
            "summary": "1 instance group(s) each run a single instance type",
            "evidence": {"group_types": {"ctrl": "m5.xlarge"}},
            "threshold": "> 1 instance type in one instance group",
            "next_step": None,
            "handoff": None,
        },
        {
            "node": None,
            "check": "fleet.instance_types",
            "severity": "CONCERN",
            "section": "A",
            "summary": "instance group workers mixes 2 instance types (p4d.24xlarge: 1, p5.48xlarge: 3): the "
            "slowest type paces the job",
            "evidence": {
                "group": "workers",
                "nodes_per_type": {"p4d.24xlarge": 1, "p5.48xlarge": 3},
                "nodes_not_majority": {"p4d.24xlarge": ["i-0abc0000000000003"]},
            },
            "threshold": "> 1 instance type in one instance group",
            "next_step": "Run the job on nodes of one instance type; replace or exclude the odd nodes.",
            "handoff": None,
        },
    ]


def test_version_drift_single_node_type_and_drift_with_identical_keys_left_out():
    signals = [
        NodeSignals(
            node="n0", instance_type="ml.p5.48xlarge", versions={"nccl": "2.21.5", "driver": "535.1"}
        ),
        NodeSignals(node="n1", instance_type="p5.48xlarge", versions={"nccl": "2.18.5", "driver": "535.1"}),
        NodeSignals(
            node="n2", instance_type="ml.p5.48xlarge", versions={"nccl": "2.21.5", "driver": "535.1"}
        ),
        NodeSignals(node="g0", instance_type="ml.g5.2xlarge", versions={"driver": "535.1"}),
        NodeSignals(node="x", instance_type="ml.p4d.24xlarge"),  # no versions collected: not counted
    ]
    assert dumped(fleet.version_drift(signals)) == [
        {
            "node": None,
            "check": "fleet.version_drift",
            "severity": "INFO",
            "section": "A",
            "summary": "only 1 g5.2xlarge node with versions collected: drift needs two",
            "evidence": {"instance_type": "g5.2xlarge", "nodes": ["g0"]},
            "threshold": None,
            "next_step": None,
            "handoff": None,
        },
        {
            "node": None,
            "check": "fleet.version_drift",
            "severity": "CONCERN",
            "section": "A",
            "summary": "versions differ across 3 p5.48xlarge nodes: nccl: 2.21.5 (2), 2.18.5 (1)",
            "evidence": {
                "instance_type": "p5.48xlarge",
                "nodes_compared": 3,
                "drift": {
                    "nccl": {
                        "2.21.5": {"count": 2, "nodes": ["n0", "n2"]},
                        "2.18.5": {"count": 1, "nodes": ["n1"]},
                    }
                },
            },
            "threshold": "any version differing between nodes",
            "next_step": "Bring the minority nodes to the fleet's versions (same AMI / lifecycle scripts).",
            "handoff": "hyperpod-version-checker",
        },
    ]


def test_identical_versions_list_the_keys_in_the_fleet_order():
    signals = [
        NodeSignals(
            node=f"n{i}",
            instance_type="p5.48xlarge",
            versions={"zz_other": "1", "nccl": "2.21.5", "driver": "5"},
        )
        for i in range(2)
    ]
    (finding,) = fleet.version_drift(signals)
    assert finding.summary == "2 p5.48xlarge node(s) run identical versions of driver, nccl, zz_other"
    assert finding.evidence == {
        "instance_type": "p5.48xlarge",
        "versions": {"driver": "5", "nccl": "2.21.5", "zz_other": "1"},
    }
    assert finding.threshold == "any version differing between nodes"


def test_outliers_too_few_nodes_is_info_and_an_outlier_says_by_how_much():
    assert dumped(fleet.outliers(_fleet_signals(2))) == [
        {
            "node": None,
            "check": "fleet.outlier",
            "severity": "INFO",
            "section": "A",
            "summary": "2 p5.48xlarge node(s) with signals: fleet comparison needs at least 3",
            "evidence": {"instance_type": "p5.48xlarge", "nodes": ["node-0000", "node-0001"]},
            "threshold": None,
            "next_step": None,
            "handoff": None,
        }
    ]
    (outlier,) = dumped(fleet.outliers(_fleet_signals(9, outlier=4)))
    assert outlier == {
        "node": "node-0004",
        "check": "fleet.outlier",
        "severity": "CONCERN",
        "section": "A",
        "summary": "lowest SM clock among the node's loaded GPUs is 1410 MHz, fleet median 1974 MHz "
        "(29% lower; 9 p5.48xlarge nodes)",
        "evidence": {
            "signal": "gpu.sm_clock_under_load_mhz",
            "value": 1410.0,
            "fleet_median": 1974.0,
            "fleet_mad": 6.0,
            "robust_z": 63.4,
            "relative_deviation": 0.2857,
            "nodes_compared": 9,
            "instance_type": "p5.48xlarge",
        },
        "threshold": "robust z (|x - median| / (1.4826 x MAD)) >= 3.5 and >= 5% from the median, in the bad "
        "direction",
        "next_step": "Check the node's clock-event reasons and power/thermal state (nvidia-smi -q -d "
        "PERFORMANCE); a slow GPU paces every collective, so drain the node from the job until resolved.",
        "handoff": "hyperpod-node-debugger § G",
    }
