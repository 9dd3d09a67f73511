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

model.py holds the data types, matrix.py turns logs into the ranked pair matrix, localise.py names
the suspects, findings.py words the verdicts; this module runs them and re-exports the public names.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence

from hyperpod_perf.domain.gc_pause import collector_paused
from hyperpod_perf.nccl.analysis.findings import _findings
from hyperpod_perf.nccl.analysis.localise import _localise
from hyperpod_perf.nccl.analysis.matrix import _merge_pairs, _rank, hosts_from_name, measurements_from_logs
from hyperpod_perf.nccl.analysis.model import (
    MAX_LISTED,
    MAX_PAIR_FINDINGS,
    SECTION,
    LogReport,
    PairAnalysis,
    PairKey,
    PairMeasurement,
    PairResult,
    Suspect,
)
from hyperpod_perf.nccl.analysis.placement import explain
from hyperpod_perf.nccl.baselines import published_curve
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

__all__ = [
    "MAX_LISTED",
    "MAX_PAIR_FINDINGS",
    "SECTION",
    "LogReport",
    "PairAnalysis",
    "PairKey",
    "PairMeasurement",
    "PairResult",
    "Suspect",
    "analyze_logs",
    "analyze_measurements",
    "hosts_from_name",
    "measurements_from_logs",
]


def analyze_measurements(
    measurements: Iterable[PairMeasurement],
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    instance_type: str | None = None,
    logs: Iterable[LogReport] = (),
    expected_nodes: Iterable[str] = (),
    placement: Mapping[str, Sequence[str]] | None = None,
) -> PairAnalysis:
    """The whole pairwise analysis over already-measured runs; `placement` (node -> its network
    nodes, top layer first) lets slow pairs that follow one layer boundary be named the fabric's."""
    with collector_paused():
        return _analyze(measurements, thresholds, instance_type, logs, expected_nodes, placement)


def _analyze(
    measurements: Iterable[PairMeasurement],
    thresholds: Thresholds,
    instance_type: str | None,
    logs: Iterable[LogReport],
    expected_nodes: Iterable[str],
    placement: Mapping[str, Sequence[str]] | None = None,
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
    mean: float | None = None
    median: float | None = None
    slow_threshold: float | None = None
    drain_level: float | None = None
    slow_pairs: list[PairResult] = []
    suspects: list[Suspect] = []
    if values:  # nothing measured: no figures, no verdicts but the log notes
        mean = statistics.fmean(values)
        median = statistics.median(values)
        slow_threshold = mean * (1 - thresholds.nccl_pair_slow_pct / 100)
        drain_level = median * (1 - thresholds.nccl_drain_pct / 100)
        for p in pairs:
            p.slow = p.busbw_gbps < slow_threshold
            p.below_drain = p.busbw_gbps < drain_level
            if p.slow:
                slow_pairs.append(p)
        slow_pairs.sort(key=lambda p: p.busbw_gbps)
        if keyed:
            suspects = _localise(keyed, nodes, thresholds, median)
    boundary = explain(keyed, placement, thresholds) if placement and slow_pairs else None
    if boundary is not None:  # a block across one boundary: the fabric, not the nodes on its sides
        on_sides = {*boundary.nodes_a, *boundary.nodes_b}
        suspects = [s for s in suspects if s.node not in on_sides]

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
        boundary=boundary,
    )
    analysis.findings = _findings(analysis, measurements, thresholds)
    return analysis


def analyze_logs(
    logs: Iterable[tuple[str, str]],
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    instance_type: str | None = None,
    expected_nodes: Iterable[str] = (),
    placement: Mapping[str, Sequence[str]] | None = None,
) -> PairAnalysis:
    """(name, text) logs -> the pairwise analysis. The pipeline's pure entry point."""
    measurements, reports = measurements_from_logs(logs)
    return analyze_measurements(
        measurements, thresholds, instance_type, reports, expected_nodes, placement=placement
    )
