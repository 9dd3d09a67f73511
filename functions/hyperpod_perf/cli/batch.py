"""Many snapshot files at once: the same node engine, over every CPU of the machine.

Why processes: parsing and judging are CPU-bound pure Python, so threads would share one core.
Each worker reads its own files (no snapshot text crosses a process boundary) and returns
findings and each node's fleet signals; the order of the files is kept. Small batches stay in
this process (a pool costs more than it saves below a few dozen files).

Why a bad file never stops the batch: on call, a directory of snapshots is gathered by a loop of
ssh or SSM commands, and one node that timed out leaves its error message where its snapshot
should be. That file becomes the node's `collect.node` CONCERN (naming the file and what it
holds instead), and every other node is still judged.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from hyperpod_perf.collect.snapshot import (
    BEGIN_RE,
    SNAPSHOT_FILE_MAX_BYTES,
    RawSnapshot,
    oversized_file_problem,
    parse_container,
)
from hyperpod_perf.domain import escaping
from hyperpod_perf.domain.bounded_read import read_prefix
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.domain.names import INSTANCE_ID_RE, NodeName, NodeNames
from hyperpod_perf.rules.engine import evaluate_snapshot
from hyperpod_perf.rules.fleet_signals import NodeSignals, extract
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds
from hyperpod_perf.service.gaps import collect_finding

#: Below this many files the pool's start-up costs more than it saves.
PARALLEL_MIN_FILES = 48
#: How much of a file is searched for a begin marker: the collector's first line is its `meta`
#: begin marker, so a snapshot shows one at once; a file without one there is something else.
COLLECTOR_HEAD_CHARS = 64 * 1024
#: How much of a foreign file's first line a finding quotes (an ssh error is one short line).
QUOTED_HEAD_CHARS = 160


class UnreadableSnapshot(OSError):
    """A snapshot file could not be read (becomes that node's collect.node finding)."""


@dataclass
class BatchResult:
    """What the files gave: findings in file order, the usable nodes' fleet signals, and one line
    per file that was not a snapshot (the CLI exits 2 only when no file was usable)."""

    findings: list[Finding] = field(default_factory=list)
    signals: list[NodeSignals] = field(default_factory=list)
    usable: int = 0
    unusable: list[str] = field(default_factory=list)
    #: Each usable snapshot's node with the names its `meta` section gave (host name, id).
    names: list[NodeName] = field(default_factory=list)

    @property
    def node_names(self) -> NodeNames:
        return NodeNames(self.names)

    def extend(self, other: BatchResult) -> None:
        self.findings.extend(other.findings)
        self.signals.extend(other.signals)
        self.names.extend(other.names)
        self.usable += other.usable
        self.unusable.extend(other.unusable)


def read_snapshot(path: Path, limit: int = SNAPSHOT_FILE_MAX_BYTES) -> tuple[str, bool]:
    """Node output is untrusted text: undecodable bytes become U+FFFD, never an error; at most
    `limit` bytes are read (a 300 MB file, `/dev/zero` or a FIFO keep memory flat), and the second
    value says the file went on."""
    try:
        prefix = read_prefix(path, limit)
    except OSError as exc:
        raise UnreadableSnapshot(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return prefix.data.decode("utf-8", errors="replace"), prefix.truncated


def is_collector_output(text: str) -> bool:
    """At least one `=== hpd:begin <section> ===` line near the top."""
    return any(BEGIN_RE.match(line) for line in text[:COLLECTOR_HEAD_CHARS].splitlines())


def file_node_name(path: Path) -> str:
    """The node a file stands for when its content names none: its name without `.txt`/`.log`
    (the loops that gather snapshots name each file after its node)."""
    return path.name.removesuffix(".txt").removesuffix(".log") or str(path)


def _first_line(text: str) -> str:
    for line in text[:COLLECTOR_HEAD_CHARS].splitlines():
        if line.strip():
            return escaping.one_line(line.strip())[:QUOTED_HEAD_CHARS]
    return ""


def unusable_file_finding(path: Path, why: str, reason: str, head: str = "") -> Finding:
    """The node's collect.node CONCERN for a file that is not its snapshot: the file, why, and
    the first line it holds instead (an ssh error tells the operator what went wrong)."""
    quoted = f" (it begins: {head!r})" if head else ""
    return collect_finding(
        file_node_name(path),
        Severity.CONCERN,
        f"{path}: {why}{quoted}",
        reason=reason,
        file=str(path),
        head=head,
    )


@dataclass(frozen=True)
class Unusable:
    """A file that is not a snapshot: the line for a usage error, and its node's finding."""

    line: str
    finding: Finding


def read_node_file(path: Path) -> RawSnapshot | Unusable:
    """One file as its node's parsed snapshot (with the cut noted when it went on past the
    bound), or why it is not one; never an exception."""
    try:
        text, truncated = read_snapshot(path)
    except UnreadableSnapshot as exc:
        why = str(exc).removeprefix(f"{path}: ")
        return Unusable(str(exc), unusable_file_finding(path, why, "SnapshotUnreadable"))
    if not is_collector_output(text):
        why = "not collector output (no '=== hpd:begin <section> ===' line)"
        return Unusable(
            f"{path}: {why}; pass the files collector.sh wrote",
            unusable_file_finding(path, why, "NotCollectorOutput", _first_line(text)),
        )
    snapshot = parse_container(text, str(path))
    if truncated:
        snapshot.problem(oversized_file_problem())
    return snapshot


def snapshot_names(snapshot: RawSnapshot) -> NodeName:
    """The node a snapshot stands for and the names its `meta` section reports (collector.sh
    writes the instance id and `hostname`), so the output can show both."""
    meta = snapshot.meta
    node = snapshot.node_name()
    instance = node if INSTANCE_ID_RE.match(node) else None
    return NodeName(node, instance, meta.get("hostname") or None)


def _evaluate_chunk(paths: list[Path], thresholds: Thresholds) -> BatchResult:
    result = BatchResult()
    for path in paths:
        snapshot = read_node_file(path)
        if isinstance(snapshot, Unusable):
            result.unusable.append(snapshot.line)
            result.findings.append(snapshot.finding)
            continue
        result.usable += 1
        result.names.append(snapshot_names(snapshot))
        result.findings.extend(evaluate_snapshot(snapshot, thresholds))
        group = snapshot.meta.get("instance_group") or None
        result.signals.append(extract(snapshot, group=group, thresholds=thresholds))
    return result


def evaluate_files(
    paths: list[Path], thresholds: Thresholds = DEFAULT_THRESHOLDS, workers: int | None = None
) -> BatchResult:
    """Every finding of every file, in file order; a file that is not a snapshot is its node's
    collect.node finding (and counted in `unusable`), never an exception."""
    workers = workers or os.cpu_count() or 1
    if workers < 2 or len(paths) < PARALLEL_MIN_FILES:
        return _evaluate_chunk(paths, thresholds)
    size = -(-len(paths) // (workers * 4))  # a few chunks per worker evens out uneven files
    chunks = [paths[i : i + size] for i in range(0, len(paths), size)]
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        merged = BatchResult()
        for chunk in pool.map(_evaluate_chunk, chunks, [thresholds] * len(chunks)):
            merged.extend(chunk)
        return merged
