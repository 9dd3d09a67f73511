"""The fan-out plan: MaxConcurrency and each CollectNode's share of the StartSession rate, batches
that fit the Lambda timeout, and the pacing that results when the planned buckets run together."""

from __future__ import annotations

import itertools
import math

import pytest

from hyperpod_perf.collect.runner import TokenBucket
from hyperpod_perf.pipeline.pacing import (
    CALL_WINDOW_S,
    COLLECT_TIMEOUT_S,
    MAX_NODES_PER_BATCH,
    plan_fan_out,
)


@pytest.mark.parametrize(
    ("rate", "concurrency", "share"),
    [
        (3.0, 3, 1.0),  # 3/s x 10 s = 30 sessions in flight, 10 per invocation
        (2.0, 2, 1.0),  # the stack's default rate
        (1.0, 1, 1.0),  # exactly one invocation's worth of sessions
        (1.01, 2, 0.505),  # just past one invocation's worth: a second one, each at half
        (6.0, 6, 1.0),
    ],
)
def test_concurrency_times_each_share_is_exactly_the_configured_rate(rate, concurrency, share) -> None:
    # Given a configured StartSession rate for the whole fan-out
    # When the fan-out of 1,000 nodes is planned
    plan = plan_fan_out(1000, rate)
    # Then C = ceil(R x 10 s / 10 sessions), each invocation paces at R / C, together exactly R
    assert (plan.max_concurrency, plan.invocation_rate_per_s) == (concurrency, pytest.approx(share))
    assert plan.max_concurrency * plan.invocation_rate_per_s == pytest.approx(rate)


def test_the_deployments_concurrency_cap_lowers_c_but_never_raises_the_total_rate() -> None:
    # Given 3/s, which wants C = 3, and a deployment that allows at most 2 at once
    plan = plan_fan_out(500, 3.0, concurrency_cap=2)
    # Then 2 invocations at 1.5/s each: still 3/s together, not more
    assert (plan.max_concurrency, plan.invocation_rate_per_s) == (2, 1.5)


@pytest.mark.parametrize("nodes", [1, 2, 3, 8, 64, 199, 1024, 5000])
@pytest.mark.parametrize("rate", [0.5, 2.0, 3.0, 6.0])
def test_batches_cover_every_node_once_in_whole_waves_and_fit_the_lambda_timeout(nodes, rate) -> None:
    plan = plan_fan_out(nodes, rate)
    sizes = plan.batch_sizes
    # every node in exactly one batch, sizes as equal as possible
    assert sum(sizes) == nodes and min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
    # whole waves of C batches (fewer only when there are fewer nodes than C)
    assert len(sizes) % plan.max_concurrency == 0 or len(sizes) == nodes
    # a batch's calls, spaced 1 / share apart, end inside the call window of the 15-minute timeout
    assert max(sizes) <= MAX_NODES_PER_BATCH
    assert (max(sizes) - 1) / plan.invocation_rate_per_s <= CALL_WINDOW_S < COLLECT_TIMEOUT_S


def test_5000_nodes_at_2_per_second_go_in_13_waves_of_two_batches() -> None:
    # Given the largest cluster the issue names, at the stack's default rate
    plan = plan_fan_out(5000, 2.0)
    # Then C = 2 at 1/s each; a batch may hold min(200, 1/s x 600 s) = 200 nodes;
    # ceil(5000 / (2 x 200)) = 13 waves -> 26 batches of 192 or 193
    assert plan.max_concurrency == 2
    assert len(plan.batch_sizes) == 26
    assert set(plan.batch_sizes) == {192, 193}


def test_a_cluster_smaller_than_c_gets_one_node_per_batch() -> None:
    plan = plan_fan_out(2, 3.0)
    assert plan.batch_sizes == (1, 1)


@pytest.mark.parametrize(
    "kwargs",
    [{"nodes": 0, "rate_per_s": 3.0}, {"nodes": 5, "rate_per_s": 0.0}, {"nodes": 5, "rate_per_s": -1.0}],
)
def test_an_impossible_fan_out_is_refused(kwargs) -> None:
    with pytest.raises(ValueError):
        plan_fan_out(**kwargs)


def _first_wave_call_times(rate: float, nodes: int) -> list[float]:
    """When the batches of the first wave make their calls, each through its own TokenBucket at
    the planned share and start delay (virtual clock: a call goes out the moment acquire returns)."""
    plan = plan_fan_out(nodes, rate)
    times: list[float] = []
    for index, size in enumerate(plan.batch_sizes[: plan.max_concurrency]):
        now = [0.0]
        bucket = TokenBucket(
            plan.invocation_rate_per_s,
            initial_delay_s=plan.start_after_s(index),
            clock=lambda now=now: now[0],
            sleep=lambda s, now=now: now.__setitem__(0, now[0] + s),
        )
        for _ in range(size):
            bucket.acquire()
            times.append(now[0])
    return sorted(times)


@pytest.mark.parametrize("rate", [2.0, 3.0, 6.0])
def test_the_staggered_buckets_of_a_wave_interleave_into_one_even_stream_at_the_rate(rate) -> None:
    # Given the first wave of a 600-node fan-out, each batch paced by its own bucket
    times = _first_wave_call_times(rate, 600)
    # Then together they call exactly 1 / R apart: never two calls closer than the rate allows,
    # so a service-side bucket at R (any burst >= 1) throttles none of them
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) == pytest.approx(1 / rate)
    assert max(gaps) == pytest.approx(1 / rate)
    # and in any 1-second window there are at most ceil(R) calls (1 ns of float slack)
    window = 1 - 1e-9
    assert max(sum(1 for t in times if start <= t < start + window) for start in times) == math.ceil(rate)


def test_without_the_stagger_a_wave_would_open_with_c_calls_at_once() -> None:
    # Guards the test above: the same buckets with no start delay all fire at t = 0
    plan = plan_fan_out(600, 6.0)
    first_calls = []
    for _ in range(plan.max_concurrency):
        bucket = TokenBucket(plan.invocation_rate_per_s, clock=lambda: 0.0, sleep=lambda s: None)
        first_calls.append(bucket.acquire())
    assert first_calls == [0.0] * plan.max_concurrency and plan.max_concurrency == 6
