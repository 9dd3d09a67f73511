"""The read-only test planner: round-robin coverage and rendered commands."""

from __future__ import annotations

from itertools import combinations

import pytest
from nccl_synth import node_names

from hyperpod_perf.nccl.commands import read_node_list, run_plan
from hyperpod_perf.nccl.planner import quick_plan, round_robin


@pytest.mark.parametrize("n", [2, 3, 4, 7, 8, 17, 64, 65])
def test_round_robin_covers_every_pair_exactly_once_in_the_minimum_rounds(n):
    nodes = node_names(n)
    rounds = round_robin(nodes)
    # Then N-1 rounds for even N, N for odd N (one node sits out per round; N-1 is impossible)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    seen = [frozenset(p) for r in rounds for p in r]
    assert len(seen) == len(set(seen)) == n * (n - 1) // 2
    assert set(seen) == {frozenset(p) for p in combinations(nodes, 2)}
    # And the pairs of a round are disjoint
    for r in rounds:
        members = [x for p in r for x in p]
        assert len(members) == len(set(members))


def test_quick_plan_tests_every_node_twice_then_suspects_against_known_good():
    nodes = node_names(6)
    rounds = quick_plan(nodes, suspects=[nodes[4]], good=[nodes[0], nodes[1]])
    ring = {frozenset((nodes[i], nodes[(i + 1) % 6])) for i in range(6)}
    first_two = [frozenset(p) for r in rounds[:2] for p in r]
    assert set(first_two) == ring and len(rounds[0]) == len(rounds[1]) == 3
    checks = [p for r in rounds[2:] for p in r]
    assert sorted(checks) == sorted([(nodes[4], nodes[0]), (nodes[4], nodes[1])])


def test_quick_plan_odd_ring_needs_three_disjoint_rounds():
    nodes = node_names(5)
    rounds = quick_plan(nodes)
    assert len(rounds) == 3
    assert sum(len(r) for r in rounds) == 5
    for r in rounds:
        members = [x for p in r for x in p]
        assert len(members) == len(set(members))


def test_slurm_rendering_is_sbatch_lines_naming_logs_after_the_pair():
    text = run_plan(["n1", "n2", "n3", "n4"], "full", "slurm", [], [])
    lines = [line for line in text.splitlines() if line.startswith("sbatch")]
    assert len(lines) == 6
    assert "sbatch --exclusive -N 2 -w n1,n4 --job-name=nccl-pair --output=nccl-pairs/n1__n4.log" in lines[0]
    assert "# round 3 of 3 (2 pairs)" in text
    assert "nothing was submitted" in text


def test_eks_rendering_pins_each_mpijob_to_its_two_nodes():
    text = run_plan(["Node_A", "node-b"], "full", "eks", [], [])
    docs = text.split("---\n")
    assert len(docs) == 2  # header comment + one manifest
    manifest = docs[1]
    assert "kind: MPIJob" in manifest and 'values: ["Node_A", "node-b"]' in manifest
    assert "name: nccl-r1-node-a-node-b" in manifest  # DNS-1123 name
    assert "replicas: 2" in manifest


def test_unknown_mode_is_a_value_error():
    with pytest.raises(ValueError, match="unknown plan mode"):
        run_plan(["a", "b"], "everything", "slurm", [], [])  # type: ignore[arg-type]


def test_node_list_file_format():
    assert read_node_list("# nodes\nn1, n2\nn3 n4  # rack 2\n\nn1\n") == ["n1", "n2", "n3", "n4"]
