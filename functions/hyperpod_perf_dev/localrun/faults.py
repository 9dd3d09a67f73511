"""Faults a local pipeline run injects beside the nodes': the handlers' AWS clients, the ASL's Retry sleeps.

Every fault is raised where the real one would arise — a botocore ClientError from the client — so
the translation into named errors, the ASL's Retry/Catch and the report are the production paths.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from hyperpod_perf_dev.localrun.plan import AdapterFaults


class FaultyClient:
    """A boto3 client whose chosen calls raise the ClientError AWS would return."""

    def __init__(self, inner: Any, fail: Callable[[str, dict[str, Any]], BaseException | None]) -> None:
        self._inner = inner
        self._fail = fail

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if not callable(attribute) or name.startswith("_") or name in ("get_paginator", "can_paginate"):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            error = self._fail(name, kwargs)
            if error is not None:
                raise error
            return attribute(*args, **kwargs)

        return call


@dataclass
class FaultLog:
    """What the injected faults actually did (tests assert on it)."""

    failed_puts: list[str] = field(default_factory=list)
    denied_calls: list[str] = field(default_factory=list)


def faulty_client_factory(faults: AdapterFaults, region: str, log: FaultLog) -> Callable[[str], Any]:
    import boto3

    from hyperpod_perf_dev.sim.ssm import client_error

    lock = threading.Lock()
    cache: dict[str, Any] = {}
    puts_left = [faults.s3_put_failures]

    def fail(service: str) -> Callable[[str, dict[str, Any]], BaseException | None]:
        def decide(operation: str, kwargs: dict[str, Any]) -> BaseException | None:
            if service == "logs" and faults.logs_access_denied:
                log.denied_calls.append(f"logs:{operation}")
                return client_error(
                    "AccessDeniedException", f"not authorized to perform: logs:{operation}", operation, 400
                )
            if service == "cloudwatch" and faults.metrics_access_denied:
                log.denied_calls.append(f"cloudwatch:{operation}")
                return client_error(
                    "AccessDenied", f"not authorized to perform: cloudwatch:{operation}", operation, 403
                )
            describing = service == "sagemaker" and operation == "describe_cluster_node"
            if describing and faults.describe_node_access_denied:
                with lock:
                    log.denied_calls.append(f"sagemaker:{operation}")
                return client_error(
                    "AccessDeniedException",
                    f"not authorized to perform: sagemaker:DescribeClusterNode on {kwargs.get('NodeId')}",
                    "DescribeClusterNode",
                    400,
                )
            if service == "s3" and operation == "put_object" and faults.s3_put_key_part in kwargs["Key"]:
                with lock:
                    if puts_left[0] > 0:
                        puts_left[0] -= 1
                        log.failed_puts.append(kwargs["Key"])
                        return client_error(
                            "InternalError", "We encountered an internal error.", "PutObject", 500
                        )
            return None

        return decide

    def factory(service: str) -> Any:
        with lock:
            if service not in cache:
                inner = boto3.client(service, region_name=region)
                cache[service] = FaultyClient(inner, fail(service))
            return cache[service]

    return factory


@contextmanager
def asl_retry_sleeps(scale: float) -> Iterator[list[float]]:
    """moto's interpreter really sleeps a Retrier's interval: record the interval asked for and
    sleep `scale` times it instead (0: not at all).

    Only the retrier module's view of `time` is replaced (not `time.sleep` for the whole process),
    so the simulated agents, the session client and the polling keep their real clocks.
    """
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    requested: list[float] = []

    def sleep(seconds: float) -> None:
        requested.append(seconds)
        if scale:
            time.sleep(seconds * scale)

    original = retrier_decl.time
    retrier_decl.time = SimpleNamespace(sleep=sleep)
    try:
        yield requested
    finally:
        retrier_decl.time = original
