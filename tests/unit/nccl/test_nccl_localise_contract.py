"""Localisation at its limits (reviewed): a node is named only with at least 2 slow pairs, at least
`nccl_suspect_share` of its pairs slow, and a median clearly (the slow-pair margin) below the median of
the pairs without it; drain candidate only when more than `nccl_drain_pct` below the run median.

Clearly synthetic pair figures; each expectation is worked out by hand in the comments.
"""

from __future__ import annotations

from itertools import combinations

import pytest

from hyperpod_perf.nccl.analysis import PairMeasurement, analyze_measurements
from hyperpod_perf.rules.thresholds import Thresholds


def pairs(n, values):
    """Every pair (i, j) of nodes n0..n{n-1} at values.get((i, j), 128.0)."""
    return [
        PairMeasurement(values.get((i, j), 128.0), f"n{i}__n{j}.log", f"n{i}", f"n{j}")
        for i, j in combinations(range(n), 2)
    ]


def suspects(analysis):
    return [s.to_dict() for s in analysis.suspects]


def test_two_slow_pairs_are_enough_one_is_not():
    # Given 3 nodes: n0's two pairs at 64, n1-n2 at 128 -> n0 has 2 of 2 slow, median 64 vs 128 (others)
    two = analyze_measurements(pairs(3, {(0, 1): 64.0, (0, 2): 64.0}))
    # mean 256/3 = 85.33, run median 64, drain level 51.2: 64 is not below it
    assert suspects(two) == [
        {
            "node": "n0",
            "slow_pairs": 2,
            "pairs": 2,
            "median_gbps": 64.0,
            "others_median_gbps": 128.0,
            "drain_candidate": False,
        }
    ]
    # Given only n0-n1 slow (at 32): n0 and n1 each have 1 slow pair of 2 (50%), median (32+128)/2 = 80,
    # 80 < 0.95 x 128 -> would be named but for the minimum of 2 slow pairs
    one = analyze_measurements(pairs(3, {(0, 1): 32.0}))
    assert [(p.a, p.b) for p in one.slow_pairs] == [("n0", "n1")]
    assert one.suspects == []


@pytest.mark.parametrize(("n", "named"), [(5, True), (6, False)])
def test_the_suspect_share_is_at_least_half_of_the_nodes_pairs(n, named):
    # Given n0-n1 and n0-n2 at 32 GB/s, every other pair at 128: n0 has 2 slow pairs of n-1
    # (n=5: 2/4 = 50% -> at the share; n=6: 2/5 = 40% -> below it). n0's median at n=5: (32+128)/2 = 80,
    # the others' median 128 -> 80 < 121.6
    analysis = analyze_measurements(pairs(n, {(0, 1): 32.0, (0, 2): 32.0}))
    assert [s.node for s in analysis.suspects] == (["n0"] if named else [])
    if named:
        assert suspects(analysis)[0] | {"drain_candidate": None} == {
            "node": "n0",
            "slow_pairs": 2,
            "pairs": 4,
            "median_gbps": 80.0,
            "others_median_gbps": 128.0,
            "drain_candidate": None,
        }


def test_the_suspect_share_is_read_from_the_thresholds():
    # Given the same 5-node matrix (2 of 4 slow = 50%), a share of 0.6 names no one
    measurements = pairs(5, {(0, 1): 32.0, (0, 2): 32.0})
    assert analyze_measurements(measurements, Thresholds(nccl_suspect_share=0.6)).suspects == []
    assert [
        s.node for s in analyze_measurements(measurements, Thresholds(nccl_suspect_share=0.5)).suspects
    ] == ["n0"]


