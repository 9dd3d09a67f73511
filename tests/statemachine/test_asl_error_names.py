"""The error names the state machine matches are the names of the exceptions the code raises.

Step Functions matches a Lambda failure by its `errorType`, the exception's class name. A class
renamed or moved into another module must keep that name, or a Retry silently stops retrying.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hyperpod_perf.domain import errors as domain_errors
from hyperpod_perf.pipeline import errors as pipeline_errors

ASL = Path(__file__).resolve().parents[2] / "statemachines" / "diagnose.asl.json"
#: Names Step Functions and Lambda define themselves (not raised by this project's code).
SERVICE_PREFIXES = ("States.", "Lambda.")


def _matchers(node: Any, kind: str | None = None) -> Iterator[tuple[str, str]]:
    """(Retry|Catch, error name) for every ErrorEquals entry anywhere in the definition."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("Retry", "Catch"):
                for rule in value:
                    yield from ((key, name) for name in rule["ErrorEquals"])
                    yield from _matchers({k: v for k, v in rule.items() if k != "ErrorEquals"}, key)
            else:
                yield from _matchers(value, kind)
    elif isinstance(node, list):
        for item in node:
            yield from _matchers(item, kind)


def _exception_classes(module: Any) -> dict[str, type[BaseException]]:
    return {
        name: cls
        for name, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, BaseException) and cls.__module__ == module.__name__
    }


def _own_names() -> list[tuple[str, str]]:
    matchers = _matchers(json.loads(ASL.read_text(encoding="utf-8")))
    return sorted({(kind, name) for kind, name in matchers if not name.startswith(SERVICE_PREFIXES)})


def test_the_asl_matches_the_adapter_errors_by_name():
    # Given the ASL's own error names (Step Functions' and Lambda's set aside)
    names = _own_names()
    # Then they are the two retryable adapter errors, each in a Retry rule
    assert names == [("Retry", "Throttled"), ("Retry", "TransientError")]


def test_every_name_the_asl_matches_is_an_exception_the_code_raises():
    # Given the exception classes of the shared error vocabulary and of the pipeline steps
    raised = _exception_classes(domain_errors) | _exception_classes(pipeline_errors)
    # Then every ASL name is one of their class names, and each one the ASL retries is retryable
    for kind, name in _own_names():
        assert name in raised, f"{kind} matches {name!r}, which no exception class is called"
        assert raised[name].__name__ == name
        if kind == "Retry":
            assert getattr(raised[name], "retryable", False) is True, name


def test_a_translated_throttle_reaches_the_state_machine_under_the_name_it_retries():
    # Given botocore's throttling error, translated by the adapter layer
    from botocore.exceptions import ClientError

    from hyperpod_perf.aws.errors import translate_client_error

    throttled = ClientError(
        {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "StartSession"
    )
    error = translate_client_error(throttled, "ssm:StartSession")
    # Then its errorType (the class name Lambda reports) is the one the ASL's Retry matches
    assert type(error).__name__ == "Throttled" and error.retryable
    assert isinstance(error, domain_errors.AwsAdapterError)
