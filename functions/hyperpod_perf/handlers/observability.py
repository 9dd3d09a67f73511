"""Powertools logger, tracer and metrics: created once, shared by every handler."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "hyperpod-perf"
NAMESPACE = "HyperPodPerf"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
