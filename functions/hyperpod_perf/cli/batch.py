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

from hyperpod_perf.domain.findings import Finding
from hyperpod_perf.rules.engine import evaluate_text
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

#: Below this many files the pool's start-up costs more than it saves.
PARALLEL_MIN_FILES = 48


class UnreadableSnapshot(OSError):
    """A snapshot file could not be read (the CLI reports it and exits 2)."""


def read_snapshot(path: Path) -> str:
    """Node output is untrusted text: undecodable bytes become U+FFFD, never an error."""
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise UnreadableSnapshot(f"{path}: cannot read: {exc.strerror or exc}") from exc


def _evaluate_chunk(paths: list[Path], thresholds: Thresholds) -> list[Finding]:
    findings: list[Finding] = []
    for path in paths:
        findings.extend(evaluate_text(read_snapshot(path), str(path), thresholds))
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
