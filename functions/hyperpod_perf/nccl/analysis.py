"""Pair matrix analysis: slow pairs, the node(s) behind them, baseline and correctness.

The runbook's method: run all-reduce on every node pair, record each pair's busbw and treat
pairs more than ~5% below the run mean as problem candidates. Reading N(N-1)/2 numbers is the
hard part, so this module also localises: a degraded node makes *all* its pairs slow, while a
healthy node is slow only with the bad one. A node is named (`nccl.node_suspect`) when at least
`nccl_suspect_share` of its pairs are slow and its median busbw is clearly (by the slow-pair
margin) below the median of all pairs not involving it. Nodes are named one at a time, slowest
first, and each named node's pairs are set aside before the next look, so several bad nodes are
all found while their healthy partners (slow only with them) are not.

Limits, stated in the findings: localisation needs the healthy pairs to be the majority; when
most pairs are slow no node is named and the slowness is reported as widespread. A cluster that
is uniformly slow has no slow pairs at all; only the published baseline (`nccl.below_baseline`)
catches it.

Pairs are compared at one message size: the largest size every ranked log measured. busbw keeps
climbing with the size (a healthy p5 pair: ~443 GB/s at 2 GiB, ~487 GB/s at 16 GiB), so a log
that stopped at 2 GiB must not be ranked against others' 16 GiB figures. A log whose table stops
before its own maxBytes, or that has no summary line and stops below what the complete logs
reached, was cut short and is not ranked (its wrong-result count still counts).

Pure: no I/O. Input is parsed text or already-measured pairs; output is a `PairAnalysis`.
"""

from __future__ import annotations

import gc
import statistics
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.nccl.baselines import published_curve
from hyperpod_perf.parse.nccl_tests import NcclRun, busbw_at_or_below, parse_nccl_tests
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

SECTION = RunbookSection.NCCL
MAX_PAIR_FINDINGS = 50
MAX_LISTED = 100
_LOG_SUFFIXES = (".log", ".txt", ".out", ".err")

PairKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class PairMeasurement:
    """One run's figure for one pair; `a`/`b` are None when the hosts could not be told."""

    busbw_gbps: float
    source: str
    a: str | None = None
    b: str | None = None
    wrong: int | None = None
    out_of_bounds_failed: bool = False
    avg_busbw_gbps: float | None = None
    collective: str | None = None
    #: (size bytes, mean busbw) of the run's largest sizes, ascending; empty when not known
    sizes: tuple[tuple[int, float], ...] = ()
    #: True: the run reached its maxBytes or printed its summary; False: cut short; None: cannot tell
    complete: bool | None = None

    @property
    def largest_size(self) -> int | None:
        return self.sizes[-1][0] if self.sizes else None

    @property
    def key(self) -> PairKey | None:
        if self.a is None or self.b is None or self.a == self.b:
            return None
        return (self.a, self.b) if self.a < self.b else (self.b, self.a)


@dataclass(slots=True)
class LogReport:
    """What one log gave: its measurements and anything odd about it."""

    source: str
    measured_runs: int
    problems: list[str] = field(default_factory=list)
    truncated: bool = False
    elided: bool = False
    not_ranked: str | None = None  # why its figures were left out of the ranking

    @property
    def usable(self) -> bool:
        return self.measured_runs > 0


@dataclass(slots=True)
class PairResult:
    a: str | None
    b: str | None
    busbw_gbps: float
    runs: int
    sources: list[str]
    slow: bool = False
    below_drain: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "busbw_gbps": round(self.busbw_gbps, 3),
            "runs": self.runs,
            "sources": self.sources,
        }


@dataclass(frozen=True, slots=True)
class Suspect:
    node: str
    slow_pairs: int
    pairs: int
    median_gbps: float
    others_median_gbps: float
    drain_candidate: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "slow_pairs": self.slow_pairs,
            "pairs": self.pairs,
            "median_gbps": round(self.median_gbps, 3),
            "others_median_gbps": round(self.others_median_gbps, 3),
            "drain_candidate": self.drain_candidate,
        }


