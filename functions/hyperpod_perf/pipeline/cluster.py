"""ResolveCluster: the cluster, its nodes and placement, and the targets of the Map."""

from __future__ import annotations

from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.domain.cluster import ClusterInfo, ClusterNode
from hyperpod_perf.domain.errors import Throttled
from hyperpod_perf.domain.findings import Finding
from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.domain.request import DiagnoseRequest
from hyperpod_perf.domain.targets import ResolvedCluster, TargetBatch, TargetItem
from hyperpod_perf.pipeline.errors import ClusterNotFound, NoTargets
from hyperpod_perf.pipeline.pacing import SESSION_SECONDS, plan_fan_out
from hyperpod_perf.service.errors import ClusterNotFound as EngineClusterNotFound
from hyperpod_perf.service.errors import DiagnosisError
from hyperpod_perf.service.ports import ClustersPort
from hyperpod_perf.service.resolve import resolve_cluster as resolve
from hyperpod_perf.service.targets import select_targets
from hyperpod_perf.service.topology import TopologySources

#: Inline batches travel in the state (and every later state's input) and are limited, like any
#: state input or output, to 256 KiB: past this size they go to S3 and the Distributed Map reads
#: them there, whatever distributedMapThreshold says.
INLINE_BATCHES_MAX_BYTES = 64 * 1024


def resolve_cluster(
    request: DiagnoseRequest,
    run: RunLayout,
    *,
    clusters: ClustersPort,
    store: ReportStore,
    distributed_threshold: int,
    max_concurrency: int,
    session_rate_per_s: float,
    session_seconds: float = SESSION_SECONDS,
    topology: TopologySources | None = None,
) -> ResolvedCluster:
    """The cluster, its targets, and the fan-out: batches paced so that all CollectNode
    invocations together stay within `session_rate_per_s` (`max_concurrency` only caps the Map)."""
    try:
        cluster, nodes, findings = resolve(request, clusters)
    except EngineClusterNotFound as exc:
        raise ClusterNotFound(str(exc)) from exc
    except DiagnosisError as exc:
        if isinstance(exc.__cause__, Throttled):
            raise exc.__cause__ from exc
        raise
    targets = select_targets(nodes, request)
    if not targets:
        named = f" (named: {', '.join(request.nodes[:5])})" if request.nodes else ""
        raise NoTargets(f"cluster {cluster.name} has no node to diagnose{named}")
    if topology is not None:
        targets = place_nodes(cluster, nodes, targets, findings, run, store=store, sources=topology)
    store.put_json(
        run.work("cluster"),
        {
            "cluster": cluster.model_dump(mode="json"),
            "nodes": [n.model_dump(mode="json") for n in targets],
            "findings": [f.model_dump(mode="json") for f in findings],
        },
    )
    return fan_out(
        cluster.cluster_id,
        targets,
        run,
        store=store,
        distributed_threshold=distributed_threshold,
        max_concurrency=max_concurrency,
        session_rate_per_s=session_rate_per_s,
        session_seconds=session_seconds,
    )


def fan_out(
    cluster_id: str,
    targets: list[ClusterNode],
    run: RunLayout,
    *,
    store: ReportStore,
    distributed_threshold: int,
    max_concurrency: int,
    session_rate_per_s: float,
    session_seconds: float = SESSION_SECONDS,
    batches_name: str = "batches",
) -> ResolvedCluster:
    """The Map's batches for these targets, paced to the StartSession rate (ResolveCluster's, and
    again ClusterMetrics' when the metrics verdict narrows the deep collection to its suspects)."""
    items = [
        TargetItem(
            instance_id=n.instance_id,
            cluster_id=cluster_id,
            group=n.group,
            hostname=n.hostname,
            instance_type=n.instance_type,
            az=n.az,
            status=n.status,
        )
        for n in targets
    ]
    plan = plan_fan_out(
        len(items), session_rate_per_s, concurrency_cap=max_concurrency, session_seconds=session_seconds
    )
    batches, start = [], 0
    for index, size in enumerate(plan.batch_sizes):
        batch = items[start : start + size]
        batches.append(TargetBatch(index=index, start_after_s=plan.start_after_s(index), targets=batch))
        start += size
    inline_bytes = sum(len(b.model_dump_json()) + 1 for b in batches)
    distributed = len(items) > distributed_threshold or inline_bytes > INLINE_BATCHES_MAX_BYTES
    resolved = ResolvedCluster(
        mode="distributed" if distributed else "inline",
        target_count=len(items),
        batch_count=len(batches),
        max_concurrency=plan.max_concurrency,
        invocation_rate_per_s=plan.invocation_rate_per_s,
        cluster_id=cluster_id,
    )
    if resolved.mode == "distributed":
        key = store.put_json(run.work(batches_name), [b.model_dump(mode="json") for b in batches])
        return resolved.model_copy(update={"batches_key": key})
    return resolved.model_copy(update={"batches": batches})


def place_nodes(
    cluster: ClusterInfo,
    nodes: list[ClusterNode],
    targets: list[ClusterNode],
    findings: list[Finding],
    run: RunLayout,
    *,
    store: ReportStore,
    sources: TopologySources,
) -> list[ClusterNode]:
    """The network layers of every resolved node (work/topology, read by NcclResults and Evaluate),
    the targets with theirs; a source that cannot answer adds its INFO finding, never fails the run."""
    from hyperpod_perf.service.topology import cluster_placement, with_network_nodes

    placement = cluster_placement(cluster, nodes, sources)
    findings.extend(placement.findings)
    if not placement.layers:
        return targets
    store.put_json(run.work("topology"), placement.to_json())
    return with_network_nodes(targets, placement.layers)


def with_deployment_defaults(request: DiagnoseRequest, *, sample_size: int) -> DiagnoseRequest:
    """The deployment's sample size (NODE_SAMPLE_SIZE) where the request did not set its own."""
    if "sample_size" in request.model_fields_set:
        return request
    return request.model_copy(update={"sample_size": sample_size})
