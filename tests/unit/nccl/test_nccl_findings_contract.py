"""NCCL findings field by field (reviewed): slow pairs, suspects, the published baseline, wrong results,
coverage and the log notes — what each says, the numbers it computed, its threshold and its hand-off.

Inputs are clearly synthetic pair figures (built here); the numbers in the expectations are worked
out by hand in the comments from the runbook's rules.
"""

from __future__ import annotations

from itertools import combinations

import pytest

from hyperpod_perf.nccl.analysis import LogReport, PairMeasurement, analyze_measurements
from hyperpod_perf.rules.thresholds import Thresholds
from hyperpod_perf.rules.urgency import with_tiers

GIB = 1 << 30
MIB = 1 << 20
P5_SOURCE = (
    "awslabs/awsome-distributed-training micro-benchmarks/nccl-tests/README.md @ 0edaf152, "
    "2-instance all_reduce_perf over EFA: 2x p5.48xlarge table"
)
PAIR_THRESHOLD = "busbw < 5% below the run mean"
SUSPECT_THRESHOLD = (
    ">= 50% of the node's pairs slow and its median busbw more than 5% below the other pairs' median; "
    "drain candidate when more than 20% below the run median"
)


def m(a, b, value, size=GIB, **kw):
    """One run of pair a-b read at `size` (complete, as from a log that reached its maxBytes)."""
    return PairMeasurement(value, f"{a}__{b}.log", a, b, sizes=((size, value),), complete=True, **kw)


def matrix(n, value_of, size=GIB):
    """Every pair of n nodes n0..n{n-1}, each at value_of(a_index, b_index)."""
    return [m(f"n{i}", f"n{j}", value_of(i, j), size) for i, j in combinations(range(n), 2)]


def dumped(findings, check=None):
    return [f.model_dump(mode="json") for f in findings if check is None or f.check == check]


def finding(
    check, severity, summary, *, node=None, evidence=None, threshold=None, next_step=None, handoff=None
):
    return {
        "node": node,
        "check": check,
        "severity": severity,
        "section": "A",  # the runbook section NCCL findings belong to
        "summary": summary,
        "evidence": evidence or {},
        "threshold": threshold,
        "next_step": next_step,
        "handoff": handoff,
    }


