"""Benchmark: the node engine — parse + evaluate per snapshot, and `hyperpod-perf evaluate` on 1,000 files.

What is timed:
- `parse_container` and `evaluate_snapshot` on simulated p5.48xlarge snapshots (~60 KB each, as
  `hyperpod_perf_dev.sim.node` prints them, a few with planted faults), in µs per snapshot;
- the `hyperpod-perf evaluate` CLI over 1,000 snapshot files in ONE call, as a user runs it: a
  fresh subprocess, so interpreter start, imports, file reads and rendering are all included
  (issue 2: < 5 s).
Generating the snapshots and writing the files is not timed.

Run: `python -m bench.bench_engine`.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import BenchResult, Figure, Progress
from hyperpod_perf.collect.snapshot import parse_container
from hyperpod_perf.rules.engine import evaluate_snapshot
from hyperpod_perf_dev.sim.node import NodeFaults, simulate_cluster

SNAPSHOTS = 200  # per in-process run
RUNS = 5
CLI_FILES = 1000
CLI_RUNS = 3
CLI_LIMIT_S = 5.0

FAULTS = {
    3: NodeFaults(pcie_width_gpu=3),
    7: NodeFaults(xid79=True, xid79_gpu=5),
    11: NodeFaults(efa_port_down="rdmap113s0"),
    13: NodeFaults(governor="powersave"),
}


def _cli() -> list[str]:
    script = Path(sys.executable).parent / "hyperpod-perf"
    return [str(script)] if script.exists() else [sys.executable, "-m", "hyperpod_perf.cli"]


def run(progress: Progress = print) -> BenchResult:
    result = BenchResult("engine", "Engine: parse + evaluate per node snapshot; the evaluate CLI")
    sim = simulate_cluster(SNAPSHOTS, FAULTS)
    texts = [(f"{n.instance_id}.txt", n.text) for n in sim]
    parse_us, evaluate_us, findings = [], [], 0
    for _ in range(RUNS):
        started = time.perf_counter()
        snapshots = [parse_container(text, source) for source, text in texts]
        parsed = time.perf_counter()
        findings = sum(len(evaluate_snapshot(s)) for s in snapshots)
        done = time.perf_counter()
        parse_us.append((parsed - started) / SNAPSHOTS * 1e6)
        evaluate_us.append((done - parsed) / SNAPSHOTS * 1e6)
    total_us = [p + e for p, e in zip(parse_us, evaluate_us, strict=True)]
    progress(f"  parse + evaluate: {statistics.median(total_us):,.0f} µs per snapshot")
    size_kb = statistics.mean(len(t.encode()) for _, t in texts) / 1024
    result.figures += [
        Figure("parse per snapshot", "µs", parse_us, note=f"{size_kb:.0f} KB p5.48xlarge snapshots"),
        Figure("evaluate per snapshot", "µs", evaluate_us, note=f"{findings / SNAPSHOTS:.0f} findings each"),
        Figure("parse + evaluate per snapshot", "µs", total_us),
    ]

    cli_sim = simulate_cluster(CLI_FILES, FAULTS)
    with tempfile.TemporaryDirectory(prefix="hpd-bench-") as tmp:
        directory = Path(tmp) / "snapshots"
        directory.mkdir()
        for node in cli_sim:
            (directory / f"{node.instance_id}.txt").write_text(node.text)
        out = Path(tmp) / "out.json"
        command = [*_cli(), "evaluate", str(directory), "--format", "json", "--out", str(out)]
        timings = []
        for _ in range(CLI_RUNS):
            started = time.perf_counter()
            completed = subprocess.run(command, capture_output=True, text=True, check=False)
            timings.append(time.perf_counter() - started)
            if completed.returncode not in (0, 1):  # 1 = a CONCERN was found (planted faults)
                raise RuntimeError(f"evaluate failed ({completed.returncode}): {completed.stderr[-2000:]}")
        out_kb = out.stat().st_size / 1024
    progress(f"  hyperpod-perf evaluate, {CLI_FILES} files: {statistics.median(timings):.2f} s")
    result.figures.append(
        Figure(
            f"`hyperpod-perf evaluate` over {CLI_FILES:,} snapshot files (one call, subprocess)",
            "s",
            timings,
            limit=CLI_LIMIT_S,
            source="issue 2",
            note=f"exit code {completed.returncode}, JSON output {out_kb:,.0f} KB",
        )
    )
    spots = ", ".join(f"{name} {share:.0%}" for name, share in hot_spots(texts[:30]))
    result.figures[-1].why = (
        f"Parse + evaluate costs {statistics.median(total_us) / 1000:.1f} ms per snapshot "
        f"(× {CLI_FILES:,} = {statistics.median(total_us) * CLI_FILES / 1e6:.1f} s before start-up and "
        f"rendering); the hottest code: {spots}."
    )
    result.notes.append(
        "Where evaluate's time goes (cProfile, 30 snapshots, cumulative share of evaluate_snapshot; "
        f"nested entries overlap): {spots}."
    )
    return result


def hot_spots(texts: list[tuple[str, str]], top: int = 6) -> list[tuple[str, float]]:
    """The project's functions with the largest cumulative time under evaluate_snapshot."""
    import cProfile
    import pstats

    snapshots = [parse_container(text, source) for source, text in texts]
    profiler = cProfile.Profile()
    profiler.enable()
    for snapshot in snapshots:
        evaluate_snapshot(snapshot)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = max((v[3] for k, v in stats.items() if k[2] == "evaluate_snapshot"), default=0.0) or 1.0
    ours = [
        (f"{Path(k[0]).parent.name}/{Path(k[0]).name}:{k[2]}", v[3] / total)
        for k, v in stats.items()
        if "hyperpod_perf" in k[0] and k[2] not in ("evaluate_snapshot", "section", "_parse", "evaluate")
    ]
    return sorted(ours, key=lambda item: -item[1])[:top]


if __name__ == "__main__":
    outcome = run()
    for figure in outcome.figures:
        print(f"{figure.name}: median {figure.median:,.3f} {figure.unit} (min {figure.spread[0]:,.3f})")
    print(*outcome.notes, sep="\n")
