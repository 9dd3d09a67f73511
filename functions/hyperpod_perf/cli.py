"""`hyperpod-perf`: the command-line front door to the same engine the Lambda functions run.

Exit codes: 0 no concern, 1 at least one concern, 2 usage or unreadable input (one clear line
on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from hyperpod_perf import __version__, cli_diagnose, cli_logs, cli_nccl, cli_pipeline, cli_report
from hyperpod_perf.cli_common import (
    EXIT_CONCERN,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    emit,
    load_thresholds_or_exit,
)


def _snapshot_files(paths: Sequence[str]) -> list[Path]:
    """The files named, directories expanded to their *.txt / *.log files."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.is_file() and p.suffix in {".txt", ".log"}))
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"{raw}: no such file or directory")
    if not files:
        raise UsageError("no snapshot files found in: " + " ".join(paths))
    return files


def cmd_evaluate(args: argparse.Namespace) -> int:
    from hyperpod_perf.batch import UnreadableSnapshot, evaluate_files
    from hyperpod_perf.models import has_concern
    from hyperpod_perf.report.findings_format import render

    files = _snapshot_files(args.snapshots)
    thresholds = load_thresholds_or_exit(args.thresholds)
    try:
        findings = evaluate_files(files, thresholds)
    except UnreadableSnapshot as exc:
        raise UsageError(str(exc)) from exc
    emit(render(findings, args.format), args.out)
    return EXIT_CONCERN if has_concern(findings) else EXIT_OK


def cmd_snapshot(args: argparse.Namespace) -> int:
    from hyperpod_perf.collect.local import CollectorError, run_local_collector
    from hyperpod_perf.engine import evaluate_text
    from hyperpod_perf.models import has_concern
    from hyperpod_perf.report.findings_format import render

    if not args.local:
        raise UsageError("snapshot: only --local is supported (remote nodes: use `diagnose`)")
    try:
        text = run_local_collector()
    except CollectorError as exc:
        raise UsageError(f"snapshot: {exc}") from exc
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"snapshot written to {args.out}", file=sys.stderr)
    findings = evaluate_text(text, args.out or "localhost", load_thresholds_or_exit(args.thresholds))
    sys.stdout.write(render(findings, args.format))
    return EXIT_CONCERN if has_concern(findings) else EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hyperpod-perf",
        description="Read-only performance debugger for SageMaker HyperPod clusters.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    evaluate = sub.add_parser("evaluate", help="evaluate node snapshot files (collector.sh output)")
    evaluate.add_argument("snapshots", nargs="+", metavar="SNAPSHOT", help="files or directories")
    evaluate.add_argument("--format", choices=("text", "json", "md"), default="text")
    evaluate.add_argument("--thresholds", metavar="FILE", help="JSON or TOML threshold overrides")
    evaluate.add_argument("--out", metavar="FILE", help="write the output here instead of stdout")
    evaluate.set_defaults(handler=cmd_evaluate)

    snapshot = sub.add_parser("snapshot", help="collect and evaluate a snapshot of this machine")
    snapshot.add_argument("--local", action="store_true", required=True, help="run collector.sh here")
    snapshot.add_argument("--out", metavar="FILE", help="also keep the raw snapshot in FILE")
    snapshot.add_argument("--format", choices=("text", "json", "md"), default="text")
    snapshot.add_argument("--thresholds", metavar="FILE")
    snapshot.set_defaults(handler=cmd_snapshot)

    for register in _EXTRA_COMMANDS:
        register(sub)
    return parser


#: Sub-command registrars of the other front doors (nccl, diagnose, demo, report, start).
_EXTRA_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    cli_diagnose.register,
    cli_logs.register,
    cli_nccl.register,
    cli_pipeline.register,
    cli_report.register,
]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except UsageError as exc:
        print(f"hyperpod-perf: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        # An --out file or directory that cannot be written (missing parent, a file where a
        # directory is expected, a full disk): the operator needs the path, not a traceback.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"hyperpod-perf: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("hyperpod-perf: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
