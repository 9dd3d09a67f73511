"""The in-process cluster diagnosis: resolve the cluster, collect and judge every node, then add the
cluster-level view (topology, fleet comparison, FSx, health logs, coverage).

Why partial failure is the normal path: a real account always has something missing — a log
permission, a file system in another account, a node whose agent is down. Each gap becomes a
finding that says what was not checked and why, and everything else still runs. Only a cluster
that cannot be resolved at all stops the diagnosis (there is nothing to report on).

The AWS adapters and the node runner are injected, so the CLI (real account), the Lambda
handlers and the tests (moto, snapshot directories) all run this same function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from hyperpod_perf.collect.runner import NodeRunner
from hyperpod_perf.collect.snapshot import RawSnapshot
from hyperpod_perf.domain.cluster import ClusterInfo, ClusterNode, DiagnosisResult, Orchestrator
from hyperpod_perf.domain.mounts import Mount
from hyperpod_perf.domain.request import DiagnoseRequest
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds
from hyperpod_perf.service.cluster_rules import cluster_findings
from hyperpod_perf.service.collect import collect_nodes
from hyperpod_perf.service.evaluate import evaluate_node, node_summaries
from hyperpod_perf.service.fsx import file_system_data
from hyperpod_perf.service.logs import health_findings
from hyperpod_perf.service.ports import ClustersPort, FsxPort, LogsPort, MetricsPort
from hyperpod_perf.service.resolve import resolve_cluster, with_placement
from hyperpod_perf.service.targets import focus_nodes, select_targets
from hyperpod_perf.service.topology import (
    Placement,
    TopologySources,
    cluster_placement,
    slurm_placement,
    with_layers,
    with_network_nodes,
)


def diagnose(
    request: DiagnoseRequest,
    *,
    clusters: ClustersPort,
    fsx: FsxPort,
    metrics: MetricsPort,
    logs: LogsPort,
    node_runner: NodeRunner | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    now: datetime | Callable[[], datetime] | None = None,
    topology: TopologySources | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> DiagnosisResult:
    """Every finding for one cluster, plus the data the report shows (cluster, nodes, FSx series).

    `on_stage` hears each stage as it starts (the CLI's progress line; the runner's own observer
    counts the nodes)."""
    stage = on_stage or (lambda _text: None)
    moment = now() if callable(now) else now
    end = (moment or datetime.now(UTC)).astimezone(UTC)
    start = end - timedelta(minutes=request.window_minutes)

    stage(f"describing cluster {request.cluster_name} and its nodes")
    cluster, all_nodes, resolve_findings = resolve_cluster(request, clusters)
    nodes = select_targets(all_nodes, request)
    stage("reading the nodes' placement")
    placement = _placement(cluster, all_nodes, topology)
    nodes = with_network_nodes(nodes, placement.layers)
    stage(f"collecting {len(nodes)} node(s)")
    # Placement (one DescribeClusterNode per node) is read while the nodes are collected: the
    # collection waits on the nodes, not on it, and its AZ is needed only by the judging.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="placement") as pool:
        placing = pool.submit(with_placement, request.cluster, cluster, nodes, clusters)
        snapshots, collection = collect_nodes(nodes, node_runner)
        nodes, placement_findings = placing.result()
    stage(f"judging {len(snapshots)} snapshot(s)")
    evaluations = [
        evaluate_node(n, snapshots[n.instance_id], thresholds) for n in nodes if n.instance_id in snapshots
    ]
    mounts = [Mount(**m) for e in evaluations for m in e.mounts]
    stage("reading FSx metrics")
    fs_data = file_system_data(request, fsx, metrics, mounts, (start, end))
    if not placement.layers and cluster.orchestrator is Orchestrator.SLURM:
        placement = _slurm(snapshots, nodes, placement)
    stage("reading health logs and judging the fleet")
    cluster_level = [
        *resolve_findings,
        *placement_findings,
        *placement.findings,
        *cluster_findings(cluster, nodes, evaluations, fs_data, thresholds),
        *fs_data.findings,
        *health_findings(cluster, logs, (start, end), focus_nodes(request)),
    ]
    summaries = with_layers(node_summaries(nodes, evaluations, collection), placement.layers)
    return DiagnosisResult(
        findings=[*collection, *cluster_level, *(f for e in evaluations for f in e.findings)],
        cluster=cluster,
        nodes=list(nodes),
        file_systems=fs_data.systems,
        metrics=fs_data.series,
        window_start=start,
        window_end=end,
        collected_nodes=sorted(snapshots),
        node_summaries=summaries,
        fs_data=fs_data,
    )


def _placement(
    cluster: ClusterInfo, nodes: Sequence[ClusterNode], topology: TopologySources | None
) -> Placement:
    return cluster_placement(cluster, nodes, topology) if topology is not None else Placement()


def _slurm(snapshots: Mapping[str, RawSnapshot], nodes: Sequence[ClusterNode], tried: Placement) -> Placement:
    """Slurm's topology from the collected nodes' `scontrol show topology` (the first that answers)."""
    texts = [
        s.sections["slurm-topology"].text
        for s in snapshots.values()
        if "slurm-topology" in s.sections and s.sections["slurm-topology"].rc == 0
    ]
    if not texts:
        return tried
    found = slurm_placement(texts[:3], nodes)
    found.findings = [*tried.findings, *found.findings]
    return found
