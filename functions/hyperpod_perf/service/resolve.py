"""Stage 1: the cluster and every node it has (or the nodes named); their placement beside the collection."""

from __future__ import annotations

from collections.abc import Sequence

from hyperpod_perf.domain.cluster import ClusterInfo, ClusterNode, ssm_target
from hyperpod_perf.domain.errors import AwsAdapterError, InvalidRequest, NotFound
from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.domain.names import NodeNames, split_node_names, unknown_nodes_message
from hyperpod_perf.domain.request import DiagnoseRequest, TargetScope
from hyperpod_perf.service.errors import ClusterNotFound, DiagnosisError, UnknownNodes
from hyperpod_perf.service.gaps import MAX_LISTED, collect_finding, not_checked_finding
from hyperpod_perf.service.ports import ClustersPort
from hyperpod_perf.service.targets import select_targets


def _resolve_nodes(
    request: DiagnoseRequest, cluster: ClusterInfo, clusters: ClustersPort, findings: list[Finding]
) -> list[ClusterNode]:
    """The nodes as ListClusterNodes lists them (no DescribeClusterNode: placement is read beside
    the collection, `with_placement`). When the listing fails, the named nodes are described one by
    one instead: their instance group names their SSM target."""
    try:
        listed = clusters.list_nodes(request.cluster, cluster.cluster_id)
    except AwsAdapterError as exc:
        findings.append(
            not_checked_finding(
                "collect.node", RunbookSection.COLLECTION, "cluster nodes could not be listed", exc
            )
        )
        stubs = [ClusterNode(instance_id=n, group="") for n in dict.fromkeys(request.nodes)]
        return _described(request.cluster, cluster, stubs, clusters, findings)
    by_id = {n.instance_id: n for n in listed}
    wanted = _with_sample(request, listed) or list(by_id)
    for node_id in wanted:
        if node_id not in by_id:
            findings.append(
                collect_finding(
                    node_id,
                    Severity.CONCERN,
                    f"{node_id} is not a node of cluster {cluster.name}",
                    reason="NotInCluster",
                )
            )
    return [by_id[n] for n in wanted if n in by_id]


def with_placement(
    cluster_name: str, cluster: ClusterInfo, nodes: Sequence[ClusterNode], clusters: ClustersPort
) -> tuple[list[ClusterNode], list[Finding]]:
    """The nodes with their placement (Availability Zone) and private IP from DescribeClusterNode,
    one call per node not yet placed; a node that cannot be described keeps what it had and the
    run says how many were not (topology.az_spread, INFO), never fails."""
    findings: list[Finding] = []
    return _described(cluster_name, cluster, list(nodes), clusters, findings), findings


def _described(
    cluster_name: str,
    cluster: ClusterInfo,
    nodes: list[ClusterNode],
    clusters: ClustersPort,
    findings: list[Finding],
) -> list[ClusterNode]:
    wanted = [n.instance_id for n in nodes if not (n.az or n.az_id)]
    if not wanted:
        return nodes
    described, errors = clusters.describe_nodes(cluster_name, cluster.cluster_id, wanted)
    by_id = {n.instance_id: n for n in described}
    if errors:
        sample = dict(list(errors.items())[:MAX_LISTED])
        first = next(iter(errors.values()))
        findings.append(
            not_checked_finding(
                "topology.az_spread",
                RunbookSection.NCCL,
                f"placement of {len(errors)} node(s) could not be described",
                first,
                nodes={k: v.reason for k, v in sample.items()},
            )
        )
    return [_placed(n, by_id.get(n.instance_id), cluster.cluster_id) for n in nodes]


def _placed(node: ClusterNode, described: ClusterNode | None, cluster_id: str) -> ClusterNode:
    """The node with the described placement and address; what the listing already had (and the
    network layers read since) is kept where the description has nothing."""
    if described is None:
        if node.ssm_target:
            return node
        return node.model_copy(update={"ssm_target": ssm_target(cluster_id, node.group, node.instance_id)})
    merged = {
        field: getattr(node, field) or getattr(described, field)
        for field in ("group", "instance_type", "ultraserver_id", "status", "status_message", "hostname")
    }
    return node.model_copy(
        update={
            **merged,
            "az": described.az,
            "az_id": described.az_id,
            "private_ip": described.private_ip,
            "ssm_target": ssm_target(cluster_id, merged["group"], node.instance_id),
        }
    )


