"""Evaluate and Publish: every rule over everything gathered, the report in each format, the
comparison with the previous run, and one notification.

The cluster rules, the report builder and the renderers are imported where they are used: the
Publish function loads none of the rules (its cold start, docs/ARCHITECTURE.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.domain.cluster import ClusterInfo, ClusterNode, FileSystemData
from hyperpod_perf.domain.errors import AwsAdapterError, NotFound
from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity, has_concern
from hyperpod_perf.domain.layout import RunLayout, cluster_prefix
from hyperpod_perf.domain.links import ReportLinks
from hyperpod_perf.domain.report import Report, RunInfo
from hyperpod_perf.domain.request import DiagnoseRequest, NotifyPolicy
from hyperpod_perf.pipeline.placement import placed_nodes, with_zones
from hyperpod_perf.pipeline.results import load_evaluations
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds


def evaluate_run(
    request: DiagnoseRequest,
    run: RunLayout,
    *,
    store: ReportStore,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    now: datetime | None = None,
    dashboard_url: str | None = None,
) -> dict[str, Any]:
    """Node + cluster rules over everything gathered; the report written in every format."""
    from hyperpod_perf.service.cluster_rules import cluster_findings
    from hyperpod_perf.service.report import build_report, not_collected_summary

    gathered = store.get_json(run.work("cluster"))
    cluster = ClusterInfo.model_validate(gathered["cluster"])
    findings = [Finding.model_validate(f) for f in gathered["findings"]]
    nodes = placed_nodes(store, run, [ClusterNode.model_validate(n) for n in gathered["nodes"]], findings)
    evaluations = {e.node: e for e in load_evaluations(store, run)}
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
    metrics = _metrics_verdict(request, store, run, findings)
    nccl = _optional(store, run.work("nccl"), dict)
    nccl, placed = _placed(store, run, cluster, nodes, ordered, nccl, thresholds, findings)
    if nccl:
        findings.extend(Finding.model_validate(f) for f in nccl.get("findings", []))
    node_findings = [f for e in ordered for f in e.findings]
    job_logs = _optional(store, run.work("joblogs"), dict)
    if job_logs:
        from hyperpod_perf.joblogs.crossref import cross_reference

        job_findings = [Finding.model_validate(f) for f in job_logs.get("findings", [])]
        findings.extend(cross_reference(job_findings, nodes, node_findings))
    summaries = placed(
        with_zones(
            [e.summary for e in ordered] + [not_collected_summary(n, "no result recorded") for n in missing],
            nodes,
        )
    )
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
            dashboard_url=dashboard_url,
            alarm=request.alarm,
        ),
        nccl=(nccl or {}).get("analysis"),
        metrics=metrics,
    )
    _write_report(store, run, report)
    from hyperpod_perf.pipeline.history import record_run

    history = record_run(store, run, report, repairs=_repairs(request))
    return {
        "report_key": run.report("json"),
        "history_rows": history,
        "verdict": report.verdict,
        "concerns": len(report.concerns),
        "nodes": len(summaries),
        "collection_failures": sum(1 for s in summaries if s.collection != "collected"),
        "concerns_by_check": dict(Counter(f.check for f in report.concerns)),
        "time_to_findings_s": _seconds_between(run.started, report.run.finished),
    }


def _metrics_verdict(
    request: DiagnoseRequest, store: ReportStore, run: RunLayout, findings: list[Finding]
) -> dict[str, Any] | None:
    """The metrics stage's findings into the run's; the rest of its verdict for the report. A
    configured source that left no verdict (the stage failed after its retries) is said, not skipped."""
    if not request.prometheus_workspace_id:  # no source configured: nothing to read
        return None
    verdict = _optional(store, run.work("metrics"), dict)
    if verdict is None:
        findings.append(
            Finding(
                check="metrics.coverage",
                severity=Severity.CONCERN,
                section=RunbookSection.COLLECTION,
                summary=f"the metrics stage left no verdict for {request.prometheus_workspace_id} "
                "(it failed after its retries): nothing was judged over time",
                evidence={"workspace": request.prometheus_workspace_id},
            )
        )
        return None
    findings.extend(Finding.model_validate(f) for f in verdict.get("findings", []))
    return {k: v for k, v in verdict.items() if k != "findings"}


def _placed(
    store: ReportStore,
    run: RunLayout,
    cluster: ClusterInfo,
    nodes: list[ClusterNode],
    evaluations: list[Any],
    nccl: dict[str, Any] | None,
    thresholds: Thresholds,
    findings: list[Finding],
) -> tuple[dict[str, Any] | None, Callable[[list[Any]], list[Any]]]:
    """The network layers (ResolveCluster's, else Slurm's) into the pair analysis and the fleet rows."""
    from hyperpod_perf.pipeline.topology import nccl_with_layers, run_placement, with_layers

    placement = run_placement(store, run, cluster.orchestrator, nodes, evaluations)
    findings.extend(placement.findings)
    return nccl_with_layers(nccl, placement, thresholds), lambda rows: with_layers(rows, placement.layers)


def _repairs(request: DiagnoseRequest) -> dict[str, str]:
    """The repair the starting event asked HyperPod for, per named node (kept on its history row)."""
    action = getattr(request, "repair_action", None)
    return {node: str(action) for node in request.nodes} if action else {}


def _seconds_between(started: str | None, finished: str | None) -> float | None:
    """Seconds from the run's start to its report (None when either time is missing or unreadable)."""
    try:
        start = datetime.fromisoformat(str(started).replace("Z", "+00:00"))
        end = datetime.fromisoformat(str(finished).replace("Z", "+00:00"))
    except ValueError:
        return None
    if start.tzinfo is None or end.tzinfo is None:
        return None
    return round(max((end - start).total_seconds(), 0.0), 3)


