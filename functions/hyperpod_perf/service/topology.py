"""The cluster's network placement, from whichever source answers; it never blocks a run.

Sources, in the order they are tried:
- EKS node labels (`topology.k8s.aws/network-node-layer-N`) for an EKS-orchestrated cluster whose
  configuration opts in (`kubernetesTopology`): what the Kubernetes scheduler itself places by.
- EC2 DescribeInstanceTopology for the cluster's accelerated instances (unverified for HyperPod,
  whose instances run in the service account: tried, and let fall back).
- Slurm's `scontrol show topology`, collected on the nodes (read in Evaluate, see
  pipeline/topology.py, and by `diagnose` from the snapshots).

A source that cannot answer becomes one INFO finding, "topology not available from <source>:
<why>", and a log line; the pair analysis then runs without layers, as it did before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hyperpod_perf.domain.cluster import ClusterInfo, ClusterNode, Orchestrator, is_accelerated
from hyperpod_perf.domain.errors import AwsAdapterError
from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.domain.report import NodeSummary
from hyperpod_perf.parse.slurm_topology import parse_scontrol_topology
from hyperpod_perf.parse.topology import from_instance_topology, from_node_list

log = logging.getLogger(__name__)

EC2 = "EC2 DescribeInstanceTopology"
EKS = "EKS node labels (topology.k8s.aws/network-node-layer-N)"
SLURM = "Slurm (scontrol show topology)"
CHECK = "nccl.fabric"


class InstanceTopologyPort(Protocol):
    def describe(self, instance_ids: Sequence[str]) -> dict[str, Any]: ...


class NodeLabelsPort(Protocol):
    def node_list(self, cluster_name: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class TopologySources:
    """The adapters to ask, and whether a cluster's configuration opts in to the Kubernetes API
    read (`kubernetesTopology`; asked only for an EKS-orchestrated cluster)."""

    instance_topology: InstanceTopologyPort | None = None
    node_labels: NodeLabelsPort | None = None
    kubernetes_opt_in: Callable[[ClusterInfo], bool] = lambda _cluster: False

    def kubernetes_for(self, cluster: ClusterInfo) -> bool:
        return self.node_labels is not None and self.kubernetes_opt_in(cluster)


@dataclass
class Placement:
    """Node (instance id and host name) -> network nodes, top layer first; where they came from."""

    layers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    source: str | None = None
    findings: list[Finding] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "layers": {k: list(v) for k, v in self.layers.items()}}


def not_available(source: str, why: str, detail: Mapping[str, Any] | None = None) -> Finding:
    log.info("topology not available from %s: %s", source, why)
    return Finding(
        check=CHECK,
        severity=Severity.INFO,
        section=RunbookSection.NCCL,
        summary=f"topology not available from {source}: {why}",
        evidence={"source": source, **(detail or {})},
        next_step="Slow pairs are judged without the network layers (a star still names its node); "
        "`hyperpod-perf nccl analyze --topology FILE` adds them offline.",
    )


def _unavailable(source: str, exc: AwsAdapterError) -> Finding:
    return not_available(source, f"{exc.reason}: {exc}"[:300], {"reason": exc.reason, "code": exc.code})


def _unexpected(source: str, exc: Exception) -> Finding:
    log.warning("topology source %s failed unexpectedly", source, exc_info=True)
    return not_available(source, f"{type(exc).__name__}: {exc}"[:300], {"reason": type(exc).__name__})


def keyed_by_host(
    layers: Mapping[str, tuple[str, ...]], nodes: Sequence[ClusterNode]
) -> dict[str, tuple[str, ...]]:
    """Layers by instance id, host name and short host name (the pair logs name hosts)."""
    out = dict(layers)
    for node in nodes:
        found = layers.get(node.instance_id) or (layers.get(node.hostname) if node.hostname else None)
        if not found:
            continue
        for name in (node.instance_id, node.hostname, (node.hostname or "").split(".", 1)[0]):
            if name:
                out.setdefault(name, found)
    return out


def with_network_nodes(
    nodes: Sequence[ClusterNode], layers: Mapping[str, tuple[str, ...]]
) -> list[ClusterNode]:
    """The nodes with their network nodes filled in where the placement knows them."""
    out = []
    for node in nodes:
        found = layers.get(node.instance_id) or (layers.get(node.hostname) if node.hostname else None)
        out.append(node.model_copy(update={"network_nodes": tuple(found)}) if found else node)
    return out


def _from_kubernetes(cluster: ClusterInfo, port: NodeLabelsPort) -> dict[str, tuple[str, ...]]:
    name = (cluster.eks_cluster_arn or "").rsplit("/", 1)[-1]
    if not name:
        raise AwsAdapterError("DescribeCluster named no EKS cluster (Orchestrator.Eks.ClusterArn)")
    return from_node_list(port.node_list(name))


def _ask(
    source: str, read: Callable[[], dict[str, tuple[str, ...]]], empty: str, placement: Placement
) -> dict[str, tuple[str, ...]]:
    """One source's layers, or {} with its INFO finding (never an exception: the layers only help)."""
    try:
        layers = read()
    except AwsAdapterError as exc:
        placement.findings.append(_unavailable(source, exc))
        return {}
    except Exception as exc:  # an optional help for the pair analysis must never stop a run
        placement.findings.append(_unexpected(source, exc))
        return {}
    if not layers:
        placement.findings.append(not_available(source, empty))
    return layers


