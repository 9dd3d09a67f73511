"""The fast readings of a log give exactly the findings of the reference reading.

`scan_logs` reads local files in big blocks (`block_records`: lines no check reads are skipped in
C, the common NCCL line is read without the general normaliser) and other sources line by line
with a fast sink; `scan_logs_reference` sends every line through the general normaliser. Speed
must not change a finding: the three are compared on every real excerpt, on all of them
concatenated and on their lines shuffled, with blocks cut at every size from 1 byte up."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from hyperpod_perf.joblogs import evaluate, scan_logs, scan_logs_reference
from hyperpod_perf.joblogs.normalize import (
    CANDIDATE,
    CANDIDATE_WORDS,
    INTERESTING,
    INTERESTING_WORDS,
    factored,
    interesting,
)

REAL = Path(__file__).parents[2] / "fixtures" / "real" / "joblogs"
EXCERPTS = sorted(REAL.glob("*.log"))


class InMemoryLog:
    """A log as the CLI's local files offer it: its lines, or its bytes in blocks of `block`."""

    def __init__(self, data: bytes, block: int) -> None:
        self.data, self.block = data, block

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.data.splitlines(keepends=True))

    def blocks(self) -> Iterator[bytes]:
        for start in range(0, len(self.data), self.block):
            yield self.data[start : start + self.block]


