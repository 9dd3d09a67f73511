"""Job-log forensics: what the training job's own NCCL / PyTorch / libfabric logs say.

A node snapshot cannot see what the job's NCCL chose: the EFA / OFI / NCCL stack lives in the
training container. This package reads the job's logs instead, streaming and with bounded
state: `normalize` (launcher prefixes, CloudWatch exports, glued and wrapped lines), `scan`
(what each line tells), `culprit` (who stalled first), `rules` (the findings nccl.transport,
nccl.env, nccl.memlock, nccl.timeout). Pure: the caller opens the files, objects or log streams.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

from hyperpod_perf.domain.bounded_stream import ReadBounds, read_bounded
from hyperpod_perf.domain.findings import Finding
from hyperpod_perf.joblogs.normalize import block_records, records
from hyperpod_perf.joblogs.rules import evaluate
from hyperpod_perf.joblogs.scan import JobLogScan

CHECKS = (
    "nccl.transport",
    "nccl.env",
    "nccl.memlock",
    "nccl.timeout",
    "nccl.straggler",
    "nccl.joblog_coverage",
)


def _timing_file(scan: JobLogScan, name: str, blocks: Iterator[bytes]) -> Iterator[bytes] | None:
    """Read the log here when its first bytes show a timing format (NCCL Inspector JSON lines, a
    flight-recorder dump); otherwise give its blocks back, the first one included, to be scanned
    as text."""
    from hyperpod_perf.straggler import flight_recorder, inspector

    first = next(blocks, b"")
    whole = itertools.chain((first,), blocks)
    if inspector.sniff(first):
        inspector.read_inspector(whole, name, scan.timings, scan.bounds)
        return None
    if flight_recorder.sniff(first, name):
        data = read_bounded(whole, name, scan.bounds, flight_recorder.MAX_DUMP_BYTES)
        if data is not None:
            flight_recorder.read_dump(data, name, scan.timings)
        return None
    return whole


def scan_logs(
    logs: Iterable[tuple[str, Iterable[bytes]]],
    instance_type: str | None = None,
    bounds: ReadBounds | None = None,
) -> JobLogScan:
    """Scan (name, byte lines) pairs; each log is streamed, never held whole.

    A log that can also give its bytes in big blocks (`blocks()`, as local files and S3 objects
    do) is read by `block_records`, which skips the lines no check reads without looking at them
    one by one. `bounds` is what the readers record what they cut in (the scan keeps it, and
    the findings report it): pass the one the sources were opened with."""
    scan = JobLogScan(instance_type, bounds)
    for name, lines in logs:
        scan.logs += 1
        if len(scan.sources) < 10_000:
            scan.sources.add(name)
        blocks = getattr(lines, "blocks", None)
        if blocks is not None:
            text = _timing_file(scan, name, iter(blocks()))
            if text is not None:
                scan.feed(block_records(text, name, scan.add_message, scan.bounds, scan.add_timer_block))
        else:
            # a log offering lines only (a log stream): its first line decides the format
            line_iter = iter(lines)
            first = next(line_iter, None)
            if first is None:
                continue
            as_blocks = itertools.chain((first + b"\n",), (line + b"\n" for line in line_iter))
            if _timing_file(scan, name, as_blocks) is not None:  # text: only `first` was taken
                lines_again = itertools.chain((first,), line_iter)
                scan.feed(records(lines_again, name, scan.add_body, scan.add_timer_block))
    return scan


def scan_logs_reference(
    logs: Iterable[tuple[str, Iterable[bytes]]], instance_type: str | None = None
) -> JobLogScan:
    """The reference reading: every line through the general normaliser, one record at a time.

    Slow; what the fast paths of `scan_logs` must agree with (tests compare their findings)."""
    scan = JobLogScan(instance_type)
    for name, lines in logs:
        scan.logs += 1
        if len(scan.sources) < 10_000:
            scan.sources.add(name)
        scan.feed(records(lines, name, timers=scan.add_timer_block))
    return scan


def analyze_logs(
    logs: Iterable[tuple[str, Iterable[bytes]]], instance_type: str | None = None
) -> list[Finding]:
    return evaluate(scan_logs(logs, instance_type))


__all__ = [
    "CHECKS",
    "JobLogScan",
    "ReadBounds",
    "analyze_logs",
    "evaluate",
    "scan_logs",
    "scan_logs_reference",
]
