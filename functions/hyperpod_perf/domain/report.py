"""The report: one model for every rendering (JSON, Markdown, HTML, e-mail, Slack) and history diffs.

Every model here is `defer_build=True`: pydantic builds its validator and serializer on first use,
not at import. Every handler imports this module (through `domain.steps`), and most never build a
report (cold start: docs/ARCHITECTURE.md; bench/RESULTS.md).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hyperpod_perf.domain.alarm import AlarmContext
from hyperpod_perf.domain.findings import Finding, Severity

# --- The report ------------------------------------------------------------------------------
# One model for every rendering (JSON, Markdown, HTML, e-mail, Slack) and for history diffs.

REPORT_SCHEMA_VERSION = "1.3"

#: SNS Publish: "Subjects must be ASCII text ... and must be less than 100 characters long."
SNS_SUBJECT_MAX_CHARS = 99


class GpuFigure(BaseModel):
    model_config = ConfigDict(defer_build=True)

    index: int
    temperature_c: float | None = None
    sm_clock_mhz: float | None = None
    max_sm_clock_mhz: float | None = None
    serial: str | None = None  # board serial: follows the GPU when it moves to another instance
    uuid: str | None = None


class NodeSummary(BaseModel):
    """One node as the fleet table shows it."""

    model_config = ConfigDict(defer_build=True)

    node: str
    instance_id: str | None = None
    hostname: str | None = None
    instance_group: str | None = None
    instance_type: str | None = None
    availability_zone: str | None = None
    ultraserver_id: str | None = None  # NVL72 UltraServer the node belongs to (groups the node map)
    #: The node's network nodes, top layer first (EC2 instance topology / EKS network-node-layer labels).
    network_nodes: list[str] = Field(default_factory=list)
    efa_devices: list[str] = Field(default_factory=list)
    collection: str = "collected"  # collected | failed | not_collected
    collection_error: str | None = None
    gpus: list[GpuFigure] = Field(default_factory=list)
    figures: dict[str, float] = Field(default_factory=dict)  # key figures compared run to run
    raw_key: str | None = None


class MetricPoint(BaseModel):
    model_config = ConfigDict(defer_build=True)

    timestamp: str
    value: float


class FileSystemSummary(BaseModel):
    model_config = ConfigDict(defer_build=True)

    file_system_id: str
    type: str  # LUSTRE | OPENZFS | ...
    provisioned_mbps: float | None = None
    storage_capacity_gib: float | None = None
    throughput_mbps: list[MetricPoint] = Field(default_factory=list)  # Lustre read+write
    iops_utilization_pct: list[MetricPoint] = Field(default_factory=list)  # OpenZFS
    mount_names: list[str] = Field(default_factory=list)
    # FSx for Lustre beyond throughput: what fs.metadata, fs.ost_hot and fs.ost_full judge
    metadata_ops_per_s: list[MetricPoint] = Field(default_factory=list)
    metadata_ops_ceiling: float | None = None  # 2 x Metadata IOPS: file creates/opens/closes per second
    hottest_ost_pct: list[MetricPoint] = Field(default_factory=list)  # % of its share of provisioned
    ost_count: int | None = None
    fullest_ost_used_pct: float | None = None


class NotChecked(BaseModel):
    """What could not be checked and why (partial failure is normal, never silent)."""

    model_config = ConfigDict(defer_build=True)

    what: str
    why: str


class RunInfo(BaseModel):
    model_config = ConfigDict(defer_build=True)

    execution: str | None = None
    started: str | None = None
    finished: str | None = None
    reason: str = "on-demand"
    window_minutes: int = 180
    region: str | None = None
    location: str | None = None  # s3://bucket/prefix/ of this report
    dashboard_url: str | None = None  # the deployment's CloudWatch dashboard (the fleet over time)
    alarm: AlarmContext | None = None  # the CloudWatch alarm that started the run


class ClusterSummary(BaseModel):
    model_config = ConfigDict(defer_build=True)

    name: str
    arn: str | None = None
    status: str | None = None
    orchestrator: str | None = None
    node_recovery: str | None = None
    node_count: int = 0


class HistoryDelta(BaseModel):
    model_config = ConfigDict(defer_build=True)

    previous_location: str | None = None
    new: list[Finding] = Field(default_factory=list)
    resolved: list[Finding] = Field(default_factory=list)
    still_present: list[Finding] = Field(default_factory=list)
    drift: list[dict[str, Any]] = Field(default_factory=list)


class Report(BaseModel):
    model_config = ConfigDict(defer_build=True)

    schema_version: str = REPORT_SCHEMA_VERSION
    cluster: ClusterSummary
    run: RunInfo = Field(default_factory=RunInfo)
    verdict: str = ""
    findings: list[Finding] = Field(default_factory=list)
    nodes: list[NodeSummary] = Field(default_factory=list)
    filesystems: list[FileSystemSummary] = Field(default_factory=list)
    nccl: dict[str, Any] | None = None
    #: The metrics stage's verdict less its findings (they are in `findings`): source, window,
    #: nodes seen, suspects, exporters missing, and one small chart per finding.
    metrics: dict[str, Any] | None = None
    not_checked: list[NotChecked] = Field(default_factory=list)
    history: HistoryDelta | None = None

    @property
    def concerns(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.CONCERN]
