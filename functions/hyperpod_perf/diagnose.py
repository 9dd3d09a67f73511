"""The in-process cluster diagnosis: resolve the cluster, collect and judge every node, then add the
cluster-level view (topology, fleet comparison, FSx, health logs, coverage).

Why partial failure is the normal path: a real account always has something missing — a log
permission, a file system in another account, a node whose agent is down. Each gap becomes a
finding that says what was not checked and why, and everything else still runs. Only a cluster
that cannot be resolved at all stops the diagnosis (there is nothing to report on).

The AWS adapters and the node runner are injected, so the CLI (real account), the Lambda
handlers and the tests (moto, snapshot directories) all run this same function.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from hyperpod_perf.aws.errors import AwsAdapterError
from hyperpod_perf.aws.fsx import Discovery, Mount, match_mounts
from hyperpod_perf.cluster_models import (
    ClusterInfo,
    ClusterNode,
    DiagnoseRequest,
    DiagnosisResult,
    FileSystemInfo,
    LogFetch,
    LogRecord,
    MetricSeries,
    ssm_target,
)
from hyperpod_perf.collect.runner import NodeFailure, NodeRunner, NodeTarget
from hyperpod_perf.collect.snapshot import RawSnapshot, parse_container
from hyperpod_perf.engine import evaluate_snapshot
from hyperpod_perf.fleet_signals import NodeSignals, extract
from hyperpod_perf.models import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.parse.procfs import parse_mounts
from hyperpod_perf.rules import coverage, fleet, fsx, health, topology
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

WINDOW_RE = re.compile(r"^\s*(?P<amount>\d+)\s*(?P<unit>[smhd])\s*$", re.IGNORECASE)
WINDOW_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
#: CloudWatch keeps 1-minute metrics 15 days; a longer window would silently coarsen the data.
MAX_WINDOW = timedelta(days=15)
MAX_LISTED = 20
#: Node-level checks whose CONCERN means "this node waits on I/O" (the FSx headroom branch).
IO_BOUND_CHECKS = ("host.iowait", "host.io_pressure")


class DiagnosisError(Exception):
    """The diagnosis cannot start (bad window, cluster not resolvable); the CLI exits 2."""


def parse_window(text: str) -> timedelta:
    """`3h`, `90m`, `1d`, `45s` -> a timedelta (positive, at most 15 days)."""
    match = WINDOW_RE.match(text or "")
    if not match:
        raise DiagnosisError(f"--since {text!r}: expected a number and a unit s/m/h/d, e.g. 3h, 90m, 1d")
    window = timedelta(**{WINDOW_UNITS[match["unit"].lower()]: int(match["amount"])})
    if window <= timedelta(0):
        raise DiagnosisError(f"--since {text!r}: the window must be longer than zero")
    if window > MAX_WINDOW:
        raise DiagnosisError(f"--since {text!r}: at most 15d (CloudWatch keeps 1-minute data 15 days)")
    return window


# --- what diagnose needs from the adapters (structural, so fakes are plain classes) ---------------


class ClustersPort(Protocol):
    def describe_cluster(self, cluster: str) -> ClusterInfo: ...
    def list_node_ids(self, cluster: str) -> list[tuple[str, str]]: ...
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


# --- findings for what could not be checked -------------------------------------------------------


def _not_checked(
    check: str, section: RunbookSection, what: str, error: AwsAdapterError | str, **evidence: Any
) -> Finding:
    reason = error.reason if isinstance(error, AwsAdapterError) else "Unavailable"
    detail = str(error)
    return Finding(
        check=check,
        severity=Severity.INFO,
        section=section,
        summary=f"{what}: not checked ({reason})",
        evidence={"reason": reason, "detail": detail[:500], **evidence},
        next_step=_permission_hint(error),
    )


def _permission_hint(error: AwsAdapterError | str) -> str | None:
    if isinstance(error, AwsAdapterError) and error.reason == "AccessDenied":
        return f"Grant the caller read access for {error.context or 'this call'} and re-run."
    return None


def _collect_finding(node: str, severity: Severity, summary: str, **evidence: Any) -> Finding:
    return Finding(
        node=node,
        check="collect.node",
        severity=severity,
        section=RunbookSection.COLLECTION,
        summary=summary,
        evidence=evidence,
        next_step=(
            "Collect this node (SSM session runner, or put <instance-id>.txt in the --snapshots directory) "
            "and re-run."
            if severity is Severity.INFO
            else "Check the node's SSM agent and connectivity, then re-run the collection."
        ),
        handoff=Handoff.SSM if severity is Severity.CONCERN else None,
    )


# --- the steps ----------------------------------------------------------------------------------


@dataclass
class _NodeWork:
    node: ClusterNode
    snapshot: RawSnapshot | None = None


def _resolve_nodes(
    request: DiagnoseRequest, cluster: ClusterInfo, clusters: ClustersPort, findings: list[Finding]
) -> list[ClusterNode]:
    try:
        listed = clusters.list_node_ids(request.cluster)
    except AwsAdapterError as exc:
        findings.append(
            _not_checked("collect.node", RunbookSection.COLLECTION, "cluster nodes could not be listed", exc)
        )
        listed = [(node_id, "") for node_id in request.node_ids]
    groups = dict(listed)
    wanted = list(dict.fromkeys(request.node_ids)) or [node_id for node_id, _ in listed]
    for node_id in wanted:
        if listed and node_id not in groups:
            findings.append(
                _collect_finding(
                    node_id,
                    Severity.CONCERN,
                    f"{node_id} is not a node of cluster {cluster.name}",
                    reason="NotInCluster",
                )
            )
    wanted = [n for n in wanted if n in groups]
    described, errors = clusters.describe_nodes(request.cluster, cluster.cluster_id, wanted)
    by_id = {n.instance_id: n for n in described}
    if errors:
        sample = dict(list(errors.items())[:MAX_LISTED])
        first = next(iter(errors.values()))
        findings.append(
            _not_checked(
                "topology.az_spread",
                RunbookSection.NCCL,
                f"placement of {len(errors)} node(s) could not be described",
                first,
                nodes={k: v.reason for k, v in sample.items()},
            )
        )
    nodes = []
    for node_id in wanted:
        node = by_id.get(node_id) or ClusterNode(
            instance_id=node_id,
            group=groups.get(node_id, ""),
            ssm_target=ssm_target(cluster.cluster_id, groups.get(node_id, ""), node_id),
        )
        nodes.append(node)
    return nodes


def _collect(
    nodes: Sequence[ClusterNode], runner: NodeRunner | None, findings: list[Finding]
) -> dict[str, RawSnapshot]:
    """Snapshots by instance id; every node not collected gets a collect.node finding."""
    if runner is None:
        for node in nodes:
            findings.append(
                _collect_finding(
                    node.instance_id,
                    Severity.INFO,
                    "not collected: no node runner (pass --snapshots DIR or use the SSM session runner)",
                    reason="NoRunner",
                )
            )
        return {}
    running = []
    for node in nodes:
        if node.status is None or node.running:
            running.append(node)
        else:
            findings.append(
                _collect_finding(
                    node.instance_id,
                    Severity.INFO,
                    f"not collected: node status is {node.status}",
                    reason="NodeNotRunning",
                    status=node.status,
                    status_message=node.status_message,
                )
            )
    targets = [NodeTarget(n.instance_id, n.group, (n.hostname or "").split(".")[0] or None) for n in running]
    snapshots: dict[str, RawSnapshot] = {}
    for outcome in runner.collect(targets) if targets else []:
        node_id = outcome.node.instance_id
        if isinstance(outcome, NodeFailure):
            missing = outcome.reason == "SnapshotMissing"
            findings.append(
                _collect_finding(
                    node_id,
                    Severity.INFO if missing else Severity.CONCERN,
                    f"not collected: {outcome.detail}"
                    if missing
                    else f"could not be reached: {outcome.detail}",
                    reason=outcome.reason,
                    attempts=outcome.attempts,
                )
            )
            continue
        snapshots[node_id] = parse_container(outcome.text, outcome.source)
    return snapshots


def _evaluate_nodes(
    nodes: Sequence[ClusterNode], snapshots: Mapping[str, RawSnapshot], thresholds: Thresholds
) -> tuple[list[Finding], list[NodeSignals]]:
    findings: list[Finding] = []
    signals: list[NodeSignals] = []
    for node in nodes:
        snapshot = snapshots.get(node.instance_id)
        if snapshot is None:
            continue
        name = snapshot.node_name()
        for finding in evaluate_snapshot(snapshot, thresholds):
            if finding.node in (None, name) and finding.node != node.instance_id:
                finding = finding.model_copy(update={"node": node.instance_id})
            findings.append(finding)
        signals.append(
            extract(
                snapshot,
                node=node.instance_id,
                instance_type=node.instance_type,
                group=node.group,
                thresholds=thresholds,
            )
        )
    return findings, signals


def _node_mounts(snapshots: Mapping[str, RawSnapshot]) -> list[Mount]:
    mounts: list[Mount] = []
    for node_id, snapshot in snapshots.items():
        section = snapshot.sections.get("mounts")
        if section is None:
            continue
        try:
            parsed = parse_mounts(section.text)
        except Exception:  # the node evaluation reports an unreadable mounts section
            continue
        mounts.extend(Mount(m.device, m.mountpoint, m.fstype, node_id) for m in parsed)
    return mounts


def _file_systems(
    request: DiagnoseRequest, fsx_port: FsxPort, mounts: Sequence[Mount], findings: list[Finding]
) -> tuple[list[FileSystemInfo], Discovery]:
    if request.fsx_ids:
        systems, errors = fsx_port.describe(request.fsx_ids)
        for fs_id, error in errors.items():
            findings.append(
                _not_checked(
                    "fs.throughput",
                    RunbookSection.FILE_SYSTEM,
                    f"file system {fs_id} could not be described (another account or region?)",
                    error,
                    file_system_id=fs_id,
                )
            )
        return systems, match_mounts(systems, mounts)
    fsx_mounts = [m for m in mounts if m.fstype in {"lustre", "nfs", "nfs4"}]
    if not fsx_mounts:
        findings.append(
            _not_checked(
                "fs.throughput",
                RunbookSection.FILE_SYSTEM,
                "no FSx file system given (--fsx) and none found in the collected nodes' mounts",
                "no file system to check",
            )
        )
        return [], Discovery()
    try:
        discovery = match_mounts(fsx_port.list_all(), fsx_mounts)
    except AwsAdapterError as exc:
        findings.append(
            _not_checked(
                "fs.throughput", RunbookSection.FILE_SYSTEM, "FSx file systems could not be listed", exc
            )
        )
        return [], Discovery()
    for mount in discovery.unmatched:
        findings.append(
            _not_checked(
                "fs.throughput",
                RunbookSection.FILE_SYSTEM,
                f"{mount.fstype} mount {mount.device} on {mount.mountpoint} matches no FSx file system "
                "in this account and region (another account?)",
                "no matching file system",
                device=mount.device,
                mountpoint=mount.mountpoint,
            )
        )
    return discovery.file_systems, discovery


def _io_bound(node_findings: Sequence[Finding]) -> dict[str, dict[str, Any]]:
    bound: dict[str, dict[str, Any]] = {}
    for finding in node_findings:
        if finding.check in IO_BOUND_CHECKS and finding.severity is Severity.CONCERN and finding.node:
            bound.setdefault(finding.node, {})[finding.check] = finding.evidence
    return bound


def _fs_findings(
    systems: Sequence[FileSystemInfo],
    discovery: Discovery,
    metrics_port: MetricsPort,
    node_findings: Sequence[Finding],
    window: tuple[datetime, datetime, datetime],
    thresholds: Thresholds,
    findings: list[Finding],
) -> list[MetricSeries]:
    if not systems:
        return []
    start, end, now = window
    try:
        series = metrics_port.fetch(systems, start, end, now=now)
    except AwsAdapterError as exc:
        for fs in systems:
            findings.append(
                _not_checked(
                    "fs.throughput",
                    RunbookSection.FILE_SYSTEM,
                    f"CloudWatch metrics of {fs.file_system_id} could not be read",
                    exc,
                    file_system_id=fs.file_system_id,
                )
            )
        return []
    io_bound = _io_bound(node_findings)
    by_fs: dict[str, dict[str, dict[str, Any]]] = {}
    for fs in systems:
        users = discovery.nodes_by_fs.get(fs.file_system_id)
        by_fs[fs.file_system_id] = {n: e for n, e in io_bound.items() if users is None or n in users}
    findings.extend(fsx.evaluate(systems, series, by_fs, thresholds))
    return series


def _health_findings(
    cluster: ClusterInfo,
    logs_port: LogsPort,
    window: tuple[datetime, datetime],
    selected: set[str] | None,
    max_events: int,
    findings: list[Finding],
) -> None:
    start, end = window
    try:
        fetched = logs_port.fetch(cluster.name, cluster.cluster_id, start, end, max_events=max_events)
    except AwsAdapterError as exc:
        for check, what in (
            ("health.deep_check", "deep health check results"),
            ("health.hma", "Health Monitoring Agent events"),
        ):
            findings.append(_not_checked(check, RunbookSection.GPU, f"{what} in CloudWatch Logs", exc))
        return
    if fetched.group_missing:
        for check in ("health.deep_check", "health.hma"):
            findings.append(
                _not_checked(
                    check,
                    RunbookSection.GPU,
                    f"log group {fetched.log_group} does not exist",
                    "log group missing",
                    log_group=fetched.log_group,
                )
            )
        return
    records: list[LogRecord] = list(fetched.records)
    if selected is not None:
        records = [r for r in records if _record_node(r) in selected or _record_node(r) is None]
    results = health.evaluate(records)
    if fetched.truncated:
        note = {"log_group": fetched.log_group, "truncated_at_events": max_events}
        results = [f.model_copy(update={"evidence": {**f.evidence, **note}}) for f in results]
    findings.extend(results)


def _record_node(record: LogRecord) -> str | None:
    match = health.INSTANCE_ID_RE.search(record.stream.rsplit("/", 1)[-1])
    return match.group(0) if match else None


# --- the entry point ------------------------------------------------------------------------------


def diagnose(
    request: DiagnoseRequest,
    *,
    clusters: ClustersPort,
    fsx: FsxPort,
    metrics: MetricsPort,
    logs: LogsPort,
    node_runner: NodeRunner | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    now: datetime | Callable[[], datetime] | None = None,
) -> DiagnosisResult:
    """Every finding for one cluster, plus the data the report shows (cluster, nodes, FSx series)."""
    window = parse_window(request.since)
    moment = now() if callable(now) else now
    end = (moment or datetime.now(UTC)).astimezone(UTC)
    start = end - window
    try:
        cluster = clusters.describe_cluster(request.cluster)
    except AwsAdapterError as exc:
        raise DiagnosisError(f"cluster {request.cluster!r} could not be resolved: {exc}") from exc

    cluster_findings: list[Finding] = []
    nodes = _resolve_nodes(request, cluster, clusters, cluster_findings)
    collection: list[Finding] = []
    snapshots = _collect(nodes, node_runner, collection)
    node_findings, signals = _evaluate_nodes(nodes, snapshots, thresholds)

    cluster_findings.extend(topology.evaluate(nodes))
    cluster_findings.extend(fleet.instance_types(nodes))
    if signals:
        cluster_findings.extend(fleet.version_drift(signals))
        cluster_findings.extend(fleet.outliers(signals, thresholds))

    mounts = _node_mounts(snapshots)
    systems, discovery = _file_systems(request, fsx, mounts, cluster_findings)
    series = _fs_findings(
        systems, discovery, metrics, node_findings, (start, end, end), thresholds, cluster_findings
    )
    selected = set(request.node_ids) if request.node_ids else None
    _health_findings(cluster, logs, (start, end), selected, request.max_log_events, cluster_findings)
    cluster_findings.extend(coverage.evaluate(cluster))

    return DiagnosisResult(
        findings=[*collection, *cluster_findings, *node_findings],
        cluster=cluster,
        nodes=list(nodes),
        file_systems=list(systems),
        metrics=series,
        window_start=start,
        window_end=end,
        collected_nodes=sorted(snapshots),
    )
