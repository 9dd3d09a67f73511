"""`hyperpod-perf`: the command-line front door to the same engine the Lambda functions run.

Exit codes (cli/common.py): 0 no concern, 1 at least one concern, 2 usage or unreadable input (one
clear line on stderr, never a traceback), 3 the run itself failed (start --wait, demo).
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
    add_out_dir,
    add_output_file,
    announce_written,
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


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Judge every snapshot, then the fleet they make up. A file that is not a snapshot (an ssh
    timeout written in its place, a binary, notes.txt) is its node's collect.node CONCERN and the
    others are still judged; only when no file at all is usable is it a usage error (exit 2)."""
    from hyperpod_perf.cli.batch import evaluate_files
    from hyperpod_perf.domain.findings import has_concern
    from hyperpod_perf.report.findings_format import render
    from hyperpod_perf.service.offline import snapshot_cluster_findings

    files = _snapshot_files(args.snapshots)
    thresholds = load_thresholds_or_exit(args.thresholds)
    batch = evaluate_files(files, thresholds)
    if not batch.usable:
        shown = "; ".join(batch.unusable[:3]) + (
            f"; +{len(batch.unusable) - 3} more" if len(batch.unusable) > 3 else ""
        )
        raise UsageError(
            shown if len(batch.unusable) == 1 else f"no usable snapshot in {len(files)} files: {shown}"
        )
    cluster_level, not_checked = snapshot_cluster_findings(batch.signals, thresholds)
    findings = [*batch.findings, *cluster_level]
    # Several files: one line per node unless -v; one file: every check (there is one node to read).
    brief = len(files) > 1 and not args.verbose
    emit(
        render(findings, args.format, not_checked, one_line_per_node=brief, names=batch.node_names),
        args.output,
    )
    return EXIT_CONCERN if has_concern(findings) else EXIT_OK


def cmd_snapshot(args: argparse.Namespace) -> int:
    """This machine's snapshot judged; with --out DIR also kept as DIR/<node>.txt, named as the
    pipeline's raw/ and `diagnose --out DIR` name theirs, so DIR is what `evaluate DIR` and
    `diagnose --snapshots DIR` read."""
    from hyperpod_perf.cli.batch import snapshot_names
    from hyperpod_perf.collect.local import CollectorError, run_local_collector
    from hyperpod_perf.collect.runner import DirectorySink
    from hyperpod_perf.collect.snapshot import parse_container
    from hyperpod_perf.domain.findings import has_concern
    from hyperpod_perf.domain.names import NodeNames
    from hyperpod_perf.report.findings_format import render
    from hyperpod_perf.rules.engine import evaluate_snapshot

    if not args.local:
        raise UsageError("snapshot: only --local is supported (remote nodes: use `diagnose`)")
    thresholds = load_thresholds_or_exit(args.thresholds)
    try:
        text = run_local_collector()
    except CollectorError as exc:
        raise UsageError(f"snapshot: {exc}") from exc
    snapshot = parse_container(text, "localhost")
    if args.out:
        sink = DirectorySink(args.out)
        sink(snapshot.node_name(), text)
        announce_written(args.out, [sink.path_for(snapshot.node_name()).name])
    findings = evaluate_snapshot(snapshot, thresholds)
    names = NodeNames([snapshot_names(snapshot)])
    emit(render(findings, args.format, names=names), args.output)
    return EXIT_CONCERN if has_concern(findings) else EXIT_OK


def cmd_checks(args: argparse.Namespace) -> int:
    """The catalog, one check (`checks gpu.xid`) or a family (`checks gpu`), with the legend of
    section letters and hand-offs; an unknown id is a usage error suggesting the closest ids."""
    from hyperpod_perf.report.catalog_format import UnknownCheckId, render_catalog

    try:
        text = render_catalog(args.format, args.check)
    except UnknownCheckId as exc:
        raise UsageError(str(exc)) from exc
    emit(text, args.output)
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
    add_output_file(evaluate)
    evaluate.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="text: every check of every node with next steps (default for one file; several files "
        "get one line per node)",
    )
    evaluate.set_defaults(handler=cmd_evaluate)

    snapshot = sub.add_parser("snapshot", help="collect and evaluate a snapshot of this machine")
    snapshot.add_argument("--local", action="store_true", required=True, help="run collector.sh here")
    add_output_file(snapshot)
    add_out_dir(snapshot, "the raw snapshot as <node>.txt (what evaluate DIR reads)")
    snapshot.add_argument("--format", choices=FORMATS, default="text", help="output format")
    snapshot.add_argument("--thresholds", metavar="FILE", help="JSON or TOML threshold overrides")
    snapshot.set_defaults(handler=cmd_snapshot)

    checks = sub.add_parser("checks", help="list every check: id, runbook section, meaning, rule, hand-off")
    checks.add_argument(
        "check", nargs="?", metavar="ID", help="show this check (gpu.xid) or family (gpu) only"
    )
    checks.add_argument("--format", choices=("text", "json", "md"), default="text", help="output format")
    add_output_file(checks)
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
