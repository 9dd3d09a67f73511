"""Placement beside the fan-out (issue 26): ResolveCluster lists, NodePlacement describes, Evaluate merges.

Why these hold: before the fan-out 1,024 DescribeClusterNode calls held back the first
StartSession by seconds (bench/RESULTS.md, pipeline); the listing's summaries carry what choosing
and reaching a node needs, so the critical path makes no per-node call, and the zone still reaches
the report (topology.az_spread, the fleet rows) through work/placement.
"""

from __future__ import annotations

import json
from typing import Any

from hyperpod_perf.domain.cluster import ClusterInfo, ClusterNode
from hyperpod_perf.domain.errors import AccessDenied, NotFound, Throttled
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.domain.report import NodeSummary
from hyperpod_perf.domain.request import DiagnoseRequest
from hyperpod_perf.pipeline.placement import node_placement, placed_nodes, with_zones
from hyperpod_perf.service.resolve import resolve_cluster, with_placement

RUN = RunLayout(prefix="reports/c/20261204T000000Z-e/", execution="e", started="2026-12-04T00:00:00+00:00")
CLUSTER = ClusterInfo(name="ml-cluster", arn="", cluster_id="abcdefghijkl", region="us-west-2")
IDS = [f"i-0{i:016x}" for i in range(1, 5)]
ZONES = {IDS[0]: "us-west-2a", IDS[1]: "us-west-2a", IDS[2]: "us-west-2b", IDS[3]: "us-west-2b"}


class Clusters:
    """A ClustersPort whose listing is the API's summaries (no zone, no IP) and whose descriptions
    add them; `fail` maps node ids to the error their DescribeClusterNode raises."""

    def __init__(self, fail: dict[str, Exception] | None = None, list_error: Exception | None = None) -> None:
        self.calls: list[str] = []
        self.fail = fail or {}
        self.list_error = list_error

    def describe_cluster(self, cluster: str) -> ClusterInfo:
        self.calls.append("DescribeCluster")
        return CLUSTER

    def list_nodes(self, cluster: str, cluster_id: str) -> list[ClusterNode]:
        self.calls.append("ListClusterNodes")
        if self.list_error:
            raise self.list_error
        return [
            ClusterNode(
                instance_id=i,
                group="workers",
                instance_type="ml.p5.48xlarge",
                hostname=f"ip-10-1-0-{n}",
                status="Running",
                ssm_target=f"sagemaker-cluster:{cluster_id}_workers-{i}",
            )
            for n, i in enumerate(IDS, 1)
        ]

    def describe_nodes(self, cluster: str, cluster_id: str, instance_ids: list[str]):
        self.calls.append(f"DescribeClusterNode x{len(instance_ids)}")
        nodes = [
            ClusterNode(
                instance_id=i,
                group="workers",
                instance_type="ml.p5.48xlarge",
                az=ZONES[i],
                az_id=ZONES[i].replace("us-west-2", "usw2-az"),
                private_ip=f"10.1.0.{IDS.index(i) + 1}",
                hostname=f"ip-10-1-0-{IDS.index(i) + 1}",
                status="Running",
            )
            for i in instance_ids
            if i not in self.fail
        ]
        return nodes, {i: e for i, e in self.fail.items() if i in instance_ids}


class MemoryStore:
    def __init__(self) -> None:
        self.objects: dict[str, str] = {}

    def put_json(self, key: str, value: Any) -> str:
        self.objects[key] = json.dumps(value, default=str)
        return key

    def get_json(self, key: str) -> Any:
        if key not in self.objects:
            raise NotFound(f"no object {key}", context=f"s3:GetObject {key}")
        return json.loads(self.objects[key])


def _request(**fields: Any) -> DiagnoseRequest:
    return DiagnoseRequest(cluster="ml-cluster", **fields)


def test_resolve_cluster_lists_the_nodes_and_describes_none_of_them() -> None:
    # Given a four-node cluster
    clusters = Clusters()

    # When the cluster is resolved (the step before the fan-out)
    cluster, nodes, findings = resolve_cluster(_request(), clusters)

    # Then two calls were made (one DescribeCluster, one ListClusterNodes page), no DescribeClusterNode
    assert clusters.calls == ["DescribeCluster", "ListClusterNodes"]
    assert cluster == CLUSTER and findings == []
    # And the nodes carry what the fan-out needs (SSM target, group, type, host), no zone yet
    assert [n.instance_id for n in nodes] == IDS
    assert {(n.group, n.instance_type, n.status) for n in nodes} == {("workers", "ml.p5.48xlarge", "Running")}
    assert nodes[2].ssm_target == f"sagemaker-cluster:abcdefghijkl_workers-{IDS[2]}"
    assert {(n.az, n.private_ip) for n in nodes} == {(None, None)}


