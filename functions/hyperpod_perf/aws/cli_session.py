"""AWS sessions for the command line, resolved the way the AWS CLI resolves them.

Why a module of its own: the CLI is run by a person at a terminal, whose setup may lack a region,
name a profile that does not exist, or hold expired credentials. Each of those must become one
sentence that says what to fix (exit 2), never a botocore traceback. The Lambda functions keep
their own clients (aws/clients.py): their region and role come from the runtime.

Region order: ``--region``, then ``AWS_REGION``, then ``AWS_DEFAULT_REGION``, then the profile's
``region``. It is passed to boto3 explicitly because the botocore pinned here reads only
``AWS_DEFAULT_REGION`` from the environment (``AWS_REGION`` is what the AWS SDKs and Lambda set).
Profile: ``--profile``, else ``AWS_PROFILE`` (boto3 reads it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, InvalidRegionError, NoRegionError, ProfileNotFound
from botocore.utils import validate_region_name

from hyperpod_perf.domain.errors import AwsAdapterError

_BOTO_CONFIG = Config(retries={"mode": "adaptive", "max_attempts": 5}, connect_timeout=5, read_timeout=30)

_NO_REGION = (
    "no AWS region: pass --region, or set AWS_REGION (or AWS_DEFAULT_REGION), "
    "or give the profile a region (aws configure set region us-west-2)"
)
_NO_CREDENTIALS = (
    "no AWS credentials found: run `aws configure` or `aws sso login`, pass --profile, or set AWS_PROFILE"
)


class AwsConfigurationError(AwsAdapterError):
    """The local AWS setup (region, profile, credentials) is missing or wrong; retrying won't help."""


def resolve_region(explicit: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """--region, else AWS_REGION, else AWS_DEFAULT_REGION; None leaves it to the profile."""
    env = os.environ if environ is None else environ
    return explicit or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None


def open_session(region: str | None, profile: str | None) -> boto3.Session:
    """A session with a region and credentials, or AwsConfigurationError saying what is missing.

    Credentials are resolved here (locally: files, environment, SSO cache, instance metadata) so
    a missing one is reported before any work starts, not half-way through a diagnosis.
    """
    try:
        resolved = resolve_region(region)
        if resolved:
            validate_region_name(resolved)
        session = boto3.Session(profile_name=profile or None, region_name=resolved)
        region_name = session.region_name
        credentials = session.get_credentials()
    except ProfileNotFound as exc:
        name = profile or os.environ.get("AWS_PROFILE", "")
        origin = "--profile" if profile else "AWS_PROFILE"
        raise AwsConfigurationError(
            f"AWS profile {name!r} (from {origin}) not found in ~/.aws/config or ~/.aws/credentials; "
            "`aws configure list-profiles` lists them"
        ) from exc
    except BotoCoreError as exc:
        raise AwsConfigurationError(describe_aws_problem(exc) or str(exc)) from exc
    if not region_name:
        raise AwsConfigurationError(_NO_REGION)
    if credentials is None:
        raise AwsConfigurationError(_NO_CREDENTIALS)
    return session


def session_client(session: boto3.Session, service: str) -> Any:
    """A client of `session`; a malformed region name becomes AwsConfigurationError."""
    try:
        return session.client(service, config=_BOTO_CONFIG)
    except (InvalidRegionError, NoRegionError) as exc:
        raise AwsConfigurationError(describe_aws_problem(exc) or str(exc)) from exc


def describe_aws_problem(exc: BaseException) -> str | None:
    """One sentence for an AWS configuration, credential, permission or network problem, else None.

    Matched on class names (and the ClientError code) so that the CLI's last line of defence can
    call it on any exception without caring where in the stack it was raised.
    """
    names = {cls.__name__ for cls in type(exc).__mro__}
    kwargs: dict[str, Any] = getattr(exc, "kwargs", {}) or {}
    if "AwsConfigurationError" in names:
        return str(exc)
    if "NoRegionError" in names:
        return _NO_REGION
    if "InvalidRegionError" in names:
        return (
            f"{kwargs.get('region_name', '')!r} is not an AWS region name "
            "(regions look like us-west-2 or eu-central-1)"
        )
    if "ProfileNotFound" in names:
        profile = kwargs.get("profile", "")
        return f"AWS profile {profile!r} not found; `aws configure list-profiles` lists them"
    if names & {"NoCredentialsError", "PartialCredentialsError"}:
        return _NO_CREDENTIALS
    if names & {"UnauthorizedSSOTokenError", "SSOTokenLoadError", "TokenRetrievalError"}:
        return "the AWS SSO session has expired or is missing: run `aws sso login` (with --profile if used)"
    if "CredentialRetrievalError" in names:
        return f"AWS credentials could not be retrieved: {exc}"
    if names & {"ConfigParseError", "ConfigNotFound", "InvalidConfigError"}:
        return f"AWS configuration problem: {exc}"
    if names & {"EndpointConnectionError", "ConnectTimeoutError"}:
        endpoint = kwargs.get("endpoint_url", "the AWS endpoint")
        return f"cannot reach {endpoint}: check the region name and the network (proxy, VPC endpoints)"
    if "ClientError" in names:
        return _client_error_line(exc)
    return None


_DENIED = {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "AuthorizationError"}
_BAD_TOKEN = {
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "SignatureDoesNotMatch",
}


def _client_error_line(exc: BaseException) -> str | None:
    response: Any = getattr(exc, "response", None) or {}
    code = (response.get("Error") or {}).get("Code")
    message = (response.get("Error") or {}).get("Message") or ""
    operation = getattr(exc, "operation_name", "") or "the call"
    if code in _DENIED:
        return (
            f"permission denied for {operation}: {message.splitlines()[0] if message else code} "
            "(the identity needs the operator permissions listed in docs/DEPLOY.md)"
        )
    if code in _BAD_TOKEN:
        return f"AWS credentials rejected ({code}): refresh them (`aws sso login`, or new access keys)"
    return None
