"""NcclResults: the pairwise nccl-tests logs under the request's S3 prefix, analysed; and the
training job's own logs (job-log forensics) when the request names them."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.domain.steps import ClusterEvent
from hyperpod_perf.handlers.events import parsed_event
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import BucketSettings, load
from hyperpod_perf.pipeline.gather import job_logs, nccl_results

clients.preload("s3", "logs")  # in Lambda, at init (aws/clients.py)


@logger.inject_lambda_context(correlation_id_path="run.execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@parsed_event(ClusterEvent)
def handler(event: ClusterEvent, context: LambdaContext) -> dict[str, Any]:
    store = clients.store(load(BucketSettings).report_bucket)
    request, run = event.request, event.run
    result: dict[str, Any] = {}
    if request.nccl_s3_prefix:
        result = nccl_results(request, run, read_prefix=clients.prefix_reader(), store=store)
    if request.job_logs_s3_prefix or request.job_logs_group:
        result["job_logs"] = job_logs(request, run, sources=clients.job_log_sources(), store=store)
    return result
