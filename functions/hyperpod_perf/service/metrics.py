"""The metrics stage: every signal's range query, mapped to nodes, judged over the window.

Why one query per signal over baseline and window together: one PromQL range query covers every
node of the cluster (1,024 nodes in one answer), and the baseline and the window share a grid, so
"this node against its own past" and "this node against the fleet now" are column reads.

A failed query costs its signal, not the stage: it is named in the verdict's errors and in a
`metrics.coverage` finding, and the other signals are still judged. Only an answer that says
the source itself is unusable (access denied, workspace not found) stops the stage, so the state
machine's Catch reports it as such.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Protocol

from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.domain.errors import AccessDenied, AwsAdapterError, NotFound
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.metrics.judge import judge
from hyperpod_perf.metrics.model import FleetSeries, Grid, MetricsVerdict, MetricsWindow, Reading
from hyperpod_perf.metrics.nodes import NodeIndex
from hyperpod_perf.metrics.signals import SIGNALS, Exporter, Kind, Signal
from hyperpod_perf.rules.catalog import lookup
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

#: Queries in flight at once (AMP throttles a workspace's query rate; 4 keeps 17 queries ~ 1 s).
QUERY_CONCURRENCY = 4
#: How many unmatched label values a coverage finding quotes.
SAMPLE_UNMATCHED = 3


class RangeSeriesLike(Protocol):
    labels: dict[str, str]
    times: list[float]
    values: list[float]


class MetricsSource(Protocol):
    @property
    def source(self) -> str: ...

    def query_range(
        self, query: str, start: datetime, end: datetime, step_seconds: int
    ) -> Sequence[RangeSeriesLike]: ...


def _place(
    signal: Signal,
    answer: Sequence[RangeSeriesLike],
    grid: Grid,
    index: NodeIndex,
    fleet: FleetSeries,
    unmatched: list[str],
) -> int:
    """Put each series on the grid under its node; returns how many series were placed."""
    keys = ("node",) if signal.kind is Kind.STATE else None
    placed = 0
    summed = signal.summed
    # Grid.index inlined: the fallback loop would see every point of every answer (5.6 M at 1,024 nodes).
    first, step, size = grid.first, float(grid.step), grid.size
    grid_times = [grid.timestamp(i) for i in range(size)]
    for series in answer:
        node = index.resolve(series.labels, keys) if keys else index.resolve(series.labels)
        if node is None:
            unmatched.append(
                ", ".join(f"{k}={v}" for k, v in sorted(series.labels.items()) if v) or "(no labels)"
            )
            continue
        placed += 1
        host = index.hostname_of(series.labels)
        if host and node not in fleet.hostnames:
            fleet.hostnames[node] = index.hostnames.get(node, host)
        if signal.kind is Kind.STATE:
            states = fleet.states.setdefault(node, [None] * grid.size)
            for timestamp, value in zip(series.times, series.values, strict=True):
                i = grid.index(timestamp)
                if i is not None and value:
                    states[i] = series.labels.get("status", "unknown")
            continue
        values = fleet.values.setdefault(signal.name, {}).setdefault(node, [None] * size)
        times = series.times
        # Prometheus evaluates a range query at exactly start + k x step: an answer's times are a
        # slice of the grid's (every step in the window, every k-th in the baseline), and the
        # whole series goes in at once. Anything else (holes, an off-grid or repeated time) takes
        # the point-by-point path below.
        count = len(times)
        at = int((times[0] - first) / step + 0.5) if count else -1
        stride = int((times[1] - times[0]) / step + 0.5) if count > 1 else 1
        stop = at + stride * (count - 1) + 1
        if at >= 0 and stride >= 1 and len(series.values) == count and times == grid_times[at:stop:stride]:
            slots = values[at:stop:stride]
            if slots.count(None) == count:
                values[at:stop:stride] = series.values
                continue
            if summed:
                values[at:stop:stride] = [
                    value if current is None else current + value
                    for current, value in zip(slots, series.values, strict=True)
                ]
                continue
        for timestamp, value in zip(times, series.values, strict=True):
            position = (timestamp - first) / step
            i = int(position + 0.5)
            if not 0 <= i < size or abs(position - i) > 0.01:  # off the grid: not this query's point
                continue
            current = values[i]
            if current is None:
                values[i] = value
            elif summed:  # one answer per counter: their rates add up
                values[i] = current + value
    return placed


def coverage_findings(
    missing: Sequence[str],
    without: Sequence[str],
    unmatched: Sequence[str],
    errors: Sequence[str],
    nodes_seen: int,
) -> list[Finding]:
    """What the source could not answer, said as INFO (a CONCERN only when nothing was read)."""
    entry = lookup("metrics.coverage")
    found: list[Finding] = []

    def add(summary: str, evidence: dict[str, object], severity: Severity = Severity.INFO) -> None:
        found.append(
            Finding(
                check="metrics.coverage",
                severity=severity,
                section=entry.section,
                summary=summary,
                evidence=evidence,
            )
        )

    if nodes_seen == 0:
        add(
            "the metrics source returned no series for any node in the window: nothing was judged over time",
            {"exporters_missing": list(missing), "errors": list(errors)},
            Severity.CONCERN,
        )
        return found
    if missing:
        add(f"not covered (no series): {'; '.join(missing)}", {"exporters_missing": list(missing)})
    if without:
        add(
            f"{len(without)} node(s) have no series at all: {', '.join(without[:10])}"
            + (" ..." if len(without) > 10 else ""),
            {"nodes": list(without)},
        )
    if unmatched:
        add(
            f"{len(unmatched)} series matched no node of the cluster "
            f"(e.g. {'; '.join(unmatched[:SAMPLE_UNMATCHED])})",
            {"series": len(unmatched), "examples": list(unmatched[:SAMPLE_UNMATCHED])},
        )
    for error in errors:
        add(f"a query failed: {error}", {"error": error})
    return found


def judge_metrics(
    client: MetricsSource,
    nodes: Sequence[ClusterNode],
    window: MetricsWindow,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> MetricsVerdict:
    """Read every signal over baseline + window, place it per node, and judge it."""
    began = time.monotonic()
    grid = window.grid()
    index = NodeIndex(nodes)
    fleet = FleetSeries(grid=grid)
    rate_range = window.rate_range_seconds
    tasks = [
        (signal, query, reading)
        for signal in SIGNALS
        for query in signal.promqls(rate_range)
        for reading in grid.readings()
    ]

    def read(task: tuple[Signal, str, Reading]) -> Sequence[RangeSeriesLike] | AwsAdapterError:
        _, query, reading = task
        start, end = (datetime.fromtimestamp(t, UTC) for t in (reading.start, reading.end))
        try:
            return client.query_range(query, start, end, reading.step)
        except (AccessDenied, NotFound):
            raise
        except AwsAdapterError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=QUERY_CONCURRENCY) as pool:
        answers = list(pool.map(read, tasks))

    per_signal: dict[str, list[Sequence[RangeSeriesLike] | AwsAdapterError]] = {}
    for (signal, _, _), answer in zip(tasks, answers, strict=True):
        per_signal.setdefault(signal.name, []).append(answer)
    errors: list[str] = []
    unmatched: list[str] = []
    series_read = 0
    empty: dict[Exporter, list[Signal]] = {}
    for signal in SIGNALS:
        parts = per_signal[signal.name]
        failed = [a for a in parts if isinstance(a, AwsAdapterError)]
        if failed:  # a partial sum would read as a low rate: the signal is dropped whole
            errors.append(f"{signal.name}: {failed[0]}")
            continue
        found = [series for part in parts for series in part]  # type: ignore[union-attr]
        # One series per query, read once per reading (baseline, window): counted once.
        series_read += -(-len(found) // len(grid.readings()))
        if not found:
            empty.setdefault(signal.exporter, []).append(signal)
            continue
        _place(signal, found, grid, index, fleet, unmatched)

    missing = _missing(empty)
    verdicts = judge(fleet, thresholds)
    seen = fleet.nodes()
    without = sorted(set(index.known) - seen)
    findings = verdicts.findings + coverage_findings(missing, without, unmatched, errors, len(seen))
    suspects = sorted({f.node for f in findings if f.node and f.severity is Severity.CONCERN})
    return MetricsVerdict(
        source=client.source,
        window=window,
        findings=findings,
        suspects=suspects,
        nodes_seen=len(seen),
        nodes_without_series=without,
        exporters_missing=missing,
        series_read=series_read,
        queries=len(tasks),
        elapsed_seconds=round(time.monotonic() - began, 3),
        errors=errors,
        charts=verdicts.charts,
    )


def _missing(empty: dict[Exporter, list[Signal]]) -> list[str]:
    """One line per exporter: all of it absent, or the series of it that are."""
    by_exporter: dict[Exporter, int] = {}
    for signal in SIGNALS:
        by_exporter[signal.exporter] = by_exporter.get(signal.exporter, 0) + 1
    lines: list[str] = []
    for exporter, signals in empty.items():
        if len(signals) == by_exporter[exporter]:
            lines.append(f"{exporter.value}: no series at all")
            continue
        names = [s.metrics[0] + (" (not in the exporter's defaults)" if s.optional else "") for s in signals]
        lines.append(f"{exporter.value}: {', '.join(names)}")
    return lines
