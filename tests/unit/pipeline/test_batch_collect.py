"""CollectNode over a batch: every node's outcome recorded on its own; only what a retry can fix
goes back to the state machine, and a retry or RecordNodeFailure never overwrites a recorded node."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hyperpod_perf.collect.runner import NOT_STARTED, NodeFailure, NodeOutput, NodeTarget
from hyperpod_perf.domain.errors import Throttled, TransientError
from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.domain.targets import TargetBatch, TargetItem
from hyperpod_perf.pipeline import nodes as nodes_module
from hyperpod_perf.pipeline.nodes import collect_batch, record_batch_failure
from hyperpod_perf_dev.sim.node import simulate_cluster

RUN = RunLayout(prefix="reports/c/20261201T000000Z-e/", execution="e", started="2026-12-01T00:00:00+00:00")


class MemoryStore:
    """ReportStore's interface over a dict; `fail_puts` keys fail once with TransientError (a 500)."""

    def __init__(self, fail_puts: set[str] | None = None) -> None:
        self.objects: dict[str, bytes] = {}
        self.fail_puts = set(fail_puts or ())

    def put_text(self, key: str, text: str, content_type: str = "") -> str:
        if key in self.fail_puts:
            self.fail_puts.discard(key)
            raise TransientError("We encountered an internal error.", context=f"s3:PutObject {key}")
        self.objects[key] = text.encode()
        return key

    def put_json(self, key: str, value: Any) -> str:
        return self.put_text(key, json.dumps(value, default=str))

    def get_json(self, key: str) -> Any:
        return json.loads(self.objects[key])

    def list_keys(self, prefix: str) -> list[str]:
        return sorted(k for k in self.objects if k.startswith(prefix))

    def result(self, instance_id: str) -> dict[str, Any]:
        return self.get_json(RUN.node_result(instance_id))


class ScriptedRunner:
    """Returns, per node, the outcome scripted for it (default: the simulated node's output)."""

    def __init__(self, texts: dict[str, str], failures: dict[str, NodeFailure] | None = None) -> None:
        self.texts = texts
        self.failures = failures or {}
        self.calls: list[list[str]] = []

    def collect(self, nodes: list[NodeTarget]) -> list[Any]:
        self.calls.append([n.instance_id for n in nodes])
        return [
            self.failures.get(n.instance_id) or NodeOutput(n, self.texts[n.instance_id], "ssm-session:s")
            for n in nodes
        ]


def _batch(count: int, **status: str) -> tuple[TargetBatch, dict[str, str]]:
    nodes = simulate_cluster(count)
    targets = [
        TargetItem(instance_id=n.instance_id, cluster_id="c", group="g", status=status.get(f"n{n.index}"))
        for n in nodes
    ]
    return TargetBatch(index=0, targets=targets), {n.instance_id: n.text for n in nodes}


def _failure(instance_id: str, reason: str, detail: str = "", partial: str | None = None) -> NodeFailure:
    return NodeFailure(NodeTarget(instance_id, "g"), reason, detail or reason, partial_text=partial)


def test_each_node_of_a_batch_gets_its_own_outcome_and_the_task_returns_counts_only() -> None:
    # Given a batch of 4: one healthy, one whose agent is not connected, one Pending, one whose
    # stream broke after the first 2,000 characters
    batch, texts = _batch(4, n2="Pending")
    ids = [t.instance_id for t in batch.targets]
    runner = ScriptedRunner(
        texts,
        {
            ids[1]: _failure(ids[1], "TargetNotConnected"),
            ids[3]: _failure(ids[3], "SessionClosed", "socket closed", partial=texts[ids[3]][:2000]),
        },
    )
    store = MemoryStore()
    # When the batch is collected
    result = collect_batch(batch, RUN, runner=runner, store=store)
    # Then no session was started for the Pending node, and every node has its own result
    assert sorted(runner.calls) == sorted([[ids[0]], [ids[1]], [ids[3]]])
    assert store.result(ids[0])["summary"]["collection"] == "collected"
    assert store.result(ids[1])["findings"][0]["evidence"]["reason"] == "TargetNotConnected"
    assert store.result(ids[2])["findings"][0]["evidence"]["reason"] == "NodeNotRunning"
    assert store.result(ids[3])["findings"][0]["summary"].startswith("collection incomplete: SessionClosed")
    assert store.objects[RUN.raw(ids[0])] == texts[ids[0]].encode()
    # and the task's output is three small counts (the Map collects one per batch)
    assert result == {"collected": 1, "failed": 3, "skipped": 0}
    assert len(json.dumps(result)) < 64


