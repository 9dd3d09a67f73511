"""A simulated AWS account in moto: a HyperPod cluster, FSx, CloudWatch metrics, health logs.

moto's HyperPod model is thin (see the design's "Testing without AWS"), so this EXTENDS it
rather than faking whole clients:
- DescribeCluster gains `NodeRecovery` and `Orchestrator` (moto drops both);
- DescribeClusterNode gains `Placement`, `UltraServerInfo` and `PrivateDnsHostname`, and
  ListClusterNodes' summaries the last two (the API's ClusterNodeSummary has no Placement);
- node ids become real-looking instance ids (moto uses `<group>-<n>`), and each node gets the
  `arn` attribute moto's ListClusterNodes paginator keys its tokens on;
- an FSx for Lustre file system gets its `LustreConfiguration.MountName` (output-only in the
  real API, so the create call cannot pass it) and, when asked, the `MetadataConfiguration` that
  DescribeFileSystems reports (in AUTOMATIC mode FSx fills in the Iops it provisioned);
- file-system ids are real-looking and derived from the seed (moto draws `fs-<8 random hex>`):
  two demo runs then report the same file system, and `report diff` of them shows no finding
  "new" and "resolved" that only changed its id.
Used by the offline demo, the state-machine tests and the integration tests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.fsx.models import fsx_backends
from moto.sagemaker import models as sagemaker_models

from hyperpod_perf_dev.sim.lustre_load import put_lustre_load

ACCOUNT = DEFAULT_ACCOUNT_ID


@dataclass
class NodeSeed:
    instance_id: str
    az: str | None = "us-west-2a"
    az_id: str | None = "usw2-az1"
    ultraserver_id: str | None = None
    hostname: str | None = None


@dataclass
class GroupSeed:
    name: str
    instance_type: str
    nodes: list[NodeSeed]
    deep_health_checks: list[str] = field(default_factory=list)


def _describe_cluster(original: Callable[[Any], dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
    def describe(self: Any) -> dict[str, Any]:
        result = original(self)
        extra = getattr(self, "hpd_extra", {})
        for key in ("NodeRecovery", "Orchestrator"):
            if extra.get(key) is not None:
                result[key] = extra[key]
        return result

    return describe


def _describe_node(original: Callable[[Any], dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
    def describe(self: Any) -> dict[str, Any]:
        result = original(self)
        result.update(getattr(self, "hpd_extra", {}))
        return result

    return describe


def _node_summary(original: Callable[[Any], dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
    """ListClusterNodes' ClusterNodeSummary carries UltraServerInfo and PrivateDnsHostname, but no
    Placement (the API's shape, as botocore's service model for SageMaker defines it)."""

    def summary(self: Any) -> dict[str, Any]:
        result = original(self)
        extra = getattr(self, "hpd_extra", {})
        result.update({k: extra[k] for k in ("UltraServerInfo", "PrivateDnsHostname") if k in extra})
        return result

    return summary


def hyperpod_extensions() -> list[tuple[type, str, Callable[..., Any]]]:
    """(class, attribute, replacement) for moto's Cluster/ClusterNode describe and summary methods."""
    return [
        (sagemaker_models.Cluster, "describe", _describe_cluster(sagemaker_models.Cluster.describe)),
        (sagemaker_models.ClusterNode, "describe", _describe_node(sagemaker_models.ClusterNode.describe)),
        (sagemaker_models.ClusterNode, "summary", _node_summary(sagemaker_models.ClusterNode.summary)),
    ]


@contextmanager
def extended_hyperpod() -> Iterator[None]:
    """The extensions, for the duration of a block (tests use pytest's monkeypatch instead)."""
    patches = hyperpod_extensions()
    saved = [(cls, name, cls.__dict__[name]) for cls, name, _ in patches]
    for cls, name, replacement in patches:
        setattr(cls, name, replacement)
    try:
        yield
    finally:
        for cls, name, original in saved:
            setattr(cls, name, original)


