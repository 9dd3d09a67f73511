"""Session-wide test plumbing: the bad-input outcome log (see tests/outcomes.py)."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from outcomes import OutcomeLog

_OUTCOMES = OutcomeLog.from_env()


@pytest.fixture
def outcome(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """`outcome(case, result)`: record a bad input and what the code did with it."""

    def record(case: str, result: str) -> None:
        _OUTCOMES.add(request.node.nodeid, case, result)

    return record


@pytest.fixture
def record_case(outcome: Callable[[str, str], None]) -> Callable[[str, str], None]:
    """The same record, for tests whose own `outcome` names the run they observe."""
    return outcome


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = (yield).get_result()
    if report.when != "call":
        return
    known_bug = hasattr(report, "wasxfail")  # an xfail marks a known bug: say whether it still fails
    _OUTCOMES.set_status(
        item.nodeid, ("xpassed" if report.passed else "xfailed") if known_bug else report.outcome
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked `prometheus` needs the real server: skipped with the reason on a machine without
    it, failed in CI (`.ci/run` installs Debian's package and sets HYPERPOD_PERF_CI=1)."""
    if item.get_closest_marker("prometheus") is None:
        return
    from hyperpod_perf_dev.prometheus_local import binaries

    if binaries() is None:
        reason = "prometheus / promtool not installed (apt-get install prometheus)"
        if os.environ.get("HYPERPOD_PERF_CI") == "1":
            pytest.fail(f"{reason}: CI must have them", pytrace=False)
        pytest.skip(reason)


def pytest_sessionfinish(session: pytest.Session) -> None:
    _OUTCOMES.write()
