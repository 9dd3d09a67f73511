"""Domain models for cluster-level diagnosis: what the AWS adapters return and the rules read.

Why a module of its own: the AWS adapters, the pure cluster rules and the diagnosis engine all
exchange these plain, frozen values, so rules never see a boto3 response dict and adapters never
see a Finding.

Every model here is `defer_build=True`: pydantic builds its validator and serializer on first use,
not at import. Every handler imports this module (through `domain.steps`), and most never build a
diagnosis result, a file system or a log record (cold start: docs/ARCHITECTURE.md; bench/RESULTS.md).
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hyperpod_perf.domain.findings import Finding
from hyperpod_perf.domain.report import NodeSummary

MB = 1_000_000  # FSx quotes throughput in MB/s (decimal megabytes)
#: FSx for Lustre sizes throughput per 1,000 GiB, not per 1,024: AWS's own example reads "for a
#: 2.4-TiB file system, provisioning 50 MB/s/TiB of throughput yields 120 MB/s" — a 2,400 GiB file
#: system is 2.4 "TiB" there (FSx for Lustre User Guide, "Aggregate file system performance").
LUSTRE_GIB_PER_TIB = 1000

#: NVL72 instance families: their GPUs share an NVLink domain only within one UltraServer.
NVL72_FAMILIES: tuple[str, ...] = ("p6e-gb200", "p6e-gb300")

_ACCELERATED_RE = re.compile(r"^(?:ml\.)?(?:p\d|g\d|trn\d|inf\d)", re.IGNORECASE)


def normalise_instance_type(instance_type: str | None) -> str | None:
    """`ml.p5.48xlarge` and `p5.48xlarge` are the same hardware."""
    if not instance_type:
        return None
    return instance_type.strip().removeprefix("ml.") or None


def is_accelerated(instance_type: str | None) -> bool:
    """GPU / Trainium / Inferentia types: the nodes a training job's collectives run on."""
    return bool(instance_type and _ACCELERATED_RE.match(instance_type.strip()))


def is_nvl72(instance_type: str | None) -> bool:
    normalised = normalise_instance_type(instance_type) or ""
    return any(normalised.startswith(family + ".") for family in NVL72_FAMILIES)


class Orchestrator(StrEnum):
    EKS = "Eks"
    SLURM = "Slurm"


class InstanceGroup(BaseModel):
    """One instance group as DescribeCluster reports it (what coverage advice must repeat)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    name: str
    instance_type: str | None = None
    current_count: int | None = None
    target_count: int | None = None
    execution_role: str | None = None
    life_cycle_config: dict[str, Any] | None = None
    threads_per_core: int | None = None
    on_start_deep_health_checks: tuple[str, ...] = ()


class ClusterInfo(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)

    name: str
    arn: str
    cluster_id: str
    region: str | None = None
    status: str | None = None
    orchestrator: Orchestrator = Orchestrator.SLURM
    #: The EKS cluster an EKS-orchestrated cluster runs on (DescribeCluster Orchestrator.Eks.ClusterArn).
    eks_cluster_arn: str | None = None
    node_recovery: str | None = None
    instance_groups: tuple[InstanceGroup, ...] = ()

    def group(self, name: str) -> InstanceGroup | None:
        return next((g for g in self.instance_groups if g.name == name), None)


class ClusterNode(BaseModel):
    """One node with its placement (DescribeClusterNode) and its SSM target name."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    instance_id: str
    group: str
    instance_type: str | None = None
    az: str | None = None
    az_id: str | None = None
    ultraserver_id: str | None = None
    #: Network nodes top layer first, where the cluster exposes them (EC2 DescribeInstanceTopology,
    #: EKS `topology.k8s.aws/network-node-layer-N`, Slurm topology): the pair analysis' layers.
    network_nodes: tuple[str, ...] = ()
    status: str | None = None
    status_message: str | None = None
    hostname: str | None = None
    private_ip: str | None = None
    ssm_target: str = ""

    @property
    def running(self) -> bool:
        return (self.status or "").lower() == "running"


def ssm_target(cluster_id: str, group: str, instance_id: str) -> str:
    """HyperPod nodes are SSM targets `sagemaker-cluster:<cluster-id>_<group>-<instance-id>`."""
    return f"sagemaker-cluster:{cluster_id}_{group}-{instance_id}"


class FileSystemType(StrEnum):
    LUSTRE = "LUSTRE"
    OPENZFS = "OPENZFS"
    ONTAP = "ONTAP"
    WINDOWS = "WINDOWS"


