"""Job-log lines as they really arrive, turned into clean records.

Training logs pass through launchers and log shippers before anyone reads them: Open MPI tags
each line `[1,R]<stdout>:`, `srun --label` prefixes `R: `, pdsh prefixes `host: ` (twice when
nested), Ray prefixes `(RayTrainWorker pid=…, ip=…)` and folds repeats into
`[repeated Nx across cluster]`, torchrun prefixes `[rankN]:` or `[default0]:`, CloudWatch
exports add `| timestamp |` columns (and its console copy glues the timestamp to the message and
repeats it after ` | `), progress bars glue the next log line onto theirs, and terminals hard-wrap
long lines. The normaliser strips all of that and keeps what the prefixes told: the host, the
global rank, the timestamp, the repeat count.

Speed: a real job log is mostly lines no check reads (channel set-up, training progress). Only
lines the cheap `INTERESTING` byte search selects are decoded and normalised, so a gigabyte
streams in seconds with constant memory (one pending record at a time).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from hyperpod_perf.domain.bounded_stream import MAX_LINE_BYTES, ReadBounds

#: The substrings any extractor reads. A line without one of them is never decoded.
INTERESTING_WORDS: tuple[bytes, ...] = (
    *(b"Using network", b"NET plugin", b"elected Provider", b"elected provider", b"NET/OFI", b"NET/Plugin"),
    *(b"NET/Socket", b"NET/IB", b"set by environment", b"Bootstrap : ", b"socket interface", b"AF_INET"),
    *(b"via NET/", b"register", b"reg_mr", b"fi_mr_reg", b"allocate memory", b"memlock", b"MEMLOCK"),
    *(b"WorkNCCL", b"NCCL work", b"watchdog", b"Watchdog", b"remote process exited"),
    *(b"unhandled system error", b"mismatch between collectives", b"lagging", b"didn't finish collective"),
    *(b"joining collective", b"missing ranks", b"group info:", b"A worker died", b"socketPollConnect"),
    *(b"ProcessGroupNCCL", b"fi_getinfo"),
    # trainer timings and NCCL's socket failures (issue 22)
    *(b"Init COMPLETE", b"per iteration (ms):", b"MxRtt/Rnk", b"STRAGGLER DETECTION", b"Score="),
    *(b"GPU relative performance:", b"GPU individual performance:", b"times across ranks (ms):"),
    *(b"WARN socket", b"Socket recv failed", b"Connection reset by peer"),
    b"Failed to execute operation",
)
#: The one INTERESTING alternative that is not a plain substring: `ncclSystemError` and its kin.
_NCCL_ERROR = rb"nccl[A-Z][a-zA-Z]*Error"


def factored(words: Iterable[bytes]) -> bytes:
    """A regex that finds any of the literal `words`, its alternatives grouped by common prefix.

    `re` tries a group's alternatives one by one at every position whose byte could start one:
    a flat list of 60 substrings costs 60 tests there, the grouped form one per distinct first
    byte (a third less time over a log that is mostly lines no check reads)."""
    return _trie(_shortest(words))


def _shortest(words: Iterable[bytes]) -> list[bytes]:
    """`words` sorted, less those that start with another (search finds the shorter one first)."""
    kept: list[bytes] = []
    for word in sorted(set(words)):
        if not (kept and word.startswith(kept[-1])):  # sorted: a word's prefixes come just before it
            kept.append(word)
    return kept


def _common_prefix(words: list[bytes]) -> Iterator[int]:
    """The bytes all `words` start with."""
    for column in zip(*words, strict=False):
        if any(byte != column[0] for byte in column):
            return
        yield column[0]


def _escape(word: bytes) -> bytes:
    """`word` as a regex: only the metacharacters escaped (the form Logs Insights reads as well)."""
    return re.sub(rb"([\\.^$*+?{}\[\]|()])", rb"\\\1", word)


def _trie(words: list[bytes]) -> bytes:
    """`factored` of sorted non-empty words none of which starts with another."""
    if len(words) == 1:
        return _escape(words[0])
    parts = []
    for _, grouped in itertools.groupby(words, key=lambda word: word[:1]):
        group = list(grouped)
        common = bytes(_common_prefix(group))
        if len(group) == 1:
            parts.append(_escape(common))
        else:
            parts.append(_escape(common) + b"(?:" + _trie([word[len(common) :] for word in group]) + b")")
    return b"|".join(parts)


INTERESTING = re.compile(factored(INTERESTING_WORDS) + b"|" + _NCCL_ERROR)


def insights_pattern() -> str:
    """INTERESTING as a CloudWatch Logs Insights regex (plain alternatives): the server-side filter."""
    return b"|".join([*(_escape(word) for word in INTERESTING_WORDS), _NCCL_ERROR]).decode()


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_REPEATED = re.compile(r"\s*\[repeated (\d+)x across cluster\]\s*$")
# `  | 2025-05-22T14:26:33.407-07:00 | message` (CloudWatch table) or the glued console copy
# `  | 2025-05-16T16:39:51.208-07:00message | message`.
_CLOUDWATCH = re.compile(
    r"^\s*\|\s*(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s*(?:\|\s*)?(?P<rest>.*)$"
)
_OMPI = re.compile(r"^\[\d+,(?P<rank>\d+)\]<std(?:out|err)>:")
_RAY = re.compile(r"^\((?:(?P<actor>[\w.-]+)(?: pid=\d+)?|pid=\d+)(?:, ip=(?P<ip>[0-9a-fA-F.:]+))?[^)]*\)\s?")
_TORCH_RANK = re.compile(r"^\[rank(?P<rank>\d+)\]:")
_BRACKET_TAG = re.compile(r"^\[[\w|.-]+\]:")  # [default0]: [trainer0|0]:
_NUMBER_TAG = re.compile(r"^\[\d+\] ")  # `[0] ` (--tag-output style or a line counter: no rank claimed)
_SRUN = re.compile(r"^(?P<rank>\d+): ")
_PDSH = re.compile(r"^(?P<host>[A-Za-z0-9][\w.-]*\d[\w.-]*): ")
#: A PyTorch / glog record glued onto a progress bar: everything before it is dropped.
_GLUED_TORCH = re.compile(r"\[rank\d+\]:\[[EWIF]|\[[EWIF](?:\d{4} [\d:.]+)? ?ProcessGroupNCCL")
#: NCCL's own header `host:pid:tid [dev] ` — several glued on one line are split (where the glue
#: point is unambiguous: not in the middle of a word, which could be part of the host name).
_NCCL_HEADER = re.compile(r"(?<![\w.-])[A-Za-z0-9][\w.-]*:\d+:\d+ \[\d+\] ")
#: A line that starts a record (not the continuation of a hard-wrapped one).
_RECORD_START = re.compile(
    r"^\s*(?:\[|\(|\||\d+: |[A-Za-z0-9][\w.-]*:\d+:\d+ \[|NCCL |Traceback|[\w.]*(?:Error"
    r"|Exception)\b|frame #|$)"
)
_GLOG_TS = re.compile(r"\[[EWIF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d(?:\.\d+)?)")

MAX_RECORD_CHARS = 8192
MAX_JOINED_LINES = 12


@dataclass(frozen=True, slots=True)
class Record:
    """One normalised log record and what its prefixes said about where it came from."""

    text: str
    source: str
    line: int
    host: str | None = None  # from a launcher prefix (pdsh host, Ray ip)
    rank: int | None = None  # the global rank a launcher prefix names
    timestamp: str | None = None  # ISO timestamp of a CloudWatch export
    repeat: int = 1


def _strip_prefixes(text: str) -> tuple[str, str | None, int | None]:
    host: str | None = None
    rank: int | None = None
    for _ in range(6):
        text = text.lstrip()
        if not text:
            break
        first = text[0]
        match = None
        if first == "[":
            if (match := _OMPI.match(text)) or (match := _TORCH_RANK.match(text)):
                rank = int(match.group("rank"))
            elif not ((match := _BRACKET_TAG.match(text)) or (match := _NUMBER_TAG.match(text))):
                break
        elif first == "(":
            if not (match := _RAY.match(text)):
                break
            host = match.group("ip") or host
        elif first.isdigit() and (match := _SRUN.match(text)):
            rank = int(match.group("rank"))
        elif (match := _PDSH.match(text)) and not _NCCL_HEADER.match(text):
            host = match.group("host")
        else:
            break
        text = text[match.end() :]
    return text, host, rank


def _cloudwatch(text: str) -> tuple[str, str | None]:
    if "|" not in text[:8]:
        return text, None
    match = _CLOUDWATCH.match(text)
    if not match:
        return text, None
    rest = match.group("rest").rstrip()
    if rest.endswith("|"):
        rest = rest[:-1].rstrip()
    left, sep, right = rest.partition(" | ")
    if sep and left.strip() == right.strip():
        rest = right  # the console copy repeats the message after ` | `
    return rest, match.group("ts")


def normalize_line(raw: str, source: str = "", line: int = 0) -> list[Record]:
    """The records one physical line holds (usually one; several when lines were glued)."""
    text = _ANSI.sub("", raw) if "\x1b" in raw else raw
    text = text.rstrip("\r\n")
    repeat = 1
    if "across cluster]" in text and (match := _REPEATED.search(text)):
        repeat = int(match.group(1))
        text = text[: match.start()]
    text, timestamp = _cloudwatch(text)
    text, host, rank = _strip_prefixes(text)
    if "ProcessGroupNCCL" in text and not text.startswith("["):
        glued = _GLUED_TORCH.search(text)
        if glued:
            text, _more_host, more_rank = _strip_prefixes(text[glued.start() :])
            rank = more_rank if more_rank is not None else rank
    pieces = [text]
    if text.count(" NCCL ") > 1:
        starts = [m.start() for m in _NCCL_HEADER.finditer(text)]
        if len(starts) > 1:
            bounds = [0, *starts[1:], len(text)] if starts[0] else [*starts, len(text)]
            pieces = [text[a:b].strip() for a, b in itertools.pairwise(bounds)]
    return [
        Record(piece[:MAX_RECORD_CHARS], source, line, host, rank, timestamp, repeat)
        for piece in pieces
        if piece.strip()
    ]


def _prefix_identity(
    prefixes: dict[bytes, tuple[str | None, int | None]], prefix: bytes
) -> tuple[str | None, int | None]:
    """The host and rank a launcher prefix names, read once per distinct prefix (cache bounded)."""
    known = prefixes.get(prefix)
    if known is None:
        if len(prefixes) > 100_000:
            prefixes.clear()
        _, host, rank = _strip_prefixes(prefix.decode("utf-8", "replace"))
        known = prefixes[prefix] = (host, rank)
    return known


def starts_record(raw: bytes) -> bool:
    """Whether a line starts a record of its own (not a hard-wrapped continuation, nor blank)."""
    text = raw.decode("utf-8", "replace").rstrip("\r\n")
    stripped = _ANSI.sub("", text) if "\x1b" in text else text
    return bool(stripped.strip()) and bool(_RECORD_START.match(stripped))


def _continued(last: Record, raw: bytes, joined: int) -> Record | None:
    """`last` with `raw` appended when `raw` is a hard-wrapped continuation of it, else None.

    Wrapping cuts mid-word, so no separator is added; a line that starts a record of its own, a
    blank line, or a record already joined MAX_JOINED_LINES times ends the joining.
    """
    text = raw.decode("utf-8", "replace").rstrip("\r\n")
    stripped = _ANSI.sub("", text) if "\x1b" in text else text
    if not stripped.strip() or joined >= MAX_JOINED_LINES or _RECORD_START.match(stripped):
        return None
    return Record(
        (last.text + stripped.lstrip("\r"))[:MAX_RECORD_CHARS],
        last.source,
        last.line,
        last.host,
        last.rank,
        last.timestamp,
        last.repeat,
    )


def _wants_continuation(text: str) -> bool:
    """A PyTorch record cut by a hard wrap before the fields the checks read."""
    if "Watchdog caught" in text:
        return "before timing out" not in text
    if "detected by watchdog" in text or "Timeout at NCCL work" in text:
        return not re.search(r"last completed (?:NCCL )?work: \d+", text)
    if "WorkNCCL(" in text:
        return ")" not in text[text.index("WorkNCCL(") :]
    if "ProcessGroupNCCL" in text and len(text) >= 60:
        return not text.rstrip().endswith((".", ")"))
    return False


class _Continuation:
    """The record a hard wrap cut before the fields the checks read, waiting for its next lines.

    One joiner for both readers (line by line and buffer by buffer), so the rule that ends the
    joining (a line that starts a record, a blank line, MAX_JOINED_LINES) lives in one place.
    """

    __slots__ = ("joined", "records")

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.joined = 0

    def holds(self, records: list[Record]) -> bool:
        """Keep `records` back when a hard wrap cut their last one; whether they were kept."""
        if not records or not _wants_continuation(records[-1].text):
            return False
        self.records, self.joined = records, 0
        return True

    def offer(self, raw: bytes) -> tuple[list[Record], bool]:
        """(the records now complete, whether `raw` was taken as a continuation)."""
        extended = _continued(self.records[-1], raw, self.joined)
        if extended is None:
            return self.release(), False
        self.records[-1] = extended
        self.joined += 1
        if _wants_continuation(extended.text):
            return [], True
        return self.release(), True

    def release(self) -> list[Record]:
        done, self.records, self.joined = self.records, [], 0
        return done


#: The common shape, read without building a record: launcher prefixes, then NCCL's header.
#: Possessive quantifiers: a host name is never re-split when what follows it does not match.
_FAST_HEAD = (
    rb"\s*(?:\|\s*(?P<ts>\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)?) \|\s*)?"
    rb"(?P<prefix>(?:\[\d+,\d+\]<std(?:out|err)>:|\d++: |\[\d+\] |\([\w.-]*+(?: ?pid=\d+)?(?:, ip=[\d.]+)?\) "
    rb"|(?=[\w.-]*\d)[A-Za-z0-9][\w.-]*+: ){0,3})"
    rb"(?:(?P<host>[A-Za-z0-9][\w.-]*+):(?P<pid>\d++):\d++ \[\d+\] "
    rb"|\[rank(?P<rank>\d+)\]:(?=\[[EWIF])|(?=\[[EWIF][\d ])|(?P<bare>(?=[A-Za-z])))"
)
_FAST = re.compile(_FAST_HEAD + rb"(?P<body>[^\r\n]*)")
#: Every line of a buffer with _FAST's head read in the same pass (`findall`: one call in C for
#: a whole buffer, no match object per line): (head, ts, prefix, host, pid, rank, bare, rest),
#: head empty when _FAST does not match the line or matches it empty. `\s` becomes "white space
#: but the newline", so the head never leaves its line: on a line, the same match as _FAST's.
_LINES = re.compile(rb"(?m)^(" + _FAST_HEAD.replace(rb"\s", rb"[^\S\n]") + rb")?([^\n]*)\n?")
#: (message, host, pid (the log's name when the line has no NCCL header), launcher rank, log
#: name, line number, CloudWatch time) of a line taken by the fast path: `JobLogScan.add_body`.
FastSink = Callable[[str, "str | None", str, "int | None", str, int, "str | None"], None]
#: (the lines of a Megatron `times across ranks (ms):` block, log name, line number of its header):
#: `JobLogScan.add_timer_block`. The block's lines (`  <timer>:`, `     rank  N: <ms>`) say
#: nothing alone, so the readers hand them over together, up to the first line of another shape.
BlockSink = Callable[[list[bytes], str, int], None]
TIMERS_HEADER = b"times across ranks (ms):"
_TIMER_LINE = re.compile(rb"(?:^|[\s\]:>])\s*(?:rank\s+\d+: \d+(?:\.\d+)?|[A-Za-z][\w.-]*:)\s*$")
MAX_TIMER_LINES = 200_000


class _TimerBlock:
    """The lines of one timers block being collected (rare: only after its header line)."""

    __slots__ = ("line", "lines")

    def __init__(self, line: int) -> None:
        self.line, self.lines = line, []

    def take(self, raw: bytes) -> bool:
        """Whether `raw` continues the block (then it is kept)."""
        if len(self.lines) < MAX_TIMER_LINES and _TIMER_LINE.search(raw.rstrip(b"\r\n")):
            self.lines.append(raw.rstrip(b"\r\n"))
            return True
        return False


def records(
    lines: Iterable[bytes], source: str, fast: FastSink | None = None, timers: BlockSink | None = None
) -> Iterator[Record]:
    """Stream the interesting records of one log (bytes lines, as read from a file or object).

    With `fast`, plain NCCL lines (`[launcher prefix] host:pid:tid [dev] message`, no colour,
    repeat marker or glued second line) go to it directly instead of becoming records: the same
    reading, without the general normaliser's cost, for the bulk of a job's log.
    """
    prefixes: dict[bytes, tuple[str | None, int | None]] = {}
    pending = _Continuation()
    block: _TimerBlock | None = None
    for number, raw in enumerate(lines, 1):
        if len(raw) > MAX_LINE_BYTES:  # a caller's own lines (the readers already cut theirs)
            raw = raw[:MAX_LINE_BYTES]
        if block is not None:
            if block.take(raw):
                continue
            if timers is not None:
                timers(block.lines, source, block.line)
            block = None
        if pending.records:
            done, joined_line = pending.offer(raw)
            yield from done
            if joined_line:
                continue
        if not interesting(raw):
            continue
        if TIMERS_HEADER in raw:
            block = _TimerBlock(number)
            continue
        if fast is not None and (match := _FAST.match(raw)) is not None:
            timestamp, prefix, host, pid, rank_text, bare, body = match.group(
                "ts", "prefix", "host", "pid", "rank", "bare", "body"
            )
            if (
                raw.count(b" NCCL INFO ") + raw.count(b" NCCL WARN ") <= 1
                and b"\x1b" not in raw
                and b"across cluster]" not in raw
                and (bare is None or b"ProcessGroupNCCL" not in raw)
                and (host is not None or not _wants_continuation(raw.decode("utf-8", "replace")))
            ):
                known = _prefix_identity(prefixes, prefix)
                fast(
                    body.decode("utf-8", "replace").rstrip(),
                    host.decode() if host is not None else known[0],
                    pid.decode() if host is not None else source,
                    int(rank_text) if rank_text is not None else known[1],
                    source,
                    number,
                    timestamp.decode() if timestamp is not None else None,
                )
                continue
        found = normalize_line(raw.decode("utf-8", "replace"), source, number)
        if pending.holds(found):
            continue
        yield from found
    if block is not None and timers is not None:
        timers(block.lines, source, block.line)
    yield from pending.records


def glog_seconds(text: str) -> float | None:
    """Seconds into the year of a glog timestamp `[E1123 00:52:57.66…` (month-day, no year)."""
    match = _GLOG_TS.search(text, 0, 40)
    if not match:
        return None
    month, day, hour, minute = (int(g) for g in match.groups()[:4])
    return ((month * 31 + day) * 24 + hour) * 3600 + minute * 60 + float(match.group(5))


#: (message bytes, host, pid, launcher rank, log name, line number, CloudWatch time) of a line the
#: block reader takes by the fast path: `JobLogScan.add_message`, which decodes only what it uses.
BytesSink = Callable[[bytes, "str | None", str, "int | None", str, int, "str | None"], None]
#: Fragments of the INTERESTING substrings (each one contains one of these), chosen to start with
#: an uncommon byte, so that `re` skips every position whose byte starts none of them: about
#: twice as fast over text no check reads as INTERESTING itself. A line it finds is then tested
#: with INTERESTING (tests assert it never misses a line). Not `NCCL` alone: every NCCL INFO line
#: has it, and most say nothing a check reads.
CANDIDATE_WORDS: tuple[bytes, ...] = (
    *(b"Using n", b"ET/", b"ET plugin", b"_INET", b"work", b"WorkN", b"ProcessG", b"Bootstrap : "),
    *(b"MEMLOCK", b"Watchdog"),
    *(b"Error", b"A worker", b"PollConnect", b"'t finish", b"vider", b"xited", b"joining"),
    *(b"ket interface", b"by env", b"gister", b"_mr", b"memory", b"memlock", b"watchdog", b"ystem error"),
    *(b"mismatch", b"gging", b"missing ranks", b"group info:", b"_getinfo"),
    # (issue 22) first bytes the list already had where possible: each new one costs a test
    *(b"MPLETE", b"ms):", b"MxRtt", b"AGGLER", b"Score=", b"U relative", b"U individual"),
    *(b"WARN socket", b"ket recv", b"by peer", b"xecute op"),
)
CANDIDATE = re.compile(factored(CANDIDATE_WORDS))
#: The INTERESTING words that hold each fragment a CANDIDATE match can be.
_WORDS_OF: dict[bytes, tuple[bytes, ...]] = {
    fragment: tuple(word for word in INTERESTING_WORDS if fragment in word)
    for fragment in _shortest(CANDIDATE_WORDS)
}
_NCCL_ERROR_SEARCH = re.compile(_NCCL_ERROR).search


def interesting(raw: bytes, start: int = 0) -> bool:
    """Whether INTERESTING finds a substring in `raw` (from `start`, a line's first fragment or
    before): the same answer in a third less time on a line a check reads.

    Each fragment CANDIDATE finds is checked against the words that hold it with `in` (memmem,
    not a regex over 60 alternatives). Every INTERESTING word holds a fragment and at most one
    fragment starts at a position, so trying the fragments at every start sees them all."""
    hit = _CANDIDATE_SEARCH(raw, start)
    while hit is not None:
        fragment = hit.group()
        for word in _WORDS_OF[fragment]:
            if word in raw:
                return True
        if fragment == b"Error" and _NCCL_ERROR_SEARCH(raw):
            return True
        hit = _CANDIDATE_SEARCH(raw, hit.start() + 1)
    return False


_CANDIDATE_SEARCH = CANDIDATE.search


#: A line that is NCCL's header and message, nothing before: _FAST reads it the same way (no
#: launcher prefix can match there: each needs a space, bracket or bar the header lacks).
_HEADER_LINE = re.compile(rb"([A-Za-z0-9][\w.-]*+):(\d++):\d++ \[\d+\] ([^\r\n]*)")

#: What the block reader does with a line _FAST reads, decided by its tail (from the character
#: before the message to the end of the line) and cached by it, since a job's ranks log the same
#: messages: no word a check reads (SKIP), hand the message to the sink (SINK), or the general
#: route (GENERAL: a timers header, glued NCCL lines, colour codes or a repeat marker).
SKIP, SINK, GENERAL = 0, 1, 2
MAX_CACHED_LINES = 50_000
#: A buffer whose lines a check reads at least this often (1 in N) is read line by line with one
#: `_LINES.findall` instead of the skip search (faster where most lines are read; same result).
#: The first buffer is read the sparse way (how many of its lines are read is not known yet);
#: 0 reads every buffer the sparse way, ALWAYS_DENSE every one the dense way (the tests' two ways).
DENSE_ONE_IN = 4
ALWAYS_DENSE = 1 << 62


def tail_kind(tail: bytes) -> int:
    """SKIP / SINK / GENERAL for the tail of a line _FAST reads: from the character before its
    message (a space after NCCL's header) to the end of the line.

    The same answer as the tests on the whole line when its launcher prefix and host name hold
    no word a check reads (the reader checks those apart, cached): no INTERESTING word can span
    the head and the message (none holds `] `, `]:`, `) `, `| ` or a colon and digits, and the
    NCCL error pattern is letters only), and the head holds no colour code, repeat marker or
    ` NCCL INFO ` (its parts have no spaces but the ones between its fields)."""
    if not interesting(tail):
        return SKIP
    if TIMERS_HEADER in tail:
        return GENERAL
    plain = (
        tail.count(b" NCCL INFO ") + tail.count(b" NCCL WARN ") <= 1
        and b"\x1b" not in tail
        and b"across cluster]" not in tail
    )
    return SINK if plain else GENERAL


#: A PyTorch / glog record's start, as _FAST's lookahead reads it.
_GLOG_START = re.compile(rb"\[[EWIF][\d ]").match
#: `_general`'s answer for a line no check reads.
_UNREAD = 0


def _general(
    raw: bytes,
    offset: int,
    source: str,
    number: int,
    fast: BytesSink,
    prefixes: dict[bytes, tuple[str | None, int | None]],
) -> Any:
    """A line the cached decisions did not settle, read as `records` reads it: _UNREAD, a
    `_TimerBlock` it starts, None (given to `fast`) or the records it holds (a list)."""
    if not interesting(raw, offset):
        return _UNREAD
    if TIMERS_HEADER in raw:
        return _TimerBlock(number)
    plain = (
        raw.count(b" NCCL INFO ") + raw.count(b" NCCL WARN ") <= 1
        and b"\x1b" not in raw
        and b"across cluster]" not in raw
    )
    if plain and (header := _HEADER_LINE.match(raw)) is not None:
        # the commonest line, `host:pid:tid [dev] message`: what _FAST reads of it, cheaper
        host, pid, body = header.groups()
        fast(body, host.decode(), pid.decode(), None, source, number, None)
        return None
    if plain and (match := _FAST.match(raw)) is not None:
        timestamp, prefix, host, pid, rank_text, bare, body = match.group(
            "ts", "prefix", "host", "pid", "rank", "bare", "body"
        )
        if (bare is None or b"ProcessGroupNCCL" not in raw) and (
            host is not None or not _wants_continuation(raw.decode("utf-8", "replace"))
        ):
            known = _prefix_identity(prefixes, prefix)
            fast(
                body,
                host.decode() if host is not None else known[0],
                pid.decode() if host is not None else source,
                int(rank_text) if rank_text is not None else known[1],
                source,
                number,
                timestamp.decode() if timestamp is not None else None,
            )
            return None
    return normalize_line(raw.decode("utf-8", "replace"), source, number)


#: The dense way reads a buffer in pieces of about this many bytes (whole lines): `findall`'s list
#: holds a tuple per line, so even a piece of blank lines stays a few MB.
PIECE_BYTES = 32 * 1024  # (half MAX_LINE_BYTES: most pieces cannot hold an over-long line)


def _line_pieces(buf: bytes) -> Iterator[tuple[list[tuple[bytes, ...]], bool]]:
    """`_LINES.findall` over `buf` (whole lines, the last one ending with a newline), in pieces,
    each with whether it is long enough to hold a line longer than MAX_LINE_BYTES."""
    size, pos = len(buf), 0
    while pos < size:
        end = buf.find(b"\n", pos + PIECE_BYTES) + 1 or size
        found = _LINES.findall(buf, pos, end)
        found.pop()  # the empty match after the piece's last newline
        yield found, end - pos > MAX_LINE_BYTES + 1
        pos = end


def _has_words(words: dict[bytes, bool], part: bytes) -> bool:
    """Whether a launcher prefix or host name holds a word a check reads (cached, bounded)."""
    found = words.get(part)
    if found is None:
        if len(words) >= MAX_CACHED_LINES:
            words.clear()
        found = words[part] = interesting(part)
    return found


def block_records(
    blocks: Iterable[bytes],
    source: str,
    fast: BytesSink,
    bounds: ReadBounds | None = None,
    timers: BlockSink | None = None,
) -> Iterator[Record]:
    """`records` over big blocks of a log instead of its lines: the same records, in the same order.

    Two ways through a buffer of whole lines, chosen by how often the lines of the one before
    were read (the answer is the same either way; only the time differs):

    - sparse: the next line a check might read is found by one `CANDIDATE.search` over the
      buffer from the end of the last one (then tested with INTERESTING, like every line in
      `records`): the lines between are skipped in C (their count kept for line numbers), never
      split, decoded or looked at in Python; after a line that was read, the next is tested
      directly (a dense stretch);
    - dense (at least one line in DENSE_ONE_IN read): one `_LINES.findall` splits the buffer
      into lines and reads each one's launcher prefixes and NCCL header, in C.

    Either way a line of the common shapes (launcher prefixes, then NCCL's header, a PyTorch
    record or a bare message) is decided by its tail, prefix and host, each cached (a job's
    ranks log the same messages), and goes to `fast` as bytes; the rest (and the lines after a
    record cut by a hard wrap) take the general normaliser, as in `records`. A block may end
    anywhere; the partial last line is carried into the next.
    """
    prefixes: dict[bytes, tuple[str | None, int | None]] = {}
    pending = _Continuation()
    number = 0  # the number of the last line read
    dense = False  # the last line read was interesting
    carry = b""
    skipping = False  # inside the unread rest of an over-long line
    block_of: _TimerBlock | None = None  # a timers block being collected
    cuts = bounds if bounds is not None else ReadBounds()
    candidate = CANDIDATE.search
    header_match = _HEADER_LINE.match
    tails: dict[bytes, int] = {}  # sparse way: tail_kind of a line's tail
    rests: dict[bytes, tuple[int, bytes]] = {}  # dense way: (tail_kind, message) of a line's rest
    spaced: dict[bytes, tuple[int, bytes]] = {}  # the same for a rest after a space
    words: dict[bytes, bool] = {}  # whether a host or a launcher prefix holds a word a check reads
    read_lines = DENSE_ONE_IN == ALWAYS_DENSE  # read the next buffer the dense way
    for block in itertools.chain(blocks, (None,)):
        if block is None:
            buf, carry = carry, b""
            if not buf:
                break
        else:
            if skipping:
                newline = block.find(b"\n")
                if newline < 0:
                    continue
                block, skipping = block[newline + 1 :], False
            cut = block.rfind(b"\n") + 1
            if not cut:
                room = MAX_LINE_BYTES - len(carry)
                if len(block) > room:  # the line goes past the bound: keep its start, skip the rest
                    carry += block[:room] + b"\n"
                    cuts.lines_cut += 1
                    skipping = True
                    buf, carry = carry, b""
                else:
                    carry += block
                    continue
            else:
                buf, carry = carry + block[:cut], block[cut:]
                if len(carry) > MAX_LINE_BYTES:
                    carry = carry[:MAX_LINE_BYTES] + b"\n"
                    cuts.lines_cut += 1
                    skipping = True
                    buf, carry = buf + carry, b""
        first = number
        taken = 0  # lines of this buffer a check reads
        if read_lines and buf[-1:] == b"\n":
            for found, long_lines in _line_pieces(buf):
                for head, timestamp, prefix, host, pid, rank_text, _, rest in found:
                    number += 1
                    if (
                        pending.records
                        or block_of is not None
                        or (long_lines and len(head) + len(rest) > MAX_LINE_BYTES)
                    ):
                        raw = head + rest + b"\n"
                        if len(raw) > MAX_LINE_BYTES + 1:
                            cuts.lines_cut += 1
                            raw = raw[:MAX_LINE_BYTES]
                        if pending.records:
                            done, joined_line = pending.offer(raw)
                            yield from done
                            if joined_line:
                                continue
                        elif block_of is not None:
                            if block_of.take(raw):
                                continue
                            if timers is not None:
                                timers(block_of.lines, source, block_of.line)
                            block_of = None
                    else:
                        if not head and not rest:  # a blank line: no word
                            continue
                        if head or rest[:1].isalpha() or (rest[:1] == b"[" and _GLOG_START(rest)):
                            # _FAST reads the line: decided by its rest (cached), prefix and host
                            entry = (spaced if head[-1:] == b" " else rests).get(rest)
                            if entry is None:
                                cache = spaced if head[-1:] == b" " else rests
                                if len(cache) >= MAX_CACHED_LINES:
                                    cache.clear()
                                message = rest.partition(b"\r")[0]
                                entry = cache[rest] = (
                                    tail_kind(b" " + rest if cache is spaced else rest),
                                    message,
                                )
                            kind, message = entry
                            worded = words.get(host) if host else False
                            if worded is None:
                                worded = _has_words(words, host)
                            if prefix and not worded:
                                worded = _has_words(words, prefix)
                            if not worded:
                                if kind == SKIP:
                                    continue
                                if kind == SINK:
                                    taken += 1
                                    if host:  # NCCL's header: a rank only from a launcher prefix
                                        fast(
                                            message,
                                            host.decode(),
                                            pid.decode(),
                                            _prefix_identity(prefixes, prefix)[1] if prefix else None,
                                            source,
                                            number,
                                            timestamp.decode() if timestamp else None,
                                        )
                                        continue
                                    bare = not rank_text and rest[:1] != b"["
                                    raw = head + rest + b"\n"
                                    if not (bare and b"ProcessGroupNCCL" in rest) and not _wants_continuation(
                                        raw.decode("utf-8", "replace")
                                    ):
                                        known = _prefix_identity(prefixes, prefix)
                                        fast(
                                            message,
                                            known[0],
                                            source,
                                            int(rank_text) if rank_text else known[1],
                                            source,
                                            number,
                                            timestamp.decode() if timestamp else None,
                                        )
                                        continue
                                    found_records = normalize_line(
                                        raw.decode("utf-8", "replace"), source, number
                                    )
                                    if pending.holds(found_records):
                                        continue
                                    yield from found_records
                                    continue
                        raw = head + rest + b"\n"
                    action = _general(raw, 0, source, number, fast, prefixes)
                    if action is _UNREAD:
                        continue
                    taken += 1
                    if action is None:
                        continue
                    if type(action) is _TimerBlock:
                        block_of = action
                        continue
                    if pending.holds(action):
                        continue
                    yield from action
            read_lines = DENSE_ONE_IN > 0 and taken * DENSE_ONE_IN >= number - first
            dense = False
            continue
        size, pos = len(buf), 0
        while pos < size:
            if pending.records:
                end = buf.find(b"\n", pos) + 1 or size
                if end - pos > MAX_LINE_BYTES + 1:  # (the newline not counted)
                    cuts.lines_cut += 1
                    raw, pos = buf[pos : pos + MAX_LINE_BYTES], end
                else:
                    raw, pos = buf[pos:end], end
                number += 1
                done, joined_line = pending.offer(raw)
                yield from done
                if joined_line:
                    continue
                offset = 0
            elif dense or block_of is not None:
                # the last line read was interesting: in a dense stretch, test the next line
                # itself (fewer calls than a skip that would stop on it anyway)
                end = buf.find(b"\n", pos) + 1 or size
                if end - pos > MAX_LINE_BYTES + 1:  # (the newline not counted)
                    cuts.lines_cut += 1
                    raw, pos = buf[pos : pos + MAX_LINE_BYTES], end
                else:
                    raw, pos = buf[pos:end], end
                number += 1
                if block_of is not None:
                    if block_of.take(raw):
                        continue
                    if timers is not None:
                        timers(block_of.lines, source, block_of.line)
                    block_of = None
                offset = 0
            else:
                hit = candidate(buf, pos)
                if hit is None:
                    number += buf.count(b"\n", pos)
                    if buf[-1:] != b"\n":
                        number += 1  # the log's last line, without a newline
                    break
                start = buf.rfind(b"\n", pos, hit.start()) + 1 or pos
                number += buf.count(b"\n", pos, start) + 1
                end = buf.find(b"\n", hit.end()) + 1 or size
                if end - start > MAX_LINE_BYTES + 1:
                    cuts.lines_cut += 1
                    raw, pos = buf[start : start + MAX_LINE_BYTES], end
                else:
                    raw, pos = buf[start:end], end
                offset = hit.start() - start  # the line's start holds no fragment
            if (header := header_match(raw)) is not None:
                # the commonest line: decided by its tail (cached) when its host holds no word
                tail = raw[header.start(3) - 1 :]
                kind = tails.get(tail)
                if kind is None:
                    if len(tails) >= MAX_CACHED_LINES:
                        tails.clear()
                    kind = tails[tail] = tail_kind(tail)
                host = header.group(1)
                if not _has_words(words, host):
                    if kind == SKIP:
                        dense = False
                        continue
                    if kind == SINK:
                        dense = True
                        taken += 1
                        fast(
                            header.group(3),
                            host.decode(),
                            header.group(2).decode(),
                            None,
                            source,
                            number,
                            None,
                        )
                        continue
            action = _general(raw, offset, source, number, fast, prefixes)
            if action is _UNREAD:
                dense = False
                continue
            dense = True
            taken += 1
            if action is None:
                continue
            if type(action) is _TimerBlock:
                block_of = action
                continue
            if pending.holds(action):
                continue
            yield from action
        read_lines = DENSE_ONE_IN > 0 and taken * DENSE_ONE_IN >= number - first
    if block_of is not None and timers is not None:
        timers(block_of.lines, source, block_of.line)
    yield from pending.records
