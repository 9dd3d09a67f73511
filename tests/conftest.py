"""Session-wide test plumbing: the bad-input outcome log (see tests/outcomes.py)."""

from __future__ import annotations

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


def pytest_sessionfinish(session: pytest.Session) -> None:
    _OUTCOMES.write()
