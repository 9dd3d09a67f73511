"""`hyperpod-perf`: the command-line front door to the same engine the Lambda functions run.

Exit codes: 0 no concern, 1 at least one concern, 2 usage or unreadable input (one clear line
on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from hyperpod_perf import __version__
from hyperpod_perf.cli import conventions as cli_conventions
from hyperpod_perf.cli import diagnose as cli_diagnose
from hyperpod_perf.cli import history as cli_history
from hyperpod_perf.cli import logs as cli_logs
from hyperpod_perf.cli import metrics as cli_metrics
from hyperpod_perf.cli import nccl as cli_nccl
from hyperpod_perf.cli import pipeline as cli_pipeline
from hyperpod_perf.cli import report as cli_report
from hyperpod_perf.cli.common import (
    EXIT_CONCERN,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    emit,
    load_thresholds_or_exit,
)
from hyperpod_perf.cli.conventions import FORMATS
from hyperpod_perf.domain import escaping
from hyperpod_perf.domain.errors import AwsAdapterError


def _snapshot_files(paths: Sequence[str]) -> list[Path]:
    """The files named, directories expanded to their *.txt / *.log files."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.is_file() and p.suffix in {".txt", ".log"}))
        elif path.exists():  # a file, or a FIFO / device / process substitution: read with a bound
            files.append(path)
        else:
            raise UsageError(f"{raw}: no such file or directory")
    if not files:
        raise UsageError("no snapshot files found in: " + " ".join(paths))
    return files


#: How much of each file `_require_collector_output` reads to find a begin marker.
COLLECTOR_HEAD_BYTES = 64 * 1024


def _require_collector_output(files: Sequence[Path]) -> None:
    """Refuse a file without a single collector section (a binary, notes.txt): it is not a node's
    snapshot, and a per-node CONCERN for it would send the operator to the wrong node."""
    from hyperpod_perf.collect.snapshot import BEGIN_RE
    from hyperpod_perf.domain.bounded_read import read_prefix

    for path in files:
        try:  # the collector's first line is its `meta` begin marker: the head of the file is enough
            text = read_prefix(path, COLLECTOR_HEAD_BYTES).data.decode("utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from exc
        if not any(BEGIN_RE.match(line) for line in text.splitlines()):
            raise UsageError(
                f"{path}: not collector output (no '=== hpd:begin <section> ===' line); "
                "pass the files collector.sh wrote"
            )


def cmd_evaluate(args: argparse.Namespace) -> int:
    from hyperpod_perf.cli.batch import UnreadableSnapshot, evaluate_files
    from hyperpod_perf.domain.findings import has_concern
    from hyperpod_perf.report.findings_format import render

    files = _snapshot_files(args.snapshots)
    _require_collector_output(files)
    thresholds = load_thresholds_or_exit(args.thresholds)
    try:
        findings = evaluate_files(files, thresholds)
    except UnreadableSnapshot as exc:
        raise UsageError(str(exc)) from exc
    emit(render(findings, args.format), args.out)
    return EXIT_CONCERN if has_concern(findings) else EXIT_OK


def cmd_snapshot(args: argparse.Namespace) -> int:
    from hyperpod_perf.collect.local import CollectorError, run_local_collector
    from hyperpod_perf.domain.findings import has_concern
    from hyperpod_perf.report.findings_format import render
    from hyperpod_perf.rules.engine import evaluate_text

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


def cmd_checks(args: argparse.Namespace) -> int:
    from hyperpod_perf.report.catalog_format import render_catalog

    emit(render_catalog(args.format), args.out)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hyperpod-perf",
        description="Read-only performance debugger for SageMaker HyperPod clusters.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    evaluate = sub.add_parser("evaluate", help="evaluate node snapshot files (collector.sh output)")
    evaluate.add_argument("snapshots", nargs="+", metavar="SNAPSHOT", help="files or directories")
    evaluate.add_argument("--format", choices=FORMATS, default="text", help="output format")
    evaluate.add_argument("--thresholds", metavar="FILE", help="JSON or TOML threshold overrides")
    evaluate.add_argument("--out", metavar="FILE", help="write the output here instead of stdout")
    evaluate.set_defaults(handler=cmd_evaluate)

    snapshot = sub.add_parser("snapshot", help="collect and evaluate a snapshot of this machine")
    snapshot.add_argument("--local", action="store_true", required=True, help="run collector.sh here")
    snapshot.add_argument("--out", metavar="FILE", help="also keep the raw snapshot in FILE")
    snapshot.add_argument("--format", choices=FORMATS, default="text", help="output format")
    snapshot.add_argument("--thresholds", metavar="FILE", help="JSON or TOML threshold overrides")
    snapshot.set_defaults(handler=cmd_snapshot)

    checks = sub.add_parser("checks", help="list every check: id, runbook section, meaning, rule, hand-off")
    checks.add_argument("--format", choices=("text", "json", "md"), default="text", help="output format")
    checks.add_argument("--out", metavar="FILE", help="write the output here instead of stdout")
    checks.set_defaults(handler=cmd_checks)

    for register in _EXTRA_COMMANDS:
        register(sub)
    cli_conventions.apply(parser)
    return parser


#: Sub-command registrars of the other front doors (nccl, diagnose, demo, report, start).
_EXTRA_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    cli_diagnose.register,
    cli_history.register,
    cli_logs.register,
    cli_metrics.register,
    cli_nccl.register,
    cli_pipeline.register,
    cli_report.register,
]


@contextlib.contextmanager
def _streams(args: argparse.Namespace) -> Iterator[None]:
    """stdout coloured on a terminal or silenced by --quiet (stderr too: errors are printed by
    main() after this context has closed, so they always show)."""
    out = cli_conventions.output_stream(args)
    with contextlib.ExitStack() as stack:
        if out is not sys.stdout:
            stack.enter_context(contextlib.redirect_stdout(out))  # type: ignore[type-var]
        if getattr(args, "quiet", False):
            stack.enter_context(contextlib.redirect_stderr(cli_conventions.Silent()))  # type: ignore[type-var]
        yield


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = cli_conventions.parse(parser, None if argv is None else list(argv))
    try:
        with _streams(args):
            return int(args.handler(args))
    except UsageError as exc:
        print(f"hyperpod-perf: {escaping.one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except AwsAdapterError as exc:
        # Region, profile, credentials, permission: the operator's setup, one line (exit 2).
        print(f"hyperpod-perf: {escaping.one_line(_aws_line(exc))}", file=sys.stderr)
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
    except Exception as exc:
        # botocore errors that escaped an adapter (NoRegionError, ProfileNotFound, expired SSO
        # token, AccessDenied...): one sentence and exit 2. Anything else is a bug: re-raise.
        line = _aws_problem(exc)
        if line is None:
            raise
        print(f"hyperpod-perf: {line}", file=sys.stderr)
        return EXIT_USAGE


def _aws_problem(exc: BaseException) -> str | None:
    names = {cls.__module__.split(".")[0] for cls in type(exc).__mro__}
    if not names & {"botocore", "boto3"}:
        return None
    from hyperpod_perf.aws.cli_session import describe_aws_problem

    return describe_aws_problem(exc)


def _aws_line(exc: AwsAdapterError) -> str:
    """An adapter error, reworded when its cause is a setup problem the operator can fix."""
    cause = exc.__cause__
    if cause is not None and not isinstance(exc, _config_error_type()):
        line = _aws_problem(cause)
        if line:
            return f"{exc.context}: {line}" if exc.context else line
    return str(exc)


def _config_error_type() -> type:
    from hyperpod_perf.aws.cli_session import AwsConfigurationError

    return AwsConfigurationError
