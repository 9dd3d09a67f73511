"""Which cluster node a series belongs to, from the labels the exporters really carry.

How, in order (signals.NODE_LABELS): `instance_id` (an EC2 id, where a relabel adds it);
`Hostname` (dcgm-exporter's own label: the host's name); `node` (the Slurm exporter's node name,
kube-prometheus' node); `kubernetes_node`; `host`; `instance` (HyperPod's OTEL collector sets it to
the host name; plain Prometheus to `host:port`). Each value is normalised — port dropped, lower
case, the first label of an FQDN, and a dotted IPv4 written as EC2's default host name
`ip-a-b-c-d` — then matched against the cluster's instance ids, host names and private IPs.
Without a node list (a Prometheus URL and no cluster) the normalised name is the node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.domain.names import INSTANCE_ID_RE, normalise_host
from hyperpod_perf.metrics.signals import NODE_LABELS

#: One normal form for a host however a label spells it (the same as every other node lookup).
normalise = normalise_host


class NodeIndex:
    """Resolves a series' labels to a node id: the instance id where the cluster is known."""

    def __init__(self, nodes: Iterable[ClusterNode] = ()) -> None:
        self._names: dict[str, str] = {}
        self.hostnames: dict[str, str] = {}
        self.known: list[str] = []
        for node in nodes:
            self.known.append(node.instance_id)
            self._names[node.instance_id.lower()] = node.instance_id
            if node.hostname:
                self._names[normalise(node.hostname)] = node.instance_id
                self.hostnames[node.instance_id] = node.hostname
            if node.private_ip:
                self._names[normalise(node.private_ip)] = node.instance_id

    @property
    def discovering(self) -> bool:
        return not self.known

    def resolve(self, labels: Mapping[str, str], keys: Iterable[str] = NODE_LABELS) -> str | None:
        for key in keys:
            raw = labels.get(key)
            if not raw:
                continue
            if self.discovering:
                return raw.strip().lower() if INSTANCE_ID_RE.match(raw.strip().lower()) else normalise(raw)
            found = self._names.get(raw.strip().lower()) or self._names.get(normalise(raw))
            if found:
                return found
        return None

    def hostname_of(self, labels: Mapping[str, str]) -> str | None:
        for key in ("Hostname", "node", "kubernetes_node", "host", "instance"):
            if labels.get(key):
                return normalise(labels[key])
        return None
