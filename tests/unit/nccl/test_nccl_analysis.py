"""Pair-matrix analysis on synthetic matrices (clearly synthetic: generated in nccl_synth)."""

from __future__ import annotations

import time

import pytest
from nccl_synth import DATA, REAL, node_names, synthetic_log, synthetic_matrix

from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.nccl.analysis import (
    PairMeasurement,
    analyze_logs,
    analyze_measurements,
    hosts_from_name,
)
from hyperpod_perf.rules.thresholds import Thresholds


def _checks(analysis, check):
    return [f for f in analysis.findings if f.check == check]


@pytest.mark.parametrize(("n", "bad"), [(8, 3), (64, 17), (512, 300)])
def test_one_bad_node_is_the_only_suspect(n, bad):
    # Given n nodes where every pair with node `bad` runs at 60% and others at 400 GB/s (±1% noise)
    nodes, measurements = synthetic_matrix(n, [bad], noise=0.01)
    # When analysed
    started = time.perf_counter()
    analysis = analyze_measurements(measurements, instance_type="ml.p5.48xlarge")
    elapsed = time.perf_counter() - started
    # Then exactly that node is named, with all n-1 of its pairs slow
    assert [s.node for s in analysis.suspects] == [nodes[bad]]
    suspect = analysis.suspects[0]
    assert (suspect.slow_pairs, suspect.pairs) == (n - 1, n - 1)
    assert suspect.median_gbps == pytest.approx(240, rel=0.015)
    assert suspect.others_median_gbps == pytest.approx(400, rel=0.015)
    assert suspect.drain_candidate  # 40% below the median > 20%
    assert len(analysis.slow_pairs) == n - 1
    (finding,) = _checks(analysis, "nccl.node_suspect")
    assert finding.severity is Severity.CONCERN and finding.node == nodes[bad]
    assert f"{n - 1} of its {n - 1} pairs" in finding.summary
    # And the slow pairs are all explained: only the summary pair_slow finding
    (pair_slow,) = _checks(analysis, "nccl.pair_slow")
    assert pair_slow.evidence["explained_by_suspects"] == n - 1
    # And the median meets the p5 baseline at 1 GiB (400 >= 0.9 x 438.955)
    (baseline,) = _checks(analysis, "nccl.below_baseline")
    assert baseline.severity is Severity.OK
    if n == 512:
        assert len(analysis.pairs) == 130_816
        assert elapsed < 2.0


def test_two_bad_nodes_are_both_named():
    nodes, measurements = synthetic_matrix(16, [2, 11], noise=0.02)
    analysis = analyze_measurements(measurements)
    assert sorted(s.node for s in analysis.suspects) == sorted([nodes[2], nodes[11]])
    # Each was in all 15 of its pairs slow (including the pair between the two)
    assert all((s.slow_pairs, s.pairs) == (15, 15) for s in analysis.suspects)
    assert len(analysis.slow_pairs) == 15 + 15 - 1


def test_three_bad_nodes_of_sixty_four_with_different_severity():
    nodes, measurements = synthetic_matrix(64, [1, 30, 62], bad_factor=0.85, noise=0.01)
    analysis = analyze_measurements(measurements)
    assert sorted(s.node for s in analysis.suspects) == sorted([nodes[1], nodes[30], nodes[62]])
    assert not any(s.drain_candidate for s in analysis.suspects)  # 15% below: slow but not drain level


def test_uniform_cluster_names_no_one_but_falls_below_the_baseline():
    # Given every pair at 250 GB/s at 1 GiB on p5 (published 438.955 GB/s at 1 GiB)
    _, measurements = synthetic_matrix(8, good_gbps=250.0)
    analysis = analyze_measurements(measurements, instance_type="p5.48xlarge")
    assert analysis.suspects == [] and analysis.slow_pairs == []
    (baseline,) = _checks(analysis, "nccl.below_baseline")
    assert baseline.severity is Severity.CONCERN
    assert baseline.evidence["expected_gbps"] == 438.955 and baseline.evidence["floor_gbps"] == 395.06
    assert baseline.evidence["expected_at_bytes"] == 1 << 30
    assert _checks(analysis, "nccl.node_suspect")[0].severity is Severity.OK


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_two_percent_noise_names_no_one(seed):
    _, measurements = synthetic_matrix(64, noise=0.02, seed=seed)
    analysis = analyze_measurements(measurements)
    assert analysis.suspects == [] and analysis.slow_pairs == []
    assert _checks(analysis, "nccl.pair_slow")[0].severity is Severity.OK


