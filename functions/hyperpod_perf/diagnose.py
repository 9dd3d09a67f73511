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
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from pydantic import BaseModel, Field

from hyperpod_perf.aws.errors import AwsAdapterError, InvalidRequest, NotFound
from hyperpod_perf.aws.fsx import Mount, match_mounts
from hyperpod_perf.cluster_models import (
    ClusterInfo,
    ClusterNode,
    DiagnosisResult,
    FileSystemData,
    FileSystemInfo,
    FileSystemType,
    LogFetch,
    LogRecord,
    MetricSeries,
    ssm_target,
)
from hyperpod_perf.collect.runner import NodeFailure, NodeRunner, NodeTarget
from hyperpod_perf.collect.snapshot import RawSnapshot, parse_container
from hyperpod_perf.engine import evaluate_snapshot
from hyperpod_perf.fleet_signals import NodeSignals, extract
from hyperpod_perf.models import (
    ClusterSummary,
    DiagnoseRequest,
    FileSystemSummary,
    Finding,
    GpuFigure,
    Handoff,
    MetricPoint,
    NodeSummary,
    NotChecked,
    Report,
    RunbookSection,
    RunInfo,
    Severity,
    TargetScope,
)
from hyperpod_perf.parse.nvidia_smi import parse_gpu_query
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


#: Health-log events read per run (bounded: a noisy cluster must not stall the diagnosis).
MAX_LOG_EVENTS = 2000


class DiagnosisError(Exception):
    """The diagnosis cannot start (bad window, cluster not resolvable); the CLI exits 2."""


class ClusterNotFound(DiagnosisError):
    """No cluster by that name or ARN in this account and region."""


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


def _resolve_nodes(
    request: DiagnoseRequest, cluster: ClusterInfo, clusters: ClustersPort, findings: list[Finding]
) -> list[ClusterNode]:
    try:
        listed = clusters.list_node_ids(request.cluster)
    except AwsAdapterError as exc:
        findings.append(
            _not_checked("collect.node", RunbookSection.COLLECTION, "cluster nodes could not be listed", exc)
        )
        listed = [(node_id, "") for node_id in request.nodes]
    groups = dict(listed)
    wanted = list(dict.fromkeys(request.nodes)) or [node_id for node_id, _ in listed]
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


def not_running_finding(node: ClusterNode) -> Finding:
    """A node HyperPod does not report as Running is not collected (an SSM session would fail)."""
    return _collect_finding(
        node.instance_id,
        Severity.INFO,
        f"not collected: node status is {node.status}",
        reason="NodeNotRunning",
        status=node.status,
        status_message=node.status_message,
    )


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
            findings.append(not_running_finding(node))
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
) -> tuple[list[FileSystemInfo], Any]:
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
        return [], match_mounts([], [])
    try:
        discovery = match_mounts(fsx_port.list_all(), fsx_mounts)
    except AwsAdapterError as exc:
        findings.append(
            _not_checked(
                "fs.throughput", RunbookSection.FILE_SYSTEM, "FSx file systems could not be listed", exc
            )
        )
        return [], match_mounts([], [])
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
        records = [r for r in records if (node := _record_node(r)) is None or node in selected]
    results = health.evaluate(records)
    if fetched.truncated:
        note = {"log_group": fetched.log_group, "truncated_at_events": max_events}
        results = [f.model_copy(update={"evidence": {**f.evidence, **note}}) for f in results]
    findings.extend(results)


def _record_node(record: LogRecord) -> str | None:
    match = health.INSTANCE_ID_RE.search(record.stream.rsplit("/", 1)[-1])
    return match.group(0) if match else None


# --- stage results (serializable: the pipeline passes them between Lambda functions via S3) ------


class NodeEvaluation(BaseModel):
    """Everything one node contributes: its findings, its comparable signals, its mounts, its row."""

    node: str
    findings: list[Finding] = Field(default_factory=list)
    signals: dict[str, Any] | None = None
    mounts: list[dict[str, Any]] = Field(default_factory=list)
    summary: NodeSummary

    def node_signals(self) -> NodeSignals | None:
        return NodeSignals(**self.signals) if self.signals else None


# --- stage 1: the cluster and the nodes to look at -----------------------------------------------


