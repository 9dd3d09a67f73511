"""The analysis's JSON export at full precision (reviewed): every figure rounded to 3 decimals, each
suspect and slow pair as the reports read them; and the analysis leaves the garbage collector as it
found it (it pauses it while building ~10^5 objects)."""

from __future__ import annotations

import gc
from itertools import combinations

from hyperpod_perf.nccl.analysis import PairMeasurement, analyze_measurements


def test_json_export_rounds_every_figure_to_three_decimals():
    # Given 4 nodes: n0's pairs at 60.25037 GB/s, the others at 100.25037 (the 4th decimal rounds down)
    measurements = [
        PairMeasurement(60.25037 if i == 0 else 100.25037, f"n{i}__n{j}.log", f"n{i}", f"n{j}")
        for i, j in combinations(range(4), 2)
    ]
    analysis = analyze_measurements(measurements)
    exported = analysis.to_dict()
    # mean 80.25037, median 80.25037, slow below 76.2378515 (0.95 x), drain level 64.200296 (0.8 x)
    assert exported["pairs"][0] == {
        "a": "n0",
        "b": "n1",
        "busbw_gbps": 60.25,
        "runs": 1,
        "sources": ["n0__n1.log"],
    }
    assert (exported["mean"], exported["median"]) == (80.25, 80.25)
    assert (exported["slow_threshold_gbps"], exported["drain_level_gbps"]) == (76.238, 64.2)
    assert exported["slow_pairs"][0] == {"a": "n0", "b": "n1", "busbw_gbps": 60.25, "below_drain_level": True}
    assert exported["suspects"] == [
        {
            "node": "n0",
            "slow_pairs": 3,
            "pairs": 3,
            "median_gbps": 60.25,
            "others_median_gbps": 100.25,
            "drain_candidate": True,
        }
    ]
    (summary,) = [f for f in analysis.findings if f.check == "nccl.pair_slow"]
    assert {
        k: summary.evidence[k]
        for k in ("mean_gbps", "median_gbps", "slow_threshold_gbps", "drain_level_gbps")
    } == {
        "mean_gbps": 80.25,
        "median_gbps": 80.25,
        "slow_threshold_gbps": 76.238,
        "drain_level_gbps": 64.2,
    }
    assert summary.evidence["slowest"][0] == {
        "a": "n0",
        "b": "n1",
        "busbw_gbps": 60.25,
        "sources": ["n0__n1.log"],
    }
    assert (exported["instance_type"], exported["expected_busbw_gbps"], exported["compared_at_bytes"]) == (
        None,
        None,
        None,
    )


def test_the_garbage_collector_is_paused_during_the_analysis_and_restored_after():
    seen = []

    def measurements():
        seen.append(gc.isenabled())
        yield PairMeasurement(100.0, "a__b.log", "a", "b")

    assert gc.isenabled()
    analyze_measurements(measurements())
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        analyze_measurements(measurements())
        assert not gc.isenabled()
    finally:
        gc.enable()
