"""CLI conventions: help with defaults, one --format vocabulary, --quiet, colour only on a TTY."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import pytest

from hyperpod_perf.cli import build_parser, main
from hyperpod_perf.cli.conventions import FORMATS, colour_wanted, leaf_parsers
from hyperpod_perf.report.render import render_report
from hyperpod_perf_dev.synthetic import synthetic_report

EXAMPLES = Path(__file__).resolve().parents[2] / "functions" / "hyperpod_perf_dev" / "sim" / "examples"
FAULTY = EXAMPLES / "i-0a1b2c3d4e5f60003.txt"
RED = "\033[1;31m"


class Terminal(io.StringIO):
    """stdout as a terminal."""

    def isatty(self) -> bool:
        return True


def run(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_option_of_every_command_has_help_and_shows_its_default() -> None:
    parser = build_parser()
    for leaf in leaf_parsers(parser):
        help_text = leaf.format_help()
        for action in leaf._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            # Then each option explains itself
            assert action.help, f"{leaf.prog} {action.option_strings} has no help"
            # and an option with a real default says it
            if action.default not in (None, False, [], argparse.SUPPRESS):
                assert f"(default: {action.default})" in " ".join(help_text.split()), (
                    leaf.prog,
                    action.option_strings,
                )


def test_format_choices_come_from_one_vocabulary() -> None:
    for leaf in leaf_parsers(build_parser()):
        for action in leaf._actions:
            if "--format" in action.option_strings:
                assert set(action.choices) <= set(FORMATS), leaf.prog
                assert "text" in action.choices and "json" in action.choices, leaf.prog


def test_evaluate_html_and_report_diff_md(capsys, tmp_path) -> None:
    code, out, _ = run(capsys, "evaluate", FAULTY, "--format", "html")
    assert code == 1
    assert out.startswith("<!DOCTYPE html>") and "gpu.pcie_width" in out and "<code>" in out

    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(render_report(synthetic_report(previous=True), "json"))
    new.write_text(render_report(synthetic_report(), "json"))
    code, out, _ = run(capsys, "report", "diff", old, new, "--format", "md")
    assert code == 1  # a new concern appeared
    assert out.startswith("# hyperpod-perf: changes between two reports")
    assert "## New since last run (" in out and "`efa.counters`" in out


def test_unknown_option_is_reported_by_the_command_that_got_it(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", str(FAULTY), "--bogus"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.splitlines()[0].startswith("usage: hyperpod-perf evaluate ")
    assert "hyperpod-perf evaluate: error: unrecognized arguments: --bogus" in err


@pytest.mark.parametrize("where", ["command", "global"])
def test_quiet_prints_nothing_and_keeps_the_exit_code(capsys, where) -> None:
    argv = ["evaluate", str(FAULTY), "-q"] if where == "command" else ["-q", "evaluate", str(FAULTY)]
    assert run(capsys, *argv) == (1, "", "")
    # but errors still show
    code, out, err = run(capsys, "evaluate", "/nonexistent", "--quiet")
    assert (code, out) == (2, "")
    assert err == "hyperpod-perf: /nonexistent: no such file or directory\n"


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch) -> None:
    # Given a terminal as stdout
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert main(["evaluate", str(FAULTY)]) == 1
    # Then the CONCERN tags are red
    assert f"{RED}[CONCERN]\033[0m (fix soon) gpu.pcie_width" in terminal.getvalue()

    # When NO_COLOR is set (any value), or the output is JSON, or not a terminal: no escape codes
    monkeypatch.setenv("NO_COLOR", "")
    plain = Terminal()
    monkeypatch.setattr(sys, "stdout", plain)
    assert main(["evaluate", str(FAULTY)]) == 1
    assert "\033[" not in plain.getvalue() and "[CONCERN] (fix soon) gpu.pcie_width" in plain.getvalue()
    monkeypatch.delenv("NO_COLOR")
    as_json = Terminal()
    monkeypatch.setattr(sys, "stdout", as_json)
    main(["evaluate", str(FAULTY), "--format", "json"])
    assert "\033[" not in as_json.getvalue()
    assert not colour_wanted(io.StringIO(), {})
    assert not colour_wanted(Terminal(), {"TERM": "dumb"})
    assert colour_wanted(Terminal(), {"TERM": "xterm"})


def test_report_render_on_a_binary_names_the_file(capsys) -> None:
    binary = Path(sys.executable).resolve()
    code, out, err = run(capsys, "report", "render", binary)
    assert (code, out) == (2, "")
    assert err == f"hyperpod-perf: {binary}: not a JSON report (binary content, not UTF-8 text)\n"


def test_demo_node_count_keeps_nodes_as_an_alias() -> None:
    parser = build_parser()
    assert parser.parse_args(["demo", "--nodes", "4"]).nodes == 4
    assert parser.parse_args(["demo", "--node-count", "4"]).nodes == 4
