"""Every name a node goes by, in one place: the instance id and the names operators type.

Why: AWS names a HyperPod node by its EC2 instance id (ListClusterNodes, DescribeClusterNode,
the SSM target, BatchRebootClusterNodes' `NodeIds`), while the people on call name it by its host
name — the Slurm node name (`sinfo`, `scontrol`, `srun -w`), which on HyperPod is the private DNS
host name DescribeClusterNode reports as `PrivateDnsHostname` (`ip-10-1-125-188`), or on an
EKS-orchestrated cluster the Kubernetes node name (`kubectl get nodes`). A finding that names
only one of them sends the reader to a console to translate it; every output here shows both
(`label`), and every command that takes nodes accepts any of them (`resolve`).

The Kubernetes node name is shown only where it was read (a NodeList's `metadata.name`, whose
`spec.providerID` ends in the instance id: parse/topology.py), never guessed: AWS's developer
guide writes it as `<node-name>`. AWS's own HyperPod EKS workshop (awslabs/ai-on-sagemaker-hyperpod,
"kubectl get nodes") lists HyperPod nodes as `hyperpod-<instance id>`; since such a name carries
the id itself, `resolve` accepts it (and any name ending in `-i-<hex>`) without a lookup.

Pure: no AWS call, no I/O. The index is built from what a stage already holds (the cluster's
nodes, a report's node summaries, the snapshots' `meta` section).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hyperpod_perf.domain.findings import Finding

#: EC2 instance ids: `i-` and 8 or 17 hex digits (the SageMaker API's `NodeIds` pattern).
INSTANCE_ID_RE = re.compile(r"^i-[0-9a-f]{8,17}$")
#: A name that carries an instance id at its end: `hyperpod-i-0a1b…` (HyperPod EKS node names),
#: `sagemaker-cluster:<id>_<group>-i-…` (SSM targets).
_EMBEDDED_ID_RE = re.compile(r"(?:^|[-_:/])(?P<id>i-[0-9a-f]{8,17})$")
_IPV4_RE = re.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$")
#: How many close matches an unknown name's error lists, how close a match must be (difflib's
#: ratio) and how far below the closest one it may fall.
SUGGESTIONS = 3
SUGGESTION_CUTOFF = 0.6
SUGGESTION_BAND = 0.08


def normalise_host(value: str) -> str:
    """One form for every spelling of a host: `ip-10-1-2-3.ec2.internal:9400`, `10.1.2.3:9100`
    and `IP-10-1-2-3` are all `ip-10-1-2-3` (port dropped, lower case, the first label of an FQDN,
    a dotted IPv4 written as EC2's default host name `ip-a-b-c-d`)."""
    text = value.strip().lower()
    if text.startswith("[") or text.count(":") == 1:  # host:port (an IPv6 literal keeps its colons)
        text = text.rsplit(":", 1)[0].strip("[]")
    ip = _IPV4_RE.match(text)
    if ip:
        return "ip-" + "-".join(ip.groups())
    return text.split(".", 1)[0]


def embedded_instance_id(value: str) -> str | None:
    """The instance id a name carries (`i-…` itself, `hyperpod-i-…`), else None."""
    match = _EMBEDDED_ID_RE.search(value.strip().lower())
    return match["id"] if match else None


def node_label(node: str, host: str | None) -> str:
    """`ip-10-1-125-188 (i-0a1b2c3d4e5f60005)`: the name the operator types, then the one AWS
    takes; the node alone when no other name is known (or the other name is the same)."""
    if host and host != node:
        return f"{host} ({node})"
    return node


@dataclass(frozen=True)
class NodeName:
    """One node's names: `node` is how the run keys it (its instance id wherever one is known)."""

    node: str
    instance_id: str | None = None
    hostname: str | None = None  # the Slurm node name / private DNS host name, as reported
    kubernetes: str | None = None  # the Kubernetes node name (EKS), where it was read
    private_ip: str | None = None

    @property
    def host(self) -> str | None:
        """The name shown beside the id: the Kubernetes node name on EKS where known (what
        kubectl takes), else the host name's short form (what Slurm and ssh take)."""
        if self.kubernetes:
            return self.kubernetes
        return self.hostname.split(".", 1)[0] if self.hostname else None

    @property
    def label(self) -> str:
        return node_label(self.node, self.host)

    def aliases(self) -> list[str]:
        """Every spelling `resolve` accepts for this node."""
        names = [self.node, self.instance_id, self.hostname, self.kubernetes, self.private_ip]
        out = [n for n in names if n]
        out += [normalise_host(n) for n in (self.hostname, self.private_ip) if n]
        return list(dict.fromkeys(out))


class NodeNames:
    """The index: any alias -> the node key, and the node key -> its names."""

    def __init__(self, nodes: Iterable[NodeName] = ()) -> None:
        self._by_node: dict[str, NodeName] = {}
        self._alias: dict[str, str] = {}
        for entry in nodes:
            self.add(entry)

    def add(self, entry: NodeName) -> None:
        """A later entry for the same node fills in the names an earlier one lacked."""
        known = self._by_node.get(entry.node)
        if known is not None:
            entry = NodeName(
                entry.node,
                known.instance_id or entry.instance_id,
                known.hostname or entry.hostname,
                known.kubernetes or entry.kubernetes,
                known.private_ip or entry.private_ip,
            )
        self._by_node[entry.node] = entry
        for alias in entry.aliases():
            self._alias.setdefault(alias, entry.node)
            self._alias.setdefault(alias.lower(), entry.node)

    @classmethod
    def of(cls, nodes: Iterable[object], kubernetes: Mapping[str, str] | None = None) -> NodeNames:
        """From anything with the node fields the domain models carry: NodeSummary (`node`,
        `instance_id`, `hostname`) or ClusterNode (`instance_id`, `hostname`, `private_ip`);
        `kubernetes` maps instance ids to the Kubernetes node names read for them."""
        names = kubernetes or {}
        index = cls()
        for n in nodes:
            instance = getattr(n, "instance_id", None)
            key = getattr(n, "node", None) or instance
            if not key:
                continue
            index.add(
                NodeName(
                    key,
                    instance,
                    getattr(n, "hostname", None),
                    names.get(instance or key),
                    getattr(n, "private_ip", None),
                )
            )
        return index

    @classmethod
    def of_findings(cls, findings: Iterable[Finding]) -> NodeNames:
        """What the findings say themselves: a node-level finding whose evidence carries its host
        (`host`, as the metrics judge writes it) names the node both ways. For outputs that
        have findings and nothing else (`hyperpod-perf metrics`)."""
        index = cls()
        for f in findings:
            host = f.evidence.get("host") if f.node else None
            if f.node and isinstance(host, str) and host:
                instance = f.node if INSTANCE_ID_RE.match(f.node) else None
                index.add(NodeName(f.node, instance, host))
        return index

    def nodes(self) -> list[str]:
        """The node keys, in the order they were added."""
        return list(self._by_node)

    def __bool__(self) -> bool:
        return bool(self._by_node)

    def __len__(self) -> int:
        return len(self._by_node)

    def entry(self, name: str | None) -> NodeName | None:
        key = self.resolve(name)
        return self._by_node.get(key) if key else None

    def resolve(self, name: str | None) -> str | None:
        """The node key (instance id) any of its names stands for, else None.

        Tried in order: the name as given, lower case, its host form (`normalise_host`: FQDN,
        IP, port), then an instance id it carries (`hyperpod-i-…`)."""
        if not name:
            return None
        text = name.strip()
        for candidate in (text, text.lower(), normalise_host(text)):
            if candidate in self._alias:
                return self._alias[candidate]
        embedded = embedded_instance_id(text)
        return self._alias.get(embedded) if embedded else None

    def canonical(self, name: str) -> str:
        """The node key a name stands for, or the name itself when it is not a known node."""
        return self.resolve(name) or name

    def host(self, name: str | None) -> str | None:
        found = self.entry(name)
        return found.host if found else None

    def hostname(self, name: str | None) -> str | None:
        """The host name as reported (for JSON): the Slurm / private DNS host name."""
        found = self.entry(name)
        return found.hostname if found else None

    def label(self, name: str | None, *, cluster: str = "cluster") -> str:
        """`ip-10-1-125-188 (i-0a1b2c3d4e5f60005)`, the name itself when no other is known, and
        `cluster` for a cluster-level finding (no node)."""
        if not name:
            return cluster
        found = self.entry(name)
        return found.label if found else name

    def labels(self, names: Iterable[str]) -> list[str]:
        return [self.label(n) for n in names]

    def aliases(self) -> dict[str, str]:
        """alias -> node key, the node keys themselves left out."""
        return {alias: node for alias, node in self._alias.items() if alias != node}

    def suggestions(self, name: str, count: int = SUGGESTIONS) -> list[str]:
        """The known nodes whose names are closest to `name`, as labels (for "did you mean")."""
        spelled = {alias.lower(): node for alias, node in self._alias.items()}
        typed = normalise_host(name)
        scored = sorted(
            ((difflib.SequenceMatcher(None, typed, alias).ratio(), alias) for alias in spelled),
            reverse=True,
        )
        best = scored[0][0] if scored else 0.0
        # Host names share their `ip-10-1-` prefix, so every one is "close": only those about
        # as close as the closest are worth naming.
        close = [alias for score, alias in scored if score >= max(SUGGESTION_CUTOFF, best - SUGGESTION_BAND)]
        return list(dict.fromkeys(self.label(spelled[c]) for c in close))[:count]

    def resolve_all(self, names: Iterable[str]) -> tuple[list[str], list[str]]:
        """(node keys, in order and once each; the names that matched no node)."""
        found: list[str] = []
        unknown: list[str] = []
        for name in names:
            key = self.resolve(name)
            if key is None:
                unknown.append(name)
            elif key not in found:
                found.append(key)
        return found, unknown


#: What a node name typed on the command line may look like: a host name (FQDN too), an IP, an
#: instance id, a Kubernetes node name. Anything else is refused before any call.
NODE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$")


def split_node_names(names: Iterable[str]) -> tuple[list[str], list[str]]:
    """(instance ids, names to look up): an id, or a name carrying one (`hyperpod-i-…`), needs no
    lookup; a host name or IP needs the cluster's node list. Raises ValueError for a name that
    is none of these (one line, for a usage error)."""
    ids: list[str] = []
    lookup: list[str] = []
    for raw in names:
        name = raw.strip()
        if not NODE_NAME_RE.match(name):
            raise ValueError(f"node {raw[:80]!r} is not an instance id, host name or Kubernetes node name")
        embedded = embedded_instance_id(name)
        if embedded:
            ids.append(embedded)
        else:
            lookup.append(name)
    return list(dict.fromkeys(ids)), list(dict.fromkeys(lookup))


def unknown_nodes_message(unknown: Iterable[str], names: NodeNames, where: str) -> str:
    """`no node 'ip-10-1-125-18' in cluster c (8 nodes); closest: ip-10-1-125-188 (i-…)`: one
    line, for an exit-2 usage error."""
    missing = list(unknown)
    listed = ", ".join(repr(name[:80]) for name in missing)
    known = f"{len(names)} node(s)" if names else "no nodes"
    close = list(dict.fromkeys(c for name in missing for c in names.suggestions(name)))
    hint = f"; closest: {', '.join(close)}" if close else ""
    return (
        f"no node {listed} in {where} ({known}){hint} — a node is named by its instance id, host name "
        "or Kubernetes node name"
    )
