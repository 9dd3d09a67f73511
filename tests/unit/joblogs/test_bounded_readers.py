"""The job-log readers are bounded by construction: hostile inputs from the outside audit (issue 24.1).

The audit's inputs, generated on the fly and streamed (never held whole, never written to disk
except the small gzip): a 0.9 MB gzip of 200 MB of NULs (it took 22 s and 433 MB before), 2 GB of
NULs without a newline (it ran the NcclResults function out of memory), a line of 1 GiB inside
an otherwise normal log. Peak memory is measured with tracemalloc (Python allocations, where
`rest + chunk` used to grow) and, for the CLI end to end, as the child process's peak RSS.
"""

from __future__ import annotations

import gzip
import json
import resource
import subprocess
import sys
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hyperpod_perf.domain.bounded_stream import (
    MAX_LINE_BYTES,
    MAX_RATIO,
    PIECE_BYTES,
    RATIO_AFTER_BYTES,
    ReadBounds,
    bounded_lines,
    gunzip_bounded,
)
from hyperpod_perf.joblogs import evaluate, scan_logs

REAL = Path(__file__).parents[2] / "fixtures" / "real" / "joblogs"
MIB = 1024 * 1024
NULS = bytes(4 * MIB)  # one block, yielded again and again: the input costs no memory


