"""The topology shapes the pipeline reads: `scontrol show topology` (tree and block), Slurm host
lists, HyperPod's NodeList (its providerID form) and the simple host -> layers mapping.
Fixtures: tests/fixtures/topology (constructed from the documented formats, see SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hyperpod_perf.parse.slurm_topology import (
    MAX_HOSTS,
    HostlistError,
    expand_hostlist,
    parse_scontrol_topology,
)
from hyperpod_perf.parse.topology import TopologyError, from_node_list, parse_topology

FIXTURES = Path(__file__).parents[2] / "fixtures" / "topology"


@pytest.mark.parametrize(
    ("expr", "hosts"),
    [
        ("tux[0-3,12]", ["tux0", "tux1", "tux2", "tux3", "tux12"]),
        ("ip-10-1-1-[01-02],ip-10-1-1-10", ["ip-10-1-1-01", "ip-10-1-1-02", "ip-10-1-1-10"]),
        ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
        ("plain", ["plain"]),
        ("", []),
    ],
)
def test_slurm_host_lists_expand_as_slurm_writes_them(expr: str, hosts: list[str]) -> None:
    assert expand_hostlist(expr) == hosts


@pytest.mark.parametrize("expr", ["n[1-2", "n1-2]", "n[3-1]", "n[a-b]", f"n[0-{MAX_HOSTS}]"])
def test_a_malformed_or_huge_host_list_is_refused(expr: str) -> None:
    with pytest.raises(HostlistError):
        expand_hostlist(expr)


def test_the_largest_allowed_range_expands_and_one_more_host_is_refused() -> None:
    assert len(expand_hostlist(f"n[1-{MAX_HOSTS}]")) == MAX_HOSTS
    with pytest.raises(HostlistError):
        expand_hostlist(f"n[1-{MAX_HOSTS}],extra")


def test_a_tree_topology_gives_each_node_its_switches_top_first() -> None:
    # Given three leaf switches under two spines under one top switch
    topology = parse_scontrol_topology((FIXTURES / "scontrol_show_topology_tree.txt").read_text())
    # Then every node has three layers, the leaf last
    assert topology.plugin == "tree" and topology.problems == ()
    assert len(topology.layers) == 11
    assert topology.layers["ip-10-1-0-1"] == ("top", "spine0", "s0")
    assert topology.layers["ip-10-1-0-8"] == ("top", "spine0", "s1")
    assert topology.layers["ip-10-1-1-10"] == ("top", "spine1", "s2")


def test_a_block_topology_gives_the_aggregated_block_then_the_base_block() -> None:
    topology = parse_scontrol_topology((FIXTURES / "scontrol_show_topology_block.txt").read_text())
    assert topology.plugin == "block"
    assert topology.layers["gpu-01"] == ("b[1-2]", "b1")
    assert topology.layers["gpu-08"] == ("b[1-2]", "b2")


def test_no_topology_plugin_is_an_empty_map_not_one_switch() -> None:
    # scontrol prints this (on stderr) with topology/flat, and nothing on stdout
    topology = parse_scontrol_topology("scontrol: error: No topology information available\n")
    assert (topology.layers, topology.plugin) == ({}, None)


def test_a_bad_line_is_skipped_and_named_the_others_read() -> None:
    text = "SwitchName=s0 Level=0 LinkSpeed=1 Nodes=n[1-2\nSwitchName=s1 Level=0 LinkSpeed=1 Nodes=m[1-2]\n"
    topology = parse_scontrol_topology(text)
    assert topology.layers == {"m1": ("s1",), "m2": ("s1",)}
    assert len(topology.problems) == 1 and topology.problems[0].startswith("line 1:")


def test_hyperpod_nodes_are_keyed_by_the_instance_id_at_the_end_of_their_provider_id() -> None:
    document = json.loads((FIXTURES / "eks_nodelist_hyperpod_p5.json").read_text())
    layers = from_node_list(document)
    assert layers["i-00f3cbe8dfee6b675"] == (
        "nn-c79422f4e61deb9ca",
        "nn-6ff5053c3a4d86db7",
        "nn-dcbcca51aebf4c95b",
    )
    assert layers["hyperpod-i-0f190b8fa232cef49"][1] == "nn-1a2b3c4d5e6f70819"
    assert layers["i-0f190b8fa232cef49"][0] == layers["i-00f3cbe8dfee6b675"][0]


def test_a_host_to_layers_mapping_and_scontrol_text_are_read_as_topology_files() -> None:
    mapping = parse_topology(json.dumps({"ip-10-1-0-1": ["nn-top", "nn-spine0"], "ip-10-1-0-2": []}))
    assert mapping == {"ip-10-1-0-1": ("nn-top", "nn-spine0")}
    tree = parse_topology((FIXTURES / "scontrol_show_topology_tree.txt").read_text())
    assert tree["ip-10-1-0-5"] == ("top", "spine0", "s1")


@pytest.mark.parametrize(
    "text",
    ['{"ip-10-1-0-1": "nn-top"}', '{"ip-10-1-0-1": ["a", "b", "c", "d", "e"]}', "[1, 2]", "not json"],
)
def test_a_file_in_no_known_shape_is_a_clear_error(text: str) -> None:
    with pytest.raises(TopologyError):
        parse_topology(text)
