"""ClusterMetrics: every node's exporter series over the window, from the cluster's AMP workspace,
then the fan-out re-planned for the nodes that still need the SSM deep collection."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.domain.steps import ClusterEvent
from hyperpod_perf.handlers.events import parsed_event
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import ResolveSettings, load
from hyperpod_perf.pipeline.cluster import with_deployment_defaults
from hyperpod_perf.pipeline.metrics import cluster_metrics

clients.preload("s3")  # in Lambda, at init (aws/clients.py)


@logger.inject_lambda_context(correlation_id_path="run.execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@parsed_event(ClusterEvent)
def handler(event: ClusterEvent, context: LambdaContext) -> dict[str, Any]:
    settings = load(ResolveSettings)
    return cluster_metrics(
        with_deployment_defaults(event.request, sample_size=settings.node_sample_size),
        event.run,
        source=clients.metrics_source,
        store=clients.store(settings.report_bucket),
        fan_out_settings={
            "distributed_threshold": settings.distributed_map_threshold,
            "max_concurrency": settings.map_max_concurrency,
            "session_rate_per_s": settings.session_rate_per_s,
            "session_seconds": settings.session_seconds,
        },
    )
