"""The demo's FSx load: the alarm's last minutes at the alarm's level, the window's mean kept."""

from __future__ import annotations

import pytest

from hyperpod_perf_dev.sim.lustre_osts import alarm_tail_load

PROVISIONED = 1200e6


def _utilisation(samples):
    return [(r + w) / PROVISIONED for r, w in samples]


@pytest.mark.parametrize("utilization", [0.35, 0.97])
def test_the_tail_is_at_the_alarm_level_and_the_mean_is_the_scenarios(utilization):
    u = _utilisation(alarm_tail_load(180, PROVISIONED, utilization, tail_minutes=15, tail_utilization=0.93))

    assert len(u) == 180
    assert sum(u) / len(u) == pytest.approx(utilization, abs=1e-9)
    assert min(u[-15:]) >= 0.92 and sum(u[-15:]) / 15 == pytest.approx(0.93)


def test_without_a_tail_it_is_the_plain_load():
    from hyperpod_perf_dev.sim.lustre_load import lustre_load

    assert alarm_tail_load(60, PROVISIONED, 0.5, tail_minutes=0, tail_utilization=0.9) == lustre_load(
        60, PROVISIONED, 0.5
    )
