"""RecordNodeFailure: a CollectNode batch that failed for good; each of its nodes without a stored
outcome becomes that node's collect.node finding (nodes the batch did record keep theirs)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.domain.steps import NodeFailureEvent
from hyperpod_perf.handlers.events import parsed_event
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import BucketSettings, load
from hyperpod_perf.pipeline.nodes import record_batch_failure
from hyperpod_perf.pipeline.request import failure_from_state_error

clients.preload("s3")  # in Lambda, at init (aws/clients.py)


@logger.inject_lambda_context(correlation_id_path="run.execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@parsed_event(NodeFailureEvent)
def handler(event: NodeFailureEvent, context: LambdaContext) -> dict[str, Any]:
    reason, detail = failure_from_state_error(event.error)
    store = clients.store(load(BucketSettings).report_bucket)
    result = record_batch_failure(event.batch, event.run, reason, detail, store=store)
    metrics.add_metric(name="CollectionFailures", unit=MetricUnit.Count, value=result["failed"])
    return result
