"""EventBridge events -> a DiagnoseRequest and an idempotent execution name. Pure, no I/O.

Why idempotent names: an alarm storm delivers dozens of events for one incident. The
execution name is derived from the cluster and a time bucket of the *event's* time (not
the arrival time, so redeliveries land in the same bucket); Step Functions refuses a
second execution with the same name, which the trigger treats as success. The result is
at most one diagnosis per cluster per window, whatever mix of events arrives.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from hyperpod_perf.domain.alarm import (
    MAX_DATAPOINTS,
    MAX_DIMENSIONS,
    MAX_METRICS,
    MAX_TEXT,
    AlarmContext,
    AlarmMetric,
    one_line,
)
from hyperpod_perf.domain.request import (
    CLUSTER_NAME_PATTERN,
    CONTEXT_DEPLOYMENT,
    INSTANCE_ID_PATTERN,
    Deployment,
    DiagnoseRequest,
    Names,
    TargetScope,
)

ALARM = "CloudWatch Alarm State Change"
NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"
CLUSTER_EVENT = "SageMaker HyperPod Cluster Event"
CLUSTER_STATE = "SageMaker HyperPod Cluster State Change"

MAX_EVENT_BYTES = 256 * 1024
#: reasonData beyond this is not parsed (an alarm's own is a few hundred bytes).
MAX_REASON_DATA = 64 * 1024


class TriggerRejected(ValueError):
    """The event does not lead to a diagnosis; `reason` is a short label for the metric."""

    #: The detail is logged and returned: an event's own text (up to 256 KB) must not flood either.
    MAX_DETAIL = 300

    def __init__(self, reason: str, detail: str) -> None:
        if len(detail) > self.MAX_DETAIL:
            detail = detail[: self.MAX_DETAIL - 1] + "…"
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class EventBridgeEvent(BaseModel):
    """An EventBridge event's envelope: the fields that appear in every event delivered to an
    event bus (EventBridge User Guide, "Event structure reference", eb-events-structure: version,
    id, detail-type, source, account, time, region, resources, detail).

    The same model as Powertools' `EventBridgeModel`, field for field, so the trigger accepts and
    rejects the same events. Not imported from Powertools: its `parser.models` package loads every
    event model Powertools has (≈ 100 ms of CPU, on a loaded 2-core machine), and this module is
    on every handler's import path (settings read `ClusterTriggerConfig`): bench/RESULTS.md,
    cold start.
    """

    model_config = ConfigDict(populate_by_name=True)

    version: str
    id: str
    source: str
    account: str
    time: datetime
    region: str
    resources: list[str]
    detail_type: str = Field(alias="detail-type")
    detail: dict[str, Any]
    replay_name: str | None = Field(None, alias="replay-name")

    @field_validator("detail", mode="before")
    @classmethod
    def _scheduler_detail(cls, value: Any, info: ValidationInfo) -> Any:
        """EventBridge Scheduler sends `"{}"` (text) as the detail of an event with no payload."""
        return {} if info.data.get("source") == "aws.scheduler" and value == "{}" else value


class ClusterTriggerConfig(BaseModel):
    """Which alarms belong to which cluster (from the deployment's configuration)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True, strict=True)

    name: str = Field(pattern=CLUSTER_NAME_PATTERN)
    alarm_names: Names = Field(default=(), alias="alarmNames")
    alarm_prefixes: Names = Field(default=(), alias="alarmPrefixes")
    fsx_ids: Names = Field(default=(), alias="fsxIds")
    #: The EKS cluster's Kubernetes API may be read for the nodes' network layers (opt-in).
    kubernetes_topology: bool = Field(default=False, alias="kubernetesTopology")
    #: The cluster's Amazon Managed Prometheus workspace: the run's metrics stage reads it.
    prometheus_workspace_id: str | None = Field(default=None, alias="prometheusWorkspaceId")
    deep_collect: Literal["suspects", "all"] = Field(default="suspects", alias="deepCollect")

    def owns_alarm(self, alarm_name: str) -> bool:
        return alarm_name in self.alarm_names or any(alarm_name.startswith(p) for p in self.alarm_prefixes)


class TriggerDecision(BaseModel):
    model_config = ConfigDict(frozen=True)

    request: DiagnoseRequest
    execution_name: str
    kind: str


def decide(
    event: dict[str, Any],
    clusters: list[ClusterTriggerConfig],
    *,
    window_minutes: int = 15,
    deployment: Deployment | None = None,
) -> TriggerDecision:
    """Map one EventBridge event to a diagnosis request, or raise TriggerRejected."""
    if not isinstance(event, dict):
        raise TriggerRejected("malformed", "event is not a JSON object")
    try:
        if len(repr(event)) > MAX_EVENT_BYTES:
            raise TriggerRejected("oversized", f"event larger than {MAX_EVENT_BYTES} bytes")
        envelope = EventBridgeEvent.model_validate(event)
    except ValidationError as exc:
        raise TriggerRejected("malformed", f"not an EventBridge event ({_first_error(exc)})") from exc
    except RecursionError as exc:
        raise TriggerRejected("malformed", "event nested too deeply") from exc
    detail = envelope.detail if isinstance(envelope.detail, dict) else {}
    kind = envelope.detail_type
    alarm = None
    if kind == ALARM:
        cluster, nodes, fsx_ids, reason = _from_alarm(detail, clusters)
        alarm = alarm_context(detail)
    elif kind == NODE_HEALTH:
        cluster, nodes, fsx_ids, reason = _from_node_health(detail)
    elif kind == CLUSTER_EVENT:
        cluster, nodes, fsx_ids, reason = _from_cluster_event(detail)
    elif kind == CLUSTER_STATE:
        cluster, nodes, fsx_ids, reason = _from_cluster_state(detail)
    else:
        raise TriggerRejected("unsupported", f"detail-type {kind!r} is not a diagnosis trigger")
    configured = next((c for c in clusters if c.name == _name_part(cluster)), None)
    workspace, deep_collect = None, None
    if configured is not None:
        fsx_ids = tuple(dict.fromkeys((*fsx_ids, *configured.fsx_ids)))
        workspace = configured.prometheus_workspace_id
        deep_collect = configured.deep_collect
    repair = _repair_of(detail) if kind == NODE_HEALTH else {}
    try:
        request = DiagnoseRequest.model_validate(
            {
                "cluster": cluster,
                "region": envelope.region,
                "nodes": nodes,
                "scope": TargetScope.AUTO,
                "reason": reason,
                "fsx_ids": fsx_ids,
                "alarm": alarm,
                **({"prometheus_workspace_id": workspace, "deep_collect": deep_collect} if workspace else {}),
                **repair,
            },
            context={CONTEXT_DEPLOYMENT: deployment} if deployment is not None else None,
        )
    except ValidationError as exc:
        raise TriggerRejected("invalid", _first_error(exc)) from exc
    try:
        name = execution_name(request.cluster_name, envelope.time, window_minutes)
        if request.after_repair:  # its own name: the repair's own diagnosis may share the window
            name = name.replace("hpd-", "hpdr-", 1)  # r: after a repair; still <= 80 chars
    except (OverflowError, ValueError) as exc:  # e.g. year 1 with a +14:00 offset: no UTC equivalent
        raise TriggerRejected("malformed", f"event time {envelope.time.isoformat()!r} out of range") from exc
    return TriggerDecision(request=request, execution_name=name, kind=kind)


def execution_input(request: DiagnoseRequest) -> dict[str, Any]:
    """The execution's input: only what the event set on the request.

    Why not every field: a field the event left to its default must stay unset across the state
    machine, so the deployment's own defaults still apply downstream (ResolveCluster and
    ClusterMetrics fill `sample_size` from NODE_SAMPLE_SIZE only where the request set none,
    `pipeline.cluster.with_deployment_defaults`); written out, the model's default 8 would read as
    the event's choice and a deployment's `nodeSampleSize` would never reach an event's run.
    """
    return request.model_dump(mode="json", exclude_none=True, exclude_unset=True)


def execution_name(cluster: str, when: datetime, window_minutes: int) -> str:
    """`hpd-<cluster>-<bucket start>`; ≤ 80 chars of [A-Za-z0-9-] as Step Functions requires."""
    when = when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
    window_s = max(1, window_minutes) * 60
    bucket = datetime.fromtimestamp(int(when.timestamp()) // window_s * window_s, UTC)
    safe = re.sub(r"[^A-Za-z0-9-]", "-", cluster)
    if len(safe) > 56:
        safe = safe[:48] + "-" + hashlib.sha256(cluster.encode()).hexdigest()[:7]
    return f"hpd-{safe}-{bucket:%Y%m%dT%H%M}Z"


def _from_alarm(detail: dict[str, Any], clusters: list[ClusterTriggerConfig]):
    alarm = detail.get("alarmName")
    state = _object(detail.get("state")).get("value")
    if not isinstance(alarm, str) or not alarm:
        raise TriggerRejected("malformed", "alarm event without alarmName")
    if state != "ALARM":
        raise TriggerRejected("not-alarm", f"alarm {alarm[:80]!r} is in state {state!r}, not ALARM")
    owner = next((c for c in clusters if c.owns_alarm(alarm)), None)
    if owner is None:
        raise TriggerRejected("unknown-alarm", f"alarm {alarm[:80]!r} is not configured for any cluster")
    nodes, fsx_ids = _alarm_dimensions(detail)
    return owner.name, nodes, fsx_ids, f"CloudWatch alarm {alarm[:120]} in ALARM"


def _alarm_dimensions(detail: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Instance ids and FSx ids named by the alarm's metrics (single metric or metric math)."""
    nodes: list[str] = []
    fsx_ids: list[str] = []
    metrics = _object(detail.get("configuration")).get("metrics") or []
    for metric in metrics if isinstance(metrics, list) else []:
        dims = _object(_object(_object(metric).get("metricStat")).get("metric")).get("dimensions")
        if not isinstance(dims, dict):
            continue
        instance, fsx = dims.get("InstanceId"), dims.get("FileSystemId")
        if isinstance(instance, str) and re.match(INSTANCE_ID_PATTERN, instance):
            nodes.append(instance)
        if isinstance(fsx, str) and fsx.startswith("fs-"):
            fsx_ids.append(fsx)
    return tuple(dict.fromkeys(nodes)), tuple(dict.fromkeys(fsx_ids))


#: "... was greater than or equal to the threshold (90.0) ..." (CloudWatch's state reason).
_COMPARISON_RE = re.compile(r"\b(greater|less) than (or equal to )?the threshold", re.IGNORECASE)


def alarm_context(detail: dict[str, Any]) -> AlarmContext | None:
    """What the alarm measures and saw, from its state-change event; None when nothing is readable.

    Lenient by design: the event already started a run, and a field that is missing, null or of
    the wrong type only leaves that part of the answer out.
    """
    state = _object(detail.get("state"))
    reason = state.get("reason") if isinstance(state.get("reason"), str) else None
    data = _reason_data(state.get("reasonData"))
    match = _COMPARISON_RE.search(reason or "")
    comparison = None
    if match:
        comparison = (">" if match.group(1).lower() == "greater" else "<") + ("=" if match.group(2) else "")
    metrics = [m for m in map(_alarm_metric, _list(_object(detail.get("configuration")).get("metrics"))) if m]
    points = [float(v) for v in _list(data.get("recentDatapoints")) if _is_number(v)]
    try:
        return AlarmContext(
            name=one_line(detail.get("alarmName") or "", 255),
            description=_text(_object(detail.get("configuration")).get("description")),
            state=one_line(state.get("value") or "ALARM", 32),
            state_reason=_text(reason),
            state_time=_text(state.get("timestamp"), 64),
            threshold=float(data["threshold"]) if _is_number(data.get("threshold")) else None,
            comparison=comparison,
            period_s=int(data["period"]) if _is_number(data.get("period")) and data["period"] >= 1 else None,
            recent_datapoints=tuple(points[-MAX_DATAPOINTS:]),
            metrics=tuple(metrics[:MAX_METRICS]),
        )
    except ValidationError:
        return None


def _alarm_metric(raw: Any) -> AlarmMetric | None:
    entry = _object(raw)
    stat = _object(entry.get("metricStat"))
    metric = _object(stat.get("metric"))
    dims = metric.get("dimensions")
    try:
        return AlarmMetric(
            id=_text(entry.get("id"), 255),
            namespace=_text(metric.get("namespace"), 255),
            name=_text(metric.get("name"), 255),
            dimensions={
                str(k): str(v)
                for k, v in list((dims if isinstance(dims, dict) else {}).items())[:MAX_DIMENSIONS]
            },
            stat=_text(stat.get("stat"), 100),
            period_s=int(stat["period"]) if _is_number(stat.get("period")) and stat["period"] >= 1 else None,
            expression=_text(entry.get("expression")),
            label=_text(entry.get("label")),
            return_data=entry.get("returnData") is not False,
        )
    except ValidationError:
        return None


def _reason_data(raw: Any) -> dict[str, Any]:
    """`reasonData` is a JSON document inside a string (see the real captures)."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str) or len(raw) > MAX_REASON_DATA:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _text(value: Any, limit: int = MAX_TEXT) -> str | None:
    return one_line(value, limit) if isinstance(value, str) and value.strip() else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


#: Node health statuses that mean the node is back in service (HyperPod's node-health-status labels).
BACK_IN_SERVICE = ("Healthy", "Schedulable")
REPAIR_ACTIONS = ("Reboot", "Replace")


def _repair_of(detail: dict[str, Any]) -> dict[str, Any]:
    """The request's repair fields: the repair announced, or the node back in service after one."""
    summary = _object(detail.get("HealthSummary"))
    if summary.get("HealthStatus") in BACK_IN_SERVICE:
        return {"after_repair": True}
    action = summary.get("RepairAction")
    return {"repair_action": action} if action in REPAIR_ACTIONS else {}


def _from_node_health(detail: dict[str, Any]):
    cluster = _cluster_of(detail)
    summary = _object(detail.get("HealthSummary"))
    status = summary.get("HealthStatus")
    instance = detail.get("InstanceId")
    nodes = (instance,) if isinstance(instance, str) else ()
    if status in BACK_IN_SERVICE:
        if not nodes:
            raise TriggerRejected("healthy", f"node health event with status {status!r} names no node")
        # Back after a repair (or a first health check): diagnose it and its fleet sample once more;
        # Publish compares it with its last report in the run history (before/after).
        return cluster, nodes, (), f"node {instance} back in service ({status}): before/after"
    action = summary.get("RepairAction")
    repair = f" (repair: {action})" if action else ""
    reason = f"node {instance or '?'} health {status or 'unknown'}{repair}"
    return cluster, nodes, (), reason


def _from_cluster_event(detail: dict[str, Any]):
    inner = detail.get("EventDetails") if isinstance(detail.get("EventDetails"), dict) else detail
    level = inner.get("EventLevel")
    if level != "Error":
        raise TriggerRejected("not-error", f"cluster event with EventLevel {level!r}, not Error")
    cluster = _cluster_of(inner)
    instance = inner.get("InstanceId")
    nodes = (instance,) if isinstance(instance, str) else ()
    description = str(inner.get("Description") or "cluster error event")
    return cluster, nodes, (), f"cluster event: {description[:160]}"


def _from_cluster_state(detail: dict[str, Any]):
    status = detail.get("ClusterStatus")
    if status != "InService":
        raise TriggerRejected("not-in-service", f"cluster state {status!r}: diagnosed once back InService")
    return _cluster_of(detail), (), (), "cluster returned to InService"


def _cluster_of(detail: dict[str, Any]) -> str:
    """The cluster's name when present (reports and S3 keys read better), else its ARN."""
    for key in ("ClusterName", "ClusterArn"):
        value = detail.get(key)
        if isinstance(value, str) and value:
            return value
    raise TriggerRejected("malformed", "event names no cluster (ClusterName/ClusterArn missing)")


def _object(value: Any) -> dict[str, Any]:
    """A JSON object field, or {} when it is null or another type (fields can be null in real events)."""
    return value if isinstance(value, dict) else {}


def _name_part(cluster: str) -> str:
    return cluster.rsplit("/", 1)[-1]


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "event"
    return f"{where}: {err['msg']}"[:200]
