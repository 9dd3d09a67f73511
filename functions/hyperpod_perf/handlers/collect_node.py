"""CollectNode: a batch of nodes over SSM sessions, paced by one token bucket; raw output to S3
before it is judged, every node's outcome recorded by the handler itself."""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.collect.runner import SessionNodeRunner
from hyperpod_perf.domain.steps import CollectEvent
from hyperpod_perf.handlers.events import parsed_event
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import CollectSettings, load
from hyperpod_perf.pipeline.nodes import collect_batch
from hyperpod_perf.pipeline.pacing import SESSIONS_PER_INVOCATION

clients.preload("ssm", "s3")  # in Lambda, at init (aws/clients.py)

#: Seconds kept after the last session start for that session to finish and its result to be stored.
_STOP_MARGIN_S = 30.0


@logger.inject_lambda_context(correlation_id_path="run.execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@parsed_event(CollectEvent)
def handler(event: CollectEvent, context: LambdaContext) -> dict[str, Any]:
    settings = load(CollectSettings)
    session = clients.session_client(settings.session_total_timeout_s)
    remaining_s = context.get_remaining_time_in_millis() / 1000
    runner = SessionNodeRunner(
        event.batch.cluster_id,
        lambda: session,
        document_name=settings.session_document_name,
        concurrency=2 * SESSIONS_PER_INVOCATION,
        rate_per_s=event.rate_per_s,
        start_after_s=event.batch.start_after_s if event.attempt == 0 else 0.0,
        stop_starting_at=time.monotonic() + remaining_s - settings.session_total_timeout_s - _STOP_MARGIN_S,
    )
    store = clients.store(settings.report_bucket)
    result = collect_batch(event.batch, event.run, runner=runner, store=store, retry=event.attempt > 0)
    if result["failed"]:
        metrics.add_metric(name="CollectionFailures", unit=MetricUnit.Count, value=result["failed"])
    return result