@pytest.mark.parametrize(("second_slow", "named"), [(64.0, False), (63.98, True)])
def test_a_node_median_exactly_at_the_margin_is_not_named(second_slow, named):
    # Given a 25% margin and 5 nodes: n0's pairs at 32, second_slow, 128, 128; the 6 others at 128.
    # Mean ~ (32 + 64 + 8 x 128) / 10 = 112 -> slow below 84: n0 has 2 slow pairs of 4 (50%).
    # n0's median (64 + 128) / 2 = 96 = 0.75 x 128 (the others' median): at the margin, not named;
    # at 63.98 the median is 95.99 < 96: named.
    analysis = analyze_measurements(
        pairs(5, {(0, 1): 32.0, (0, 2): second_slow}), Thresholds(nccl_pair_slow_pct=25.0)
    )
    assert len(analysis.slow_pairs) == 2
    assert [s.node for s in analysis.suspects] == (["n0"] if named else [])


@pytest.mark.parametrize(("bad", "drain"), [(64.0, False), (63.99, True)])
def test_drain_candidate_is_strictly_below_the_drain_level(bad, drain):
    # Given 8 nodes: n0's 7 pairs at `bad`, the 21 others at 128 -> run median 128; with a drain level
    # 50% below it (64): at 64 n0 is not a drain candidate, at 63.99 it is
    analysis = analyze_measurements(
        pairs(8, {(0, j): bad for j in range(1, 8)}), Thresholds(nccl_drain_pct=50.0)
    )
    assert analysis.median == 128.0 and analysis.drain_level_gbps == 64.0
    assert suspects(analysis) == [
        {
            "node": "n0",
            "slow_pairs": 7,
            "pairs": 7,
            "median_gbps": bad,
            "others_median_gbps": 128.0,
            "drain_candidate": drain,
        }
    ]
    assert [p.below_drain for p in analysis.slow_pairs] == [drain] * 7


def test_two_bad_nodes_named_slowest_first_with_the_others_median_of_what_is_left():
    # Given 6 nodes, n1's pairs at 40 and n4's at 70 (n1-n4 at 40), the other 6 pairs at
    # 120, 121, 122, 123, 124, 125 (distinct, so each median is one exact value): mean 1215/15 = 81,
    # slow below 76.95 (n1's and n4's pairs), run median 70, drain level 56
    healthy = iter([120.0, 121.0, 122.0, 123.0, 124.0, 125.0])
    values = {}
    for i, j in combinations(range(6), 2):
        values[(i, j)] = 40.0 if 1 in (i, j) else 70.0 if 4 in (i, j) else next(healthy)
    analysis = analyze_measurements(pairs(6, values))
    # Then n1 first: its 5 pairs all at 40; the others' median over the 10 pairs without n1
    # (4 x 70 and 120..125) = (120 + 121) / 2 = 120.5; 40 < 56: drain candidate.
    # Then n4: its 4 remaining pairs at 70 (5 in all, all slow); the median of the 6 pairs left = 122.5
    assert suspects(analysis) == [
        {
            "node": "n1",
            "slow_pairs": 5,
            "pairs": 5,
            "median_gbps": 40.0,
            "others_median_gbps": 120.5,
            "drain_candidate": True,
        },
        {
            "node": "n4",
            "slow_pairs": 5,
            "pairs": 5,
            "median_gbps": 70.0,
            "others_median_gbps": 122.5,
            "drain_candidate": False,
        },
    ]


def test_odd_count_of_other_pairs_gives_the_middle_value():
    # Given 4 nodes: n0's pairs at 10, 20, 30 (all slow), the others at 100, 110, 140:
    # mean 410/6 = 68.3 -> slow below 64.9: n0's three; n0's median 20; others' median 110 (odd count)
    values = {(0, 1): 10.0, (0, 2): 20.0, (0, 3): 30.0, (1, 2): 100.0, (1, 3): 110.0, (2, 3): 140.0}
    analysis = analyze_measurements(pairs(4, values))
    assert [(s.node, s.median_gbps, s.others_median_gbps) for s in analysis.suspects] == [("n0", 20.0, 110.0)]


