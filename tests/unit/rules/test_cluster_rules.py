"""Cluster-level rules: topology, fleet comparison, FSx branches, health logs and coverage advice."""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hyperpod_perf.collect.snapshot import parse_container
from hyperpod_perf.domain.cluster import (
    MB,
    ClusterInfo,
    ClusterNode,
    FileSystemInfo,
    InstanceGroup,
    LogKind,
    LogRecord,
    MetricSeries,
)
from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.rules import coverage, fleet, fsx, health, topology
from hyperpod_perf.rules.fleet_signals import EFA_ERRORS, SM_CLOCK, TEMPERATURE, NodeSignals, extract
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS
from hyperpod_perf_dev.sim.node import NodeFaults, simulate_cluster

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "deep-health"


def _node(i: int, *, az: str | None = "us-west-2a", az_id: str | None = "usw2-az1", **kw) -> ClusterNode:
    values = {"instance_id": f"i-0abc{i:013x}", "group": "workers", "instance_type": "ml.p5.48xlarge"}
    values.update(kw)
    return ClusterNode(az=az, az_id=az_id, status="Running", **values)


def _fleet_signals(n: int, *, outlier: int | None = None, clock: float = 1980.0) -> list[NodeSignals]:
    """n comparable p5 nodes with small, realistic jitter; optionally one node clocked down."""
    signals = []
    for i in range(n):
        sm = clock - (i % 7) * 3.0  # 1980..1962 MHz spread, as boost clocks wander
        if i == outlier:
            sm = 1410.0
        signals.append(
            NodeSignals(
                node=f"node-{i:04d}",
                instance_type="ml.p5.48xlarge",
                values={SM_CLOCK.name: sm, TEMPERATURE.name: 60.0 + (i % 5), EFA_ERRORS.name: 0.0},
            )
        )
    return signals


def _concerns(findings):
    return [f for f in findings if f.severity is Severity.CONCERN]


# --- topology ----------------------------------------------------------------------------------


def test_az_spread_single_az_is_ok_and_two_azs_name_the_minority_nodes():
    # Given 8 job nodes in one AZ, then the same fleet with two nodes in a second AZ
    same = [_node(i) for i in range(8)]
    split = [_node(i) for i in range(6)] + [_node(i, az="us-west-2b", az_id="usw2-az2") for i in (6, 7)]

    # When the AZ spread rule runs
    ok = topology.az_spread(same)
    concern = topology.az_spread(split)

    # Then one AZ is OK and two AZs is a CONCERN that counts nodes per AZ and names the odd ones
    assert [f.severity for f in ok] == [Severity.OK]
    assert ok[0].evidence["nodes_per_az"] == {"us-west-2a (usw2-az1)": 8}
    (finding,) = concern
    assert finding.severity is Severity.CONCERN
    assert finding.evidence["nodes_per_az"] == {"us-west-2a (usw2-az1)": 6, "us-west-2b (usw2-az2)": 2}
    assert finding.evidence["nodes_outside_majority_az"] == {
        "us-west-2b (usw2-az2)": [split[6].instance_id, split[7].instance_id]
    }
    assert finding.handoff == "hyperpod-cluster-debugger § B"


def test_az_spread_names_the_majority_az_only_when_there_is_one():
    # Given 6/2 and 4/4 splits over two AZs
    six_two = [_node(i) for i in range(6)] + [_node(i, az="us-west-2b", az_id="usw2-az2") for i in (6, 7)]
    second_az = {"az": "us-west-2b", "az_id": "usw2-az2"}
    four_four = [_node(i) for i in range(4)] + [_node(i, **second_az) for i in range(4, 8)]

    # When the AZ spread rule runs
    (uneven,) = topology.az_spread(six_two)
    (even,) = topology.az_spread(four_four)

    # Then 6/2 says where most are, and 4/4 says no AZ holds most (never "most are in" one of them)
    assert "most are in us-west-2a (usw2-az1)" in uneven.next_step
    assert "most are in" not in even.next_step
    even_split = "no AZ holds most of them: us-west-2a (usw2-az1) and us-west-2b (usw2-az2) hold 4 each"
    assert even_split in even.next_step