def resolve_cluster(
    request: DiagnoseRequest, clusters: ClustersPort
) -> tuple[ClusterInfo, list[ClusterNode], list[Finding]]:
    """The cluster and every node it has (or the nodes named), with placement."""
    try:
        cluster = clusters.describe_cluster(request.cluster)
    except (NotFound, InvalidRequest) as exc:
        raise ClusterNotFound(
            f"cluster {request.cluster!r} not found in region {request.region or 'of the caller'}: {exc}"
        ) from exc
    except AwsAdapterError as exc:
        raise DiagnosisError(f"cluster {request.cluster!r} could not be resolved: {exc}") from exc
    findings: list[Finding] = []
    nodes = _resolve_nodes(request, cluster, clusters, findings)
    return cluster, nodes, findings


def select_targets(nodes: Sequence[ClusterNode], request: DiagnoseRequest) -> list[ClusterNode]:
    """The nodes to collect: all; only the named ones; or the named ones plus a spread sample.

    The sample prefers the focus nodes' instance groups (their peers are the fair comparison)
    and is spread evenly over the sorted ids, so reruns pick the same nodes.
    """
    named = set(request.nodes)
    if request.scope is TargetScope.ALL or (request.scope is TargetScope.AUTO and not named):
        return list(nodes)
    focus = [n for n in nodes if n.instance_id in named]
    if request.scope is TargetScope.FOCUS:
        return focus
    groups = {n.group for n in focus}
    others = sorted(
        (n for n in nodes if n.instance_id not in named), key=lambda n: (n.group not in groups, n.instance_id)
    )
    peers = [n for n in others if n.group in groups] or others
    return focus + _spread(peers, request.sample_size)


def focus_nodes(request: DiagnoseRequest) -> set[str] | None:
    """The nodes a FOCUS run is limited to (cluster-wide evidence is filtered to them), else None."""
    return set(request.nodes) if request.scope is TargetScope.FOCUS and request.nodes else None


def _spread(nodes: Sequence[ClusterNode], count: int) -> list[ClusterNode]:
    if count <= 0 or not nodes:
        return []
    if count >= len(nodes):
        return list(nodes)
    step = len(nodes) / count
    return [nodes[int(i * step)] for i in range(count)]


# --- stage 2: collect and judge each node ---------------------------------------------------------


def collect_nodes(
    nodes: Sequence[ClusterNode], runner: NodeRunner | None
) -> tuple[dict[str, RawSnapshot], list[Finding]]:
    findings: list[Finding] = []
    return _collect(nodes, runner, findings), findings


def evaluate_node(
    node: ClusterNode,
    snapshot: RawSnapshot,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    raw_key: str | None = None,
) -> NodeEvaluation:
    """Node-level findings (named by instance id), fleet signals, mounts and the fleet-table row."""
    name = snapshot.node_name()
    findings = []
    for finding in evaluate_snapshot(snapshot, thresholds):
        if finding.node in (None, name) and finding.node != node.instance_id:
            finding = finding.model_copy(update={"node": node.instance_id})
        findings.append(finding)
    signals = extract(
        snapshot,
        node=node.instance_id,
        instance_type=node.instance_type,
        group=node.group,
        thresholds=thresholds,
    )
    mounts = [asdict(m) for m in _node_mounts({node.instance_id: snapshot})]
    return NodeEvaluation(
        node=node.instance_id,
        findings=findings,
        signals=asdict(signals),
        mounts=mounts,
        summary=_node_summary(node, snapshot, signals, raw_key),
    )


def _node_summary(
    node: ClusterNode, snapshot: RawSnapshot, signals: NodeSignals, raw_key: str | None
) -> NodeSummary:
    gpus: list[GpuFigure] = []
    section = snapshot.sections.get("gpu-query")
    if section is not None and section.rc == 0:
        try:
            rows = parse_gpu_query(section.text).rows
        except ValueError:
            rows = []
        gpus = [
            GpuFigure(
                index=row.index if row.index is not None else i,
                temperature_c=row.temperature_c,
                sm_clock_mhz=row.sm_clock_mhz,
                max_sm_clock_mhz=row.max_sm_clock_mhz,
            )
            for i, row in enumerate(rows)
        ]
    meta = snapshot.meta
    return NodeSummary(
        node=node.instance_id,
        instance_id=node.instance_id,
        hostname=meta.get("hostname") or node.hostname,
        instance_group=node.group or meta.get("instance_group") or None,
        instance_type=node.instance_type or meta.get("instance_type") or None,
        availability_zone=node.az,
        ultraserver_id=node.ultraserver_id,
        gpus=gpus,
        figures=dict(signals.values),
        raw_key=raw_key,
    )


