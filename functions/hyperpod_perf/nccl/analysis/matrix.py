"""From nccl-tests logs to the pair matrix: which hosts a log measured, which logs are ranked and at
which common message size, and one figure per pair (the median of its runs).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import replace
from pathlib import PurePosixPath

from hyperpod_perf.nccl.analysis.model import (
    LogReport,
    PairKey,
    PairMeasurement,
    PairResult,
)
from hyperpod_perf.parse.nccl_tests import NcclRun, busbw_at_or_below, parse_nccl_tests

_LOG_SUFFIXES = (".log", ".txt", ".out", ".err")


# --------------------------------------------------------------------------- logs -> measurements


def hosts_from_name(name: str) -> PairKey | None:
    """`logs/hostA__hostB.log` -> (hostA, hostB); hosts may hold dots (FQDN, IP)."""
    base = PurePosixPath(name.replace("\\", "/")).name
    for suffix in _LOG_SUFFIXES:
        if base.lower().endswith(suffix):
            base = base[: -len(suffix)]
            break
    parts = base.split("__")
    if len(parts) != 2 or not parts[0] or not parts[1] or parts[0] == parts[1]:
        return None
    return parts[0], parts[1]


def _run_hosts(run: NcclRun, from_name: PairKey | None, problems: list[str]) -> tuple[str | None, str | None]:
    hosts = run.hosts
    if len(hosts) == 2:
        if from_name is not None and set(from_name) != set(hosts):
            problems.append(
                f"file name names {'/'.join(from_name)} but the rank lines name {'/'.join(hosts)}"
            )
        return hosts[0], hosts[1]
    if from_name is not None:
        return from_name
    if len(hosts) == 1:
        problems.append(f"rank lines name a single host ({hosts[0]}): not a pair test")
        return hosts[0], None
    if hosts:  # three or more
        problems.append(f"rank lines name {len(hosts)} hosts: not a pair test")
    return None, None


def measurements_from_logs(logs: Iterable[tuple[str, str]]) -> tuple[list[PairMeasurement], list[LogReport]]:
    """Parse each (name, text); every measured run gives one measurement."""
    measurements: list[PairMeasurement] = []
    reports: list[LogReport] = []
    for name, text in logs:
        log = parse_nccl_tests(text)
        from_name = hosts_from_name(name)
        report = LogReport(source=name, measured_runs=0, problems=list(log.problems))
        for run in log.runs:
            report.problems.extend(run.problems)
            report.truncated |= run.truncated
            report.elided |= run.elided
            figure = run.pair_busbw_gbps
            if figure is None:
                continue
            a, b = _run_hosts(run, from_name, report.problems)
            report.measured_runs += 1
            by_size = run.busbw_by_size
            measurements.append(
                PairMeasurement(
                    busbw_gbps=figure,
                    source=name,
                    a=a,
                    b=b,
                    wrong=run.wrong_total,
                    out_of_bounds_failed=run.correctness_failed and not run.wrong_total,
                    avg_busbw_gbps=run.avg_busbw_gbps,
                    collective=run.collective,
                    sizes=tuple(by_size.items()),
                    complete=False if run.cut_short else (True if _reached_end(run) else None),
                )
            )
        report.problems = list(dict.fromkeys(report.problems))
        reports.append(report)
    return measurements, reports


def _reached_end(run: NcclRun) -> bool:
    """Printed its summary, or its table reached the maxBytes its header announced."""
    largest = run.largest_size_bytes
    reached = largest is not None and run.max_bytes is not None and largest >= run.max_bytes
    return run.has_summary or reached


# --------------------------------------------------------------------------- ranking


def _rank(
    measurements: list[PairMeasurement],
) -> tuple[list[PairMeasurement], dict[str, str], int | None]:
    """The measurements to rank, each at the common message size; sources left out and why; that size.

    Measurements without sizes (given as figures, not logs) are ranked as they are. Written as a
    few flat passes: at 512 nodes this runs over 130,816 measurements.
    """
    left_out: dict[str, str] = {}
    for m in measurements:
        if m.complete is False:
            left_out.setdefault(
                m.source, f"table stops at {m.largest_size} B, before its maxBytes: cut short"
            )
    kept = [m for m in measurements if m.complete is not False]
    reference = min((m.sizes[-1][0] for m in kept if m.complete and m.sizes), default=None)
    if reference is not None:
        short = [m for m in kept if m.complete is None and m.sizes and m.sizes[-1][0] < reference]
        for m in short:
            left_out.setdefault(
                m.source,
                f"no summary line and the table stops at {m.sizes[-1][0]} B, below the {reference} B every "
                "complete log reached: cut short",
            )
        if short:
            kept = [m for m in kept if not (m.complete is None and m.sizes and m.sizes[-1][0] < reference)]
    common = _shared_largest_size([m for m in kept if m.sizes])
    if common is None:  # no shared size (or no sizes): each figure stays at its own largest sizes
        return kept, left_out, None
    # A run that ended at the common size already carries its figure there (same two-size rule).
    at_common = [
        replace(m, busbw_gbps=figure)
        if m.sizes and m.sizes[-1][0] > common and (figure := busbw_at_or_below(dict(m.sizes), common))
        else m
        for m in kept
    ]
    return at_common, left_out, common


def _shared_largest_size(sized: list[PairMeasurement]) -> int | None:
    """The largest message size measured by every one of `sized`, or None (none shared / no logs).

    Usually every log ran the same sweep, so the smallest end is shared: checked first, linearly,
    before the general set intersection (130,816 pairs at 512 nodes).
    """
    if not sized:
        return None
    smallest_end = min(m.sizes[-1][0] for m in sized)
    if all(m.sizes[-1][0] == smallest_end or any(s == smallest_end for s, _ in m.sizes) for m in sized):
        return smallest_end
    shared = set.intersection(*({size for size, _ in m.sizes} for m in sized))
    return max(shared) if shared else None


def _merge_pairs(measurements: Iterable[PairMeasurement]) -> list[PairResult]:
    """One entry per known pair (median of its runs); one entry per host-less measurement.

    A run naming one host (or the same host twice) tested no pair: it stays on its own as a
    single-host run (`host–?`), like a log whose rank lines name one host, so coverage does not
    count it as a pair.
    """
    keyed: dict[PairKey, list[PairMeasurement]] = {}
    results: list[PairResult] = []
    for m in measurements:
        key = m.key
        if key is None:
            results.append(PairResult(m.a or m.b, None, m.busbw_gbps, 1, [m.source]))
            continue
        runs = keyed.get(key)
        if runs is None:
            keyed[key] = [m]
        else:
            runs.append(m)
    for (a, b), runs in keyed.items():
        if len(runs) == 1:
            results.append(PairResult(a, b, runs[0].busbw_gbps, 1, [runs[0].source]))
        else:
            value = statistics.median(r.busbw_gbps for r in runs)
            results.append(PairResult(a, b, value, len(runs), list(dict.fromkeys(r.source for r in runs))))
    return results
