"""`hyperpod-perf logs analyze`: job-log forensics of the training job's own NCCL / PyTorch logs.

Reads files, directories (recursively; `.gz` decompressed), `s3://` prefixes and a CloudWatch
Logs group, streaming every log once; prints the nccl.transport / nccl.env / nccl.memlock /
nccl.timeout findings. Exit codes as `evaluate`: 0 no concern, 1 a concern, 2 usage or
unreadable input (one line on stderr).
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hyperpod_perf.cli.common import (
    EXIT_CONCERN,
    EXIT_OK,
    UsageError,
    add_aws_options,
    add_output_file,
    emit,
    first_line,
    instance_type_arg,
)
from hyperpod_perf.domain.bounded_stream import ReadBounds, bounded_lines, gunzip_bounded

_BLOCK = 4 * 1024 * 1024


def register(sub: argparse._SubParsersAction) -> None:
    logs = sub.add_parser("logs", help="job-log forensics: the training job's own NCCL / PyTorch logs")
    logs_sub = logs.add_subparsers(dest="logs_command", required=True)
    analyze = logs_sub.add_parser(
        "analyze", help="transport used, harmful NCCL/FI settings, memory registration, hangs and culprits"
    )
    analyze.add_argument(
        "paths", nargs="*", metavar="PATH", help="log files, directories, s3://bucket/prefix"
    )
    analyze.add_argument(
        "--log-group", metavar="NAME", help="a CloudWatch Logs group holding the job's output"
    )
    analyze.add_argument("--since", default="3h", help="window for --log-group, e.g. 90m, 3h, 1d")
    analyze.add_argument("--filter", metavar="PATTERN", help="CloudWatch Logs filter pattern for --log-group")
    analyze.add_argument(
        "--instance-type",
        type=instance_type_arg,
        help="the job's instance type, e.g. ml.p5.48xlarge (is EFA expected?)",
    )
    analyze.add_argument("--thresholds", metavar="FILE", help="JSON or TOML threshold overrides")
    analyze.add_argument(
        "--price-per-hour",
        type=float,
        metavar="USD",
        help="what one instance of --instance-type costs per hour: the straggler's GPU-hours in dollars",
    )
    add_aws_options(analyze)
    analyze.add_argument("--format", choices=("text", "json", "md"), default="text", help="output format")
    add_output_file(analyze)
    analyze.add_argument(
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="worker processes for large local logs (default: one per CPU)",
    )
    analyze.set_defaults(handler=cmd_analyze)


def local_logs(paths: list[str]) -> list[Path]:
    """The files named, directories expanded recursively (hidden entries skipped), in name order."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(
                sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
                )
            )
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"{raw}: no such file or directory")
    return files


class _LogFile:
    """A local log opened when the scan reaches it (one log open at a time).

    `blocks()` gives its bytes in blocks of _BLOCK (a `.gz` inflated within the bounds of
    `domain.bounded_stream`); iterating gives its lines, none longer than MAX_LINE_BYTES. What
    a bound cut is recorded in `bounds`."""

    def __init__(self, path: Path, bounds: ReadBounds) -> None:
        self.path, self.bounds = path, bounds

    def __iter__(self) -> Iterator[bytes]:
        return bounded_lines(self.blocks(), self.bounds)

    def _raw(self) -> Iterator[bytes]:
        try:
            handle = open(self.path, "rb", buffering=0)  # noqa: SIM115 - closed below
        except OSError as exc:
            raise UsageError(f"{self.path}: cannot read: {exc.strerror or exc}") from exc
        with handle:
            while True:
                try:
                    block = handle.read(_BLOCK)
                except OSError as exc:
                    raise UsageError(f"{self.path}: cannot read: {exc.strerror or exc}") from exc
                if not block:
                    return
                yield block

    def blocks(self) -> Iterator[bytes]:
        if self.path.suffix == ".gz":
            return gunzip_bounded(self._raw(), str(self.path), self.bounds)
        return self._raw()


#: Local logs larger than this in total are read by several processes, in newline-aligned parts.
PARALLEL_MIN_BYTES = 64 * 1024 * 1024
PART_BYTES = 64 * 1024 * 1024