def test_a_single_bad_link_is_a_slow_pair_without_a_suspect():
    nodes, measurements = synthetic_matrix(8)
    measurements = [
        PairMeasurement(200.0, m.source, m.a, m.b) if {m.a, m.b} == {nodes[0], nodes[5]} else m
        for m in measurements
    ]
    analysis = analyze_measurements(measurements)
    assert analysis.suspects == []
    assert [(p.a, p.b) for p in analysis.slow_pairs] == [(nodes[0], nodes[5])]
    per_pair = [f for f in _checks(analysis, "nccl.pair_slow") if "pair " in f.summary]
    assert len(per_pair) == 1 and per_pair[0].evidence["busbw_gbps"] == 200.0
    assert _checks(analysis, "nccl.node_suspect")[0].severity is Severity.INFO


def test_half_the_cluster_bad_is_reported_as_widespread_not_blamed_on_one_node():
    _, measurements = synthetic_matrix(16, list(range(8)))
    analysis = analyze_measurements(measurements)
    assert analysis.suspects == []
    (info,) = _checks(analysis, "nccl.node_suspect")
    assert info.severity is Severity.INFO and info.evidence["widespread"] is True


def test_missing_pairs_are_counted_and_listed():
    nodes, measurements = synthetic_matrix(6)
    dropped = {(nodes[0], nodes[1]), (nodes[2], nodes[5])}
    kept = [m for m in measurements if (m.a, m.b) not in dropped]
    analysis = analyze_measurements(kept)
    assert analysis.missing_count == 2
    assert sorted(analysis.missing_pairs) == sorted(tuple(sorted(p)) for p in dropped)
    (coverage,) = _checks(analysis, "nccl.coverage")
    assert coverage.severity is Severity.INFO and coverage.evidence["pairs_measured"] == 13


def test_repeated_runs_of_a_pair_use_their_median():
    runs = [PairMeasurement(v, f"r{i}", "b-node", "a-node") for i, v in enumerate([300.0, 390.0, 395.0])]
    other = [PairMeasurement(400.0, "x", "a-node", "c-node"), PairMeasurement(400.0, "y", "b-node", "c-node")]
    analysis = analyze_measurements(runs + other)
    pair = next(p for p in analysis.pairs if (p.a, p.b) == ("a-node", "b-node"))
    assert pair.busbw_gbps == 390.0 and pair.runs == 3 and pair.sources == ["r0", "r1", "r2"]


def test_correctness_failure_is_its_own_concern():
    text = (DATA / "synthetic_v2.18_two-hosts_wrong-and-oob-failed.txt").read_text()
    analysis = analyze_logs(
        [("whatever.log", text), ("ip-10-1-0-11__ip-10-1-0-13.log", synthetic_log(372.0))]
    )
    (bad,) = [f for f in _checks(analysis, "nccl.correctness") if f.severity is Severity.CONCERN]
    assert (
        bad.evidence["wrong"] == 5
        and bad.evidence["a"] == "ip-10-1-0-11"
        and bad.evidence["b"] == "ip-10-1-0-12"
    )
    # And it is not a speed finding: both pairs are at ~372 GB/s
    assert analysis.slow_pairs == []


def test_hosts_from_rank_lines_then_file_name_else_null():
    logs = [
        ("logs/n1__n2.log", synthetic_log(400.0)),  # from the file name
        ("logs/n9__n9b.log", synthetic_log(400.0, hosts=("n1", "n3"))),  # rank lines win
        ("logs/run-17.out", synthetic_log(380.0)),  # neither: null hosts, bandwidth still reported
    ]
    analysis = analyze_logs(logs)
    as_dict = analysis.to_dict()
    assert {(p["a"], p["b"]) for p in as_dict["pairs"]} == {("n1", "n2"), ("n1", "n3"), (None, None)}
    unnamed = next(p for p in as_dict["pairs"] if p["a"] is None)
    assert unnamed["busbw_gbps"] == 380.0 and unnamed["sources"] == ["logs/run-17.out"]
    assert any("rank lines name n1/n3" in p for p in analysis.logs[1].problems)
    assert _checks(analysis, "nccl.coverage")[0].evidence["logs_without_hosts"] == 1


