"""Input models of the state machine's tasks (what each `Payload` in the ASL carries)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from hyperpod_perf.models import DiagnoseRequest
from hyperpod_perf.pipeline.layout import RunLayout
from hyperpod_perf.pipeline.targets import TargetItem


class _Event(BaseModel):
    model_config = ConfigDict(extra="ignore")


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
    target: TargetItem
    run: RunLayout


class NodeFailureEvent(CollectEvent):
    error: dict[str, Any] = {}


class ProblemEvent(_Event):
    input: Any = None
    execution: str = ""
    started: str = ""
    problem: dict[str, Any] = {}
