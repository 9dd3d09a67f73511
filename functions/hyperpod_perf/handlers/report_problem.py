"""ReportProblem: a run that cannot finish still ends with a clear notification saying why."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.domain.steps import ProblemEvent
from hyperpod_perf.handlers.events import parsed_event
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import PublishSettings, load
from hyperpod_perf.pipeline.request import report_problem

clients.preload("s3", "sns")  # in Lambda, at init (aws/clients.py)


@logger.inject_lambda_context(correlation_id_path="execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@parsed_event(ProblemEvent)
def handler(event: ProblemEvent, context: LambdaContext) -> dict[str, Any]:
    settings = load(PublishSettings)
    metrics.add_metric(name="DiagnosesFailed", unit=MetricUnit.Count, value=1)
    logger.warning("diagnosis could not finish", extra={"problem": event.problem.get("Error")})
    return report_problem(
        event.input,
        event.execution,
        event.problem,
        store=clients.store(settings.report_bucket),
        notify=clients.notifier(settings.topic_arn).publish,
        started=event.started,
        rejected=event.rejected,
    )
