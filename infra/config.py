"""Typed deployment configuration: the deployer's JSON file, named on the CDK command line.

One way to pass it (docs/DEPLOY.md): `-c hyperpod-perf:config=hyperpod-perf.json` on every
`npx cdk` command (each one runs the app). Why a file name and not the JSON itself: the CDK CLI
keeps only the first line of a `-c key=value` value (aws-cdk 2.1148.1: `-c k="$(cat pretty.json)"`
reaches the app as `{`), so a pretty-printed file passed inline arrives broken. The context key
`hyperpod-perf` still takes an object or one line of JSON text (the tests build the app so), and
cdk.json carries no configuration: one place, the deployer's file.

Why validate here: a typo in the configuration (a wrong FSx id, an alarm prefix with a space) would
otherwise surface as a CloudFormation rollback minutes into a deploy, or worse, as a rule that
silently never matches. Pydantic rejects it at synth time with the offending path.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hyperpod_perf.domain.request import (
    AMP_WORKSPACE_PATTERN,
    CLUSTER_NAME_PATTERN,
    FSX_ID_PATTERN,
    Names,
    NotifyPolicy,
)

CONTEXT_KEY = "hyperpod-perf"
#: `-c hyperpod-perf:config=FILE`: the configuration file (DEPLOY.md's one way to pass it).
CONFIG_FILE_KEY = "hyperpod-perf:config"
#: `-c hyperpod-perf:allowEmpty=true`: deploy a stack with no cluster or no recipient on purpose.
ALLOW_EMPTY_KEY = "hyperpod-perf:allowEmpty"
#: How DEPLOY.md passes the configuration to every `npx cdk` command (bootstrap, deploy, diff,
#: destroy: each one runs the app), quoted in every message that tells the deployer how.
CONFIG_OPTION = f"-c {CONFIG_FILE_KEY}=hyperpod-perf.json"
#: A configuration file is a few kilobytes; anything far larger is the wrong file.
CONFIG_FILE_MAX_BYTES = 1_000_000

#: CloudWatch alarm names: 1-255 printable characters; we exclude the characters that would
#: make an EventBridge pattern or a log line ambiguous.
ALARM_NAME_PATTERN = r"^[A-Za-z0-9 _.:/()+=@#-]{1,255}$"
EMAIL_PATTERN = r"^[^@\s;<>]+@[^@\s;<>]+\.[A-Za-z]{2,}$"
SLACK_WORKSPACE_PATTERN = r"^[A-Z0-9]{1,255}$"
SLACK_CHANNEL_PATTERN = r"^[A-Za-z0-9]{1,255}$"
#: `bucket` or `bucket/prefix` (no scheme), where uploaded nccl-tests logs may be read from.
NCCL_BUCKET_PATTERN = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[A-Za-z0-9!_.*'()/-]{0,900})?$"
#: CloudWatch Logs group names the job-log step may read, optionally ending in `*` (a prefix).
JOB_LOG_GROUP_PATTERN = r"^[.\-_/#A-Za-z0-9]{1,511}\*?$"
ANY_SESSION_TARGET = "*"
#: A HyperPod cluster id: the 12 characters after `cluster/` in its ARN.
CLUSTER_ID_PATTERN = r"^[a-z0-9]{12}$"
SESSION_TARGET_ARN_PATTERN = r"^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:(\d{12})?:[A-Za-z0-9_/:.*-]+$"


class FsxType(StrEnum):
    LUSTRE = "LUSTRE"
    OPENZFS = "OPENZFS"


class _Strict(BaseModel):
    #: strict: `"mapMaxConcurrency": "30"` or `true` is a typo to report, not a value to coerce.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)


class FsxConfig(_Strict):
    id: str = Field(pattern=FSX_ID_PATTERN)
    type: Annotated[FsxType, Field(strict=False)]
    #: Lustre only: provisioned throughput in MB/s (StorageCapacity TiB x PerUnitStorageThroughput).
    #: Needed for the saturation alarm; without it the alarm is skipped (a synth warning says so).
    provisioned_mbps: float | None = Field(default=None, alias="provisionedMBps", gt=0)

    @model_validator(mode="after")
    def _throughput_only_for_lustre(self) -> FsxConfig:
        if self.type is FsxType.OPENZFS and self.provisioned_mbps is not None:
            raise ValueError(
                "provisionedMBps applies to LUSTRE only (OpenZFS publishes utilization percentages)"
            )
        return self


#: EKS cluster names: 1-100 characters, a letter or digit first, then letters, digits, - and _.
EKS_CLUSTER_NAME_PATTERN = r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$"


class KubernetesTopologyConfig(_Strict):
    """Opt-in: ResolveCluster reads the HyperPod nodes' network-layer labels from this EKS cluster's
    Kubernetes API (eks:DescribeCluster on it; Kubernetes read access as docs/DEPLOY.md grants it)."""

    eks_cluster_name: str = Field(alias="eksClusterName", pattern=EKS_CLUSTER_NAME_PATTERN)


class ClusterConfig(_Strict):
    name: str = Field(pattern=CLUSTER_NAME_PATTERN)
    #: The cluster id (the last segment of its ARN, `aws sagemaker describe-cluster --query
    #: ClusterArn`): with an id for every configured cluster, StartSession reaches only their nodes.
    id: str | None = Field(default=None, pattern=CLUSTER_ID_PATTERN)
    alarm_names: Names = Field(default=(), alias="alarmNames")
    alarm_prefixes: Names = Field(default=(), alias="alarmPrefixes")
    fsx: Annotated[tuple[FsxConfig, ...], Field(strict=False)] = ()
    kubernetes_topology: KubernetesTopologyConfig | None = Field(default=None, alias="kubernetesTopology")
    #: The Amazon Managed Service for Prometheus workspace the cluster's exporters write to
    #: (HyperPod observability: Slurm lifecycle scripts with enable_observability, or the EKS add-on).
    #: The metrics stage queries it (aps:QueryMetrics on this workspace only).
    prometheus_workspace_id: str | None = Field(
        default=None, alias="prometheusWorkspaceId", pattern=AMP_WORKSPACE_PATTERN
    )
    #: With a workspace: "suspects" (default) sends the SSM deep collection to the metrics verdict's
    #: suspects, the event's nodes, the nodes without series and a spread sample; "all" to every target.
    deep_collect: Literal["suspects", "all"] = Field(default="suspects", alias="deepCollect")

    @field_validator("alarm_names", "alarm_prefixes")
    @classmethod
    def _alarm_names(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        bad = [v for v in values if not re.match(ALARM_NAME_PATTERN, v)]
        if bad:
            raise ValueError(f"alarm names/prefixes must match {ALARM_NAME_PATTERN}; rejected: {bad[0]!r}")
        return values


class SlackConfig(_Strict):
    workspace_id: str = Field(alias="workspaceId", pattern=SLACK_WORKSPACE_PATTERN)
    channel_id: str = Field(alias="channelId", pattern=SLACK_CHANNEL_PATTERN)


class DeployConfig(_Strict):
    clusters: Annotated[tuple[ClusterConfig, ...], Field(strict=False)] = ()
    notification_emails: Names = Field(default=(), alias="notificationEmails")
    slack: SlackConfig | None = None
    notify_policy: Annotated[NotifyPolicy, Field(strict=False)] = Field(
        default=NotifyPolicy.ALWAYS, alias="notifyPolicy"
    )
    #: ~ the StartSession rate (3/s) x the time one node takes (~10 s): the rate limit, not the
    #: Map, then bounds the fan-out (a lower value leaves most of the rate unused).
    map_max_concurrency: int = Field(default=30, alias="mapMaxConcurrency", ge=1, le=1000)
    distributed_map_threshold: int = Field(default=200, alias="distributedMapThreshold", ge=1, le=100_000)
    node_sample_size: int = Field(default=8, alias="nodeSampleSize", ge=0, le=2000)
    #: StartSession is reported to be limited to ~3 TPS per account: stay under it by default.
    session_rate_per_second: float = Field(default=2.0, alias="sessionRatePerSecond", gt=0, le=50)
    report_retention_days: int = Field(default=90, alias="reportRetentionDays", ge=1, le=3650)
    #: Resource ARNs ssm:StartSession may target besides the Session document. Unverified form for
    #: `sagemaker-cluster:` targets; empty means the default `arn:aws:sagemaker:<r>:<a>:cluster/*`;
    #: `["*"]` (AWS's HyperPod guide) means any target, the Session document still pinned.
    session_target_resource_arns: Names = Field(default=(), alias="sessionTargetResourceArns")
    #: Where uploaded nccl-tests logs may be read from, `bucket` or `bucket/prefix`. Empty means the
    #: report bucket's `nccl/` prefix only.
    nccl_result_buckets: Names = Field(default=(), alias="ncclResultBuckets")
    #: CloudWatch Logs groups holding training-job output that a request's `job_logs_group` may name
    #: (e.g. `/aws/containerinsights/my-eks/application`, or a prefix ending in `*`). Empty: none —
    #: a request naming a group is then reported "not read (AccessDenied)". Job logs in S3 are read
    #: under the same grant as the NCCL results (ncclResultBuckets, else the bucket's `nccl/`).
    job_log_groups: Names = Field(default=(), alias="jobLogGroups")
    #: X-Ray subsegments for every AWS call the functions make (the X-Ray SDK, patching botocore).
    #: Off by default: Lambda's active tracing records every invocation without the SDK, and the
    #: SDK adds ≈ 150 ms to each function's cold start (docs/ARCHITECTURE.md, "Cold start").
    xray_sdk_tracing: bool = Field(default=False, alias="xraySdkTracing")

    @field_validator("notification_emails")
    @classmethod
    def _emails(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        bad = [v for v in values if not re.match(EMAIL_PATTERN, v)]
        if bad:
            raise ValueError(f"not an e-mail address: {bad[0]!r}")
        return tuple(dict.fromkeys(values))

    @field_validator("session_target_resource_arns")
    @classmethod
    def _target_arns(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        if values == (ANY_SESSION_TARGET,):
            return values
        if ANY_SESSION_TARGET in values:
            raise ValueError('sessionTargetResourceArns: "*" stands alone (it already covers every target)')
        bad = [v for v in values if not re.match(SESSION_TARGET_ARN_PATTERN, v)]
        if bad:
            raise ValueError(f'sessionTargetResourceArns entries must be ARNs or ["*"]; rejected: {bad[0]!r}')
        return values

    @property
    def any_session_target(self) -> bool:
        """`["*"]`: the form of AWS's HyperPod guide, the fallback when the scoped form is refused."""
        return self.session_target_resource_arns == (ANY_SESSION_TARGET,)

    @field_validator("nccl_result_buckets")
    @classmethod
    def _nccl_buckets(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        bad = [v for v in values if not re.match(NCCL_BUCKET_PATTERN, v) or _odd_segments(v)]
        if bad:
            raise ValueError(
                f"ncclResultBuckets entries are `bucket` or `bucket/prefix` (no empty, `.` or `..` "
                f"segments); rejected: {bad[0]!r}"
            )
        return values

    @field_validator("job_log_groups")
    @classmethod
    def _job_log_groups(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        bad = [v for v in values if not re.match(JOB_LOG_GROUP_PATTERN, v) or v.strip("*/") == ""]
        if bad:
            raise ValueError(
                f"jobLogGroups entries are log group names or name prefixes ending in *; rejected: {bad[0]!r}"
            )
        return tuple(dict.fromkeys(values))

    @model_validator(mode="after")
    def _unique_clusters(self) -> DeployConfig:
        names = [c.name for c in self.clusters]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"cluster names must be unique; repeated: {duplicates}")
        return self


def _odd_segments(entry: str) -> bool:
    """`bucket/a//b`, `bucket/./a`, `bucket/../a`: another key than it reads as (S3 keys are not paths)."""
    _, _, prefix = entry.partition("/")
    inner = prefix.split("/")[:-1] if prefix.endswith("/") else prefix.split("/")
    return bool(prefix) and any(part in {"", ".", ".."} for part in inner)


class ConfigError(ValueError):
    """The `hyperpod-perf` context is invalid; the message names each bad field by its path."""


def load_config(raw: Any) -> DeployConfig:
    """Validate the raw context value; a clear, path-naming error instead of a pydantic dump."""
    if raw is None:
        raw = {}
    if isinstance(raw, str):  # `-c hyperpod-perf="$(cat hyperpod-perf.json)"` arrives as JSON text
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as error:
            hint = ""
            if "\n" not in raw and not raw.rstrip().endswith(("}", "]")):
                hint = (
                    " (the CDK CLI passes only the first line of a multi-line -c value: "
                    f"name the file instead, {CONFIG_OPTION})"
                )
            raise ConfigError(
                f"configuration '{CONTEXT_KEY}' given as text is not JSON: {error}{hint}"
            ) from None
    if not isinstance(raw, dict):
        raise ConfigError(f"configuration '{CONTEXT_KEY}' must be a JSON object, got {type(raw).__name__}")
    try:
        return DeployConfig.model_validate(raw)
    except ValidationError as error:
        lines = [f"  {CONTEXT_KEY}.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()]
        raise ConfigError(f"invalid configuration '{CONTEXT_KEY}':\n" + "\n".join(lines)) from None


def load_config_file(path: str | Path) -> DeployConfig:
    """The configuration in a JSON file (relative to the current directory: the CDK CLI runs the
    app from the directory holding cdk.json, where the deployer runs `npx cdk`)."""
    file = Path(path).expanduser()
    try:
        if file.stat().st_size > CONFIG_FILE_MAX_BYTES:
            raise ConfigError(
                f"configuration file {file} is over {CONFIG_FILE_MAX_BYTES:,} bytes: not a configuration"
            )
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read the configuration file {file}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"configuration file {file} is not UTF-8 text") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"configuration file {file} is not JSON: {error}") from None
    try:
        return load_config(raw)
    except ConfigError as error:
        raise ConfigError(f"{file}: {error}") from None