def test_a_node_still_throttled_fails_the_batch_with_throttled_and_the_retry_collects_only_it() -> None:
    # Given a batch of 3 whose second node's StartSession stayed throttled through the runner's retries
    batch, texts = _batch(3)
    ids = [t.instance_id for t in batch.targets]
    store = MemoryStore()
    first = ScriptedRunner(texts, {ids[1]: _failure(ids[1], "Throttled", "Rate exceeded")})
    # When the batch runs: the two others are recorded, then the batch fails with Throttled
    with pytest.raises(Throttled, match=rf"1 of 3 nodes left for a retry \(Throttled: {ids[1]}\)"):
        collect_batch(batch, RUN, runner=first, store=store)
    assert sorted(store.list_keys(RUN.node_results_prefix)) == sorted(
        RUN.node_result(i) for i in (ids[0], ids[2])
    )
    # When the state machine retries the batch
    second = ScriptedRunner(texts)
    result = collect_batch(batch, RUN, runner=second, store=store, retry=True)
    # Then only the throttled node is collected again, and the batch is complete
    assert second.calls == [[ids[1]]]  # one node, one session
    assert result == {"collected": 1, "failed": 0, "skipped": 2}
    assert {store.result(i)["summary"]["collection"] for i in ids} == {"collected"}


def test_a_result_that_could_not_be_stored_and_a_node_never_started_are_left_for_a_retry() -> None:
    # Given a batch of 3: node 1's raw output fails to store once (S3 500), node 3 was never started
    # because the invocation's deadline came first
    batch, texts = _batch(3)
    ids = [t.instance_id for t in batch.targets]
    store = MemoryStore(fail_puts={RUN.raw(ids[0])})
    runner = ScriptedRunner(texts, {ids[2]: _failure(ids[2], NOT_STARTED)})
    # When the batch runs, then it fails with a retryable TransientError naming both
    with pytest.raises(
        TransientError, match=rf"2 of 3 nodes left .*TransientError: {ids[0]}.*NotStarted: {ids[2]}"
    ):
        collect_batch(batch, RUN, runner=runner, store=store)
    # and only the middle node has a result so far
    assert store.list_keys(RUN.node_results_prefix) == [RUN.node_result(ids[1])]


def test_record_batch_failure_names_every_node_without_a_result_and_keeps_the_others() -> None:
    # Given a batch of 3 of which the first was recorded as collected before the invocation died
    batch, texts = _batch(3)
    ids = [t.instance_id for t in batch.targets]
    store = MemoryStore()
    collect_batch(
        TargetBatch(index=0, targets=batch.targets[:1]), RUN, runner=ScriptedRunner(texts), store=store
    )
    # When RecordNodeFailure handles the batch's States.Timeout
    result = record_batch_failure(batch, RUN, "States.Timeout", "Task timed out", store=store)
    # Then the two others carry a collect.node CONCERN with the reason; the first is untouched
    assert result == {"collected": 0, "failed": 2, "skipped": 1}
    assert store.result(ids[0])["summary"]["collection"] == "collected"
    for instance_id in ids[1:]:
        (finding,) = store.result(instance_id)["findings"]
        assert (finding["check"], finding["severity"]) == ("collect.node", "CONCERN")
        assert finding["evidence"] == {"reason": "States.Timeout", "detail": "Task timed out"}


def test_a_node_whose_evaluation_raises_fails_alone_and_its_raw_output_is_kept(monkeypatch) -> None:
    # Given a batch of 2 whose first node's evaluation raises (a parser bug on its output)
    batch, texts = _batch(2)
    ids = [t.instance_id for t in batch.targets]
    real_evaluate = nodes_module.evaluate_node

    def evaluate(node, *args, **kwargs):
        if node.instance_id == ids[0]:
            raise ValueError("unexpected nvidia-smi layout")
        return real_evaluate(node, *args, **kwargs)

    monkeypatch.setattr(nodes_module, "evaluate_node", evaluate)
    store = MemoryStore()
    # When the batch runs
    result = collect_batch(batch, RUN, runner=ScriptedRunner(texts), store=store)
    # Then the first node is a recorded failure naming the error, its raw output still in S3,
    # and the second node is collected
    assert result == {"collected": 1, "failed": 1, "skipped": 0}
    assert store.result(ids[0])["findings"][0]["evidence"]["reason"] == "ValueError"
    assert store.objects[RUN.raw(ids[0])] == texts[ids[0]].encode()
    assert store.result(ids[1])["summary"]["collection"] == "collected"