def seed_cluster(
    client: Any,
    name: str,
    groups: Sequence[GroupSeed],
    *,
    region: str,
    node_recovery: str | None = None,
    orchestrator: Mapping[str, Any] | None = None,
) -> str:
    """Create the cluster in moto and give its nodes real ids, placement and UltraServer ids."""
    response = client.create_cluster(
        ClusterName=name,
        InstanceGroups=[
            {
                "InstanceCount": len(group.nodes),
                "InstanceGroupName": group.name,
                "InstanceType": group.instance_type,
                "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-hpd-lcs/", "OnCreate": "on_create.sh"},
                "ExecutionRole": f"arn:aws:iam::{ACCOUNT}:role/hpd-exec",
                "ThreadsPerCore": 1,
                **({"OnStartDeepHealthChecks": group.deep_health_checks} if group.deep_health_checks else {}),
            }
            for group in groups
        ],
        VpcConfig={"SecurityGroupIds": ["sg-0123456789abcdef0"], "Subnets": ["subnet-0123456789abcdef0"]},
    )
    backend = sagemaker_models.sagemaker_backends[ACCOUNT][region]
    cluster = backend.clusters[name]
    cluster.hpd_extra = {"NodeRecovery": node_recovery, "Orchestrator": orchestrator}
    old_nodes = cluster.nodes
    cluster.nodes = {}
    for group in groups:
        for index, seed in enumerate(group.nodes):
            node = old_nodes[f"{group.name}-{index}"]
            node.instance_id = seed.instance_id
            node.arn = f"{cluster.arn}/node/{seed.instance_id}"
            extra: dict[str, Any] = {}
            if seed.az or seed.az_id:
                extra["Placement"] = {
                    k: v for k, v in (("AvailabilityZone", seed.az), ("AvailabilityZoneId", seed.az_id)) if v
                }
            if seed.ultraserver_id:
                extra["UltraServerInfo"] = {"Id": seed.ultraserver_id}
            if seed.hostname:
                extra["PrivateDnsHostname"] = seed.hostname
            node.hpd_extra = extra
            cluster.nodes[seed.instance_id] = node
    return response["ClusterArn"]


def stable_file_system_id(key: str, taken: Mapping[str, object] | None = None) -> str:
    """`fs-` and 17 hex digits, as FSx spells them, from `key`; the first not in `taken` (a second
    file system of the same shape gets the next id: still the same from run to run)."""
    taken = taken or {}
    for n in range(len(taken) + 1):
        candidate = "fs-" + hashlib.sha256(f"hpd-sim-fsx:{key}:{n}".encode()).hexdigest()[:17]
        if candidate not in taken:
            return candidate
    raise AssertionError("unreachable: len(taken) + 1 candidates cannot all be taken")  # pragma: no cover


def seed_lustre(
    client: Any,
    *,
    region: str,
    capacity_gib: int,
    per_unit: int,
    mount_name: str,
    metadata: dict[str, Any] | None = None,
) -> str:
    """A PERSISTENT_2 SSD file system; `metadata` is the LustreConfiguration.MetadataConfiguration
    DescribeFileSystems reports (FSx fills `Iops` in AUTOMATIC mode, so it is set after creation)."""
    response = client.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=capacity_gib,
        StorageType="SSD",
        SubnetIds=["subnet-0123456789abcdef0"],
        LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": per_unit},
    )
    backend = fsx_backends[ACCOUNT][region]
    fs = backend.file_systems.pop(response["FileSystem"]["FileSystemId"])
    fs_id = stable_file_system_id(f"lustre:{mount_name}:{capacity_gib}:{per_unit}", backend.file_systems)
    fs.file_system_id = fs_id
    fs.dns_name = f"{fs_id}.fsx.{region}.amazonaws.com"
    fs.resource_arn = f"arn:aws:fsx:{region}:{ACCOUNT}:file-system/{fs_id}"
    backend.file_systems[fs_id] = fs
    fs.lustre_configuration = {**(fs.lustre_configuration or {}), "MountName": mount_name}
    if metadata is not None:
        fs.lustre_configuration["MetadataConfiguration"] = dict(metadata)
    return fs_id


def put_lustre_throughput(
    client: Any, fs_id: str, start: datetime, minutes: int, read_bytes_per_s: float, write_bytes_per_s: float
) -> None:
    """A constant load: one DataReadBytes/DataWriteBytes datapoint per minute (the Sum of that
    minute's bytes)."""
    put_lustre_load(client, fs_id, start, [(read_bytes_per_s, write_bytes_per_s)] * minutes)
