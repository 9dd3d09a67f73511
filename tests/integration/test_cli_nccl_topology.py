"""`nccl analyze --topology FILE` and `nccl plan --mode layers --topology FILE`, as an operator runs them."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import pytest

from hyperpod_perf.cli import main
from hyperpod_perf.nccl.planner import layers_plan, round_robin

FIXTURES = Path(__file__).parents[1] / "fixtures"
HEALTHY = (FIXTURES / "real/nccl-tests/p5-2node_srun-label_allreduce-16G.txt").read_text()
SLOW = (Path(__file__).parents[1] / "statemachine/data/nccl_slow_pair_synthetic.log").read_text()
HOSTS = [f"ip-10-1-0-{i}" for i in range(1, 9)]  # as the scontrol tree fixture names them
TREE = FIXTURES / "topology/scontrol_show_topology_tree.txt"  # 1-4 under s0, 5-8 under s1, spine0


def run(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _logs(tmp_path: Path, slow) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    for a, b in combinations(HOSTS, 2):
        (logs / f"{a}__{b}.log").write_text(SLOW if slow(a, b) else HEALTHY)
    return logs


def _leaf(host: str) -> int:
    return 0 if HOSTS.index(host) < 4 else 1


def test_analyze_with_a_slurm_topology_file_names_the_boundary_the_slow_pairs_cross(capsys, tmp_path) -> None:
    # Given pairs across the two leaf switches slow, within each leaf healthy
    logs = _logs(tmp_path, lambda a, b: _leaf(a) != _leaf(b))
    # When they are analysed with the cluster's `scontrol show topology`
    code, out, err = run(capsys, "nccl", "analyze", logs, "--format", "json", "--topology", TREE)
    # Then the fabric between s0 and s1 is the finding, not a node
    assert code == 1 and err == ""
    document = json.loads(out)
    (fabric,) = [f for f in document["findings"] if f["check"] == "nccl.fabric"]
    assert "layer 3: s0 | s1" in fabric["summary"] and "16 of 16 slow pairs" in fabric["summary"]
    assert not [f for f in document["findings"] if f["check"] == "nccl.node_suspect" and f["node"]]


def test_analyze_with_a_host_mapping_keeps_a_star_on_its_node(capsys, tmp_path) -> None:
    logs = _logs(tmp_path, lambda a, b: HOSTS[2] in (a, b))
    mapping = tmp_path / "layers.json"
    mapping.write_text(json.dumps({h: ["nn-top", f"nn-leaf{_leaf(h)}"] for h in HOSTS}))
    code, out, _ = run(capsys, "nccl", "analyze", logs, "--format", "json", "--topology", mapping)
    document = json.loads(out)
    assert code == 1
    assert not [f for f in document["findings"] if f["check"] == "nccl.fabric"]
    (suspect,) = [f for f in document["findings"] if f["check"] == "nccl.node_suspect" and f["node"]]
    assert suspect["node"] == HOSTS[2]


@pytest.mark.parametrize(
    ("content", "mention"),
    [('{"Reservations": []}', "expected"), ("SwitchName=s0 Level=0 LinkSpeed=1\n", "no node")],
)
def test_a_topology_file_that_places_nothing_is_one_line_exit_2(capsys, tmp_path, content, mention) -> None:
    logs = _logs(tmp_path, lambda a, b: False)
    bad = tmp_path / "topology.json"
    bad.write_text(content)
    code, out, err = run(capsys, "nccl", "analyze", logs, "--topology", bad)
    assert code == 2 and out == "" and "Traceback" not in err
    (line,) = err.splitlines()
    assert line.startswith("hyperpod-perf: --topology") and mention in line


def test_the_layers_plan_tests_within_each_leaf_and_across_each_boundary(capsys, tmp_path) -> None:
    # Given the 11 nodes of the tree fixture (leaves of 4, 4 and 3; two spines under one top)
    nodes = tmp_path / "nodes.txt"
    names = [*HOSTS, "ip-10-1-1-01", "ip-10-1-1-02", "ip-10-1-1-10"]
    nodes.write_text("\n".join(names) + "\n")
    # When the layers plan is printed
    code, out, err = run(capsys, "nccl", "plan", "--node-file", nodes, "--mode", "layers", "--topology", TREE)
    assert code == 0 and err == ""
    pairs = [
        line.split("-w ")[1].split()[0].strip("'").split(",")
        for line in out.splitlines()
        if line.startswith("sbatch ")
    ]
    leaf = {n: ("s0" if n in HOSTS[:4] else "s1" if n in HOSTS else "s2") for n in names}
    spine = {n: "spine1" if leaf[n] == "s2" else "spine0" for n in names}
    within = [p for p in pairs if leaf[p[0]] == leaf[p[1]]]
    across_leaves = [p for p in pairs if leaf[p[0]] != leaf[p[1]] and spine[p[0]] == spine[p[1]]]
    across_spines = [p for p in pairs if spine[p[0]] != spine[p[1]]]
    # Then each leaf is a ring (4 + 4 + 3), s0|s1 is crossed twice, spine0|spine1 twice
    assert (len(within), len(across_leaves), len(across_spines)) == (11, 2, 2)
    assert len({frozenset(p) for p in pairs}) == len(pairs) == 15
    assert "layers plan" in out


def test_the_layers_plan_without_a_topology_is_refused(capsys, tmp_path) -> None:
    nodes = tmp_path / "nodes.txt"
    nodes.write_text("\n".join(HOSTS) + "\n")
    code, _, err = run(capsys, "nccl", "plan", "--node-file", nodes, "--mode", "layers")
    assert code == 2 and "--mode layers needs --topology" in err


@pytest.mark.parametrize(("n", "expected_pairs"), [(64, 104), (1024, 1568)])
def test_the_layers_plan_size_for_64_and_1024_nodes(n: int, expected_pairs: int) -> None:
    # Given leaves of 4 nodes, 4 (64 nodes) or 16 (1,024 nodes) leaves per spine, spines under one top
    leaves_per_spine = 4 if n == 64 else 16
    nodes = [f"n{i:04d}" for i in range(n)]
    layers = {h: ("top", f"spine{i // (4 * leaves_per_spine)}", f"leaf{i // 4}") for i, h in enumerate(nodes)}
    # When planned: every leaf a ring (n pairs), each sibling boundary crossed twice
    rounds = layers_plan(nodes, layers)
    pairs = [p for r in rounds for p in r]
    spines = n // (4 * leaves_per_spine)
    assert len(pairs) == n + 2 * leaves_per_spine * spines + 2 * spines == expected_pairs
    # Then it is a small share of the full plan, in a handful of rounds of disjoint pairs
    full = sum(len(r) for r in round_robin(nodes)) if n == 64 else n * (n - 1) // 2
    assert full == n * (n - 1) // 2 and len(pairs) / full < 0.06
    assert len(rounds) <= 6
    for r in rounds:
        busy = [x for p in r for x in p]
        assert len(busy) == len(set(busy))
