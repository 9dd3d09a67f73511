"""ResolveCluster: describe the cluster, list and place its nodes, choose the targets."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.domain.steps import RunEvent
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import ResolveSettings, load
from hyperpod_perf.pipeline.cluster import resolve_cluster, with_deployment_defaults

clients.preload("sagemaker", "s3")  # in Lambda, at init (aws/clients.py)


@logger.inject_lambda_context(correlation_id_path="run.execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=RunEvent)
def handler(event: RunEvent, context: LambdaContext) -> dict[str, Any]:
    settings = load(ResolveSettings)
    resolved = resolve_cluster(
        with_deployment_defaults(event.request, sample_size=settings.node_sample_size),
        event.run,
        clusters=clients.clusters(),
        store=clients.store(settings.report_bucket),
        distributed_threshold=settings.distributed_map_threshold,
        max_concurrency=settings.map_max_concurrency,
        session_rate_per_s=settings.session_rate_per_s,
        session_seconds=settings.session_seconds,
    )
    metrics.add_metric(name="NodesScanned", unit=MetricUnit.Count, value=resolved.target_count)
    return resolved.model_dump(mode="json", exclude_none=True)
