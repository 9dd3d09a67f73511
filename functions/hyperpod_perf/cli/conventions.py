"""The conventions every sub-command follows, applied once to the whole parser tree.

Why one place: sub-commands are registered by several modules (and by other teams); applying
help-with-defaults, `--quiet`, the shared help strings and sub-command-level error messages here
keeps every command alike without each registrar repeating them. Plain argparse: the CLI stays
out of the Lambda asset's dependencies and needs no third-party library.

- Every option's help shows its default: `(default: text)`.
- `-q/--quiet` on every command: nothing on stdout or stderr but errors; the exit code says it.
- An unknown option is reported by the sub-command it was given to, with that command's usage.
- Colour (severity tags) only on a terminal, never with NO_COLOR set or TERM=dumb.
- `--out` is a directory on every command that has it; a command that prints one document takes
  `-o FILE` and refuses `--out` pointing there (cli/common.py: where documents go).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator
from typing import TextIO

from hyperpod_perf.domain import escaping

#: The one output-format vocabulary; each command offers the subset that makes sense.
FORMATS = ("text", "json", "md", "html")

#: Help for options several commands share, where a registrar gave none.
_SHARED_HELP = {
    "--format": "output format",
    "--thresholds": "JSON or TOML file of threshold overrides",
}


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Appends `(default: X)` to an option's help unless the help already says its default or
    there is none worth saying (None, False, an empty list)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        help_text = action.help or ""
        default = action.default
        if (
            "default" in help_text
            or default in (None, False, argparse.SUPPRESS)
            or default == []
            or not action.option_strings
        ):
            return help_text
        return f"{help_text} (default: %(default)s)".strip()


def leaf_parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """Every parser that runs a command (the ones without sub-commands of their own)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield parser
        return
    for action in subs:
        for child in dict.fromkeys(action.choices.values()):  # aliases share a parser
            yield from leaf_parsers(child)


def apply(parser: argparse.ArgumentParser) -> None:
    """Conventions on the whole tree: formatter, shared help, --quiet, the parser to blame."""
    for node in _all_parsers(parser):
        node.formatter_class = DefaultsHelpFormatter
    parser.add_argument(
        "-q", "--quiet", dest="quiet_global", action="store_true", help="as -q on the command: errors only"
    )
    several = [
        leaf.prog.removeprefix("hyperpod-perf ")
        for leaf in leaf_parsers(parser)
        if any("--out" in a.option_strings for a in leaf._actions)
    ]
    for leaf in leaf_parsers(parser):
        for action in leaf._actions:
            if action.help is None and action.option_strings:
                action.help = _SHARED_HELP.get(action.option_strings[-1]) or _SHARED_HELP.get(
                    action.option_strings[0]
                )
        if not any("--quiet" in a.option_strings for a in leaf._actions):
            leaf.add_argument(
                "-q", "--quiet", action="store_true", help="print nothing but errors; the exit code says it"
            )
        options = {o for a in leaf._actions for o in a.option_strings}
        if "--output" in options and "--out" not in options:
            # Not offered, but refused by name: argparse would otherwise take `--out` as an
            # abbreviation of `--output`, and `--out` would mean a file here and a directory elsewhere.
            leaf.add_argument(
                "--out",
                dest="_out_refused",
                type=_one_document(leaf.prog, several),
                help=argparse.SUPPRESS,
            )
        leaf.set_defaults(_leaf_parser=leaf)


def _one_document(prog: str, several: list[str]):
    """`--out`'s refusal on a command that prints one document (argparse: exit 2, with usage),
    naming the commands whose --out DIR takes several."""
    command = prog.removeprefix("hyperpod-perf ")

    def refuse(value: str) -> str:
        raise argparse.ArgumentTypeError(
            f"{command} prints one document: use -o {value} (or stdout); --out DIR is for the "
            f"commands that write several ({', '.join(several)})"
        )

    return refuse


def _all_parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield from _all_parsers(child)


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """parse_args, except that an unknown option is blamed on the sub-command that got it."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        blame = getattr(args, "_leaf_parser", parser)
        blame.error(f"unrecognized arguments: {' '.join(extra)}")
    args.quiet = getattr(args, "quiet", False) or getattr(args, "quiet_global", False)
    return args


# --- colour -----------------------------------------------------------------------------------

_COLOURS = {
    "[CONCERN]": "\033[1;31m",
    "⚠ CONCERN": "\033[1;31m",
    "[INFO]": "\033[33m",
    "[OK]": "\033[32m",
}
_TAGS = re.compile("|".join(re.escape(t) for t in _COLOURS))
_RESET = "\033[0m"


def colour_wanted(stream: TextIO, environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """On a terminal, unless NO_COLOR is set (any value, https://no-color.org) or TERM=dumb."""
    if "NO_COLOR" in environ or environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def colourize(text: str) -> str:
    """Severity tags in colour (ANSI SGR); the text is otherwise unchanged."""
    return _TAGS.sub(lambda m: f"{_COLOURS[m.group(0)]}{m.group(0)}{_RESET}", text)


class ColourStream:
    """A stdout wrapper colouring severity tags as text passes through."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(colourize(text))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


class TerminalSafeStream:
    """Text for people leaves through here: no control character or escape sequence from node or
    request text reaches the terminal (domain.escaping.terminal); the tool's own colours are
    added after it, by the ColourStream it wraps."""

    def __init__(self, stream: TextIO | ColourStream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(escaping.terminal(text))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


#: Formats read by people in a terminal or an editor; json and html carry their own escaping.
TEXT_FORMATS = frozenset({"text", "md"})


class Silent:
    """A stream that drops everything (--quiet)."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False


def output_stream(
    args: argparse.Namespace, stream: TextIO | None = None
) -> TextIO | ColourStream | TerminalSafeStream | Silent:
    """What a command's stdout should be: silent with --quiet, text for people stripped of
    terminal controls, then coloured on a terminal."""
    stream = stream or sys.stdout
    if getattr(args, "quiet", False):
        return Silent()
    fmt = getattr(args, "format", "text")
    if fmt == "text" and colour_wanted(stream):
        return TerminalSafeStream(ColourStream(stream))
    if fmt in TEXT_FORMATS:
        return TerminalSafeStream(stream)
    return stream
