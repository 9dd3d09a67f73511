"""Named exceptions shared by every AWS adapter.

Why: callers (the engine, the node runner, the Lambda handlers and the state machine's Retry/Catch
rules, which match on exception *names*) must be able to tell "try again later" from "you are
not allowed" from "the node is not there" without knowing botocore. Every adapter under
``hyperpod_perf.aws`` translates what botocore raises into one of these, so nothing outside
``aws/`` ever needs to import botocore to handle an AWS failure.

The names are a contract: keep them stable.
"""

from __future__ import annotations

from typing import Any


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


_THROTTLE_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "RequestThrottledException",
        "ProvisionedThroughputExceededException",
        "SlowDown",
        "PriorRequestNotComplete",
        "LimitExceededException",
    }
)
_ACCESS_CODES = frozenset(
    {
        "AccessDeniedException",
        "AccessDenied",
        "UnauthorizedOperation",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "ExpiredToken",
        "ExpiredTokenException",
        "AuthFailure",
        "NotAuthorized",
        "SignatureDoesNotMatch",
    }
)
_NOT_FOUND_CODES = frozenset(
    {
        "ResourceNotFound",
        "ResourceNotFoundException",
        "NotFoundException",
        "NoSuchKey",
        "NoSuchBucket",
        "InvalidDocument",
        "InvalidInstanceId",
        "InvocationDoesNotExist",
        "FileSystemNotFound",
        "DoesNotExistException",
    }
)
_INVALID_CODES = frozenset(
    {
        "ValidationException",
        "ValidationError",
        "InvalidParameterValue",
        "InvalidParameterValueException",
        "InvalidParameterCombination",
        "InvalidParameterException",
        "InvalidParameters",
        "InvalidDocumentContent",
        "InvalidRequestException",
    }
)
_TRANSIENT_CODES = frozenset(
    {
        "InternalServerError",
        "InternalServerException",
        "InternalFailure",
        "InternalError",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "RequestTimeout",
        "RequestTimeoutException",
    }
)
_TARGET_CODES = frozenset({"TargetNotConnected"})


def _error_fields(exc: BaseException) -> tuple[str | None, str, int | None]:
    """Pull (code, message, http status) out of a botocore ClientError without importing botocore."""
    response: Any = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None, str(exc), None
    error = response.get("Error") or {}
    code = error.get("Code")
    message = error.get("Message") or str(exc)
    status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    return code, message, status


def translate_client_error(exc: BaseException, context: str | None = None) -> AwsAdapterError:
    """Map a botocore ``ClientError`` (or any exception) to the matching named adapter error.

    Returns the exception instead of raising it so the caller writes
    ``raise translate_client_error(e, "ssm:StartSession") from e`` and the traceback keeps the
    original. Unknown codes become a plain ``AwsAdapterError`` (5xx statuses: ``TransientError``).
    An ``AwsAdapterError`` passed in is returned unchanged.
    """
    if isinstance(exc, AwsAdapterError):
        return exc
    code, message, status = _error_fields(exc)
    if code in _TARGET_CODES:
        return TargetNotConnected(message, code=code, context=context)
    if code in _THROTTLE_CODES or status == 429:
        return Throttled(message, code=code, context=context)
    if code in _ACCESS_CODES or status == 403:
        return AccessDenied(message, code=code, context=context)
    if code in _NOT_FOUND_CODES or (code is not None and code.endswith("NotFound")):
        return NotFound(message, code=code, context=context)
    if code in _INVALID_CODES:
        return InvalidRequest(message, code=code, context=context)
    if code in _TRANSIENT_CODES or (status is not None and status >= 500):
        return TransientError(message, code=code, context=context)
    if code is None and _looks_like_connection_error(exc):
        return TransientError(str(exc) or type(exc).__name__, code=type(exc).__name__, context=context)
    return AwsAdapterError(message, code=code, context=context)


def _looks_like_connection_error(exc: BaseException) -> bool:
    """botocore's EndpointConnectionError / ReadTimeoutError / ConnectionClosedError, by class name,
    so this module need not import botocore."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(
        names
        & {
            "EndpointConnectionError",
            "ConnectionClosedError",
            "ReadTimeoutError",
            "ConnectTimeoutError",
            "ConnectionError",
            "HTTPClientError",
        }
    )


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
    "translate_client_error",
]
