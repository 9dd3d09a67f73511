"""The event a handler receives, validated against its step's pydantic model.

Why not Powertools' `event_parser`: it is the same validation — a TypeAdapter's
`validate_python` of the event, pydantic's `ValidationError` when it does not conform — but
importing `aws_lambda_powertools.utilities.parser` loads the parser package, its envelopes and
JMESPath helpers on every cold start (≈ 100 ms of CPU on a loaded 2-core machine before any
handler code; bench/RESULTS.md, cold start). `model_validate` raises the very same
`ValidationError`, which Lambda reports as the error type the state machine's `States.ALL`
Catches route to ReportProblem, so the ASL sees no difference.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")


def parsed_event(model: type[M]) -> Callable[[Callable[[M, Any], R]], Callable[[Any, Any], R]]:
    """Decorate a handler so it receives `model.model_validate(event)` instead of the raw event.

    A JSON string (what a test or `aws lambda invoke` may send) is validated as JSON, as
    Powertools' parser does; anything else as a Python object."""

    def decorate(handler: Callable[[M, Any], R]) -> Callable[[Any, Any], R]:
        @functools.wraps(handler)
        def validated(event: Any, context: Any) -> R:
            if isinstance(event, str | bytes):
                return handler(model.model_validate_json(event), context)
            return handler(model.model_validate(event), context)

        return validated

    return decorate
