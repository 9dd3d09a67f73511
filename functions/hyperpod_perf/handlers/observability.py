"""Powertools logger, tracer and metrics: created once, shared by every handler."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric

SERVICE = "hyperpod-perf"
NAMESPACE = "HyperPodPerf"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)


def emit_concerns_by_check(concerns_by_check: dict[str, int]) -> None:
    """One `Concerns` datapoint per check id, with a `Check` dimension (the dashboard's lines).

    An EMF document carries one dimension set for all its metrics, so each check gets its own
    document (`single_metric`), with the service dimension the other metrics have.
    """
    for check, count in sorted(concerns_by_check.items()):
        with single_metric(
            name="Concerns",
            unit=MetricUnit.Count,
            value=count,
            namespace=NAMESPACE,
            default_dimensions={"service": SERVICE},
        ) as metric:
            metric.add_dimension(name="Check", value=check)
