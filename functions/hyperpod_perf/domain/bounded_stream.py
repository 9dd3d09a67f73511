"""Untrusted log bytes read with bounds, so memory stays flat whatever the input.

A job's logs are whatever its ranks (or an attacker who can write to the log bucket) wrote: one
line of a gigabyte of NULs, a 9 MB gzip that inflates to 2 GB. Every reader of job logs goes
through these two functions, which hold at most one piece of a fixed size at a time:

- `gunzip_bounded` inflates gzip members (concatenated members too, as `gzip` writes them when a
  log is appended to) `PIECE_BYTES` at a time and stops at a decompressed size per object and at
  a decompression ratio (a gzip bomb is reported, never inflated);
- `bounded_lines` splits blocks into lines of at most `MAX_LINE_BYTES`: a longer line is cut
  there, the rest of it skipped up to its newline and counted, never joined without bound.

What a bound stopped is recorded in `ReadBounds` (per object, with the reason), which the job-log
findings report: the findings then cover what was read, and say what was not. Pure: no I/O, the
caller hands in the byte chunks it read.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

#: NCCL formats each debug line into a 1,024-byte buffer (NVIDIA/nccl src/debug.cc
#: `char buffer[1024]`); glog caps a message at 30,000 bytes (`LogMessage::kMaxLogMessageLen`).
#: A line longer than this is not a log record any reader expects: it is cut and counted.
MAX_LINE_BYTES = 64 * 1024
#: Decompressed bytes read of one object (a rank's log of several GiB is read whole).
MAX_OBJECT_BYTES = 4 * 1024**3
#: Job logs compress 10-45x with gzip (measured: the bench's realistic mix 14x, its worst case of
#: repeated NCCL excerpts 39x at level 6); a ratio above this, once RATIO_AFTER_BYTES came out, is
#: a gzip bomb (NULs compress about 1,000:1) or not a text log, and reading stops.
MAX_RATIO = 200
RATIO_AFTER_BYTES = 16 * 1024**2
#: What one inflate step may produce (the memory a gzip object costs while it is read).
PIECE_BYTES = 1024 * 1024
#: Objects whose reading a bound stopped, listed by name (the rest are counted).
MAX_LISTED_CUTS = 100
_GZIP = 16 + zlib.MAX_WBITS


@dataclass
class ReadBounds:
    """What a read skipped or cut because of its bounds: reported to the operator, never silent."""

    objects_skipped: int = 0
    bytes_cut: bool = False
    events_cut: bool = False
    #: Lines longer than MAX_LINE_BYTES, cut there.
    lines_cut: int = 0
    #: (object, why) of each object not read to its end (a gzip bomb, a corrupt or cut gzip,
    #: the per-object size), at most MAX_LISTED_CUTS; `objects_cut` counts them all.
    cuts: list[tuple[str, str]] = field(default_factory=list)
    objects_cut: int = 0

    def cut(self, source: str, why: str) -> None:
        self.objects_cut += 1
        if len(self.cuts) < MAX_LISTED_CUTS:
            self.cuts.append((source, why))

    @property
    def reached(self) -> bool:
        return bool(
            self.objects_skipped or self.bytes_cut or self.events_cut or self.lines_cut or self.objects_cut
        )

    def merge(self, other: ReadBounds) -> ReadBounds:
        """Fold in another part's bounds (parallel reading, Distributed Map children)."""
        self.objects_skipped += other.objects_skipped
        self.bytes_cut = self.bytes_cut or other.bytes_cut
        self.events_cut = self.events_cut or other.events_cut
        self.lines_cut += other.lines_cut
        self.objects_cut += other.objects_cut
        self.cuts.extend(other.cuts[: max(0, MAX_LISTED_CUTS - len(self.cuts))])
        return self

    def to_dict(self) -> dict[str, object]:
        return {
            "objects_skipped": self.objects_skipped,
            "bytes_cut": self.bytes_cut,
            "events_cut": self.events_cut,
            "lines_cut": self.lines_cut,
            "objects_cut": self.objects_cut,
            "cuts": [list(c) for c in self.cuts],
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> ReadBounds:
        cuts = data.get("cuts") or []
        return cls(
            objects_skipped=int(data.get("objects_skipped") or 0),  # type: ignore[call-overload]
            bytes_cut=bool(data.get("bytes_cut")),
            events_cut=bool(data.get("events_cut")),
            lines_cut=int(data.get("lines_cut") or 0),  # type: ignore[call-overload]
            cuts=[(str(c[0]), str(c[1])) for c in cuts if isinstance(c, list | tuple) and len(c) == 2][
                :MAX_LISTED_CUTS
            ],  # type: ignore[union-attr]
            objects_cut=int(data.get("objects_cut") or 0),  # type: ignore[call-overload]
        )


def _mib(size: int) -> str:
    return f"{size / 2**20:,.0f} MiB" if size >= 2**20 else f"{size:,} bytes"


def gunzip_bounded(
    chunks: Iterable[bytes],
    source: str,
    bounds: ReadBounds,
    *,
    max_bytes: int = MAX_OBJECT_BYTES,
    max_ratio: float = MAX_RATIO,
    ratio_after: int = RATIO_AFTER_BYTES,
) -> Iterator[bytes]:
    """The decompressed bytes of a gzip stream, in pieces of at most PIECE_BYTES, within bounds.

    Stops (recording why in `bounds`) at `max_bytes` out, at a ratio out/in above `max_ratio`
    once `ratio_after` bytes came out, at corrupt data and at a stream cut before its end; what
    came out before is kept."""
    inflater = zlib.decompressobj(_GZIP)
    consumed = produced = 0
    in_member = False  # the inflater has taken input of a member that has not ended yet
    for chunk in chunks:
        consumed += len(chunk)
        data = chunk
        while data or in_member:
            try:
                out = inflater.decompress(data, PIECE_BYTES)
            except zlib.error as exc:
                bounds.cut(source, f"not a readable gzip stream after {_mib(produced)} ({exc})")
                return
            in_member = in_member or bool(data)
            data = inflater.unconsumed_tail
            if inflater.eof:  # a member ended: the next one (if any) starts in unused_data
                data, in_member = inflater.unused_data + data, False
                inflater = zlib.decompressobj(_GZIP)
                if len(data) < 512 and not data.strip(b"\0"):
                    data = b""  # trailing padding, not another member
            if out:
                produced += len(out)
                if produced > max_bytes:
                    yield out[: len(out) - (produced - max_bytes)]
                    bounds.cut(source, f"decompressed size reached the {_mib(max_bytes)} per-object bound")
                    return
                used = consumed - len(data)  # input inflated so far (the rest waits in `data`)
                if produced >= ratio_after and produced > max_ratio * used:
                    bounds.cut(
                        source,
                        f"decompression ratio above {max_ratio:g}:1 ({_mib(used)} inflating past "
                        f"{_mib(produced)}): a gzip bomb or not a text log; not read further",
                    )
                    return
                yield out
            if not data and len(out) < PIECE_BYTES:
                break  # this chunk is used up and nothing is left inside the inflater
    if in_member:
        bounds.cut(source, f"gzip stream cut short after {_mib(produced)} (what came before was read)")


def line_aligned_blocks(
    blocks: Iterable[bytes], bounds: ReadBounds, *, max_line: int = MAX_LINE_BYTES
) -> Iterator[bytes]:
    """The stream in buffers that end at a newline (for readers that scan a whole buffer with
    one regex). The partial line carried between blocks never grows past `max_line`: a longer
    line is cut there (counted) and the rest of it skipped."""
    carry = b""
    skipping = False
    for block in blocks:
        if skipping:
            newline = block.find(b"\n")
            if newline < 0:
                continue
            block, skipping = block[newline + 1 :], False
        end = block.rfind(b"\n") + 1
        if not end:
            room = max_line - len(carry)
            if len(block) > room:
                yield carry + block[:room] + b"\n"
                bounds.lines_cut += 1
                carry, skipping = b"", True
            else:
                carry += block
            continue
        yield carry + block[:end] if carry else block[:end]
        carry = block[end:]
        if len(carry) > max_line:
            yield carry[:max_line] + b"\n"
            bounds.lines_cut += 1
            carry, skipping = b"", True
    if carry:
        yield carry + b"\n"


def line_range(chunks: Iterable[bytes], first: int, start: int, end: int) -> Iterator[bytes]:
    """The lines whose first byte lies in [start, end) of an object, from `chunks` that begin at
    byte `first` (= start - 1 when start > 0, else 0) and run past `end` by up to a line.

    How one large object is read by several Distributed Map children: each child reads its range
    and the few bytes around it, and every line is read by exactly one child (the line that
    crosses `end` belongs to this range; the next range skips it)."""
    position = first
    skipping = start > 0  # the byte before `start` tells whether a line starts at `start`
    for chunk in chunks:
        if skipping:
            newline = chunk.find(b"\n")
            if newline < 0:
                position += len(chunk)
                continue
            position += newline + 1
            chunk, skipping = chunk[newline + 1 :], False
            if position >= end:
                return  # the line that crosses `start` also crosses `end`: the range owns none
        last = max(end - 1 - position, 0)  # the newline at or after byte end - 1 ends the range
        newline = chunk.find(b"\n", last)
        if newline >= 0:
            yield chunk[: newline + 1]
            return
        yield chunk
        position += len(chunk)


def read_bounded(blocks: Iterable[bytes], source: str, bounds: ReadBounds, max_bytes: int) -> bytes | None:
    """A whole (small) object read into memory, or None past `max_bytes` (recorded in bounds):
    for formats that cannot be streamed, such as a pickled flight-recorder dump."""
    parts: list[bytes] = []
    size = 0
    for block in blocks:
        size += len(block)
        if size > max_bytes:
            bounds.cut(source, f"larger than the {_mib(max_bytes)} bound for one dump; not read")
            return None
        parts.append(block)
    return b"".join(parts)


def bounded_lines(
    blocks: Iterable[bytes], bounds: ReadBounds, *, max_line: int = MAX_LINE_BYTES
) -> Iterator[bytes]:
    """The lines of a byte stream (without their newline), none longer than `max_line`.

    A longer line yields its first `max_line` bytes; the rest of it is skipped (found with one
    `find` per block, never held) and counted in `bounds.lines_cut`."""
    carry = b""
    skipping = False
    for block in blocks:
        start = 0
        if skipping:
            newline = block.find(b"\n")
            if newline < 0:
                continue
            skipping = False
            start = newline + 1
        end = block.rfind(b"\n") + 1
        if end <= start:  # no newline in the rest of this block
            room = max_line - len(carry)
            if len(block) - start > room:
                yield carry + block[start : start + room]
                bounds.lines_cut += 1
                carry, skipping = b"", True
            else:
                carry += block[start:]
            continue
        lines = block[start : end - 1].split(b"\n")
        if carry:
            lines[0] = carry + lines[0]
        carry = b""
        for line in lines:
            if len(line) > max_line:
                bounds.lines_cut += 1
                line = line[:max_line]
            yield line
        tail = block[end:]
        if len(tail) > max_line:
            yield tail[:max_line]
            bounds.lines_cut += 1
            skipping = True
        else:
            carry = tail
    if carry:
        yield carry