class FileSystemInfo(BaseModel):
    """An FSx file system with the figures that bound its performance."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    file_system_id: str
    type: str
    storage_capacity_gib: int | None = None
    deployment_type: str | None = None
    dns_name: str | None = None
    endpoint_ip: str | None = None  # OpenZFS: NFS clients may mount by IP
    lustre_mount_name: str | None = None
    per_unit_storage_throughput: int | None = None  # Lustre, MB/s per TiB
    throughput_capacity: int | None = None  # OpenZFS (and Lustre Intelligent-Tiering), MB/s
    iops_mode: str | None = None  # OpenZFS DiskIopsConfiguration.Mode
    iops: int | None = None
    owner_id: str | None = None
    # Lustre LustreConfiguration.MetadataConfiguration (PERSISTENT_2 with a metadata configuration)
    metadata_mode: str | None = None  # AUTOMATIC | USER_PROVISIONED
    metadata_iops: int | None = None

    @property
    def storage_capacity_tib(self) -> float | None:
        if self.storage_capacity_gib is None:
            return None
        return self.storage_capacity_gib / LUSTRE_GIB_PER_TIB

    @property
    def _throughput_per_tib(self) -> bool:
        """Lustre with PerUnitStorageThroughput: throughput scales with the storage capacity."""
        return bool(
            self.type == FileSystemType.LUSTRE
            and self.per_unit_storage_throughput
            and self.storage_capacity_tib
        )

    @property
    def provisioned_throughput_mbps(self) -> float | None:
        """Lustre: StorageCapacity (GiB) / 1000 x PerUnitStorageThroughput; otherwise ThroughputCapacity."""
        if self._throughput_per_tib:
            return self.storage_capacity_tib * self.per_unit_storage_throughput
        if self.throughput_capacity:
            return float(self.throughput_capacity)
        return None

    def provisioned_formula(self) -> str | None:
        """The figure as the operator would recompute it."""
        if self._throughput_per_tib:
            return (
                f"StorageCapacity {self.storage_capacity_gib} GiB ({self.storage_capacity_tib:.3g} TiB) x "
                f"PerUnitStorageThroughput {self.per_unit_storage_throughput} MB/s/TiB = "
                f"{self.provisioned_throughput_mbps:.0f} MB/s"
            )
        if self.throughput_capacity:
            return f"ThroughputCapacity {self.throughput_capacity} MB/s"
        return None


class MetricSeries(BaseModel):
    """One CloudWatch series (one metric, one statistic, one file system), oldest first."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    file_system_id: str
    metric: str
    stat: str
    period_s: int
    timestamps: tuple[datetime, ...] = ()
    values: tuple[float, ...] = ()
    status: str = "Complete"

    def points(self) -> dict[datetime, float]:
        return dict(zip(self.timestamps, self.values, strict=True))


class LogKind(StrEnum):
    DEEP_HEALTH = "deep_health"
    HMA = "hma"


class LogRecord(BaseModel):
    """One CloudWatch Logs event from the cluster's log group."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    kind: LogKind
    stream: str
    timestamp_ms: int | None = None
    message: str
    event_id: str | None = None


class LogFetch(BaseModel):
    """The records found, and whether the max-events bound cut the search short."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    log_group: str
    records: tuple[LogRecord, ...] = ()
    truncated: bool = False
    group_missing: bool = False


class FileSystemData(BaseModel):
    """The file systems a run looked at, their metric series, and which nodes mount each."""

    model_config = ConfigDict(defer_build=True)

    systems: list[FileSystemInfo] = Field(default_factory=list)
    series: list[MetricSeries] = Field(default_factory=list)
    nodes_by_fs: dict[str, list[str]] = Field(default_factory=dict)
    findings: list[Finding] = Field(default_factory=list)


class DiagnosisResult(BaseModel):
    """Findings plus the data a report needs to show what was looked at."""

    model_config = ConfigDict(defer_build=True)

    findings: list[Finding] = Field(default_factory=list)
    cluster: ClusterInfo | None = None
    nodes: list[ClusterNode] = Field(default_factory=list)
    file_systems: list[FileSystemInfo] = Field(default_factory=list)
    metrics: list[MetricSeries] = Field(default_factory=list)
    window_start: datetime | None = None
    window_end: datetime | None = None
    collected_nodes: list[str] = Field(default_factory=list)
    node_summaries: list[NodeSummary] = Field(default_factory=list)
    fs_data: FileSystemData = Field(default_factory=FileSystemData)