def nul_gzip(total: int, level: int = 1) -> Iterator[bytes]:
    """A gzip stream of `total` NUL bytes, compressed on the fly (level 1: the audit's 0.9 MB)."""
    packer = zlib.compressobj(level, zlib.DEFLATED, 31)
    one = bytes(MIB)
    for _ in range(total // MIB):
        if out := packer.compress(one):
            yield out
    yield packer.flush()


def nuls(total: int) -> Iterator[bytes]:
    for _ in range(total // len(NULS)):
        yield NULS


def peak(run: Callable[[], object]) -> tuple[object, int, float]:
    """(result, peak traced bytes above the start, seconds) of `run()`."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    try:
        result = run()
    finally:
        seconds = time.perf_counter() - started
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return result, top - base, seconds


class Blocks:
    """A log as the readers offer it: its bytes in blocks."""

    def __init__(self, make: Callable[[], Iterator[bytes]], bounds: ReadBounds) -> None:
        self.make, self.bounds = make, bounds

    def blocks(self) -> Iterator[bytes]:
        return self.make()

    def __iter__(self) -> Iterator[bytes]:
        return bounded_lines(self.make(), self.bounds)


def test_the_audits_gzip_of_200_mb_of_nuls_is_a_finding_in_flat_memory():
    # Given the audit's input: 200 MB of NULs, gzip level 1 (about 0.9 MB)
    compressed = b"".join(nul_gzip(200 * MIB))
    assert 0.8 * MIB < len(compressed) < 1.0 * MIB
    bounds = ReadBounds()
    # When it is inflated by the job-log reader
    out, traced, seconds = peak(
        lambda: sum(len(piece) for piece in gunzip_bounded([compressed], "s3://b/job/bomb.log.gz", bounds))
    )
    # Then reading stops at the ratio bound, about RATIO_AFTER_BYTES out (the last piece not given),
    assert RATIO_AFTER_BYTES - PIECE_BYTES <= out <= RATIO_AFTER_BYTES + PIECE_BYTES  # type: ignore[operator]
    (source, why), *_ = bounds.cuts
    assert source == "s3://b/job/bomb.log.gz" and f"above {MAX_RATIO}:1" in why and "gzip bomb" in why
    # in flat memory (the compressed input itself is 0.9 MB) and quickly (it took 22 s and 433 MB)
    assert traced < 8 * MIB, traced  # a few 1 MiB pieces and the input itself
    assert seconds < 2.0


def test_a_2_gb_gzip_bomb_stops_after_its_first_pieces():
    # Given the audit's second input: 2 GB of NULs gzipped (generated lazily: only what is read)
    bounds = ReadBounds()
    # When it is inflated
    out, traced, seconds = peak(
        lambda: sum(len(piece) for piece in gunzip_bounded(nul_gzip(2048 * MIB), "bomb2g.gz", bounds))
    )
    # Then it stops at the ratio bound having produced about RATIO_AFTER_BYTES, in flat memory
    assert out <= RATIO_AFTER_BYTES + PIECE_BYTES  # type: ignore[operator]
    assert "gzip bomb" in bounds.cuts[0][1]
    assert traced < 8 * MIB, traced  # a few 1 MiB pieces and the input itself
    assert seconds < 2.0


def test_a_gzip_bomb_in_a_log_directory_is_reported_and_the_real_log_beside_it_is_judged(tmp_path):
    # Given the audit's 0.9 MB gzip of 200 MB of NULs beside a real log
    with (tmp_path / "bomb.log.gz").open("wb") as out:
        for piece in nul_gzip(200 * MIB):
            out.write(piece)
    (tmp_path / "rank0.log").write_bytes((REAL / "nccl-563-register-memory-pdsh.log").read_bytes())
    # When the CLI analyses the directory in its own process
    child = (
        "import sys\n"
        "from hyperpod_perf.cli import main\n"
        "code = main(['logs', 'analyze', sys.argv[1], '--format', 'json', '-o', sys.argv[2]])\n"
        "hwm = next(line for line in open('/proc/self/status') if line.startswith('VmHWM'))\n"
        "print(code, hwm.split()[1])\n"
    )
    started = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-c", child, str(tmp_path), str(tmp_path / "out.json")],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - started
    # VmHWM: this process's own peak RSS (ru_maxrss would carry the forking pytest's across exec)
    code, maxrss_kib = (int(v) for v in run.stdout.split())
    findings = json.loads((tmp_path / "out.json").read_text())["findings"]
    # Then the real log's concern is there, the bomb is one finding naming the file and the bound,
    assert code == 1 and any(f["check"] == "nccl.memlock" for f in findings)
    (coverage,) = [f for f in findings if f["check"] == "nccl.joblog_coverage"]
    assert coverage["evidence"]["cuts"][0][0] == str(tmp_path / "bomb.log.gz")
    assert "gzip bomb" in coverage["summary"]
    # and the whole process (interpreter and imports included) stayed small and quick
    assert maxrss_kib < 200 * 1024, maxrss_kib
    assert seconds < 60  # ~5 s idle; the bound guards against inflating it all, not load


def test_two_gigabytes_of_nuls_without_a_newline_are_one_cut_line_in_flat_memory():
    # Given 2 GB of NULs and no newline, in 4 MiB blocks (the bytes exist once)
    bounds = ReadBounds()
    log = Blocks(lambda: nuls(2048 * MIB), bounds)
    # When the scan's block reader reads it
    scan, traced, seconds = peak(lambda: scan_logs([("nuls.log", log)], bounds=bounds))
    # Then it is one line, cut at MAX_LINE_BYTES and counted, in memory far below one block
    assert bounds.lines_cut == 1
    assert traced < 2 * MIB, traced
    assert seconds < 60  # ~3 s idle: 2 GB passes once through memory, never held
    (coverage,) = [f for f in evaluate(scan) if f.check == "nccl.joblog_coverage"]  # type: ignore[arg-type]
    assert "1 line(s) longer than 64 KiB cut there" in coverage.summary


def test_two_gigabytes_of_nuls_through_the_line_reader_are_one_cut_line_in_flat_memory():
    bounds = ReadBounds()
    lengths, traced, _ = peak(lambda: [len(line) for line in bounded_lines(nuls(2048 * MIB), bounds)])
    assert lengths == [MAX_LINE_BYTES] and bounds.lines_cut == 1
    assert traced < 2 * MIB, traced


def test_a_huge_line_inside_a_real_log_is_cut_and_what_follows_it_is_still_read():
    # Given a real memory-registration excerpt with 256 MiB of NULs glued into the middle of it
    real = (REAL / "nccl-563-register-memory-pdsh.log").read_bytes()
    head, tail = real[: len(real) // 2], real[len(real) // 2 :]
    head = head[: head.rfind(b"\n") + 1]
    tail = real[len(head) :]

    def blocks() -> Iterator[bytes]:
        yield head + b"garbage"
        yield from nuls(256 * MIB)
        yield b"\n" + tail

    for reader in ("blocks", "lines"):
        bounds = ReadBounds()
        log = Blocks(blocks, bounds)
        source = log if reader == "blocks" else list(iter(log))
        # When it is scanned
        scan = scan_logs([("rank0.log", source)], bounds=bounds)  # type: ignore[list-item]
        findings = evaluate(scan)
        # Then the registration failure after the huge line is still found, and the line counted
        assert [f.node for f in findings if f.check == "nccl.memlock"] == ["ip-10-0-87-143"], reader
        assert bounds.lines_cut == 1, reader


@pytest.mark.parametrize("size", [1, 7, 4096, 1 << 20])
def test_bounded_lines_give_the_lines_of_a_normal_log_exactly(size):
    data = b"".join(p.read_bytes() for p in sorted(REAL.glob("*.log")))
    blocks = [data[i : i + size] for i in range(0, len(data), size)]
    bounds = ReadBounds()
    assert list(bounded_lines(blocks, bounds)) == data.split(b"\n")[: -1 if data.endswith(b"\n") else None]
    assert bounds.lines_cut == 0


def test_lines_at_the_bound_pass_and_one_byte_more_is_cut():
    at, over = b"a" * MAX_LINE_BYTES, b"b" * (MAX_LINE_BYTES + 1)
    bounds = ReadBounds()
    lines = list(bounded_lines([at + b"\n" + over + b"\nend\n"], bounds))
    assert lines == [at, over[:MAX_LINE_BYTES], b"end"] and bounds.lines_cut == 1


def test_concatenated_gzip_members_are_read_whole_and_a_cut_one_is_reported():
    first, second = b"one\ntwo\n", b"three\n"
    stream = gzip.compress(first) + gzip.compress(second)
    bounds = ReadBounds()
    assert b"".join(gunzip_bounded([stream[i : i + 3] for i in range(0, len(stream), 3)], "x", bounds)) == (
        first + second
    )
    assert not bounds.reached
    cut = ReadBounds()
    assert b"".join(gunzip_bounded([stream[:-4]], "x.gz", cut)) == first + second
    assert cut.cuts == [("x.gz", "gzip stream cut short after 14 bytes (what came before was read)")]


def test_the_per_object_size_bound_keeps_exactly_that_many_bytes():
    text = b"".join(b"line %06d of an ordinary log\n" % i for i in range(20_000))
    bounds = ReadBounds()
    out = b"".join(gunzip_bounded([gzip.compress(text)], "big.gz", bounds, max_bytes=100_000))
    assert out == text[:100_000]
    assert bounds.cuts == [("big.gz", "decompressed size reached the 100,000 bytes per-object bound")]


def test_the_ratio_bound_does_not_stop_an_ordinary_log_below_it():
    # Given a real-excerpt log repeated to 32 MiB (it compresses about 40:1, the bench's worst case)
    unit = b"".join(p.read_bytes() for p in sorted(REAL.glob("*.log")))
    text = unit * (32 * MIB // len(unit) + 1)
    compressed = gzip.compress(text, 6)
    assert len(text) / len(compressed) < MAX_RATIO
    bounds = ReadBounds()
    assert sum(len(p) for p in gunzip_bounded([compressed], "ok.gz", bounds)) == len(text)
    assert not bounds.reached


def test_bounds_merge_and_round_trip_through_json():
    a, b = ReadBounds(lines_cut=2), ReadBounds(objects_skipped=1, events_cut=True)
    b.cut("s3://x/1.gz", "corrupt")
    merged = a.merge(b)
    assert ReadBounds.from_dict(json.loads(json.dumps(merged.to_dict()))) == merged
    assert merged.reached and merged.objects_cut == 1 and merged.lines_cut == 2


def test_peak_rss_reads_kib_on_linux():
    # VmHWM is in kB (the CLI test above reads it so); a sanity check of the unit
    with open("/proc/self/status") as status:
        hwm = next(line for line in status if line.startswith("VmHWM")).split()
    assert hwm[2] == "kB" and int(hwm[1]) > 10 * 1024
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 10 * 1024
