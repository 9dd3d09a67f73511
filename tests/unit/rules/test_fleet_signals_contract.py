"""Fleet signals per node (reviewed): which GPUs count as loaded (utilization >= 50 %, else draw >= 30 %
of the power limit) at and around both limits, the lowest loaded clock and the hottest GPU, the EFA
error total on the collector's fast path and the full parser, versions and identity from meta."""

from __future__ import annotations

import pytest

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.rules.fleet_signals import (
    EFA_ERRORS,
    LOADED_POWER_SHARE,
    LOADED_UTILIZATION_PCT,
    SIGNALS,
    SM_CLOCK,
    TEMPERATURE,
    Direction,
    NodeSignals,
    extract,
)
from hyperpod_perf.rules.thresholds import Thresholds

HEADER = "index, temperature.gpu, clocks.sm [MHz], power.draw [W], power.limit [W], utilization.gpu [%]\n"
META = "hostname=ip-10-1-2-3\ninstance_id=i-0a1b2c3d4e5f60001\ninstance_type=ml.p5.48xlarge\n"


def snapshot(*sections: tuple[str, str, int], meta: str = META):
    return parse_container(render_container([("meta", meta, 0), *sections]), "node.txt")


def gpu(
    index: int, temp: str, clock: str, draw: str = "[N/A]", limit: str = "[N/A]", util: str = "[N/A]"
) -> str:
    return f"{index}, {temp}, {clock} MHz, {draw}, {limit}, {util}\n"


def test_the_three_signals_and_their_direction():
    assert [(s.name, s.unit, s.direction) for s in SIGNALS] == [
        ("gpu.sm_clock_under_load_mhz", "MHz", Direction.LOW_IS_BAD),
        ("gpu.temperature_max_c", "C", Direction.HIGH_IS_BAD),
        ("efa.error_counters_total", "events", Direction.HIGH_IS_BAD),
    ]
    assert (LOADED_UTILIZATION_PCT, LOADED_POWER_SHARE) == (50.0, 0.3)


@pytest.mark.parametrize(
    ("util", "loaded"),
    [("49 %", False), ("50 %", True), ("51 %", True)],
    ids=["just-below", "at-limit", "just-above"],
)
def test_utilization_limit_decides_which_clock_counts(util, loaded):
    # Given GPU 1 clocked down at the given utilization, GPU 0 fully loaded at 1980 MHz
    query = HEADER + gpu(0, "60", "1980", util="100 %") + gpu(1, "70", "1200", util=util)
    signals = extract(snapshot(("gpu-query", query, 0)))
    assert signals.values == {SM_CLOCK.name: 1200.0 if loaded else 1980.0, TEMPERATURE.name: 70.0}


@pytest.mark.parametrize(
    ("draw", "loaded"),
    [("209.00 W", False), ("210.00 W", True), ("211.00 W", True)],
    ids=["just-below", "at-limit", "just-above"],
)
def test_power_share_limit_decides_when_utilization_is_not_reported(draw, loaded):
    # Given a 700 W limit: 30 % is 210 W
    query = HEADER + gpu(0, "60", "1980", "700.00 W", "700.00 W") + gpu(1, "59", "1200", draw, "700.00 W")
    signals = extract(snapshot(("gpu-query", query, 0)))
    assert signals.values == {SM_CLOCK.name: 1200.0 if loaded else 1980.0, TEMPERATURE.name: 60.0}


def test_without_any_load_figure_the_clock_counts_as_it_is():
    # Given no utilization and no power limit (draw alone says nothing): taken as loaded
    query = HEADER + gpu(0, "60", "1980") + gpu(1, "61", "1410", draw="100.00 W")
    assert extract(snapshot(("gpu-query", query, 0))).values[SM_CLOCK.name] == 1410.0


def test_no_loaded_gpu_and_no_temperature_give_no_gpu_signal():
    query = HEADER + gpu(0, "[N/A]", "1980", util="0 %")
    assert extract(snapshot(("gpu-query", query, 0))).values == {}