def test_when_the_listing_fails_the_named_nodes_are_described_instead() -> None:
    # Given a listing that is denied, and a request naming two nodes (one twice)
    clusters = Clusters(list_error=AccessDenied("not authorized", context="sagemaker:ListClusterNodes"))

    _cluster, nodes, findings = resolve_cluster(_request(nodes=(IDS[1], IDS[3], IDS[1])), clusters)

    # Then the named nodes are described once each, placed, with their SSM target from the group
    assert clusters.calls == ["DescribeCluster", "ListClusterNodes", "DescribeClusterNode x2"]
    assert [(n.instance_id, n.az, n.private_ip) for n in nodes] == [
        (IDS[1], "us-west-2a", "10.1.0.2"),
        (IDS[3], "us-west-2b", "10.1.0.4"),
    ]
    assert nodes[0].ssm_target == f"sagemaker-cluster:abcdefghijkl_workers-{IDS[1]}"
    # And the listing's failure is one INFO saying what was not checked
    assert [(f.check, f.severity, f.summary) for f in findings] == [
        ("collect.node", Severity.INFO, "cluster nodes could not be listed: not checked (AccessDenied)")
    ]


def test_with_placement_adds_zone_and_ip_and_keeps_what_the_listing_and_layers_had() -> None:
    # Given the listed nodes, one of which already has its network layers (read since the listing)
    _cluster, listed, _ = resolve_cluster(_request(), Clusters())
    listed[0] = listed[0].model_copy(update={"network_nodes": ("nn-1", "nn-2", "nn-3")})
    clusters = Clusters(fail={IDS[3]: Throttled("Rate exceeded", context="sagemaker:DescribeClusterNode")})

    # When the placement is read, one node's description failing
    placed, findings = with_placement("ml-cluster", CLUSTER, listed, clusters)

    # Then the three described nodes carry zone, zone id and IP, the failed one keeps its listing
    assert [(n.az, n.az_id, n.private_ip) for n in placed] == [
        ("us-west-2a", "usw2-aza", "10.1.0.1"),
        ("us-west-2a", "usw2-aza", "10.1.0.2"),
        ("us-west-2b", "usw2-azb", "10.1.0.3"),
        (None, None, None),
    ]
    assert placed[3] == listed[3]
    assert placed[0].network_nodes == ("nn-1", "nn-2", "nn-3") and placed[0].hostname == "ip-10-1-0-1"
    assert all(n.ssm_target == listed[i].ssm_target for i, n in enumerate(placed))
    # And the failure is one INFO of topology.az_spread naming the node and the reason
    (finding,) = findings
    assert (finding.check, finding.severity) == ("topology.az_spread", Severity.INFO)
    assert finding.summary == "placement of 1 node(s) could not be described: not checked (Throttled)"
    assert finding.evidence["nodes"] == {IDS[3]: "Throttled"}
    # And nodes already placed are not described again
    again = Clusters()
    assert with_placement("ml-cluster", CLUSTER, placed[:3], again) == (placed[:3], [])
    assert again.calls == []


def test_node_placement_writes_work_placement_and_evaluate_merges_it() -> None:
    # Given ResolveCluster's work/cluster in the store
    store = MemoryStore()
    _cluster, listed, _ = resolve_cluster(_request(), Clusters())
    store.put_json(
        RUN.work("cluster"),
        {
            "cluster": CLUSTER.model_dump(mode="json"),
            "nodes": [n.model_dump(mode="json") for n in listed],
            "findings": [],
        },
    )
    denied = AccessDenied("not authorized", context="sagemaker:DescribeClusterNode")

    # When NodePlacement runs with one node's description denied
    out = node_placement(_request(), RUN, clusters=Clusters(fail={IDS[0]: denied}), store=store)

    # Then it wrote the placement of the three it could describe and the one finding
    assert out == {"key": RUN.work("placement"), "placed": 3, "findings": 1}
    document = store.get_json(RUN.work("placement"))
    assert document["nodes"][IDS[2]] == {"az": "us-west-2b", "az_id": "usw2-azb", "private_ip": "10.1.0.3"}
    assert document["nodes"][IDS[0]] == {"az": None, "az_id": None, "private_ip": None}

    # When Evaluate merges it into the listed nodes
    findings: list[Finding] = []
    merged = placed_nodes(store, RUN, listed, findings)

    # Then the nodes carry the zones, the run carries the finding, nothing else changed
    assert [n.az for n in merged] == [None, "us-west-2a", "us-west-2b", "us-west-2b"]
    assert [f.check for f in findings] == ["topology.az_spread"]
    assert merged[0] == listed[0]
    assert [n.model_copy(update={"az": None, "az_id": None, "private_ip": None}) for n in merged] == listed

    # And the fleet rows (judged by CollectNode before the zone was known) get the zone
    rows = [NodeSummary(node=n.instance_id, instance_id=n.instance_id) for n in listed]
    rows[3] = rows[3].model_copy(update={"availability_zone": "us-west-2c"})  # a row's own is kept
    assert [r.availability_zone for r in with_zones(rows, merged)] == [
        None,
        "us-west-2a",
        "us-west-2b",
        "us-west-2c",
    ]


def test_without_a_placement_document_evaluate_keeps_the_nodes_unplaced() -> None:
    # Given a run whose NodePlacement branch wrote nothing (it failed and was caught)
    findings: list[Finding] = []
    _cluster, listed, _ = resolve_cluster(_request(), Clusters())

    merged = placed_nodes(MemoryStore(), RUN, listed, findings)

    # Then the nodes are as listed and no finding is invented (topology.az_spread says "unplaced")
    assert merged == listed and findings == []
