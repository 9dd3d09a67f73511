"""One function per state of the diagnose state machine: the engine stages plus S3 hand-offs.

Why S3 between states: a state's payload is capped at 256 KB, and a 2,000-node fan-out (or one
node's raw output) is far larger. Each step writes its result under the run's prefix
(`pipeline.layout`) and passes small keys along; the raw node output is written *before* it is
parsed, so nothing collected is ever lost to a parser or a later failure.

Handlers call these with adapters built from boto3 clients; the local run and the tests call
them with the same adapters over moto.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ValidationError

from hyperpod_perf.aws.errors import AwsAdapterError, Throttled
from hyperpod_perf.aws.fsx import Mount
from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.cluster_models import ClusterInfo, ClusterNode, FileSystemData
from hyperpod_perf.collect.runner import NodeFailure, NodeRunner, NodeTarget
from hyperpod_perf.collect.snapshot import parse_container
from hyperpod_perf.diagnose import (
    ClusterNotFound as EngineClusterNotFound,
)
from hyperpod_perf.diagnose import (
    ClustersPort,
    DiagnosisError,
    FsxPort,
    LogsPort,
    MetricsPort,
    NodeEvaluation,
    build_report,
    cluster_findings,
    evaluate_node,
    file_system_data,
    health_findings,
    not_collected_summary,
    not_running_finding,
    select_targets,
)
from hyperpod_perf.models import (
    DiagnoseRequest,
    Finding,
    Handoff,
    NotifyPolicy,
    Report,
    RunbookSection,
    RunInfo,
    Severity,
    TargetScope,
    has_concern,
)
from hyperpod_perf.pipeline.errors import NEXT_STEPS, ClusterNotFound, InvalidRequest, NoTargets
from hyperpod_perf.pipeline.layout import RunLayout, cluster_prefix
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds


class TargetItem(BaseModel):
    """One Map item: the node to collect (kept small: up to 2,000 of them per run)."""

    instance_id: str
    cluster_id: str
    group: str = ""
    hostname: str | None = None
    instance_type: str | None = None
    az: str | None = None
    status: str | None = None

    def cluster_node(self) -> ClusterNode:
        return ClusterNode(
            instance_id=self.instance_id,
            group=self.group,
            hostname=self.hostname,
            instance_type=self.instance_type,
            az=self.az,
            status=self.status,
        )


class ResolvedCluster(BaseModel):
    """What ResolveCluster returns to the state machine (targets inline only when few)."""

    mode: str  # inline | distributed
    target_count: int
    max_concurrency: int
    targets: list[TargetItem] | None = None
    targets_key: str | None = None
    cluster_id: str


# --- ValidateRequest ------------------------------------------------------------------------------


def validate_request(raw: Any, execution: str, started: str) -> dict[str, Any]:
    """The execution input as a DiagnoseRequest, and the run's S3 layout."""
    if not isinstance(raw, dict):
        raise InvalidRequest('the execution input must be a JSON object such as {"cluster": "my-cluster"}')
    try:
        request = DiagnoseRequest.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "input"
        raise InvalidRequest(f"invalid request field {where!r}: {err['msg']}") from exc
    run = RunLayout.new(request.cluster_name, execution, _parse_time(started))
    return {"request": request.model_dump(mode="json", exclude_none=True), "run": run.model_dump()}