@pytest.mark.parametrize("rc", [1, 124])
def test_failed_sections_give_no_signal(rc):
    query = HEADER + gpu(0, "60", "1980")
    counters = "rdmap79s0 rx_drops 5\n"
    signals = extract(
        snapshot(("gpu-query", query, rc), ("efa-counters", counters, rc), ("versions", "nccl=2.21.5\n", rc))
    )
    assert (signals.values, signals.versions) == ({}, {})


def test_garbled_gpu_query_gives_no_signal():
    assert extract(snapshot(("gpu-query", "Failed to initialize NVML: Unknown Error\n", 0))).values == {}


def test_efa_fast_path_sums_only_the_watched_counters_on_whole_triples():
    # Given collector triples: two watched counters non-zero, an unwatched one large, a counter whose
    # name only contains a watched one, and a negative value
    text = (
        "rdmap79s0 rx_drops 5\n"
        "rdmap79s0 tx_pkts 123456\n"
        "rdmap79s0 retrans_timeout_events 3\n"
        "rdmap80s0 rx_drops -1\n"
        "rdmap80s0 x_rx_drops 100\n"
        "rdmap80s0 rx_drops 7"
    )
    signals = extract(snapshot(("efa-counters", text, 0)))
    assert signals.values == {EFA_ERRORS.name: 14.0}
    # and the counter list is the thresholds' one
    only_retrans = Thresholds(efa_error_counters=("retrans_timeout_events",))
    assert extract(snapshot(("efa-counters", text, 0)), thresholds=only_retrans).values == {
        EFA_ERRORS.name: 3.0
    }


def test_efa_fast_path_skips_a_line_that_is_not_a_triple():
    text = "rdmap79s0 rx_drops 5\nnote rx_drops were 9 yesterday\nrdmap79s0 rx_drops x\n"
    assert extract(snapshot(("efa-counters", text, 0))).values == {EFA_ERRORS.name: 5.0}


def test_efa_single_line_and_blank_sections():
    assert extract(snapshot(("efa-counters", "  \nrdmap79s0 rx_drops 2", 0))).values == {EFA_ERRORS.name: 2.0}
    assert extract(snapshot(("efa-counters", "\n\n", 0))).values == {}


def test_efa_other_shapes_go_through_the_full_parser():
    # Given the `grep .` form over sysfs (not triples), and a garbled section
    grep = (
        "/sys/class/infiniband/rdmap79s0/ports/1/hw_counters/rx_drops:4\n"
        "/sys/class/infiniband/rdmap79s0/ports/1/hw_counters/tx_pkts:900\n"
        "/sys/class/infiniband/rdmap80s0/ports/1/hw_counters/rdma_read_wr_err:1\n"
    )
    assert extract(snapshot(("efa-counters", grep, 0))).values == {EFA_ERRORS.name: 5.0}
    assert extract(snapshot(("efa-counters", "cannot access /sys/class/infiniband\n", 0))).values == {}
    assert extract(snapshot(("efa-counters", "@@ garbage @@\n", 0))).values == {}


def test_identity_and_versions():
    versions = "nccl=2.21.5\ndriver=535.183.01\nefa_installer=\ncuda=  \n"
    signals = extract(snapshot(("versions", versions, 0)))
    assert signals == NodeSignals(
        node="i-0a1b2c3d4e5f60001",
        instance_type="ml.p5.48xlarge",
        group=None,
        values={},
        versions={"nccl": "2.21.5", "driver": "535.183.01"},
    )
    named = extract(snapshot(meta="instance_type=\n"), node="n1", instance_type="ml.p4d.24xlarge", group="w")
    assert (named.node, named.instance_type, named.group) == ("n1", "ml.p4d.24xlarge", "w")
    assert extract(snapshot(meta="instance_type=\n")).instance_type is None
