"""Route moto's Lambda invocations to the project's handlers, in-process.

moto's Step Functions interpreter calls `lambda:Invoke`; its Docker-free Lambda backend
only echoes payloads. The bridge replaces that one method so each invocation runs the
handler named by the function, with that function's environment, and turns an exception
into a Lambda-style error payload (`errorType` = exception class name), which is what the
ASL's Retry/Catch match on — exactly as in AWS.
"""

from __future__ import annotations

import json
import os
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

Handler = Callable[[dict[str, Any], Any], Any]


@dataclass
class FakeLambdaContext:
    """The attributes Powertools reads from a Lambda context."""

    function_name: str
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = ""
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = ""
    log_stream_name: str = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 300_000


#: moto's default account: the local deployment's functions live there, as its resources do.
LOCAL_ACCOUNT = "123456789012"


def _arn(function_name: str) -> str:
    """The function ARN Lambda would pass (handlers read the deployment's partition, region and
    account from it), in the region the local deployment runs in."""
    region = os.environ.get("AWS_DEFAULT_REGION", "us-east-1")
    return f"arn:aws:lambda:{region}:{LOCAL_ACCOUNT}:function:{function_name}"


@dataclass
class Invocation:
    function: str
    event: dict[str, Any]
    error: str | None
    payload_bytes: int
    #: Wall time of the handler call (what Lambda would bill); the bench prices runs with it.
    duration_s: float = 0.0


@dataclass
class LambdaBridge:
    """function name -> handler (all functions share the deployment's environment)."""

    handlers: dict[str, Handler]
    invocations: list[Invocation] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def invoke(self, function_name: str, body: bytes | str | None, response_headers: dict[str, str]) -> bytes:
        name = function_name.rsplit(":", 1)[-1] if function_name.startswith("arn:") else function_name
        name = name.split(":", 1)[0]
        handler = self.handlers.get(name)
        event = json.loads(body or b"{}")
        if handler is None:
            return self._error(
                name, event, response_headers, "ResourceNotFoundException", f"no function {name}"
            )
        started = time.perf_counter()
        try:
            result = handler(event, FakeLambdaContext(function_name=name, invoked_function_arn=_arn(name)))
        except Exception as exc:
            took = time.perf_counter() - started
            return self._error(name, event, response_headers, type(exc).__name__, str(exc), exc, took)
        took = time.perf_counter() - started
        payload = json.dumps(result, default=str).encode()
        self._record(Invocation(name, event, None, len(payload), took))
        return payload

    def _error(
        self,
        name: str,
        event: dict[str, Any],
        headers: dict[str, str],
        error_type: str,
        message: str,
        exc: BaseException | None = None,
        duration_s: float = 0.0,
    ) -> bytes:
        headers["x-amz-function-error"] = "Unhandled"
        body = {"errorType": error_type, "errorMessage": message}
        if exc is not None:
            body["stackTrace"] = traceback.format_exception(exc)[-3:]
        payload = json.dumps(body).encode()
        self._record(Invocation(name, event, error_type, len(payload), duration_s))
        return payload

    def _record(self, invocation: Invocation) -> None:
        with self._lock:
            self.invocations.append(invocation)


@contextmanager
def installed(bridge: LambdaBridge) -> Iterator[LambdaBridge]:
    """Patch moto's Docker-free Lambda backend for the duration of the block."""
    from moto.awslambda_simple.models import LambdaSimpleBackend

    original = LambdaSimpleBackend.invoke

    def invoke(self, function_name, qualifier, body, headers, response_headers):
        return bridge.invoke(function_name, body, response_headers)

    LambdaSimpleBackend.invoke = invoke
    try:
        yield bridge
    finally:
        LambdaSimpleBackend.invoke = original


@contextmanager
def environment_overlay(values: dict[str, str]) -> Iterator[None]:
    """Set these environment variables for the block, then restore each one as it was."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
