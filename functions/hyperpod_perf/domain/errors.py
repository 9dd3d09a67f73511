"""The named failures of a call to AWS: the one error vocabulary every layer shares.

Why here, in domain/: callers (the service stages, the node runner, the pipeline steps and the
state machine's Retry/Catch rules, which match on exception *names*) must tell "try again later"
from "you are not allowed" from "the node is not there" without knowing botocore, and without
depending on the adapters that raise them. ``hyperpod_perf.aws`` translates what botocore raises
into one of these (``aws.errors.translate_client_error``); the service catches them through its
ports. Pure exceptions: no boto3, no I/O.

The class names are a contract (the ASL's ``ErrorEquals`` reads ``Throttled`` and
``TransientError``; reports print ``reason``): keep them stable.
"""

from __future__ import annotations


class AwsAdapterError(Exception):
    """Base of every error an AWS adapter raises on purpose.

    ``code`` is the AWS error code when there was one (``ThrottlingException``), ``context`` says
    what was being attempted (``"ssm:StartSession i-0abc"``) so a report line is self-explanatory.
    """

    #: Whether retrying the same call later may succeed (throttling, transient network errors).
    retryable: bool = False
    #: What a broken data channel had delivered before it broke (kept: nothing collected is lost).
    partial_output: str | None = None

    def __init__(self, message: str, *, code: str | None = None, context: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.context = context

    def __str__(self) -> str:
        prefix = f"{self.context}: " if self.context else ""
        suffix = f" [{self.code}]" if self.code else ""
        return f"{prefix}{self.message}{suffix}"

    @property
    def reason(self) -> str:
        """A short, stable reason label for reports (the class name)."""
        return type(self).__name__


class Throttled(AwsAdapterError):
    """The API refused the call because of its rate limit; back off and retry."""

    retryable = True


class TransientError(AwsAdapterError):
    """A failure that is likely to go away on retry (5xx, connection reset, endpoint timeout)."""

    retryable = True


class AccessDenied(AwsAdapterError):
    """The caller's IAM identity lacks permission; retrying will not help."""


class NotFound(AwsAdapterError):
    """The named resource (cluster, node, file system, log group, document) does not exist."""


class InvalidRequest(AwsAdapterError):
    """The request was rejected as malformed (ValidationException and friends)."""


class TargetNotConnected(AwsAdapterError):
    """The SSM target is not reachable: the agent is offline or the node is not registered.

    Not retryable by default — a node whose agent is down stays down for the length of a run.
    """


class SessionTimeout(AwsAdapterError):
    """A Session Manager data channel hit its connect, idle or total time limit."""


class SessionProtocolError(AwsAdapterError):
    """The Session Manager data channel broke its protocol (bad digest, unexpected message,
    abrupt close, a handshake step this client does not implement such as KMS encryption)."""


__all__ = [
    "AccessDenied",
    "AwsAdapterError",
    "InvalidRequest",
    "NotFound",
    "SessionProtocolError",
    "SessionTimeout",
    "TargetNotConnected",
    "Throttled",
    "TransientError",
]
