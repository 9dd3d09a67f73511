"""Environment of each handler, validated once at cold start (one pydantic model per handler).

A missing or malformed variable fails the first invocation with a message naming it, instead
of a KeyError deep in the logic.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, Json, ValidationError, field_validator

from hyperpod_perf.domain.request import NotifyPolicy
from hyperpod_perf.pipeline.triggers import ClusterTriggerConfig

S = TypeVar("S", bound=BaseModel)


class SettingsError(RuntimeError):
    """The function's environment is misconfigured (a deployment bug, not an input problem)."""


class _Env(BaseModel):
    #: defer_build: a function validates one of these models; the others are never built.
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)


#: `bucket/` or `bucket/prefix/`: what a request's s3:// prefixes may name (the NCCL step's grant).
READABLE_S3_PREFIX_PATTERN = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/([A-Za-z0-9!_.*'()/-]{0,900}/)?$"


class ValidateSettings(_Env):
    """Environment values are text by nature, so settings parse them (`"30"` -> 30) where the
    request and event models refuse any coercion; this list arrives as JSON text."""

    readable_s3_prefixes: Json[tuple[str, ...]] = Field(alias="READABLE_S3_PREFIXES")

    @field_validator("readable_s3_prefixes")
    @classmethod
    def _prefixes(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        bad = [v for v in values if not re.match(READABLE_S3_PREFIX_PATTERN, v)]
        if bad:
            raise ValueError(f"entries are bucket/ or bucket/prefix/; rejected: {bad[0]!r}")
        return values


class BucketSettings(_Env):
    report_bucket: str = Field(alias="REPORT_BUCKET", min_length=3)


class EvaluateSettings(BucketSettings):
    #: The deployment's CloudWatch dashboard, linked from every report (unset: no link).
    dashboard_url: str | None = Field(None, alias="DASHBOARD_URL", pattern=r"^https://")


class ResolveSettings(BucketSettings):
    distributed_map_threshold: int = Field(200, alias="DISTRIBUTED_MAP_THRESHOLD", ge=1)
    map_max_concurrency: int = Field(30, alias="MAP_MAX_CONCURRENCY", ge=1, le=1000)
    node_sample_size: int = Field(8, alias="NODE_SAMPLE_SIZE", ge=0)
    #: The StartSession rate the whole fan-out shares (pipeline/pacing.py divides it).
    session_rate_per_s: float = Field(3.0, alias="SESSION_RATE_PER_S", gt=0)
    #: Expected seconds per node session (StartSession + collector); the benchmark scales it.
    session_seconds: float = Field(10.0, alias="SESSION_SECONDS_PER_NODE", gt=0)
    #: The clusters' configuration (which EKS clusters opt in to the Kubernetes topology read).
    clusters_parameter_path: str | None = Field(
        None, alias="CLUSTERS_PARAMETER_PATH", pattern=r"^(/[A-Za-z0-9_.-]+){1,14}$"
    )


class CollectSettings(BucketSettings):
    session_document_name: str = Field(alias="SESSION_DOCUMENT_NAME", min_length=3)
    session_rate_per_s: float = Field(3.0, alias="SESSION_RATE_PER_S", gt=0)
    session_total_timeout_s: float = Field(240.0, alias="SESSION_TOTAL_TIMEOUT_S", gt=0)


class PublishSettings(BucketSettings):
    topic_arn: str = Field(alias="TOPIC_ARN", pattern=r"^arn:aws[a-z-]*:sns:")
    notify_policy: NotifyPolicy = Field(NotifyPolicy.ALWAYS, alias="NOTIFY_POLICY")


#: An SSM parameter path: `/a/b/c`, no trailing slash (a hierarchy has at most 15 levels).
PARAMETER_PATH_PATTERN = r"^(/[A-Za-z0-9_.-]+){1,14}$"


class TriggerSettings(_Env):
    state_machine_arn: str = Field(alias="STATE_MACHINE_ARN", pattern=r"^arn:aws[a-z-]*:states:")
    #: Where the per-cluster configuration lives: one SSM parameter per cluster (JSON of a
    #: ClusterTriggerConfig). Not in the environment: Lambda caps all variables at 4 KB together.
    clusters_parameter_path: str = Field(alias="CLUSTERS_PARAMETER_PATH", pattern=PARAMETER_PATH_PATTERN)
    dedup_window_minutes: int = Field(15, alias="DEDUP_WINDOW_MINUTES", ge=1, le=1440)


def load_clusters(path: str) -> tuple[ClusterTriggerConfig, ...]:
    """The clusters' configuration from the SSM parameters under `path`, read once per container."""
    return _load_clusters(path)


@cache
def _load_clusters(path: str) -> tuple[ClusterTriggerConfig, ...]:
    from hyperpod_perf.aws import clients

    clusters: list[ClusterTriggerConfig] = []
    for name, value in sorted(clients.parameters_by_path(path).items()):
        try:
            clusters.append(ClusterTriggerConfig.model_validate_json(value))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "value"
            raise SettingsError(
                f"SSM parameter {name}: invalid cluster configuration ({where}: {first['msg']})"
            ) from None
    return tuple(clusters)


def load(model: type[S]) -> S:
    """Validate the environment against a settings model (cached per model)."""
    return _load(model)


@cache
def _load(model: type[S]) -> S:
    try:
        return model.model_validate(dict(os.environ))
    except (ValidationError, json.JSONDecodeError) as exc:
        raise SettingsError(f"{model.__name__}: invalid environment: {exc}") from exc


def reset_cache() -> None:
    """Tests and the local run change the environment between runs."""
    _load.cache_clear()
    _load_clusters.cache_clear()
