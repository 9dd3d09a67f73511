"""The whole in-process diagnosis against a moto-seeded account and simulated node snapshots."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber
from hyperpod_moto import (
    REGION,
    GroupSeed,
    NodeSeed,
    extend_moto_hyperpod,
    put_lustre_throughput,
    seed_cluster,
    seed_lustre,
)
from moto import mock_aws

from hyperpod_perf.aws.cloudwatch import FsxMetrics
from hyperpod_perf.aws.fsx import FsxFileSystems
from hyperpod_perf.aws.logs import ClusterLogs, cluster_log_group
from hyperpod_perf.aws.sagemaker import HyperPodClusters
from hyperpod_perf.collect.runner import NodeFailure, NodeOutput, NodeTarget, SnapshotDirRunner
from hyperpod_perf.collect.snapshot import parse_container
from hyperpod_perf.domain.cluster import MB
from hyperpod_perf.domain.findings import Severity, has_concern
from hyperpod_perf.domain.request import DiagnoseRequest, TargetScope
from hyperpod_perf.rules.engine import evaluate_snapshot
from hyperpod_perf.service.diagnosis import diagnose
from hyperpod_perf.service.errors import ClusterNotFound, DiagnosisError
from hyperpod_perf.service.window import parse_window
from hyperpod_perf_dev.sim.node import NodeFaults, simulate_cluster

HMA_RECORD = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "real"
    / "deep-health"
    / "hma_npd-event_xid71_pretty.json"
)
CLUSTER = "hpclust00001"
#: Metrics and log events must be recent (CloudWatch Logs rejects events older than 14 days).
NOW = datetime.now(UTC).replace(second=0, microsecond=0)
SLOW_NODE, XID_NODE, POWERSAVE_NODE = 3, 5, 6
LUSTRE_GIB, LUSTRE_PER_UNIT = 2400, 250
PROVISIONED_BYTES_PER_S = LUSTRE_GIB / 1000 * LUSTRE_PER_UNIT * MB


@pytest.fixture
def account(monkeypatch, tmp_path):
    """Two AZs, one slow node, NodeRecovery None, Lustre at 95%, one HMA Xid event; snapshots on disk.

    One more node runs the powersave governor: a node-level concern the report must also carry."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        extend_moto_hyperpod(monkeypatch)
        sim = simulate_cluster(
            8, {SLOW_NODE: NodeFaults(sm_clock_mhz=1400), POWERSAVE_NODE: NodeFaults(governor="powersave")}
        )
        for node in sim:
            (tmp_path / f"{node.instance_id}.txt").write_text(node.text)
        workers = [
            NodeSeed(node.instance_id, *(("us-west-2a", "usw2-az1") if i < 6 else ("us-west-2b", "usw2-az2")))
            for i, node in enumerate(sim)
        ]
        sm = boto3.client("sagemaker", region_name=REGION)
        seed_cluster(
            sm,
            CLUSTER,
            [
                GroupSeed("controller", "ml.m5.2xlarge", [NodeSeed("i-0c0ffee000000c001")]),
                GroupSeed("workers", "ml.p5.48xlarge", workers, ["InstanceStress", "InstanceConnectivity"]),
            ],
            node_recovery="None",
        )
        fsx = boto3.client("fsx", region_name=REGION)
        fs_id = seed_lustre(fsx, capacity_gib=LUSTRE_GIB, per_unit=LUSTRE_PER_UNIT, mount_name="oyuutbev")
        cw = boto3.client("cloudwatch", region_name=REGION)
        rate = 0.95 * PROVISIONED_BYTES_PER_S
        put_lustre_throughput(cw, fs_id, NOW - timedelta(hours=3), 180, 0.6 * rate, 0.4 * rate)
        logs = boto3.client("logs", region_name=REGION)
        group = cluster_log_group(CLUSTER, CLUSTER)  # moto's cluster id is the cluster name
        stream = f"SagemakerHealthMonitoringAgent/workers/{sim[XID_NODE].instance_id}"
        logs.create_log_group(logGroupName=group)
        logs.create_log_stream(logGroupName=group, logStreamName=stream)
        one_line = json.dumps(json.loads(HMA_RECORD.read_text()))
        logs.put_log_events(
            logGroupName=group,
            logStreamName=stream,
            logEvents=[
                {"timestamp": int((NOW - timedelta(minutes=30)).timestamp() * 1000), "message": one_line}
            ],
        )
        yield {
            "sim": sim,
            "fs_id": fs_id,
            "snapshots": tmp_path,
            "sm": sm,
            "fsx": fsx,
            "cw": cw,
            "logs": logs,
        }