def test_az_spread_ignores_a_controller_node_in_another_az_and_reports_unknown_placement():
    # Given GPU workers in one AZ plus a CPU controller elsewhere, and a fleet with no placement at all
    nodes = [_node(i) for i in range(4)] + [
        _node(9, az="us-west-2c", az_id="usw2-az3", instance_type="ml.m5.2xlarge", group="controller")
    ]
    unplaced = [_node(i, az=None, az_id=None) for i in range(3)]

    # When evaluated
    findings = topology.az_spread(nodes)
    unknown = topology.az_spread(unplaced)

    # Then only the accelerated nodes count, and unknown placement is INFO, never a CONCERN
    assert [f.severity for f in findings] == [Severity.OK]
    assert findings[0].evidence["nodes_considered"] == 4
    assert [f.severity for f in unknown] == [Severity.INFO]
    assert unknown[0].evidence == {"nodes_without_placement": 3}


def test_ultraserver_rule_only_applies_to_nvl72_types_and_flags_a_split():
    # Given NVL72 nodes on two UltraServers, NVL72 nodes on one, and a p5 fleet
    split = [_node(i, instance_type="ml.p6e-gb200.36xlarge", ultraserver_id="us-a") for i in range(3)] + [
        _node(3, instance_type="ml.p6e-gb200.36xlarge", ultraserver_id="us-b")
    ]
    together = [_node(i, instance_type="ml.p6e-gb300.36xlarge", ultraserver_id="us-z") for i in range(4)]

    # When evaluated
    concern = topology.ultraserver(split)
    ok = topology.ultraserver(together)

    # Then the split is a CONCERN with the count per UltraServer, one server is OK, p5 yields nothing
    assert [f.severity for f in concern] == [Severity.CONCERN]
    assert concern[0].evidence["nodes_per_ultraserver"] == {"us-a": 3, "us-b": 1}
    assert concern[0].evidence["instance_type"] == "p6e-gb200.36xlarge"
    assert [f.severity for f in ok] == [Severity.OK]
    assert topology.ultraserver([_node(i) for i in range(4)]) == []


# --- fleet -------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [8, 800])
def test_uniform_fleet_yields_no_outlier(size):
    # Given a uniform fleet (jitter of a few MHz and a few degrees) of 8 or 800 nodes
    signals = _fleet_signals(size)

    # When the robust outlier rule runs
    findings = fleet.outliers(signals, DEFAULT_THRESHOLDS)

    # Then there is exactly one OK finding that says how many nodes were compared on which signals
    assert [f.severity for f in findings] == [Severity.OK]
    assert findings[0].evidence["nodes_compared"] == {
        SM_CLOCK.name: size,
        TEMPERATURE.name: size,
        EFA_ERRORS.name: size,
    }


