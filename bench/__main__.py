"""`make bench`: run every benchmark, write bench/RESULTS.md and bench/results.json.

Order: the time-to-findings runs first (they are the long ones and the cost benchmark prices
them), then the engine, fleet, pairwise, job-log, straggler, job-log map, report, cold-start and
runner benchmarks. Progress goes
to stdout; the whole run is budgeted at < 10 minutes on a 2-core machine.

Options: `--only pipeline,engine,...` runs a subset (RESULTS.md then holds only those, unless
`--keep-others` keeps the other benchmarks' figures from the existing results.json, marked as not
re-run, with the commit they were measured at); `--quick` shrinks the pipeline plan (8 and 64
nodes, one run each) for a fast look. results.json records the git commit the run measured.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

from bench import (
    bench_coldstart,
    bench_cost,
    bench_engine,
    bench_fleet,
    bench_joblog_map,
    bench_joblogs,
    bench_nccl,
    bench_pipeline,
    bench_report,
    bench_runner,
    bench_straggler,
)
from bench.common import BenchResult, git_commit, load_average, machine
from bench.results_md import render_results

BUDGET_S = 600
HERE = Path(__file__).resolve().parent
ALL = (
    *("pipeline", "cost", "engine", "fleet", "nccl", "joblogs", "straggler", "joblogmap"),
    *("report", "coldstart", "runner"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(ALL), help=f"comma-separated subset of {','.join(ALL)}")
    parser.add_argument("--quick", action="store_true", help="pipeline at 8 and 64 nodes, one run each")
    parser.add_argument("--out", type=Path, default=HERE, help="directory for RESULTS.md and results.json")
    parser.add_argument(
        "--keep-others",
        action="store_true",
        help="keep the benchmarks not selected from the existing results.json, marked as not re-run",
    )
    args = parser.parse_args(argv)
    selected = [name for name in args.only.split(",") if name]
    unknown = sorted(set(selected) - set(ALL))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    logging.getLogger().setLevel(logging.WARNING)

    started = time.monotonic()
    host = machine()
    commit = git_commit()  # what is measured: the code as it is now, before anything runs

    def progress(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f} s] {message}", flush=True)

    progress(f"machine: {host['cpu']}, {host['cores']} cores, Python {host['python']}")
    progress(f"load average at start: {host['load_average_1m']}")
    results: list[BenchResult] = []
    pipeline_runs: list = []

    def step(name: str, body: Callable[[], BenchResult]) -> None:
        if name not in selected:
            return
        load = load_average()
        progress(f"== {name} (load average {load})")
        began = time.monotonic()
        result = body()
        result.seconds = time.monotonic() - began
        result.details["load_average_1m_at_start"] = load
        results.append(result)
        progress(f"== {name} done in {result.seconds:.0f} s")

    def pipeline() -> BenchResult:
        plan = ((8, 1), (64, 1)) if args.quick else bench_pipeline.PLAN
        result, runs = bench_pipeline.run(progress, plan=plan)
        pipeline_runs.extend(runs)
        return result

    def cost() -> BenchResult:
        runs = pipeline_runs
        if not runs:  # --only cost: price fresh small runs
            _, runs = bench_pipeline.run(progress, plan=((8, 1), (64, 1)))
        return bench_cost.run(runs, progress)

    step("pipeline", pipeline)
    step("cost", cost)
    step("engine", lambda: bench_engine.run(progress))
    step("fleet", lambda: bench_fleet.run(progress))
    step("nccl", lambda: bench_nccl.run(progress))
    step("joblogs", lambda: bench_joblogs.run(progress))
    step("straggler", lambda: bench_straggler.run(progress))
    step("joblogmap", lambda: bench_joblog_map.run(progress))
    step("report", lambda: bench_report.run(progress))
    step("coldstart", lambda: bench_coldstart.run(progress))
    step("runner", lambda: bench_runner.run(progress, runs=2))

    total = time.monotonic() - started
    host["load_average_1m_end"] = machine()["load_average_1m"]
    benchmarks = [{**r.to_dict(), "commit": commit, "rerun": True} for r in results]
    if args.keep_others:
        benchmarks = _kept(args.out / "results.json", benchmarks)
    document = {
        "machine": host,
        "commit": commit,
        "total_seconds": total,
        "budget_seconds": BUDGET_S,
        "command": _command(sys.argv[1:] if argv is None else argv),
        "benchmarks": benchmarks,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(document, indent=2, default=str) + "\n")
    (args.out / "RESULTS.md").write_text(render_results(document))
    progress(f"wrote {args.out / 'RESULTS.md'} and results.json; total {total:.0f} s (budget {BUDGET_S} s)")
    missed = [
        f"{b['name']}: {f['name']}" for b in document["benchmarks"] for f in b["figures"] if f["met"] is False
    ]
    for line in missed:
        progress(f"target missed: {line}")
    return 0


def _command(args: list[str]) -> str:
    """The command as run, without the output directory (a local path, not part of the result)."""
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--out":
            skip = True
        elif not arg.startswith("--out="):
            kept.append(arg)
    return " ".join(["python -m bench", *kept])


def _committed_with(path: Path) -> str:
    """For a results.json from before commits were recorded: the commit that last changed it."""
    done = subprocess.run(
        ["git", "log", "-1", "--format=%H", "--", "results.json"],
        cwd=HERE,
        capture_output=True,
        text=True,
        check=False,
    )
    return f"committed with {done.stdout.strip()}" if done.stdout.strip() else "unrecorded"


def _kept(path: Path, fresh: list[dict]) -> list[dict]:
    """The fresh benchmarks, and the previous run's others marked as not re-run (in ALL's order)."""
    previous = json.loads(path.read_text()) if path.exists() else {"benchmarks": []}
    names = {b["name"] for b in fresh}
    recorded = previous.get("commit") or _committed_with(path)
    old = {
        b["name"]: {**b, "rerun": False, "commit": b.get("commit") or recorded}
        for b in previous["benchmarks"]
        if b["name"] not in names
    }
    merged = {**old, **{b["name"]: b for b in fresh}}
    return [merged[name] for name in ALL if name in merged]


if __name__ == "__main__":
    raise SystemExit(main())