def test_one_slow_node_field_by_field_and_its_json_export():
    # Given 4 p5 nodes at 1 GiB: n0's three pairs at 80 GB/s, the other three at 100 GB/s
    measurements = matrix(4, lambda i, j: 80.0 if i == 0 else 100.0)
    # When analysed
    analysis = analyze_measurements(measurements, instance_type="ml.p5.48xlarge")
    # Then mean = 540/6 = 90, median = (80+100)/2 = 90, slow below 90 x 0.95 = 85.5, drain 90 x 0.8 = 72;
    # n0 is in 3 of 3 slow pairs, its median 80 vs 100 for the rest (20% lower), 80 >= 72: no drain
    slowest = [{"a": "n0", "b": f"n{j}", "busbw_gbps": 80.0, "sources": [f"n0__n{j}.log"]} for j in (1, 2, 3)]
    assert dumped(analysis.findings) == [
        finding(
            "nccl.pair_slow",
            "CONCERN",
            "3 of 6 pairs more than 5% below the run mean (90.0 GB/s); 3 involve a suspect node",
            evidence={
                "pairs": 6,
                "mean_gbps": 90.0,
                "median_gbps": 90.0,
                "slow_threshold_gbps": 85.5,
                "drain_level_gbps": 72.0,
                "compared_at_bytes": GIB,
                "slow_pairs": 3,
                "explained_by_suspects": 3,
                "below_drain_level": 0,
                "slowest": slowest,
            },
            threshold=PAIR_THRESHOLD,
            next_step="See nccl.node_suspect for the node(s) behind these pairs; re-test the others.",
        ),
        finding(
            "nccl.node_suspect",
            "CONCERN",
            "n0 is in 3 of its 3 pairs that are slow; its median 80.0 GB/s vs 100.0 GB/s for the other pairs "
            "(20.0% lower)",
            node="n0",
            evidence={
                "node": "n0",
                "slow_pairs": 3,
                "pairs": 3,
                "median_gbps": 80.0,
                "others_median_gbps": 100.0,
                "drain_candidate": False,
            },
            threshold=SUSPECT_THRESHOLD,
            next_step="Snapshot n0 (EFA ports and counters, GPU PCIe/thermal, CPU governor) and re-test it "
            "against two known-good nodes (hyperpod-perf nccl plan --mode quick --suspect n0).",
        ),
        # 90 < 0.9 x 438.955 (p5 at 1 GiB) = 395.0595
        finding(
            "nccl.below_baseline",
            "CONCERN",
            "median busbw 90.0 GB/s is below 0.9 x the published 439.0 GB/s at 1 GiB for p5.48xlarge",
            evidence={
                "median_gbps": 90.0,
                "instance_type": "p5.48xlarge",
                "compared_at_bytes": GIB,
                "source": P5_SOURCE,
                "expected_gbps": 438.955,
                "expected_at_bytes": GIB,
                "floor_gbps": 395.06,
            },
            threshold="median busbw < 0.9 x published (395.1 GB/s at 1 GiB)",
            next_step="Check that NCCL uses EFA (NCCL_DEBUG=INFO shows 'NET/OFI', not 'NET/Socket'), the "
            "aws-ofi-nccl version, and the test's largest size (-e 16G or more).",
            handoff="hyperpod-nccl",
        ),
        finding(
            "nccl.correctness",
            "OK",
            "no wrong results in 6 runs (6 without validation)",
            evidence={"runs": 6, "without_validation": 6},
        ),
        finding(
            "nccl.coverage",
            "OK",
            "all 6 pairs of 4 nodes measured",
            evidence={
                "nodes": 4,
                "pairs_expected": 6,
                "pairs_measured": 6,
                "missing": 0,
                "missing_listed": [],
                "logs_without_hosts": 0,
            },
        ),
    ]
    # And the JSON export carries the same numbers
    exported = analysis.to_dict()
    assert {k: v for k, v in exported.items() if k != "findings"} == {
        "pairs": [
            {
                "a": f"n{i}",
                "b": f"n{j}",
                "busbw_gbps": 80.0 if i == 0 else 100.0,
                "runs": 1,
                "sources": [f"n{i}__n{j}.log"],
            }
            for i, j in combinations(range(4), 2)
        ],
        "mean": 90.0,
        "median": 90.0,
        "slow_threshold_gbps": 85.5,
        "drain_level_gbps": 72.0,
        "slow_pairs": [
            {"a": "n0", "b": f"n{j}", "busbw_gbps": 80.0, "below_drain_level": False} for j in (1, 2, 3)
        ],
        "suspects": [
            {
                "node": "n0",
                "slow_pairs": 3,
                "pairs": 3,
                "median_gbps": 80.0,
                "others_median_gbps": 100.0,
                "drain_candidate": False,
            }
        ],
        "nodes": ["n0", "n1", "n2", "n3"],
        "missing_pairs": {"count": 0, "listed": []},
        "unusable_logs": [],
        "instance_type": "p5.48xlarge",
        "expected_busbw_gbps": 438.955,
        "compared_at_bytes": GIB,
    }
    assert exported["findings"] == dumped(with_tiers(analysis.findings))  # each with its urgency tier
    assert [f.get("tier") for f in exported["findings"]][:2] == ["fix soon", "fix soon"]
    assert analysis.suspect_nodes == {"n0"} and analysis.expected_at_bytes == GIB


def test_a_drain_candidate_says_so_in_summary_next_step_and_json():
    # Given n0's pairs at 60 GB/s, the others at 100: mean 80, median 80, drain level 64 -> 60 < 64
    analysis = analyze_measurements(matrix(4, lambda i, j: 60.0 if i == 0 else 100.0))
    (suspect,) = dumped(analysis.findings, "nccl.node_suspect")
    assert suspect == finding(
        "nccl.node_suspect",
        "CONCERN",
        "n0 is in 3 of its 3 pairs that are slow; its median 60.0 GB/s vs 100.0 GB/s for the other pairs "
        "(40.0% lower); drain candidate (> 20% below the run median)",
        node="n0",
        evidence={
            "node": "n0",
            "slow_pairs": 3,
            "pairs": 3,
            "median_gbps": 60.0,
            "others_median_gbps": 100.0,
            "drain_candidate": True,
        },
        threshold=SUSPECT_THRESHOLD,
        next_step="Snapshot n0 (EFA ports and counters, GPU PCIe/thermal, CPU governor) and re-test it "
        "against two known-good nodes (hyperpod-perf nccl plan --mode quick --suspect n0). If confirmed, "
        "drain and replace it (hyperpod-node-debugger § F).",
    )
    (summary,) = dumped(analysis.findings, "nccl.pair_slow")
    assert summary["evidence"]["below_drain_level"] == 3 and summary["evidence"]["drain_level_gbps"] == 64.0
    assert [p["below_drain_level"] for p in analysis.to_dict()["slow_pairs"]] == [True, True, True]


