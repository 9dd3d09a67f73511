"""Benchmark: pairwise analysis of 512 nodes' exhaustive pairs (130,816 pairs); not run by CI.

Prints the median of 5 runs of `analyze_measurements` (one degraded node, ±2% noise) and, for
reference, the SVG heatmap's render time and size. Run: `python bench/bench_nccl.py`.
"""

from __future__ import annotations

import random
import statistics
import time
from itertools import combinations

from hyperpod_perf.nccl.analysis import PairMeasurement, analyze_measurements
from hyperpod_perf.nccl.heatmap import render_heatmap_svg

NODES = 512
RUNS = 5


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


def main() -> None:
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
    print(
        f"nccl analyze: {len(measurements)} pairs of {NODES} nodes: "
        f"median {statistics.median(timings):.3f} s "
        f"over {RUNS} runs (min {min(timings):.3f} s); suspects {[s.node for s in analysis.suspects]}"
    )
    print(f"heatmap: {len(svg.encode()) / 1024:.0f} KiB in {svg_seconds:.3f} s")


if __name__ == "__main__":
    main()
