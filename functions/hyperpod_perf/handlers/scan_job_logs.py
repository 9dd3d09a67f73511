"""ScanJobLogs: one batch of the job-log Distributed Map scanned into a partial scan (or, from the
Map's Catch, a part naming the objects a failed child could not read)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.domain.steps import JobLogBatchEvent
from hyperpod_perf.handlers.events import parsed_event
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import BucketSettings, load
from hyperpod_perf.pipeline.joblog_map import scan_batch

clients.preload("s3", "logs")  # in Lambda, at init (aws/clients.py)


@logger.inject_lambda_context(correlation_id_path="run.execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@parsed_event(JobLogBatchEvent)
def handler(event: JobLogBatchEvent, context: LambdaContext) -> dict[str, Any]:
    store = clients.store(load(BucketSettings).report_bucket)
    return scan_batch(
        event.batch.model_dump(), event.run, sources=clients.job_log_sources(), store=store, error=event.error
    )
