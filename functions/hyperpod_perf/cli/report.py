"""`hyperpod-perf report render|diff`: re-render a stored report, compare two runs."""

from __future__ import annotations

import argparse

from hyperpod_perf.cli.common import EXIT_USAGE, UsageError, add_output_file, emit


def register(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser("report", help="re-render a stored report.json, or diff two of them")
    report_sub = report.add_subparsers(dest="report_command", required=True)

    render = report_sub.add_parser("render", help="render report.json as html, md, json or text")
    render.add_argument("report", metavar="REPORT_JSON")
    render.add_argument(
        "--format", choices=("text", "json", "md", "html"), default="html", help="output format"
    )
    add_output_file(render)
    render.set_defaults(handler=cmd_render)

    diff = report_sub.add_parser("diff", help="what is new, resolved and drifting between two reports")
    diff.add_argument("old", metavar="OLD_JSON")
    diff.add_argument("new", metavar="NEW_JSON")
    diff.add_argument("--format", choices=("text", "json", "md"), default="text", help="output format")
    add_output_file(diff)
    diff.set_defaults(handler=cmd_diff)


def cmd_render(args: argparse.Namespace) -> int:
    from hyperpod_perf.report.render import render_command

    text, code = render_command(args.report, args.format)
    if code == EXIT_USAGE:
        raise UsageError(_reason(text))
    emit(text, args.output)
    return code


def cmd_diff(args: argparse.Namespace) -> int:
    from hyperpod_perf.report.render import diff_command

    text, code = diff_command(args.old, args.new, args.format)
    if code == EXIT_USAGE:
        raise UsageError(_reason(text))
    emit(text, args.output)
    return code


def _reason(text: str) -> str:
    """The one-line reason of an `error: ...` result, worded like every other CLI error."""
    return text.strip().removeprefix("error: ")
