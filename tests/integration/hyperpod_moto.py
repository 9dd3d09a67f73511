"""Seeding helpers for a HyperPod cluster, FSx, CloudWatch and Logs in moto.

moto's HyperPod model is thin (see the design's "Testing without AWS"), so these helpers EXTEND
it rather than fake whole clients:
- DescribeCluster gains `NodeRecovery` and `Orchestrator` (moto drops both);
- DescribeClusterNode gains `Placement`, `UltraServerInfo` and `PrivateDnsHostname` (moto has none);
- node ids become real-looking instance ids (moto uses `<group>-<n>`), and each node gets the
  `arn` attribute moto's ListClusterNodes paginator keys its tokens on (without it, page two
  restarts at page one);
- an FSx for Lustre file system gets its `LustreConfiguration.MountName` (output-only in the
  real API, so the create call cannot pass it).
The extensions are applied with pytest's monkeypatch, so they end with each test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.fsx.models import fsx_backends
from moto.sagemaker import models as sagemaker_models

REGION = "us-west-2"
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


def extend_moto_hyperpod(monkeypatch: pytest.MonkeyPatch) -> None:
    """Teach moto's Cluster/ClusterNode the fields HyperPod returns and moto leaves out."""
    cluster_describe = sagemaker_models.Cluster.describe
    node_describe = sagemaker_models.ClusterNode.describe

    def describe_cluster(self: Any) -> dict[str, Any]:
        result = cluster_describe(self)
        extra = getattr(self, "hpd_extra", {})
        if extra.get("NodeRecovery") is not None:
            result["NodeRecovery"] = extra["NodeRecovery"]
        if extra.get("Orchestrator") is not None:
            result["Orchestrator"] = extra["Orchestrator"]
        return result

    def describe_node(self: Any) -> dict[str, Any]:
        result = node_describe(self)
        result.update(getattr(self, "hpd_extra", {}))
        return result

    monkeypatch.setattr(sagemaker_models.Cluster, "describe", describe_cluster)
    monkeypatch.setattr(sagemaker_models.ClusterNode, "describe", describe_node)


def seed_cluster(
    client: Any,
    name: str,
    groups: Sequence[GroupSeed],
    *,
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
    backend = sagemaker_models.sagemaker_backends[ACCOUNT][REGION]
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


def seed_lustre(client: Any, *, capacity_gib: int, per_unit: int, mount_name: str) -> str:
    response = client.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=capacity_gib,
        StorageType="SSD",
        SubnetIds=["subnet-0123456789abcdef0"],
        LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": per_unit},
    )
    fs_id = response["FileSystem"]["FileSystemId"]
    fs = fsx_backends[ACCOUNT][REGION].file_systems[fs_id]
    fs.lustre_configuration = {**(fs.lustre_configuration or {}), "MountName": mount_name}
    return fs_id


def put_lustre_throughput(
    client: Any, fs_id: str, start: datetime, minutes: int, read_bytes_per_s: float, write_bytes_per_s: float
) -> None:
    """One DataReadBytes/DataWriteBytes datapoint per minute (the Sum of that minute's bytes)."""
    from datetime import timedelta

    data = []
    for minute in range(minutes):
        stamp = start + timedelta(minutes=minute)
        for metric, rate in (("DataReadBytes", read_bytes_per_s), ("DataWriteBytes", write_bytes_per_s)):
            data.append(
                {
                    "MetricName": metric,
                    "Dimensions": [{"Name": "FileSystemId", "Value": fs_id}],
                    "Timestamp": stamp,
                    "Value": rate * 60,
                    "Unit": "Bytes",
                }
            )
    for offset in range(0, len(data), 500):
        client.put_metric_data(Namespace="AWS/FSx", MetricData=data[offset : offset + 500])