@pytest.mark.parametrize(
    ("slow_value", "drain_note", "below_drain"),
    [
        (50.0, "", False),  # at the drain level: 50 = 100 x (1 - 50/100) is not below it
        (49.99, " (below the drain level)", True),  # just below
    ],
)
def test_one_slow_link_is_a_pair_finding_at_and_below_the_drain_level(slow_value, drain_note, below_drain):
    # Given 4 nodes, every pair at 100 GB/s but n0-n1 (n0 and n1 have 1 slow pair each: no suspect);
    # the drain level at 50% below the median 100 GB/s = 50 GB/s
    analysis = analyze_measurements(
        matrix(4, lambda i, j: slow_value if (i, j) == (0, 1) else 100.0), Thresholds(nccl_drain_pct=50.0)
    )
    mean = (slow_value + 500) / 6
    pct = round(100 * (1 - slow_value / mean), 1)  # 45.5 % below the mean
    assert pct == 45.5
    pair_findings = dumped(analysis.findings, "nccl.pair_slow")
    assert pair_findings[0]["summary"] == "1 of 6 pairs more than 5% below the run mean (91.7 GB/s)"
    assert pair_findings[0]["evidence"]["below_drain_level"] == int(below_drain)
    assert pair_findings[0]["evidence"]["explained_by_suspects"] == 0
    assert pair_findings[1:] == [
        finding(
            "nccl.pair_slow",
            "CONCERN",
            f"pair n0–n1: {slow_value:.1f} GB/s, 45.5% below the run mean{drain_note}",
            evidence={
                "a": "n0",
                "b": "n1",
                "busbw_gbps": slow_value,
                "runs": 1,
                "sources": ["n0__n1.log"],
                "mean_gbps": round(mean, 3),
            },
            threshold=PAIR_THRESHOLD,
            next_step="Re-run this pair; if it stays slow, test each node against a known-good node "
            "(hyperpod-perf nccl plan --mode quick --suspect ...).",
        )
    ]
    assert dumped(analysis.findings, "nccl.node_suspect") == [
        finding(
            "nccl.node_suspect",
            "INFO",
            "the 1 slow pairs share no common node",
            evidence={"slow_pairs": 1, "pairs": 6, "widespread": False},
            threshold=SUSPECT_THRESHOLD.replace("20%", "50%"),
            next_step="Look at the heatmap for a block pattern (topology: AZ, network node layer, "
            "UltraServer) and re-test the slow pairs.",
        )
    ]


@pytest.mark.parametrize(("value", "slow"), [(96.0, False), (95.99, True)])
def test_a_pair_exactly_at_the_slow_threshold_is_not_slow(value, slow):
    # Given a 25% margin and pairs [value, 134, 134, 134, 135, 135]: at 96 the mean is 768/6 = 128 and
    # the threshold 128 x 0.75 = 96 exactly; at 95.99 the threshold is 95.9985 and the pair is below it
    values = iter([value, 134.0, 134.0, 134.0, 135.0, 135.0])
    analysis = analyze_measurements(matrix(4, lambda i, j: next(values)), Thresholds(nccl_pair_slow_pct=25.0))
    assert [(p.a, p.b) for p in analysis.slow_pairs] == ([("n0", "n1")] if slow else [])
    (summary, *_) = dumped(analysis.findings, "nccl.pair_slow")
    assert summary["severity"] == ("CONCERN" if slow else "OK")
    assert summary["threshold"] == "busbw < 25% below the run mean"
    if not slow:
        assert summary == finding(
            "nccl.pair_slow",
            "OK",
            "all 6 pairs within 25% of the run mean (128.0 GB/s)",
            evidence={
                "pairs": 6,
                "mean_gbps": 128.0,
                "median_gbps": 134.0,
                "slow_threshold_gbps": 96.0,
                "drain_level_gbps": 107.2,
                "compared_at_bytes": GIB,
            },
            threshold="busbw < 25% below the run mean",
        )


