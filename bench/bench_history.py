"""Run history: writing a 1,024-node run's rows (the Evaluate step's share), and each `history`
question on DuckDB over 90 days x 1,024 nodes x 4 runs a day. Never run by CI.

`python bench/bench_history.py [--days 90] [--nodes 1024] [--runs-per-day 4]` prints the figures
and the load average they were measured at. The synthetic history has one Xid 79 node, a GPU that
moves once, three chronic outliers and one node whose pair bandwidth falls; writing it is timed too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.domain.report import ClusterSummary, GpuFigure, NodeSummary, Report, RunInfo
from hyperpod_perf.history.encoding import encode_rows
from hyperpod_perf.history.queries import QUESTIONS, window
from hyperpod_perf.history.rows import TABLES, history_rows

CLUSTER = "bench-cluster"


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--runs-per-day", type=int, default=4)
    args = parser.parse_args(argv)
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")

    start = datetime(2026, 1, 1, tzinfo=UTC)
    report = synthetic_report(args.nodes, start, 0)
    times = []
    for _ in range(3):
        began = time.perf_counter()
        rows = history_rows(report, "run")
        blobs = [encode_rows(t, rows[t]) for t in TABLES]
        times.append(time.perf_counter() - began)
    size = sum(len(b) for b in blobs)
    print(
        f"rows of one {args.nodes}-node run: {min(times):.3f} s (best of 3; {sorted(times)[1]:.3f} s "
        f"median), {sum(len(r) for r in rows.values())} rows, {size / 1e6:.2f} MB gzip"
    )

    root = Path(tempfile.mkdtemp(prefix="hpd-history-bench-")) / "history"
    try:
        began = time.perf_counter()
        runs = args.days * args.runs_per_day
        for k in range(runs):
            when = start + timedelta(hours=24 / args.runs_per_day * k)
            write_run(root, synthetic_report(args.nodes, when, k), f"{when:%Y%m%dT%H%M%SZ}-r{k}")
        print(f"wrote {runs} runs in {time.perf_counter() - began:.0f} s")
        from hyperpod_perf.history.duck import HistoryDb

        end = start + timedelta(days=args.days)
        values = {
            "cluster": CLUSTER,
            **window(end, args.days + 1),
            "code": "",
            "last_runs": 40,
            "min_flagged": 10,
            "min_runs": 3,
            "min_drop": 0.05,
        }
        for materialize in (False, True):
            began = time.perf_counter()
            db = HistoryDb(root, materialize=materialize)
            opened = time.perf_counter() - began
            label = "materialized" if materialize else "views over the files"
            print(f"DuckDB {label}: opened in {opened:.2f} s")
            for question in QUESTIONS:
                began = time.perf_counter()
                _, answer = db.ask(question, values)
                print(f"  {question.name}: {time.perf_counter() - began:.2f} s, {len(answer)} row(s)")
            db.close()
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