@pytest.mark.parametrize(("size", "bad"), [(8, 3), (800, 517)])
def test_one_clocked_down_node_stands_out_among_8_and_800(size, bad):
    # Given the same fleet with one node whose GPUs run at 1410 MHz instead of ~1970 MHz
    signals = _fleet_signals(size, outlier=bad)

    # When the robust outlier rule runs
    concerns = _concerns(fleet.outliers(signals, DEFAULT_THRESHOLDS))

    # Then exactly that node is flagged, with the measured value, the fleet median and the deviation
    assert [f.node for f in concerns] == [f"node-{bad:04d}"]
    evidence = concerns[0].evidence
    assert evidence["signal"] == SM_CLOCK.name
    assert evidence["value"] == 1410.0
    median_clock = sorted(s.values[SM_CLOCK.name] for s in signals)[size // 2 - 1 : size // 2 + 1]
    assert evidence["fleet_median"] in median_clock or evidence["fleet_median"] == sum(median_clock) / 2
    assert evidence["relative_deviation"] == pytest.approx(
        (evidence["fleet_median"] - 1410) / evidence["fleet_median"], abs=1e-4
    )
    assert evidence["nodes_compared"] == size
    assert evidence["robust_z"] > DEFAULT_THRESHOLDS.fleet_outlier_robust_z


def test_single_node_cannot_be_compared():
    # Given a single node
    findings = fleet.outliers(_fleet_signals(1))

    # Then the rule says the comparison needs more nodes (INFO), never a CONCERN
    assert [(f.check, f.severity) for f in findings] == [("fleet.outlier", Severity.INFO)]


def test_outlier_is_one_sided_and_respects_the_minimum_relative_deviation():
    # Given a perfectly uniform fleet (MAD = 0), one node 1% slower and one node faster than the rest
    signals = _fleet_signals(8, clock=1980)
    signals = [
        NodeSignals(node=s.node, instance_type=s.instance_type, values={SM_CLOCK.name: 1980.0})
        for s in signals
    ]
    signals[2] = NodeSignals(
        node="slightly-slow", instance_type="ml.p5.48xlarge", values={SM_CLOCK.name: 1960.0}
    )
    signals[5] = NodeSignals(node="faster", instance_type="ml.p5.48xlarge", values={SM_CLOCK.name: 2100.0})

    # When evaluated
    findings = fleet.outliers(signals)

    # Then neither is flagged: 1% is below the 5% floor, and a faster clock is not a fault
    assert _concerns(findings) == []


def test_efa_error_outlier_on_a_fleet_with_zero_errors():
    # Given 8 nodes without EFA errors except one with 37 retransmit timeouts
    signals = _fleet_signals(8)
    signals[6] = NodeSignals(
        node="node-0006",
        instance_type="ml.p5.48xlarge",
        values={**signals[6].values, EFA_ERRORS.name: 37.0},
    )

    # When evaluated
    (concern,) = _concerns(fleet.outliers(signals))

    # Then the node is flagged on the EFA signal with the EFA hand-off
    assert concern.node == "node-0006"
    assert concern.evidence["signal"] == EFA_ERRORS.name
    assert concern.evidence["value"] == 37.0
    assert concern.evidence["fleet_median"] == 0.0
    assert concern.handoff == "hyperpod-node-debugger § A"


def test_signals_are_extracted_from_simulated_snapshots_and_find_the_planted_node():
    # Given 8 simulated p5 snapshots, node 5 with every GPU at 1200 MHz
    nodes = simulate_cluster(8, {5: NodeFaults(sm_clock_mhz=1200)})

    # When signals are extracted and compared
    signals = [extract(parse_container(n.text, f"{n.instance_id}.txt")) for n in nodes]
    concerns = _concerns(fleet.outliers(signals))

    # Then the extracted values are the simulated ones and only node 5 stands out
    assert signals[0].values[SM_CLOCK.name] == 1980.0
    assert signals[5].values[SM_CLOCK.name] == 1200.0
    assert signals[0].values[EFA_ERRORS.name] == 0.0
    assert 52 <= signals[0].values[TEMPERATURE.name] <= 66
    assert signals[0].versions["nccl"] == "2.21.5"
    assert signals[0].instance_type == "ml.p5.48xlarge"
    assert [c.node for c in concerns] == [nodes[5].instance_id]


def test_version_drift_names_the_keys_values_and_minority_nodes():
    # Given 8 nodes, two of them on an older NCCL and one on another driver
    signals = [
        NodeSignals(
            node=f"n{i}", instance_type="ml.p5.48xlarge", versions={"driver": "535.183.01", "nccl": "2.21.5"}
        )
        for i in range(8)
    ]
    signals[1] = NodeSignals(
        node="n1", instance_type="ml.p5.48xlarge", versions={"driver": "535.183.01", "nccl": "2.18.5"}
    )
    signals[4] = NodeSignals(
        node="n4", instance_type="ml.p5.48xlarge", versions={"driver": "550.90.07", "nccl": "2.18.5"}
    )

    # When evaluated
    (finding,) = fleet.version_drift(signals)

    # Then a CONCERN hands off to the version checker with the exact split per key
    assert finding.severity is Severity.CONCERN
    assert finding.handoff == "hyperpod-version-checker"
    drift = finding.evidence["drift"]
    assert drift["nccl"] == {
        "2.21.5": {"count": 6, "nodes": ["n0", "n2", "n3", "n5", "n6", "n7"]},
        "2.18.5": {"count": 2, "nodes": ["n1", "n4"]},
    }
    assert drift["driver"]["550.90.07"] == {"count": 1, "nodes": ["n4"]}
    assert list(drift) == ["driver", "nccl"]


def test_identical_versions_are_ok():
    signals = [
        NodeSignals(node=f"n{i}", instance_type="p5.48xlarge", versions={"nccl": "2.21.5"}) for i in range(3)
    ]
    assert [f.severity for f in fleet.version_drift(signals)] == [Severity.OK]


def test_instance_types_mixed_within_a_group():
    # Given a group of 8 p5 nodes where one node is a p4d
    nodes = [_node(i) for i in range(7)] + [_node(7, instance_type="ml.p4d.24xlarge")]

    # When evaluated
    findings = fleet.instance_types(nodes)

    # Then the group is a CONCERN counting nodes per type and naming the odd node
    (concern,) = _concerns(findings)
    assert concern.evidence["nodes_per_type"] == {"p4d.24xlarge": 1, "p5.48xlarge": 7}
    assert concern.evidence["nodes_not_majority"] == {"p4d.24xlarge": [nodes[7].instance_id]}
    assert [f.severity for f in fleet.instance_types(nodes[:7])] == [Severity.OK]


# --- FSx ---------------------------------------------------------------------------------------

LUSTRE = FileSystemInfo(
    file_system_id="fs-0123456789abcdef0",
    type="LUSTRE",
    storage_capacity_gib=2400,
    deployment_type="PERSISTENT_2",
    lustre_mount_name="oyuutbev",
    per_unit_storage_throughput=250,
)
PROVISIONED_MBPS = 600.0  # 2,400 GiB / 1000 x 250 MB/s/TiB, the way AWS computes it


def _lustre_series(utilizations: list[float], period: int = 60) -> list[MetricSeries]:
    """Read and write Sum series whose total is the given share of the provisioned throughput."""
    start = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
    stamps = tuple(start + timedelta(seconds=period * i) for i in range(len(utilizations)))
    total = [u / 100 * PROVISIONED_MBPS * MB * period for u in utilizations]
    return [
        MetricSeries(
            file_system_id=LUSTRE.file_system_id,
            metric="DataReadBytes",
            stat="Sum",
            period_s=period,
            timestamps=stamps,
            values=tuple(t * 0.7 for t in total),
        ),
        MetricSeries(
            file_system_id=LUSTRE.file_system_id,
            metric="DataWriteBytes",
            stat="Sum",
            period_s=period,
            timestamps=stamps,
            values=tuple(t * 0.3 for t in total),
        ),
    ]


def test_provisioned_lustre_throughput_is_capacity_in_tib_times_per_unit():
    assert LUSTRE.provisioned_throughput_mbps == pytest.approx(600.0)
    assert LUSTRE.provisioned_formula() == (
        "StorageCapacity 2400 GiB (2.4 TiB) x PerUnitStorageThroughput 250 MB/s/TiB = 600 MB/s"
    )


def test_saturated_lustre_is_a_scale_concern_with_the_provisioned_figure():
    # Given 60 one-minute datapoints at 95% of provisioned throughput
    metrics = _lustre_series([95.0] * 60)

    # When evaluated (even with I/O-bound nodes, saturation wins)
    (finding,) = fsx.throughput(LUSTRE, metrics, {"i-1": {"iowait_pct": 40.0}})

    # Then the branch is "saturated: scale", with measured and provisioned figures
    assert finding.severity is Severity.CONCERN
    assert "saturated" in finding.summary
    assert finding.evidence["mean_utilization_pct"] == 95.0
    assert finding.evidence["share_at_or_above_pct"] == 1.0
    assert finding.evidence["provisioned_mbps"] == 600.0
    assert finding.evidence["mean_mbps"] == pytest.approx(0.95 * PROVISIONED_MBPS, abs=0.1)
    assert "StorageCapacity 2400 GiB (2.4 TiB) x PerUnitStorageThroughput 250 MB/s/TiB" in finding.next_step
    assert "--storage-capacity" in finding.next_step


def test_a_short_burst_is_not_saturation_and_headroom_with_io_bound_nodes_is_an_io_pattern_concern():
    # Given a window at 30% with a 10-minute burst to 99% (17% of datapoints), and two I/O-bound nodes
    metrics = _lustre_series([30.0] * 50 + [99.0] * 10)
    io_bound = {"i-0aaa": {"iowait_pct": 45.2}, "i-0bbb": {"io_pressure_some_avg10": 31.0}}

    # When evaluated with and without the I/O-bound nodes
    (pattern,) = fsx.throughput(LUSTRE, metrics, io_bound)
    (ok,) = fsx.throughput(LUSTRE, metrics, {})

    # Then the headroom branch names the nodes and gives the application advice; without them it is OK
    assert pattern.severity is Severity.CONCERN
    assert pattern.summary.startswith("inefficient I/O pattern")
    assert pattern.evidence["io_bound_node_count"] == 2
    assert pattern.evidence["share_at_or_above_pct"] == pytest.approx(10 / 60, abs=1e-3)
    for advice in (
        "num_workers",
        "pin_memory=True",
        "persistent_workers=True",
        "async_save",
        "SHARDED_STATE_DICT",
        "WebDataset",
        "OpenZFS",
        "NVMe",
    ):
        assert advice in pattern.next_step
    assert ok.severity is Severity.OK
    assert ok.evidence["peak_utilization_pct"] == 99.0


def test_no_datapoints_is_info():
    (finding,) = fsx.throughput(LUSTRE, [])
    assert finding.severity is Severity.INFO
    assert "no DataReadBytes/DataWriteBytes datapoints" in finding.summary


def test_openzfs_iops_sustained_utilization():
    # Given an OpenZFS file system at 85% disk IOPS utilization (Average) with peaks to 100%
    zfs = FileSystemInfo(
        file_system_id="fs-0fedcba9876543210",
        type="OPENZFS",
        throughput_capacity=640,
        iops_mode="AUTOMATIC",
        iops=19200,
    )
    stamps = tuple(datetime(2025, 6, 2, 9, i, tzinfo=UTC) for i in range(30))
    metrics = [
        MetricSeries(
            file_system_id=zfs.file_system_id,
            metric="FileServerDiskIopsUtilization",
            stat="Average",
            period_s=60,
            timestamps=stamps,
            values=(85.0,) * 30,
        ),
        MetricSeries(
            file_system_id=zfs.file_system_id,
            metric="FileServerDiskIopsUtilization",
            stat="Maximum",
            period_s=60,
            timestamps=stamps,
            values=(100.0,) * 30,
        ),
        MetricSeries(
            file_system_id=zfs.file_system_id,
            metric="FileServerDiskThroughputUtilization",
            stat="Average",
            period_s=60,
            timestamps=stamps,
            values=(20.0,) * 30,
        ),
    ]

    # When evaluated
    findings = fsx.evaluate([zfs], metrics)

    # Then IOPS is a CONCERN (mean 85, peak 100) while throughput has headroom
    by_check = {f.check: f for f in findings}
    assert by_check["fs.openzfs_iops"].severity is Severity.CONCERN
    assert by_check["fs.openzfs_iops"].evidence["mean_utilization_pct"] == 85.0
    assert by_check["fs.openzfs_iops"].evidence["peak_utilization_pct"] == 100.0
    assert by_check["fs.throughput"].severity is Severity.OK
    assert by_check["fs.throughput"].evidence["mean_utilization_pct"] == 20.0


# --- health logs -------------------------------------------------------------------------------


def _record(kind: LogKind, name: str, stream: str) -> LogRecord:
    return LogRecord(
        kind=kind, stream=stream, timestamp_ms=1_724_265_335_000, message=(FIXTURES / name).read_text()
    )


def test_deep_health_failure_record_is_parsed_with_its_bandwidth_figures():
    # Given the real cluster-level DeepHealthCheckResults failure record (pretty-printed JSON)
    record = _record(
        LogKind.DEEP_HEALTH,
        "dhc_cluster-level_nccl-bw-below-threshold_p4d.json",
        "DeepHealthCheckResults/i-0abc1234567890def",
    )

    # When evaluated
    (finding,) = health.deep_check([record])

    # Then it is a CONCERN for that instance with the expected and measured bandwidth
    assert finding.severity is Severity.CONCERN
    assert finding.node == "i-0abc1234567890def"
    assert finding.evidence["level"] == "error"
    assert finding.evidence["first_seen"] == "2024-06-18T21:15:22Z"
    assert finding.evidence["nccl_expected_min_bw"] == 80.0
    assert finding.evidence["nccl_observed_bw"] == 30.0
    assert finding.summary.startswith(
        "deep health check failed: Encountered FaultyInstance. Replace the Instance."
    )
    assert finding.handoff == "hyperpod-node-debugger § F"


def test_passing_deep_health_lines_are_ok():
    # Given the three real passing instance-level logs (stress-ng, DCGM summary, EFA loopback)
    records = [
        _record(LogKind.DEEP_HEALTH, name, "DeepHealthCheckResults/i-0abc1234567890def")
        for name in (
            "dhc_instance_stress-ng.log",
            "dhc_instance_dcgm-diag-summary.log",
            "dhc_instance_efa-loopback.log",
        )
    ]

    # When parsed and evaluated
    entries = [e for r in records for e in health.parse_deep_health(r)]
    (finding,) = health.deep_check(records)

    # Then every line is read (3 + 1 + 1), none failed, and the result is OK
    assert len(entries) == 5
    assert {e.level for e in entries} == {"info"}
    assert entries[0].timestamp == "2024-08-20T21:53:58Z"
    assert not any(e.failed for e in entries)
    assert finding.severity is Severity.OK
    assert finding.evidence["records"] == 5


def test_no_deep_health_records_is_info():
    assert [f.severity for f in health.deep_check([])] == [Severity.INFO]


def _hma_variants() -> dict[str, str]:
    """The real HMA record as printed in the docs, plus the shapes real records take."""
    pretty = (FIXTURES / "hma_npd-event_xid71_pretty.json").read_text()
    data = json.loads(pretty)
    one_line = json.dumps(data)
    renamed = dict(data)
    renamed["details: "] = renamed.pop("details")
    nulls = json.loads(one_line)
    nulls["details"]["severity"] = None
    nulls["details"]["timestamp"] = None
    return {
        "pretty": pretty,
        "one-line": one_line,
        "details-colon-key": json.dumps(renamed),
        "null-fields": json.dumps(nulls),
    }


@pytest.mark.parametrize("variant", ["pretty", "one-line", "details-colon-key", "null-fields"])
def test_hma_xid_event_is_read_in_every_real_shape(variant):
    # Given the real HMA Xid 71 event in one of its shapes, from the node's HMA stream
    record = LogRecord(
        kind=LogKind.HMA,
        stream="SagemakerHealthMonitoringAgent/worker-group-1/i-0abc1234567890def",
        timestamp_ms=1_724_265_335_000,
        message=_hma_variants()[variant],
    )

    # When evaluated
    (finding,) = health.hma([record])

    # Then it is a CONCERN for that node carrying the reason, the Xid code and the PCI id
    assert finding.severity is Severity.CONCERN
    assert finding.node == "i-0abc1234567890def"
    assert finding.evidence["reason"] == "XidHardwareFailure"
    assert finding.evidence["xid"] == 71
    assert finding.evidence["pci"] == "0000:b9:00"
    assert "NVLink: fatal error detected on link 6" in finding.evidence["message"]
    assert finding.summary == "Health Monitoring Agent reported XidHardwareFailure: Xid 71"
    if variant == "null-fields":
        assert finding.evidence["severity"] == "info"  # falls back to the record's level
        assert finding.evidence["first_seen"] == "2024-08-21T18:35:35Z"  # the record's ts
    else:
        assert finding.evidence["severity"] == "warn"
        assert finding.evidence["first_seen"] == "2024-08-22T20:59:29Z"


def test_hma_stream_without_events_is_ok_and_non_event_lines_are_ignored():
    record = LogRecord(
        kind=LogKind.HMA,
        stream="SagemakerHealthMonitoringAgent/g/i-0abc1234567890def",
        message='{"level":"info","msg":"agent started"}',
    )
    assert [f.severity for f in health.hma([record])] == [Severity.OK]


# --- coverage ----------------------------------------------------------------------------------

CLUSTER = ClusterInfo(
    name="ml-cluster",
    arn="arn:aws:sagemaker:us-west-2:123456789012:cluster/abcd1234efgh",
    cluster_id="abcd1234efgh",
    region="us-west-2",
    node_recovery="None",
    instance_groups=(
        InstanceGroup(name="controller", instance_type="ml.m5.2xlarge", target_count=1),
        InstanceGroup(
            name="workers",
            instance_type="ml.p5.48xlarge",
            target_count=16,
            execution_role="arn:aws:iam::123456789012:role/hp-exec",
            life_cycle_config={"SourceS3Uri": "s3://sagemaker-lcs/scripts/", "OnCreate": "on_create.sh"},
            threads_per_core=1,
            on_start_deep_health_checks=("InstanceStress",),
        ),
        InstanceGroup(
            name="covered",
            instance_type="ml.p5.48xlarge",
            target_count=2,
            on_start_deep_health_checks=("InstanceStress", "InstanceConnectivity"),
        ),
    ),
)


def test_node_recovery_command_is_exact():
    (finding,) = coverage.node_recovery(CLUSTER)
    assert finding.severity is Severity.INFO
    assert finding.evidence["command"] == (
        "aws sagemaker update-cluster --cluster-name ml-cluster --node-recovery Automatic --region us-west-2"
    )
    assert finding.evidence["command"] in finding.next_step
    automatic = CLUSTER.model_copy(update={"node_recovery": "Automatic"})
    assert [f.severity for f in coverage.node_recovery(automatic)] == [Severity.OK]


def test_deep_health_command_repeats_the_group_spec_and_adds_the_missing_check():
    # When the coverage rule runs on a cluster with one partly covered GPU group
    findings = coverage.deep_health_checks(CLUSTER)

    # Then the covered group is OK, the CPU controller is not judged, and the partial group gets the command
    assert [(f.severity, f.evidence.get("group")) for f in findings] == [
        (Severity.OK, None),
        (Severity.INFO, "workers"),
    ]
    info = findings[1]
    assert info.evidence["missing"] == ["InstanceConnectivity"]
    command = info.evidence["command"]
    assert command == (
        "aws sagemaker update-cluster --cluster-name ml-cluster --instance-groups "
        '\'[{"InstanceGroupName":"workers","InstanceType":"ml.p5.48xlarge","InstanceCount":16,'
        '"LifeCycleConfig":{"SourceS3Uri":"s3://sagemaker-lcs/scripts/","OnCreate":"on_create.sh"},'
        '"ExecutionRole":"arn:aws:iam::123456789012:role/hp-exec","ThreadsPerCore":1,'
        '"OnStartDeepHealthChecks":["InstanceStress","InstanceConnectivity"]}]\' --region us-west-2'
    )
    # and the JSON argument survives shell quoting as the UpdateCluster instance-group specification
    argv = shlex.split(command)
    spec = json.loads(argv[argv.index("--instance-groups") + 1])
    assert spec[0]["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]


# --- EFA error total: the fast path and the full parser agree -----------------------------------

EFA_LISTING = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "efa-sysfs"


def _efa_only(text: str):
    from hyperpod_perf.collect.snapshot import render_container

    return parse_container(render_container([("efa-counters", text, 0)]), "i-0abc0000000000001.txt")


def test_efa_error_total_from_collector_triples_matches_the_full_parser():
    # Given a simulated p5 node's counters with errors planted on two devices
    from hyperpod_perf.parse.efa import parse_efa_counters
    from hyperpod_perf_dev.sim.node import simulate_node

    text = {name: body for name, body, _ in simulate_node(0).sections}["efa-counters"]
    text = text.replace("rdmap113s0 rx_drops 0", "rdmap113s0 rx_drops 5")
    text = text.replace("rdmap79s0 retrans_timeout_events 0", "rdmap79s0 retrans_timeout_events 3")

    # When the signal is extracted
    total = extract(_efa_only(text)).values[EFA_ERRORS.name]

    # Then it is the planted 8, the same as summing the full parser's output
    wanted = set(DEFAULT_THRESHOLDS.efa_error_counters)
    parsed = parse_efa_counters(text)
    assert total == 8.0
    assert total == sum(v for d in parsed.devices.values() for k, v in d.items() if k in wanted)


def test_efa_error_total_from_a_real_listing_goes_through_the_full_parser():
    # Given the real `name :value` listing (client and server blocks), once as captured, once with drops
    text = (EFA_LISTING / "efa0_hw_counters_client-server_2020_perftest-issue113.txt").read_text()
    server_at = text.index("server")
    dropped = text[:server_at] + text[server_at:].replace("rx_drops :0", "rx_drops :4", 1)

    # Then the captured one sums to 0 and the server block's drops are counted
    assert extract(_efa_only(text)).values[EFA_ERRORS.name] == 0.0
    assert extract(_efa_only(dropped)).values[EFA_ERRORS.name] == 4.0


def test_no_efa_device_gives_no_efa_signal():
    assert EFA_ERRORS.name not in extract(_efa_only("")).values