def _run(account, *, runner="dir", logs=None, **request):
    node_runner = SnapshotDirRunner(account["snapshots"]) if runner == "dir" else runner
    return diagnose(
        DiagnoseRequest(cluster=CLUSTER, region=REGION, window_minutes=180, **request),
        clusters=HyperPodClusters(account["sm"]),
        fsx=FsxFileSystems(account["fsx"]),
        metrics=FsxMetrics(account["cw"]),
        logs=ClusterLogs(logs or account["logs"]),
        node_runner=node_runner,
        now=NOW,
    )


def _node_level_concerns(sim):
    """What the node engine alone says about each snapshot (node-level findings)."""
    return {
        (node.instance_id, f.check)
        for node in sim
        for f in evaluate_snapshot(parse_container(node.text, f"{node.instance_id}.txt"))
        if f.severity is Severity.CONCERN
    }


def test_diagnose_reports_exactly_the_seeded_concerns(account):
    sim = account["sim"]

    # When the cluster is diagnosed from the snapshot directory
    result = _run(account)

    # Then the concerns are exactly: AZ spread, the slow node, the saturated Lustre, the HMA Xid,
    # plus whatever the node engine says about the individual snapshots
    concerns = {(f.node, f.check) for f in result.findings if f.severity is Severity.CONCERN}
    expected_cluster = {
        (None, "topology.az_spread"),
        (sim[SLOW_NODE].instance_id, "fleet.outlier"),
        (None, "fs.throughput"),
        (sim[XID_NODE].instance_id, "health.hma"),
    }
    node_level = _node_level_concerns(sim)
    assert node_level == {(sim[POWERSAVE_NODE].instance_id, "host.cpu_governor")}
    assert concerns == expected_cluster | node_level
    assert has_concern(result.findings)  # the CLI exits 1

    by_check = {f.check: f for f in result.findings if f.severity is Severity.CONCERN and f.node is None}
    assert by_check["topology.az_spread"].evidence["nodes_per_az"] == {
        "us-west-2a (usw2-az1)": 6,
        "us-west-2b (usw2-az2)": 2,
    }
    saturated = by_check["fs.throughput"]
    assert saturated.evidence["file_system_id"] == account["fs_id"]
    assert saturated.evidence["mean_utilization_pct"] == 95.0
    assert saturated.evidence["share_at_or_above_pct"] == 1.0
    assert saturated.evidence["provisioned_mbps"] == 600.0
    assert saturated.evidence["datapoints"] == 180
    outlier = next(
        f for f in result.findings if f.check == "fleet.outlier" and f.severity is Severity.CONCERN
    )
    assert (outlier.evidence["value"], outlier.evidence["fleet_median"]) == (1400.0, 1980.0)
    hma = next(f for f in result.findings if f.check == "health.hma")
    assert (hma.evidence["xid"], hma.evidence["reason"]) == (71, "XidHardwareFailure")

    # and the coverage advice is INFO with the exact command, never a concern
    recovery = next(f for f in result.findings if f.check == "coverage.node_recovery")
    assert recovery.severity is Severity.INFO
    assert recovery.evidence["command"] == (
        f"aws sagemaker update-cluster --cluster-name {CLUSTER} --node-recovery Automatic --region {REGION}"
    )
    # the controller has no snapshot: reported, not an error; the 8 workers were all collected
    (controller,) = [f for f in result.findings if f.node == "i-0c0ffee000000c001"]
    assert (controller.check, controller.severity, controller.evidence["reason"]) == (
        "collect.node",
        Severity.INFO,
        "SnapshotMissing",
    )
    assert result.collected_nodes == sorted(n.instance_id for n in sim)
    # every node-level finding names its node; the report data is there
    instance_ids = {n.instance_id for n in sim} | {"i-0c0ffee000000c001"}
    assert all(f.node in instance_ids for f in result.findings if f.node is not None)
    assert [fs.file_system_id for fs in result.file_systems] == [account["fs_id"]]
    # every Lustre metric was asked for in one call; only the two the account published have datapoints
    assert {s.metric for s in result.metrics if s.values} == {"DataReadBytes", "DataWriteBytes"}
    assert len(result.metrics) == 17
    assert result.window_end - result.window_start == timedelta(hours=3)
    assert len(result.nodes) == 9 and result.cluster.node_recovery == "None"


