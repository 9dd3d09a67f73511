"""Publish: compare with the previous run, then e-mail and Slack (one SNS message)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.domain.steps import RunEvent
from hyperpod_perf.handlers.events import parsed_event
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import PublishSettings, load
from hyperpod_perf.pipeline.reporting import publish

clients.preload("s3", "sns")  # in Lambda, at init (aws/clients.py)


@logger.inject_lambda_context(correlation_id_path="run.execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@parsed_event(RunEvent)
def handler(event: RunEvent, context: LambdaContext) -> dict[str, Any]:
    settings = load(PublishSettings)
    return publish(
        event.request,
        event.run,
        store=clients.store(settings.report_bucket),
        notify=clients.notifier(settings.topic_arn).publish,
        policy=settings.notify_policy,
        links=clients.report_linker().links,
    )