def not_collected_summary(node: ClusterNode, reason: str, collection: str = "failed") -> NodeSummary:
    return NodeSummary(
        node=node.instance_id,
        instance_id=node.instance_id,
        hostname=node.hostname,
        instance_group=node.group or None,
        instance_type=node.instance_type,
        availability_zone=node.az,
        ultraserver_id=node.ultraserver_id,
        collection=collection,
        collection_error=reason[:300],
    )


def node_summaries(
    nodes: Sequence[ClusterNode], evaluations: Sequence[NodeEvaluation], collection: Sequence[Finding]
) -> list[NodeSummary]:
    """One fleet-table row per target node: its summary, or why it has none."""
    by_node = {e.node: e.summary for e in evaluations}
    problems = {f.node: f for f in collection if f.node and f.check == "collect.node"}
    rows = []
    for node in nodes:
        if node.instance_id in by_node:
            rows.append(by_node[node.instance_id])
            continue
        problem = problems.get(node.instance_id)
        failed = problem is not None and problem.severity is Severity.CONCERN
        reason = problem.summary if problem else "not collected"
        rows.append(not_collected_summary(node, reason, "failed" if failed else "not_collected"))
    return rows


# --- stage 3: file systems, health logs ------------------------------------------------------------


def file_system_data(
    request: DiagnoseRequest,
    fsx_port: FsxPort,
    metrics_port: MetricsPort,
    mounts: Sequence[Mount],
    window: tuple[datetime, datetime],
) -> FileSystemData:
    findings: list[Finding] = []
    systems, discovery = _file_systems(request, fsx_port, mounts, findings)
    series: list[MetricSeries] = []
    if systems:
        start, end = window
        try:
            series = metrics_port.fetch(systems, start, end, now=end)
        except AwsAdapterError as exc:
            findings.extend(
                _not_checked(
                    "fs.throughput",
                    RunbookSection.FILE_SYSTEM,
                    f"CloudWatch metrics of {fs.file_system_id} could not be read",
                    exc,
                    file_system_id=fs.file_system_id,
                )
                for fs in systems
            )
    return FileSystemData(
        systems=list(systems),
        series=series,
        nodes_by_fs={fs_id: sorted(nodes) for fs_id, nodes in discovery.nodes_by_fs.items()},
        findings=findings,
    )


def health_findings(
    cluster: ClusterInfo,
    logs_port: LogsPort,
    window: tuple[datetime, datetime],
    selected: set[str] | None = None,
    max_events: int = MAX_LOG_EVENTS,
) -> list[Finding]:
    findings: list[Finding] = []
    _health_findings(cluster, logs_port, window, selected, max_events, findings)
    return findings


# --- stage 4: the cluster-level view ----------------------------------------------------------------


