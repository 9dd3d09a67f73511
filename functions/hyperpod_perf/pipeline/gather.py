"""FsxMetrics, ClusterLogs and NcclResults: the cluster-level evidence beside the nodes.

Three functions import this module and each calls one of its steps, so what only one step uses
is imported inside that step (the nodes' mounts and the FSx service in FsxMetrics, the thresholds
and the NCCL analysis in NcclResults): the others' cold start does not pay for it
(docs/ARCHITECTURE.md, cold start).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.domain.cluster import ClusterInfo
from hyperpod_perf.domain.errors import AwsAdapterError
from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.domain.request import DiagnoseRequest
from hyperpod_perf.pipeline.request import parse_time
from hyperpod_perf.service.logs import health_findings
from hyperpod_perf.service.ports import FsxPort, LogsPort, MetricsPort
from hyperpod_perf.service.targets import focus_nodes

if TYPE_CHECKING:
    from hyperpod_perf.rules.thresholds import Thresholds


def _window(request: DiagnoseRequest, run: RunLayout) -> tuple[datetime, datetime]:
    end = parse_time(run.started)
    return end - timedelta(minutes=request.window_minutes), end


def fsx_metrics(
    request: DiagnoseRequest, run: RunLayout, *, fsx: FsxPort, metrics: MetricsPort, store: ReportStore
) -> dict[str, Any]:
    """File systems given in the request, or found in the nodes' mounts, and their metrics."""
    from hyperpod_perf.pipeline.results import load_mounts
    from hyperpod_perf.service.fsx import file_system_data

    mounts = load_mounts(store, run)
    data = file_system_data(request, fsx, metrics, mounts, _window(request, run))
    key = store.put_json(run.work("fsx"), data.model_dump(mode="json"))
    return {"key": key, "file_systems": [fs.file_system_id for fs in data.systems]}


def cluster_logs(
    request: DiagnoseRequest, run: RunLayout, *, logs: LogsPort, store: ReportStore
) -> dict[str, Any]:
    cluster = ClusterInfo.model_validate(store.get_json(run.work("cluster"))["cluster"])
    findings = health_findings(cluster, logs, _window(request, run), focus_nodes(request))
    key = store.put_json(run.work("logs"), [f.model_dump(mode="json") for f in findings])
    return {"key": key, "findings": len(findings)}


def nccl_results(
    request: DiagnoseRequest,
    run: RunLayout,
    *,
    read_prefix: Callable[[str], list[tuple[str, str]]],
    store: ReportStore,
    thresholds: Thresholds | None = None,
) -> dict[str, Any]:
    """Pairwise nccl-tests logs under the request's S3 prefix, analysed (`thresholds`: the
    catalog's defaults unless given)."""
    from hyperpod_perf.nccl.analysis import analyze_logs
    from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS

    thresholds = thresholds or DEFAULT_THRESHOLDS

    # bandit B101: type narrowing of an invariant the caller established
    assert request.nccl_s3_prefix is not None  # nosec B101
    nodes = store.get_json(run.work("cluster"))["nodes"]
    instance_type = next((n.get("instance_type") for n in nodes if n.get("instance_type")), None)
    logs: list[tuple[str, str]] = []
    try:
        logs = read_prefix(request.nccl_s3_prefix)
    except AwsAdapterError as exc:
        finding = Finding(
            check="nccl.pair_slow",
            severity=Severity.INFO,
            section=RunbookSection.NCCL,
            summary=f"pairwise NCCL results at {request.nccl_s3_prefix}: not checked ({exc.reason})",
            evidence={"reason": exc.reason, "detail": str(exc)[:500]},
        )
        payload: dict[str, Any] = {"analysis": None, "findings": [finding.model_dump(mode="json")]}
    else:
        from hyperpod_perf.pipeline.topology import pair_placement

        placement = pair_placement(store, run, nodes)
        analysis = analyze_logs(logs, thresholds, instance_type, placement=placement or None)
        payload = {
            "analysis": analysis.to_dict(),
            "findings": [f.model_dump(mode="json") for f in analysis.findings],
        }
    key = store.put_json(run.work("nccl"), payload)
    return {"key": key, "logs": len(logs)}


class JobLogPort(Protocol):
    def prefix(self, uri: str, bounds: Any) -> Iterator[tuple[str, Iterable[bytes]]]: ...

    def group(
        self,
        group: str,
        start: datetime,
        end: datetime,
        filter_pattern: str | None,
        bounds: Any,
        insights_pattern: str | None = None,
    ) -> Iterator[tuple[str, Iterable[bytes]]]: ...


def job_logs(
    request: DiagnoseRequest, run: RunLayout, *, sources: JobLogPort, store: ReportStore
) -> dict[str, Any]:
    """The training job's own logs (an S3 prefix and/or a log group), scanned in one stream.

    A source that cannot be read becomes an INFO finding saying so; what the others held is
    still judged. The instance type of the cluster's nodes says whether EFA was expected."""
    from hyperpod_perf.domain.bounded_stream import ReadBounds
    from hyperpod_perf.joblogs import evaluate, scan_logs
    from hyperpod_perf.joblogs.coverage import coverage_findings
    from hyperpod_perf.joblogs.normalize import insights_pattern
    from hyperpod_perf.pipeline.joblog_map import reduce_parts

    nodes = store.get_json(run.work("cluster"))["nodes"]
    instance_type = next((n.get("instance_type") for n in nodes if n.get("instance_type")), None)
    bounds = ReadBounds()
    unread: list[tuple[str, AwsAdapterError]] = []

    # the prefix was fanned out on the job-log Distributed Map: its children's parts, merged
    reduced = reduce_parts(store, run, instance_type) if request.job_logs_s3_prefix else None

    def logs() -> Iterator[tuple[str, Iterable[bytes]]]:
        if request.job_logs_s3_prefix and reduced is None:
            try:
                yield from sources.prefix(request.job_logs_s3_prefix, bounds)
            except AwsAdapterError as exc:
                unread.append((request.job_logs_s3_prefix, exc))
        if request.job_logs_group:
            start, end = _window(request, run)
            try:
                yield from sources.group(
                    request.job_logs_group, start, end, request.job_logs_filter, bounds, insights_pattern()
                )
            except AwsAdapterError as exc:
                unread.append((f"log group {request.job_logs_group}", exc))

    scan = scan_logs(logs(), instance_type, bounds)
    notes = [(where, exc.reason, str(exc)[:500]) for where, exc in unread]
    if reduced is not None:
        parts, part_notes = reduced
        scan.merge(parts)
        notes.extend(part_notes)
    if not scan.logs and not notes:
        notes.append(("the locations given", "no job logs found there", ""))
    findings = evaluate(scan) if scan.logs else coverage_findings(scan.bounds)
    findings.extend(coverage_findings(ReadBounds(), notes))
    payload = {
        "findings": [f.model_dump(mode="json") for f in findings],
        "logs": scan.logs,
        "records": scan.records,
    }
    key = store.put_json(run.work("joblogs"), payload)
    return {"key": key, "logs": scan.logs, "findings": len(findings)}
