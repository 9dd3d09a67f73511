"""Domain models shared by every layer.

The finding shape is the contract with operators (CLI json, reports, notifications): its
field names are the ones the design lists and must not change without a schema bump.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator


class Severity(StrEnum):
    OK = "OK"
    INFO = "INFO"
    CONCERN = "CONCERN"

    @property
    def rank(self) -> int:
        """Order used to pick the worst severity of a group (CONCERN > INFO > OK)."""
        return {"OK": 0, "INFO": 1, "CONCERN": 2}[self.value]


class RunbookSection(StrEnum):
    """The runbook section a finding belongs to."""

    NCCL = "A"
    FILE_SYSTEM = "B"
    GPU = "G"
    RESOURCES = "I"
    COVERAGE = "C"
    COLLECTION = "X"


class Handoff(StrEnum):
    """Where the runbook routes a concern it does not own."""

    NODE_A = "hyperpod-node-debugger § A"
    NODE_F = "hyperpod-node-debugger § F"
    NODE_G = "hyperpod-node-debugger § G"
    NODE_I = "hyperpod-node-debugger § I"
    CLUSTER_A = "hyperpod-cluster-debugger § A"
    CLUSTER_B = "hyperpod-cluster-debugger § B"
    NCCL = "hyperpod-nccl"
    VERSIONS = "hyperpod-version-checker"
    SSM = "hyperpod-ssm"


class Finding(BaseModel):
    """One judged signal: what was measured, against what, and what to do next."""

    model_config = ConfigDict(frozen=True)

    node: str | None = None
    check: str
    severity: Severity
    section: RunbookSection
    summary: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    threshold: str | None = None
    next_step: str | None = None
    handoff: str | None = None


def worst(findings: list[Finding]) -> Severity:
    """The most severe severity among findings (OK when there are none)."""
    return max((f.severity for f in findings), key=lambda s: s.rank, default=Severity.OK)


def has_concern(findings: list[Finding]) -> bool:
    return any(f.severity is Severity.CONCERN for f in findings)


# --- The pipeline's input -------------------------------------------------------------------
# Every identifier that can reach an API call, an S3 key or the Session document is held to a
# strict pattern here, at the edge, so nothing downstream has to trust it.

CLUSTER_NAME_PATTERN = r"^[a-zA-Z0-9][-a-zA-Z0-9]{0,62}$"
# `[0-9]`, not `\d`: both regex engines (Python re, pydantic's Rust regex) match any Unicode digit with `\d`.
CLUSTER_ARN_PATTERN = r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:[0-9]{12}:cluster/[a-z0-9]{12}$"
INSTANCE_ID_PATTERN = r"^i-[0-9a-f]{8,17}$"
FSX_ID_PATTERN = r"^fs-[0-9a-f]{8,21}$"
S3_PREFIX_PATTERN = r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[A-Za-z0-9!_.*'()/-]{0,900})?$"
REGION_PATTERN = r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$"
#: CloudWatch Logs group names: 1-512 of [.-_/#A-Za-z0-9] (the CreateLogGroup rule).
LOG_GROUP_PATTERN = r"^[.\-_/#A-Za-z0-9]{1,512}$"


class TargetScope(StrEnum):
    AUTO = "auto"  # the focus nodes (from the event) plus a sample; all nodes when none named
    FOCUS = "focus"  # only the named nodes
    ALL = "all"  # every node of the cluster


class NotifyPolicy(StrEnum):
    ALWAYS = "always"
    CONCERN = "concern"


class DiagnoseRequest(BaseModel):
    """What to diagnose. The JSON form is the state machine's documented input."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    cluster: str = Field(min_length=1, max_length=200)
    region: str | None = Field(default=None, pattern=REGION_PATTERN, max_length=32)
    nodes: tuple[str, ...] = Field(default=(), max_length=2000)
    scope: TargetScope = TargetScope.AUTO
    sample_size: int = Field(default=8, ge=0, le=2000)
    reason: str = Field(default="on-demand", max_length=256)
    window_minutes: int = Field(default=180, ge=5, le=21600)
    fsx_ids: tuple[str, ...] = Field(default=(), max_length=20)
    nccl_s3_prefix: str | None = Field(default=None, pattern=S3_PREFIX_PATTERN)
    #: The training job's own logs (NCCL / PyTorch / libfabric), read by the job-log checks.
    job_logs_s3_prefix: str | None = Field(default=None, pattern=S3_PREFIX_PATTERN)
    job_logs_group: str | None = Field(default=None, pattern=LOG_GROUP_PATTERN)
    job_logs_filter: str | None = Field(default=None, max_length=1024)
    notify: NotifyPolicy | None = None

    @field_validator("cluster")
    @classmethod
    def _cluster_name_or_arn(cls, value: str) -> str:
        if re.match(CLUSTER_NAME_PATTERN, value) or re.match(CLUSTER_ARN_PATTERN, value):
            return value
        raise ValueError("cluster must be a HyperPod cluster name ([a-zA-Z0-9-], 1-63 chars) or cluster ARN")

    @field_validator("nodes")
    @classmethod
    def _instance_ids(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        bad = [v for v in values if not re.match(INSTANCE_ID_PATTERN, v)]
        if bad:
            raise ValueError(f"nodes must be EC2 instance ids (i-…); rejected: {bad[0][:40]!r}")
        return tuple(dict.fromkeys(values))

    @field_validator("fsx_ids")
    @classmethod
    def _fsx_ids(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        bad = [v for v in values if not re.match(FSX_ID_PATTERN, v)]
        if bad:
            raise ValueError(f"fsx_ids must be FSx file system ids (fs-…); rejected: {bad[0][:40]!r}")
        return tuple(dict.fromkeys(values))

    @field_validator("nccl_s3_prefix", "job_logs_s3_prefix")
    @classmethod
    def _no_dot_segments(cls, value: str | None, info: ValidationInfo) -> str | None:
        """`s3://b/runs/../other/` would read another prefix than the one named: no `.`/`..` segments."""
        if value is not None and any(part in {".", ".."} for part in value.split("/")[3:]):
            raise ValueError(f"{info.field_name} must not contain '.' or '..' path segments")
        return value

    @field_validator("job_logs_group")
    @classmethod
    def _plain_group(cls, value: str | None) -> str | None:
        """A log group name, not a path: `..` and `.` segments are refused (they only ever mean a mistake)."""
        if value is not None and (".." in value or "." in value.split("/")):
            raise ValueError("job_logs_group must not contain '..' or '.' path segments")
        return value

    @field_validator("job_logs_filter")
    @classmethod
    def _printable_filter(cls, value: str | None) -> str | None:
        """A CloudWatch filter pattern: one printable line (it is sent to the API and shown in reports)."""
        if value is not None and not value.isprintable():
            raise ValueError("job_logs_filter must be one line of printable characters")
        return value

    @field_validator("reason")
    @classmethod
    def _printable_reason(cls, value: str) -> str:
        """Free text that ends up in reports and e-mail subjects: one printable line."""
        return "".join(ch if ch.isprintable() else " " for ch in value).strip() or "on-demand"

    @property
    def cluster_name(self) -> str:
        """The name part (for ARNs: the cluster id) — safe as an S3 key segment."""
        return self.cluster.rsplit("/", 1)[-1]


# --- The report ------------------------------------------------------------------------------
# One model for every rendering (JSON, Markdown, HTML, e-mail, Slack) and for history diffs.

REPORT_SCHEMA_VERSION = "1.0"

#: SNS Publish: "Subjects must be ASCII text ... and must be less than 100 characters long."
SNS_SUBJECT_MAX_CHARS = 99


class GpuFigure(BaseModel):
    index: int
    temperature_c: float | None = None
    sm_clock_mhz: float | None = None
    max_sm_clock_mhz: float | None = None


class NodeSummary(BaseModel):
    """One node as the fleet table shows it."""

    node: str
    instance_id: str | None = None
    hostname: str | None = None
    instance_group: str | None = None
    instance_type: str | None = None
    availability_zone: str | None = None
    ultraserver_id: str | None = None  # NVL72 UltraServer the node belongs to (groups the node map)
    collection: str = "collected"  # collected | failed | not_collected
    collection_error: str | None = None
    gpus: list[GpuFigure] = Field(default_factory=list)
    figures: dict[str, float] = Field(default_factory=dict)  # key figures compared run to run
    raw_key: str | None = None


class MetricPoint(BaseModel):
    timestamp: str
    value: float


class FileSystemSummary(BaseModel):
    file_system_id: str
    type: str  # LUSTRE | OPENZFS | ...
    provisioned_mbps: float | None = None
    storage_capacity_gib: float | None = None
    throughput_mbps: list[MetricPoint] = Field(default_factory=list)  # Lustre read+write
    iops_utilization_pct: list[MetricPoint] = Field(default_factory=list)  # OpenZFS
    mount_names: list[str] = Field(default_factory=list)


class NotChecked(BaseModel):
    """What could not be checked and why (partial failure is normal, never silent)."""

    what: str
    why: str


class RunInfo(BaseModel):
    execution: str | None = None
    started: str | None = None
    finished: str | None = None
    reason: str = "on-demand"
    window_minutes: int = 180
    region: str | None = None
    location: str | None = None  # s3://bucket/prefix/ of this report
    dashboard_url: str | None = None  # the deployment's CloudWatch dashboard (the fleet over time)


class ClusterSummary(BaseModel):
    name: str
    arn: str | None = None
    status: str | None = None
    orchestrator: str | None = None
    node_recovery: str | None = None
    node_count: int = 0


class HistoryDelta(BaseModel):
    previous_location: str | None = None
    new: list[Finding] = Field(default_factory=list)
    resolved: list[Finding] = Field(default_factory=list)
    still_present: list[Finding] = Field(default_factory=list)
    drift: list[dict[str, Any]] = Field(default_factory=list)


class Report(BaseModel):
    schema_version: str = REPORT_SCHEMA_VERSION
    cluster: ClusterSummary
    run: RunInfo = Field(default_factory=RunInfo)
    verdict: str = ""
    findings: list[Finding] = Field(default_factory=list)
    nodes: list[NodeSummary] = Field(default_factory=list)
    filesystems: list[FileSystemSummary] = Field(default_factory=list)
    nccl: dict[str, Any] | None = None
    not_checked: list[NotChecked] = Field(default_factory=list)
    history: HistoryDelta | None = None

    @property
    def concerns(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.CONCERN]