@dataclass(slots=True)
class PairAnalysis:
    pairs: list[PairResult]
    nodes: list[str]
    mean: float | None
    median: float | None
    slow_threshold_gbps: float | None
    drain_level_gbps: float | None
    slow_pairs: list[PairResult]
    suspects: list[Suspect]
    missing_pairs: list[PairKey]
    missing_count: int
    logs: list[LogReport]
    findings: list[Finding]
    instance_type: str | None = None
    expected_gbps: float | None = None
    compared_at_bytes: int | None = None  # the message size every ranked log reached
    mixed_sizes: bool = False  # the ranked logs share no message size: figures at their own largest sizes
    expected_at_bytes: int | None = None  # the published point's size (<= compared_at_bytes)

    @property
    def suspect_nodes(self) -> set[str]:
        return {s.node for s in self.suspects}

    def to_dict(self) -> dict[str, Any]:
        def num(value: float | None) -> float | None:
            return None if value is None else round(value, 3)

        return {
            "pairs": [p.to_dict() for p in self.pairs],
            "mean": num(self.mean),
            "median": num(self.median),
            "slow_threshold_gbps": num(self.slow_threshold_gbps),
            "drain_level_gbps": num(self.drain_level_gbps),
            "slow_pairs": [
                {"a": p.a, "b": p.b, "busbw_gbps": round(p.busbw_gbps, 3), "below_drain_level": p.below_drain}
                for p in self.slow_pairs
            ],
            "suspects": [s.to_dict() for s in self.suspects],
            "nodes": self.nodes,
            "missing_pairs": {"count": self.missing_count, "listed": [list(k) for k in self.missing_pairs]},
            "unusable_logs": [
                {"source": log.source, "problems": log.problems} for log in self.logs if not log.usable
            ],
            "instance_type": self.instance_type,
            "expected_busbw_gbps": self.expected_gbps,
            "compared_at_bytes": self.compared_at_bytes,
            "findings": [f.model_dump(mode="json") for f in self.findings],
        }


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
    if len(hosts) > 2:
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


# --------------------------------------------------------------------------- analysis


