"""Assertions shared by the state-machine tests (what a finished run must have left behind)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hyperpod_perf_dev.localrun.driver import LocalPipeline
from hyperpod_perf_dev.localrun.outcome import RunOutcome

DATA = Path(__file__).resolve().parent / "data"
REAL_NCCL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "nccl-tests"

#: Step Functions' limit on a state's input or output, and on a Lambda invocation payload.
STATE_LIMIT_BYTES = 256 * 1024


def concerns_by_node(outcome: RunOutcome) -> dict[str | None, set[str]]:
    found: dict[str | None, set[str]] = {}
    for finding in outcome.findings(severity="CONCERN"):
        found.setdefault(finding["node"], set()).add(finding["check"])
    return found


def assert_raw_is_what_nodes_printed(run: LocalPipeline, outcome: RunOutcome, indices: list[int]) -> None:
    """raw/<instance-id>.txt holds, byte for byte, the simulated collector output of each node."""
    nodes = run.cluster_nodes()
    for index in indices:
        node = nodes[index]
        assert outcome.raw(node.instance_id) == node.text.encode(), f"raw output of node index {index}"


def node_row(outcome: RunOutcome, instance_id: str) -> dict[str, Any]:
    report = outcome.report or {}
    return next(n for n in report["nodes"] if n["node"] == instance_id)


def collect_failure(outcome: RunOutcome, instance_id: str) -> dict[str, Any]:
    (finding,) = [f for f in outcome.findings("collect.node") if f["node"] == instance_id]
    return finding


def task_failures(outcome: RunOutcome) -> list[str]:
    return [e["taskFailedEventDetails"]["error"] for e in outcome.history if e["type"] == "TaskFailed"]


def state_payload_sizes(history: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """(event type, bytes) of every input/output/result a history event carries."""
    sizes = []
    for event in history:
        for key, details in event.items():
            if not key.endswith("EventDetails") or not isinstance(details, dict):
                continue
            for field in ("input", "output"):
                if isinstance(details.get(field), str):
                    sizes.append((f"{event['type']}.{field}", len(details[field].encode())))
    return sizes


def invocation_sizes(run: LocalPipeline) -> list[tuple[str, int, int]]:
    """(function, request bytes, response bytes) of every Lambda invocation the bridge served."""
    assert run.dep.bridge is not None
    return [
        (i.function, len(json.dumps(i.event).encode()), i.payload_bytes) for i in run.dep.bridge.invocations
    ]
