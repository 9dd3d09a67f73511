"""domain/names: one index of every name a node goes by, and the label every output shows."""

from __future__ import annotations

from typing import ClassVar

import pytest

from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.domain.names import (
    NodeName,
    NodeNames,
    embedded_instance_id,
    node_label,
    normalise_host,
    unknown_nodes_message,
)
from hyperpod_perf.domain.report import NodeSummary

ID5, ID6 = "i-0a1b2c3d4e5f60005", "i-0a1b2c3d4e5f60006"


def _cluster() -> NodeNames:
    return NodeNames.of(
        [
            ClusterNode(
                instance_id=ID5,
                group="workers",
                hostname="ip-10-1-125-188.us-west-2.compute.internal",
                private_ip="10.1.125.188",
            ),
            ClusterNode(instance_id=ID6, group="workers", hostname="ip-10-1-42-84"),
        ]
    )


def test_label_is_the_short_host_name_then_the_instance_id() -> None:
    names = _cluster()

    assert names.label(ID5) == f"ip-10-1-125-188 ({ID5})"
    assert names.label(ID6) == f"ip-10-1-42-84 ({ID6})"


def test_label_falls_back_to_the_name_alone_when_no_other_is_known() -> None:
    names = NodeNames.of([NodeSummary(node="i-0a1b2c3d4e5f60001", instance_id="i-0a1b2c3d4e5f60001")])

    assert names.label("i-0a1b2c3d4e5f60001") == "i-0a1b2c3d4e5f60001"
    assert names.label("i-0ffffffffffffffff") == "i-0ffffffffffffffff"  # not in the index
    assert names.label(None) == "cluster"
    # a snapshot keyed by its host name (no instance id) is not labelled twice
    by_host = NodeNames.of([NodeSummary(node="ip-10-1-2-3", hostname="ip-10-1-2-3")])
    assert by_host.label("ip-10-1-2-3") == "ip-10-1-2-3"


@pytest.mark.parametrize(
    "typed",
    [
        ID5,
        "ip-10-1-125-188",
        "IP-10-1-125-188",
        "ip-10-1-125-188.us-west-2.compute.internal",
        "10.1.125.188",
        "10.1.125.188:9400",
        f"hyperpod-{ID5}",  # a HyperPod EKS node name carries the id
        f"sagemaker-cluster:abcdefghijkl_workers-{ID5}",
    ],
)
def test_every_spelling_of_a_node_resolves_to_its_instance_id(typed: str) -> None:
    assert _cluster().resolve(typed) == ID5


def test_an_unknown_name_resolves_to_none_and_suggests_the_close_ones() -> None:
    names = _cluster()

    assert names.resolve("ip-10-1-125-18") is None
    assert names.resolve(f"hyperpod-{'i-0ffffffffffffffff'}") is None  # an id, but not this cluster's
    assert names.suggestions("ip-10-1-125-18")[0] == f"ip-10-1-125-188 ({ID5})"
    assert names.suggestions("zzzz") == []


def test_resolve_all_keeps_order_drops_duplicates_and_lists_the_unknown() -> None:
    found, unknown = _cluster().resolve_all(["ip-10-1-42-84", ID5, "10.1.125.188", "node-1"])

    assert found == [ID6, ID5]
    assert unknown == ["node-1"]


def test_the_unknown_nodes_message_is_one_line_naming_the_name_and_its_close_matches() -> None:
    text = unknown_nodes_message(["ip-10-1-125-18"], _cluster(), "cluster ml-cluster")

    assert "\n" not in text
    assert text.startswith("no node 'ip-10-1-125-18' in cluster ml-cluster (2 node(s)); closest: ")
    assert text.split("closest: ", 1)[1].startswith(f"ip-10-1-125-188 ({ID5})")


def test_the_kubernetes_node_name_is_shown_where_it_was_read() -> None:
    node = ClusterNode(instance_id=ID5, group="workers", hostname="ip-10-1-125-188")

    names = NodeNames.of([node], kubernetes={ID5: f"hyperpod-{ID5}"})

    assert names.label(ID5) == f"hyperpod-{ID5} ({ID5})"
    assert names.resolve("ip-10-1-125-188") == ID5
    assert names.hostname(ID5) == "ip-10-1-125-188"