def test_without_a_runner_nodes_are_not_collected_but_the_cluster_is_still_analysed(account):
    # When no node runner is given
    result = _run(account, runner=None)

    # Then each node is a collect.node INFO, and topology, logs and coverage still ran
    not_collected = [f for f in result.findings if f.check == "collect.node"]
    assert len(not_collected) == 9 and {f.severity for f in not_collected} == {Severity.INFO}
    assert {f.evidence["reason"] for f in not_collected} == {"NoRunner"}
    concerns = {(f.node, f.check) for f in result.findings if f.severity is Severity.CONCERN}
    assert concerns == {(None, "topology.az_spread"), (account["sim"][XID_NODE].instance_id, "health.hma")}
    assert result.collected_nodes == []
    fs_gap = next(f for f in result.findings if f.check == "fs.throughput")
    assert fs_gap.severity is Severity.INFO and "none found in the collected nodes' mounts" in fs_gap.summary


class _FlakyRunner:
    """Reads the snapshot directory, but one node's SSM agent is down."""

    def __init__(self, directory: Path, down: str) -> None:
        self._inner, self._down = SnapshotDirRunner(directory), down

    def collect(self, nodes: list[NodeTarget]) -> list[NodeOutput | NodeFailure]:
        up = [n for n in nodes if n.instance_id != self._down]
        down = [
            NodeFailure(n, "TargetNotConnected", "agent offline", attempts=1) for n in nodes if n not in up
        ]
        return [*self._inner.collect(up), *down]


def test_partial_failures_each_become_a_finding_and_the_rest_completes(account):
    sim = account["sim"]
    logs_client = boto3.client("logs", region_name=REGION)

    # Given: logs:FilterLogEvents denied, a --fsx id from another account, one unreachable node,
    # and the operator asking for the workers only
    with Stubber(logs_client) as stub:
        stub.add_client_error("filter_log_events", "AccessDeniedException", "not authorized", 400)
        result = _run(
            account,
            runner=_FlakyRunner(account["snapshots"], down=sim[0].instance_id),
            logs=logs_client,
            fsx_ids=(account["fs_id"], "fs-0999999999999999f"),
            nodes=tuple(n.instance_id for n in sim),
            scope=TargetScope.FOCUS,
        )

    # Then each gap is a finding saying what was not checked and why
    findings = result.findings
    health = [f for f in findings if f.check.startswith("health.")]
    assert {(f.check, f.severity, f.evidence["reason"]) for f in health} == {
        ("health.deep_check", Severity.INFO, "AccessDenied"),
        ("health.hma", Severity.INFO, "AccessDenied"),
    }
    assert all("logs:FilterLogEvents" in f.next_step for f in health)
    foreign = [f for f in findings if f.evidence.get("file_system_id") == "fs-0999999999999999f"]
    assert [(f.check, f.severity, f.evidence["reason"]) for f in foreign] == [
        ("fs.throughput", Severity.INFO, "NotFound")
    ]
    (unreachable,) = [f for f in findings if f.check == "collect.node"]
    assert (unreachable.node, unreachable.severity, unreachable.evidence["reason"]) == (
        sim[0].instance_id,
        Severity.CONCERN,
        "TargetNotConnected",
    )
    # and the rest completed: the saturated file system and the slow node are still found
    concerns = {(f.node, f.check) for f in findings if f.severity is Severity.CONCERN}
    assert {(None, "fs.throughput"), (sim[SLOW_NODE].instance_id, "fleet.outlier")} <= concerns
    assert len(result.nodes) == 8 and len(result.collected_nodes) == 7


def test_unknown_cluster_and_bad_window_stop_the_diagnosis(account):
    with pytest.raises(ClusterNotFound, match="cluster 'no-such-cluster' not found"):
        diagnose(
            DiagnoseRequest(cluster="no-such-cluster"),
            clusters=HyperPodClusters(account["sm"]),
            fsx=FsxFileSystems(account["fsx"]),
            metrics=FsxMetrics(account["cw"]),
            logs=ClusterLogs(account["logs"]),
        )
    assert parse_window("90m") == timedelta(minutes=90)
    assert parse_window(" 1d ") == timedelta(days=1)
    for bad in ("3", "0h", "3w", "16d", "-1h", ""):
        with pytest.raises(DiagnosisError):
            parse_window(bad)
