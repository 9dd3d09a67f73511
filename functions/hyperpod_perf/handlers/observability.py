"""Powertools logger, tracer and metrics: created once, shared by every handler — and cheap to load.

Every handler imports this module first, so what it loads is every function's cold start
(docs/ARCHITECTURE.md, "Cold start"; bench/RESULTS.md, "Cold start"):

- Logger and Metrics load no AWS SDK (EMF metrics are log lines).
- Tracer: Powertools' own provider imports the X-Ray SDK when the Tracer is created — even a
  disabled one — and the SDK creates a botocore X-Ray client for its sampling rules at import:
  ≈ 640 M CPU instructions (≈ 150 ms) before any handler code. Lambda's active tracing (the
  stack's default) records every invocation, its init and its Step Functions parent without any
  SDK, so the SDK is loaded only where the deployment asks for subsegments of the AWS calls
  (`xraySdkTracing`, which sets POWERTOOLS_TRACE_DISABLED=false); it then patches botocore only,
  the one library the functions call AWS with. Anywhere else (the default deployment, the CLI, the
  local run, the tests) the Tracer gets a provider that records nothing and imports nothing.

A new handler keeps that by using these three objects and the decorators the others use
(`logger.inject_lambda_context`, `tracer.capture_lambda_handler`, `metrics.log_metrics`), and by
importing the AWS adapters through `hyperpod_perf.aws.clients`, which loads boto3 on first use.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Generator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.shared import constants
from aws_lambda_powertools.shared.functions import resolve_truthy_env_var_choice
from aws_lambda_powertools.tracing.base import BaseProvider, BaseSegment

SERVICE = "hyperpod-perf"
NAMESPACE = "HyperPodPerf"
#: The modules the X-Ray SDK patches when it is on: the functions call AWS through botocore only.
TRACED_MODULES: tuple[str, ...] = ("botocore",)


class _Unrecorded(BaseSegment):
    """The subsegment of a Tracer that records nothing."""

    def close(self, end_time: int | None = None) -> None: ...

    def add_subsegment(self, subsegment: Any) -> None: ...

    def remove_subsegment(self, subsegment: Any) -> None: ...

    def put_annotation(self, key: str, value: Any) -> None: ...

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None: ...

    def add_exception(self, exception: BaseException, stack: Any, remote: bool = False) -> None: ...


class UntracedProvider(BaseProvider):
    """A Tracer provider that records nothing and imports nothing: Powertools' default provider
    imports the X-Ray SDK even for a disabled Tracer."""

    @contextmanager
    def in_subsegment(self, name: str | None = None, **kwargs: Any) -> Generator[BaseSegment, None, None]:
        yield _Unrecorded()

    @asynccontextmanager
    async def in_subsegment_async(
        self, name: str | None = None, **kwargs: Any
    ) -> AsyncGenerator[BaseSegment]:
        yield _Unrecorded()

    def put_annotation(self, key: str, value: Any) -> None: ...

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None: ...

    def patch(self, modules: Sequence[str]) -> None: ...

    def patch_all(self) -> None: ...


def xray_sdk_enabled() -> bool:
    """Powertools' own rule for an enabled Tracer: inside Lambda (not SAM or Chalice local), and
    POWERTOOLS_TRACE_DISABLED not true. The stack sets that variable from `xraySdkTracing`."""
    local = os.getenv(constants.SAM_LOCAL_ENV) or os.getenv(constants.CHALICE_LOCAL_ENV)
    in_lambda = bool(os.getenv(constants.LAMBDA_TASK_ROOT_ENV)) and not local
    disabled = resolve_truthy_env_var_choice(env=os.getenv(constants.TRACER_DISABLED_ENV, "false"))
    return in_lambda and not disabled


def _tracer() -> Tracer:
    if xray_sdk_enabled():
        return Tracer(service=SERVICE, patch_modules=TRACED_MODULES)
    # `disabled=False`: a disabled Tracer switches the SDK off, importing it to do so (Powertools
    # disables one by itself outside Lambda); this provider records nothing in any case.
    return Tracer(service=SERVICE, disabled=False, auto_patch=False, provider=UntracedProvider())


logger = Logger(service=SERVICE)
tracer = _tracer()
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)


def emit_concerns_by_check(concerns_by_check: dict[str, int]) -> None:
    """One `Concerns` datapoint per check id, with a `Check` dimension (the dashboard's lines).

    An EMF document carries one dimension set for all its metrics, so each check gets its own
    document, with the service dimension the other metrics have. Each is an `EphemeralMetrics`
    flushed by hand, not `single_metric`: Powertools' `single_metric` prints its document whatever
    POWERTOOLS_METRICS_DISABLED says, while a provider's `flush_metrics` honours it ("Explicitly
    disables emitting metrics to stdout", Powertools' environment variables), so the local run —
    which sets it — prints no EMF line into the demo's story, and Lambda still gets every document.
    """
    for check, count in sorted(concerns_by_check.items()):
        document = EphemeralMetrics(namespace=NAMESPACE)
        document.add_dimension(name="service", value=SERVICE)
        document.add_dimension(name="Check", value=check)
        document.add_metric(name="Concerns", unit=MetricUnit.Count, value=count)
        document.flush_metrics()
