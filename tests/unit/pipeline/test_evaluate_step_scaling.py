"""The Evaluate step at scale: node results read concurrently, and work linear in the nodes.

At 1,024 nodes the Evaluate and FsxMetrics steps read one stored result per node. One S3 GET
after another is ~1,024 × tens of milliseconds (AWS's S3 performance guidelines); these tests hold
the readers to concurrent GETs, one per node and no more, and the whole Evaluate step — cluster
rules, report model, three renderings — to work that doubles when the nodes double. Work is
counted in Python and C function calls (sys.setprofile), not timed: the count is the same on an
idle machine and a loaded one.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from hyperpod_perf.aws.s3 import READ_CONCURRENCY, ReportStore
from hyperpod_perf.collect.snapshot import parse_container
from hyperpod_perf.domain.cluster import ClusterInfo, ClusterNode
from hyperpod_perf.domain.errors import NotFound
from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.domain.request import DiagnoseRequest
from hyperpod_perf.pipeline.reporting import evaluate_run
from hyperpod_perf.pipeline.results import load_evaluations, load_mounts
from hyperpod_perf.service.evaluate import evaluate_node
from hyperpod_perf_dev.sim.node import NodeFaults, simulate_cluster

RUN = RunLayout(prefix="reports/c/20261202T000000Z-e/", execution="e", started="2026-12-02T00:00:00+00:00")
CLUSTER = ClusterInfo(
    name="ml-cluster",
    arn="arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdefghijkl",
    cluster_id="abcdefghijkl",
    region="us-west-2",
)


class CountingStore:
    """ReportStore's interface over a dict, counting GETs; `get_many` is the real one (threads)."""

    bucket = "hpd-test"

    def __init__(self, get_latency_s: float = 0.0) -> None:
        self.objects: dict[str, bytes] = {}
        self.gets: list[str] = []
        self.in_flight = self.most_in_flight = 0
        self._lock = threading.Lock()
        self.get_latency_s = get_latency_s

    def put_text(self, key: str, text: str, content_type: str = "") -> str:
        self.objects[key] = text.encode()
        return key

    def put_json(self, key: str, value: Any) -> str:
        return self.put_text(key, json.dumps(value, default=str))

    def put_bytes(self, key: str, data: bytes, content_type: str = "") -> str:
        self.objects[key] = data
        return key

    def get_bytes(self, key: str) -> bytes:
        with self._lock:
            self.gets.append(key)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.get_latency_s:
                time.sleep(self.get_latency_s)
            if key not in self.objects:
                raise NotFound(f"no object {key}", context="s3:GetObject")
            return self.objects[key]
        finally:
            with self._lock:
                self.in_flight -= 1

    def get_json(self, key: str) -> Any:
        return json.loads(self.get_bytes(key))

    def get_text(self, key: str) -> str:
        return self.get_bytes(key).decode()

    get_many = ReportStore.get_many

    def list_keys(self, prefix: str, *, limit: int = 100_000) -> list[str]:
        return sorted(k for k in self.objects if k.startswith(prefix))[:limit]


@pytest.fixture(scope="module")
def templates() -> list[tuple[ClusterNode, Any]]:
    """Eight judged nodes (two faulty) to copy from: judging 240 snapshots would take seconds."""
    sim = simulate_cluster(8, {2: NodeFaults(pcie_width_gpu=3), 5: NodeFaults(governor="powersave")})
    judged = []
    for index, node in enumerate(sim):
        cluster_node = ClusterNode(
            instance_id=node.instance_id,
            group="workers",
            hostname=node.hostname,
            instance_type="ml.p5.48xlarge",
            az=("us-west-2a", "us-west-2b")[index % 2],
            az_id=("usw2-az1", "usw2-az2")[index % 2],
        )
        judged.append(
            (cluster_node, evaluate_node(cluster_node, parse_container(node.text, node.instance_id)))
        )
    return judged


