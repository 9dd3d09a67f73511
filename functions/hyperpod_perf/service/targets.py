"""Stage 1b: which of the cluster's nodes to collect (all, the named ones, or those plus a sample)."""

from __future__ import annotations

from collections.abc import Sequence

from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.domain.request import DiagnoseRequest, TargetScope


def select_targets(nodes: Sequence[ClusterNode], request: DiagnoseRequest) -> list[ClusterNode]:
    """The nodes to collect: all; only the named ones; or the named ones plus a spread sample.

    The sample prefers the focus nodes' instance groups (their peers are the fair comparison)
    and is spread evenly over the sorted ids, so reruns pick the same nodes.
    """
    named = set(request.nodes)
    if request.scope is TargetScope.ALL or (request.scope is TargetScope.AUTO and not named):
        return list(nodes)
    focus = [n for n in nodes if n.instance_id in named]
    if request.scope is TargetScope.FOCUS:
        return focus
    groups = {n.group for n in focus}
    others = sorted(
        (n for n in nodes if n.instance_id not in named), key=lambda n: (n.group not in groups, n.instance_id)
    )
    peers = [n for n in others if n.group in groups] or others
    return focus + spread(peers, request.sample_size)


def focus_nodes(request: DiagnoseRequest) -> set[str] | None:
    """The nodes a FOCUS run is limited to (cluster-wide evidence is filtered to them), else None."""
    return set(request.nodes) if request.scope is TargetScope.FOCUS and request.nodes else None


def spread(nodes: Sequence[ClusterNode], count: int) -> list[ClusterNode]:
    if count <= 0 or not nodes:
        return []
    if count >= len(nodes):
        return list(nodes)
    step = len(nodes) / count
    return [nodes[int(i * step)] for i in range(count)]
