"""How the node fan-out shares one StartSession rate: batch sizes, Map concurrency, per-call pacing.

Why this exists: SSM's StartSession quota is per account and region. If every CollectNode
invocation paced itself at the configured rate, the Map's concurrency would multiply it (64
nodes, 36 invocations in flight: 78 % of the calls throttled) and a diagnosis would starve the
operators' own sessions. So the rate is divided, not copied:

    R   configured StartSession rate for the whole fan-out (calls/s)
    T   expected seconds one node holds a session (StartSession + the collector), default 10 s
    S   sessions one CollectNode invocation keeps in flight (its thread pool's useful width)

    in flight needed to use R (Little's law)     L = R x T
    Map MaxConcurrency                           C = min(cap, max(1, ceil(L / S)))
    each invocation's own token bucket           r = R / C   calls/s, burst 1
    => at most C invocations run at once, each at r, so together they never exceed C x r = R.

Batches are sized so one invocation's calls fit its Lambda timeout (the calls of a batch of b
nodes are spread over b / r seconds, and the last session may run SESSION_TOTAL_TIMEOUT_S more):

    b_max = min(MAX_NODES_PER_BATCH, floor(r x CALL_WINDOW_S))
    batches K = C x ceil(N / (C x b_max)) (never more than N), sizes as equal as possible

so the N nodes go in whole waves of C batches. Within a wave the batches start together: batch k
waits (k mod C) / R before its first call, so the C buckets interleave instead of firing at once.

No I/O here: ResolveCluster calls `plan_fan_out` and hands the result to the Map.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: StartSession (~2 s) + the collector on the node (~8 s): the real-world figures of issue 9.
SESSION_SECONDS = 10.0
#: Sessions one CollectNode invocation keeps in flight (threads, sockets, ~1 MiB output each).
SESSIONS_PER_INVOCATION = 10
#: CollectNode's Lambda timeout (infra/lambda_defaults.py reads it from here).
COLLECT_TIMEOUT_S = 900
#: The part of the timeout a batch may spend starting sessions: the timeout less the longest a
#: session may run after its start (SESSION_TOTAL_TIMEOUT_S default 240 s) and 60 s of margin.
CALL_WINDOW_S = COLLECT_TIMEOUT_S - 240 - 60
#: Keeps one Map item (a batch of TargetItems, ~0.3 KB each) far below the 256 KiB item limit, and
#: bounds what one failed invocation can take with it (its nodes are then recorded as failed).
MAX_NODES_PER_BATCH = 200


@dataclass(frozen=True)
class FanOutPlan:
    """What the Map needs: how many invocations at once, each one's rate, the batch sizes."""

    max_concurrency: int
    invocation_rate_per_s: float
    batch_sizes: tuple[int, ...]
    total_rate_per_s: float

    def start_after_s(self, batch_index: int) -> float:
        """Delay before batch k's first StartSession, so the C buckets of a wave interleave."""
        return (batch_index % self.max_concurrency) / self.total_rate_per_s


def plan_fan_out(
    nodes: int,
    rate_per_s: float,
    *,
    concurrency_cap: int = 1000,
    session_seconds: float = SESSION_SECONDS,
    sessions_per_invocation: int = SESSIONS_PER_INVOCATION,
    call_window_s: float = CALL_WINDOW_S,
    max_nodes_per_batch: int = MAX_NODES_PER_BATCH,
) -> FanOutPlan:
    """The fan-out for `nodes` targets under one StartSession rate (see the module docstring)."""
    if nodes < 1:
        raise ValueError("a fan-out needs at least one node")
    if rate_per_s <= 0 or session_seconds <= 0 or sessions_per_invocation < 1 or concurrency_cap < 1:
        raise ValueError("rate, session seconds, sessions per invocation and the cap must be positive")
    in_flight = rate_per_s * session_seconds
    concurrency = min(concurrency_cap, max(1, math.ceil(in_flight / sessions_per_invocation)))
    invocation_rate = rate_per_s / concurrency
    batch_max = max(1, min(max_nodes_per_batch, math.floor(invocation_rate * call_window_s)))
    waves = math.ceil(nodes / (concurrency * batch_max))
    batches = min(nodes, concurrency * waves)
    base, extra = divmod(nodes, batches)
    sizes = tuple(base + 1 if i < extra else base for i in range(batches))
    return FanOutPlan(concurrency, invocation_rate, sizes, rate_per_s)
