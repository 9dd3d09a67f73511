"""Helpers shared by the NCCL tests: fixture paths, synthetic pair matrices and logs (clearly synthetic)."""

from __future__ import annotations

import random
from collections.abc import Iterable
from itertools import combinations
from pathlib import Path

from hyperpod_perf.nccl.analysis import PairMeasurement

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "nccl-tests"
DATA = Path(__file__).resolve().parent / "data"


def node_names(n: int) -> list[str]:
    return [f"ip-10-1-{i // 250}-{i % 250 + 1}" for i in range(n)]


def synthetic_matrix(
    n: int,
    bad: Iterable[int] = (),
    *,
    good_gbps: float = 400.0,
    bad_factor: float = 0.6,
    noise: float = 0.0,
    seed: int = 7,
    size_bytes: int = 1 << 30,
) -> tuple[list[str], list[PairMeasurement]]:
    """Every pair of n nodes measured once, at `size_bytes`; a pair with a bad node runs at bad_factor."""
    rng = random.Random(seed)
    nodes = node_names(n)
    bad_nodes = {nodes[i] for i in bad}
    measurements = []
    for a, b in combinations(nodes, 2):
        value = good_gbps * (bad_factor if a in bad_nodes or b in bad_nodes else 1.0)
        value *= 1 + rng.uniform(-noise, noise)
        measurements.append(
            PairMeasurement(value, f"{a}__{b}.log", a, b, sizes=((size_bytes, value),), complete=True)
        )
    return nodes, measurements


def synthetic_log(busbw_top: float, hosts: tuple[str, str] | None = None, wrong: int = 0) -> str:
    """A complete nccl-tests 2.18-style log whose two largest sizes read busbw_top (in-place equal)."""
    lines = [
        "# nccl-tests version 2.18.3 nccl-headers=22703 nccl-library=22703",
        "# Collective test starting: all_reduce_perf",
        "# nThread 1 nGpus 1 minBytes 268435456 maxBytes 1073741824 step: 2(factor) warmup iters: 5 "
        "iters: 20 agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    if hosts:
        for rank, host in enumerate(hosts):
            lines.append(
                f"#  Rank {rank:2d} Group  0 Pid {1000 + rank:6d} on {host:>10s} device  0 [0000:53:00] H100"
            )
    lines += [
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
        "     time   algbw   busbw  #wrong",
        "   268435456      67108864     float     sum      -1   1468.2  182.83"
        f"  {busbw_top / 2:.2f}       0"
        f"   1452.7  184.78  {busbw_top / 2:.2f}       0",
        f"   536870912     134217728     float     sum      -1   2559.2  209.78  {busbw_top:.2f}       0"
        f"   2554.9  210.14  {busbw_top:.2f}       0",
        "  1073741824     268435456     float     sum      -1   4607.6  233.04"
        f"  {busbw_top:.2f}       {wrong}"
        f"   4565.6  235.18  {busbw_top:.2f}       0",
        f"# Out of bounds values : {wrong} {'FAILED' if wrong else 'OK'}",
        f"# Avg bus bandwidth    : {busbw_top * 0.8:.4f} ",
        "#",
        "# Collective test concluded: all_reduce_perf",
    ]
    return "\n".join(lines) + "\n"
