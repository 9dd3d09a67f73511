"""Load through the real ASL (issue 8, item 3): an alarm storm over several clusters, and a 2,000-node
cluster through the Distributed Map without any state or Lambda payload reaching 256 KB."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from sfn_checks import STATE_LIMIT_BYTES, invocation_sizes, state_payload_sizes

from hyperpod_perf.pipeline.triggers import execution_name
from hyperpod_perf_dev.localrun.driver import local_pipeline, wait_all
from hyperpod_perf_dev.localrun.plan import ClusterPlan, RunPlan

WINDOW_MINUTES = 15  # the trigger's DEDUP_WINDOW_MINUTES default


def test_an_alarm_storm_of_500_events_for_3_clusters_starts_one_run_per_cluster_and_window(
    record_case,
) -> None:
    # Given three clusters with their alarms, and 500 alarm events spread over 5 minutes that
    # straddle a 15-minute window boundary (starting 12 minutes into a window)
    clusters = tuple(ClusterPlan(name=f"storm-{i}", nodes=2, seed=i + 1) for i in range(3))
    plan = RunPlan(clusters=clusters, transport="in-process")
    now = datetime.now(UTC)
    window_start = now.replace(minute=now.minute // WINDOW_MINUTES * WINDOW_MINUTES, second=0, microsecond=0)
    first = window_start - timedelta(minutes=3)
    with local_pipeline(plan) as run:
        events = []
        for i in range(500):
            cluster = clusters[i % 3].name
            when = first + timedelta(seconds=i * 300 / 500)
            events.append((cluster, when))
        # When every event reaches the trigger
        decisions = [run.trigger(run.alarm_event(cluster, when)) for cluster, when in events]
        executions = wait_all(run)

    # Then each (cluster, window) has exactly one execution, named for it, and nothing else ran
    expected = {execution_name(c, w, WINDOW_MINUTES) for c, w in events}
    assert len(expected) == 6  # 3 clusters x the 2 windows the 5 minutes touch
    per_name = Counter(e["name"] for e in executions)
    assert set(per_name) == expected
    assert max(per_name.values()) == 1
    assert {d["execution_name"] for d in decisions} == expected
    assert all(e["status"] == "SUCCEEDED" for e in executions)
    record_case(
        "500 alarm events over 5 minutes for 3 clusters", "one execution per cluster per 15-minute window"
    )


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_2000_node_cluster_goes_through_the_distributed_map_with_every_payload_under_256_kb(
    record_case,
) -> None:
    """2,000 simulated nodes, DISTRIBUTED_MAP_THRESHOLD 1,000.

    The sessions use the driver's in-process session fake (`transport="in-process"`, installed
    with `clients.override("session_client", ...)`): it returns each simulated node's collector
    output without a loopback WebSocket per node, to keep the run affordable; the real data-channel
    transport is covered by the other state-machine tests. Nodes are ml.p4d.24xlarge (4 EFA devices)
    so each snapshot is smaller to parse; the payload sizes under test do not depend on it.
    """
    # Given a 2,000-node cluster and a distributed-map threshold below that
    cluster = ClusterPlan(nodes=2000, instance_type="ml.p4d.24xlarge", lustre_utilization=0.5)
    plan = RunPlan(
        clusters=(cluster,),
        transport="in-process",
        distributed_threshold=1000,
        map_concurrency=8,
        environment={"SESSION_RATE_PER_S": "1000"},  # no service-side rate in-process: don't wait
    )
    with local_pipeline(plan) as run:
        nodes = run.cluster_nodes()
        # When it is diagnosed
        outcome = run.wait(run.start({"cluster": "ml-cluster"}, "fleet-2000"), timeout_s=600, load=False)
        sizes = state_payload_sizes(outcome.history)
        calls = invocation_sizes(run)
        events = [i.event for i in run.dep.bridge.invocations]
        keys = outcome.names()
        report = outcome.report
        sample = [nodes[0], nodes[999], nodes[1999]]
        raws = {n.instance_id: outcome.raw(n.instance_id) for n in sample}

    # Then the Distributed Map ran (targets passed by S3 key, not inline) and the run succeeded
    assert outcome.status == "SUCCEEDED"
    entered = outcome.states_entered()
    assert "CollectNodesDistributed" in entered and "CollectNodesInline" not in entered
    # and no state input/output, no Lambda request or response, came near the 256 KB limit
    assert sizes and max(size for _, size in sizes) < STATE_LIMIT_BYTES
    # and CollectNode ran once per batch (8 at once, at most 200 each: 2 waves of 8 x 125 nodes)
    collects = [e for e in events if "batch" in e]
    assert Counter(function for function, _, _ in calls)["hpd-collect-node"] == len(collects) == 16
    collected = [t["instance_id"] for e in collects for t in e["batch"]["targets"]]
    assert len(collected) == len(set(collected)) == 2000
    assert max(request for _, request, _ in calls) < STATE_LIMIT_BYTES
    assert max(response for _, _, response in calls) < STATE_LIMIT_BYTES
    # and every node was collected: 2,000 raw outputs and 2,000 rows in the report
    assert sum(1 for k in keys if k.startswith("raw/")) == 2000
    assert len(report["nodes"]) == 2000
    assert all(row["collection"] == "collected" for row in report["nodes"])
    for node in sample:
        assert raws[node.instance_id] == node.text.encode()
    record_case("2,000-node cluster", "Distributed Map; every state input/output and Lambda payload < 256 KB")
