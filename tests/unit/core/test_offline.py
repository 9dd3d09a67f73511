"""The cluster-level view from snapshots alone: the fleet rules the pipeline runs, and the
cluster checks they cannot run named, never silently absent."""

from hyperpod_perf.rules.catalog import CATALOG
from hyperpod_perf.rules.fleet_signals import NodeSignals
from hyperpod_perf.service.offline import FLEET_CHECKS, NEEDS_AWS, snapshot_cluster_findings

VERSIONS = {"driver": "535.183.01", "nccl": "2.21.5"}


def _signals(node: str, **versions: str) -> NodeSignals:
    return NodeSignals(
        node=node,
        instance_type="ml.p5.48xlarge",
        group="workers",
        values={"gpu.sm_clock_under_load_mhz": 1980.0},
        versions={**VERSIONS, **versions},
    )


def test_every_check_said_to_need_aws_is_a_catalogued_cluster_check():
    named = [check.strip() for row in NEEDS_AWS for check in row.what.split(",")]
    assert set(named) <= CATALOG.keys()
    assert {"topology.az_spread", "topology.ultraserver", "fs.throughput", "health.hma"} <= set(named)
    assert set(FLEET_CHECKS) <= CATALOG.keys()


def test_one_snapshot_is_no_fleet_and_says_so():
    findings, not_checked = snapshot_cluster_findings([_signals("i-0000000000000001a")])
    assert findings == []
    assert not_checked[0].what == ", ".join(FLEET_CHECKS)
    assert "two or more snapshots (1 usable)" in not_checked[0].why
    assert not_checked[1:] == list(NEEDS_AWS)


def test_the_fleet_rules_find_the_node_on_another_nccl():
    # Given three nodes of one group, the last on another NCCL
    signals = [
        _signals("i-0000000000000001a"),
        _signals("i-0000000000000002a"),
        _signals("i-0000000000000003a", nccl="2.18.3"),
    ]
    # When the snapshots' cluster view is computed
    findings, not_checked = snapshot_cluster_findings(signals)
    # Then the drift is a CONCERN naming the odd node; the group's one type and the clocks are OK
    by_check = {f.check: f for f in findings}
    assert by_check["fleet.version_drift"].severity.value == "CONCERN"
    assert by_check["fleet.version_drift"].evidence["drift"]["nccl"]["2.18.3"]["nodes"] == [
        "i-0000000000000003a"
    ]
    assert (by_check["fleet.instance_types"].severity.value, by_check["fleet.outlier"].severity.value) == (
        "OK",
        "OK",
    )
    assert not_checked == list(NEEDS_AWS)