#: Report format (also the file extension) -> its S3 content type.
_CONTENT_TYPES = {
    "json": "application/json",
    "md": "text/markdown; charset=utf-8",
    "html": "text/html; charset=utf-8",
}


def _write_report(store: ReportStore, run: RunLayout, report: Report) -> None:
    """report.json/.md/.html: written by Evaluate, rewritten by Publish once history is known."""
    from hyperpod_perf.report.render import render_report

    for fmt, content_type in _CONTENT_TYPES.items():
        store.put_text(run.report(fmt), render_report(report, fmt), content_type)


def _optional(store: ReportStore, key: str, parse: Callable[[Any], Any]) -> Any:
    try:
        return parse(store.get_json(key))
    except NotFound:
        return None


# --- Publish ---------------------------------------------------------------------------------------


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
    links: Callable[[str], ReportLinks] | None = None,
) -> dict[str, Any]:
    """History against the previous run, then one SNS message (e-mail text + Chatbot JSON).

    `links` signs the report's links (aws/report_links.py) when the message is about to go out,
    so the presigned link's lifetime starts with the notification, not with the run."""
    from hyperpod_perf.report.chatbot import render_chatbot
    from hyperpod_perf.report.email import email_subject, render_email
    from hyperpod_perf.report.history import diff_reports
    from hyperpod_perf.report.json_report import load_report
    from hyperpod_perf.report.view import report_html_location

    report = load_report(store.get_text(run.report("json")))
    previous = previous_report(store, run, report.cluster.name)
    if previous is not None:
        report = report.model_copy(
            update={"history": diff_reports(previous, report, drift_ratio=thresholds.history_drift_ratio)}
        )
    report, offenders = _repeat_offenders(store, run, report, thresholds)
    verdicts = _after_repair(store, run, request, report, thresholds) if request.after_repair else []
    if verdicts:
        report = report.model_copy(update={"findings": [*report.findings, *verdicts]})
    if previous is not None or offenders or verdicts:
        _write_report(store, run, report)
    if verdicts:  # the short before/after notification, not the whole report
        from hyperpod_perf.history.repair import notification

        subject, body = notification(report, verdicts)
        store.put_text(f"{run.prefix}notification-email.txt", body)
        message_id = notify(
            subject, body, {"version": "1.0", "source": "custom", "content": {"description": body}}
        )
        return {"published": True, "message_id": message_id, "after_repair": [v.summary for v in verdicts]}
    effective = request.notify or policy
    if effective is NotifyPolicy.CONCERN and not has_concern(report.findings):
        return {"published": False, "reason": "no concern and notify policy is 'concern'"}
    where = report_html_location(report)
    report_links = links(where) if links is not None and where else None
    email = render_email(report, links=report_links)
    chatbot = render_chatbot(report, links=report_links)
    store.put_text(f"{run.prefix}notification-email.txt", email)
    store.put_json(f"{run.prefix}notification-chatbot.json", chatbot)
    message_id = notify(email_subject(report), email, chatbot)
    return {
        "published": True,
        "message_id": message_id,
        "history": previous is not None,
        "repeat_offenders": len(offenders),
    }


def _repeat_offenders(
    store: ReportStore, run: RunLayout, report: Report, thresholds: Thresholds
) -> tuple[Report, list[Any]]:
    """The report with each node's recurring concerns escalated from the run history."""
    from hyperpod_perf.domain.layout import run_id
    from hyperpod_perf.history.offenders import escalate
    from hyperpod_perf.pipeline.history import recent_rows

    days = thresholds.repeat_offender_window_days
    now = _parsed(report.run.started) or datetime.now(UTC)
    try:
        rows, _ = recent_rows(store, "findings", report.cluster.name, now, days)
    except AwsAdapterError:  # no history readable: the report goes out as it is
        return report, []
    return escalate(report, rows, run_id(run), min_runs=thresholds.repeat_offender_runs, window_days=days)


def _after_repair(
    store: ReportStore, run: RunLayout, request: DiagnoseRequest, report: Report, thresholds: Thresholds
) -> list[Finding]:
    """A `history.after_repair` verdict per node named as back in service."""
    from hyperpod_perf.domain.layout import run_id
    from hyperpod_perf.history.repair import verdict
    from hyperpod_perf.pipeline.history import recent_rows

    now = _parsed(report.run.started) or datetime.now(UTC)
    days = thresholds.repeat_offender_window_days
    try:
        node_rows, _ = recent_rows(store, "nodes", report.cluster.name, now, days)
        finding_rows, _ = recent_rows(store, "findings", report.cluster.name, now, days)
    except AwsAdapterError:
        node_rows, finding_rows = [], []
    return [
        verdict(
            report,
            node,
            node_rows,
            finding_rows,
            run_id(run),
            below_fleet_pct=thresholds.repair_below_fleet_pct,
        )
        for node in request.nodes
    ]


def _parsed(value: str | None) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
