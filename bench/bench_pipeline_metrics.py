"""Benchmark: time to findings with a metrics source (issue 21) — the real state machine, the two tiers.

The pipeline bench's run (`bench.pipeline_run`: the real ASL in moto, every handler, the real
data-channel client against the loopback agents, StartSession metered at 3/s service-side, 2 s
session start, 8 s collector, 20 ms S3 requests, all time-scaled ×SCALE) with the cluster's AMP
workspace configured (`deepCollect: suspects`, the default with a source). ClusterMetrics' 23
SigV4-signed range queries (`AmpWorkspace`, the deployed class) go to an emulated Prometheus
(`hyperpod_perf_dev.prometheus_emulated`: the real server's wire format, the simulated fleet's
series, each answer sent QUERY_LATENCY_S × SCALE after its query), because a real Prometheus at
1,024 nodes would need ~7.6 GB of OpenMetrics backfilled. The series carry planted faults (the
demo's three, two more from 64 nodes), so the verdict has suspects and the SSM deep collection
goes to them, the event's nodes, the nodes without series and the spread sample (8 by default).

ideal = ceil(queries / concurrency) × query latency + K / rate + one session start and collector
run + evaluation (Evaluate + Publish as measured), K the nodes deep-collected: what the assumed
latencies and the StartSession rate force, with ClusterMetrics' own CPU (parsing 23 answers of
up to 1,024 series, the judge) left out of it. efficiency = ideal / measured.

Run: `python -m bench --only pipeline_metrics`, or `python -m bench.bench_pipeline_metrics
[--sizes 8,64] [--scale 0.5]`.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import BenchResult, Figure, Progress, fmt, load_average, sized_runs_cli
from bench.pipeline_run import QUERY_LATENCY_S, RATE_PER_S, PipelineRun, run_pipeline
from hyperpod_perf.service.metrics import QUERY_CONCURRENCY

SCALE = 0.5
#: (nodes, runs): one run each; the 1,024-node one is not repeated on the shared machine.
PLAN: tuple[tuple[int, int], ...] = ((8, 1), (64, 1), (256, 1), (1024, 1))
CONCURRENCY = 36  # the deployment's mapMaxConcurrency, a cap (as in the pipeline bench)
#: Issue 21: time to findings for 1,024 nodes with a metrics source, real-time equivalent.
TARGET_NODES = 1024
TARGET_S = 60.0
#: The deployment's default NODE_SAMPLE_SIZE (handlers/settings.py): the spread sample.
SAMPLE = 8
RECORD = Path(__file__).resolve().parent / "results.json"


def without_source() -> tuple[dict[str, str], str]:
    """The pipeline section's kept real-time equivalents by size (no metrics source), and the
    commit they were measured at: the figure this tier is compared with."""
    try:
        document = json.loads(RECORD.read_text())
    except (OSError, ValueError):
        return {}, ""
    for bench in document.get("benchmarks", []):
        if bench.get("name") == "pipeline" and bench.get("tables"):
            table = bench["tables"][0]
            column = table["header"].index("real-time equivalent")
            rows = {row[0]: row[column] for row in table["rows"]}
            return rows, str(bench.get("commit") or "")[:12]
    return {}, ""


def run(
    progress: Progress = print, plan: tuple[tuple[int, int], ...] = PLAN, scale: float = SCALE
) -> BenchResult:
    result = BenchResult(
        "pipeline_metrics",
        "Time to findings with a metrics source (real state machine, emulated Prometheus, simulated nodes)",
    )
    before, before_commit = without_source()
    rows = []
    for nodes, runs in plan:
        size_runs: list[PipelineRun] = []
        for attempt in range(1, runs + 1):
            progress(f"  {nodes} nodes with a metrics source, run {attempt}/{runs} (scale {scale:g}) ...")
            pipeline = run_pipeline(nodes, scale=scale, concurrency=CONCURRENCY, with_metrics=True)
            pipeline.extra["load_average_1m"] = load_average()
            tier = pipeline.metrics
            assert tier is not None  # nosec B101: with_metrics=True always sets it
            progress(
                f"    {pipeline.status} in {pipeline.duration_s:.1f} s, ideal {pipeline.ideal_s:.1f} s; "
                f"ClusterMetrics {tier.duration_s:.1f} s, {len(tier.suspects)} suspects, "
                f"{tier.deep_collected} deep-collected, {pipeline.start_session_calls} StartSession calls "
                f"({pipeline.throttled} throttled)"
            )
            if pipeline.status != "SUCCEEDED":
                result.notes.append(f"{nodes} nodes run {attempt}: {pipeline.status}: {pipeline.error}")
            missed = sorted(set(tier.planted) - set(tier.suspects))
            if missed:
                result.notes.append(f"{nodes} nodes run {attempt}: planted but not named a suspect: {missed}")
            size_runs.append(pipeline)
        rows.append(_size(result, nodes, size_runs, scale, before.get(f"{nodes:,}")))
    result.tables.append(
        (
            f"Time to findings with a metrics source (scale ×{scale:g}: AMP query "
            f"{QUERY_LATENCY_S * scale:g} s, "
            f"StartSession {2.0 * scale:g} s at {RATE_PER_S / scale:g} calls/s, collector {8.0 * scale:g} s)",
            [
                "nodes",
                "suspects (planted)",
                "deep-collected / judged by series only",
                "StartSession calls / throttled",
                "ClusterMetrics, s (scaled; query bound)",
                "measured (scaled)",
                "ideal (scaled)",
                "efficiency",
                "real-time equivalent",
                "without a metrics source (real-time equivalent)",
                "head / fan-out / tail, s (scaled)",
            ],
            rows,
        )
    )
    result.notes += [
        f"Emulated: the Prometheus answering ClusterMetrics is `hyperpod_perf_dev.prometheus_emulated`, not "
        f"a real server nor AMP. It answers only the stage's own 23 queries, in the wire format of answers "
        f"captured from Debian's prometheus 2.42 (tests/fixtures/prometheus/), with the values the real "
        f"server gives over the same simulated history (tests/integration/test_prometheus_emulated.py), "
        f"each answer {QUERY_LATENCY_S:g} s (×{scale:g}) after its query: an assumed latency, AMP documents "
        "quotas, not query latency. It runs in a process of its own (a remote service does not share the "
        "measured process's interpreter); the requests are SigV4-signed by botocore as for AMP (the "
        "signature itself is checked in tests/integration/test_metrics_prometheus.py).",
        f"Ideal with a metrics source = ceil(queries / {QUERY_CONCURRENCY}) × the query latency "
        f"(ClusterMetrics sends {QUERY_CONCURRENCY} at a time) + K / rate (K = the nodes deep-collected: "
        "the suspects, the event's nodes, the nodes "
        f"without series and the spread sample of {SAMPLE}) + one StartSession + one collector run + the "
        "run's Evaluate and Publish. ClusterMetrics' CPU (signing, reading and parsing up to 23 answers "
        "of 1,024 series × 240 points, the judge) and the fixed steps before it are in the measured time, "
        "not in the ideal, and are not time-scaled, so the real-time equivalent (measured / scale) "
        "overstates them ×2: an upper bound.",
        "Head = alarm event to the first StartSession: trigger, ValidateRequest, ResolveCluster and "
        "ClusterMetrics; fan-out = first StartSession to the last CollectNode done; tail = from there to "
        "the execution's end (FsxMetrics, Evaluate, Publish).",
        "StartSession calls: one per node deep-collected, plus retries of throttled calls; without a "
        "metrics source the same runs make one per node (the pipeline section).",
        "The series' faults: node 5 Xid 79, node 6 EFA retransmits (400/s per device), node 7 power-capped "
        "(the demo's, localrun/demo_metrics.py) and, from 64 nodes, one more power-capped node half-way "
        "into the fleet and one more retransmitting three quarters in; the healthy series are "
        "FleetHistory's levels.",
        (
            "The without-a-source column is the pipeline section's kept record (measured at "
            f"{before_commit}), "
            "the same bench without the metrics stage."
            if before
            else "No pipeline section record to compare with."
        ),
    ]
    return result


def _size(
    result: BenchResult, nodes: int, runs: list[PipelineRun], scale: float, before: str | None
) -> list[str]:
    durations = [r.duration_s for r in runs]
    tiers = [r.metrics for r in runs if r.metrics is not None]
    at_target = nodes >= TARGET_NODES
    first = len(result.figures)
    expected = min(nodes, len(set(tiers[0].planted)) + SAMPLE)
    result.figures += [
        Figure(
            f"{nodes:,} nodes with a metrics source: time to findings (scaled ×{scale:g})", "s", durations
        ),
        Figure(
            f"{nodes:,} nodes with a metrics source: time to findings, real-time equivalent "
            f"(measured / {scale:g})",
            "s",
            [d / scale for d in durations],
            limit=TARGET_S if at_target else None,
            source="issue 21",
        ),
        Figure(
            f"{nodes:,} nodes with a metrics source: efficiency (ideal / measured)",
            "",
            [r.efficiency for r in runs],
            note="ideal: the query latency bound + the deep-collected nodes at the rate + one node "
            "+ evaluation",
        ),
        Figure(
            f"{nodes:,} nodes with a metrics source: StartSession calls",
            "",
            [float(r.start_session_calls) for r in runs],
            limit=float(expected),
            source="issue 21",
            note=f"limit: the {len(set(tiers[0].planted))} planted suspects + the sample of {SAMPLE}, "
            f"not {nodes:,}",
        ),
        Figure(
            f"{nodes:,} nodes with a metrics source: ClusterMetrics step (the function's duration, "
            "scaled run)",
            "s",
            [t.duration_s for t in tiers],
            note=f"{tiers[0].queries} queries, {tiers[0].emulated_latency_s:g} s each (emulated), "
            f"{QUERY_CONCURRENCY} at a time: "
            f"{tiers[0].query_bound_s:g} s of waiting",
        ),
    ]
    loads = [r.extra["load_average_1m"] for r in runs if r.extra.get("load_average_1m") is not None]
    for figure in result.figures[first:]:
        figure.load_average_1m = {"min": min(loads), "max": max(loads)} if loads else None
    median = sorted(runs, key=lambda r: r.duration_s)[len(runs) // 2]
    tier = median.metrics
    assert tier is not None  # nosec B101: every run here has a metrics source
    found = len(set(tier.planted) & set(tier.suspects))
    return [
        f"{nodes:,}",
        f"{len(tier.suspects)} ({found} of {len(set(tier.planted))} planted)",
        f"{tier.deep_collected} / {tier.metrics_only}",
        f"{median.start_session_calls:,} / {median.throttled:,}",
        f"{tier.duration_s:.1f} ({tier.query_bound_s:g})",
        fmt(statistics.median(durations), "s") + (f" ({len(runs)} runs)" if len(runs) > 1 else " (1 run)"),
        fmt(median.ideal_s, "s"),
        f"{median.efficiency:.2f}",
        fmt(statistics.median(durations) / scale, "s"),
        before or "—",
        f"{median.head_s:.1f} / {median.fan_out_s:.1f} / {median.tail_s:.1f}",
    ]


def main(argv: list[str] | None = None) -> int:
    return sized_runs_cli(
        argv,
        doc=__doc__ or "",
        plan=PLAN,
        scale=SCALE,
        measure=lambda plan, scale: run(plan=plan, scale=scale),
    )


if __name__ == "__main__":
    raise SystemExit(main())
