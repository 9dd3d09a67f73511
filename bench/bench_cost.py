"""Benchmark: cost per diagnosis, priced from what the local runs of the state machine did.

Counted per run (from `bench.pipeline_run`, the same runs as the time-to-findings benchmark):
- Step Functions state transitions: every state entered in the execution history, plus every
  extra Lambda attempt of a task (a Retry is a transition), plus — for a distributed map, whose
  child executions' histories are not in the parent's — every item task invocation;
- Lambda requests and GB-seconds: each invocation's duration x the function's memory as the
  stack deploys it (`infra/lambda_defaults.py` FUNCTION_SIZING), arm64;
- S3 PUT/LIST and GET requests, SNS publishes, CloudWatch GetMetricData metrics requested and
  Logs FilterLogEvents calls, counted on the handlers' boto3 session.

Real time, not scaled time: the runs are time-scaled, but Lambda bills wall time. The scaled
time inside each CollectNode invocation — its runner collecting the batch: the paced
StartSession calls, their latency, the collectors' runs, retry backoff — is recorded per
invocation and scaled back up:
`billed = (duration - waited) + waited / scale`. The remainder (this machine's CPU for the
handler, moto, the agent) is kept as measured, which overstates Lambda's compute.

Run: `python -m bench.bench_cost` (runs 8 and 64 nodes once; `python -m bench` reuses the
pipeline benchmark's runs, 1,024 nodes included).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import BenchResult, Figure, Progress, project_root
from bench.infra_facts import infra_facts
from bench.pipeline_run import PipelineRun
from hyperpod_perf_dev.localrun.bridge import Invocation

#: Public on-demand prices, us-east-1 (checked 2025; Free Tier ignored).
PRICES = {
    "sfn_transition": 0.025 / 1000,  # Step Functions Standard, per state transition
    "lambda_gb_s": 0.0000133334,  # Lambda arm64, per GB-second
    "lambda_request": 0.20 / 1e6,
    "s3_put": 0.005 / 1000,  # PUT, COPY, POST, LIST
    "s3_get": 0.0004 / 1000,  # GET, SELECT and others
    "sns_publish": 0.50 / 1e6,
    "cw_metric": 0.01 / 1000,  # GetMetricData, per metric requested
    "logs_scan_gb": 0.005,  # Logs Insights' per-GB-scanned rate, used as FilterLogEvents' proxy
}
#: FilterLogEvents has no per-call price; we charge it as scanning this much, an assumption.
LOGS_SCANNED_GB_PER_CALL = 0.1
TARGET_64_USD = 0.05
_S3_PUT_CLASS = ("PutObject", "ListObjectsV2", "CopyObject", "CreateMultipartUpload", "UploadPart")
_S3_GET_CLASS = ("GetObject", "HeadObject")


@dataclass
class Cost:
    nodes: int
    transitions: int
    lambda_requests: int
    gb_seconds: float
    gb_seconds_as_measured: float
    s3_put: int
    s3_get: int
    sns_publish: int
    metrics: int
    filter_calls: int

    @property
    def gb_seconds_per_node(self) -> float:
        return self.gb_seconds / self.nodes

    def items(self) -> dict[str, float]:
        return {
            "Step Functions transitions": self.transitions * PRICES["sfn_transition"],
            "Lambda GB-s": self.gb_seconds * PRICES["lambda_gb_s"],
            "Lambda requests": self.lambda_requests * PRICES["lambda_request"],
            "S3 requests": self.s3_put * PRICES["s3_put"] + self.s3_get * PRICES["s3_get"],
            "SNS": self.sns_publish * PRICES["sns_publish"],
            "CloudWatch GetMetricData": self.metrics * PRICES["cw_metric"],
            "CloudWatch Logs (assumed scan)": self.filter_calls
            * LOGS_SCANNED_GB_PER_CALL
            * PRICES["logs_scan_gb"],
            "SSM Session Manager": 0.0,
        }

    @property
    def total(self) -> float:
        return sum(self.items().values())


def task_states() -> set[str]:
    """Names of the ASL's Task states (their first attempt is already a StateEntered event)."""
    definition = json.loads((project_root() / "statemachines" / "diagnose.asl.json").read_text())
    names: set[str] = set()

    def walk(states: dict) -> None:
        for name, state in states.items():
            if state["Type"] == "Task":
                names.add(name)
            for branch in state.get("Branches", []):
                walk(branch["States"])
            if "ItemProcessor" in state:
                walk(state["ItemProcessor"]["States"])

    walk(definition["States"])
    return names


