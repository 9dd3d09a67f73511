"""Golden tests: the e-mail, the Slack (Chatbot) message and the Markdown report, byte for byte.

The input is the deterministic 8-node demo report with history (hyperpod_perf_dev.synthetic). After an
intended change, rewrite the files with `python tests/write_golden.py`, review `git diff
tests/fixtures/golden` by eye, then run this test: the comparing run never writes a golden file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hyperpod_perf.domain.report import Report
from hyperpod_perf.report.chatbot import render_chatbot_json
from hyperpod_perf.report.email import render_email
from hyperpod_perf.report.markdown import render_markdown
from hyperpod_perf_dev.synthetic import synthetic_report, synthetic_report_with_history

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"

CASES: list[tuple[str, Callable[[Report], str], Callable[[], Report]]] = [
    ("report_email.txt", render_email, lambda: synthetic_report_with_history(8)),
    ("report_chatbot.json", render_chatbot_json, lambda: synthetic_report_with_history(8)),
    ("report.md", render_markdown, lambda: synthetic_report_with_history(8)),
    ("report_email_first_run.txt", render_email, lambda: synthetic_report(8)),
]


@pytest.mark.parametrize(("name", "render", "build"), CASES, ids=[c[0] for c in CASES])
def test_rendering_matches_golden(
    name: str, render: Callable[[Report], str], build: Callable[[], Report]
) -> None:
    # Given the demo report; When rendered
    actual = render(build())
    path = GOLDEN / name
    # Then it matches the reviewed golden file exactly
    assert path.exists(), f"{path} missing: write it with `python tests/write_golden.py` and review it"
    assert actual == path.read_text(encoding="utf-8")
