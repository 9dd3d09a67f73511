"""PlanJobLogs: the training job's logs under the request's S3 prefix, listed and cut into the
batches of the job-log Distributed Map."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.domain.steps import RunEvent
from hyperpod_perf.handlers.events import parsed_event
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import BucketSettings, load
from hyperpod_perf.pipeline.joblog_map import plan_job_logs

clients.preload("s3", "logs")  # in Lambda, at init (aws/clients.py)


@logger.inject_lambda_context(correlation_id_path="run.execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@parsed_event(RunEvent)
def handler(event: RunEvent, context: LambdaContext) -> dict[str, Any]:
    store = clients.store(load(BucketSettings).report_bucket)
    return plan_job_logs(event.request, event.run, sources=clients.job_log_sources(), store=store)
