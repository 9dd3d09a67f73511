"""The real state machine (statemachines/diagnose.asl.json) executed by moto, every Lambda task
routed to its real handler, against simulated HyperPod clusters (hyperpod_perf_dev.localrun.driver).

Every run in this directory goes through `local_pipeline`, which also makes moto's Retrier sleeps
instant (`faults.asl_retry_sleeps(0)`: only the retrier module's `time` is swapped, and the intervals the
ASL asked for are recorded so tests can assert that a retry really happened).
"""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Powertools warns on every handler that publishes no metric (metrics are disabled locally)."""
    here = Path(__file__).resolve().parent
    for item in items:
        if Path(str(item.fspath)).resolve().parent == here:
            item.add_marker(pytest.mark.filterwarnings("ignore:No application metrics to publish"))
