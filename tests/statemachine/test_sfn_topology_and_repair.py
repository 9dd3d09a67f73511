"""Topology and repairs end to end: the real ASL in moto, the real handlers, simulated clusters.

- A node back in service (HyperPod's node health event, HealthStatus Schedulable) starts its own
  diagnosis through the real trigger; Publish judges it against its last run in the history and
  the fleet, and the SNS message is the short before/after verdict.
- Layers from the simulated EC2 DescribeInstanceTopology (localrun.topology, the adapter's fake)
  reach the pair analysis: a planted fault across one layer boundary is `nccl.fabric` with the
  boundary named, and a star around one node is still that node.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from itertools import combinations
from typing import Any

from sfn_checks import DATA, REAL_NCCL

from hyperpod_perf_dev.localrun.driver import local_pipeline
from hyperpod_perf_dev.localrun.plan import ClusterPlan, RunPlan
from hyperpod_perf_dev.sim.node import NodeFaults

EVENT = json.loads((REAL_NCCL.parent / "events" / "hyperpod_node_health_event.json").read_text())
REPAIRED = 1  # node 2


def back_in_service(instance_id: str, when: datetime, region: str) -> dict[str, Any]:
    """The real node health event, for this cluster's node, its status Schedulable."""
    event = copy.deepcopy(EVENT)
    event["time"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    event["region"] = region
    event["detail"].update(ClusterName="ml-cluster", InstanceId=instance_id)
    event["detail"].pop("ClusterArn")
    event["detail"]["HealthSummary"].update(HealthStatus="Schedulable", RepairAction=None)
    return event


def _verdict(run: Any, when: datetime) -> tuple[str, dict[str, Any], dict[str, Any]]:
    node = run.cluster_nodes()[REPAIRED]
    decision = run.trigger(back_in_service(node.instance_id, when, run.dep.region))
    assert decision["execution_name"].startswith("hpdr-ml-cluster-")
    outcome = run.wait(run.execution_arn(decision["execution_name"]))
    assert outcome.status == "SUCCEEDED"
    (verdict,) = outcome.findings("history.after_repair")
    return node.instance_id, verdict, run.published()[-1]


def test_a_node_back_in_service_gets_the_short_verdict_fixed_not_fixed_or_below_the_fleet() -> None:
    plan = ClusterPlan(nodes=4, node_plans={}, lustre_utilization=None)
    with local_pipeline(RunPlan(clusters=(plan,), transport="in-process")) as run:
        # Given a first run in which node 2 shows Xid 79
        run.refault(REPAIRED, NodeFaults(xid79=True))
        first = run.run({"cluster": "ml-cluster", "scope": "all"}, "before")
        assert first.status == "SUCCEEDED"
        now = datetime.now(UTC)

        # When HyperPod reports it Schedulable while it still has the Xid
        instance, verdict, message = _verdict(run, now + timedelta(minutes=20))
        # Then the message says not fixed, naming what is back
        assert verdict["severity"] == "CONCERN"
        assert "not fixed (the same instance): gpu.xid:79 again" in verdict["summary"]
        assert message["subject"] == f"hyperpod-perf: ml-cluster {instance} after repair: not fixed"
        assert message["bodies"]["default"].startswith(f"{instance}: after the repair: not fixed")
        assert "Report: s3://" in message["bodies"]["default"]

        # When it is back again after a repair that held
        run.refault(REPAIRED, None)
        _, verdict, message = _verdict(run, now + timedelta(minutes=40))
        assert verdict["severity"] == "OK" and "fixed (the same instance): 1 concern(s)" in verdict["summary"]
        assert message["subject"].endswith("after repair: fixed")

        # When it is back with no concern but its SM clock far below the fleet's under load
        run.refault(REPAIRED, NodeFaults(sm_clock_mhz=1100))
        _, verdict, message = _verdict(run, now + timedelta(minutes=60))
        assert verdict["severity"] == "CONCERN"
        assert "still below the fleet (the same instance)" in verdict["summary"]
        assert "gpu.sm_clock_under_load_mhz 1100" in verdict["summary"]
        assert message["subject"].endswith("after repair: still below the fleet")
        # and each verdict went out as its own short message, not the full report
        assert len(run.published()) == 4
        assert all(len(m["bodies"]["default"]) < 600 for m in run.published()[1:])


HEALTHY = (REAL_NCCL / "p5-2node_srun-label_allreduce-16G.txt").read_text()  # ~487 GB/s
SLOW = (DATA / "nccl_slow_pair_synthetic.log").read_text()  # ~301 GB/s
SPINES = ("nn-a42b0750f49b48c69", "nn-7f1e0c2d3b4a59687")


def _upload(run: Any, prefix: str, hosts: list[str], slow) -> str:
    s3 = run.dep.client("s3")
    for a, b in combinations(hosts, 2):
        body = SLOW if slow(a, b) else HEALTHY
        s3.put_object(Bucket=run.dep.bucket, Key=f"{prefix}/{a}__{b}.log", Body=body.encode())
    return f"s3://{run.dep.bucket}/{prefix}/"


def test_layers_from_ec2_name_a_fabric_fault_across_one_boundary_and_a_star_as_its_node() -> None:
    # Given 8 nodes that EC2 places under two layer-2 network nodes (4 each), one brick per side
    layers = {i: ("nn-b59b170155f6801f8", SPINES[i // 4], f"nn-brick{i // 4}") for i in range(8)}
    plan = ClusterPlan(nodes=8, network_layers=layers, lustre_utilization=None)
    with local_pipeline(RunPlan(clusters=(plan,), transport="in-process")) as run:
        hosts = [n.hostname for n in run.cluster_nodes()]
        side = {h: i // 4 for i, h in enumerate(hosts)}
        # When every pair across the two is slow and every pair within a side is healthy
        crossing = _upload(run, "nccl/fabric", hosts, lambda a, b: side[a] != side[b])
        fabric_run = run.run({"cluster": "ml-cluster", "scope": "all", "nccl_s3_prefix": crossing}, "fabric")
        # and, in another run, every pair of node 6 is slow
        star = _upload(run, "nccl/star", hosts, lambda a, b: hosts[5] in (a, b))
        star_run = run.run({"cluster": "ml-cluster", "scope": "all", "nccl_s3_prefix": star}, "star")
        asked = run.instance_topology.calls

    # Then ResolveCluster asked EC2 for the cluster's instances and the layers reached the report
    assert len(asked) == 2 and len(asked[0]) == 8
    assert fabric_run.status == star_run.status == "SUCCEEDED"
    assert {tuple(n["network_nodes"]) for n in fabric_run.report["nodes"]} == set(layers.values())
    # and the crossing fault is the fabric, with the boundary named, not a node
    (fabric,) = fabric_run.findings("nccl.fabric", "CONCERN")
    assert f"layer 2: {min(SPINES)} | {max(SPINES)}" in fabric["summary"]
    assert "16 of 16 slow pairs" in fabric["summary"]
    assert fabric_run.findings("nccl.node_suspect", "CONCERN") == []
    assert fabric_run.report["nccl"]["fabric_boundary"]["layer"] == 2
    # and the star is its node, with no boundary
    assert star_run.findings("nccl.fabric", "CONCERN") == []
    (suspect,) = star_run.findings("nccl.node_suspect", "CONCERN")
    assert suspect["node"] == hosts[5]


def test_a_cluster_ec2_does_not_know_is_diagnosed_with_one_info_saying_why() -> None:
    # Given the default simulation: EC2 answers InvalidInstanceID.NotFound, as expected of HyperPod
    with local_pipeline(RunPlan(clusters=(ClusterPlan(nodes=2, lustre_utilization=None),))) as run:
        outcome = run.run({"cluster": "ml-cluster", "scope": "all"}, "no-topology")
    assert outcome.status == "SUCCEEDED"
    infos = [f for f in outcome.findings("nccl.fabric", "INFO") if "not available" in f["summary"]]
    assert [f["summary"].split(":")[0] for f in infos] == [
        "topology not available from EC2 DescribeInstanceTopology",
        "topology not available from Slurm (scontrol show topology)",
    ]
    assert "InvalidInstanceID.NotFound" in infos[0]["summary"]
    assert all(n["network_nodes"] == [] for n in outcome.report["nodes"])