def test_widespread_is_more_than_half_the_pairs_and_hostless_pairs_are_named_by_their_source():
    # Given logs without host names: [50, 100] -> 1 of 2 slow (50%: not widespread);
    # [50, 50, 100] -> 2 of 3 slow (67%: widespread); a log naming one host only is "solo–?"
    half = [PairMeasurement(50.0, "run-1.log"), PairMeasurement(100.0, "run-2.log")]
    analysis = analyze_measurements(half)
    (info,) = dumped(analysis.findings, "nccl.node_suspect")
    assert info["summary"] == "the 1 slow pairs share no common node"
    assert info["evidence"] == {"slow_pairs": 1, "pairs": 2, "widespread": False}
    assert (
        dumped(analysis.findings, "nccl.pair_slow")[1]["summary"]
        == "pair run-1.log: 50.0 GB/s, 33.3% below the run mean (below the drain level)"  # median 75 x 0.8
    )

    most = [
        PairMeasurement(50.0, "run-1.log"),
        PairMeasurement(50.0, "run-3.log", "solo"),
        PairMeasurement(100.0, "run-2.log"),
    ]
    analysis = analyze_measurements(most)
    (info,) = dumped(analysis.findings, "nccl.node_suspect")
    assert info["summary"] == "slow pairs are widespread (67% of pairs): no single node explains them"
    assert info["evidence"] == {"slow_pairs": 2, "pairs": 3, "widespread": True}
    assert [f["summary"] for f in dumped(analysis.findings, "nccl.pair_slow")[1:]] == [
        "pair run-1.log: 50.0 GB/s, 25.0% below the run mean",
        "pair solo–?: 50.0 GB/s, 25.0% below the run mean",
    ]
    # And coverage says the three logs name no pair
    assert dumped(analysis.findings, "nccl.coverage") == [
        finding(
            "nccl.coverage",
            "INFO",
            "3 logs name no host pair (neither rank lines nor <hostA>__<hostB> file name)",
            evidence={
                "nodes": 0,
                "pairs_expected": 0,
                "pairs_measured": 0,
                "missing": 0,
                "missing_listed": [],
                "logs_without_hosts": 3,
            },
            next_step="Run the missing pairs (hyperpod-perf nccl plan) and name logs <hostA>__<hostB>.log.",
        )
    ]


@pytest.mark.parametrize(("n_links", "extra_note"), [(50, []), (51, [1])])
def test_at_most_fifty_unexplained_pairs_are_listed_one_by_one(n_links, extra_note):
    # Given 2 x n_links nodes, every pair at 100 GB/s but n_links disjoint links at 50 GB/s (one each)
    n = 2 * n_links
    measurements = matrix(n, lambda i, j: 50.0 if j == i + 1 and i % 2 == 0 else 100.0)
    analysis = analyze_measurements(measurements)
    pair_findings = dumped(analysis.findings, "nccl.pair_slow")
    # Then: the summary (20 slowest in its evidence), 50 one by one, and a note for the rest
    assert len(pair_findings[0]["evidence"]["slowest"]) == 20
    assert len([f for f in pair_findings if f["summary"].startswith("pair ")]) == 50
    notes = [f for f in pair_findings if f["severity"] == "INFO"]
    assert notes == [
        finding(
            "nccl.pair_slow",
            "INFO",
            f"{k} more slow pairs not listed one by one (see the json pairs)",
            evidence={"not_listed": k},
        )
        for k in extra_note
    ]
    assert analysis.suspects == []


def test_the_slowest_list_keeps_three_sources_and_the_pair_finding_all_runs():
    # Given n0-n1 measured in 4 runs at 50 GB/s (median 50), every other pair of 4 nodes at 100
    runs = [PairMeasurement(50.0, f"run-{k}.log", "n0", "n1") for k in range(4)]
    others = [m(f"n{i}", f"n{j}", 100.0) for i, j in combinations(range(4), 2) if (i, j) != (0, 1)]
    analysis = analyze_measurements(runs + others)
    summary, pair = dumped(analysis.findings, "nccl.pair_slow")
    assert summary["evidence"]["slowest"] == [
        {"a": "n0", "b": "n1", "busbw_gbps": 50.0, "sources": ["run-0.log", "run-1.log", "run-2.log"]}
    ]
    assert pair["evidence"]["sources"] == [f"run-{k}.log" for k in range(4)] and pair["evidence"]["runs"] == 4