def _billed_s(run: PipelineRun, invocation: Invocation) -> float:
    """Real-time duration: the injected (scaled) waiting scaled back up, the rest as measured."""
    waited = min(run.waited_s.get(id(invocation.event), 0.0), invocation.duration_s)
    return (invocation.duration_s - waited) + waited / run.scale


def cost_of(run: PipelineRun, memory_mb: dict[str, int], tasks: set[str]) -> Cost:
    entered = [e for e in run.history if e["type"].endswith("StateEntered")]
    task_entries = sum(1 for e in entered if e.get("stateEnteredEventDetails", {}).get("name") in tasks)
    machine_invocations = [i for i in run.invocations if i.function != "hpd-trigger"]
    transitions = len(entered) + max(0, len(machine_invocations) - task_entries)
    gb_s = gb_s_measured = 0.0
    for invocation in run.invocations:
        module = invocation.function.removeprefix("hpd-").replace("-", "_")
        gb = memory_mb[module] / 1024
        gb_s += gb * _billed_s(run, invocation)
        gb_s_measured += gb * invocation.duration_s
    calls = run.api_calls
    return Cost(
        nodes=run.nodes,
        transitions=transitions,
        lambda_requests=len(run.invocations),
        gb_seconds=gb_s,
        gb_seconds_as_measured=gb_s_measured,
        s3_put=sum(calls[f"s3:{op}"] for op in _S3_PUT_CLASS),
        s3_get=sum(calls[f"s3:{op}"] for op in _S3_GET_CLASS),
        sns_publish=calls["sns:Publish"],
        metrics=run.metrics_requested,
        filter_calls=calls["logs:FilterLogEvents"],
    )


