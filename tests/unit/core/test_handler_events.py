"""`handlers/events.parsed_event`: the step's model validates the event, as Powertools' parser did.

The state machine's Catches see the error type Lambda reports, the exception's class name: an
event that does not conform must still fail as pydantic's `ValidationError`.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from hyperpod_perf.domain.steps import ProblemEvent, ValidateEvent
from hyperpod_perf.handlers.events import parsed_event


@parsed_event(ValidateEvent)
def _handler(event: ValidateEvent, context: object) -> dict[str, object]:
    return {"type": type(event).__name__, "execution": event.execution, "context": context}


def test_a_conforming_event_reaches_the_handler_as_the_model():
    # Given a ValidateRequest payload as the state machine sends it, and as a JSON text
    payload = {"input": {"cluster": "ml-cluster"}, "execution": "e-1", "started": "2026-12-02T10:00:00+00:00"}
    # When the decorated handler is invoked with either
    # Then it receives the validated model, and the context unchanged
    assert _handler(payload, "ctx") == {"type": "ValidateEvent", "execution": "e-1", "context": "ctx"}
    assert _handler(json.dumps(payload), None)["execution"] == "e-1"


def test_a_non_conforming_event_fails_as_pydantic_validation_error_naming_the_field():
    # Given payloads missing a field, or with a wrong type under the models' strict mode
    with pytest.raises(ValidationError) as missing:
        _handler({"input": {}, "started": "2026-12-02T10:00:00+00:00"}, None)
    with pytest.raises(ValidationError) as wrong_type:
        _handler({"execution": 7, "started": "s"}, None)
    # Then the error is pydantic's (the type name Lambda reports to the state machine) and names the field
    assert type(missing.value).__name__ == "ValidationError"
    assert [e["loc"] for e in missing.value.errors()] == [("execution",)]
    assert [e["loc"] for e in wrong_type.value.errors()] == [("execution",)]


def test_the_decorated_handler_keeps_its_name_for_powertools_and_logs():
    @parsed_event(ProblemEvent)
    def handler(event: ProblemEvent, context: object) -> str:
        """Doc."""
        return event.execution

    assert (handler.__name__, handler.__doc__) == ("handler", "Doc.")
    assert handler({"problem": {"Error": "X"}}, None) == ""
