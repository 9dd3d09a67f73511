"""Evaluate: node + cluster rules over everything gathered; the report in JSON, Markdown, HTML."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.domain.steps import ClusterEvent
from hyperpod_perf.handlers.events import parsed_event
from hyperpod_perf.handlers.observability import emit_concerns_by_check, logger, metrics, tracer
from hyperpod_perf.handlers.settings import EvaluateSettings, load
from hyperpod_perf.pipeline.reporting import evaluate_run

clients.preload("s3")  # in Lambda, at init (aws/clients.py)


@logger.inject_lambda_context(correlation_id_path="run.execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@parsed_event(ClusterEvent)
def handler(event: ClusterEvent, context: LambdaContext) -> dict[str, Any]:
    settings = load(EvaluateSettings)
    result = evaluate_run(
        event.request,
        event.run,
        store=clients.store(settings.report_bucket),
        dashboard_url=settings.dashboard_url,
    )
    metrics.add_metric(name="Concerns", unit=MetricUnit.Count, value=result["concerns"])
    if result.get("time_to_findings_s") is not None:
        metrics.add_metric(name="TimeToFindings", unit=MetricUnit.Seconds, value=result["time_to_findings_s"])
    emit_concerns_by_check(result.get("concerns_by_check") or {})
    return result
