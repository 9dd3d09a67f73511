"""Slow pairs explained by the network layers: a block across one boundary is the fabric, a star is
a node. Layers in the shape AWS documents (tests/fixtures/real/topology, with their sources)."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

from hyperpod_perf.nccl.analysis import PairMeasurement, analyze_measurements
from hyperpod_perf.parse.topology import parse_topology
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS

TOPOLOGY = Path(__file__).parents[2] / "fixtures" / "real" / "topology"
HEALTHY, SLOW = 480.0, 300.0  # p5 busbw at large sizes (GB/s), and a fabric-limited figure
TOP = "nn-b59b170155f6801f8"  # the real layer-1 node of the p4de capture
SPINES = ("nn-a42b0750f49b48c69", "nn-7f1e0c2d3b4a59687")  # the real layer-2 node, and a second one


def _placement(hosts: list[str]) -> dict[str, tuple[str, ...]]:
    """Hosts 0-3 under the first layer-2 node, 4-7 under the second; one brick (layer 3) each."""
    return {h: (TOP, SPINES[i // 4], f"nn-brick{i // 4}") for i, h in enumerate(hosts)}


def _measure(hosts: list[str], slow) -> list[PairMeasurement]:
    return [
        PairMeasurement(SLOW if slow(a, b) else HEALTHY + (i % 3), f"{a}__{b}.log", a, b)
        for i, (a, b) in enumerate(combinations(hosts, 2))
    ]


HOSTS = [f"ip-10-1-0-{i}" for i in range(8)]


def test_a_block_across_one_layer_boundary_is_the_fabric_with_the_boundary_named() -> None:
    # Given every pair across the two layer-2 nodes slow and every pair within a side healthy
    side = {h: i // 4 for i, h in enumerate(HOSTS)}
    measurements = _measure(HOSTS, lambda a, b: side[a] != side[b])
    # When the pairs are analysed with the placement
    analysis = analyze_measurements(measurements, DEFAULT_THRESHOLDS, placement=_placement(HOSTS))
    # Then the fabric between the two layer-2 nodes is named, not a node
    boundary = analysis.boundary
    assert boundary is not None
    assert (boundary.layer, set(boundary.side_a + boundary.side_b)) == (2, set(SPINES))
    assert (boundary.slow_crossing, boundary.crossing_pairs, boundary.slow_pairs) == (16, 16, 16)
    assert set(boundary.nodes_a) | set(boundary.nodes_b) == set(HOSTS)
    fabric = [f for f in analysis.findings if f.check == "nccl.fabric"]
    assert len(fabric) == 1 and fabric[0].severity.value == "CONCERN"
    assert "layer 2" in fabric[0].summary and "16 of 16 slow pairs" in fabric[0].summary
    assert not [f for f in analysis.findings if f.check == "nccl.node_suspect"]
    assert analysis.to_dict()["fabric_boundary"]["layer"] == 2


def test_a_star_around_one_node_stays_that_node_and_no_fabric_is_named() -> None:
    # Given every pair of host 5 slow (a degraded node) in the same placement
    measurements = _measure(HOSTS, lambda a, b: HOSTS[5] in (a, b))
    analysis = analyze_measurements(measurements, DEFAULT_THRESHOLDS, placement=_placement(HOSTS))
    # Then the node is named and no boundary
    assert analysis.boundary is None
    assert [s.node for s in analysis.suspects] == [HOSTS[5]]
    assert not [f for f in analysis.findings if f.check == "nccl.fabric"]


def test_without_layers_the_same_block_is_not_called_a_fabric_fault() -> None:
    side = {h: i // 4 for i, h in enumerate(HOSTS)}
    analysis = analyze_measurements(_measure(HOSTS, lambda a, b: side[a] != side[b]), DEFAULT_THRESHOLDS)
    assert analysis.boundary is None
    assert not [f for f in analysis.findings if f.check == "nccl.fabric"]


def test_slow_pairs_scattered_over_the_boundary_and_inside_are_not_a_boundary() -> None:
    # Given half the slow pairs inside the sides: the boundary holds only part of the slowness
    slow = {("ip-10-1-0-0", "ip-10-1-0-4"), ("ip-10-1-0-1", "ip-10-1-0-2"), ("ip-10-1-0-5", "ip-10-1-0-6")}
    analysis = analyze_measurements(
        _measure(HOSTS, lambda a, b: (a, b) in slow), DEFAULT_THRESHOLDS, placement=_placement(HOSTS)
    )
    assert analysis.boundary is None


def test_real_instance_topology_and_node_labels_read_top_layer_first() -> None:
    ec2 = parse_topology((TOPOLOGY / "ec2_describe-instance-topology_p4de_2-instances.json").read_text())
    assert ec2["i-05a4ae1432177a3a5"] == (
        "nn-b59b170155f6801f8",
        "nn-a42b0750f49b48c69",
        "nn-38464347ecf47e324",
    )
    assert ec2["i-05a4ae1432177a3a5"] == ec2["i-0d7a5c941dc912692"]  # same brick, as the source notes
    eks = parse_topology((TOPOLOGY / "eks_node-labels_p4d_training-on-eks.json").read_text())
    layers = ("nn-c79422f4e61deb9ca", "nn-6ff5053c3a4d86db7", "nn-dcbcca51aebf4c95b")
    assert eks["ip-10-0-5-152.ap-northeast-2.compute.internal"] == layers
    assert eks["i-0b9b9fb02def3eed3"] == layers  # from spec.providerID


def test_a_topology_document_of_another_shape_is_refused_in_one_line() -> None:
    import pytest

    from hyperpod_perf.parse.topology import TopologyError

    with pytest.raises(TopologyError, match="describe-instance-topology"):
        parse_topology(json.dumps({"Reservations": []}))
    with pytest.raises(TopologyError, match="not JSON"):
        parse_topology("switch s0 at level 0")
