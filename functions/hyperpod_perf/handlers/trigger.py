"""EventBridge -> one idempotent diagnosis execution per cluster and time window."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.domain.request import Deployment
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import TriggerSettings, load, load_clusters
from hyperpod_perf.pipeline.triggers import TriggerRejected, decide, execution_input

clients.preload("ssm", "stepfunctions")  # in Lambda, at init (aws/clients.py)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load(TriggerSettings)
    clusters = load_clusters(settings.clusters_parameter_path)
    try:
        decision = decide(
            event,
            list(clusters),
            window_minutes=settings.dedup_window_minutes,
            deployment=Deployment.from_function_arn(getattr(context, "invoked_function_arn", None)),
        )
    except TriggerRejected as rejected:
        logger.info("event ignored", extra={"reason": rejected.reason, "detail": rejected.detail})
        metrics.add_dimension(name="Reason", value=rejected.reason)
        metrics.add_metric(name="EventsRejected", unit=MetricUnit.Count, value=1)
        return {"started": False, "reason": rejected.reason, "detail": rejected.detail}
    started = clients.starter(settings.state_machine_arn).start(
        decision.execution_name, execution_input(decision.request)
    )
    metrics.add_metric(
        name="ExecutionsJoined" if started.already_running else "ExecutionsStarted",
        unit=MetricUnit.Count,
        value=1,
    )
    logger.info("diagnosis requested", extra={"execution": started.name, "joined": started.already_running})
    return {"started": not started.already_running, "execution_name": started.name, "kind": decision.kind}
