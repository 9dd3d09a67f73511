"""The network placement a cluster exposes, as one map: node name -> network nodes, top layer first.

Two documented shapes, pure parsing:
- EC2 `DescribeInstanceTopology` (`Instances[].NetworkNodes`, "a top-down view of the network
  hierarchy, with the bottom node connected to an instance"), keyed by instance id. For HyperPod
  instances the call may answer nothing (they run in the service's account: "the nodes are hashed
  based on your account"); an empty map then means "not known", never "one layer".
- A Kubernetes NodeList (`kubectl get nodes -o json`) whose nodes carry
  `topology.k8s.aws/network-node-layer-N` (EKS, HyperPod EKS), keyed by node name, with the
  instance id from `spec.providerID` (`aws:///<zone>/<instance id>`) as a second key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

LAYER_LABEL = "topology.k8s.aws/network-node-layer-"
MAX_LAYERS = 4
_PROVIDER_ID = re.compile(r"^aws:///[^/]*/(?P<instance>i-[0-9a-f]{8,17})$")


class TopologyError(ValueError):
    """The document is neither a DescribeInstanceTopology response nor a NodeList."""


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


def parse_topology(text: str) -> dict[str, tuple[str, ...]]:
    """Either document, told apart by its shape."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TopologyError(f"not JSON: {exc.msg} at line {exc.lineno}") from exc
    if isinstance(document, dict) and "Instances" in document:
        return from_instance_topology(document)
    if isinstance(document, dict) and document.get("kind") == "NodeList":
        return from_node_list(document)
    raise TopologyError(
        "expected `aws ec2 describe-instance-topology` output (Instances) or `kubectl get nodes -o json` "
        "(a NodeList)"
    )
