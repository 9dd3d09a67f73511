"""NodePlacement: the targets' Availability Zone and private IP (DescribeClusterNode), beside the fan-out."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.domain.steps import ClusterEvent
from hyperpod_perf.handlers.events import parsed_event
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import BucketSettings, load
from hyperpod_perf.pipeline.placement import node_placement

clients.preload("sagemaker", "s3")  # in Lambda, at init (aws/clients.py)


@logger.inject_lambda_context(correlation_id_path="run.execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@parsed_event(ClusterEvent)
def handler(event: ClusterEvent, context: LambdaContext) -> dict[str, Any]:
    store = clients.store(load(BucketSettings).report_bucket)
    return node_placement(event.request, event.run, clusters=clients.clusters(), store=store)
