"""One reading per distinct line: a parser's per-line work, cached by the line's text.

Why: a node's big sections repeat their lines — the same 54 NVLink counter lines on each of 8
GPUs, the same AER error names on each of 24 PCI functions, the same `fi_info` fields on each EFA
endpoint — and the healthy nodes of a fleet print the same lines again. A line reader is a pure
function of its line (text in, an immutable reading out: tuples, frozen dataclasses, numbers), so
each distinct line is read once per process (a CLI worker, a CollectNode invocation) and every
later occurrence costs a dictionary look-up. A reader that raises is not cached (it raises again).

Bounded: at most CACHED_LINES lines per reader, least recently used first out, and only lines of
up to MAX_CACHED_CHARS: a hostile node's megabyte line is read, never kept.

`per_section` does the same for a whole section's text, for the parsers whose section a healthy
fleet of one instance type prints identically on every node: `fi_info` (the same providers and
domains), the AER counters (the same PCI functions, all zero), the PCIe replay counters, the
topology matrix, the CPU governors, the EFA port states. Those parsers return frozen readings that
no rule changes (tests/unit/parse/test_line_readers.py holds every such parser to it); a node that
differs — one error, one port down — is read afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import TypeVar

CACHED_LINES = 4096
MAX_CACHED_CHARS = 256
#: Distinct section texts kept per parser (instance types × the few states a healthy node shows).
CACHED_SECTIONS = 16
#: Longer sections are parsed every time (a p5's AER section is ~7 KB, its fi_info ~8 KB).
MAX_CACHED_SECTION_CHARS = 64 * 1024

R = TypeVar("R")


def per_line(reader: Callable[[str], R]) -> Callable[[str], R]:
    """`reader`, with its readings of short lines cached (see the module docstring)."""
    return _cached_up_to(reader, entries=CACHED_LINES, max_chars=MAX_CACHED_CHARS)


def per_section(parser: Callable[[str], R]) -> Callable[[str], R]:
    """`parser`, with its readings of whole section texts cached (see the module docstring)."""
    return _cached_up_to(parser, entries=CACHED_SECTIONS, max_chars=MAX_CACHED_SECTION_CHARS)


def _cached_up_to(function: Callable[[str], R], *, entries: int, max_chars: int) -> Callable[[str], R]:
    """`function` through an LRU of `entries` texts, for texts of up to `max_chars` only."""
    cached = lru_cache(maxsize=entries)(function)

    @wraps(function)
    def call(text: str) -> R:
        return cached(text) if len(text) <= max_chars else function(text)

    call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    call.cache_info = cached.cache_info  # type: ignore[attr-defined]
    call.uncached = function  # type: ignore[attr-defined]
    return call
