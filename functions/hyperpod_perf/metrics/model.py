"""The metrics stage's values: the window read, the aligned per-node series, the verdict.

Why an aligned grid: Prometheus evaluates a range query at exactly start + k x step, so every
series of every signal shares one list of timestamps; a node's series is a list of values on that
grid (None where it has no sample), and "the fleet at minute t" is one column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hyperpod_perf.domain.findings import Finding

#: Points per range query the window is cut into at most (Prometheus refuses > 11,000 per series;
#: 120 keeps a 3-hour window at 90 s steps and a 1,024-node answer small).
TARGET_POINTS = 120
#: HyperPod's Slurm observability OTEL config scrapes every exporter at this interval (seconds).
DEFAULT_SCRAPE_SECONDS = 60
#: The baseline is read at every k-th step of the grid, k up to this, keeping at least
#: BASELINE_MIN_POINTS of it: it gives medians (a node's own level, the job's utilisation before)
#: and the chart's left half (thinned to 60 points anyway), not minutes, and a range query costs
#: the server in proportion to its steps (Prometheus 2.42 here: ~0.6 s per 1,024-node answer of
#: 240 steps; bench/bench_metrics.py).
BASELINE_STRIDE = 4
BASELINE_MIN_POINTS = 30
#: The alarm window's baseline: its own length before it, within these bounds (minutes).
BASELINE_MIN_MINUTES = 30
BASELINE_MAX_MINUTES = 180


class MetricsWindow(BaseModel):
    """The alarm window and the baseline before it (both UTC), and the query step."""

    model_config = ConfigDict(frozen=True)

    start: datetime
    end: datetime
    baseline_start: datetime
    baseline_end: datetime
    step_seconds: int = Field(ge=1)
    scrape_seconds: int = Field(DEFAULT_SCRAPE_SECONDS, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> MetricsWindow:
        for name in ("start", "end", "baseline_start", "baseline_end"):
            if getattr(self, name).tzinfo is None:
                raise ValueError(f"{name} must carry a time zone (UTC)")
        if not self.baseline_start <= self.baseline_end <= self.start < self.end:
            raise ValueError("expected baseline_start <= baseline_end <= start < end")
        return self

    @classmethod
    def around(
        cls,
        start: datetime,
        end: datetime,
        *,
        baseline_minutes: int = 60,
        scrape_seconds: int = DEFAULT_SCRAPE_SECONDS,
    ) -> MetricsWindow:
        """A window with its baseline just before it; the step as coarse as the window needs."""
        # Whole seconds: the API answers at millisecond resolution, and a sub-second offset
        # between the grid and the answer's timestamps would misplace every point.
        start = start.astimezone(UTC).replace(microsecond=0)
        end = end.astimezone(UTC).replace(microsecond=0)
        span = (end - start).total_seconds() + baseline_minutes * 60
        step = max(scrape_seconds, math.ceil(span / (2 * TARGET_POINTS)))
        return cls(
            start=start,
            end=end,
            baseline_start=start - timedelta(minutes=baseline_minutes),
            baseline_end=start,
            step_seconds=step,
            scrape_seconds=scrape_seconds,
        )

    @classmethod
    def for_alarm(cls, start: datetime, end: datetime) -> MetricsWindow:
        """The window with a baseline of its own length before it, at least 30 minutes and at most
        3 hours: long enough for a median, recent enough to be the same job (pipeline and CLI)."""
        minutes = int((end - start).total_seconds() // 60)
        return cls.around(
            start, end, baseline_minutes=min(BASELINE_MAX_MINUTES, max(BASELINE_MIN_MINUTES, minutes))
        )

    @property
    def rate_range_seconds(self) -> int:
        """rate() needs at least four scrapes in its range to be steady (Prometheus' own advice)."""
        return max(self.step_seconds, 4 * self.scrape_seconds)

    def grid(self) -> Grid:
        """Steps from the baseline's start to the last one before `end`: a step at t stands for
        [t, t + step), so a 60-minute window at 60 s is 60 steps, not 61."""
        first = self.baseline_start.timestamp()
        steps = max(1, math.ceil((self.end.timestamp() - first) / self.step_seconds))
        grid = Grid(first, first + (steps - 1) * self.step_seconds, self.step_seconds, self.start.timestamp())
        stride = max(1, min(BASELINE_STRIDE, grid.window_from // BASELINE_MIN_POINTS))
        return Grid(grid.first, grid.last, grid.step, grid.window_first, baseline_stride=stride)


@dataclass(frozen=True)
class Reading:
    """One range query's start, end and step (unix seconds) over a part of the grid."""

    start: float
    end: float
    step: int


@dataclass(frozen=True)
class Grid:
    """The timestamps `first`, `first + step`, ... up to `last`: the window read at every step,
    the baseline before it at every `baseline_stride`-th (the steps between stay empty)."""

    first: float
    last: float
    step: int
    window_first: float
    baseline_stride: int = 1

    @property
    def size(self) -> int:
        return int((self.last - self.first) // self.step) + 1

    def index(self, timestamp: float) -> int | None:
        position = (timestamp - self.first) / self.step
        nearest = round(position)
        if abs(position - nearest) > 0.01 or not 0 <= nearest < self.size:  # within 1 % of a step
            return None
        return nearest

    def timestamp(self, index: int) -> float:
        return self.first + index * self.step

    @property
    def window_from(self) -> int:
        """Index of the first step inside the alarm window."""
        return max(0, math.ceil((self.window_first - self.first) / self.step - 1e-9))

    def window_indices(self) -> range:
        return range(self.window_from, self.size)

    def baseline_indices(self) -> range:
        """The baseline's steps that are read (every `baseline_stride`-th)."""
        return range(0, self.window_from, self.baseline_stride)

    def readings(self) -> list[Reading]:
        """The range queries that fill the grid: one over it all, or the baseline (at its stride)
        and the window apart."""
        if self.baseline_stride == 1:
            return [Reading(self.first, self.last, self.step)]
        parts: list[Reading] = []
        baseline = self.baseline_indices()
        if baseline:
            stride = self.baseline_stride
            parts.append(Reading(self.first, self.timestamp(baseline[-1]), self.step * stride))
        if self.window_from < self.size:
            parts.append(Reading(self.timestamp(self.window_from), self.last, self.step))
        return parts


#: node -> its values on the grid
NodeSeries = dict[str, list[float | None]]
#: node -> the state label per step (the Slurm state; None where absent)
NodeStates = dict[str, list[str | None]]


@dataclass
class FleetSeries:
    """What the source answered, per signal, per node, on one grid."""

    grid: Grid
    values: dict[str, NodeSeries] = field(default_factory=dict)
    states: NodeStates = field(default_factory=dict)
    #: node -> its host name, where one label named it (for messages in the operator's words).
    hostnames: dict[str, str] = field(default_factory=dict)

    def nodes(self) -> set[str]:
        seen = set(self.states)
        for per_node in self.values.values():
            seen.update(per_node)
        return seen


class MetricsVerdict(BaseModel):
    """What the metrics stage concluded, with what it read to get there."""

    model_config = ConfigDict(frozen=True)

    source: str
    window: MetricsWindow
    findings: list[Finding] = Field(default_factory=list)
    #: Nodes a CONCERN names: where the SSM deep collection should look first.
    suspects: list[str] = Field(default_factory=list)
    nodes_seen: int = 0
    nodes_without_series: list[str] = Field(default_factory=list)
    exporters_missing: list[str] = Field(default_factory=list)
    series_read: int = 0
    queries: int = 0
    elapsed_seconds: float = 0.0
    errors: list[str] = Field(default_factory=list)
    #: One small chart per finding that has a series behind it (node vs fleet), at most MAX_CHARTS.
    charts: list[dict[str, Any]] = Field(default_factory=list)
    #: The tier: "suspects" (the deep collection narrowed to what the metrics point at) or "all".
    deep_collect: str | None = None
    #: Nodes judged by their series only (no SSM deep collection in this run).
    metrics_only: list[str] = Field(default_factory=list)