class _LogPart:
    """Bytes [start, end) of a plain local log, both on line starts; iterating yields its lines
    (none longer than MAX_LINE_BYTES)."""

    def __init__(self, path: Path, start: int, end: int, bounds: ReadBounds) -> None:
        self.path, self.start, self.end, self.bounds = path, start, end, bounds

    def __iter__(self) -> Iterator[bytes]:
        return bounded_lines(self.blocks(), self.bounds)

    def blocks(self) -> Iterator[bytes]:
        """Bytes [start, end) in blocks of _BLOCK (for `block_records`)."""
        try:
            handle = open(self.path, "rb", buffering=0)  # noqa: SIM115 - closed below
        except OSError as exc:
            raise UsageError(f"{self.path}: cannot read: {exc.strerror or exc}") from exc
        with handle:
            handle.seek(self.start)
            left = self.end - self.start
            while left > 0 and (block := handle.read(min(_BLOCK, left))):
                left -= len(block)
                yield block


def _next_line_start(handle: Any, offset: int, size: int) -> int:
    """The first start of a record at or after `offset`: a line start (searched in blocks: a line
    may be any length) that is not the hard-wrapped continuation of the line before it (a part
    must not begin inside a wrapped record, which only the part before could join)."""
    from hyperpod_perf.joblogs.normalize import MAX_JOINED_LINES, starts_record

    handle.seek(offset)
    position = offset
    while position < size:
        block = handle.read(_BLOCK)
        if not block:
            break
        newline = block.find(b"\n")
        if newline < 0:
            position += len(block)
            continue
        start = newline + 1
        for _ in range(MAX_JOINED_LINES + 1):  # past a wrapped record's continuation lines
            end = block.find(b"\n", start)
            if end < 0 or starts_record(block[start:end]):
                break
            start = end + 1
        return min(position + start, size)
    return size


def _timing_file(path: Path) -> bool:
    """An NCCL Inspector log or a flight-recorder dump: read whole by one process (a v4.3
    Inspector record needs its marker, a pickle cannot be cut at a newline)."""
    from hyperpod_perf.straggler import flight_recorder, inspector

    with open(path, "rb") as handle:
        head = handle.read(4096)
    return inspector.sniff(head) or flight_recorder.sniff(head, str(path))


def _parts(files: list[Path], part_bytes: int | None = None) -> list[list[tuple[str, Any]]]:
    """The logs cut into parts of about `part_bytes` for the workers, each part a list of (name,
    lines): plain files cut at newlines, gzip and timing files whole, small files bundled
    (1,024 ranks' Inspector logs are a few parts, not 1,024 scans to merge)."""
    part_bytes = part_bytes or PART_BYTES
    parts: list[list[tuple[str, Any]]] = []
    bundle: list[tuple[str, Any]] = []
    bundled = 0
    shared = ReadBounds()  # one per part: what its scan reports
    for path in files:
        size = path.stat().st_size
        if size <= part_bytes or path.suffix == ".gz" or _timing_file(path):
            if bundle and bundled + size > part_bytes:
                parts.append(bundle)
                bundle, bundled, shared = [], 0, ReadBounds()
            bundle.append((str(path), _LogFile(path, shared)))
            bundled += size if path.suffix != ".gz" else size * 10  # a gzip log inflates
            continue
        starts = [0]
        with open(path, "rb", buffering=0) as handle:
            for cut in range(part_bytes, size, part_bytes):
                start = _next_line_start(handle, max(cut, starts[-1]), size)
                if start < size and start > starts[-1]:
                    starts.append(start)
        starts.append(size)
        for start, end in itertools.pairwise(starts):
            name = str(path) if start == 0 else f"{path} (from byte {start})"
            parts.append([(name, _LogPart(path, start, end, ReadBounds()))])
    if bundle:
        parts.append(bundle)
    return parts


def _scan_part(job: tuple[list[tuple[str, Any]], str | None]) -> Any:
    """One part, scanned in a worker process (the scan comes back pickled, its cache dropped)."""
    from hyperpod_perf.joblogs import scan_logs

    logs, instance_type = job
    scan = scan_logs(logs, instance_type, logs[0][1].bounds)  # a part's logs share their bounds
    scan.drop_cache()
    return scan


