"""`report render` and `report diff` entry functions: stored JSON in, (text, exit code) out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_builders import hot_gpu, node, report

from hyperpod_perf.report.json_report import render_json
from hyperpod_perf.report.render import (
    EXIT_BAD_INPUT,
    EXIT_NEW_CONCERNS,
    EXIT_OK,
    diff_command,
    render_command,
)
from hyperpod_perf_dev.synthetic import synthetic_report


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    path = tmp_path / "report.json"
    path.write_text(render_json(synthetic_report(6)), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("fmt", "starts"),
    [
        ("html", "<!DOCTYPE html>"),
        ("md", "# HyperPod performance report: demo-cluster"),
        ("text", "⚠ FIX SOON: 1 node has GPU faults; 1 node has EFA problems"),
        ("json", "{"),
    ],
)
def test_render_rerenders_a_stored_report_in_each_format(stored: Path, fmt: str, starts: str) -> None:
    text, code = render_command(stored, fmt)
    assert code == EXIT_OK
    assert text.startswith(starts)


def test_json_rerender_is_stable(stored: Path) -> None:
    text, _ = render_command(stored, "json")
    assert json.loads(text) == json.loads(stored.read_text(encoding="utf-8"))


def test_render_reports_unreadable_input_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"cluster": 3}', encoding="utf-8")
    text, code = render_command(bad, "html")
    assert code == EXIT_BAD_INPUT
    assert text.startswith(f"error: {bad}: not a hyperpod-perf report (cluster: Input should be a valid")
    assert text.count("\n") == 1
    assert render_command(tmp_path / "missing.json", "md")[1] == EXIT_BAD_INPUT
    (tmp_path / "n.json").write_text("not json", encoding="utf-8")
    assert render_command(tmp_path / "n.json", "md")[0].startswith(f"error: {tmp_path / 'n.json'}: not JSON")


def test_render_rejects_an_unknown_format(stored: Path) -> None:
    text, code = render_command(stored, "pdf")
    assert code == EXIT_BAD_INPUT
    assert "unknown format 'pdf'" in text


def test_diff_exits_1_when_a_new_concern_appears_and_0_when_nothing_got_worse(tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(render_json(report([], [node("a")])), encoding="utf-8")
    new.write_text(render_json(report([hot_gpu("a", 92)], [node("a")])), encoding="utf-8")
    text, code = diff_command(old, new)
    assert code == EXIT_NEW_CONCERNS
    assert "New since last run: 1\n  a: gpu.temperature — GPU 3 at 92 °C\n" in text
    text, code = diff_command(new, old, "json")
    assert code == EXIT_OK
    assert [f["check"] for f in json.loads(text)["resolved"]] == ["gpu.temperature"]
