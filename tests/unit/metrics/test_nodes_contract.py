"""Series to nodes: the label values the exporters and HyperPod's scrape configs write."""

from __future__ import annotations

import pytest

from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.metrics.nodes import NodeIndex, normalise

CLUSTER = [
    ClusterNode(
        instance_id="i-0a1b2c3d4e5f60718", group="gpu", hostname="ip-10-1-125-188", private_ip="10.1.125.188"
    ),
    ClusterNode(instance_id="i-0fedcba9876543210", group="gpu", hostname="ip-10-1-7-9.ec2.internal"),
]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ip-10-1-125-188", "ip-10-1-125-188"),
        ("ip-10-1-125-188.us-west-2.compute.internal", "ip-10-1-125-188"),
        ("10.1.125.188:9100", "ip-10-1-125-188"),  # plain Prometheus' instance: host:port
        ("IP-10-1-125-188:9400", "ip-10-1-125-188"),
        ("10.1.125.188", "ip-10-1-125-188"),
        ("[fd00::1]:9100", "fd00::1"),
    ],
)
def test_normalise(raw, expected):
    assert normalise(raw) == expected


@pytest.mark.parametrize(
    ("labels", "node"),
    [
        (
            {"Hostname": "ip-10-1-125-188", "instance": "ip-10-1-125-188", "job": "dcgm_exporter"},
            "i-0a1b2c3d4e5f60718",
        ),
        ({"instance": "10.1.125.188:9109", "device": "rdmap113s0"}, "i-0a1b2c3d4e5f60718"),  # by private IP
        (
            {"node": "ip-10-1-7-9", "status": "allocated"},
            "i-0fedcba9876543210",
        ),  # Slurm exporter, FQDN in the cluster
        ({"instance_id": "i-0fedcba9876543210"}, "i-0fedcba9876543210"),
        ({"instance": "controller-machine:9100"}, None),  # not a node of the cluster
        ({}, None),
    ],
)
def test_resolve_against_the_cluster(labels, node):
    assert NodeIndex(CLUSTER).resolve(labels) == node


def test_without_a_cluster_the_host_name_is_the_node_and_ip_forms_agree():
    index = NodeIndex()
    assert index.discovering
    assert (
        index.resolve({"Hostname": "ip-10-1-2-3"})
        == index.resolve({"instance": "10.1.2.3:9100"})
        == "ip-10-1-2-3"
    )
    assert index.resolve({"instance_id": "i-0123456789abcdef0", "instance": "x"}) == "i-0123456789abcdef0"


def test_the_slurm_state_is_mapped_by_its_node_label_only():
    # The Slurm exporter's series carry the controller's `instance`: mapping by it would pin every
    # node's state on the controller.
    labels = {"node": "ip-10-1-125-188", "instance": "ip-10-1-7-9"}
    assert NodeIndex(CLUSTER).resolve(labels, ("node",)) == "i-0a1b2c3d4e5f60718"
