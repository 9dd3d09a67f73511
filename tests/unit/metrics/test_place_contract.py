"""Placing a range query's series on the grid: whole on-grid series at once, anything else point by point.

Grid: 10:00-10:09 UTC at 60 s steps (10 steps). Prometheus answers a range query at exactly
start + k x step and omits the steps where a series has no sample (Prometheus docs, "HTTP API",
range queries), so an answer is a slice of the grid, a slice with holes, or (from a source that is
not Prometheus) off the grid. Each expectation is the grid position of each sample, by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hyperpod_perf.aws.prometheus import RangeSeries
from hyperpod_perf.metrics.model import FleetSeries, Grid
from hyperpod_perf.metrics.nodes import NodeIndex
from hyperpod_perf.metrics.signals import BY_NAME
from hyperpod_perf.service.metrics import _place

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC).timestamp()
GRID = Grid(first=T0, last=T0 + 9 * 60, step=60, window_first=T0 + 5 * 60)


def at(*steps: float) -> list[float]:
    return [T0 + 60 * s for s in steps]


def series(node: str, times: list[float], values: list[float]) -> RangeSeries:
    return RangeSeries({"Hostname": node}, times, values)


def placed(signal: str, *answer: RangeSeries) -> tuple[FleetSeries, list[str], int]:
    fleet, unmatched = FleetSeries(grid=GRID), []
    count = _place(BY_NAME[signal], list(answer), GRID, NodeIndex(), fleet, unmatched)
    return fleet, unmatched, count


def test_a_whole_series_on_the_grid_fills_every_step():
    fleet, unmatched, count = placed("sm_clock", series("n1", at(*range(10)), [float(v) for v in range(10)]))
    assert fleet.values["sm_clock"]["n1"] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    assert (unmatched, count) == ([], 1)


def test_a_series_that_starts_late_fills_from_its_first_step():
    fleet, _, _ = placed("sm_clock", series("n1", at(3, 4, 5), [30.0, 40.0, 50.0]))
    assert fleet.values["sm_clock"]["n1"] == [None, None, None, 30.0, 40.0, 50.0, None, None, None, None]


def test_holes_in_a_series_stay_empty():
    fleet, _, _ = placed("sm_clock", series("n1", at(0, 1, 4, 9), [1.0, 2.0, 5.0, 10.0]))
    assert fleet.values["sm_clock"]["n1"] == [1.0, 2.0, None, None, 5.0, None, None, None, None, 10.0]


def test_samples_off_the_grid_or_outside_it_are_dropped():
    # 0.5 of a step off; one step before the grid; one after it; within 1 % of step 2: kept there
    times = [T0 + 30, T0 - 60, T0 + 600, T0 + 120.3]
    fleet, _, _ = placed("sm_clock", series("n1", times, [1.0, 2.0, 3.0, 4.0]))
    assert fleet.values["sm_clock"]["n1"] == [None, None, 4.0, None, None, None, None, None, None, None]


def test_a_series_running_past_the_grid_keeps_the_steps_on_it():
    fleet, _, _ = placed("sm_clock", series("n1", at(8, 9, 10, 11), [8.0, 9.0, 10.0, 11.0]))
    assert fleet.values["sm_clock"]["n1"][7:] == [None, 8.0, 9.0]
    assert len(fleet.values["sm_clock"]["n1"]) == GRID.size


def test_summed_counters_add_per_step_and_a_counter_one_node_lacks_leaves_the_other():
    # efa_bytes is tx + rx, one query each: n1 has both, n2 only tx; n1's rx starts at step 5
    fleet, _, count = placed(
        "efa_bytes",
        series("n1", at(*range(10)), [1.0] * 10),
        series("n2", at(*range(10)), [2.0] * 10),
        series("n1", at(*range(5, 10)), [10.0] * 5),
    )
    assert fleet.values["efa_bytes"]["n1"] == [1.0] * 5 + [11.0] * 5
    assert fleet.values["efa_bytes"]["n2"] == [2.0] * 10
    assert count == 3


def test_summed_counters_with_holes_add_where_both_have_a_sample():
    fleet, _, _ = placed(
        "efa_bytes",
        series("n1", at(0, 1, 2), [1.0, 1.0, 1.0]),
        series("n1", at(1, 3), [5.0, 5.0]),
    )
    assert fleet.values["efa_bytes"]["n1"][:4] == [1.0, 6.0, 1.0, 5.0]


def test_two_series_of_one_node_for_a_level_keep_the_first_answer():
    # a node matched twice (two label spellings of one host): the first series wins at each step
    fleet, _, count = placed(
        "sm_clock",
        series("n1", at(0, 1, 2), [1.0, 1.0, 1.0]),
        series("n1", at(*range(10)), [7.0] * 10),
    )
    assert fleet.values["sm_clock"]["n1"] == [1.0, 1.0, 1.0] + [7.0] * 7
    assert count == 2


def test_a_series_no_label_names_is_unmatched_not_placed():
    fleet, unmatched, count = placed("sm_clock", RangeSeries({"job": "dcgm"}, at(0), [1.0]))
    assert (fleet.values, unmatched, count) == ({}, ["job=dcgm"], 0)
