"""ClusterMetrics: every node's exporter series over the window, from the cluster's AMP workspace."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.domain.steps import ClusterEvent
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import BucketSettings, load
from hyperpod_perf.pipeline.metrics import cluster_metrics

clients.preload("s3")  # in Lambda, at init (aws/clients.py)


@logger.inject_lambda_context(correlation_id_path="run.execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=ClusterEvent)
def handler(event: ClusterEvent, context: LambdaContext) -> dict[str, Any]:
    store = clients.store(load(BucketSettings).report_bucket)
    return cluster_metrics(event.request, event.run, source=clients.metrics_source, store=store)
