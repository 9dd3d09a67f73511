"""What to diagnose: the pipeline's and the CLI's input, held to strict patterns at the edge."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from hyperpod_perf.domain.alarm import AlarmContext

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
    #: The CloudWatch alarm that started the run (set by the trigger): the verdict answers it.
    alarm: AlarmContext | None = None
    #: The repair HyperPod announced for the named nodes (node health event `RepairAction`).
    repair_action: Literal["Reboot", "Replace"] | None = None
    #: The named nodes are back after a repair: judge them against their last report and the fleet.
    after_repair: bool = False

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
