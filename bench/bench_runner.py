"""Bench: SessionNodeRunner fanning out to 64 nodes against the loopback fake agent.

Injected conditions (issue 5): StartSession takes 2 s, the service allows 3 StartSession calls
per second (token bucket, burst 3) and throttles 10% of calls at random. Each node's session runs
the full data-channel protocol over a real socket (handshake, acks, output, exit code).

The ideal time the rate limit allows is ``(StartSession calls - 1) / rate + session time``: the
last call cannot go out earlier than the rate permits, and then takes one session. It is
reported twice: counting only the 64 necessary calls, and counting the calls the service
throttled at random as well (those consume rate-limit slots no client can avoid). Target:
measured within 15% of the ideal.

Run: ``python -m bench.bench_runner`` (not run by CI).
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hyperpod_perf.aws.session import SessionClient
from hyperpod_perf.collect.runner import NodeFailure, NodeOutput, NodeTarget, SessionNodeRunner
from hyperpod_perf.collect.snapshot import render_container
from hyperpod_perf.sim.agent import FakeAgent, FakeSsm, Scenario, client_error


class ServiceRateLimit:
    """StartSession as the service meters it: a token bucket plus random throttling."""

    def __init__(self, rate: float, burst: float, random_throttle: float, seed: int) -> None:
        self.rate = rate
        self.burst = burst
        self.random_throttle = random_throttle
        self._tokens = burst
        self._last = time.monotonic()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.calls = 0
        self.throttled_by_rate = 0
        self.throttled_at_random = 0

    def __call__(self, _target: str) -> BaseException | None:
        with self._lock:
            self.calls += 1
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
            self._last = now
            if self._tokens < 1:
                self.throttled_by_rate += 1
                return client_error("ThrottlingException", "Rate exceeded")
            self._tokens -= 1
            if self._rng.random() < self.random_throttle:
                self.throttled_at_random += 1
                return client_error("ThrottlingException", "Rate exceeded")
            return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument(
        "--rate", type=float, default=3.0, help="StartSession calls per second (service and client)"
    )
    parser.add_argument("--start-latency", type=float, default=2.0, help="seconds StartSession takes")
    parser.add_argument("--throttle", type=float, default=0.10, help="fraction of calls throttled at random")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args(argv)

    snapshot = render_container(
        [
            ("meta", "collector_version=1\nhostname=bench\n", 0),
            ("gpu-query", "index, name\n0, H100\n" * 200, 0),
        ]
    ).encode()
    nodes = [
        NodeTarget(f"i-{i:017x}", "worker-group-1", f"ip-10-0-{i // 250}-{i % 250}")
        for i in range(args.nodes)
    ]
    limit = ServiceRateLimit(args.rate, burst=args.rate, random_throttle=args.throttle, seed=args.seed)

    with FakeAgent() as agent:
        ssm = FakeSsm(agent, lambda _t: Scenario(stdout=snapshot, exit_code=0), limit, args.start_latency)
        client = SessionClient(ssm, idle_timeout=30, total_timeout=120, close_grace=0.5)
        runner = SessionNodeRunner(
            "benchcluster01",
            lambda: client,
            concurrency=args.concurrency,
            rate_per_s=args.rate,
            max_retries=8,
            backoff_base_s=0.5,
            rng=random.Random(args.seed),
        )
        started = time.monotonic()
        results = runner.collect(nodes)
        measured = time.monotonic() - started

    ok = [r for r in results if isinstance(r, NodeOutput)]
    failed = [r for r in results if isinstance(r, NodeFailure)]
    complete = sum(1 for r in ok if r.text.encode() == snapshot and r.exit_code == 0)
    session_time = args.start_latency
    ideal_min = (args.nodes - 1) / args.rate + session_time
    ideal = (args.nodes + limit.throttled_at_random - 1) / args.rate + session_time
    print(
        f"nodes={args.nodes} rate={args.rate}/s start_latency={args.start_latency}s "
        f"random_throttle={args.throttle:.0%}"
    )
    print(
        f"StartSession calls={limit.calls} throttled_at_random={limit.throttled_at_random} "
        f"throttled_by_rate={limit.throttled_by_rate} terminated={len(ssm.terminated)}"
    )
    print(f"collected={len(ok)} byte-exact={complete} failed={len(failed)}")
    for failure in failed:
        print(f"  FAILED {failure.node.instance_id}: {failure.reason}: {failure.detail}")
    print(f"measured={measured:.2f}s")
    print(f"ideal (64 calls + unavoidable random throttles)={ideal:.2f}s  ratio={measured / ideal:.3f}")
    print(f"ideal (64 calls only)={ideal_min:.2f}s  ratio={measured / ideal_min:.3f}")
    within = measured <= ideal * 1.15
    print(f"target: within 15% of ideal -> {'MET' if within else 'MISSED'}")
    return 0 if within and not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
