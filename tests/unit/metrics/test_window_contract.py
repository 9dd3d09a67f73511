"""The metrics window: its step, its rate range, and a grid the answer's timestamps land on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hyperpod_perf.metrics.model import MetricsWindow

END = datetime(2026, 12, 3, 6, 42, 9, 513565, tzinfo=UTC)


def test_a_run_started_mid_second_gives_a_whole_second_grid_the_answer_lands_on():
    # Given a run that started at 06:42:09.513565 (the state machine's start time)
    window = MetricsWindow.around(END - timedelta(minutes=60), END, baseline_minutes=60)
    grid = window.grid()
    # Then the grid is on whole seconds, and Prometheus' millisecond timestamps map to its steps
    assert window.end == END.replace(microsecond=0)
    assert grid.first == datetime(2026, 12, 3, 4, 42, 9, tzinfo=UTC).timestamp()
    assert grid.index(grid.first + 60.001) == 1
    assert grid.index(grid.first + 90) is None  # between two steps: not a point of this query


@pytest.mark.parametrize(
    ("window_minutes", "baseline", "step", "rate_range"),
    [(60, 60, 60, 240), (180, 180, 90, 240), (15, 30, 60, 240), (24 * 60, 180, 405, 405)],
)
def test_step_is_the_scrape_interval_or_coarser_and_rate_covers_a_step_and_four_scrapes(
    window_minutes, baseline, step, rate_range
):
    window = MetricsWindow.around(END - timedelta(minutes=window_minutes), END, baseline_minutes=baseline)
    assert (window.step_seconds, window.rate_range_seconds) == (step, rate_range)
    assert window.grid().size <= 2 * 120


def test_a_window_without_a_time_zone_or_out_of_order_is_refused():
    with pytest.raises(ValueError, match="time zone"):
        naive = datetime(2026, 1, 1)
        MetricsWindow(start=naive, end=END, baseline_start=naive, baseline_end=naive, step_seconds=60)
    with pytest.raises(ValueError, match="baseline_start <= baseline_end <= start < end"):
        MetricsWindow(start=END, end=END, baseline_start=END, baseline_end=END, step_seconds=60)


@pytest.mark.parametrize(
    ("baseline", "stride", "readings"),
    # 3 h window at 90 s after a 3 h baseline: 120 baseline steps, every 4th read (30 points);
    # a 60-minute baseline at 60 s: every 2nd; a 30-minute one: every step, one query for it all
    [(180, 4, [(0, 119 - 3, 360), (120, 239, 90)]), (60, 2, None), (30, 1, None)],
)
def test_the_baseline_is_read_at_a_stride_keeping_30_points_and_the_window_at_every_step(
    baseline, stride, readings
):
    window = MetricsWindow.around(END - timedelta(minutes=180), END, baseline_minutes=baseline)
    grid = window.grid()
    assert grid.baseline_stride == stride
    assert len(grid.baseline_indices()) >= 30
    parts = grid.readings()
    if stride == 1:
        assert [(p.start, p.end, p.step) for p in parts] == [(grid.first, grid.last, grid.step)]
    else:
        assert parts[-1].start == grid.timestamp(grid.window_from) and parts[-1].step == grid.step
    if readings:
        expected = [(grid.timestamp(a), grid.timestamp(b), step) for a, b, step in readings]
        assert [(p.start, p.end, p.step) for p in parts] == expected