def test_unusable_log_is_a_concern_and_listed():
    analysis = analyze_logs(
        [("a__b.log", "srun: error: Unable to allocate resources\n"), ("a__c.log", synthetic_log(1))]
    )
    (bad,) = [f for f in _checks(analysis, "nccl.log") if f.severity is Severity.CONCERN]
    assert bad.evidence["source"] == "a__b.log"
    assert analysis.to_dict()["unusable_logs"][0]["source"] == "a__b.log"


@pytest.mark.parametrize(
    ("instance_type", "severity"),
    [
        (None, Severity.INFO),
        ("ml.g5.8xlarge", Severity.INFO),
        ("ml.p5en.48xlarge", Severity.INFO),
        ("p4d.24xlarge", Severity.OK),
        ("ml.p4de.24xlarge", Severity.OK),
    ],
)
def test_baseline_needs_a_known_instance_type(instance_type, severity):
    # Given 4 nodes at 75 GB/s at 1 GiB: a healthy p4d/p4de figure (published 76.825 GB/s at 1 GiB)
    _, measurements = synthetic_matrix(4, good_gbps=75.0)
    analysis = analyze_measurements(measurements, instance_type=instance_type)
    assert _checks(analysis, "nccl.below_baseline")[0].severity is severity


def test_thresholds_are_read_from_the_thresholds_object():
    # Given pairs 8% below the others, a 10% slow margin names nothing while the default 5% does
    nodes, measurements = synthetic_matrix(8, [0], bad_factor=0.92)
    assert [s.node for s in analyze_measurements(measurements).suspects] == [nodes[0]]
    lenient = Thresholds(nccl_pair_slow_pct=10.0)
    assert analyze_measurements(measurements, lenient).suspects == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("logs/ip-10-0-0-1__ip-10-0-0-2.log", ("ip-10-0-0-1", "ip-10-0-0-2")),
        ("s3://b/p/10.0.0.1__10.0.0.2.txt", ("10.0.0.1", "10.0.0.2")),
        ("a__b__c.log", None),
        ("a__a.log", None),
        ("plain.log", None),
    ],
)
def test_hosts_from_name(name, expected):
    assert hosts_from_name(name) == expected


def test_node_names_helper_is_unique():
    assert len(set(node_names(512))) == 512


# --------------------------------------------------------------------------- one message size, real logs

P5_16G = (REAL / "p5-2node_srun-label_allreduce-16G.txt").read_text(encoding="utf-8")
P5_2G_EKS = (REAL / "p5-2node_mpirun-prefix_eks-excerpt.txt").read_text(encoding="utf-8")
P4DE_2G = (REAL / "p4de-2node_srun-label_allreduce.txt").read_text(encoding="utf-8")
H100_CUT = (REAL / "h100-2node-1gpu-each_mpirun_tree_low-bw_excerpt.txt").read_text(encoding="utf-8")


def test_healthy_p5_runs_to_16g_16g_and_2g_are_compared_at_2g_and_none_is_slow():
    # Given three healthy p5 pair logs: two swept to 16 GiB (487 GB/s there), one to 2 GiB (438 GB/s)
    logs = [("n1__n2.log", P5_16G), ("n1__n3.log", P5_16G), ("n2__n3.log", P5_2G_EKS)]
    # When analysed
    analysis = analyze_logs(logs, instance_type="ml.p5.48xlarge")
    # Then every pair is read at 2 GiB, the largest size all three measured
    assert analysis.compared_at_bytes == 2 << 30
    figures = {(p.a, p.b): p.busbw_gbps for p in analysis.pairs}
    assert figures == {
        ("n1", "n2"): pytest.approx(442.89),  # max(438.955 @1G, 442.89 @2G)
        ("n1", "n3"): pytest.approx(442.89),
        ("n2", "n3"): pytest.approx(437.84),  # max(313.29 @1G, 437.84 @2G)
    }
    # And the 2 GiB run is within 1.2 % of the others: no slow pair, no suspect
    assert analysis.slow_pairs == [] and analysis.suspects == []
    (pair_slow,) = _checks(analysis, "nccl.pair_slow")
    assert pair_slow.severity is Severity.OK and pair_slow.evidence["compared_at_bytes"] == 2 << 30
    # And the baseline is the published p5 figure at that same size
    (baseline,) = _checks(analysis, "nccl.below_baseline")
    assert baseline.severity is Severity.OK
    assert (baseline.evidence["expected_gbps"], baseline.evidence["expected_at_bytes"]) == (442.89, 2 << 30)


