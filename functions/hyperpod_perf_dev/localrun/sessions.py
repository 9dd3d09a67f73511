"""The SSM side of a local pipeline run: which session client the handlers get, and how nodes answer.

Two transports, both installed as the handlers' `session_client` (aws.clients):
- `loopback_sessions`: the real `SessionClient` over loopback WebSockets against `FakeAgent`, so
  the data-channel protocol runs byte for byte (the demo, the tests, the benchmark, deploy-local);
- `InProcessSessions`: no data channel, the node's output returned directly (fleets of thousands,
  where a socket per node would dominate the run).
`NodeBehaviour` decides each StartSession of either transport: the node's planned faults
(refused, throttled, vanished), then an optional service meter (the benchmark's rate limit).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from hyperpod_perf_dev.localrun.plan import Latencies, StartGate

if TYPE_CHECKING:
    from hyperpod_perf_dev.localrun.driver import LocalPipeline
    from hyperpod_perf_dev.sim.agent import Scenario
    from hyperpod_perf_dev.sim.ssm import FakeSsm

_INSTANCE_ID = re.compile(r"(i-[0-9a-f]{8,17})$")


def instance_of(target: str) -> str:
    """The instance id at the end of `sagemaker-cluster:<id>_<group>-<instance-id>`."""
    match = _INSTANCE_ID.search(target)
    if match is None:
        raise ValueError(f"no instance id in SSM target {target!r}")
    return match.group(1)


class NodeBehaviour:
    """Per-target StartSession outcomes shared by both transports (thread-safe counters)."""

    def __init__(self, run: LocalPipeline, gate: StartGate | None = None) -> None:
        self._run = run
        self._gate = gate
        self._lock = threading.Lock()
        self.calls: dict[str, int] = {}

    def start_error(self, target: str) -> BaseException | None:
        from hyperpod_perf_dev.sim.ssm import client_error

        instance = instance_of(target)
        node = self._run.node(instance)
        plan = self._run.plan_of(instance)
        with self._lock:
            self.calls[instance] = self.calls.get(instance, 0) + 1
            count = self.calls[instance]
        if plan.disappear:
            self._run.remove_node(instance)
            return client_error("TargetNotConnected", f"{target} is not connected.")
        if plan.refuse:
            return client_error(plan.refuse, f"{target}: {plan.refuse}")
        if count <= plan.throttle:
            return client_error("ThrottlingException", "Rate exceeded")
        if node is None:
            return client_error("TargetNotConnected", f"{target} is not connected.")
        return self._gate(target) if self._gate is not None else None


class InProcessSessions:
    """A session client without the data channel: returns the node's simulated output directly.

    StartSession faults (refuse, throttle, disappear, the meter) and the latencies still apply;
    stream faults do not.
    """

    def __init__(self, behaviour: NodeBehaviour, run: LocalPipeline, latencies: Latencies) -> None:
        self._behaviour = behaviour
        self._run = run
        self._latencies = latencies

    def run(self, target: str, document_name: str, parameters: Any = None) -> Any:
        from hyperpod_perf.aws.errors import translate_client_error
        from hyperpod_perf.aws.session import SessionResult

        error = self._behaviour.start_error(target)
        if error is not None:
            raise translate_client_error(error, f"ssm:StartSession {target}") from error
        node = self._run.node(instance_of(target))
        # bandit B101: development-only code (the local run), not in the Lambda asset
        assert node is not None  # nosec B101
        took = self._latencies.session_start_s + self._latencies.collector_s
        if took:
            time.sleep(took)
        return SessionResult(node.text, "", 0, False, f"inproc-{node.instance_id}")


def loopback_sessions(
    stack: ExitStack,
    scenario_for: Callable[[str], Scenario],
    *,
    start_error: StartGate | None = None,
    start_latency_s: float = 0.0,
    idle_timeout_s: float | None = None,
) -> FakeSsm:
    """Start a FakeAgent (closed with `stack`) and make the handlers' session client the real
    `SessionClient` talking to it; returns the fake `ssm` client, which records every StartSession."""
    from hyperpod_perf.aws import clients
    from hyperpod_perf.aws.session import SessionClient
    from hyperpod_perf_dev.sim.agent import FakeAgent
    from hyperpod_perf_dev.sim.ssm import FakeSsm

    agent = stack.enter_context(FakeAgent())
    ssm = FakeSsm(agent, scenario_for, start_error=start_error, start_latency=start_latency_s)
    idle = {} if idle_timeout_s is None else {"idle_timeout": idle_timeout_s}
    clients.override("session_client", lambda total: SessionClient(ssm, total_timeout=total, **idle))
    stack.callback(clients.reset)
    return ssm
