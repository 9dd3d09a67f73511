"""Benchmark: pairwise analysis of 512 nodes' exhaustive pairs (130,816 pairs); not run by CI.

Prints the median of 5 runs of `analyze_measurements` (one degraded node, ±2% noise) and, for
reference, the SVG heatmap's render time and size (target, issue 4: < 2 s).
Run: `python bench/bench_nccl.py`; `python -m bench` calls `run()`.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable
from itertools import combinations
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import BenchResult, Figure
from hyperpod_perf.nccl.analysis import PairMeasurement, analyze_measurements
from hyperpod_perf.nccl.heatmap import render_heatmap_svg

NODES = 512
RUNS = 5
TARGET_S = 2.0  # issue 4


def build(n: int = NODES, seed: int = 1) -> list[PairMeasurement]:
    rng = random.Random(seed)
    nodes = [f"ip-10-1-{i // 250}-{i % 250 + 1}" for i in range(n)]
    bad = nodes[137]
    return [
        PairMeasurement(
            400.0 * (0.6 if bad in (a, b) else 1.0) * (1 + rng.uniform(-0.02, 0.02)), f"{a}__{b}.log", a, b
        )
        for a, b in combinations(nodes, 2)
    ]


def measure() -> tuple[list[float], float, int, list[str], int]:
    """(analysis timings, heatmap seconds, heatmap bytes, suspects, pairs)."""
    measurements = build()
    timings = []
    analysis = None
    for _ in range(RUNS):
        started = time.perf_counter()
        analysis = analyze_measurements(measurements)
        timings.append(time.perf_counter() - started)
    assert analysis is not None
    started = time.perf_counter()
    svg = render_heatmap_svg(analysis)
    svg_seconds = time.perf_counter() - started
    return timings, svg_seconds, len(svg.encode()), [s.node for s in analysis.suspects], len(measurements)


def run(progress: Callable[[str], None] = print) -> BenchResult:
    """For `python -m bench`."""
    timings, svg_seconds, svg_bytes, suspects, pairs = measure()
    progress(f"  nccl analyze, {pairs:,} pairs: {statistics.median(timings):.3f} s")
    result = BenchResult("nccl", f"Pairwise NCCL analysis of {NODES} nodes")
    result.figures.append(
        Figure(
            f"pairwise analysis, {NODES} nodes exhaustive ({pairs:,} pairs)",
            "s",
            timings,
            limit=TARGET_S,
            source="issue 4",
            note=f"suspects {suspects} (planted: ip-10-1-0-138); heatmap {svg_bytes / 1024:,.0f} KiB "
            f"in {svg_seconds:.2f} s",
        )
    )
    return result


def main() -> None:
    timings, svg_seconds, svg_bytes, suspects, pairs = measure()
    print(
        f"nccl analyze: {pairs} pairs of {NODES} nodes: "
        f"median {statistics.median(timings):.3f} s "
        f"over {RUNS} runs (min {min(timings):.3f} s); suspects {suspects}"
    )
    print(f"heatmap: {svg_bytes / 1024:.0f} KiB in {svg_seconds:.3f} s")


if __name__ == "__main__":
    main()