def _scan_local(files: list[Path], instance_type: str | None, jobs: int, bounds: ReadBounds) -> Any:
    from hyperpod_perf.joblogs import JobLogScan, scan_logs

    total = sum(p.stat().st_size for p in files)
    workers = jobs or (os.cpu_count() or 1)
    # parts of PART_BYTES, smaller where that leaves a worker idle
    part_bytes = min(PART_BYTES, -(-total // workers))
    parts = _parts(files, part_bytes) if total >= PARALLEL_MIN_BYTES and workers > 1 else None
    if not parts or len(parts) < 2:
        return scan_logs(((str(p), _LogFile(p, bounds)) for p in files), instance_type, bounds)
    scan = JobLogScan(instance_type, bounds)
    workers = min(workers, len(parts))
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        # in waves of one part per worker: at most `workers` part scans wait to be merged
        for wave in range(0, len(parts), workers):
            jobs_now = [(part, instance_type) for part in parts[wave : wave + workers]]
            for part_scan in pool.map(_scan_part, jobs_now):
                scan.merge(part_scan)
    scan.logs = len(files)
    return scan


def _sources(args: argparse.Namespace, bounds: ReadBounds) -> Iterator[tuple[str, Any]]:
    remote = [p for p in args.paths if p.startswith("s3://")]
    if remote or args.log_group:
        yield from _aws_sources(args, remote, bounds)


def _aws_sources(
    args: argparse.Namespace, prefixes: list[str], bounds: ReadBounds
) -> Iterator[tuple[str, Any]]:
    from datetime import UTC, datetime

    from hyperpod_perf.aws.joblogs import JobLogSources
    from hyperpod_perf.domain.errors import AwsAdapterError
    from hyperpod_perf.service.errors import DiagnosisError
    from hyperpod_perf.service.window import parse_window

    try:
        sources = JobLogSources.for_region(args.region, args.profile)
        for uri in prefixes:
            yield from sources.prefix(uri, bounds)
        if args.log_group:
            end = datetime.now(UTC)
            start = end - parse_window(args.since)
            from hyperpod_perf.joblogs.normalize import insights_pattern

            yield from sources.group(args.log_group, start, end, args.filter, bounds, insights_pattern())
    except (AwsAdapterError, DiagnosisError) as exc:
        raise UsageError(first_line(exc)) from exc


def _thresholds(args: argparse.Namespace) -> Any:
    """The thresholds file's, with --price-per-hour as the price of --instance-type."""
    from hyperpod_perf.cli.common import load_thresholds_or_exit

    thresholds = load_thresholds_or_exit(args.thresholds)
    if args.price_per_hour is None:
        return thresholds
    if not args.instance_type:
        raise UsageError("--price-per-hour needs --instance-type (the instance the price is for)")
    if not 0 < args.price_per_hour < 10_000:
        raise UsageError(f"--price-per-hour {args.price_per_hour:g}: give the instance's USD per hour")
    prices = {**dict(thresholds.instance_hour_price_usd), args.instance_type: args.price_per_hour}
    return thresholds.model_copy(update={"instance_hour_price_usd": tuple(sorted(prices.items()))})


#: Said instead of an all-clear when no record of any kind was recognised: an empty file, random
#: bytes or a log written without NCCL_DEBUG=INFO would otherwise read as "no timeout in 0 records".
NOTHING_READABLE = (
    "read {logs} log(s) but recognised no record in them: expected NCCL lines (run the job with "
    "NCCL_DEBUG=INFO), a PyTorch / torch.distributed error, NCCL Inspector output, a flight-recorder "
    "dump or trainer iteration lines; nothing was judged"
)


def cmd_analyze(args: argparse.Namespace) -> int:
    from hyperpod_perf.domain.findings import has_concern
    from hyperpod_perf.joblogs import evaluate, scan_logs
    from hyperpod_perf.report.findings_format import render

    if not args.paths and not args.log_group:
        raise UsageError("logs analyze: name log files, directories, s3:// prefixes or --log-group")
    thresholds = _thresholds(args)
    bounds = ReadBounds()
    files = local_logs([p for p in args.paths if not p.startswith("s3://")])
    scan = _scan_local(files, args.instance_type, args.jobs, bounds)
    scan.merge(scan_logs(_sources(args, bounds), args.instance_type, bounds))
    if not scan.logs:
        raise UsageError("no log files found in: " + " ".join(args.paths or [args.log_group]))
    if not scan.records and not scan.timings.records:
        raise UsageError(NOTHING_READABLE.format(logs=scan.logs))
    findings = evaluate(scan, thresholds)
    emit(render(findings, args.format), args.output)
    return EXIT_CONCERN if has_concern(findings) else EXIT_OK