def app_config(config_file: Any, inline: Any) -> DeployConfig:
    """What the app was given: the file `-c hyperpod-perf:config=FILE` names, or (tests) an object
    under `hyperpod-perf`; both at once is ambiguous and refused; neither is the empty config."""
    if config_file is None:
        return load_config(inline)
    if inline is not None:
        raise ConfigError(f"give the configuration once: '{CONFIG_FILE_KEY}' or '{CONTEXT_KEY}', not both")
    if not isinstance(config_file, str) or not config_file.strip():
        raise ConfigError(f"context '{CONFIG_FILE_KEY}' must name a JSON file, got {config_file!r}")
    return load_config_file(config_file.strip())


def allow_empty(raw: Any) -> bool:
    """The `hyperpod-perf:allowEmpty` context value: `true`/`false` (text from `-c`, or a JSON
    boolean); absent is false. Anything else is a typo to report, not a yes."""
    if raw is None or raw is False or raw == "false":
        return False
    if raw is True or raw == "true":
        return True
    raise ConfigError(f"context '{ALLOW_EMPTY_KEY}' must be true or false, got {raw!r}")


def require_cluster_and_recipient(config: DeployConfig, *, allowed_empty: bool) -> None:
    """Refuse a stack that would react to no alarm or tell no one, unless it is on purpose.

    Why: such a stack deploys cleanly and then stays silent — no cluster means no EventBridge rule
    matches anything (diagnoses run only when started by hand), no e-mail address or Slack channel
    means findings reach only the S3 bucket. A first deployer who forgot the configuration would
    take that silence for a healthy cluster."""
    missing = []
    if not config.clusters:
        missing.append("no cluster (`clusters`: nothing would start a diagnosis on its own)")
    if not config.notification_emails and config.slack is None:
        missing.append("no recipient (`notificationEmails` or `slack`: findings would reach no one)")
    if not missing or allowed_empty:
        return
    raise ConfigError(
        "refusing to synthesize a hyperpod-perf stack with "
        + " and ".join(missing)
        + ".\n"
        + "  Name your configuration file on every npx cdk command (docs/DEPLOY.md, step 2): "
        + f"{CONFIG_OPTION}\n"
        + f"  Or, to deploy it so on purpose, add: -c {ALLOW_EMPTY_KEY}=true"
    )