def test_a_later_entry_fills_in_the_names_an_earlier_one_lacked() -> None:
    names = NodeNames([NodeName(ID5, ID5)])

    names.add(NodeName(ID5, ID5, hostname="ip-10-1-125-188"))

    assert names.label(ID5) == f"ip-10-1-125-188 ({ID5})"


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("ip-10-1-2-3.ec2.internal:9400", "ip-10-1-2-3"),
        ("10.1.2.3:9100", "ip-10-1-2-3"),
        ("IP-10-1-2-3", "ip-10-1-2-3"),
        ("[fe80::1]:9100", "fe80::1"),
    ],
)
def test_normalise_host(raw: str, normal: str) -> None:
    assert normalise_host(raw) == normal


def test_embedded_instance_id_and_node_label() -> None:
    assert embedded_instance_id(f"hyperpod-{ID5}") == ID5
    assert embedded_instance_id("ip-10-1-2-3") is None
    assert node_label(ID5, "ip-10-1-2-3") == f"ip-10-1-2-3 ({ID5})"
    assert node_label(ID5, ID5) == ID5


# --- resolving the names typed on the command line (service.resolve) --------------------------


class _Clusters:
    """A ClustersPort over two nodes that counts the calls made: the listing carries the host
    names (ListClusterNodes' summaries), only a description the private IP and zone."""

    HOSTS: ClassVar[dict[str, str]] = {ID5: "ip-10-1-125-188", ID6: "ip-10-1-42-84"}
    IPS: ClassVar[dict[str, str]] = {ID5: "10.1.125.188", ID6: "10.1.42.84"}

    def __init__(self, hosts: dict[str, str] | None = None) -> None:
        self.calls: list[str] = []
        self.hosts = hosts or self.HOSTS

    def describe_cluster(self, cluster: str):
        from hyperpod_perf.domain.cluster import ClusterInfo

        self.calls.append("DescribeCluster")
        return ClusterInfo(name=cluster, arn="", cluster_id="abcdefghijkl")

    def list_nodes(self, cluster: str, cluster_id: str) -> list[ClusterNode]:
        self.calls.append("ListClusterNodes")
        return [ClusterNode(instance_id=i, group="workers", hostname=h) for i, h in self.hosts.items()]

    def describe_nodes(self, cluster, cluster_id, instance_ids):
        self.calls.append(f"DescribeClusterNode x{len(instance_ids)}")
        return [
            ClusterNode(
                instance_id=i,
                group="workers",
                hostname=self.hosts[i],
                private_ip=self.IPS[i],
                az="us-west-2a",
            )
            for i in instance_ids
        ], {}


def test_instance_ids_and_hyperpod_names_resolve_without_any_call() -> None:
    from hyperpod_perf.service.resolve import resolve_node_names

    clusters = _Clusters()

    ids = resolve_node_names(clusters, "c", [ID5, f"hyperpod-{ID6}", ID5])

    assert ids == (ID5, ID6)
    assert clusters.calls == []


def test_host_names_are_looked_up_in_the_cluster_once() -> None:
    from hyperpod_perf.service.resolve import resolve_node_names

    clusters = _Clusters()

    ids = resolve_node_names(clusters, "c", ["ip-10-1-42-84", "10.1.125.188"])

    # Then the listing alone answers (an IP matches its EC2 host name): no node is described
    assert ids == (ID6, ID5)
    assert clusters.calls == ["DescribeCluster", "ListClusterNodes"]


def test_an_ip_no_host_name_spells_is_found_by_describing_the_nodes() -> None:
    from hyperpod_perf.service.resolve import resolve_node_names

    # Given nodes with custom host names, so their IPs appear only in DescribeClusterNode
    clusters = _Clusters(hosts={ID5: "trainer-a", ID6: "trainer-b"})

    ids = resolve_node_names(clusters, "c", ["10.1.42.84"])

    # Then a second look describes the nodes and finds the IP's node
    assert ids == (ID6,)
    assert clusters.calls == [
        "DescribeCluster",
        "ListClusterNodes",
        "DescribeCluster",
        "ListClusterNodes",
        "DescribeClusterNode x2",
    ]


def test_an_unknown_or_malformed_name_is_refused_with_the_closest_nodes() -> None:
    from hyperpod_perf.service.errors import UnknownNodes
    from hyperpod_perf.service.resolve import resolve_node_names

    with pytest.raises(
        UnknownNodes, match=r"no node 'ip-10-1-42-8' in cluster c .*closest: ip-10-1-42-84 \("
    ):
        resolve_node_names(_Clusters(), "c", ["ip-10-1-42-8"])
    with pytest.raises(UnknownNodes, match="is not an instance id, host name or Kubernetes node name"):
        resolve_node_names(_Clusters(), "c", ["$(reboot)"])
