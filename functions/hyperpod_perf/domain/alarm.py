"""The CloudWatch alarm that started a run: what it measures and what it saw, as the event carries it.

Why a model of its own: the verdict has to answer the alarm (what it measures, what explains it),
so the alarm travels from the trigger through the state machine (in the request) into the report
(in its run). The fields are the ones the EventBridge "CloudWatch Alarm State Change" event really
has (the captures in tests/fixtures/real/events and the CloudWatch User Guide's "Alarm events and
EventBridge"): `alarmName`, `configuration.description` and `configuration.metrics[]` (a metricStat
with namespace, name, dimensions, period and stat, or a metric-math expression with its label),
`state.value`, `state.reason`, `state.timestamp` and `state.reasonData`, a JSON document in a
string holding `threshold`, `period` and `recentDatapoints`. The event has no comparison operator:
it is read from the reason's own words ("greater than or equal to the threshold").

Every text is bounded and made one printable line here: it ends up in e-mail, chat and reports.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, field_validator

MAX_TEXT = 1024
MAX_METRICS = 10
MAX_DIMENSIONS = 30
MAX_DATAPOINTS = 100


def one_line(value: object, limit: int = MAX_TEXT) -> str:
    """Printable, single-spaced, at most `limit` characters (cut with an ellipsis)."""
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in str(value)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class AlarmMetric(BaseModel):
    """One entry of the alarm's `configuration.metrics`: a metric, or a metric-math expression."""

    #: strict like the request it travels in (issue 24): nothing coerced; JSON arrays still tuples.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str | None = Field(default=None, max_length=255)
    namespace: str | None = Field(default=None, max_length=255)
    name: str | None = Field(default=None, max_length=255)
    dimensions: dict[str, str] = Field(default_factory=dict, max_length=MAX_DIMENSIONS)
    stat: str | None = Field(default=None, max_length=100)
    period_s: int | None = Field(default=None, ge=1)
    expression: str | None = Field(default=None, max_length=MAX_TEXT)
    label: str | None = Field(default=None, max_length=MAX_TEXT)
    return_data: bool = True

    @field_validator("id", "namespace", "name", "stat", "expression", "label")
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        return one_line(value) if value is not None else None

    @field_validator("dimensions")
    @classmethod
    def _printable_dimensions(cls, value: dict[str, str]) -> dict[str, str]:
        return {one_line(k, 255): one_line(v, 255) for k, v in value.items()}


class AlarmContext(BaseModel):
    """The alarm behind a run, as its state-change event described it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str = Field(min_length=1, max_length=255)
    description: str | None = Field(default=None, max_length=MAX_TEXT)
    state: str = Field(default="ALARM", max_length=32)
    state_reason: str | None = Field(default=None, max_length=MAX_TEXT)
    state_time: str | None = Field(default=None, max_length=64)
    threshold: float | None = None
    #: `>=`, `>`, `<=` or `<`, from the reason's words; None when the reason does not say.
    comparison: str | None = Field(default=None, pattern=r"^(>=|>|<=|<)$")
    period_s: int | None = Field(default=None, ge=1)
    #: The datapoints the alarm evaluated (reasonData.recentDatapoints).
    recent_datapoints: Annotated[tuple[StrictFloat, ...], Field(strict=False)] = Field(
        default=(), max_length=MAX_DATAPOINTS
    )
    metrics: Annotated[tuple[AlarmMetric, ...], Field(strict=False)] = Field(
        default=(), max_length=MAX_METRICS
    )

    @field_validator("name", "description", "state", "state_reason", "state_time")
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        return one_line(value) if value is not None else None

    @property
    def measured(self) -> tuple[AlarmMetric, ...]:
        """The metrics it reads (metricStat entries), inputs of an expression included."""
        return tuple(m for m in self.metrics if m.name)

    @property
    def result(self) -> AlarmMetric | None:
        """The series the alarm compares with its threshold: the entry with returnData."""
        returned = [m for m in self.metrics if m.return_data]
        return returned[0] if returned else (self.metrics[0] if self.metrics else None)

    def dimension_values(self, name: str) -> list[str]:
        return list(dict.fromkeys(m.dimensions[name] for m in self.metrics if name in m.dimensions))
