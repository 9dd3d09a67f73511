"""Run history: writing a 1,024-node run's rows (the Evaluate step's share), and each `history`
question on DuckDB over 90 days x 1,024 nodes x 4 runs a day. Never run by CI.

`python -m bench --only history` keeps its figures in bench/RESULTS.md; `python -m
bench.bench_history [--days 90] [--nodes 1024] [--runs-per-day 4]` prints them. The synthetic
history has one Xid 79 node, a GPU that moves once, three chronic outliers and one node whose pair
bandwidth falls; writing it is timed too.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.common import BenchResult, Figure, Progress, load_average
from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.domain.report import ClusterSummary, GpuFigure, NodeSummary, Report, RunInfo
from hyperpod_perf.history.encoding import encode_rows
from hyperpod_perf.history.queries import QUESTIONS, window
from hyperpod_perf.history.rows import TABLES, history_rows

CLUSTER = "bench-cluster"
ROWS_TARGET_S = 2.0  # issue 25: "Writing a 1,024-node run's history rows: < 2 s in the Evaluate step"
QUESTION_TARGET_S = 2.0  # issue 25: each question over 90 days x 1,024 nodes x 4 runs a day < 2 s


def synthetic_report(nodes: int, started: datetime, run_index: int) -> Report:
    ids = [f"i-{n:017x}" for n in range(nodes)]
    hosts = [f"ip-10-{n // 250}-{n % 250}-1" for n in range(nodes)]
    summaries = [
        NodeSummary(
            node=i,
            instance_id=i,
            hostname=h,
            instance_group="workers",
            instance_type="ml.p5.48xlarge",
            availability_zone="us-west-2a",
            network_nodes=["nn-top", f"nn-spine{n // 256}", f"nn-brick{n // 32}"],
            efa_devices=[f"rdmap{b}s0" for b in range(32)],
            gpus=[
                GpuFigure(
                    index=g,
                    serial=f"{(n if not (n == 7 and run_index > 100) else 8) * 8 + g:013d}",
                    uuid=f"GPU-{n:08x}-{g}",
                )
                for g in range(8)
            ],
            figures={"gpu.sm_clock_under_load_mhz": 1980.0, "gpu.temperature_max_c": 60.0},
        )
        for n, (i, h) in enumerate(zip(ids, hosts, strict=True))
    ]
    findings = [
        Finding(
            node=i, check="host.cpu_governor", severity=Severity.OK, section=RunbookSection.NCCL, summary="ok"
        )
        for i in ids
    ]
    findings.append(
        Finding(
            node=ids[5],
            check="gpu.xid",
            severity=Severity.CONCERN,
            section=RunbookSection.GPU,
            summary="Xid 79",
            evidence={"code": 79, "gpu": 3},
        )
    )
    findings += [
        Finding(
            node=ids[k],
            check="fleet.outlier",
            severity=Severity.CONCERN,
            section=RunbookSection.NCCL,
            summary="slow",
            evidence={"value": 1500.0},
        )
        for k in (11, 12, 13)
    ]
    ring = [(hosts[n], hosts[(n + 1) % nodes]) for n in range(nodes)]
    pairs = [
        {"a": a, "b": b, "busbw_gbps": 480.0 - (run_index * 0.2 if a == hosts[20] or b == hosts[20] else 0.0)}
        for a, b in ring
    ]
    return Report(
        cluster=ClusterSummary(name=CLUSTER, node_count=nodes),
        run=RunInfo(started=started.isoformat(), reason="bench"),
        findings=findings,
        nodes=summaries,
        nccl={"pairs": pairs, "slow_pairs": []},
    )


def write_run(root: Path, report: Report, run: str) -> None:
    rows = history_rows(report, run)
    day = report.run.started[:10]
    for table in TABLES:
        target = root / table / f"cluster={CLUSTER}" / f"run_date={day}" / f"{run}.jsonl.gz"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(encode_rows(table, rows[table]))


def run(
    progress: Progress = print, days: int = 90, nodes: int = 1024, runs_per_day: int = 4, repeats: int = 3
) -> BenchResult:
    """The two figures issue 25 sets: one run's rows, and each question over the whole history."""
    from hyperpod_perf.history.duck import HistoryDb

    result = BenchResult("history", f"Run history: {nodes:,} nodes, {days} days x {runs_per_day} runs a day")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    report = synthetic_report(nodes, start, 0)
    times: list[float] = []
    for _ in range(repeats):
        began = time.perf_counter()
        rows = history_rows(report, "run")
        blobs = [encode_rows(t, rows[t]) for t in TABLES]
        times.append(time.perf_counter() - began)
    size = sum(len(b) for b in blobs)
    result.figures.append(
        Figure(
            f"rows of one {nodes:,}-node run (every table, encoded gzip JSON Lines)",
            "s",
            times,
            limit=ROWS_TARGET_S,
            source="issue 25",
            note=f"measured; {sum(len(r) for r in rows.values()):,} rows, {size / 1e6:.2f} MB",
        )
    )
    progress(f"  rows of one {nodes}-node run: {min(times):.3f} s")
    root = Path(tempfile.mkdtemp(prefix="hpd-history-bench-")) / "history"
    try:
        began = time.perf_counter()
        runs = days * runs_per_day
        for k in range(runs):
            when = start + timedelta(hours=24 / runs_per_day * k)
            write_run(root, synthetic_report(nodes, when, k), f"{when:%Y%m%dT%H%M%SZ}-r{k}")
        written = time.perf_counter() - began
        progress(f"  wrote {runs} runs in {written:.0f} s")
        values = {
            "cluster": CLUSTER,
            **window(start + timedelta(days=days), days + 1),
            "code": "",
            "last_runs": 40,
            "min_flagged": 10,
            "min_runs": 3,
            "min_drop": 0.05,
        }
        cache = root.parent / "cache"
        began = time.perf_counter()
        with HistoryDb(root, cache=cache) as db:  # the CLI's default: each day copied to Parquet once
            copied = db.copied
            opened = time.perf_counter() - began
            first_q = QUESTIONS[0]
            db.ask(first_q, values)
        first = time.perf_counter() - began
        progress(f"  first question, empty cache ({copied} day-tables copied to Parquet): {first:.1f} s")
        result.figures.append(
            Figure(
                f"first question with an empty cache: {runs:,} runs' days copied to Parquet, then asked",
                "s",
                [first],
                source="issue 25",
                note=f"measured; once per day of history: {copied} copies in {opened:.1f} s (not a target)",
            )
        )
        with HistoryDb(root, cache=cache) as db:
            for question in QUESTIONS:
                seconds: list[float] = []
                for _ in range(repeats):
                    began = time.perf_counter()
                    _, answer = db.ask(question, values)
                    seconds.append(time.perf_counter() - began)
                progress(f"  {question.name}: {min(seconds):.2f} s, {len(answer)} row(s)")
                result.figures.append(
                    Figure(
                        f"DuckDB `history {question.name}` over {runs:,} runs (Parquet copies)",
                        "s",
                        seconds,
                        limit=QUESTION_TARGET_S,
                        source="issue 25",
                        note=f"measured; {len(answer)} row(s) answered",
                    )
                )
        when = start + timedelta(days=days, hours=1)
        write_run(root, synthetic_report(nodes, when, runs), f"{when:%Y%m%dT%H%M%SZ}-r{runs}")
        began = time.perf_counter()
        with HistoryDb(root, cache=cache) as db:
            recopied = db.copied
            db.ask(QUESTIONS[0], values)
        fresh = time.perf_counter() - began
        progress(f"  after one new run: {recopied} day-table(s) copied, question answered in {fresh:.2f} s")
        result.figures.append(
            Figure(
                "a question after one new run (its day copied again, then asked)",
                "s",
                [fresh],
                limit=QUESTION_TARGET_S,
                source="issue 25",
                note=f"measured; {recopied} day-table(s) copied again",
            )
        )
        with HistoryDb(root) as db:  # --no-cache: every JSON Lines object parsed for every question
            for question in QUESTIONS:
                began = time.perf_counter()
                _, answer = db.ask(question, values)
                direct = time.perf_counter() - began
                progress(f"  --no-cache {question.name}: {direct:.2f} s")
                result.figures.append(
                    Figure(
                        f"`history {question.name} --no-cache` (the JSON Lines objects read directly)",
                        "s",
                        [direct],
                        source="issue 25",
                        note="measured; for comparison, not a target",
                    )
                )
        result.notes.append(f"the {runs:,} runs' files written in {written:.0f} s (not a target)")
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    result.notes.append(f"load average at the end: {load_average():.2f}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--runs-per-day", type=int, default=4)
    args = parser.parse_args(argv)
    result = run(days=args.days, nodes=args.nodes, runs_per_day=args.runs_per_day)
    for figure in result.figures:
        limit = "" if figure.limit is None else f" (limit {figure.limit:g})"
        print(f"{figure.name}: {min(figure.samples):.3f} {figure.unit}{limit}")
    for note in result.notes:
        print(note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