def _median_excluding(sorted_all: list[float], sorted_excluded: list[float]) -> float | None:
    """Median of the multiset `sorted_all` minus `sorted_excluded` (a sub-multiset), without copying.

    Binary search on rank counts keeps each call O(log^2 n): the localisation loop asks this for
    every node it names, and 512 nodes give 130,816 pairs.
    """
    size = len(sorted_all) - len(sorted_excluded)
    if size <= 0:
        return None

    def kth(k: int) -> float:
        lo, hi = 0, len(sorted_all) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            value = sorted_all[mid]
            if bisect_right(sorted_all, value) - bisect_right(sorted_excluded, value) >= k + 1:
                hi = mid
            else:
                lo = mid + 1
        return sorted_all[lo]

    if size % 2:
        return kth(size // 2)
    return (kth(size // 2 - 1) + kth(size // 2)) / 2


def _merge_pairs(measurements: Iterable[PairMeasurement]) -> list[PairResult]:
    """One entry per known pair (median of its runs); one entry per host-less measurement."""
    keyed: dict[PairKey, list[PairMeasurement]] = {}
    results: list[PairResult] = []
    for m in measurements:
        a, b = m.a, m.b
        if a is None or b is None or a == b:
            results.append(PairResult(a, b, m.busbw_gbps, 1, [m.source]))
            continue
        key = (a, b) if a < b else (b, a)
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


def _localise(
    keyed: list[PairResult], nodes: list[str], thresholds: Thresholds, overall_median: float
) -> tuple[list[Suspect], dict[str, tuple[int, int]]]:
    """Name the nodes behind the slow pairs, one at a time (see the module docstring)."""
    adjacency: dict[str, list[tuple[str, float, bool]]] = {n: [] for n in nodes}
    for p in keyed:
        assert p.a is not None and p.b is not None
        adjacency[p.a].append((p.b, p.busbw_gbps, p.slow))
        adjacency[p.b].append((p.a, p.busbw_gbps, p.slow))
    totals = {n: (sum(1 for e in edges if e[2]), len(edges)) for n, edges in adjacency.items()}
    active_k = {n: k for n, (k, _) in totals.items()}
    active_n = {n: total for n, (_, total) in totals.items()}
    sorted_all = sorted(p.busbw_gbps for p in keyed)
    removed_values: list[float] = []
    removed: set[str] = set()
    margin = 1 - thresholds.nccl_pair_slow_pct / 100
    drain = 1 - thresholds.nccl_drain_pct / 100
    suspects: list[Suspect] = []
    while True:
        candidates = []
        for node in nodes:
            if node in removed:
                continue
            k, n = active_k[node], active_n[node]
            if k >= 2 and n and k / n >= thresholds.nccl_suspect_share:
                values = [v for other, v, _ in adjacency[node] if other not in removed]
                candidates.append((statistics.median(values), node, values))
        if not candidates:
            break
        node_median, node, values = min(candidates)
        excluded = sorted(removed_values + values)
        others = _median_excluding(sorted_all, excluded)
        if others is None or node_median >= others * margin:
            break  # the slowest candidate is not clearly below the rest: nothing more to name
        k_total, n_total = totals[node]
        suspects.append(
            Suspect(node, k_total, n_total, node_median, others, node_median < overall_median * drain)
        )
        removed.add(node)
        removed_values = excluded
        for other, _, slow in adjacency[node]:
            if other not in removed:
                active_n[other] -= 1
                active_k[other] -= slow
    return suspects, totals


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building ~10^5 small acyclic objects.

    Each allocation burst otherwise triggers repeated full scans of everything already built;
    at 512 nodes that halved the run time (the objects hold no cycles, refcounting frees them).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def analyze_measurements(
    measurements: Iterable[PairMeasurement],
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    instance_type: str | None = None,
    logs: Iterable[LogReport] = (),
    expected_nodes: Iterable[str] = (),
) -> PairAnalysis:
    """The whole pairwise analysis over already-measured runs."""
    with _gc_paused():
        return _analyze(measurements, thresholds, instance_type, logs, expected_nodes)


def _analyze(
    measurements: Iterable[PairMeasurement],
    thresholds: Thresholds,
    instance_type: str | None,
    logs: Iterable[LogReport],
    expected_nodes: Iterable[str],
) -> PairAnalysis:
    measurements = list(measurements)
    log_reports = list(logs)
    ranked, left_out, compared_at = _rank(measurements)
    for report in log_reports:
        if report.source in left_out and report.usable:
            report.not_ranked = left_out[report.source]
    pairs = _merge_pairs(ranked)
    keyed = [p for p in pairs if p.a is not None and p.b is not None]
    nodes = sorted({n for p in keyed for n in (p.a, p.b) if n is not None} | set(expected_nodes))
    instance_type = instance_type.removeprefix("ml.") if instance_type else None
    curve = published_curve(instance_type)
    point = curve.at(compared_at) if curve is not None and compared_at is not None else None

    values = [p.busbw_gbps for p in pairs]
    mean = statistics.fmean(values) if values else None
    median = statistics.median(values) if values else None
    slow_threshold = mean * (1 - thresholds.nccl_pair_slow_pct / 100) if mean is not None else None
    drain_level = median * (1 - thresholds.nccl_drain_pct / 100) if median is not None else None
    slow_pairs: list[PairResult] = []
    if slow_threshold is not None and drain_level is not None:
        for p in pairs:
            p.slow = p.busbw_gbps < slow_threshold
            p.below_drain = p.busbw_gbps < drain_level
            if p.slow:
                slow_pairs.append(p)
    slow_pairs.sort(key=lambda p: p.busbw_gbps)

    suspects: list[Suspect] = []
    totals: dict[str, tuple[int, int]] = {}
    if keyed and median is not None:
        suspects, totals = _localise(keyed, nodes, thresholds, median)

    measured = {(p.a, p.b) for p in keyed}
    missing_count = len(nodes) * (len(nodes) - 1) // 2 - len(measured)
    missing: list[PairKey] = []
    if missing_count > 0:
        for i, a in enumerate(nodes):
            for b in nodes[i + 1 :]:
                if (a, b) not in measured:
                    missing.append((a, b))
                    if len(missing) >= MAX_LISTED:
                        break
            if len(missing) >= MAX_LISTED:
                break

    analysis = PairAnalysis(
        pairs=pairs,
        nodes=nodes,
        mean=mean,
        median=median,
        slow_threshold_gbps=slow_threshold,
        drain_level_gbps=drain_level,
        slow_pairs=slow_pairs,
        suspects=suspects,
        missing_pairs=missing,
        missing_count=max(missing_count, 0),
        logs=log_reports,
        findings=[],
        instance_type=instance_type,
        expected_gbps=point[1] if point else None,
        compared_at_bytes=compared_at,
        expected_at_bytes=point[0] if point else None,
        mixed_sizes=compared_at is None and len({m.largest_size for m in ranked if m.sizes}) > 1,
    )
    analysis.findings = _findings(analysis, measurements, thresholds, totals)
    return analysis


def analyze_logs(
    logs: Iterable[tuple[str, str]],
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    instance_type: str | None = None,
    expected_nodes: Iterable[str] = (),
) -> PairAnalysis:
    """(name, text) logs -> the pairwise analysis. The pipeline's pure entry point."""
    measurements, reports = measurements_from_logs(logs)
    return analyze_measurements(measurements, thresholds, instance_type, reports, expected_nodes)


# --------------------------------------------------------------------------- findings


def _finding(
    check: str,
    severity: Severity,
    summary: str,
    *,
    node: str | None = None,
    evidence: dict[str, Any] | None = None,
    threshold: str | None = None,
    next_step: str | None = None,
    handoff: str | None = None,
) -> Finding:
    return Finding(
        node=node,
        check=check,
        severity=severity,
        section=SECTION,
        summary=summary,
        evidence=evidence or {},
        threshold=threshold,
        next_step=next_step,
        handoff=handoff,
    )


def _pair_name(p: PairResult) -> str:
    if p.a is None and p.b is None:
        return p.sources[0]
    return f"{p.a}–{p.b or '?'}"


def _pct_below(value: float, reference: float) -> float:
    return round(100 * (1 - value / reference), 1) if reference else 0.0


def _findings(
    analysis: PairAnalysis,
    measurements: list[PairMeasurement],
    thresholds: Thresholds,
    totals: dict[str, tuple[int, int]],
) -> list[Finding]:
    findings: list[Finding] = []
    findings += _log_findings(analysis.logs)
    if analysis.mixed_sizes:
        findings.append(
            _finding(
                "nccl.log",
                Severity.INFO,
                "the logs share no message size: each pair's figure is taken at its own largest sizes, so "
                "pairs measured to different sizes are not comparable",
                evidence={"compared_at_bytes": None},
                next_step="Re-run every pair with the same -b/-e/-f sweep.",
            )
        )
    if analysis.mean is None:
        return findings
    findings += _slow_pair_findings(analysis, thresholds)
    findings += _suspect_findings(analysis, thresholds)
    findings += [_baseline_finding(analysis, thresholds, measurements)]
    findings += _correctness_findings(measurements)
    findings += [_coverage_finding(analysis)]
    return findings


def _log_findings(logs: list[LogReport]) -> list[Finding]:
    findings = []
    for log in logs:
        if not log.usable:
            findings.append(
                _finding(
                    "nccl.log",
                    Severity.CONCERN,
                    f"{log.source}: no bandwidth could be read ({'; '.join(log.problems) or 'empty'})",
                    evidence={"source": log.source, "problems": log.problems},
                    next_step="Re-run this pair; check the job's stderr for NCCL errors or a timeout.",
                )
            )
        elif log.not_ranked:
            findings.append(
                _finding(
                    "nccl.log",
                    Severity.INFO,
                    f"{log.source}: not ranked ({log.not_ranked})",
                    evidence={"source": log.source, "problems": log.problems, "not_ranked": log.not_ranked},
                    next_step="Re-run this pair to the same maximum size (-e) as the others.",
                )
            )
        elif log.truncated:
            findings.append(
                _finding(
                    "nccl.log",
                    Severity.INFO,
                    f"{log.source}: no summary line; its rows are compared at the size every log reached",
                    evidence={"source": log.source, "problems": log.problems},
                    next_step="Re-run this pair if its figure matters: the job may have been cut short.",
                )
            )
    return findings


def _slow_pair_findings(analysis: PairAnalysis, thresholds: Thresholds) -> list[Finding]:
    assert analysis.mean is not None and analysis.slow_threshold_gbps is not None
    threshold = f"busbw < {thresholds.nccl_pair_slow_pct:g}% below the run mean"
    base = {
        "pairs": len(analysis.pairs),
        "mean_gbps": round(analysis.mean, 3),
        "median_gbps": round(analysis.median or 0.0, 3),
        "slow_threshold_gbps": round(analysis.slow_threshold_gbps, 3),
        "drain_level_gbps": round(analysis.drain_level_gbps or 0.0, 3),
        "compared_at_bytes": analysis.compared_at_bytes,
    }
    if not analysis.slow_pairs:
        return [
            _finding(
                "nccl.pair_slow",
                Severity.OK,
                f"all {len(analysis.pairs)} pairs within {thresholds.nccl_pair_slow_pct:g}% of the run mean "
                f"({analysis.mean:.1f} GB/s)",
                evidence=base,
                threshold=threshold,
            )
        ]
    suspects = analysis.suspect_nodes
    explained = [p for p in analysis.slow_pairs if p.a in suspects or p.b in suspects]
    unexplained = [p for p in analysis.slow_pairs if not (p.a in suspects or p.b in suspects)]
    below_drain = sum(p.below_drain for p in analysis.slow_pairs)
    summary = (
        f"{len(analysis.slow_pairs)} of {len(analysis.pairs)} pairs more than "
        f"{thresholds.nccl_pair_slow_pct:g}% below the run mean ({analysis.mean:.1f} GB/s)"
    )
    if explained:
        summary += f"; {len(explained)} involve a suspect node"
    findings = [
        _finding(
            "nccl.pair_slow",
            Severity.CONCERN,
            summary,
            evidence={
                **base,
                "slow_pairs": len(analysis.slow_pairs),
                "explained_by_suspects": len(explained),
                "below_drain_level": below_drain,
                "slowest": [
                    {"a": p.a, "b": p.b, "busbw_gbps": round(p.busbw_gbps, 3), "sources": p.sources[:3]}
                    for p in analysis.slow_pairs[:20]
                ],
            },
            threshold=threshold,
            next_step="See nccl.node_suspect for the node(s) behind these pairs; re-test the others.",
        )
    ]
    for p in unexplained[:MAX_PAIR_FINDINGS]:
        findings.append(
            _finding(
                "nccl.pair_slow",
                Severity.CONCERN,
                f"pair {_pair_name(p)}: {p.busbw_gbps:.1f} GB/s, {_pct_below(p.busbw_gbps, analysis.mean)}% "
                "below the run mean" + (" (below the drain level)" if p.below_drain else ""),
                evidence={
                    "a": p.a,
                    "b": p.b,
                    "busbw_gbps": round(p.busbw_gbps, 3),
                    "runs": p.runs,
                    "sources": p.sources,
                    "mean_gbps": round(analysis.mean, 3),
                },
                threshold=threshold,
                next_step="Re-run this pair; if it stays slow, test each node against a known-good node "
                "(hyperpod-perf nccl plan --mode quick --suspect ...).",
            )
        )
    if len(unexplained) > MAX_PAIR_FINDINGS:
        findings.append(
            _finding(
                "nccl.pair_slow",
                Severity.INFO,
                f"{len(unexplained) - MAX_PAIR_FINDINGS} more slow pairs not listed one by one "
                "(see the json pairs)",
                evidence={"not_listed": len(unexplained) - MAX_PAIR_FINDINGS},
            )
        )
    return findings


def _suspect_findings(analysis: PairAnalysis, thresholds: Thresholds) -> list[Finding]:
    threshold = (
        f">= {thresholds.nccl_suspect_share:.0%} of the node's pairs slow and its median busbw more than "
        f"{thresholds.nccl_pair_slow_pct:g}% below the other pairs' median; drain candidate when more than "
        f"{thresholds.nccl_drain_pct:g}% below the run median"
    )
    if analysis.suspects:
        findings = []
        for s in analysis.suspects:
            drain = (
                f"; drain candidate (> {thresholds.nccl_drain_pct:g}% below the run median)"
                if s.drain_candidate
                else ""
            )
            next_step = (
                f"Snapshot {s.node} (EFA ports and counters, GPU PCIe/thermal, CPU governor) and re-test it "
                f"against two known-good nodes (hyperpod-perf nccl plan --mode quick --suspect {s.node})."
            )
            if s.drain_candidate:
                next_step += " If confirmed, drain and replace it (hyperpod-node-debugger § F)."
            findings.append(
                _finding(
                    "nccl.node_suspect",
                    Severity.CONCERN,
                    f"{s.node} is in {s.slow_pairs} of its {s.pairs} pairs that are slow; its median "
                    f"{s.median_gbps:.1f} GB/s vs {s.others_median_gbps:.1f} GB/s for the other pairs "
                    f"({_pct_below(s.median_gbps, s.others_median_gbps)}% lower){drain}",
                    node=s.node,
                    evidence=s.to_dict(),
                    threshold=threshold,
                    next_step=next_step,
                )
            )
        return findings
    if analysis.slow_pairs:
        share = len(analysis.slow_pairs) / len(analysis.pairs)
        widespread = share > 0.5
        summary = (
            f"slow pairs are widespread ({share:.0%} of pairs): no single node explains them"
            if widespread
            else f"the {len(analysis.slow_pairs)} slow pairs share no common node"
        )
        return [
            _finding(
                "nccl.node_suspect",
                Severity.INFO,
                summary,
                evidence={
                    "slow_pairs": len(analysis.slow_pairs),
                    "pairs": len(analysis.pairs),
                    "widespread": widespread,
                },
                threshold=threshold,
                next_step="Look at the heatmap for a block pattern (topology: AZ, network node layer, "
                "UltraServer) and re-test the slow pairs.",
            )
        ]
    return [
        _finding("nccl.node_suspect", Severity.OK, "no node is common to slow pairs", threshold=threshold)
    ]


def _baseline_finding(
    analysis: PairAnalysis, thresholds: Thresholds, measurements: list[PairMeasurement]
) -> Finding:
    assert analysis.median is not None
    collectives = {m.collective for m in measurements if m.collective}
    evidence: dict[str, Any] = {
        "median_gbps": round(analysis.median, 3),
        "instance_type": analysis.instance_type,
    }
    if collectives - {"all_reduce_perf", "all_reduce_perf_mpi"}:
        return _finding(
            "nccl.below_baseline",
            Severity.INFO,
            f"published expectations are for all_reduce; these logs ran {', '.join(sorted(collectives))}",
            evidence={**evidence, "collectives": sorted(collectives)},
        )
    if analysis.instance_type is None:
        return _finding(
            "nccl.below_baseline",
            Severity.INFO,
            "instance type not given: the median cannot be compared with a published expectation",
            evidence=evidence,
            next_step="Pass --instance-type (e.g. ml.p5.48xlarge) to compare with the published busbw.",
        )
    curve = published_curve(analysis.instance_type)
    if curve is None:
        return _finding(
            "nccl.below_baseline",
            Severity.INFO,
            f"no published 2-node busbw for {analysis.instance_type}; median {analysis.median:.1f} GB/s",
            evidence=evidence,
            next_step="Benchmark a known-good pair of this type and compare by hand.",
        )
    evidence |= {"compared_at_bytes": analysis.compared_at_bytes, "source": curve.source}
    if analysis.expected_gbps is None or analysis.expected_at_bytes is None:
        smallest = curve.points[0][0]
        at = analysis.compared_at_bytes
        return _finding(
            "nccl.below_baseline",
            Severity.INFO,
            f"the published {analysis.instance_type} figures start at {_size(smallest)}; "
            + (f"these logs were compared at {_size(at)}" if at else "these figures carry no message size"),
            evidence={**evidence, "published_from_bytes": smallest},
            next_step=f"Run the pairs up to at least {_size(smallest)} (-e) to compare with the published "
            "busbw.",
        )
    floor = analysis.expected_gbps * thresholds.nccl_baseline_ratio
    where = f"at {_size(analysis.expected_at_bytes)}"
    evidence |= {
        "expected_gbps": analysis.expected_gbps,
        "expected_at_bytes": analysis.expected_at_bytes,
        "floor_gbps": round(floor, 3),
    }
    threshold = f"median busbw < {thresholds.nccl_baseline_ratio:g} x published ({floor:.1f} GB/s {where})"
    if analysis.median < floor:
        return _finding(
            "nccl.below_baseline",
            Severity.CONCERN,
            f"median busbw {analysis.median:.1f} GB/s is below "
            f"{thresholds.nccl_baseline_ratio:g} x the published "
            f"{analysis.expected_gbps:.1f} GB/s {where} for {analysis.instance_type}",
            evidence=evidence,
            threshold=threshold,
            next_step="Check that NCCL uses EFA (NCCL_DEBUG=INFO shows 'NET/OFI', not 'NET/Socket'), the "
            "aws-ofi-nccl version, and the test's largest size (-e 16G or more).",
            handoff="hyperpod-nccl",
        )
    return _finding(
        "nccl.below_baseline",
        Severity.OK,
        f"median busbw {analysis.median:.1f} GB/s meets the published {analysis.expected_gbps:.1f} GB/s "
        f"{where} for {analysis.instance_type}",
        evidence=evidence,
        threshold=threshold,
    )


def _size(size_bytes: int | None) -> str:
    """`2147483648` -> `2 GiB`; sizes that are not a whole MiB/GiB stay in bytes."""
    if size_bytes is None:
        return "an unknown size"
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB")):
        if size_bytes >= unit and size_bytes % unit == 0:
            return f"{size_bytes // unit} {name}"
    return f"{size_bytes} B"


def _correctness_findings(measurements: list[PairMeasurement]) -> list[Finding]:
    failed = [m for m in measurements if m.wrong or m.out_of_bounds_failed]
    findings = [
        _finding(
            "nccl.correctness",
            Severity.CONCERN,
            f"{m.source}: nccl-tests reported wrong results"
            + (f" (#wrong total {m.wrong})" if m.wrong else " (out-of-bounds values FAILED)"),
            node=None,
            evidence={"source": m.source, "a": m.a, "b": m.b, "wrong": m.wrong},
            threshold="#wrong > 0 or Out of bounds values FAILED",
            next_step="Wrong results are a correctness problem, not a speed one: run the GPU checks "
            "(DCGM diagnostics) on both nodes before trusting any bandwidth from them.",
            handoff="hyperpod-node-debugger § G",
        )
        for m in failed
    ]
    if not failed:
        unvalidated = sum(1 for m in measurements if m.wrong is None)
        findings.append(
            _finding(
                "nccl.correctness",
                Severity.OK,
                f"no wrong results in {len(measurements)} runs"
                + (f" ({unvalidated} without validation)" if unvalidated else ""),
                evidence={"runs": len(measurements), "without_validation": unvalidated},
            )
        )
    return findings


def _coverage_finding(analysis: PairAnalysis) -> Finding:
    unnamed = sum(1 for p in analysis.pairs if p.a is None or p.b is None)
    total = len(analysis.nodes) * (len(analysis.nodes) - 1) // 2
    evidence = {
        "nodes": len(analysis.nodes),
        "pairs_expected": total,
        "pairs_measured": total - analysis.missing_count,
        "missing": analysis.missing_count,
        "missing_listed": [list(k) for k in analysis.missing_pairs],
        "logs_without_hosts": unnamed,
    }
    if analysis.missing_count or unnamed:
        parts = []
        if analysis.missing_count:
            parts.append(f"{analysis.missing_count} of {total} node pairs not measured")
        if unnamed:
            parts.append(
                f"{unnamed} logs name no host pair (neither rank lines nor <hostA>__<hostB> file name)"
            )
        return _finding(
            "nccl.coverage",
            Severity.INFO,
            "; ".join(parts),
            evidence=evidence,
            next_step="Run the missing pairs (hyperpod-perf nccl plan) and name logs <hostA>__<hostB>.log.",
        )
    return _finding(
        "nccl.coverage",
        Severity.OK,
        f"all {total} pairs of {len(analysis.nodes)} nodes measured",
        evidence=evidence,
    )