def _with_sample(request: DiagnoseRequest, listed: list[ClusterNode]) -> list[str]:
    """The named nodes, and for an AUTO run their fleet sample, chosen from the listing (instance
    group and id) before any node is described: a focused run compares its node with peers (the
    before/after verdict judges a repaired node against them), without describing every node."""
    named = list(dict.fromkeys(request.nodes))
    if not named or request.scope is not TargetScope.AUTO or not listed:
        return named
    chosen = [n.instance_id for n in select_targets(listed, request)]
    return named + [node_id for node_id in chosen if node_id not in named]


def resolve_cluster(
    request: DiagnoseRequest, clusters: ClustersPort
) -> tuple[ClusterInfo, list[ClusterNode], list[Finding]]:
    """The cluster and every node it has (or the nodes named), as listed: no placement yet."""
    try:
        cluster = clusters.describe_cluster(request.cluster)
    except (NotFound, InvalidRequest) as exc:
        raise ClusterNotFound(
            f"cluster {request.cluster!r} not found in region {request.region or 'of the caller'}: {exc}"
        ) from exc
    except AwsAdapterError as exc:
        raise DiagnosisError(f"cluster {request.cluster!r} could not be resolved: {exc}") from exc
    findings: list[Finding] = []
    nodes = _resolve_nodes(request, cluster, clusters, findings)
    return cluster, nodes, findings


def cluster_node_names(clusters: ClustersPort, cluster: str, *, described: bool = False) -> NodeNames:
    """Every node of the cluster with its names: ListClusterNodes' summaries carry each node's id
    and `PrivateDnsHostname` (an IP matches through EC2's `ip-a-b-c-d` form of it). `described`
    adds DescribeClusterNode's `PrivatePrimaryIp` per node, for an IP that no host name spells; a
    node that cannot be described keeps what the listing had."""
    try:
        info = clusters.describe_cluster(cluster)
        listed = clusters.list_nodes(cluster, info.cluster_id)
    except (NotFound, InvalidRequest) as exc:
        raise ClusterNotFound(f"cluster {cluster!r} not found: {exc}") from exc
    except AwsAdapterError as exc:
        raise DiagnosisError(f"the nodes of cluster {cluster!r} could not be listed: {exc}") from exc
    if described:
        listed = _described(cluster, info, listed, clusters, [])
    return NodeNames.of(listed)


def resolve_node_names(clusters: ClustersPort, cluster: str, names: Sequence[str]) -> tuple[str, ...]:
    """The instance ids the names stand for (ids first, then the looked-up ones): instance ids
    (and names that carry one, `hyperpod-i-…`) as given, with no call; host names and IPs looked
    up in the cluster's node list, only when there are any. A name no node answers to raises
    UnknownNodes, naming the closest nodes (host name and id). An instance id not in the
    cluster is left to the run, which reports it as that node's collect.node finding, as a
    pipeline request naming it would.

    Why here and not in the request model: the pipeline's request stays instance ids (its patterns
    are the edge that keeps names out of API calls and S3 keys); resolving needs the cluster."""
    try:
        ids, lookup = split_node_names(names)
    except ValueError as exc:
        raise UnknownNodes(str(exc)) from exc
    if not lookup:
        return tuple(ids)
    index = cluster_node_names(clusters, cluster)
    found, unknown = index.resolve_all(lookup)
    if unknown:  # one more look, with each node's private IP (one DescribeClusterNode per node)
        index = cluster_node_names(clusters, cluster, described=True)
        found, unknown = index.resolve_all(lookup)
    if unknown:
        raise UnknownNodes(unknown_nodes_message(unknown, index, f"cluster {cluster}"))
    return tuple(dict.fromkeys([*ids, *found]))
