"""The metrics rules over aligned series: each flags what lasts, at its threshold's boundary.

Grid: a 10-minute baseline and a 30-minute window at 60 s steps (10:00-10:10, 10:10-10:40 UTC).
Every fleet has five nodes unless a test says otherwise; values are the rules' inputs as the
service places them (per node, per step), so each expectation is computed by hand from them.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.metrics.judge import flagged_spans, judge
from hyperpod_perf.metrics.model import FleetSeries, Grid
from hyperpod_perf.rules.thresholds import Thresholds

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC).timestamp()
BASE, WINDOW = 10, 30
GRID = Grid(first=T0, last=T0 + (BASE + WINDOW - 1) * 60, step=60, window_first=T0 + BASE * 60)
NODES = ("n1", "n2", "n3", "n4", "n5")
T = Thresholds()


def flat(value: float) -> list[float | None]:
    return [value] * GRID.size


def with_window(base: float, value: float, first: int, last: int) -> list[float | None]:
    """`base` everywhere, `value` on window steps first..last (0-based within the window)."""
    values = flat(base)
    for i in range(BASE + first, BASE + last + 1):
        values[i] = value
    return values


def fleet(**signals: dict[str, list[float | None]]) -> FleetSeries:
    return FleetSeries(grid=GRID, values=dict(signals))


def healthy(signal: str, value: float, **odd: list[float | None]) -> dict[str, list[float | None]]:
    series = {n: flat(value) for n in NODES}
    series.update(odd)
    return series


def checks(series: FleetSeries, thresholds: Thresholds = T) -> list[tuple[str | None, str, Severity]]:
    """What the rules flagged (their cluster-level OKs, what was ruled out, are tested apart)."""
    return [
        (f.node, f.check, f.severity)
        for f in judge(series, thresholds).findings
        if f.severity is not Severity.OK
    ]


def test_a_rule_with_series_that_flags_nothing_rules_its_cause_out_for_the_window():
    # Given five nodes whose clocks all sit at 1980 MHz, and the same with n3 35 % low
    calm = fleet(sm_clock=healthy("sm_clock", 1980.0))
    low = fleet(sm_clock=healthy("sm_clock", 1980.0, n3=with_window(1980.0, 1287.0, 5, 24)))
    # Then the calm fleet gets one cluster-level OK naming the window and the nodes with series
    (ok,) = [f for f in judge(calm, T).findings if f.severity is Severity.OK]
    assert (ok.node, ok.check) == (None, "metrics.gpu_clock")
    assert ok.summary.startswith("no node's busy GPUs clocked below the fleet for >= 5 min in the window (")
    assert ok.summary.endswith("; 5 of 5 nodes with series)")
    assert ok.evidence["series"] == ["DCGM_FI_DEV_SM_CLOCK"]
    # and a rule that flagged a node rules nothing out
    assert not [
        f for f in judge(low, T).findings if f.severity is Severity.OK and f.check == "metrics.gpu_clock"
    ]
    # and a signal with no series rules nothing out (metrics.coverage reports it instead)
    assert {f.check for f in judge(calm, T).findings} == {"metrics.gpu_clock"}


def test_spans_are_runs_of_flags_within_the_indices():
    flags = [False, True, True, False, True, True, True]
    assert [(s.first, s.last) for s in flagged_spans(flags, range(1, 7))] == [(1, 2), (4, 6)]


def test_clock_35_percent_below_the_fleet_for_20_minutes_names_node_minutes_and_cause():
    # Given n3's clock at 1287 MHz (0.65 x 1980) for window minutes 5-24, its power violation counter at 80 %
    series = fleet(
        sm_clock=healthy("sm_clock", 1980.0, n3=with_window(1980.0, 1287.0, 5, 24)),
        power_violation=healthy("power_violation", 0.0, n3=with_window(0.0, 0.8, 5, 24)),
        clock_reasons=healthy("clock_reasons", 0.0, n3=with_window(0.0, 4.0, 5, 24)),
    )
    [finding] = judge(series, T).findings
    assert (finding.node, finding.check, finding.severity) == ("n3", "metrics.gpu_clock", Severity.CONCERN)
    assert finding.summary == (
        "SM clock 35 % below the fleet for 20 min (10:15-10:35 UTC), "
        "power-capped 80 % of the time and clock event: software power cap"
    )
    assert finding.evidence["slowest_gpu_clock_mhz"] == 1287
    assert finding.evidence["fleet_median_mhz"] == 1980
    assert finding.evidence["from"] == "2026-12-01T10:15:00Z" and finding.evidence["minutes"] == 20
    assert finding.evidence["series"] == "DCGM_FI_DEV_SM_CLOCK"


@pytest.mark.parametrize(
    ("clock", "flagged"),
    [(1980.0 * 0.85, False), (1980.0 * 0.85 - 1, True)],
    ids=["at-the-ratio", "just-below"],
)
def test_clock_ratio_boundary(clock, flagged):
    series = fleet(sm_clock=healthy("sm_clock", 1980.0, n1=with_window(1980.0, clock, 0, 29)))
    assert checks(series) == ([("n1", "metrics.gpu_clock", Severity.CONCERN)] if flagged else [])


@pytest.mark.parametrize(("minutes", "flagged"), [(4, False), (5, True)], ids=["4-min", "5-min"])
def test_a_deviation_must_last_min_minutes(minutes, flagged):
    series = fleet(sm_clock=healthy("sm_clock", 1980.0, n2=with_window(1980.0, 1000.0, 3, 3 + minutes - 1)))
    assert bool(checks(series)) is flagged


def test_low_clock_on_an_idle_gpu_is_not_a_throttle():
    # Given n4 idle (utilisation 0) with its clock down: idle GPUs clock down by design
    series = fleet(
        sm_clock=healthy("sm_clock", 1980.0, n4=with_window(1980.0, 345.0, 0, 29)),
        gpu_util=healthy("gpu_util", 97.0, n4=with_window(97.0, 0.0, 0, 29)),
    )
    found = checks(series)
    assert ("n4", "metrics.gpu_clock", Severity.CONCERN) not in found
    assert found == [("n4", "metrics.gpu_idle", Severity.CONCERN)]  # idle while the fleet runs


def test_with_two_nodes_the_reference_is_the_nodes_own_baseline():
    two = {"a": with_window(1980.0, 1200.0, 10, 29), "b": flat(1980.0)}
    [finding] = judge(fleet(sm_clock=two), T).findings
    assert finding.node == "a" and "below its own baseline for 20 min" in finding.summary


def test_every_busy_node_idle_at_once_is_one_hang_finding():
    util = {n: with_window(97.0, 1.0, 8, 19) for n in NODES}
    util["spare"] = flat(0.0)  # idle in the baseline too: not in the job, not counted
    [finding] = judge(fleet(gpu_util=util), T).findings
    assert (finding.node, finding.check) == (None, "metrics.gpu_idle")
    assert finding.summary.startswith("every GPU of the job idle for 12 min (10:18-10:30 UTC) on 5 node(s)")
    assert finding.evidence["baseline_util_pct"] == 97.0


def test_xid_new_in_the_window_is_a_concern_held_from_before_is_info():
    xid = {n: flat(0.0) for n in NODES}
    xid["n1"] = with_window(0.0, 79.0, 12, 29)
    xid["n2"] = flat(48.0)
    found = judge(fleet(xid=xid), T).findings
    assert [(f.node, f.severity, f.evidence["codes"]) for f in found] == [
        ("n1", Severity.CONCERN, [79]),
        ("n2", Severity.INFO, [48]),
    ]
    assert found[0].summary == "Xid 79 (GPU has fallen off the bus) during the window (first at 10:22 UTC)"


def test_efa_retransmits_at_ten_times_the_fleet_and_above_the_floor():
    retrans = healthy("efa_retrans", 2.0, n5=with_window(2.0, 20.0, 0, 29), n4=with_window(2.0, 19.9, 0, 29))
    assert checks(fleet(efa_retrans=retrans)) == [("n5", "metrics.efa_retransmits", Severity.CONCERN)]


def test_efa_retransmits_below_the_noise_floor_are_not_flagged():
    retrans = healthy("efa_retrans", 0.0, n1=with_window(0.0, 0.9, 0, 29))
    assert checks(fleet(efa_retrans=retrans)) == []


def test_iowait_on_most_nodes_is_one_fleet_finding_on_one_node_a_node_finding():
    most = {n: with_window(1.0, 45.0, 0, 29) for n in NODES[:3]} | {n: flat(1.0) for n in NODES[3:]}
    [shared] = judge(fleet(iowait=most), T).findings
    assert (shared.node, shared.check) == (None, "metrics.iowait")
    assert "on 3 of 5 nodes" in shared.summary
    one = healthy("iowait", 1.0, n2=with_window(1.0, 20.5, 0, 29))
    assert checks(fleet(iowait=one)) == [("n2", "metrics.iowait", Severity.CONCERN)]
    at_limit = healthy("iowait", 1.0, n2=with_window(1.0, 20.0, 0, 29))
    assert checks(fleet(iowait=at_limit)) == []


def test_network_far_below_the_fleet_while_the_fleet_moves_data():
    moving = healthy("efa_bytes", 4e9, n1=with_window(4e9, 1e9, 0, 29))
    assert checks(fleet(efa_bytes=moving)) == [("n1", "metrics.network_low", Severity.CONCERN)]
    quiet = healthy(
        "efa_bytes", 5e5, n1=with_window(5e5, 1e3, 0, 29)
    )  # fleet below 1 MB/s: nothing to compare
    assert checks(fleet(efa_bytes=quiet)) == []


def test_pcie_replays_above_dcgms_limit():
    replay = healthy("pcie_replay", 0.0, n3=with_window(0.0, 8.5, 0, 29), n2=with_window(0.0, 8.0, 0, 29))
    assert checks(fleet(pcie_replay=replay)) == [("n3", "metrics.pcie_replay", Severity.CONCERN)]


def test_hot_gpu_at_the_limit_is_flagged():
    temps = healthy("gpu_temp", 60.0, n1=with_window(60.0, 88.0, 0, 9), n2=with_window(60.0, 87.9, 0, 29))
    [finding] = judge(fleet(gpu_temp=temps), T).findings
    assert (finding.node, finding.evidence["peak_c"], finding.evidence["minutes"]) == ("n1", 88.0, 10)


def test_slurm_drained_in_the_window():
    states = {n: ["allocated"] * GRID.size for n in NODES}
    states["n2"] = ["allocated"] * (BASE + 20) + ["drained"] * 10
    series = FleetSeries(grid=GRID, states=states)
    [finding] = judge(series, T).findings
    assert (finding.node, finding.check, finding.evidence["state"]) == (
        "n2",
        "metrics.slurm_state",
        "drained",
    )
    assert finding.summary == "Slurm had it drained for 10 min (10:30-10:40 UTC)"


def test_thresholds_override_changes_the_verdict():
    series = fleet(sm_clock=healthy("sm_clock", 1980.0, n1=with_window(1980.0, 1600.0, 0, 29)))  # 0.81
    assert checks(series) == [("n1", "metrics.gpu_clock", Severity.CONCERN)]
    assert checks(series, Thresholds(metrics_clock_low_ratio=0.8)) == []


def test_a_chart_per_finding_node_against_fleet_median():
    series = fleet(sm_clock=healthy("sm_clock", 1980.0, n3=with_window(1980.0, 1000.0, 0, 29)))
    [chart] = judge(series, T).charts
    assert chart["node"] == "n3" and chart["unit"] == "MHz"
    assert len(chart["times"]) == GRID.size == 40  # under 60 points: every step kept
    assert chart["node_values"][BASE] == 1000.0 and chart["fleet_median"][BASE] == 1980.0
