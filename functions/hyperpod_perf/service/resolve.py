"""Stage 1: the cluster and every node it has (or the nodes named), with placement."""

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
    try:
        listed = clusters.list_node_ids(request.cluster)
    except AwsAdapterError as exc:
        findings.append(
            not_checked_finding(
                "collect.node", RunbookSection.COLLECTION, "cluster nodes could not be listed", exc
            )
        )
        listed = [(node_id, "") for node_id in request.nodes]
    groups = dict(listed)
    wanted = _with_sample(request, listed) or [node_id for node_id, _ in listed]
    for node_id in wanted:
        if listed and node_id not in groups:
            findings.append(
                collect_finding(
                    node_id,
                    Severity.CONCERN,
                    f"{node_id} is not a node of cluster {cluster.name}",
                    reason="NotInCluster",
                )
            )
    wanted = [n for n in wanted if n in groups]
    described, errors = clusters.describe_nodes(request.cluster, cluster.cluster_id, wanted)
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
    nodes = []
    for node_id in wanted:
        node = by_id.get(node_id) or ClusterNode(
            instance_id=node_id,
            group=groups.get(node_id, ""),
            ssm_target=ssm_target(cluster.cluster_id, groups.get(node_id, ""), node_id),
        )
        nodes.append(node)
    return nodes


def _with_sample(request: DiagnoseRequest, listed: list[tuple[str, str]]) -> list[str]:
    """The named nodes, and for an AUTO run their fleet sample, chosen from the listing (instance
    group and id) before any node is described: a focused run compares its node with peers (the
    before/after verdict judges a repaired node against them), without describing every node."""
    named = list(dict.fromkeys(request.nodes))
    if not named or request.scope is not TargetScope.AUTO or not listed:
        return named
    stubs = [ClusterNode(instance_id=node_id, group=group) for node_id, group in listed]
    chosen = [n.instance_id for n in select_targets(stubs, request)]
    return named + [node_id for node_id in chosen if node_id not in named]


def resolve_cluster(
    request: DiagnoseRequest, clusters: ClustersPort
) -> tuple[ClusterInfo, list[ClusterNode], list[Finding]]:
    """The cluster and every node it has (or the nodes named), with placement."""
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


def cluster_node_names(clusters: ClustersPort, cluster: str) -> NodeNames:
    """Every node of the cluster with its names: ListClusterNodes for the ids, DescribeClusterNode
    for each one's `PrivateDnsHostname` and `PrivatePrimaryIp` (ListClusterNodes' summaries carry
    no address in the API version this reads). A node that cannot be described keeps its id."""
    try:
        info = clusters.describe_cluster(cluster)
        listed = clusters.list_node_ids(cluster)
    except (NotFound, InvalidRequest) as exc:
        raise ClusterNotFound(f"cluster {cluster!r} not found: {exc}") from exc
    except AwsAdapterError as exc:
        raise DiagnosisError(f"the nodes of cluster {cluster!r} could not be listed: {exc}") from exc
    ids = [node_id for node_id, _group in listed]
    described, _errors = clusters.describe_nodes(cluster, info.cluster_id, ids)
    by_id = {n.instance_id: n for n in described}
    return NodeNames.of([by_id.get(i) or ClusterNode(instance_id=i, group=g) for i, g in listed])


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
    if unknown:
        raise UnknownNodes(unknown_nodes_message(unknown, index, f"cluster {cluster}"))
    return tuple(dict.fromkeys([*ids, *found]))