@pytest.mark.parametrize(
    ("median", "severity"),
    [(219.4775, "OK"), (219.47, "CONCERN")],  # the floor 0.5 x 438.955 = 219.4775 exactly; just below
)
def test_baseline_floor_at_and_just_below_the_limit(median, severity):
    analysis = analyze_measurements(
        matrix(3, lambda i, j: median), Thresholds(nccl_baseline_ratio=0.5), instance_type="p5.48xlarge"
    )
    (baseline,) = dumped(analysis.findings, "nccl.below_baseline")
    assert baseline["severity"] == severity
    assert baseline["threshold"] == "median busbw < 0.5 x published (219.5 GB/s at 1 GiB)"
    assert baseline["evidence"]["floor_gbps"] == 219.477
    if severity == "OK":
        assert baseline == finding(
            "nccl.below_baseline",
            "OK",
            "median busbw 219.5 GB/s meets the published 439.0 GB/s at 1 GiB for p5.48xlarge",
            evidence={
                "median_gbps": 219.477,
                "instance_type": "p5.48xlarge",
                "compared_at_bytes": GIB,
                "source": P5_SOURCE,
                "expected_gbps": 438.955,
                "expected_at_bytes": GIB,
                "floor_gbps": 219.477,
            },
            threshold="median busbw < 0.5 x published (219.5 GB/s at 1 GiB)",
        )


@pytest.mark.parametrize(("median", "severity"), [(395.07, "OK"), (395.05, "CONCERN")])
def test_baseline_default_ratio_just_inside_and_just_outside(median, severity):
    # 0.9 x 438.955 = 395.0595 GB/s at 1 GiB
    analysis = analyze_measurements(matrix(3, lambda i, j: median), instance_type="ml.p5.48xlarge")
    (baseline,) = dumped(analysis.findings, "nccl.below_baseline")
    assert baseline["severity"] == severity


def test_baseline_compared_at_the_published_point_below_the_common_size():
    # Given p5 pairs compared at 3 GiB (between the published 2 and 4 GiB points) -> the 2 GiB point
    analysis = analyze_measurements(matrix(3, lambda i, j: 450.0, size=3 * GIB), instance_type="p5.48xlarge")
    (baseline,) = dumped(analysis.findings, "nccl.below_baseline")
    assert (
        baseline["summary"]
        == "median busbw 450.0 GB/s meets the published 442.9 GB/s at 2 GiB for p5.48xlarge"
    )
    assert baseline["evidence"]["compared_at_bytes"] == 3 * GIB
    assert (baseline["evidence"]["expected_gbps"], baseline["evidence"]["expected_at_bytes"]) == (
        442.89,
        2 * GIB,
    )


@pytest.mark.parametrize(
    ("instance_type", "collective", "expected"),
    [
        (
            None,
            None,
            finding(
                "nccl.below_baseline",
                "INFO",
                "instance type not given: the median cannot be compared with a published expectation",
                evidence={"median_gbps": 75.0, "instance_type": None},
                next_step="Pass --instance-type (e.g. ml.p5.48xlarge) to compare with the published busbw.",
            ),
        ),
        (
            "ml.g5.8xlarge",
            "all_reduce_perf",
            finding(
                "nccl.below_baseline",
                "INFO",
                "no published 2-node busbw for g5.8xlarge; median 75.0 GB/s",
                evidence={"median_gbps": 75.0, "instance_type": "g5.8xlarge"},
                next_step="Benchmark a known-good pair of this type and compare by hand.",
            ),
        ),
        (
            "p5en.48xlarge",
            None,
            finding(
                "nccl.below_baseline",
                "INFO",
                "no published 2-node busbw for p5en.48xlarge; median 75.0 GB/s",
                evidence={"median_gbps": 75.0, "instance_type": "p5en.48xlarge"},
                next_step="Benchmark a known-good pair of this type and compare by hand.",
            ),
        ),
        (
            "p5.48xlarge",
            "all_gather_perf",
            finding(
                "nccl.below_baseline",
                "INFO",
                "published expectations are for all_reduce; these logs ran all_gather_perf",
                evidence={
                    "median_gbps": 75.0,
                    "instance_type": "p5.48xlarge",
                    "collectives": ["all_gather_perf"],
                },
            ),
        ),
    ],
)
def test_baseline_info_without_a_published_figure(instance_type, collective, expected):
    measurements = [m(f"n{i}", f"n{j}", 75.0, collective=collective) for i, j in combinations(range(3), 2)]
    analysis = analyze_measurements(measurements, instance_type=instance_type)
    assert dumped(analysis.findings, "nccl.below_baseline") == [expected]


