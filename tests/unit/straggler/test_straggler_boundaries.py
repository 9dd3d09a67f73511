"""Boundary rows for every straggler threshold (rules/thresholds.py): at the limit, just inside,
just outside, and overridden. The timing state is built directly with durations chosen so each
limit is exactly representable (two-rank collectives: mean - shortest = half the gap)."""

from __future__ import annotations

import pytest

from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.rules.thresholds import Thresholds
from hyperpod_perf.straggler import TimingState, straggler_findings
from hyperpod_perf.straggler.model import Identity

CONCERN, OK, INFO = Severity.CONCERN, Severity.OK, Severity.INFO
T = Thresholds
KEY = ("inspector", "0xc0ffee")


def state_with(
    collectives: int, late_in: int, short_us: float = 5000.0, gap_us: float = 2000.0, span_us: float = 60e6
) -> TimingState:
    """Two-rank collectives: rank 1 is the latecomer of `late_in` of them (shortest duration),
    rank 0 of the rest; mean - shortest = gap / 2. Dump times span `span_us`."""
    state = TimingState()
    state.comm(KEY, "world", 2, "inspector")
    ranks = [state.identity(Identity(host=f"ip-10-0-0-{r}", pid=str(100 + r))) for r in range(2)]
    for rank, who in enumerate(ranks):
        state.comm_ranks[(KEY, who)] = rank
    for seq in range(collectives):
        late = ranks[1] if seq < late_in else ranks[0]
        for who in ranks:
            state.add(KEY, seq, who, short_us if who == late else short_us + gap_us)
    state.seen_at(0.0)
    state.seen_at(span_us)
    return state


def judge(state: TimingState, thresholds: Thresholds):
    (finding,) = [f for f in straggler_findings(state, {}, {}, None, thresholds) if "late" in f.summary]
    return finding


@pytest.mark.parametrize(
    ("gap_us", "thresholds", "waited"),
    [
        (2000.0, T(), 20),  # mean - shortest = 1.0 ms: at the limit (>=) -> waited on
        (1998.0, T(), 0),  # 0.999 ms: just inside
        (2002.0, T(), 20),
        (2002.0, T(straggler_min_wait_ms=1.5), 0),  # overridden
        (3000.0, T(straggler_min_wait_ms=1.5), 20),  # at the new limit
    ],
)
def test_min_wait_ms_boundary(gap_us, thresholds, waited):
    finding = judge(state_with(20, 20, gap_us=gap_us), thresholds)
    assert finding.evidence["collectives_waited_on"] == waited


@pytest.mark.parametrize(
    ("ratio", "waited"),
    [(0.125, 20), (0.1251, 0), (0.12, 20)],  # durations 7000/9000 us: (8000 - 7000) / 8000 = 0.125
)
def test_min_wait_ratio_boundary(ratio, waited):
    finding = judge(state_with(20, 20, short_us=7000.0, gap_us=2000.0), T(straggler_min_wait_ratio=ratio))
    assert finding.evidence["collectives_waited_on"] == waited


def four_rank_state(late_in: int, collectives: int = 40) -> TimingState:
    """Four ranks (different hosts): rank 3 is the latecomer of `late_in` collectives, ranks 0-2
    take turns in the rest (each of them less often)."""
    state = TimingState()
    state.comm(KEY, "world", 4, "inspector")
    ranks = [state.identity(Identity(host=f"ip-10-0-0-{r}", pid=str(100 + r))) for r in range(4)]
    for rank, who in enumerate(ranks):
        state.comm_ranks[(KEY, who)] = rank
    for seq in range(collectives):
        late = ranks[3] if seq < late_in else ranks[seq % 3]
        for who in ranks:
            state.add(KEY, seq, who, 5000.0 if who == late else 7000.0)
    state.seen_at(0.0)
    state.seen_at(1e6)
    return state


@pytest.mark.parametrize(
    ("late_in", "thresholds", "named"),
    [
        (20, T(), True),  # 20 of 40 = 0.5: at the share (>=)
        (19, T(), False),  # 0.475: just inside, and no other rank comes near
        (21, T(), True),
        (21, T(straggler_share=0.6), False),  # overridden
        (24, T(straggler_share=0.6), True),  # at the new limit
    ],
)
def test_share_boundary(late_in, thresholds, named):
    finding = judge(four_rank_state(late_in), thresholds)
    assert (finding.evidence.get("culprit", {}).get("ranks") == [3]) is named


@pytest.mark.parametrize(
    ("collectives", "thresholds", "severity"),
    [
        (20, T(), CONCERN),  # at the minimum count
        (19, T(), OK),  # just below: not enough evidence to name anyone
        (21, T(), CONCERN),
        (19, T(straggler_min_collectives=19), CONCERN),  # overridden
    ],
)
def test_min_collectives_boundary(collectives, thresholds, severity):
    # (1 s of dump times: even 19 ms of waiting is above the 1 % CONCERN level)
    assert judge(state_with(collectives, collectives, span_us=1e6), thresholds).severity is severity


@pytest.mark.parametrize(
    ("span_us", "thresholds", "severity"),
    [
        (2e6, T(), CONCERN),  # 20 x 1 ms of waiting over 2 s = 1.0 %: at the limit
        (2.002e6, T(), INFO),  # 0.999 %: named, but INFO
        (1.998e6, T(), CONCERN),
        (2e6, T(straggler_concern_loss_pct=1.5), INFO),
    ],
)
def test_concern_loss_pct_boundary(span_us, thresholds, severity):
    finding = judge(state_with(20, 20, span_us=span_us), thresholds)
    assert finding.severity is severity and finding.evidence["culprit"]["ranks"] == [1]


@pytest.mark.parametrize(
    ("score", "thresholds", "named"),
    [
        (0.75, T(), False),
        (0.74, T(), True),
        (0.76, T(), False),
        (0.76, T(straggler_min_relative_score=0.8), True),
    ],
)
def test_min_relative_score_boundary(score, thresholds, named):
    state = TimingState()
    state.nrx_scores[("relative", 3)] = (score, "node-1", 1)
    state.nrx_scores[("relative", 0)] = (1.0, "node-0", 1)
    (finding,) = straggler_findings(state, {}, {}, None, thresholds)
    assert (finding.severity is CONCERN) is named
    if named:
        assert finding.evidence["ranks"] == [3]


def test_a_collective_reported_by_fewer_than_half_its_ranks_is_not_judged():
    state = TimingState()
    state.comm(KEY, "world", 8, "inspector")
    who = [state.identity(Identity(host="h", pid=str(p))) for p in range(4)]
    for seq in range(30):
        for w in who[:3]:  # 3 of 8 ranks
            state.add(KEY, seq, w, 1000.0 + w)
    (finding,) = straggler_findings(state, {}, {})
    assert finding.severity is INFO and finding.evidence["incomplete_collectives"] == 30
