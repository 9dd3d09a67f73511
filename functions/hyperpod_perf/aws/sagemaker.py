"""HyperPod cluster and node facts from the SageMaker API (read-only).

Why: ListClusterNodes' summaries carry what choosing and reaching the nodes needs (instance type,
status, UltraServer, `PrivateDnsHostname`: the API's ClusterNodeSummary), asked for the largest page
(LIST_PAGE_SIZE, the API's maximum): 11 calls for 1,024 nodes. Only the placement (Availability
Zone) and the private IP need one DescribeClusterNode per node: on a 1,024-node cluster 1,024
calls, done DEFAULT_MAX_WORKERS at a time with a short back-off on throttling (and botocore's
adaptive retry mode, which slows the client down when the API throttles it), so a diagnosis
neither crawls nor trips the API's rate limit; the pipeline makes them beside the fan-out
(NodePlacement), not before it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.errors import translate_client_error
from hyperpod_perf.domain.cluster import ClusterInfo, ClusterNode, InstanceGroup, Orchestrator, ssm_target
from hyperpod_perf.domain.errors import AwsAdapterError, InvalidRequest, Throttled

CLUSTER_NAME_RE = re.compile(r"^[a-zA-Z0-9][-a-zA-Z0-9]{0,62}$")
#: The API's documented ARN form; the cluster id is 12 lowercase alphanumerics.
CLUSTER_ARN_RE = re.compile(
    r"^arn:aws[a-z-]*:sagemaker:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):cluster/(?P<id>[a-z0-9]{12})$"
)

#: At tens of milliseconds a call, 16 at once describe 1,024 nodes in a few seconds (8: twice that).
DEFAULT_MAX_WORKERS = 16
THROTTLE_RETRIES = 4
LIST_PAGE_SIZE = 100


def validate_cluster_identifier(value: str) -> str:
    """A cluster name or ARN, checked before any call so a typo never reaches the API."""
    candidate = (value or "").strip()
    if CLUSTER_NAME_RE.match(candidate) or CLUSTER_ARN_RE.match(candidate):
        return candidate
    raise InvalidRequest(
        f"{value!r} is neither a HyperPod cluster name (letters, digits and hyphens, 1-63 characters, "
        "starting with a letter or digit) nor a cluster ARN "
        "(arn:aws:sagemaker:<region>:<account>:cluster/<id>)",
        code="InvalidClusterIdentifier",
        context="sagemaker:DescribeCluster",
    )


def cluster_id_from_arn(arn: str) -> str:
    """The last ARN segment: HyperPod names SSM targets and log groups by it."""
    return arn.rsplit("/", 1)[-1]


def region_from_arn(arn: str) -> str | None:
    parts = arn.split(":")
    if len(parts) > 3 and parts[3]:
        return parts[3]
    return None


class HyperPodClusters:
    """Describe a cluster, list its nodes and describe each node's placement."""

    def __init__(
        self,
        client: Any,
        *,
        max_workers: int = DEFAULT_MAX_WORKERS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self._max_workers = max(1, max_workers)
        self._sleep = sleep

    def describe_cluster(self, cluster: str) -> ClusterInfo:
        identifier = validate_cluster_identifier(cluster)
        response = self._call("DescribeCluster", self._client.describe_cluster, ClusterName=identifier)
        return cluster_info_from_response(response)

    def list_nodes(self, cluster: str, cluster_id: str) -> list[ClusterNode]:
        """Every node as its ListClusterNodes summary describes it: no placement, no private IP."""
        return [cluster_node_from_details(summary, cluster_id) for summary in self._summaries(cluster)]

    def _summaries(self, cluster: str) -> list[dict[str, Any]]:
        identifier = validate_cluster_identifier(cluster)
        summaries: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"ClusterName": identifier, "MaxResults": LIST_PAGE_SIZE}
            if token:
                kwargs["NextToken"] = token
            page = self._call("ListClusterNodes", self._client.list_cluster_nodes, **kwargs)
            summaries.extend(s for s in page.get("ClusterNodeSummaries") or [] if s.get("InstanceId"))
            token = page.get("NextToken")
            if not token:
                return summaries

    def describe_node(self, cluster: str, cluster_id: str, instance_id: str) -> ClusterNode:
        identifier = validate_cluster_identifier(cluster)
        response = self._call(
            "DescribeClusterNode",
            self._client.describe_cluster_node,
            ClusterName=identifier,
            NodeId=instance_id,
        )
        return cluster_node_from_details(response.get("NodeDetails") or {}, cluster_id)

    def describe_nodes(
        self, cluster: str, cluster_id: str, instance_ids: Iterable[str]
    ) -> tuple[list[ClusterNode], dict[str, AwsAdapterError]]:
        """Describe many nodes concurrently; a node that fails is returned with its error, not raised."""
        ids = list(dict.fromkeys(instance_ids))
        nodes: dict[str, ClusterNode] = {}
        errors: dict[str, AwsAdapterError] = {}

        def one(instance_id: str) -> tuple[str, ClusterNode | AwsAdapterError]:
            try:
                return instance_id, self.describe_node(cluster, cluster_id, instance_id)
            except AwsAdapterError as exc:
                return instance_id, exc

        with ThreadPoolExecutor(max_workers=min(self._max_workers, max(1, len(ids)))) as pool:
            for instance_id, outcome in pool.map(one, ids):
                if isinstance(outcome, AwsAdapterError):
                    errors[instance_id] = outcome
                else:
                    nodes[instance_id] = outcome
        return [nodes[i] for i in ids if i in nodes], errors

    def _call(self, operation: str, method: Callable[..., dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        """One API call; throttling is retried with exponential back-off, the rest translated."""
        delay = 0.5
        for attempt in range(THROTTLE_RETRIES + 1):
            try:
                return method(**kwargs)
            except (ClientError, BotoCoreError) as exc:
                error = translate_client_error(exc, f"sagemaker:{operation}")
            if not isinstance(error, Throttled) or attempt == THROTTLE_RETRIES:
                raise error
            self._sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover


def cluster_info_from_response(response: dict[str, Any]) -> ClusterInfo:
    arn = response.get("ClusterArn") or ""
    orchestrator = Orchestrator.SLURM
    if "Eks" in (response.get("Orchestrator") or {}):
        orchestrator = Orchestrator.EKS
    return ClusterInfo(
        name=response.get("ClusterName") or cluster_id_from_arn(arn),
        arn=arn,
        cluster_id=cluster_id_from_arn(arn),
        region=region_from_arn(arn),
        status=response.get("ClusterStatus"),
        orchestrator=orchestrator,
        eks_cluster_arn=((response.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn"),
        node_recovery=response.get("NodeRecovery"),
        instance_groups=tuple(_instance_group(g) for g in response.get("InstanceGroups") or []),
    )


def _instance_group(raw: dict[str, Any]) -> InstanceGroup:
    return InstanceGroup(
        name=raw.get("InstanceGroupName") or "",
        instance_type=raw.get("InstanceType"),
        current_count=raw.get("CurrentCount"),
        target_count=raw.get("TargetCount"),
        execution_role=raw.get("ExecutionRole"),
        life_cycle_config=raw.get("LifeCycleConfig"),
        threads_per_core=raw.get("ThreadsPerCore"),
        on_start_deep_health_checks=tuple(raw.get("OnStartDeepHealthChecks") or ()),
    )


def cluster_node_from_details(details: dict[str, Any], cluster_id: str) -> ClusterNode:
    """A node from DescribeClusterNode's NodeDetails or a ListClusterNodes summary (the same
    field names; a summary has no Placement and no PrivatePrimaryIp, which stay None)."""
    placement = details.get("Placement") or {}
    status = details.get("InstanceStatus") or {}
    group = details.get("InstanceGroupName") or ""
    instance_id = details.get("InstanceId") or ""
    return ClusterNode(
        instance_id=instance_id,
        group=group,
        instance_type=details.get("InstanceType"),
        az=placement.get("AvailabilityZone"),
        az_id=placement.get("AvailabilityZoneId"),
        ultraserver_id=(details.get("UltraServerInfo") or {}).get("Id"),
        status=status.get("Status"),
        status_message=status.get("Message"),
        hostname=details.get("PrivateDnsHostname"),
        private_ip=details.get("PrivatePrimaryIp"),
        ssm_target=ssm_target(cluster_id, group, instance_id),
    )
