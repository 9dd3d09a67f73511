"""Localisation: name the node(s) behind the slow pairs, one at a time (see the package docstring)."""

from __future__ import annotations

import statistics
from bisect import bisect_right

from hyperpod_perf.nccl.analysis.model import (
    PairResult,
    Suspect,
)
from hyperpod_perf.rules.thresholds import Thresholds


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

    half = size // 2
    if size % 2:
        return kth(half)
    return (kth(half - 1) + kth(half)) / 2


def _localise(
    keyed: list[PairResult], nodes: list[str], thresholds: Thresholds, overall_median: float
) -> list[Suspect]:
    """Name the nodes behind the slow pairs, one at a time (see the package docstring)."""
    adjacency: dict[str, list[tuple[str, float, bool]]] = {n: [] for n in nodes}
    for p in keyed:
        # bandit B101: type narrowing of an invariant the caller established
        assert p.a is not None and p.b is not None  # nosec B101
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
    return suspects