def test_all_reduce_mpi_is_compared_with_the_published_all_reduce():
    measurements = [
        m(f"n{i}", f"n{j}", 450.0, collective="all_reduce_perf_mpi") for i, j in combinations(range(3), 2)
    ]
    analysis = analyze_measurements(measurements, instance_type="p5.48xlarge")
    assert dumped(analysis.findings, "nccl.below_baseline")[0]["severity"] == "OK"


@pytest.mark.parametrize(
    ("size", "compared_text", "first_text"),
    [
        (512 * MIB, "these logs were compared at 512 MiB", "1 GiB"),
        (1000, "these logs were compared at 1000 B", "1 GiB"),
        (0, "these logs were compared at 0 B", "1 GiB"),  # a sweep from -b 0 that stopped there
        (1536 * MIB, None, None),  # 1536 MiB is past the first published point: compared
        (None, "these figures carry no message size", "1 GiB"),
    ],
)
def test_baseline_info_below_the_published_sizes_names_the_sizes(size, compared_text, first_text):
    measurements = [
        PairMeasurement(
            300.0,
            f"n{i}__n{j}.log",
            f"n{i}",
            f"n{j}",
            sizes=((size, 300.0),) if size is not None else (),
            complete=True,
        )
        for i, j in combinations(range(3), 2)
    ]
    analysis = analyze_measurements(measurements, instance_type="p5.48xlarge")
    (baseline,) = dumped(analysis.findings, "nccl.below_baseline")
    if compared_text is None:
        assert baseline["summary"] == (
            "median busbw 300.0 GB/s is below 0.9 x the published 439.0 GB/s at 1 GiB for p5.48xlarge"
        )
        return
    assert baseline == finding(
        "nccl.below_baseline",
        "INFO",
        f"the published p5.48xlarge figures start at {first_text}; {compared_text}",
        evidence={
            "median_gbps": 300.0,
            "instance_type": "p5.48xlarge",
            "compared_at_bytes": size,
            "source": P5_SOURCE,
            "published_from_bytes": GIB,
        },
        next_step=f"Run the pairs up to at least {first_text} (-e) to compare with the published busbw.",
    )


def test_wrong_results_and_out_of_bounds_failures_are_correctness_concerns():
    # Given one pair with 5 wrong values, one with out-of-bounds FAILED and no #wrong, one clean
    measurements = [
        m("n0", "n1", 100.0, wrong=5),
        m("n0", "n2", 100.0, wrong=0, out_of_bounds_failed=True),
        m("n1", "n2", 100.0, wrong=0),
    ]
    analysis = analyze_measurements(measurements)
    next_step = (
        "Wrong results are a correctness problem, not a speed one: run the GPU checks (DCGM diagnostics) on "
        "both nodes before trusting any bandwidth from them."
    )
    assert dumped(analysis.findings, "nccl.correctness") == [
        finding(
            "nccl.correctness",
            "CONCERN",
            "n0__n1.log: nccl-tests reported wrong results (#wrong total 5)",
            evidence={"source": "n0__n1.log", "a": "n0", "b": "n1", "wrong": 5},
            threshold="#wrong > 0 or Out of bounds values FAILED",
            next_step=next_step,
            handoff="hyperpod-node-debugger § G",
        ),
        finding(
            "nccl.correctness",
            "CONCERN",
            "n0__n2.log: nccl-tests reported wrong results (out-of-bounds values FAILED)",
            evidence={"source": "n0__n2.log", "a": "n0", "b": "n2", "wrong": 0},
            threshold="#wrong > 0 or Out of bounds values FAILED",
            next_step=next_step,
            handoff="hyperpod-node-debugger § G",
        ),
    ]


