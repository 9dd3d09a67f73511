"""Input models of the state machine's tasks (what each `Payload` in the ASL carries).

Why in domain/: the handlers validate their event with them, and the local driver and the tests
build the same payloads; plain data over `domain.request`, `domain.targets` and `domain.layout`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.domain.request import DiagnoseRequest
from hyperpod_perf.domain.targets import TargetBatch


class _Event(BaseModel):
    #: strict: a payload the state machine built has the right types; anything else is refused.
    model_config = ConfigDict(extra="ignore", strict=True)


class ValidateEvent(_Event):
    input: Any = None
    execution: str
    started: str


class RunEvent(_Event):
    request: DiagnoseRequest
    run: RunLayout


class ClusterEvent(RunEvent):
    cluster: dict[str, Any]


class CollectEvent(_Event):
    """One Map item: a batch of nodes, the run, and this invocation's share of the rate."""

    batch: TargetBatch
    run: RunLayout
    rate_per_s: float = Field(gt=0)
    attempt: int = 0  # $$.State.RetryCount: > 0 when the state machine retries the batch


class NodeFailureEvent(_Event):
    batch: TargetBatch
    run: RunLayout
    error: dict[str, Any] = {}


class JobLogBatch(BaseModel):
    """One item of the job-log Distributed Map: (key, start, end) pieces of one bucket."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=0)
    bucket: str = Field(min_length=3, max_length=63)
    pieces: list[tuple[str, int, int]] = Field(max_length=1000)


class JobLogBatchEvent(_Event):
    """ScanJobLogs (`error` absent) or its Catch (`error`: the States error of the failed child)."""

    batch: JobLogBatch
    run: RunLayout
    error: dict[str, Any] | None = None


class ProblemEvent(_Event):
    input: Any = None
    execution: str = ""
    started: str = ""
    problem: dict[str, Any] = {}
    #: Set by ReportInvalidRequest: the input is the rejected request itself, trusted for nothing.
    rejected: bool = False
