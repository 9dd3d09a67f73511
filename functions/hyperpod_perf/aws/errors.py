"""Botocore's failures translated into the named errors of ``domain.errors``.

Why: every adapter under ``hyperpod_perf.aws`` raises one of those named errors instead of a
botocore exception, so nothing outside ``aws/`` ever needs to import botocore to handle an AWS
failure. This module maps AWS error codes (and botocore's connection errors, by class name) to
them; the error classes themselves live in ``domain.errors`` so the layers above catch them
without depending on the adapters.
"""

from __future__ import annotations

from typing import Any

from hyperpod_perf.domain.errors import (
    AccessDenied,
    AwsAdapterError,
    InvalidRequest,
    NotFound,
    TargetNotConnected,
    Throttled,
    TransientError,
)

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


__all__ = ["translate_client_error"]
