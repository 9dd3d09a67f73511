"""Benchmark: the metrics stage at 1,024 nodes (issue 21); not run by CI.

Three figures, each labelled for what it is:

- **judge, in memory** (measured): `judge_metrics` over 1,024 nodes x every signal's query, a 3-hour
  window and a 3-hour baseline (240 steps of 90 s), the answers already parsed (a source that hands
  back prepared series): placement on the grid, the fleet medians, every rule. Target < 10 s and a
  Python heap peak (tracemalloc) < 512 MB; one node is power-capped and must be named.
- **answer parsing** (measured): `parse_matrix` of one query_range answer of 1,024 series x 240
  points as Prometheus writes it (JSON, values as strings), times the stage's query count.
- **real Prometheus** (measured, smaller): the whole stage against a real server backfilled with
  `--real-nodes` nodes' full exporter history (8 GPUs, 4 EFA devices each), when promtool and
  prometheus are installed; the backfill itself is not counted (AMP holds the data already).

Run: `python bench/bench_metrics.py [--nodes 1024] [--real-nodes 64]`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import BenchResult, Figure, Progress, load_average

NODES = 1024
REAL_NODES = 64
TARGET_S = 10.0
TARGET_HEAP_MB = 512.0
END = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
CAPPED = 517  # at fewer nodes: the middle one


def capped_index(nodes: int) -> int:
    return CAPPED if nodes > CAPPED else nodes // 2


#: A plausible level per signal for a healthy busy node (the judge's work does not depend on them).
LEVELS = {
    "sm_clock": 1980.0,
    "gpu_temp": 62.0,
    "power": 5200.0,
    "gpu_util": 97.0,
    "xid": 0.0,
    "power_violation": 0.0,
    "thermal_violation": 0.0,
    "clock_reasons": 0.0,
    "pcie_replay": 0.0,
    "nvlink_errors": 0.0,
    "efa_retrans": 8.0,
    "efa_errors": 0.0,
    "efa_rx_drops": 0.0,
    "efa_bytes": 1.6e10,
    "iowait": 1.0,
    "io_pressure": 0.5,
}


class PreparedSource:
    """Answers every query with prepared series (the parsing is measured on its own)."""

    source = "prepared"

    def __init__(self, answers: dict[str, list]) -> None:
        self.answers = answers
        self.calls = 0
        self._sliced: dict[tuple[str, datetime, datetime, int], list] = {}

    def prepare(self, window) -> None:
        """Cut every answer the stage will ask for now, so a timed run only looks them up."""
        from hyperpod_perf.metrics.signals import SIGNALS

        grid = window.grid()
        for signal in SIGNALS:
            for query in signal.promqls(window.rate_range_seconds):
                for reading in grid.readings():
                    start, end = (datetime.fromtimestamp(t, UTC) for t in (reading.start, reading.end))
                    self.query_range(query, start, end, reading.step)
        self.calls = 0

    def query_range(self, query: str, start: datetime, end: datetime, step_seconds: int) -> list:
        """The prepared series at start, start + step, ... <= end, as a range query evaluates."""
        from hyperpod_perf.aws.prometheus import RangeSeries

        self.calls += 1
        key = (query, start, end, step_seconds)
        if key in self._sliced:
            return self._sliced[key]
        first, last = start.timestamp(), end.timestamp()
        answer = []
        for series in self.answers.get(query, []):
            times, values = series.times, series.values
            at = next((i for i, t in enumerate(times) if t >= first), len(times))
            stride = max(1, round(step_seconds / (times[1] - times[0]))) if len(times) > 1 else 1
            picks = [i for i in range(at, len(times), stride) if times[i] <= last]
            answer.append(RangeSeries(series.labels, [times[i] for i in picks], [values[i] for i in picks]))
        self._sliced[key] = answer
        return answer


def prepared_answers(nodes: int, window) -> dict[str, list]:
    from hyperpod_perf.aws.prometheus import RangeSeries
    from hyperpod_perf.metrics.signals import SIGNALS

    grid = window.grid()
    stamps = [grid.timestamp(i) for i in range(grid.size)]
    rng = random.Random(3)
    answers: dict[str, list] = {}
    for signal in SIGNALS:
        if signal.name == "slurm_state":
            continue
        for query in signal.promqls(window.rate_range_seconds):
            series = []
            for n in range(nodes):
                level = LEVELS[signal.name]
                values = [level * (1 + rng.uniform(-0.01, 0.01)) for _ in stamps]
                if n == capped_index(nodes) and signal.name == "sm_clock":
                    values = [v * (0.65 if i >= grid.window_from + 40 else 1) for i, v in enumerate(values)]
                labels = {
                    "Hostname": f"ip-10-{n // 250}-{n % 250}-1",
                    "instance": f"ip-10-{n // 250}-{n % 250}-1",
                }
                series.append(RangeSeries(labels, stamps, values))
            answers[query] = series
    return answers


def matrix_json(nodes: int, points: int) -> bytes:
    rng = random.Random(5)
    result = [
        {
            "metric": {
                "Hostname": f"ip-10-{n // 250}-{n % 250}-1",
                "instance": f"ip-10-{n // 250}-{n % 250}-1",
            },
            "values": [[1796119200 + 90 * i, f"{1980 + rng.uniform(-20, 20):.6g}"] for i in range(points)],
        }
        for n in range(nodes)
    ]
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()


def real_server(nodes: int, progress: Progress) -> tuple[float, float, int] | None:
    """(stage seconds, backfill seconds, series read) against a real Prometheus, or None."""
    from hyperpod_perf.aws.prometheus import PrometheusHttp
    from hyperpod_perf.metrics.model import MetricsWindow
    from hyperpod_perf.service.metrics import judge_metrics
    from hyperpod_perf_dev.prometheus_local import binaries, serve_openmetrics
    from hyperpod_perf_dev.sim.metrics import Fault, FleetHistory, SimNode

    if binaries() is None:
        return None
    sim = [SimNode(f"i-{n:017x}", f"ip-10-9-{n // 250}-{n % 250}") for n in range(nodes)]
    fault = Fault("power_cap", END - timedelta(minutes=60), END, node=sim[nodes // 2].hostname)
    with tempfile.TemporaryDirectory(prefix="hpd-bench-prom-") as tmp:
        path = Path(tmp) / "history.om"
        FleetHistory(sim, END - timedelta(hours=6), END, faults=[fault]).write(str(path))
        began = time.perf_counter()
        with serve_openmetrics(path, workdir=Path(tmp)) as url:
            backfill = time.perf_counter() - began
            window = MetricsWindow.around(END - timedelta(hours=3), END, baseline_minutes=180)
            began = time.perf_counter()
            verdict = judge_metrics(PrometheusHttp(url), [], window)
            stage = time.perf_counter() - began
    if verdict.suspects != [sim[nodes // 2].hostname]:
        raise AssertionError(f"the real-server run named {verdict.suspects}, not the capped node")
    progress(f"  real Prometheus, {nodes} nodes: {stage:.2f} s ({verdict.series_read} series)")
    return stage, backfill, verdict.series_read


def run(
    progress: Progress = print, nodes: int = NODES, real_nodes: int = REAL_NODES, runs: int = 3
) -> BenchResult:
    from hyperpod_perf.aws.prometheus import parse_matrix
    from hyperpod_perf.metrics.model import MetricsWindow
    from hyperpod_perf.service.metrics import judge_metrics

    result = BenchResult("metrics", f"The metrics stage at {nodes:,} nodes (3 h window + 3 h baseline)")
    window = MetricsWindow.around(END - timedelta(hours=3), END, baseline_minutes=180)
    answers = prepared_answers(nodes, window)
    seconds = []
    source = PreparedSource(answers)
    source.prepare(window)
    for _ in range(runs):
        source.calls = 0
        began = time.perf_counter()
        verdict = judge_metrics(source, [], window)
        seconds.append(time.perf_counter() - began)
    queries = source.calls
    tracemalloc.start()  # one more run for the heap peak: tracemalloc slows allocation several-fold
    judge_metrics(source, [], window)
    heap = [tracemalloc.get_traced_memory()[1] / 1e6]
    tracemalloc.stop()
    c = capped_index(nodes)
    capped = f"ip-10-{c // 250}-{c % 250}-1"
    if verdict.suspects != [capped]:
        raise AssertionError(f"the judge named {verdict.suspects}, not {capped}")
    grid = window.grid()
    steps = grid.size
    progress(f"  judge, {nodes} nodes x {steps} steps x {queries} queries: {min(seconds):.2f} s")
    result.figures.append(
        Figure(
            f"judge {nodes:,} nodes x {steps} steps x {queries} queries (answers parsed): wall",
            "s",
            seconds,
            limit=TARGET_S,
            source="issue 21",
            note="measured: placement on the grid, fleet medians, every rule",
        )
    )
    result.figures.append(
        Figure("judge: Python heap peak (tracemalloc)", "MB", heap, limit=TARGET_HEAP_MB, source="issue 21")
    )
    # Each signal's query is sent once per reading (the baseline at its stride, the window).
    readings = grid.readings()
    raws = [matrix_json(nodes, int((r.end - r.start) // r.step) + 1) for r in readings]
    per_reading = queries // len(readings)
    parse = []
    for _ in range(runs):
        began = time.perf_counter()
        for raw in raws:
            parse_matrix(200, raw, "bench")
        parse.append((time.perf_counter() - began) * per_reading)
    points = " + ".join(str(int((r.end - r.start) // r.step) + 1) for r in readings)
    result.figures.append(
        Figure(
            f"parse {queries} answers of {nodes:,} series x ({points}) points "
            f"({' + '.join(f'{len(raw) / 1e6:.1f}' for raw in raws)} MB)",
            "s",
            parse,
            note="measured: one answer per reading parsed, times the signals' query count",
        )
    )
    real = real_server(real_nodes, progress)
    if real is None:
        result.notes.append("real Prometheus: not measured (promtool / prometheus not installed)")
    else:
        stage, backfill, series = real
        result.figures.append(
            Figure(
                f"whole stage against a real Prometheus, {real_nodes} nodes x 8 GPUs, 6 h history",
                "s",
                [stage],
                note=f"measured; {series} series read; backfill {backfill:.1f} s not counted",
            )
        )
    result.notes.append(f"load average at the end: {load_average():.2f}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=NODES)
    parser.add_argument("--real-nodes", type=int, default=REAL_NODES)
    args = parser.parse_args(argv)
    result = run(nodes=args.nodes, real_nodes=args.real_nodes)
    for figure in result.figures:
        print(
            f"{figure.name}: {min(figure.samples):.3f} {figure.unit}"
            + (f" (limit {figure.limit:g})" if figure.limit else "")
        )
    for note in result.notes:
        print(note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
