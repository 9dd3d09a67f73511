"""The `ssm` client side of a simulated Session Manager: StartSession against a loopback FakeAgent.

Why apart from the agent: the agent plays the node's end of the data channel; this plays the
service's API in front of it (what `SessionClient` calls), where StartSession's own failures —
throttling, an offline target, its latency — arise.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from hyperpod_perf_dev.sim.agent import FakeAgent, Scenario


class FakeSsm:
    """The ``ssm`` client methods SessionClient calls, backed by a FakeAgent.

    ``scenario_for(target)`` picks what each node prints; ``start_error(target)`` may return an
    exception to raise instead (a botocore ClientError, say), to play throttling or an offline node.
    """

    def __init__(
        self,
        agent: FakeAgent,
        scenario_for: Callable[[str], Scenario],
        start_error: Callable[[str], BaseException | None] | None = None,
        start_latency: float = 0.0,
    ) -> None:
        self.agent = agent
        self.scenario_for = scenario_for
        self.start_error = start_error
        self.start_latency = start_latency
        self.started: list[dict[str, Any]] = []
        self.terminated: list[str] = []
        self.session_targets: dict[str, str] = {}
        self._lock = threading.Lock()

    def start_session(self, **kwargs: Any) -> dict[str, Any]:
        target = kwargs["Target"]
        with self._lock:
            self.started.append(kwargs)
        if self.start_error is not None:
            error = self.start_error(target)
            if error is not None:
                raise error
        if self.start_latency:
            time.sleep(self.start_latency)
        session_id, token, url = self.agent.register(self.scenario_for(target))
        with self._lock:
            self.session_targets[session_id] = target
        return {"SessionId": session_id, "TokenValue": token, "StreamUrl": url}

    def terminate_session(self, **kwargs: Any) -> dict[str, Any]:
        with self._lock:
            self.terminated.append(kwargs["SessionId"])
        return {"SessionId": kwargs["SessionId"]}


def client_error(
    code: str, message: str = "", operation: str = "StartSession", status: int = 400
) -> Exception:
    """A botocore ClientError as boto3 raises it."""
    from botocore.exceptions import ClientError

    return ClientError(
        {"Error": {"Code": code, "Message": message or code}, "ResponseMetadata": {"HTTPStatusCode": status}},
        operation,
    )