def test_a_node_left_with_half_its_remaining_pairs_slow_is_named_next():
    # Given 6 nodes: n0's 5 pairs at 20, n1-n2 and n1-n3 at 32, the other 8 pairs at 128.
    # mean 1188/15 = 79.2 -> slow below 75.24: 7 pairs; run median 128 -> drain level 102.4.
    # n0 first (median 20, others' median 128). Set aside, n1 has 2 slow of its 4 remaining pairs (50%),
    # median (32 + 128) / 2 = 80 against 128 for the 6 pairs left: named too (3 of 5 pairs in all).
    # n2 and n3 keep 1 slow pair of 4: not named.
    values = {(0, j): 20.0 for j in range(1, 6)} | {(1, 2): 32.0, (1, 3): 32.0}
    analysis = analyze_measurements(pairs(6, values))
    assert suspects(analysis) == [
        {
            "node": "n0",
            "slow_pairs": 5,
            "pairs": 5,
            "median_gbps": 20.0,
            "others_median_gbps": 128.0,
            "drain_candidate": True,
        },
        {
            "node": "n1",
            "slow_pairs": 3,
            "pairs": 5,
            "median_gbps": 80.0,
            "others_median_gbps": 128.0,
            "drain_candidate": True,
        },
    ]


def test_a_healthy_partner_of_a_named_node_is_not_named_after_it():
    # Given 4 nodes: n0's pairs at 40 and n0-n1 at 40 too; n1's other pairs at 128. Once n0 is set
    # aside, n1 has 0 slow pairs of 2 left and is not named, though it had 1 slow pair of 3 at first.
    analysis = analyze_measurements(pairs(4, {(0, 1): 40.0, (0, 2): 40.0, (0, 3): 40.0}))
    assert [s.node for s in analysis.suspects] == ["n0"]


def test_a_partner_keeps_its_other_slow_pairs_but_not_the_share_once_the_bad_node_is_set_aside():
    # Given 7 nodes: n0's 6 pairs at 20; n1-n2 and n1-n3 at 30, n1-n4 at 100, n1-n5 and n1-n6 at 128;
    # the 10 pairs among n2..n6 at 128. mean 1816/21 = 86.5 -> slow below 82.2: n0's 6, n1-n2, n1-n3.
    # n1 starts with 3 slow pairs of 6 (50%) and median 65; n0 is named first (median 20 vs 128).
    # Set aside, n1 has 2 slow of 5 (40%): not a candidate, though its remaining median (100) is below
    # 0.95 x 128 -- so it is not named.
    values = {(0, j): 20.0 for j in range(1, 7)} | {(1, 2): 30.0, (1, 3): 30.0, (1, 4): 100.0}
    analysis = analyze_measurements(pairs(7, values))
    assert len(analysis.slow_pairs) == 8
    assert [(s.node, s.median_gbps, s.others_median_gbps) for s in analysis.suspects] == [("n0", 20.0, 128.0)]


def test_the_others_median_of_an_odd_count_is_its_middle_value():
    # Given 5 nodes with n3-n4 not measured: n0's 4 pairs at 10, 20, 30, 40; the 5 other pairs at
    # 100, 110, 120, 130, 140. mean 700/9 = 77.8 -> slow below 73.9: n0's 4. n0's median 25; the others'
    # median is the 3rd of 5: 120
    values = {(0, 1): 10.0, (0, 2): 20.0, (0, 3): 30.0, (0, 4): 40.0}
    values |= {(1, 2): 100.0, (1, 3): 110.0, (1, 4): 120.0, (2, 3): 130.0, (2, 4): 140.0}
    measurements = [p for p in pairs(5, values) if (p.a, p.b) != ("n3", "n4")]
    analysis = analyze_measurements(measurements)
    assert [(s.node, s.median_gbps, s.others_median_gbps) for s in analysis.suspects] == [("n0", 25.0, 120.0)]