def test_all_validated_runs_say_no_wrong_results_without_a_note():
    analysis = analyze_measurements([m("n0", "n1", 100.0, wrong=0), m("n0", "n2", 100.0, wrong=0)])
    assert dumped(analysis.findings, "nccl.correctness") == [
        finding(
            "nccl.correctness",
            "OK",
            "no wrong results in 2 runs",
            evidence={"runs": 2, "without_validation": 0},
        )
    ]


def test_missing_pairs_coverage_lists_at_most_a_hundred():
    # Given 16 expected nodes (120 pairs) and one measured pair: 119 missing, the first 100 listed
    nodes = [f"n{i:02d}" for i in range(16)]
    analysis = analyze_measurements([m("n00", "n01", 100.0)], expected_nodes=nodes)
    (coverage,) = dumped(analysis.findings, "nccl.coverage")
    expected_missing = [[a, b] for a, b in combinations(nodes, 2) if (a, b) != ("n00", "n01")][:100]
    assert coverage == finding(
        "nccl.coverage",
        "INFO",
        "119 of 120 node pairs not measured",
        evidence={
            "nodes": 16,
            "pairs_expected": 120,
            "pairs_measured": 1,
            "missing": 119,
            "missing_listed": expected_missing,
            "logs_without_hosts": 0,
        },
        next_step="Run the missing pairs (hyperpod-perf nccl plan) and name logs <hostA>__<hostB>.log.",
    )
    assert analysis.to_dict()["missing_pairs"] == {"count": 119, "listed": expected_missing}


def test_missing_pairs_and_hostless_logs_in_one_coverage_note():
    analysis = analyze_measurements(
        [m("a", "b", 100.0), PairMeasurement(100.0, "run.log")], expected_nodes=["a", "b", "c"]
    )
    (coverage,) = dumped(analysis.findings, "nccl.coverage")
    assert coverage["summary"] == (
        "2 of 3 node pairs not measured; 1 logs name no host pair (neither rank lines nor <hostA>__<hostB> "
        "file name)"
    )
    assert coverage["evidence"]["missing_listed"] == [["a", "c"], ["b", "c"]]


def test_log_notes_unusable_not_ranked_and_truncated():
    # Given an unusable log with problems, an empty one, a truncated one and one cut short (ranked out)
    logs = [
        LogReport("x__y.log", 0, problems=["no table", "NCCL WARN"]),
        LogReport("x__z.log", 0),
        LogReport("a__c.log", 1, problems=["no summary"], truncated=True),
        LogReport("b__c.log", 1, problems=["table stops at 512 B of maxBytes 1024 B"]),
    ]
    measurements = [
        PairMeasurement(100.0, "a__b.log", "a", "b", sizes=((1024, 100.0),), complete=True),
        PairMeasurement(100.0, "a__c.log", "a", "c", sizes=((1024, 100.0),), complete=None),
        PairMeasurement(10.0, "b__c.log", "b", "c", sizes=((512, 10.0),), complete=False),
    ]
    analysis = analyze_measurements(measurements, logs=logs)
    assert dumped(analysis.findings, "nccl.log") == [
        finding(
            "nccl.log",
            "CONCERN",
            "x__y.log: no bandwidth could be read (no table; NCCL WARN)",
            evidence={"source": "x__y.log", "problems": ["no table", "NCCL WARN"]},
            next_step="Re-run this pair; check the job's stderr for NCCL errors or a timeout.",
        ),
        finding(
            "nccl.log",
            "CONCERN",
            "x__z.log: no bandwidth could be read (empty)",
            evidence={"source": "x__z.log", "problems": []},
            next_step="Re-run this pair; check the job's stderr for NCCL errors or a timeout.",
        ),
        finding(
            "nccl.log",
            "INFO",
            "a__c.log: no summary line; its rows are compared at the size every log reached",
            evidence={"source": "a__c.log", "problems": ["no summary"]},
            next_step="Re-run this pair if its figure matters: the job may have been cut short.",
        ),
        finding(
            "nccl.log",
            "INFO",
            "b__c.log: not ranked (table stops at 512 B, before its maxBytes: cut short)",
            evidence={
                "source": "b__c.log",
                "problems": ["table stops at 512 B of maxBytes 1024 B"],
                "not_ranked": "table stops at 512 B, before its maxBytes: cut short",
            },
            next_step="Re-run this pair to the same maximum size (-e) as the others.",
        ),
    ]
    assert analysis.to_dict()["unusable_logs"] == [
        {"source": "x__y.log", "problems": ["no table", "NCCL WARN"]},
        {"source": "x__z.log", "problems": []},
    ]


