"""What to diagnose: the pipeline's and the CLI's input, held to strict patterns at the edge."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationInfo, field_validator

from hyperpod_perf.domain.alarm import AlarmContext

# --- The pipeline's input -------------------------------------------------------------------
# Every identifier that can reach an API call, an S3 key or the Session document is held to a
# strict pattern here, at the edge, so nothing downstream has to trust it.

CLUSTER_NAME_PATTERN = r"^[a-zA-Z0-9][-a-zA-Z0-9]{0,62}$"
# `[0-9]`, not `\d`: both regex engines (Python re, pydantic's Rust regex) match any Unicode digit with `\d`.
#: The AWS partitions by name (a malformed `arn:awsx:` is refused) and a region of REGION_PATTERN's form.
PARTITION_PATTERN = r"aws(-cn|-us-gov|-iso|-iso-[a-z]|-eusc)?"
CLUSTER_ARN_PATTERN = (
    rf"^arn:{PARTITION_PATTERN}:sagemaker:[a-z]{{2}}(-gov)?-[a-z]+-[0-9]:[0-9]{{12}}:cluster/[a-z0-9]{{12}}$"
)
INSTANCE_ID_PATTERN = r"^i-[0-9a-f]{8,17}$"
FSX_ID_PATTERN = r"^fs-[0-9a-f]{8,21}$"
#: Amazon Managed Prometheus workspace ids (AMP API: `[0-9A-Za-z][-.0-9A-Z_a-z]*`, 1-64 chars).
AMP_WORKSPACE_PATTERN = r"^[0-9A-Za-z][-.0-9A-Z_a-z]{0,63}$"
S3_PREFIX_PATTERN = r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[A-Za-z0-9!_.*'()/-]{0,900})?$"
REGION_PATTERN = r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$"
#: CloudWatch Logs group names: 1-512 of [.-_/#A-Za-z0-9] (the CreateLogGroup rule).
LOG_GROUP_PATTERN = r"^[.\-_/#A-Za-z0-9]{1,512}$"


#: `Field(strict=False)` only on the containers and enums below: JSON has arrays, not tuples, and
#: an enum arrives as its string value. Their items and every scalar stay strict (no `"8"` -> 8).
Names = Annotated[tuple[StrictStr, ...], Field(strict=False)]


FUNCTION_ARN_PATTERN = r"arn:(aws[a-z-]*):lambda:([a-z0-9-]+):([0-9]{12}):function:[A-Za-z0-9_:.-]+"


@dataclass(frozen=True)
class Deployment:
    """Where the pipeline runs (partition, region, account), read from the invoked function's ARN.

    Why: a cluster ARN of another account, partition or region cannot be diagnosed by this
    deployment; refusing it at the edge says so instead of leaving IAM as the only guard."""

    partition: str
    region: str
    account: str

    @classmethod
    def from_function_arn(cls, arn: str | None) -> Deployment | None:
        match = re.fullmatch(FUNCTION_ARN_PATTERN, arn or "")
        return cls(*match.groups()) if match else None


#: Validation context keys (`DiagnoseRequest.model_validate(raw, context={...})`): what the
#: deployment allows beyond the patterns. Absent (the CLI with the caller's own credentials): not checked.
CONTEXT_DEPLOYMENT = "deployment"
#: `bucket/` or `bucket/prefix/` entries a request's s3:// prefixes must fall under.
CONTEXT_S3_PREFIXES = "readable_s3_prefixes"


def normalise_s3_prefix(value: str) -> str:
    """`s3://bucket` -> `s3://bucket/`; refuses empty (`//`), `.` and `..` key segments.

    Why refuse rather than collapse: S3 keys are not paths, `a//b` and `a/./b` are other keys
    than `a/b`, so a "cleaned" prefix would read objects the caller did not name."""
    bucket, _, key = value.removeprefix("s3://").partition("/")
    segments = key.split("/")
    inner = segments[:-1] if key.endswith("/") else segments
    if key and any(part in {"", ".", ".."} for part in inner):
        raise ValueError("must not contain empty ('//'), '.' or '..' path segments")
    return f"s3://{bucket}/{key}"


def s3_prefix_allowed(value: str, allowed: Sequence[str]) -> bool:
    """Whether `s3://bucket/key` falls under one of the `bucket/` / `bucket/prefix/` entries."""
    target = value.removeprefix("s3://")
    return any(target.startswith(entry if entry.endswith("/") else entry + "/") for entry in allowed)


class TargetScope(StrEnum):
    AUTO = "auto"  # the focus nodes (from the event) plus a sample; all nodes when none named
    FOCUS = "focus"  # only the named nodes
    ALL = "all"  # every node of the cluster


class NotifyPolicy(StrEnum):
    ALWAYS = "always"
    CONCERN = "concern"


class DiagnoseRequest(BaseModel):
    """What to diagnose. The JSON form is the state machine's documented input."""

    #: strict: `sample_size: true`, `"8"` or `60.0` are refused, never coerced to 1, 8, 60.
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, strict=True)

    cluster: str = Field(min_length=1, max_length=200)
    region: str | None = Field(default=None, pattern=REGION_PATTERN, max_length=32)
    nodes: Names = Field(default=(), max_length=2000)
    scope: Annotated[TargetScope, Field(strict=False)] = TargetScope.AUTO
    sample_size: int = Field(default=8, ge=0, le=2000)
    reason: str = Field(default="on-demand", max_length=256)
    window_minutes: int = Field(default=180, ge=5, le=21600)
    fsx_ids: Names = Field(default=(), max_length=20)
    nccl_s3_prefix: str | None = Field(default=None, pattern=S3_PREFIX_PATTERN)
    #: The training job's own logs (NCCL / PyTorch / libfabric), read by the job-log checks.
    job_logs_s3_prefix: str | None = Field(default=None, pattern=S3_PREFIX_PATTERN)
    job_logs_group: str | None = Field(default=None, pattern=LOG_GROUP_PATTERN)
    job_logs_filter: str | None = Field(default=None, max_length=1024)
    #: The cluster's Amazon Managed Prometheus workspace (set by the trigger from the configuration):
    #: the metrics stage reads every node's series over the window from it.
    prometheus_workspace_id: str | None = Field(default=None, pattern=AMP_WORKSPACE_PATTERN)
    #: With a metrics source, the SSM deep collection goes to the metrics verdict's suspects, the
    #: named nodes, the nodes without series and a spread sample ("suspects", the default then), or
    #: to every target ("all"). Without a source every target is collected.
    deep_collect: Literal["suspects", "all"] | None = None
    notify: Annotated[NotifyPolicy | None, Field(strict=False)] = None
    #: The CloudWatch alarm that started the run (set by the trigger): the verdict answers it.
    alarm: AlarmContext | None = None
    #: The repair HyperPod announced for the named nodes (node health event `RepairAction`).
    repair_action: Literal["Reboot", "Replace"] | None = None
    #: The named nodes are back after a repair: judge them against their last report and the fleet.
    after_repair: bool = False

    @field_validator("cluster")
    @classmethod
    def _cluster_name_or_arn(cls, value: str, info: ValidationInfo) -> str:
        if re.match(CLUSTER_NAME_PATTERN, value):
            return value
        if not re.match(CLUSTER_ARN_PATTERN, value):
            raise ValueError(
                "cluster must be a HyperPod cluster name ([a-zA-Z0-9-], 1-63 chars) or cluster ARN"
            )
        deployment = (info.context or {}).get(CONTEXT_DEPLOYMENT)
        if isinstance(deployment, Deployment):
            partition, _, region, account = value.split(":")[1:5]
            if (partition, region, account) != (deployment.partition, deployment.region, deployment.account):
                raise ValueError(
                    f"cluster ARN is in partition {partition}, region {region}, account {account}; "
                    f"this deployment diagnoses {deployment.partition}, {deployment.region}, "
                    f"{deployment.account} only"
                )
        return value

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
    def _s3_prefix(cls, value: str | None, info: ValidationInfo) -> str | None:
        """`s3://b/runs/../other/` would read another prefix than the one named: no `.`/`..`/empty
        segments; and, in a deployment, only under the buckets and prefixes it was configured to read."""
        if value is None:
            return None
        try:
            value = normalise_s3_prefix(value)
        except ValueError as exc:
            raise ValueError(f"{info.field_name} {exc}") from None
        allowed = (info.context or {}).get(CONTEXT_S3_PREFIXES)
        if allowed is not None and not s3_prefix_allowed(value, allowed):
            listed = ", ".join(f"s3://{a}" for a in allowed) or "none"
            raise ValueError(
                f"{info.field_name} names a bucket or prefix this deployment does not read "
                f"(configured: {listed}; see ncclResultBuckets)"
            )
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