def run(runs: list[PipelineRun], progress: Progress = print) -> BenchResult:
    result = BenchResult("cost", "Cost per diagnosis (us-east-1 on-demand prices, real-time durations)")
    memory_mb = infra_facts()["memory_mb"]
    tasks = task_states()
    by_size: dict[int, list[Cost]] = defaultdict(list)
    for pipeline in runs:
        if pipeline.status == "SUCCEEDED":
            by_size[pipeline.nodes].append(cost_of(pipeline, memory_mb, tasks))
    sizes = sorted(by_size)
    header = ["item"] + [f"{n:,} nodes" for n in sizes]

    def median(n: int, value: Callable[[Cost], float]) -> float:
        return statistics.median(value(c) for c in by_size[n])

    item_names = list(by_size[sizes[0]][0].items()) if sizes else []
    rows = [
        [item] + [f"${median(n, lambda c, i=item: c.items()[i]):.5f}" for n in sizes] for item in item_names
    ]
    rows.append(["**total**"] + [f"**${median(n, lambda c: c.total):.4f}**" for n in sizes])
    rows.append(["per node"] + [f"${median(n, lambda c: c.total) / n:.6f}" for n in sizes])
    counts = []
    for label, attribute in (
        ("state transitions", "transitions"),
        ("Lambda requests", "lambda_requests"),
        ("Lambda GB-s, real time (modelled)", "gb_seconds"),
        ("Lambda GB-s, as measured (scaled)", "gb_seconds_as_measured"),
        ("Lambda GB-s per node, real time (modelled)", "gb_seconds_per_node"),
        ("S3 PUT/LIST", "s3_put"),
        ("S3 GET", "s3_get"),
        ("SNS publishes", "sns_publish"),
        ("metrics requested", "metrics"),
        ("FilterLogEvents calls", "filter_calls"),
    ):
        values = [median(n, lambda c, a=attribute: getattr(c, a)) for n in sizes]
        counts.append([label] + [f"{v:,.1f}".removesuffix(".0") for v in values])
    largest = max(by_size) if by_size else None
    if largest is not None:
        run_ = next(r for r in runs if r.nodes == largest and r.status == "SUCCEEDED")
        collect = [i for i in run_.invocations if i.function == "hpd-collect-node"]
        billed = [_billed_s(run_, i) for i in collect]
        share = sum(b * memory_mb["collect_node"] / 1024 for b in billed) / by_size[largest][0].gb_seconds
        per_batch = largest / max(1, len(collect))
        result.notes.append(
            f"Where Lambda's GB-s go ({largest:,} nodes): CollectNode is {share:.1%} of them — "
            f"{len(collect):,} invocations (batches of ~{per_batch:.0f} nodes, their sessions paced "
            f"at the invocation's share of the rate) of {memory_mb['collect_node']} MB billed a median "
            f"{statistics.median(billed):.1f} s each in real time, "
            f"{sum(billed) / largest:.2f} s per node: the batch's wall time is spent mostly waiting "
            "for its paced StartSession calls and the last collector runs."
        )
    result.tables.append(("Cost per diagnosis, by item (median over runs)", header, rows))
    result.tables.append(("What was counted per run (median)", header, counts))
    for nodes in sorted(by_size):
        costs = by_size[nodes]
        result.figures.append(
            Figure(
                f"{nodes:,} nodes: cost per diagnosis",
                "$",
                [c.total for c in costs],
                limit=TARGET_64_USD if nodes == 64 else None,
                source="issue 9" if nodes == 64 else "",
            )
        )
        result.figures.append(
            Figure(
                f"{nodes:,} nodes: Lambda GB-s per node (real time)",
                "GB-s",
                [c.gb_seconds_per_node for c in costs],
            )
        )
        progress(f"  {nodes} nodes: ${statistics.median(c.total for c in costs):.4f} per diagnosis")
    result.notes += [
        "Lambda durations are billed in real time: for each CollectNode invocation, the time its "
        "runner spent collecting the batch (paced StartSession calls, their latency, the "
        "collectors' runs, retry backoff, and the data channel's CPU on this machine, a small "
        "overestimate) is scaled back up (÷ scale); the rest is this machine's measured CPU time, "
        "kept as is (an overestimate of Lambda's compute; Lambda's arm64 CPU at 512 MB–2 GB is not "
        "this machine's, and this machine was shared with other work while it ran).",
        "Step Functions: every StateEntered event, plus each extra Lambda attempt (Retry), plus, in "
        "distributed mode, every item's task attempts (child executions are billed as Standard).",
        f"CloudWatch Logs FilterLogEvents has no per-call price; it is charged here as "
        f"{LOGS_SCANNED_GB_PER_CALL:g} GB scanned per call at $0.005/GB (an assumption). SSM Session "
        "Manager sessions are free. Not included: S3 storage of raw snapshots (~60 KB per node per "
        "run), Lambda log ingestion, SNS e-mail delivery, X-Ray traces, the Free Tier.",
        "Prices (us-east-1, on demand): Step Functions Standard $0.025 per 1,000 transitions; Lambda "
        "arm64 $0.0000133334 per GB-s + $0.20 per 1M requests; S3 PUT/LIST $0.005 and GET $0.0004 per "
        "1,000; SNS $0.50 per 1M publishes; CloudWatch GetMetricData $0.01 per 1,000 metrics.",
    ]
    return result


if __name__ == "__main__":
    from bench.bench_pipeline import run as run_pipelines

    _, pipeline_runs = run_pipelines(plan=((8, 1), (64, 1)))
    cost = run(pipeline_runs)
    for caption, _header, rows in cost.tables:
        print(caption)
        for row in rows:
            print("  " + " | ".join(row))
