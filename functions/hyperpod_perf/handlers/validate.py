"""ValidateRequest: the execution input -> a DiagnoseRequest and the run's S3 layout."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.domain.request import Deployment
from hyperpod_perf.domain.steps import ValidateEvent
from hyperpod_perf.handlers.events import parsed_event
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import ValidateSettings, load
from hyperpod_perf.pipeline.request import validate_request


@logger.inject_lambda_context(correlation_id_path="execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@parsed_event(ValidateEvent)
def handler(event: ValidateEvent, context: LambdaContext) -> dict[str, Any]:
    settings = load(ValidateSettings)
    return validate_request(
        event.input,
        event.execution,
        event.started,
        deployment=Deployment.from_function_arn(getattr(context, "invoked_function_arn", None)),
        readable_s3_prefixes=settings.readable_s3_prefixes,
    )
