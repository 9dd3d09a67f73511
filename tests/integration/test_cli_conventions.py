"""CLI conventions: help with defaults, one --format vocabulary, --quiet, colour only on a TTY."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import pytest

from hyperpod_perf.cli import build_parser, main
from hyperpod_perf.cli.common import out_dir_arg, output_file_arg
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


# --- where documents go: -o FILE for one document, --out DIR for several, on every command -------

#: Commands that print no document (a story; a run followed to its end): no -o, no --out of a file.
NO_DOCUMENT = {"hyperpod-perf demo", "hyperpod-perf start"}
#: The commands that write several documents into --out DIR.
SEVERAL_DOCUMENTS = {
    "hyperpod-perf diagnose",
    "hyperpod-perf nccl analyze",
    "hyperpod-perf nccl plan",
    "hyperpod-perf snapshot",
    "hyperpod-perf demo",
}
LEAVES = sorted(leaf.prog for leaf in leaf_parsers(build_parser()))


def options_of(prog: str) -> dict[str, argparse.Action]:
    (leaf,) = [leaf for leaf in leaf_parsers(build_parser()) if leaf.prog == prog]
    return {option: action for action in leaf._actions for option in action.option_strings}


@pytest.mark.parametrize("prog", LEAVES)
def test_every_command_takes_o_file_for_its_document_and_out_only_as_a_directory(prog) -> None:
    options = options_of(prog)
    # Every command that prints a document takes -o/--output FILE, checked by the one type
    if prog not in NO_DOCUMENT:
        output = options.get("-o")
        assert output is not None and options.get("--output") is output, prog
        assert (output.metavar, output.type) == ("FILE", output_file_arg), prog
    # and --out, where offered, is a directory (a command that writes one document refuses it)
    out = options.get("--out")
    if prog in SEVERAL_DOCUMENTS:
        assert out is not None and (out.metavar, out.type) == ("DIR", out_dir_arg), prog
        assert "DIR" in (out.help or ""), prog
    elif prog not in NO_DOCUMENT:
        assert out is not None and out.help == argparse.SUPPRESS, prog
    # and no other option writes a FILE
    writers = [a for a in options.values() if a.metavar == "FILE" and a is not options.get("-o")]
    assert all("write" not in (a.help or "") for a in writers), prog


@pytest.mark.parametrize("prog", [p for p in LEAVES if "--out" in options_of(p)])
def test_out_naming_a_file_is_refused_with_exit_2_pointing_to_o(capsys, tmp_path, prog) -> None:
    argv = prog.split()[1:]
    existing = tmp_path / "notes"
    existing.write_text("a file, not a directory")
    for value in (str(tmp_path / "result.json"), str(tmp_path / "page.HTML"), str(existing)):
        # When --out names a file (a document suffix, or a file that exists)
        with pytest.raises(SystemExit) as exit_info:
            main([*argv, "--out", value])
        err = capsys.readouterr().err
        # Then it is a usage error before any work, pointing to -o with the same name
        assert exit_info.value.code == 2, (prog, value)
        assert f"-o {value}" in err.splitlines()[-1], (prog, value)
        assert not (tmp_path / "result.json").exists()
    assert existing.read_text() == "a file, not a directory"


@pytest.mark.parametrize("prog", [p for p in LEAVES if "-o" in options_of(p)])
def test_o_naming_a_directory_is_refused_with_exit_2_pointing_to_out(capsys, tmp_path, prog) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*prog.split()[1:], "-o", str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert f"{tmp_path} is a directory: -o names the file" in err.splitlines()[-1]
    assert "--out DIR" in err.splitlines()[-1]


def test_out_on_a_one_document_command_names_the_command_and_the_o_to_use(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["evaluate", str(FAULTY), "--format", "json", "--out", "findings"])
    assert capsys.readouterr().err.splitlines()[-1] == (
        "hyperpod-perf evaluate: error: argument --out: evaluate prints one document: use -o findings "
        "(or stdout); --out DIR is for the commands that write several (snapshot, diagnose, "
        "nccl analyze, nccl plan, demo)"
    )
