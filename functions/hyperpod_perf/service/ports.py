"""What the diagnosis needs from the AWS adapters: structural Protocols, so fakes are plain classes.

The service imports no adapter: the adapters raise, and the service catches, the named errors of
`domain.errors` (pure exceptions, no boto3). The node runner's Protocol lives with the collection
(`collect.runner.NodeRunner`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from hyperpod_perf.domain.cluster import ClusterInfo, ClusterNode, FileSystemInfo, LogFetch, MetricSeries
from hyperpod_perf.domain.errors import AwsAdapterError


class ClustersPort(Protocol):
    def describe_cluster(self, cluster: str) -> ClusterInfo: ...
    def list_nodes(self, cluster: str, cluster_id: str) -> list[ClusterNode]: ...
    def describe_nodes(
        self, cluster: str, cluster_id: str, instance_ids: Sequence[str]
    ) -> tuple[list[ClusterNode], dict[str, AwsAdapterError]]: ...


class FsxPort(Protocol):
    def describe(
        self, file_system_ids: Sequence[str]
    ) -> tuple[list[FileSystemInfo], dict[str, AwsAdapterError]]: ...
    def list_all(self) -> list[FileSystemInfo]: ...


class MetricsPort(Protocol):
    def fetch(
        self,
        file_systems: Sequence[FileSystemInfo],
        start: datetime,
        end: datetime,
        *,
        now: datetime | None = None,
    ) -> list[MetricSeries]: ...


class LogsPort(Protocol):
    def fetch(
        self, cluster_name: str, cluster_id: str, start: datetime, end: datetime, *, max_events: int = 2000
    ) -> LogFetch: ...
