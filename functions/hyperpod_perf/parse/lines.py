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
no rule changes (tests/unit/parse/test_per_section.py holds every such parser to it); a node that
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
    cached = lru_cache(maxsize=CACHED_LINES)(reader)

    @wraps(reader)
    def read(line: str) -> R:
        return cached(line) if len(line) <= MAX_CACHED_CHARS else reader(line)

    read.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    read.cache_info = cached.cache_info  # type: ignore[attr-defined]
    return read


def per_section(parser: Callable[[str], R]) -> Callable[[str], R]:
    """`parser`, with its readings of whole section texts cached (see the module docstring)."""
    cached = lru_cache(maxsize=CACHED_SECTIONS)(parser)

    @wraps(parser)
    def parse(text: str) -> R:
        return cached(text) if len(text) <= MAX_CACHED_SECTION_CHARS else parser(text)

    parse.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    parse.cache_info = cached.cache_info  # type: ignore[attr-defined]
    parse.uncached = parser  # type: ignore[attr-defined]
    return parse