def cluster_placement(
    cluster: ClusterInfo, nodes: Sequence[ClusterNode], sources: TopologySources
) -> Placement:
    """The first source that places any node; one INFO finding per source that could not."""
    placement = Placement()
    port = sources.node_labels
    if cluster.orchestrator is Orchestrator.EKS and port is not None and sources.kubernetes_for(cluster):
        layers = _ask(
            EKS,
            lambda: _from_kubernetes(cluster, port),
            "no HyperPod node carries the layer labels",
            placement,
        )
        if layers:
            placement.layers, placement.source = keyed_by_host(layers, nodes), EKS
            return placement
    if sources.instance_topology is not None:
        ec2 = sources.instance_topology
        accelerated = [n.instance_id for n in nodes if is_accelerated(n.instance_type)]
        ids = accelerated or [n.instance_id for n in nodes]
        why = f"no network nodes for any of {len(ids)} instance(s)"
        layers = _ask(EC2, lambda: from_instance_topology(ec2.describe(ids)) if ids else {}, why, placement)
        if layers:
            placement.layers, placement.source = keyed_by_host(layers, nodes), EC2
    return placement


def slurm_placement(texts: Sequence[str], nodes: Sequence[ClusterNode] = ()) -> Placement:
    """The first `scontrol show topology` output that places any node (they are the same cluster-wide)."""
    problems: list[str] = []
    for text in texts:
        topology = parse_scontrol_topology(text)
        problems.extend(topology.problems)
        if topology.layers:
            return Placement(keyed_by_host(topology.layers, nodes), SLURM)
    why = "no topology plugin configured (scontrol printed no switch or block)"
    return Placement(findings=[not_available(SLURM, why, {"problems": problems[:5]} if problems else None)])


def with_layers(summaries: Sequence[NodeSummary], layers: Mapping[str, Sequence[str]]) -> list[NodeSummary]:
    """Fleet rows with the network nodes the placement knows (CollectNode's rows carry none)."""
    out = []
    for row in summaries:
        found = None if row.network_nodes else _lookup(layers, row)
        out.append(row.model_copy(update={"network_nodes": list(found)}) if found else row)
    return out


def _lookup(layers: Mapping[str, Sequence[str]], row: NodeSummary) -> Sequence[str] | None:
    for name in (row.instance_id, row.hostname, (row.hostname or "").split(".", 1)[0], row.node):
        if name and layers.get(name):
            return layers[name]
    return None
