"""The network placement a cluster exposes, as one map: node name -> network nodes, top layer first.

Two documented shapes, pure parsing:
- EC2 `DescribeInstanceTopology` (`Instances[].NetworkNodes`, "a top-down view of the network
  hierarchy, with the bottom node connected to an instance"), keyed by instance id. For HyperPod
  instances the call may answer nothing (they run in the service's account: "the nodes are hashed
  based on your account"); an empty map then means "not known", never "one layer".
- A Kubernetes NodeList (`kubectl get nodes -o json`) whose nodes carry
  `topology.k8s.aws/network-node-layer-N` (EKS, HyperPod EKS), keyed by node name, with the
  instance id from `spec.providerID` as a second key: `aws:///<zone>/<instance id>` on EKS nodes,
  `aws:///<zone id>/sagemaker/cluster/hyperpod-<cluster id>-<instance id>` on HyperPod nodes
  (aws/amazon-vpc-cni-k8s test/integration/ipamd/hyperpod_common.go); both end in the instance id.

And, for `nccl analyze --topology FILE`, two simpler forms: a JSON object mapping each host (or
instance id) to its network nodes, top layer first (`{"ip-10-1-0-1": ["nn-top", "nn-spine0"]}`),
and the text `scontrol show topology` prints (parse/slurm_topology.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

LAYER_LABEL = "topology.k8s.aws/network-node-layer-"
MAX_LAYERS = 4
_PROVIDER_ID = re.compile(r"^aws:///[^/]*/(?:[^/]+/)*(?:[A-Za-z0-9-]+-)?(?P<instance>i-[0-9a-f]{8,17})$")


class TopologyError(ValueError):
    """The document is none of the shapes this module reads."""


def from_instance_topology(response: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for instance in response.get("Instances") or []:
        nodes = tuple(str(n) for n in instance.get("NetworkNodes") or [] if n)
        if instance.get("InstanceId") and nodes:
            out[str(instance["InstanceId"])] = nodes
    return out


def layers_from_labels(labels: Mapping[str, Any]) -> tuple[str, ...]:
    """Layer 1, 2, ... in order, up to the first missing one."""
    layers: list[str] = []
    for n in range(1, MAX_LAYERS + 1):
        value = labels.get(f"{LAYER_LABEL}{n}")
        if not value:
            break
        layers.append(str(value))
    return tuple(layers)


def from_node_list(node_list: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for item in node_list.get("items") or []:
        metadata = item.get("metadata") or {}
        layers = layers_from_labels(metadata.get("labels") or {})
        if not layers:
            continue
        for name in (metadata.get("name"), (metadata.get("labels") or {}).get("kubernetes.io/hostname")):
            if name:
                out[str(name)] = layers
        match = _PROVIDER_ID.match(str((item.get("spec") or {}).get("providerID") or ""))
        if match:
            out[match["instance"]] = layers
    return out


def from_layer_mapping(document: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """`{"host": ["nn-top", ...]}`: each value a list of network node ids, top layer first."""
    out: dict[str, tuple[str, ...]] = {}
    for host, layers in document.items():
        if not isinstance(layers, list) or not all(isinstance(v, str) and v for v in layers):
            raise TopologyError(f"{str(host)[:60]!r}: expected a list of network node ids, top layer first")
        if len(layers) > MAX_LAYERS:
            raise TopologyError(f"{str(host)[:60]!r}: more than {MAX_LAYERS} layers")
        if layers:
            out[str(host)] = tuple(layers)
    return out


def _is_layer_mapping(document: Any) -> bool:
    """An object of lists with at least one network node in it (`{"Reservations": []}` is not one)."""
    return (
        isinstance(document, dict)
        and all(isinstance(v, list) for v in document.values())
        and any(v for v in document.values())
    )


def parse_topology(text: str) -> dict[str, tuple[str, ...]]:
    """Any of the shapes above, told apart by their form."""
    from hyperpod_perf.parse.slurm_topology import looks_like_scontrol_topology, parse_scontrol_topology

    if looks_like_scontrol_topology(text):
        return parse_scontrol_topology(text).layers
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TopologyError(f"not JSON: {exc.msg} at line {exc.lineno}") from exc
    if isinstance(document, dict) and "Instances" in document:
        return from_instance_topology(document)
    if isinstance(document, dict) and document.get("kind") == "NodeList":
        return from_node_list(document)
    if _is_layer_mapping(document):
        return from_layer_mapping(document)
    raise TopologyError(
        "expected `aws ec2 describe-instance-topology` output (Instances), `kubectl get nodes -o json` "
        "(a NodeList), a JSON object of host -> [network node, ...] (top layer first), or the text of "
        "`scontrol show topology`"
    )
