"""AWS's 256 KiB limits by construction (issue 12, point 2).

Step Functions limits every state's input and output, and a Lambda invocation's request and
response, to 256 KiB; a Distributed Map's collected child results count against it even with
`ResultPath: null` (aws/aws-cdk issue 24799). The offline interpreter enforces none of this, so the
sizes are measured here: from a real execution's history (every state's input and output, every
Lambda request and response, every batch's output through the task's ResultSelector), and, for
5,000 targets, computed from the real models the handlers use, aggregated the way AWS aggregates a
Distributed Map's results (a JSON array of every child's output).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sfn_checks import STATE_LIMIT_BYTES, invocation_sizes, state_payload_sizes

from hyperpod_perf.domain.layout import MAP_RUNS_PREFIX, RunLayout
from hyperpod_perf.domain.targets import ResolvedCluster, TargetBatch, TargetItem
from hyperpod_perf.pipeline.cluster import INLINE_BATCHES_MAX_BYTES
from hyperpod_perf.pipeline.pacing import MAX_NODES_PER_BATCH, plan_fan_out
from hyperpod_perf_dev.localrun.deployment import asl_path
from hyperpod_perf_dev.localrun.driver import local_pipeline
from hyperpod_perf_dev.localrun.plan import ClusterPlan, RunPlan

NODES = 400
#: One StartSession rate high enough that pacing does not slow the test; the Map runs 8 at once.
FAST_RATE = "400"


def _distributed_map() -> dict[str, Any]:
    definition = json.loads(asl_path().read_text())
    return definition["States"]["Gather"]["Branches"][0]["States"]["CollectNodesDistributed"]


def _child_output(response: dict[str, Any]) -> str:
    """A batch's output as the child execution passes it on: the task's ResultSelector applied to
    the Lambda response (`collected.$: $.Payload.collected`, `failed.$: $.Payload.failed`)."""
    task = _distributed_map()["ItemProcessor"]["States"]["CollectNodeDistributed"]
    selected = {
        key.removesuffix(".$"): response[path.removeprefix("$.Payload.")]
        for key, path in task["ResultSelector"].items()
    }
    assert task["ResultPath"] == "$"  # the child's output is the selection, not its input
    return json.dumps(selected, separators=(",", ":"))


def _aggregate_bytes(outputs: list[str]) -> int:
    """A Distributed Map's collected results as AWS builds them: one JSON array of child outputs."""
    return len(("[" + ",".join(outputs) + "]").encode())


@pytest.fixture(scope="module")
def distributed_run() -> dict[str, Any]:
    """400 nodes through the Distributed Map (threshold 100), every batch's response captured."""
    cluster = ClusterPlan(nodes=NODES, instance_type="ml.p4d.24xlarge")
    plan = RunPlan(
        clusters=(cluster,),
        transport="in-process",
        distributed_threshold=100,
        environment={"SESSION_RATE_PER_S": FAST_RATE},
    )
    with local_pipeline(plan) as run:
        assert run.dep.bridge is not None
        responses: list[dict[str, Any]] = []
        collect = run.dep.bridge.handlers["hpd-collect-node"]

        def capture(event: dict[str, Any], context: Any) -> Any:
            response = collect(event, context)
            responses.append(response)
            return response

        run.dep.bridge.handlers["hpd-collect-node"] = capture
        outcome = run.wait(run.start({"cluster": "ml-cluster"}, "limits-400"), timeout_s=600, load=False)
        report = outcome.report
        manifests = [k for k in run.keys(f"{MAP_RUNS_PREFIX}/") if k.endswith("/manifest.json")]
        return {
            "outcome": outcome,
            "sizes": state_payload_sizes(outcome.history),
            "calls": invocation_sizes(run),
            "responses": responses,
            "events": [i.event for i in run.dep.bridge.invocations if i.function == "hpd-collect-node"],
            "report": report,
            "manifests": manifests,
        }


def test_every_state_input_and_output_of_a_400_node_run_is_measured_far_below_256_kib(
    distributed_run,
) -> None:
    outcome = distributed_run["outcome"]
    sizes = distributed_run["sizes"]
    # Given the run went through the Distributed Map and every node is in the report
    assert outcome.status == "SUCCEEDED"
    assert "CollectNodesDistributed" in outcome.states_entered()
    assert len(distributed_run["report"]["nodes"]) == NODES
    # Then no state's input or output in the history holds anything that grows with the cluster:
    # the largest is a few KB (targets travel by S3 key), against 256 KiB
    assert len(sizes) > 30
    largest = max(size for _, size in sizes)
    assert largest < 8 * 1024 < STATE_LIMIT_BYTES
    # and every Lambda request and response is under the limit; the largest request is a batch
    calls = distributed_run["calls"]
    assert max(request for _, request, _ in calls) < STATE_LIMIT_BYTES
    assert max(response for _, _, response in calls) < 1024