def seeded_store(templates: list[tuple[ClusterNode, Any]], nodes: int, **store: Any) -> CountingStore:
    """A run of `nodes` nodes as ResolveCluster and CollectNode leave it (copies of the templates)."""
    result = CountingStore(**store)
    cluster_nodes = []
    for index in range(nodes):
        node, evaluation = templates[index % len(templates)]
        instance_id = f"i-{index:017x}"
        node = node.model_copy(update={"instance_id": instance_id})
        findings = [f.model_copy(update={"node": instance_id}) for f in evaluation.findings]
        summary = evaluation.summary.model_copy(update={"node": instance_id, "instance_id": instance_id})
        mounts = [{**m, "node": instance_id} for m in evaluation.mounts]
        copy = evaluation.model_copy(
            update={"node": instance_id, "findings": findings, "summary": summary, "mounts": mounts}
        )
        result.put_json(RUN.node_result(instance_id), copy.model_dump(mode="json"))
        cluster_nodes.append(node.model_dump(mode="json"))
    result.put_json(
        RUN.work("cluster"),
        {"cluster": CLUSTER.model_dump(mode="json"), "nodes": cluster_nodes, "findings": []},
    )
    return result


def calls_made(work: Callable[[], Any]) -> int:
    """Python and C function calls `work` makes (this thread and the threads it starts)."""
    counted = [0]

    def count(frame: Any, event: str, arg: Any) -> None:
        if event in ("call", "c_call"):
            counted[0] += 1

    threading.setprofile(count)
    sys.setprofile(count)
    try:
        work()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return counted[0]


def test_node_results_are_read_concurrently_one_get_per_node(templates):
    # Given 96 stored node results that each take 20 ms to read
    store = seeded_store(templates, 96, get_latency_s=0.02)
    store.gets.clear()
    # When the Evaluate step's reader loads them
    evaluations = load_evaluations(store, RUN)
    # Then every node's result came back, each read exactly once, READ_CONCURRENCY at a time
    assert sorted(e.node for e in evaluations) == sorted(f"i-{i:017x}" for i in range(96))
    assert sorted(store.gets) == sorted(set(store.gets)) and len(store.gets) == 96
    assert store.most_in_flight == READ_CONCURRENCY


def test_fsx_reads_only_the_mounts_of_every_node(templates):
    store = seeded_store(templates, 40)
    store.gets.clear()
    mounts = load_mounts(store, RUN)
    assert len(store.gets) == 40
    assert {m.node for m in mounts} == {f"i-{i:017x}" for i in range(40)}
    assert {m.mountpoint for m in mounts} >= {"/fsx"}


def test_the_evaluate_step_reads_each_node_once_and_the_run_files_once(templates):
    store = seeded_store(templates, 64)
    store.gets.clear()
    result = evaluate_run(DiagnoseRequest(cluster="ml-cluster"), RUN, store=store, now=datetime.now(UTC))
    node_reads = [k for k in store.gets if k.startswith(RUN.node_results_prefix)]
    other_reads = [k for k in store.gets if k not in node_reads]
    assert len(node_reads) == len(set(node_reads)) == 64
    # the run's own files: cluster, placement, fsx, logs, nccl, job logs, topology (all but the
    # first absent here)
    run_files = ("cluster", "placement", "fsx", "logs", "nccl", "joblogs", "topology")
    assert sorted(other_reads) == sorted(RUN.work(n) for n in run_files)
    assert result["nodes"] == 64 and result["concerns"] >= 2


def test_the_evaluate_step_does_twice_the_work_for_twice_the_nodes(templates):
    # Given the same cluster at 120 and at 240 nodes (the same eight node kinds, repeated)
    small, large = seeded_store(templates, 120), seeded_store(templates, 240)
    request = DiagnoseRequest(cluster="ml-cluster")
    now = datetime.now(UTC)
    evaluate_run(request, RUN, store=seeded_store(templates, 8), now=now)  # imports, caches: not counted
    # When the whole Evaluate step runs on each (reads, cluster rules, report, three renderings)
    work_small = calls_made(lambda: evaluate_run(request, RUN, store=small, now=now))
    work_large = calls_made(lambda: evaluate_run(request, RUN, store=large, now=now))
    # Then doubling the nodes doubles the work, within what a constant part explains (linear: 2.0;
    # n log n over these sizes: 2.3; quadratic: 4)
    assert 1.7 <= work_large / work_small <= 2.25, (work_small, work_large)
