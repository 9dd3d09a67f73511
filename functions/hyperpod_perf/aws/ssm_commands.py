"""Run a Command document on one SSM managed instance: SendCommand + GetCommandInvocation polling.

Why: for plain SSM managed instances (not HyperPod targets, where SendCommand is reported to
fail with ValidationException) Run Command is the simpler path, and with an S3 output bucket it
is not limited to the 24,000 characters GetCommandInvocation returns inline.

The ssm client (and, for S3 output, a text reader) are injected, so the fan-out in
``collect/runner.py`` stays free of boto3.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from hyperpod_perf.aws.errors import translate_client_error
from hyperpod_perf.domain.errors import AwsAdapterError, NotFound, SessionTimeout, TargetNotConnected

#: GetCommandInvocation returns at most this many characters of stdout inline.
INLINE_OUTPUT_LIMIT = 24_000

_PENDING = frozenset({"Pending", "InProgress", "Delayed"})

#: (bucket, key) -> object text.
S3TextReader = Callable[[str, str], str]


class CommandFailed(AwsAdapterError):
    """The command reached a terminal state without output to read (Cancelled, Undeliverable...)."""


@dataclass(frozen=True)
class CommandResult:
    stdout: str
    stderr: str
    exit_code: int | None
    truncated: bool
    command_id: str
    status: str


def bucket_and_key(url: str) -> tuple[str, str] | None:
    """Bucket and key from SSM's output URL (path style ``https://s3.<region>.amazonaws.com/<bucket>/<key>``
    or virtual-hosted ``https://<bucket>.s3.<region>.amazonaws.com/<key>``)."""
    if not url:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    path = unquote(parts.path.lstrip("/"))
    if host.startswith("s3.") or host.startswith("s3-") or host == "s3.amazonaws.com":
        bucket, _, key = path.partition("/")
    elif ".s3." in host or ".s3-" in host:
        bucket, key = host.split(".s3", 1)[0], path
    else:
        return None
    return (bucket, key) if bucket and key else None


class SsmCommandClient:
    def __init__(
        self,
        ssm_client: Any,
        *,
        output_bucket: str | None = None,
        output_prefix: str = "",
        s3_reader: S3TextReader | None = None,
        poll_interval_s: float = 2.0,
        timeout_s: float = 600.0,
        execution_timeout_s: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ssm = ssm_client
        self.output_bucket = output_bucket
        self.output_prefix = output_prefix
        self._s3_reader = s3_reader
        self.poll_interval_s = poll_interval_s
        self.timeout_s = timeout_s
        self.execution_timeout_s = execution_timeout_s
        self._sleep = sleep
        self._clock = clock

    def run(
        self, instance_id: str, document_name: str, parameters: Mapping[str, list[str]] | None = None
    ) -> CommandResult:
        command_id = self._send(instance_id, document_name, parameters)
        invocation = self._wait(command_id, instance_id)
        status = str(invocation.get("Status", ""))
        stdout = str(invocation.get("StandardOutputContent") or "")
        stderr = str(invocation.get("StandardErrorContent") or "")
        exit_code = invocation.get("ResponseCode")
        exit_code = int(exit_code) if isinstance(exit_code, int) and exit_code >= 0 else None
        truncated = len(stdout) >= INLINE_OUTPUT_LIMIT
        location = bucket_and_key(str(invocation.get("StandardOutputUrl") or ""))
        if self.output_bucket and self._s3_reader is not None and location is not None:
            stdout = self._s3_reader(*location)
            truncated = False
            err_location = bucket_and_key(str(invocation.get("StandardErrorUrl") or ""))
            if err_location is not None and stderr:
                with contextlib.suppress(NotFound):  # no stderr object when nothing was written there
                    stderr = self._s3_reader(*err_location)
        context = f"ssm:SendCommand {command_id} on {instance_id}"
        if status == "Undeliverable":
            raise TargetNotConnected(str(invocation.get("StatusDetails") or status), context=context)
        if status in ("TimedOut", "DeliveryTimedOut", "ExecutionTimedOut") and not stdout:
            raise SessionTimeout(f"command {status}", context=context)
        if status not in ("Success", "Failed", "TimedOut") and not stdout:
            raise CommandFailed(f"command ended {status or 'without a status'}", context=context)
        return CommandResult(stdout, stderr, exit_code, truncated, command_id, status)

    def _send(self, instance_id: str, document_name: str, parameters: Mapping[str, list[str]] | None) -> str:
        kwargs: dict[str, Any] = {"InstanceIds": [instance_id], "DocumentName": document_name}
        if parameters:
            kwargs["Parameters"] = {k: list(v) for k, v in parameters.items()}
        if self.output_bucket:
            kwargs["OutputS3BucketName"] = self.output_bucket
            if self.output_prefix:
                kwargs["OutputS3KeyPrefix"] = self.output_prefix
        if self.execution_timeout_s is not None:
            kwargs["TimeoutSeconds"] = self.execution_timeout_s
        try:
            response = self._ssm.send_command(**kwargs)
        except Exception as exc:
            raise translate_client_error(exc, f"ssm:SendCommand {instance_id}") from exc
        return str(response["Command"]["CommandId"])

    def _wait(self, command_id: str, instance_id: str) -> Mapping[str, Any]:
        deadline = self._clock() + self.timeout_s
        while True:
            try:
                invocation = self._ssm.get_command_invocation(CommandId=command_id, InstanceId=instance_id)
            except Exception as exc:
                error = translate_client_error(exc, f"ssm:GetCommandInvocation {command_id}")
                if error.code != "InvocationDoesNotExist":  # not registered yet right after SendCommand
                    raise error from exc
                invocation = {"Status": "Pending"}
            if invocation.get("Status") not in _PENDING:
                return invocation
            if self._clock() >= deadline:
                raise SessionTimeout(
                    f"command still {invocation.get('Status')} after {self.timeout_s}s",
                    context=f"ssm:SendCommand {command_id} on {instance_id}",
                )
            self._sleep(self.poll_interval_s)
