"""The cluster-level view that snapshots alone allow (`evaluate DIR`, `diagnose --snapshots` with
no AWS access), and an explicit list of what they do not.

Why say what was skipped: an operator judging a directory of snapshots on a laptop with no
credentials would otherwise read the absence of a topology or FSx concern as an all-clear. The
fleet comparison needs nothing but the snapshots (versions, clocks, EFA counters, the meta's
instance type and group), so it runs; placement, file-system metrics, health events and the
cluster's configuration live in the account, so those checks are named as not checked, with why.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from hyperpod_perf.collect.snapshot import RawSnapshot
from hyperpod_perf.domain.cluster import ClusterInfo, ClusterNode, DiagnosisResult
from hyperpod_perf.domain.findings import Finding
from hyperpod_perf.domain.report import NotChecked
from hyperpod_perf.rules.fleet_signals import NodeSignals
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds
from hyperpod_perf.service.cluster_rules import fleet_findings
from hyperpod_perf.service.evaluate import evaluate_node, node_summaries

FLEET_CHECKS = ("fleet.instance_types", "fleet.version_drift", "fleet.outlier")

#: The cluster-level checks whose input is in the AWS account, never in a node's snapshot.
NEEDS_AWS: tuple[NotChecked, ...] = (
    NotChecked(
        what="topology.az_spread, topology.ultraserver",
        why="node placement (AZ, UltraServer) comes from SageMaker DescribeClusterNode, not the snapshots",
    ),
    NotChecked(
        what="fs.throughput, fs.openzfs_iops, fs.metadata, fs.ost_hot, fs.ost_full",
        why="FSx throughput, IOPS and OST figures come from CloudWatch metrics",
    ),
    NotChecked(
        what="health.deep_check, health.hma",
        why="health events come from the cluster's CloudWatch log group",
    ),
    NotChecked(
        what="coverage.node_recovery, coverage.deep_health_checks",
        why="the cluster's configuration comes from SageMaker DescribeCluster",
    ),
)


def snapshot_nodes(signals: Sequence[NodeSignals]) -> list[ClusterNode]:
    """The nodes as far as their snapshots' meta describes them (those that name their group:
    a controller and a worker of different types in one directory are not a mixed group)."""
    return [
        ClusterNode(instance_id=s.node, group=s.group, instance_type=s.instance_type)
        for s in signals
        if s.group and s.instance_type
    ]


def snapshot_cluster_findings(
    signals: Sequence[NodeSignals], thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> tuple[list[Finding], list[NotChecked]]:
    """The fleet findings the snapshots allow, and every cluster-level check left out, with why."""
    if len(signals) < 2:
        return [], [
            NotChecked(
                what=", ".join(FLEET_CHECKS),
                why=f"the fleet comparison needs two or more snapshots ({len(signals)} usable)",
            ),
            *NEEDS_AWS,
        ]
    nodes = snapshot_nodes(signals)
    skipped = (
        []
        if nodes
        else [
            NotChecked(
                what="fleet.instance_types",
                why="no snapshot's meta names both its instance group and instance type",
            )
        ]
    )
    return fleet_findings(nodes, signals, thresholds), [*skipped, *NEEDS_AWS]


def snapshot_node(snapshot: RawSnapshot) -> ClusterNode:
    """A node as its own snapshot describes it (name, group, type, host name): no DescribeClusterNode."""
    meta = snapshot.meta
    return ClusterNode(
        instance_id=snapshot.node_name(),
        group=meta.get("instance_group") or "",
        instance_type=meta.get("instance_type") or None,
        hostname=meta.get("hostname") or None,
    )


def diagnose_snapshots(
    cluster_name: str,
    snapshots: Sequence[RawSnapshot],
    collection: Sequence[Finding] = (),
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> tuple[DiagnosisResult, list[NotChecked]]:
    """`diagnose --snapshots DIR` without AWS access: each node judged, the fleet compared, and
    the AWS stages (cluster description, placement, FSx, health logs) listed as not checked.

    `collection` holds the collect.node findings of the files that were not snapshots; their
    nodes get a fleet-table row saying so."""
    nodes = [snapshot_node(s) for s in snapshots]
    evaluations = [evaluate_node(n, s, thresholds) for n, s in zip(nodes, snapshots, strict=True)]
    signals = [NodeSignals(**e.signals) for e in evaluations if e.signals]
    cluster_level, not_checked = snapshot_cluster_findings(signals, thresholds)
    failed = [
        ClusterNode(instance_id=f.node, group="")
        for f in collection
        if f.node and f.node not in {n.instance_id for n in nodes}
    ]
    all_nodes = [*nodes, *failed]
    result = DiagnosisResult(
        findings=[*collection, *cluster_level, *(f for e in evaluations for f in e.findings)],
        cluster=ClusterInfo(name=cluster_name, arn="", cluster_id=""),
        nodes=all_nodes,
        collected_nodes=sorted(n.instance_id for n in nodes),
        node_summaries=node_summaries(all_nodes, evaluations, collection),
    )
    return result, not_checked