def test_before_the_common_size_the_2g_run_would_have_been_called_slow():
    # The same three logs, each at its own largest size (what the analysis used to do): 487/487/438
    own = [parse_top(t) for t in (P5_16G, P5_16G, P5_2G_EKS)]
    mean = sum(own) / 3
    assert own[2] < mean * 0.95  # 437.84 < 0.95 x 470.7: the old reading flagged a healthy pair


def parse_top(text: str) -> float:
    from hyperpod_perf.parse.nccl_tests import parse_nccl_tests

    (run,) = parse_nccl_tests(text).measured_runs
    return run.pair_busbw_gbps


def test_a_log_without_summary_that_stops_short_of_the_complete_logs_is_not_ranked():
    # Given a complete p5 log (summary line, 2 GiB), a 16 GiB p5 sweep, and an excerpt that has no
    # summary and stops at 32 MiB (nccl-tests#232)
    logs = [("a__b.log", P5_2G_EKS), ("a__c.log", P5_16G), ("b__c.log", H100_CUT)]
    analysis = analyze_logs(logs)
    # Then the 32 MiB excerpt is left out of the ranking, said so, and the rest compare at 2 GiB
    assert {(p.a, p.b) for p in analysis.pairs} == {("a", "b"), ("a", "c")}
    assert analysis.compared_at_bytes == 2 << 30
    (note,) = [f for f in _checks(analysis, "nccl.log") if f.evidence.get("source") == "b__c.log"]
    assert note.severity is Severity.INFO and note.summary.startswith("b__c.log: not ranked (no summary line")
    # And it no longer drags a pair into "slow" (41 GB/s against 440)
    assert analysis.slow_pairs == []


def test_a_table_that_stops_before_its_max_bytes_is_not_ranked():
    # Given the synthetic complete log (maxBytes 1 GiB) and the same log with its last row removed
    full = synthetic_log(400.0)
    lines = full.splitlines()
    last_row = max(i for i, line in enumerate(lines) if line.strip().startswith("1073741824"))
    cut = "\n".join(lines[:last_row]) + "\n"
    analysis = analyze_logs([("a__b.log", full), ("a__c.log", full), ("b__c.log", cut)])
    assert {(p.a, p.b) for p in analysis.pairs} == {("a", "b"), ("a", "c")}
    (note,) = [f for f in _checks(analysis, "nccl.log") if f.evidence.get("source") == "b__c.log"]
    assert "before its maxBytes" in note.summary


@pytest.mark.parametrize("instance_type", ["p4de.24xlarge", "ml.p4de.24xlarge"])
def test_healthy_p4de_log_meets_the_published_p4de_figure_not_300(instance_type):
    # Given the published 2x p4de run (78.33 GB/s at 2 GiB) as two pairs
    analysis = analyze_logs([("a__b.log", P4DE_2G), ("a__c.log", P4DE_2G)], instance_type=instance_type)
    (baseline,) = _checks(analysis, "nccl.below_baseline")
    assert baseline.severity is Severity.OK
    assert baseline.evidence["expected_gbps"] == 78.33 and baseline.evidence["floor_gbps"] == 70.497
    assert "awsome-distributed-training" in baseline.evidence["source"]


def test_baseline_for_logs_that_stop_below_the_published_sizes_is_info():
    # Given p4de figures measured only at 128 MiB (the published curve starts at 256 MiB)
    _, measurements = synthetic_matrix(3, good_gbps=60.0, size_bytes=128 << 20)
    analysis = analyze_measurements(measurements, instance_type="p4d.24xlarge")
    (baseline,) = _checks(analysis, "nccl.below_baseline")
    assert baseline.severity is Severity.INFO
    assert "start at 256 MiB" in baseline.summary
