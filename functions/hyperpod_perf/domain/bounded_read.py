"""Reading a file argument with a bound, whatever the file is.

Why not `Path.read_bytes()` guarded by `stat().st_size`: a character device (`/dev/zero`), a FIFO
or a process substitution (`<(scontrol show hostnames)`, a pipe) reports size 0 and never ends, or
ends late, so memory grew until the process was killed (issue 24, finding 1). Here every read
asks for at most `limit + 1` bytes in total, so memory is bounded by construction: the caller
learns the file was larger and says so (a clear message, exit 2, or a finding), instead of a
MemoryError.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: One read call asks for at most this much (a pipe hands over what it has, in pieces).
_CHUNK = 1024 * 1024


class FileTooLarge(ValueError):
    """More than the bound was there to read (the message names the file and the bound)."""


@dataclass(frozen=True)
class Prefix:
    """The first bytes of a file, and whether there was more."""

    data: bytes
    truncated: bool


def _read_upto(path: str | Path, limit: int) -> tuple[bytearray, bool]:
    if limit < 0:
        raise ValueError("limit must not be negative")
    buffer = bytearray()
    with open(path, "rb", buffering=0) as handle:
        while len(buffer) <= limit:
            chunk = handle.read(min(_CHUNK, limit + 1 - len(buffer)))
            if not chunk:
                break
            buffer += chunk
    return buffer, len(buffer) > limit


def read_prefix(path: str | Path, limit: int) -> Prefix:
    """At most `limit` bytes from the start of `path` (one byte more is read to know if it ends)."""
    buffer, truncated = _read_upto(path, limit)
    if truncated:
        del buffer[limit:]
    return Prefix(bytes(buffer), truncated)


def read_bounded(path: str | Path, limit: int, what: str = "file") -> bytes:
    """The whole file, or FileTooLarge when it holds more than `limit` bytes (never read past it)."""
    buffer, truncated = _read_upto(path, limit)
    if truncated:
        del buffer
        raise FileTooLarge(f"{path}: {what} larger than {human_bytes(limit)}: not read")
    return bytes(buffer)


def human_bytes(count: int) -> str:
    """`8 MiB`, `512 KiB`, `100 bytes`: for messages."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"
