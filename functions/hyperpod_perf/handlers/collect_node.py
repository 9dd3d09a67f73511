"""CollectNode: one node over an SSM session; raw output to S3 before it is judged."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.collect.runner import SessionNodeRunner
from hyperpod_perf.handlers.events import CollectEvent
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import CollectSettings, load
from hyperpod_perf.pipeline.nodes import collect_node


@logger.inject_lambda_context(correlation_id_path="run.execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=CollectEvent)
def handler(event: CollectEvent, context: LambdaContext) -> dict[str, Any]:
    settings = load(CollectSettings)
    session = clients.session_client(settings.session_total_timeout_s)
    runner = SessionNodeRunner(
        event.target.cluster_id,
        lambda: session,
        document_name=settings.session_document_name,
        concurrency=1,
        rate_per_s=settings.session_rate_per_s,
    )
    result = collect_node(event.target, event.run, runner=runner, store=clients.store(settings.report_bucket))
    if result["status"] != "collected":
        metrics.add_metric(name="CollectionFailures", unit=MetricUnit.Count, value=1)
    return result
