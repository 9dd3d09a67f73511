"""Many snapshot files at once: the same node engine, over every CPU of the machine.

Why processes: parsing and judging are CPU-bound pure Python, so threads would share one core.
Each worker reads its own files (no snapshot text crosses a process boundary) and returns
findings; the order of the files is kept. Small batches stay in this process (a pool costs more
than it saves below a few dozen files).
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from hyperpod_perf.collect.snapshot import SNAPSHOT_FILE_MAX_BYTES, oversized_file_problem, parse_container
from hyperpod_perf.domain.bounded_read import read_prefix
from hyperpod_perf.domain.findings import Finding
from hyperpod_perf.rules.engine import evaluate_snapshot
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

#: Below this many files the pool's start-up costs more than it saves.
PARALLEL_MIN_FILES = 48


class UnreadableSnapshot(OSError):
    """A snapshot file could not be read (the CLI reports it and exits 2)."""


def read_snapshot(path: Path, limit: int = SNAPSHOT_FILE_MAX_BYTES) -> tuple[str, bool]:
    """Node output is untrusted text: undecodable bytes become U+FFFD, never an error; at most
    `limit` bytes are read (a 300 MB file, `/dev/zero` or a FIFO keep memory flat), and the second
    value says the file went on."""
    try:
        prefix = read_prefix(path, limit)
    except OSError as exc:
        raise UnreadableSnapshot(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return prefix.data.decode("utf-8", errors="replace"), prefix.truncated


def _evaluate_chunk(paths: list[Path], thresholds: Thresholds) -> list[Finding]:
    findings: list[Finding] = []
    for path in paths:
        text, truncated = read_snapshot(path)
        snapshot = parse_container(text, str(path))
        del text
        if truncated:
            snapshot.problem(oversized_file_problem())
        findings.extend(evaluate_snapshot(snapshot, thresholds))
    return findings


def evaluate_files(
    paths: list[Path], thresholds: Thresholds = DEFAULT_THRESHOLDS, workers: int | None = None
) -> list[Finding]:
    """Every finding of every file, in file order; raises UnreadableSnapshot for a bad file."""
    workers = workers or os.cpu_count() or 1
    if workers < 2 or len(paths) < PARALLEL_MIN_FILES:
        return _evaluate_chunk(paths, thresholds)
    size = -(-len(paths) // (workers * 4))  # a few chunks per worker evens out uneven files
    chunks = [paths[i : i + size] for i in range(0, len(paths), size)]
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        results = pool.map(_evaluate_chunk, chunks, [thresholds] * len(chunks))
        return [finding for chunk in results for finding in chunk]