def test_nothing_measured_gives_only_the_log_notes():
    analysis = analyze_measurements([], logs=[LogReport("x__y.log", 0)])
    assert [f["check"] for f in dumped(analysis.findings)] == ["nccl.log"]
    assert analysis.mean is None and analysis.to_dict()["mean"] is None


def test_logs_with_no_shared_size_are_flagged_and_compared_at_their_own_sizes():
    measurements = [m("a", "b", 100.0, size=GIB), m("a", "c", 120.0, size=2 * GIB)]
    analysis = analyze_measurements(measurements)
    assert analysis.mixed_sizes is True and analysis.compared_at_bytes is None
    assert dumped(analysis.findings)[0] == finding(
        "nccl.log",
        "INFO",
        "the logs share no message size: each pair's figure is taken at its own largest sizes, so pairs "
        "measured to different sizes are not comparable",
        evidence={"compared_at_bytes": None},
        next_step="Re-run every pair with the same -b/-e/-f sweep.",
    )


def test_pairs_reading_zero_give_a_zero_median_and_drain_level():
    # Given 3 nodes: n0-n1 and n0-n2 read 0 GB/s, n1-n2 100: mean 33.3 (slow below 31.7), median 0,
    # drain level 0 -> n0 is named (median 0 vs 100), not a drain candidate (0 is not below 0)
    analysis = analyze_measurements(matrix(3, lambda i, j: 0.0 if i == 0 else 100.0))
    summary = dumped(analysis.findings, "nccl.pair_slow")[0]
    assert {k: summary["evidence"][k] for k in ("mean_gbps", "median_gbps", "drain_level_gbps")} == {
        "mean_gbps": 33.333,
        "median_gbps": 0.0,
        "drain_level_gbps": 0.0,
    }
    assert [(s.node, s.median_gbps, s.others_median_gbps, s.drain_candidate) for s in analysis.suspects] == [
        ("n0", 0.0, 100.0, False)
    ]


def test_a_healthy_matrix_names_no_node_and_the_slow_link_evidence_is_rounded_to_three_decimals():
    healthy = analyze_measurements(matrix(3, lambda i, j: 100.0))
    assert dumped(healthy.findings, "nccl.node_suspect") == [
        finding("nccl.node_suspect", "OK", "no node is common to slow pairs", threshold=SUSPECT_THRESHOLD)
    ]
    # Given one slow link at 50.25037 GB/s among 4 nodes (4th decimal set)
    link = analyze_measurements(matrix(4, lambda i, j: 50.25037 if (i, j) == (0, 1) else 100.0))
    assert dumped(link.findings, "nccl.pair_slow")[1]["evidence"]["busbw_gbps"] == 50.25


def test_several_other_collectives_are_all_named():
    measurements = [
        m("n0", "n1", 75.0, collective="reduce_scatter_perf"),
        m("n0", "n2", 75.0, collective="all_gather_perf"),
        m("n1", "n2", 75.0, collective="all_reduce_perf"),
    ]
    analysis = analyze_measurements(measurements, instance_type="p5.48xlarge")
    (baseline,) = dumped(analysis.findings, "nccl.below_baseline")
    assert baseline["summary"] == (
        "published expectations are for all_reduce; these logs ran all_gather_perf, all_reduce_perf, "
        "reduce_scatter_perf"
    )
    assert baseline["evidence"]["collectives"] == [
        "all_gather_perf",
        "all_reduce_perf",
        "reduce_scatter_perf",
    ]


def test_exactly_one_missing_pair_is_listed():
    analysis = analyze_measurements([m("a", "b", 100.0), m("a", "c", 100.0)])
    (coverage,) = dumped(analysis.findings, "nccl.coverage")
    assert coverage["summary"] == "1 of 3 node pairs not measured"
    assert coverage["evidence"]["missing_listed"] == [["b", "c"]]