def _parse_time(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return datetime.now(UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# --- ResolveCluster -------------------------------------------------------------------------------


def resolve_cluster(
    request: DiagnoseRequest,
    run: RunLayout,
    *,
    clusters: ClustersPort,
    store: ReportStore,
    distributed_threshold: int,
    max_concurrency: int,
) -> ResolvedCluster:
    from hyperpod_perf.diagnose import resolve_cluster as resolve

    try:
        cluster, nodes, findings = resolve(request, clusters)
    except EngineClusterNotFound as exc:
        raise ClusterNotFound(str(exc)) from exc
    except DiagnosisError as exc:
        if isinstance(exc.__cause__, Throttled):
            raise exc.__cause__ from exc
        raise
    targets = select_targets(nodes, request)
    if not targets:
        named = f" (named: {', '.join(request.nodes[:5])})" if request.nodes else ""
        raise NoTargets(f"cluster {cluster.name} has no node to diagnose{named}")
    store.put_json(
        run.work("cluster"),
        {
            "cluster": cluster.model_dump(mode="json"),
            "nodes": [n.model_dump(mode="json") for n in targets],
            "findings": [f.model_dump(mode="json") for f in findings],
        },
    )
    items = [
        TargetItem(
            instance_id=n.instance_id,
            cluster_id=cluster.cluster_id,
            group=n.group,
            hostname=n.hostname,
            instance_type=n.instance_type,
            az=n.az,
            status=n.status,
        )
        for n in targets
    ]
    resolved = ResolvedCluster(
        mode="distributed" if len(items) > distributed_threshold else "inline",
        target_count=len(items),
        max_concurrency=max_concurrency,
        cluster_id=cluster.cluster_id,
    )
    if resolved.mode == "distributed":
        key = store.put_json(run.work("targets"), [i.model_dump(mode="json") for i in items])
        return resolved.model_copy(update={"targets_key": key})
    return resolved.model_copy(update={"targets": items})


# --- CollectNode / RecordNodeFailure --------------------------------------------------------------


def collect_node(
    target: TargetItem,
    run: RunLayout,
    *,
    runner: NodeRunner,
    store: ReportStore,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> dict[str, Any]:
    """Collect one node (raw output to S3 first), judge it, and store its evaluation."""
    node = target.cluster_node()
    if not node.running and target.status is not None:
        return _record_not_running(node, run, store=store)
    (outcome,) = runner.collect([NodeTarget(target.instance_id, target.group, target.hostname)])
    if isinstance(outcome, NodeFailure):
        if outcome.reason == "Throttled":
            raise Throttled(f"{target.instance_id}: {outcome.detail}", context="ssm:StartSession")
        if outcome.partial_text:
            return _record_partial(node, target, run, outcome, store=store, thresholds=thresholds)
        return record_failure(target, run, outcome.reason, outcome.detail, store=store)
    raw_key = run.raw(target.instance_id)
    store.put_text(raw_key, outcome.text)
    snapshot = parse_container(outcome.text, f"{target.instance_id}.txt")
    evaluation = evaluate_node(node, snapshot, thresholds, raw_key=raw_key)
    store.put_json(run.node_result(target.instance_id), evaluation.model_dump(mode="json"))
    concerns = sum(1 for f in evaluation.findings if f.severity is Severity.CONCERN)
    return {"node": target.instance_id, "status": "collected", "concerns": concerns}


def _record_not_running(node: ClusterNode, run: RunLayout, *, store: ReportStore) -> dict[str, Any]:
    finding = not_running_finding(node)
    evaluation = NodeEvaluation(
        node=node.instance_id,
        findings=[finding],
        summary=not_collected_summary(node, finding.summary, "not_collected"),
    )
    store.put_json(run.node_result(node.instance_id), evaluation.model_dump(mode="json"))
    return {"node": node.instance_id, "status": "not_collected", "reason": "NodeNotRunning"}


def _record_partial(
    node: ClusterNode,
    target: TargetItem,
    run: RunLayout,
    outcome: NodeFailure,
    *,
    store: ReportStore,
    thresholds: Thresholds,
) -> dict[str, Any]:
    """The channel broke mid-stream: keep every byte that arrived, judge the sections it holds,
    and say the node's collection is incomplete and why."""
    raw_key = run.raw(target.instance_id)
    store.put_text(raw_key, outcome.partial_text or "")
    snapshot = parse_container(outcome.partial_text or "", f"{target.instance_id}.txt")
    evaluation = evaluate_node(node, snapshot, thresholds, raw_key=raw_key)
    cut = [s.name for s in snapshot.sections.values() if not s.complete]
    kept = [  # the "cut off" note of the container is this finding's own subject: say it once
        f for f in evaluation.findings if not (f.check == "collect.node" and "cut off" in f.summary)
    ]
    incomplete = Finding(
        node=target.instance_id,
        check="collect.node",
        severity=Severity.CONCERN,
        section=RunbookSection.COLLECTION,
        summary=f"collection incomplete: {outcome.reason}: {outcome.detail}"[:500],
        evidence={
            "reason": outcome.reason,
            "detail": outcome.detail[:1000],
            "partial_bytes": len((outcome.partial_text or "").encode()),
            "sections_received": sorted(snapshot.sections),
            "cut_in_section": cut[0] if cut else None,
        },
        next_step="The sections that arrived were evaluated; re-run the diagnosis for the rest.",
        handoff=Handoff.SSM,
    )
    summary = evaluation.summary.model_copy(
        update={"collection": "failed", "collection_error": f"incomplete: {outcome.reason}"}
    )
    evaluation = evaluation.model_copy(update={"findings": [incomplete, *kept], "summary": summary})
    store.put_json(run.node_result(target.instance_id), evaluation.model_dump(mode="json"))
    return {"node": target.instance_id, "status": "partial", "reason": outcome.reason}


def record_failure(
    target: TargetItem, run: RunLayout, reason: str, detail: str, *, store: ReportStore
) -> dict[str, Any]:
    """A node that yielded nothing: a collect.node CONCERN with the reason, stored like any result."""
    finding = Finding(
        node=target.instance_id,
        check="collect.node",
        severity=Severity.CONCERN,
        section=RunbookSection.COLLECTION,
        summary=f"could not be collected: {reason}: {detail}"[:500],
        evidence={"reason": reason, "detail": detail[:1000]},
        next_step="Check the node's SSM agent (aws ssm describe-instance-information), then re-run.",
        handoff=Handoff.SSM,
    )
    node = target.cluster_node()
    evaluation = NodeEvaluation(
        node=target.instance_id,
        findings=[finding],
        summary=not_collected_summary(node, f"{reason}: {detail}"),
    )
    store.put_json(run.node_result(target.instance_id), evaluation.model_dump(mode="json"))
    return {"node": target.instance_id, "status": "failed", "reason": reason}


def failure_from_state_error(error: dict[str, Any]) -> tuple[str, str]:
    """(reason, detail) from a Catch block's {Error, Cause}; Cause is the Lambda error JSON."""
    reason = str(error.get("Error") or "Unknown")
    cause = error.get("Cause") or ""
    try:
        detail = json.loads(cause).get("errorMessage") or cause
    except (TypeError, ValueError, AttributeError):
        detail = str(cause)
    return reason, str(detail)[:1000]


# --- FsxMetrics / ClusterLogs / NcclResults -------------------------------------------------------


def load_evaluations(store: ReportStore, run: RunLayout) -> list[NodeEvaluation]:
    return [
        NodeEvaluation.model_validate(store.get_json(key))
        for key in store.list_keys(run.node_results_prefix)
        if key.endswith(".json")
    ]


def _window(request: DiagnoseRequest, run: RunLayout) -> tuple[datetime, datetime]:
    end = _parse_time(run.started)
    return end - timedelta(minutes=request.window_minutes), end


def fsx_metrics(
    request: DiagnoseRequest, run: RunLayout, *, fsx: FsxPort, metrics: MetricsPort, store: ReportStore
) -> dict[str, Any]:
    """File systems given in the request, or found in the nodes' mounts, and their metrics."""
    mounts = [Mount(**m) for e in load_evaluations(store, run) for m in e.mounts]
    data = file_system_data(request, fsx, metrics, mounts, _window(request, run))
    key = store.put_json(run.work("fsx"), data.model_dump(mode="json"))
    return {"key": key, "file_systems": [fs.file_system_id for fs in data.systems]}


def cluster_logs(
    request: DiagnoseRequest, run: RunLayout, *, logs: LogsPort, store: ReportStore
) -> dict[str, Any]:
    cluster = ClusterInfo.model_validate(store.get_json(run.work("cluster"))["cluster"])
    selected = set(request.nodes) if request.scope is TargetScope.FOCUS and request.nodes else None
    findings = health_findings(cluster, logs, _window(request, run), selected)
    key = store.put_json(run.work("logs"), [f.model_dump(mode="json") for f in findings])
    return {"key": key, "findings": len(findings)}


def nccl_results(
    request: DiagnoseRequest,
    run: RunLayout,
    *,
    read_prefix: Callable[[str], list[tuple[str, str]]],
    store: ReportStore,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> dict[str, Any]:
    """Pairwise nccl-tests logs under the request's S3 prefix, analysed."""
    from hyperpod_perf.nccl.analysis import analyze_logs

    assert request.nccl_s3_prefix is not None
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
        analysis = analyze_logs(logs, thresholds, instance_type)
        payload = {
            "analysis": analysis.to_dict(),
            "findings": [f.model_dump(mode="json") for f in analysis.findings],
        }
    key = store.put_json(run.work("nccl"), payload)
    return {"key": key, "logs": len(logs)}


# --- Evaluate -------------------------------------------------------------------------------------


def evaluate_run(
    request: DiagnoseRequest,
    run: RunLayout,
    *,
    store: ReportStore,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Node + cluster rules over everything gathered; the report written in every format."""
    from hyperpod_perf.report.render import render_report

    gathered = store.get_json(run.work("cluster"))
    cluster = ClusterInfo.model_validate(gathered["cluster"])
    nodes = [ClusterNode.model_validate(n) for n in gathered["nodes"]]
    evaluations = {e.node: e for e in load_evaluations(store, run)}
    findings = [Finding.model_validate(f) for f in gathered["findings"]]
    missing = [n for n in nodes if n.instance_id not in evaluations]
    for node in missing:  # a Map iteration that left no result at all (should not happen)
        findings.append(
            Finding(
                node=node.instance_id,
                check="collect.node",
                severity=Severity.CONCERN,
                section=RunbookSection.COLLECTION,
                summary="no collection result was recorded for this node",
                evidence={"reason": "NoResult"},
                handoff=Handoff.SSM,
            )
        )
    fs_data = _optional(store, run.work("fsx"), FileSystemData.model_validate) or FileSystemData()
    ordered = [evaluations[n.instance_id] for n in nodes if n.instance_id in evaluations]
    findings.extend(cluster_findings(cluster, nodes, ordered, fs_data, thresholds))
    findings.extend(fs_data.findings)
    findings.extend(Finding.model_validate(f) for f in (_optional(store, run.work("logs"), list) or []))
    nccl = _optional(store, run.work("nccl"), dict)
    if nccl:
        findings.extend(Finding.model_validate(f) for f in nccl.get("findings", []))
    node_findings = [f for e in ordered for f in e.findings]
    summaries = [e.summary for e in ordered] + [
        not_collected_summary(n, "no result recorded") for n in missing
    ]
    report = build_report(
        cluster,
        [*node_findings, *findings],
        summaries,
        fs_data,
        RunInfo(
            execution=run.execution,
            started=run.started,
            finished=(now or datetime.now(UTC)).isoformat(),
            reason=request.reason,
            window_minutes=request.window_minutes,
            region=request.region,
            location=f"s3://{store.bucket}/{run.prefix}",
        ),
        nccl=(nccl or {}).get("analysis"),
    )
    for fmt, ext in (("json", "json"), ("md", "md"), ("html", "html")):
        store.put_text(run.report(ext), render_report(report, fmt), _CONTENT_TYPES[ext])
    return {
        "report_key": run.report("json"),
        "verdict": report.verdict,
        "concerns": len(report.concerns),
        "nodes": len(summaries),
        "collection_failures": sum(1 for s in summaries if s.collection != "collected"),
    }


_CONTENT_TYPES = {
    "json": "application/json",
    "md": "text/markdown; charset=utf-8",
    "html": "text/html; charset=utf-8",
}


def _optional(store: ReportStore, key: str, parse: Callable[[Any], Any]) -> Any:
    from hyperpod_perf.aws.errors import NotFound

    try:
        return parse(store.get_json(key))
    except NotFound:
        return None


# --- Publish / ReportProblem ----------------------------------------------------------------------


def previous_report(store: ReportStore, run: RunLayout, cluster_name: str) -> Report | None:
    """The latest earlier report of the same cluster (runs sort by their UTC timestamp prefix)."""
    from hyperpod_perf.report.json_report import load_report

    earlier = [p for p in store.list_prefixes(cluster_prefix(cluster_name)) if p < run.prefix]
    for prefix in reversed(earlier):
        try:
            return load_report(store.get_text(f"{prefix}report.json"))
        except (AwsAdapterError, ValueError):
            continue
    return None


def publish(
    request: DiagnoseRequest,
    run: RunLayout,
    *,
    store: ReportStore,
    notify: Callable[[str, str, dict[str, Any]], str],
    policy: NotifyPolicy,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> dict[str, Any]:
    """History against the previous run, then one SNS message (e-mail text + Chatbot JSON)."""
    from hyperpod_perf.report.chatbot import render_chatbot
    from hyperpod_perf.report.email import email_subject, render_email
    from hyperpod_perf.report.history import diff_reports
    from hyperpod_perf.report.json_report import load_report
    from hyperpod_perf.report.render import render_report

    report = load_report(store.get_text(run.report("json")))
    previous = previous_report(store, run, report.cluster.name)
    if previous is not None:
        report = report.model_copy(
            update={"history": diff_reports(previous, report, drift_ratio=thresholds.history_drift_ratio)}
        )
        for fmt, ext in (("json", "json"), ("md", "md"), ("html", "html")):
            store.put_text(run.report(ext), render_report(report, fmt), _CONTENT_TYPES[ext])
    effective = request.notify or policy
    if effective is NotifyPolicy.CONCERN and not has_concern(report.findings):
        return {"published": False, "reason": "no concern and notify policy is 'concern'"}
    email = render_email(report)
    chatbot = render_chatbot(report)
    store.put_text(f"{run.prefix}notification-email.txt", email)
    store.put_json(f"{run.prefix}notification-chatbot.json", chatbot)
    message_id = notify(email_subject(report), email, chatbot)
    return {"published": True, "message_id": message_id, "history": previous is not None}


def report_problem(
    state: Any,
    execution: str,
    problem: dict[str, Any],
    *,
    store: ReportStore | None,
    notify: Callable[[str, str, dict[str, Any]], str],
) -> dict[str, Any]:
    """The run could not finish: say so, why, and what to do — never a bare failure."""
    reason, detail = failure_from_state_error(problem or {})
    state = state if isinstance(state, dict) else {}
    request = state.get("request") or state.get("input") or state
    cluster = request.get("cluster") if isinstance(request, dict) else None
    cluster_text = repr(cluster)[:80] if cluster is not None else "(none given)"
    name = str(cluster)[:40] if cluster else "a cluster"
    subject = f"hyperpod-perf: diagnosis of {name} could not run ({reason})"
    lines = [
        f"The diagnosis could not run: {reason}.",
        "",
        f"Cluster:   {cluster_text}",
        f"Execution: {execution}",
        f"Reason:    {detail}",
        "",
        "What to do: "
        + NEXT_STEPS.get(reason, "Open the execution in the Step Functions console for details."),
        "",
        "Nothing was changed on the cluster (hyperpod-perf is read-only).",
    ]
    text = "\n".join(lines) + "\n"
    chatbot = {
        "version": "1.0",
        "source": "custom",
        "content": {
            "textType": "client-markdown",
            "title": f":warning: hyperpod-perf could not diagnose {name}",
            "description": f"*{reason}*: {detail[:500]}",
            "nextSteps": [NEXT_STEPS.get(reason, "Open the execution in the Step Functions console.")],
        },
        "metadata": {"additionalContext": {"execution": execution[:80]}},
    }
    run = state.get("run") if isinstance(state.get("run"), dict) else None
    if store is not None and run is not None:
        try:
            layout = RunLayout.model_validate(run)
            store.put_json(
                f"{layout.prefix}problem.json", {"reason": reason, "detail": detail, "execution": execution}
            )
        except (AwsAdapterError, ValidationError):
            pass  # the notification below still goes out
    message_id = notify(subject, text, chatbot)
    return {"notified": True, "reason": reason, "message_id": message_id}
