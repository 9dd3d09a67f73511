"""`hyperpod-perf history <question>`: the run history's named questions, answered on DuckDB.

The history is read from a directory (`--dir demo-out/history`) or from the deployment's bucket
(`--s3 s3://<bucket>/history/`: the cluster's objects of the look-back are copied into a local
cache first, only those not there yet). The SQL is the text the stack's Athena named queries run.
Each day of the history is then read from a Parquet copy kept in the same cache (made once per day
and again when the day gets a new run): questions over 90 days answer in about a second instead
of re-parsing every JSON Lines object each time (bench/RESULTS.md, history).

Exit codes: 0 the question found nothing, 1 it named nodes (or concerns), 2 usage or an unreadable
history (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hyperpod_perf.cli.common import EXIT_CONCERN, EXIT_OK, UsageError, add_aws_options, add_output_file, emit
from hyperpod_perf.cli.progress import Progress

#: sub-command -> (question name, help)
COMMANDS: dict[str, tuple[str, str]] = {
    "xid": ("xid_nodes", "nodes with an Xid (any, or --code N) in the last --days"),
    "stragglers": ("chronic_stragglers", "nodes flagged slow or outlier in >= --min of the last --runs runs"),
    "serials": ("gpu_serial_moves", "GPU serials that moved between instances"),
    "bandwidth": ("pair_bandwidth_trend", "nodes whose pair bandwidth trends down"),
    "concerns": ("concerns_by_check", "the fleet's concerns by check, per day"),
}


def register(sub: argparse._SubParsersAction) -> None:
    history = sub.add_parser("history", help="questions over the run history (DuckDB; Athena when deployed)")
    questions = history.add_subparsers(dest="history_command", required=True)
    for command, (_, text) in COMMANDS.items():
        parser = questions.add_parser(command, help=text)
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--dir", type=Path, help="a local history directory (e.g. demo-out/history)")
        source.add_argument("--s3", metavar="S3_URI", help="the deployment's s3://<bucket>/history/")
        parser.add_argument("--cluster", required=True, help="the HyperPod cluster name")
        parser.add_argument("--days", type=int, default=30, help="look-back in days (default: %(default)s)")
        parser.add_argument(
            "--format",
            choices=("text", "json", "md"),
            default="text",
            help="output format (default: %(default)s)",
        )
        add_output_file(parser)
        parser.add_argument(
            "--cache",
            type=Path,
            help="where --s3 copies the objects and each day's Parquet copy is kept "
            "(default $XDG_CACHE_HOME/hyperpod-perf or ~/.cache/hyperpod-perf)",
        )
        parser.add_argument(
            "--no-cache",
            action="store_true",
            help="read the JSON Lines objects directly, writing no Parquet copy (slower)",
        )
        add_aws_options(parser)
        if command == "xid":
            parser.add_argument("--code", type=int, help="only this Xid code")
        if command == "stragglers":
            parser.add_argument("--runs", type=int, default=10, help="the last n runs (default: %(default)s)")
            parser.add_argument(
                "--min",
                type=int,
                default=3,
                dest="min_flagged",
                help="flagged in >= k of them (default: %(default)s)",
            )
        if command == "bandwidth":
            parser.add_argument(
                "--min-runs", type=int, default=3, help="runs with pairs measured (default: %(default)s)"
            )
            parser.add_argument(
                "--min-drop",
                type=float,
                default=0.05,
                help="first-to-last drop, fraction (default: %(default)s)",
            )
        parser.set_defaults(handler=cmd_history, question=COMMANDS[command][0])


def _values(args: argparse.Namespace, now: datetime) -> dict[str, Any]:
    from hyperpod_perf.history.queries import window

    if not 1 <= args.days <= 3660:
        raise UsageError("--days must be between 1 and 3660")
    values: dict[str, Any] = {"cluster": args.cluster, **window(now, args.days)}
    code = getattr(args, "code", None)
    values["code"] = "" if code is None else str(code)
    values["last_runs"] = getattr(args, "runs", 10)
    values["min_flagged"] = getattr(args, "min_flagged", 3)
    values["min_runs"] = getattr(args, "min_runs", 3)
    values["min_drop"] = getattr(args, "min_drop", 0.05)
    if values["last_runs"] < 1 or values["min_flagged"] < 1 or values["min_runs"] < 2:
        raise UsageError("--runs and --min must be at least 1, --min-runs at least 2")
    return values


def cmd_history(args: argparse.Namespace) -> int:
    from hyperpod_perf.history.duck import HistoryDb, HistoryError, cache_for
    from hyperpod_perf.history.queries import BY_NAME

    question = BY_NAME[args.question]
    now = datetime.now(UTC)
    values = _values(args, now)
    with Progress() as progress:  # a terminal only: copying 90 days from S3 and asking take a while
        root = args.dir if args.dir is not None else _sync_from_s3(args, values["since_date"], progress)
        progress.show(f"asking the history (new days copied to Parquet first): {question.title}", force=True)
        columnar = None if args.no_cache else cache_for(_cache_base(args), root)
        try:
            with HistoryDb(root, cache=columnar) as db:
                columns, rows = db.ask(question, values)
        except HistoryError as exc:
            raise UsageError(str(exc)) from exc
    emit(render(question.name, question.title, values, columns, rows, args.format), args.output)
    return EXIT_CONCERN if rows else EXIT_OK


def _cache_base(args: argparse.Namespace) -> Path:
    return args.cache or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hyperpod-perf"


def _sync_from_s3(args: argparse.Namespace, since_date: str, progress: Progress) -> Path:
    """The cluster's history objects of the look-back, copied into the cache (new ones only)."""
    from hyperpod_perf.aws import clients
    from hyperpod_perf.aws.s3 import ReportStore, split_s3_uri
    from hyperpod_perf.domain.layout import history_cluster_prefix
    from hyperpod_perf.history.rows import TABLES

    try:
        bucket, prefix = split_s3_uri(args.s3)
    except ValueError as exc:
        raise UsageError(f"--s3: {exc}") from exc
    prefix = prefix.rstrip("/") + "/" if prefix else "history/"
    root = _cache_base(args) / bucket / prefix.strip("/")
    store = ReportStore(clients.regional_client("s3", args.region, args.profile), bucket)
    copied = progress.counter(f"copying new history objects from s3://{bucket}/{prefix}")
    for table in TABLES:
        table_prefix = prefix + history_cluster_prefix(table, args.cluster).removeprefix("history/")
        for key in store.list_keys(table_prefix):
            marker = key.find("/run_date=")
            if marker < 0 or key[marker + 10 : marker + 20] < since_date or not key.endswith(".jsonl.gz"):
                continue
            target = root / key.removeprefix(prefix)
            if target.is_file():
                continue  # a run's object is written once, never changed
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(store.get_bytes(key))
            copied(key.rsplit("/", 1)[-1])
    return root


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def render(
    name: str,
    title: str,
    values: dict[str, Any],
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fmt: str,
) -> str:
    """The answer as text (aligned columns), Markdown (a table) or JSON (rows as objects)."""
    if fmt == "json":
        document = {
            "question": name,
            "title": title,
            "parameters": values,
            "columns": list(columns),
            "rows": [dict(zip(columns, row, strict=True)) for row in rows],
        }
        return json.dumps(document, indent=2, default=str) + "\n"
    cells = [[_cell(v) for v in row] for row in rows]
    since = values.get("since_date")
    heading = f"{title} — cluster {values.get('cluster')}, since {since}"
    if fmt == "md":
        lines = [f"## {heading}", ""]
        if not rows:
            return "\n".join([*lines, "No rows.", ""])
        lines.append("| " + " | ".join(columns) + " |")
        lines.append("|" + "---|" * len(columns))
        lines.extend("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells)
        return "\n".join(lines) + "\n"
    if not rows:
        return f"{heading}\nno rows\n"
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = [heading, "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines.extend("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells)
    lines.append(f"-- {len(rows)} row(s)")
    return "\n".join(lines) + "\n"