def test_the_distributed_map_writes_its_results_to_s3_and_each_batch_passes_on_a_few_bytes(
    distributed_run,
) -> None:
    # Given the ResultWriter of the deployed definition
    writer = _distributed_map()["ResultWriter"]
    assert writer["Resource"] == "arn:aws:states:::s3:putObject"
    assert writer["Parameters"] == {"Bucket": "${ReportBucketName}", "Prefix": MAP_RUNS_PREFIX}
    # Then the Map Run wrote its manifest under that prefix (one Map Run, one manifest)
    assert len(distributed_run["manifests"]) == 1
    # and each batch's output, through the ResultSelector, is a few bytes whatever its size
    outputs = [_child_output(r) for r in distributed_run["responses"]]
    batches = [len(e["batch"]["targets"]) for e in distributed_run["events"]]
    assert sum(batches) == NODES and len(outputs) == len(batches) == 8
    assert {json.loads(o)["collected"] for o in outputs} == set(batches)
    assert max(len(o) for o in outputs) <= len('{"collected":200,"failed":200}')


def _realistic_targets(count: int) -> list[TargetItem]:
    """Targets shaped like a HyperPod cluster's (17-hex-digit instance ids, AWS hostnames)."""
    return [
        TargetItem(
            instance_id=f"i-0{i:016x}",
            cluster_id="a1b2c3d4e5f6",
            group="worker-group-with-a-long-name-1",
            hostname=f"ip-10-{i // 65536 % 256}-{i // 256 % 256}-{i % 256}",
            instance_type="ml.p5en.48xlarge",
            az="us-west-2a",
            status="Running",
        )
        for i in range(count)
    ]


def _batches(targets: list[TargetItem], rate: float) -> list[TargetBatch]:
    plan = plan_fan_out(len(targets), rate)
    batches, start = [], 0
    for index, size in enumerate(plan.batch_sizes):
        batches.append(
            TargetBatch(
                index=index, start_after_s=plan.start_after_s(index), targets=targets[start : start + size]
            )
        )
        start += size
    return batches


@pytest.mark.parametrize("rate", [0.5, 2.0, 3.0])
def test_5000_targets_fit_every_limit_as_computed_from_the_real_models(distributed_run, rate) -> None:
    # Given 5,000 realistic targets split by the fan-out plan at this StartSession rate
    targets = _realistic_targets(5000)
    batches = _batches(targets, rate)
    run = RunLayout.new("a-cluster-name-of-sixty-three-characters-is-the-most-hyperpod-al", "x" * 80, _now())
    # When each batch becomes a child's input (the ItemSelector: batch, run, rate)
    child_inputs = [
        len(
            json.dumps(
                {"batch": b.model_dump(mode="json"), "run": run.model_dump(mode="json"), "rate_per_s": rate}
            )
        )
        for b in batches
    ]
    # Then the largest child input and CollectNode request (same content + attempt) is < 256 KiB
    assert max(child_inputs) < STATE_LIMIT_BYTES
    # and what ResolveCluster returns into the state does not grow with the targets
    resolved = ResolvedCluster(
        mode="distributed",
        target_count=5000,
        batch_count=len(batches),
        max_concurrency=plan_fan_out(5000, rate).max_concurrency,
        invocation_rate_per_s=rate,
        batches_key=run.work("batches"),
        cluster_id="a1b2c3d4e5f6",
    )
    assert len(resolved.model_dump_json(exclude_none=True)) < 1024
    # and the Map's collected results, as AWS counts them, are every child's output in one array:
    # each output measured on a real batch (400-node run above), at the widest the counts can be
    widest = max(
        (_child_output({"collected": len(b.targets), "failed": len(b.targets)}) for b in batches), key=len
    )
    assert len(widest) <= max(len(o) for o in map(_child_output, distributed_run["responses"])) + 6
    aggregated = _aggregate_bytes([widest] * len(batches))
    assert aggregated < 4 * 1024 < STATE_LIMIT_BYTES


def test_the_old_per_node_items_would_exceed_256_kib_at_5000_nodes() -> None:
    """Guards the method above: the same aggregation over one child per node whose output was its
    input (`ResultPath: null`, the definition before batches) crosses the limit, as AWS reported."""
    run = RunLayout.new("ml-cluster", "hpd-ml-cluster-20261201T2145Z", _now())
    per_node = [
        json.dumps(
            {"target": t.model_dump(mode="json"), "run": run.model_dump(mode="json")}, separators=(",", ":")
        )
        for t in _realistic_targets(5000)
    ]
    assert _aggregate_bytes(per_node) > STATE_LIMIT_BYTES
    # and where it crossed: the first cluster size whose aggregate no longer fits
    size = len(per_node[0]) + 1
    assert 500 < STATE_LIMIT_BYTES // size < 1000


def test_a_full_batch_of_the_longest_targets_is_a_fraction_of_the_item_limit() -> None:
    # Given the largest batch the planner makes (MAX_NODES_PER_BATCH targets)
    batch = TargetBatch(index=9999, start_after_s=0.333, targets=_realistic_targets(MAX_NODES_PER_BATCH))
    # Then it stays under a quarter of 256 KiB, and over the inline budget (inline: small clusters only)
    assert len(batch.model_dump_json()) < STATE_LIMIT_BYTES / 4
    assert INLINE_BATCHES_MAX_BYTES < STATE_LIMIT_BYTES / 2


def _now():
    from datetime import UTC, datetime

    return datetime(2026, 12, 1, 21, 45, tzinfo=UTC)
