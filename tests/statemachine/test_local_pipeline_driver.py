"""The local pipeline driver's injection points that only the demo and the benchmark use otherwise.

The benchmark meters StartSession service-side and delays the collector; the demo spreads its
healthy cluster over one AZ. These run in CI here so that a change to the driver cannot break them
unnoticed until the next `make bench`.
"""

from __future__ import annotations

import threading

from sfn_checks import collect_failure, node_row

from hyperpod_perf_dev.localrun.driver import local_pipeline
from hyperpod_perf_dev.localrun.plan import ClusterPlan, Latencies, NodePlan, RunPlan
from hyperpod_perf_dev.localrun.sessions import instance_of
from hyperpod_perf_dev.sim.ssm import client_error


def test_a_start_session_meter_sees_what_the_node_plans_let_through_and_its_error_fails_that_node() -> None:
    # Given three nodes: node 1 refuses its session by plan, and a meter that turns away node 3's
    # StartSession as an offline target would
    seen: list[str] = []
    lock = threading.Lock()
    nodes_by_index: dict[int, str] = {}

    def meter(target: str) -> BaseException | None:
        with lock:
            seen.append(instance_of(target))
        if instance_of(target) == nodes_by_index[2]:
            return client_error("TargetNotConnected", f"{target} is not connected.")
        return None

    plan = RunPlan(
        clusters=(ClusterPlan(nodes=3, node_plans={0: NodePlan(refuse="AccessDeniedException")}),),
        start_gate=meter,
    )
    with local_pipeline(plan) as run:
        nodes = run.cluster_nodes()
        nodes_by_index.update({i: n.instance_id for i, n in enumerate(nodes)})
        # When the cluster is diagnosed
        outcome = run.run({"cluster": "ml-cluster"}, "metered")

    # Then the meter was asked about nodes 2 and 3 only (node 1's plan refused it before the meter)
    assert outcome.status == "SUCCEEDED"
    assert nodes[0].instance_id not in seen
    assert set(seen) == {nodes[1].instance_id, nodes[2].instance_id}
    # and the node it turned away failed with that reason while node 2 was collected
    assert collect_failure(outcome, nodes[2].instance_id)["evidence"]["reason"] == "TargetNotConnected"
    assert collect_failure(outcome, nodes[0].instance_id)["evidence"]["reason"] == "AccessDenied"
    assert node_row(outcome, nodes[1].instance_id)["collection"] == "collected"
    assert outcome.raw(nodes[1].instance_id) == nodes[1].text.encode()


def test_latencies_reach_the_agent_and_one_availability_zone_leaves_no_az_spread_concern() -> None:
    # Given a collector that runs 0.2 s before its output streams, and a two-node cluster in one AZ
    plan = RunPlan(
        clusters=(ClusterPlan(nodes=2, availability_zones=1),),
        latencies=Latencies(collector_s=0.2),
    )
    with local_pipeline(plan) as run:
        # When the cluster is diagnosed
        outcome = run.run({"cluster": "ml-cluster"}, "one-az")
        delays = [record.scenario.start_delay for record in run.ssm.agent.records]

    # Then every session the agent served waited the collector's run time before its output
    assert outcome.status == "SUCCEEDED"
    assert delays == [0.2, 0.2]
    # and with both nodes in one AZ there is no cross-AZ concern
    assert outcome.findings("topology.az_spread", "CONCERN") == []