def cluster_findings(
    cluster: ClusterInfo,
    nodes: Sequence[ClusterNode],
    evaluations: Sequence[NodeEvaluation],
    fs_data: FileSystemData,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> list[Finding]:
    """Topology, fleet comparison, FSx saturation vs I/O pattern, coverage advice."""
    findings: list[Finding] = [*topology.evaluate(nodes), *fleet.instance_types(nodes)]
    signals = [s for s in (e.node_signals() for e in evaluations) if s is not None]
    if signals:
        findings.extend(fleet.version_drift(signals))
        findings.extend(fleet.outliers(signals, thresholds))
    if fs_data.systems:
        io_bound = _io_bound([f for e in evaluations for f in e.findings])
        by_fs = {
            fs.file_system_id: {
                n: ev
                for n, ev in io_bound.items()
                if fs.file_system_id not in fs_data.nodes_by_fs or n in fs_data.nodes_by_fs[fs.file_system_id]
            }
            for fs in fs_data.systems
        }
        findings.extend(fsx.evaluate(fs_data.systems, fs_data.series, by_fs, thresholds))
    findings.extend(coverage.evaluate(cluster))
    return findings


def file_system_summaries(fs_data: FileSystemData) -> list[FileSystemSummary]:
    """The series the report draws: Lustre MB/s against provisioned; OpenZFS IOPS utilisation."""
    summaries = []
    for fs in fs_data.systems:
        throughput = (
            [
                MetricPoint(timestamp=moment.isoformat(), value=round(mbps, 3))
                for moment, mbps, _pct in fsx.lustre_utilization(fs, fs_data.series)
            ]
            if fs.type == FileSystemType.LUSTRE
            else []
        )
        iops = next(
            (
                s
                for s in fs_data.series
                if s.file_system_id == fs.file_system_id
                and s.metric == "FileServerDiskIopsUtilization"
                and s.stat == "Average"
            ),
            None,
        )
        summaries.append(
            FileSystemSummary(
                file_system_id=fs.file_system_id,
                type=str(fs.type),
                provisioned_mbps=fs.provisioned_throughput_mbps,
                storage_capacity_gib=fs.storage_capacity_gib,
                throughput_mbps=throughput,
                iops_utilization_pct=[
                    MetricPoint(timestamp=t.isoformat(), value=v)
                    for t, v in zip(iops.timestamps, iops.values, strict=True)
                ]
                if iops
                else [],
                mount_names=[fs.lustre_mount_name] if fs.lustre_mount_name else [],
            )
        )
    return summaries


def not_checked_of(findings: Sequence[Finding]) -> list[NotChecked]:
    """The report's 'not checked' list: checks that could not run, and every node (or section of
    a node) whose collection failed, each with why."""
    rows = []
    for f in findings:
        if f.check == "collect.node" and f.node:
            section = f.evidence.get("section")
            rows.append(
                NotChecked(what=f"node {f.node}" + (f" section {section}" if section else ""), why=f.summary)
            )
        elif (f.severity is Severity.INFO and "not checked" in f.summary) or f.evidence.get(
            "reason"
        ) in _GAP_REASONS:
            rows.append(NotChecked(what=f"{f.check}" + (f" on {f.node}" if f.node else ""), why=f.summary))
    return rows


_GAP_REASONS = frozenset({"NoRunner", "NodeNotRunning", "SnapshotMissing"})


def build_report(
    cluster: ClusterInfo,
    findings: Sequence[Finding],
    summaries: Sequence[NodeSummary],
    fs_data: FileSystemData,
    run: RunInfo,
    nccl: dict[str, Any] | None = None,
) -> Report:
    from hyperpod_perf.report.verdict import compute_verdict
    from hyperpod_perf.rules.catalog import ensure_catalogued

    ensure_catalogued(findings)
    report = Report(
        cluster=ClusterSummary(
            name=cluster.name,
            arn=cluster.arn,
            status=cluster.status,
            orchestrator=str(cluster.orchestrator),
            node_recovery=cluster.node_recovery,
            node_count=len(summaries),
        ),
        run=run,
        findings=list(findings),
        nodes=list(summaries),
        filesystems=file_system_summaries(fs_data),
        nccl=nccl,
        not_checked=not_checked_of(findings),
    )
    return report.model_copy(update={"verdict": compute_verdict(report)})


# --- the whole diagnosis in one process (the CLI) ---------------------------------------------------


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
    moment = now() if callable(now) else now
    end = (moment or datetime.now(UTC)).astimezone(UTC)
    start = end - timedelta(minutes=request.window_minutes)

    cluster, all_nodes, resolve_findings = resolve_cluster(request, clusters)
    nodes = select_targets(all_nodes, request)
    snapshots, collection = collect_nodes(nodes, node_runner)
    evaluations = [
        evaluate_node(n, snapshots[n.instance_id], thresholds) for n in nodes if n.instance_id in snapshots
    ]
    mounts = [Mount(**m) for e in evaluations for m in e.mounts]
    fs_data = file_system_data(request, fsx, metrics, mounts, (start, end))
    cluster_level = [
        *resolve_findings,
        *cluster_findings(cluster, nodes, evaluations, fs_data, thresholds),
        *fs_data.findings,
        *health_findings(cluster, logs, (start, end), focus_nodes(request)),
    ]
    summaries = node_summaries(nodes, evaluations, collection)
    return DiagnosisResult(
        findings=[*collection, *cluster_level, *(f for e in evaluations for f in e.findings)],
        cluster=cluster,
        nodes=list(nodes),
        file_systems=fs_data.systems,
        metrics=fs_data.series,
        window_start=start,
        window_end=end,
        collected_nodes=sorted(snapshots),
        node_summaries=summaries,
        fs_data=fs_data,
    )