class LinesOnly:
    """A log offering lines only (an S3 object, a log stream): the line reader's fast path."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.data.splitlines(keepends=True))


def readings(data: bytes, block: int, instance_type: str | None = None) -> tuple[list, list, list]:
    def findings(scan) -> list:
        return [(scan.records, scan.logs)] + [f.model_dump(mode="json") for f in evaluate(scan)]

    reference = findings(scan_logs_reference([("job.log", LinesOnly(data))], instance_type))
    lines = findings(scan_logs([("job.log", LinesOnly(data))], instance_type))
    blocks = findings(scan_logs([("job.log", InMemoryLog(data, block))], instance_type))
    return reference, lines, blocks


@pytest.mark.parametrize("path", EXCERPTS, ids=[p.name for p in EXCERPTS])
@pytest.mark.parametrize("block", [1, 7, 4096, 1 << 20])
def test_each_real_excerpt_reads_the_same_fast_and_slow(path: Path, block: int):
    # Given a real excerpt, When read by the reference, the line and the block readers
    reference, lines, blocks = readings(path.read_bytes(), block, "ml.p5.48xlarge")
    # Then all three give the same record count and the same findings
    assert reference[0][0] > 0
    assert lines == reference
    assert blocks == reference


def _all_excerpts() -> bytes:
    return b"".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in EXCERPTS)


@pytest.mark.parametrize("block", [13, 65536])
def test_all_excerpts_concatenated_without_final_newline_read_the_same(block: int):
    # Given every excerpt in one log whose last line has no newline
    data = _all_excerpts().rstrip(b"\n")
    # When read the three ways, Then the findings (and the lines they cite) are identical
    reference, lines, blocks = readings(data, block)
    assert len(reference) > 4  # the four checks, several with findings
    assert lines == reference
    assert blocks == reference


@pytest.mark.parametrize("seed", [17, 2026])
def test_shuffled_lines_of_all_excerpts_read_the_same(seed: int):
    # Given the excerpts' lines shuffled (wrapped records cut apart, prefixes of many launchers
    # interleaved) with interesting lines sparse among irrelevant training progress (synthetic)
    lines = _all_excerpts().splitlines(keepends=True)
    progress = [
        f"[rank{n % 8}]:step {n} loss=2.{n % 97:02d} lr=3e-4 tokens/s=4{n}\n".encode() for n in range(2000)
    ]
    mixed = lines + progress
    random.Random(seed).shuffle(mixed)
    # When read the three ways, Then the findings are identical
    reference, line_reading, blocks = readings(b"".join(mixed), 4099)
    assert line_reading == reference
    assert blocks == reference


def _samples() -> list[bytes]:
    """One text per INTERESTING alternative (the NCCL error class filled in)."""
    return [*INTERESTING_WORDS, b"ncclSystemError"]


def test_block_skip_never_misses_an_interesting_line():
    # Given a text for every substring the checks read, and every line of the real excerpts
    samples = _samples()
    assert len(samples) >= 30 and all(INTERESTING.search(s) for s in samples)
    # Then the block reader's skip pattern finds each (a line it skipped would be lost)
    assert [s for s in samples if not CANDIDATE.search(s)] == []
    missed = [
        line
        for line in _all_excerpts().splitlines()
        if INTERESTING.search(line) and not CANDIDATE.search(line)
    ]
    assert missed == []
    # and it does skip an ordinary training line (else it would save nothing)
    assert (
        CANDIDATE.search(b"[rank3]:step 1234/50000 loss=2.3456 lr=3.0e-4 grad_norm=1.23 tokens/s=45678")
        is None
    )


def test_interesting_answers_as_the_interesting_pattern():
    # Given every real excerpt line, every word in odd company (after a decoy fragment, cut short,
    # twice), and random mixes of fragments and words
    lines = _all_excerpts().splitlines()
    for word in _samples():
        lines += [b"x " + word + b" y", b"network " + word, word[:-1], word[1:], b"Error " + word + word]
    rng = random.Random(7)
    pieces = [*CANDIDATE_WORDS, *_samples(), b" ", b"ncclError", b"nccl", b"Error", b"work", b"e"]
    lines += [b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 6))) for _ in range(5000)]
    # Then the fast answer is INTERESTING's, line for line
    assert [line for line in lines if interesting(line) != bool(INTERESTING.search(line))] == []


def test_factored_finds_exactly_the_words():
    # Given words with shared prefixes, a word that starts with another, and metacharacters
    words = [b"NET/OFI", b"NET/IB", b"NET plugin", b"ab", b"abc", b"(ms):", b"a.b"]
    pattern = re.compile(factored(words))
    # Then it finds each, and nothing that is not one of them (`.` is literal)
    assert all(pattern.fullmatch(w) or pattern.match(w) for w in words)
    assert pattern.search(b"NET/Socket") is None and pattern.search(b"axb") is None
    assert pattern.search(b"x (ms): y").group() == b"(ms):"


def test_local_file_parts_give_their_bytes_in_blocks_exactly(tmp_path, monkeypatch):
    # Given every excerpt in one file cut into ~4 KiB newline-aligned parts, read in 5-byte blocks
    import hyperpod_perf.cli.logs as cli_logs

    big = tmp_path / "all.log"
    data = _all_excerpts()
    big.write_bytes(data)
    monkeypatch.setattr(cli_logs, "PART_BYTES", 4096)
    monkeypatch.setattr(cli_logs, "_BLOCK", 5)
    parts = [log for part in cli_logs._parts([big]) for log in part]
    assert len(parts) > 4
    # Then the parts' blocks are the file, byte for byte, each part ending at a newline
    pieces = [b"".join(lines.blocks()) for _, lines in parts]
    assert b"".join(pieces) == data
    assert all(piece.endswith(b"\n") for piece in pieces)
    # and each part's blocks hold the same bytes as its lines (given without their newline)
    assert all(b"".join(lines.blocks()) == b"".join(line + b"\n" for line in lines) for _, lines in parts)


# --- the dense way (one findall per piece of a buffer) and the cached line decisions --------


@pytest.fixture(params=["sparse", "dense"])
def way(request, monkeypatch) -> str:
    """Every buffer read one way: the skip search (sparse) or `_LINES.findall` (dense)."""
    import hyperpod_perf.joblogs.normalize as normalize

    monkeypatch.setattr(normalize, "DENSE_ONE_IN", 0 if request.param == "sparse" else normalize.ALWAYS_DENSE)
    return request.param


@pytest.mark.parametrize("block", [13, 4099, 1 << 20])
def test_both_ways_through_a_buffer_read_every_excerpt_the_same(way: str, block: int):
    # Given every excerpt, and their lines shuffled among irrelevant training progress (synthetic)
    lines = _all_excerpts().splitlines(keepends=True)
    progress = [f"[rank{n % 8}]:step {n} loss=2.{n % 97:02d}\n".encode() for n in range(500)]
    mixed = lines + progress
    random.Random(block).shuffle(mixed)
    for data in (_all_excerpts(), b"".join(mixed)):
        # When read the reference way and by the block reader forced one way
        reference, _, blocks = readings(data, block)
        # Then the record counts and findings are the reference's
        assert blocks == reference, way


#: Synthetic lines (labelled so) that only the cached decisions could get wrong: the word a
#: check reads is in the host name or a launcher prefix, not in the message; the message is cut
#: by a carriage return at its end; white space other than a space before the message; a repeated
#: message from hosts whose names do and do not hold a word.
TRICKY = [
    b"register-node-1:12:34 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n",
    b"ip-10-0-0-1:12:34 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n",
    b"watchdog-7: ip-10-0-0-2:5:6 [1] NCCL INFO Channel 01/0 : 1[1] -> 2[2] via P2P/IPC\n",
    b"node3: ip-10-0-0-3:5:6 [1] NCCL INFO Channel 01/0 : 1[1] -> 2[2] via P2P/IPC\n",
    b"(memlock-worker pid=77, ip=10.0.0.4) step 5 loss=1.0\n",
    b"ip-10-0-0-6:1:2 [0] NCCL INFO Using network Socket\r\n",
    b"  | 2025-05-22T14:26:33.407-07:00 |\tNCCL WARN NET/OFI Connection reset by peer\n",
    b"  | 2025-05-22T14:26:33.407-07:00 | ip-10-0-0-7:86:2501 [0] NCCL INFO Using network AWS Libfabric\n",
    b"[1,3]<stdout>:ip-10-0-0-8:9:9 [3] NCCL INFO NET/OFI Selected provider is efa, fabric is efa "
    b"(found 4 nics)\n",
    b"12: ip-10-0-0-9:9:9 [3] NCCL INFO NCCL_DEBUG set by environment to INFO\n",
    b"ProcessGroupNCCL-1: [E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective "
    b"operation timeout\n",
    b"[rank2]:[E1206 18:44:12.755262105 ProcessGroupNCCL.cpp:607] [Rank 2] Watchdog caught collective "
    b"operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
    b"ran for 600009 milliseconds before timing out.\n",
    b"   \n",
    b"\n",
]


def test_lines_decided_by_cached_parts_read_as_the_reference_reads_them(way: str):
    # Given the tricky lines, each twice (the second time from the caches), in one log
    data = b"".join(TRICKY * 2)
    for block in (5, 1 << 20):
        # When read by the reference and by the block reader
        reference, _, blocks = readings(data, block)
        # Then the same lines are read (a host or prefix word makes the line one a check reads)
        assert blocks == reference, (way, block)
    assert reference[0][0] >= 2 * 10  # (records) the lines with a word, each twice


def test_a_line_of_exactly_the_bound_is_not_counted_as_cut_either_way(way: str):
    # Given an interesting line, a line of exactly MAX_LINE_BYTES bytes, and one byte longer
    from hyperpod_perf.domain.bounded_stream import MAX_LINE_BYTES, ReadBounds, bounded_lines

    head = b"ip-10-0-0-1:1:2 [0] NCCL INFO Using network Socket\n"
    exact, longer = b"x" * MAX_LINE_BYTES + b"\n", b"y" * (MAX_LINE_BYTES + 1) + b"\n"
    data = head + exact + head + longer + head

    def cut(reader: str) -> int:
        bounds = ReadBounds()
        if reader == "blocks":
            scan_logs([("job.log", InMemoryLog(data, 1 << 20))], bounds=bounds)
        else:  # the line reader local files and S3 objects offer when read line by line
            scan_logs([("job.log", list(bounded_lines(iter([data]), bounds)))], bounds=bounds)
        return bounds.lines_cut

    # Then only the longer line is cut, by the block reader as by the bounded line reader
    assert cut("blocks") == cut("bounded lines") == 1


def test_a_carriage_return_inside_a_line_reads_the_same_both_ways(monkeypatch):
    # Given NCCL lines glued by a carriage return (a progress bar's), which the reference's
    # splitlines() would cut in two, so the block reader's two ways are compared with each other
    import hyperpod_perf.joblogs.normalize as normalize

    glued = b"ip-10-0-0-5:1:2 [0] NCCL INFO Channel 00\rip-10-0-0-5:1:2 [0] NCCL WARN socket recv failed\n"
    data = b"".join([*TRICKY, glued, glued])

    def blocks(one_in: int) -> list:
        monkeypatch.setattr(normalize, "DENSE_ONE_IN", one_in)
        return readings(data, 1 << 20)[2]

    # When read the sparse way and the dense way, Then the records and findings are the same
    assert blocks(0) == blocks(normalize.ALWAYS_DENSE)


def test_glog_timed_messages_read_from_bytes_as_from_text():
    # Given glog-timed PyTorch messages as the block reader hands them over (bytes), each twice
    # (the second from the cache keyed by what follows the glog head): a watchdog timeout, the
    # same at another time, a head alone (white space after it), a file name holding non-ASCII
    from hyperpod_perf.joblogs.scan import JobLogScan

    timeout = (
        b"[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, "
        b"NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600009 milliseconds before timing out."
    )
    messages = [
        b"[E1206 18:44:12.755262105 ProcessGroupNCCL.cpp:607] " + timeout,
        b"[E1206 18:40:01.000000000 ProcessGroupNCCL.cpp:607] " + timeout,
        b"[E1206 18:44:12.75 ProcessGroupNCCL.cpp:607]   ",
        "[E1206 18:44:13.75 Proze\u00df.cpp:607] ".encode() + timeout.replace(b"Rank 2", b"Rank 3"),
        b"[W1206 18:44:14.1 ProcessGroupNCCL.cpp:9] NCCL_DEBUG set by environment to INFO",
    ]
    from_bytes, from_text = JobLogScan(), JobLogScan()
    for number, message in enumerate(messages * 2, 1):
        # When one scan takes the bytes and the other the decoded text
        from_bytes.add_message(message, "ip-10-0-0-1", "7", 2, "job.log", number)
        from_text.add_body(message.decode().rstrip(), "ip-10-0-0-1", "7", 2, "job.log", number)
    # Then both hold the same records, events (with the earliest time), watchdog views, settings
    assert from_bytes.records == from_text.records == 10
    assert from_bytes.events == from_text.events and from_bytes.events
    assert from_bytes.watches == from_text.watches and from_bytes.watches
    assert from_bytes.settings == from_text.settings


def test_no_word_a_check_reads_can_span_a_lines_head_and_its_message():
    # Given the words a check reads (the cached line decisions read a line's head and the message
    # after it apart: a word across the two would be missed by both)
    # Then none holds what ends a head (NCCL's `] `, a PyTorch rank tag's `]:`, a Ray prefix's
    # `) `, a CloudWatch bar, an Open MPI tag's `>:`), a colon before a digit (host:pid:tid), or
    # starts with white space, and the NCCL error pattern is letters only
    ends = [b"] ", b"]:", b") ", b"| ", b" |", b">:"]
    spanning = [
        word
        for word in INTERESTING_WORDS
        if any(end in word for end in ends) or re.search(rb":\d", word) or word[:1].isspace()
    ]
    assert spanning == []
    from hyperpod_perf.joblogs.normalize import _NCCL_ERROR

    assert _NCCL_ERROR == rb"nccl[A-Z][a-zA-Z]*Error"  # (a change here needs the same review)
