"""Where the network layers come from, and what happens when a source cannot answer: an INFO
finding "topology not available from <source>: <why>", the next source tried, the run unblocked.
The adapters are injected fakes; their real protocols are tested in
tests/integration/test_topology_adapters.py."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path
from typing import Any

from hyperpod_perf.domain.cluster import ClusterInfo, ClusterNode, Orchestrator
from hyperpod_perf.domain.errors import AccessDenied, NotFound
from hyperpod_perf.nccl.analysis import PairMeasurement, analyze_measurements
from hyperpod_perf.nccl.analysis.placement import reclassify
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS
from hyperpod_perf.service.topology import (
    EC2,
    EKS,
    TopologySources,
    cluster_placement,
    with_network_nodes,
)

FIXTURES = Path(__file__).parents[2] / "fixtures"
REAL_EC2 = json.loads(
    (FIXTURES / "real/topology/ec2_describe-instance-topology_p4de_2-instances.json").read_text()
)
NODELIST = json.loads((FIXTURES / "topology/eks_nodelist_hyperpod_p5.json").read_text())
EKS_ARN = "arn:aws:eks:us-east-1:111122223333:cluster/ml-cluster-eks"


def _cluster(orchestrator: Orchestrator = Orchestrator.SLURM) -> ClusterInfo:
    return ClusterInfo(
        name="ml-cluster",
        arn="arn:aws:sagemaker:us-east-1:111122223333:cluster/abcdefghijkl",
        cluster_id="abcdefghijkl",
        orchestrator=orchestrator,
        eks_cluster_arn=EKS_ARN if orchestrator is Orchestrator.EKS else None,
    )


def _nodes(ids: list[str]) -> list[ClusterNode]:
    return [
        ClusterNode(
            instance_id=i, group="g", instance_type="ml.p5.48xlarge", hostname=f"ip-10-1-0-{n}.ec2.internal"
        )
        for n, i in enumerate(ids)
    ]


class _Ec2:
    def __init__(self, answer: Any) -> None:
        self.answer, self.asked = answer, []

    def describe(self, ids: list[str]) -> dict[str, Any]:
        self.asked.append(list(ids))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class _Kube:
    def __init__(self, answer: Any) -> None:
        self.answer, self.asked = answer, []

    def node_list(self, cluster_name: str) -> dict[str, Any]:
        self.asked.append(cluster_name)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


EC2_IDS = [i["InstanceId"] for i in REAL_EC2["Instances"]]
HYPERPOD_IDS = ["i-00f3cbe8dfee6b675", "i-0f190b8fa232cef49"]


def test_ec2_layers_reach_the_nodes_by_instance_id_and_host_name() -> None:
    ec2 = _Ec2(REAL_EC2)
    placement = cluster_placement(_cluster(), _nodes(EC2_IDS), TopologySources(instance_topology=ec2))
    assert placement.source == EC2 and placement.findings == []
    assert ec2.asked == [EC2_IDS]
    assert placement.layers["ip-10-1-0-1"] == tuple(REAL_EC2["Instances"][1]["NetworkNodes"])
    placed = with_network_nodes(_nodes(EC2_IDS), placement.layers)
    assert placed[0].network_nodes == tuple(REAL_EC2["Instances"][0]["NetworkNodes"])


def test_ec2_that_does_not_know_hyperpod_instances_is_one_info_and_the_run_goes_on() -> None:
    refused = NotFound("The instance IDs do not exist", code="InvalidInstanceID.NotFound")
    placement = cluster_placement(
        _cluster(), _nodes(EC2_IDS), TopologySources(instance_topology=_Ec2(refused))
    )
    assert placement.layers == {} and placement.source is None
    (info,) = placement.findings
    assert (info.check, info.severity.value) == ("nccl.fabric", "INFO")
    assert info.summary.startswith(f"topology not available from {EC2}: NotFound")
    assert info.evidence["code"] == "InvalidInstanceID.NotFound"


def test_an_eks_cluster_that_opted_in_is_placed_by_its_node_labels_first() -> None:
    ec2, kube = _Ec2(REAL_EC2), _Kube(NODELIST)
    sources = TopologySources(instance_topology=ec2, node_labels=kube, kubernetes_opt_in=lambda c: True)
    placement = cluster_placement(_cluster(Orchestrator.EKS), _nodes(HYPERPOD_IDS), sources)
    assert placement.source == EKS and kube.asked == ["ml-cluster-eks"] and ec2.asked == []
    assert placement.layers["ip-10-1-0-0"][1] == "nn-6ff5053c3a4d86db7"  # by the described host name


def test_an_eks_cluster_whose_role_is_refused_falls_back_to_ec2_with_the_reason_stated() -> None:
    kube = _Kube(AccessDenied("403: RBAC does not let this role list nodes", code="Forbidden"))
    sources = TopologySources(
        instance_topology=_Ec2({"Instances": []}), node_labels=kube, kubernetes_opt_in=lambda c: True
    )
    placement = cluster_placement(_cluster(Orchestrator.EKS), _nodes(HYPERPOD_IDS), sources)
    assert placement.layers == {}
    assert [f.summary.split(":")[0] for f in placement.findings] == [
        f"topology not available from {EKS}",
        f"topology not available from {EC2}",
    ]
    assert "403" in placement.findings[0].summary and "any of 2 instance(s)" in placement.findings[1].summary


def test_an_eks_cluster_that_did_not_opt_in_is_never_read() -> None:
    kube = _Kube(NODELIST)
    sources = TopologySources(instance_topology=_Ec2({"Instances": []}), node_labels=kube)
    cluster_placement(_cluster(Orchestrator.EKS), _nodes(HYPERPOD_IDS), sources)
    assert kube.asked == []


HOSTS = [f"ip-10-1-0-{i}" for i in range(8)]
LAYERS = {h: ("top", f"spine{i // 4}", f"leaf{i // 4}") for i, h in enumerate(HOSTS)}


def _payload(slow) -> dict[str, Any]:
    measurements = [
        PairMeasurement(300.0 if slow(a, b) else 480.0 + i % 3, f"{a}__{b}.log", a, b)
        for i, (a, b) in enumerate(combinations(HOSTS, 2))
    ]
    analysis = analyze_measurements(measurements, DEFAULT_THRESHOLDS)  # no layers known then
    return {
        "analysis": analysis.to_dict(),
        "findings": [f.model_dump(mode="json") for f in analysis.findings],
    }


def test_layers_known_after_the_pair_analysis_name_the_boundary_the_slow_pairs_cross() -> None:
    # Given a stored analysis of pairs whose crossing of the two spines is slow, judged without layers
    payload = _payload(lambda a, b: LAYERS[a][1] != LAYERS[b][1])
    assert not [f for f in payload["findings"] if f["check"] == "nccl.fabric"]
    # When Slurm's layers arrive and it is judged again
    judged = reclassify(payload, LAYERS, DEFAULT_THRESHOLDS)
    # Then the boundary is named, and no node is blamed for it
    assert judged is not None
    (fabric,) = [f for f in judged["findings"] if f["check"] == "nccl.fabric"]
    assert fabric["severity"] == "CONCERN" and "layer 2: spine0 | spine1" in fabric["summary"]
    assert judged["analysis"]["fabric_boundary"]["slow_crossing"] == 16
    assert not [f for f in judged["findings"] if f["check"] == "nccl.node_suspect"]


def test_a_star_around_one_node_is_left_as_that_node_when_layers_arrive() -> None:
    payload = _payload(lambda a, b: HOSTS[5] in (a, b))
    assert reclassify(payload, LAYERS, DEFAULT_THRESHOLDS) is None
    (suspect,) = [f for f in payload["findings"] if f["check"] == "nccl.node_suspect"]
    assert suspect["node"] == HOSTS[5]
