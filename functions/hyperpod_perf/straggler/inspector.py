"""NCCL Inspector plugin output (NVIDIA/nccl plugins/profiler/inspector), read into `TimingState`.

The format, from the plugin's writer (inspector_json.cc) and its README: one file per process,
`<hostname>-pid<pid>.log` (`.log.gz`, `.jsonl` as the plugin's exporter reads them), JSON lines.

- v4.0-v4.2: every record carries its context, `{"header":{"id":"0x…" (the communicator's hash),
  "comm_name", "rank" (in that communicator), "n_ranks", "nnodes"}, "metadata":{
  "inspector_output_format_version", "git_rev", "rec_mechanism", "dump_timestamp_us",
  "hostname", "pid"}, "coll_perf":{"coll", "coll_algo", "coll_proto", "coll_sn",
  "coll_msg_size_bytes", "coll_exec_time_us", "coll_timing_source", "coll_algobw_gbs",
  "coll_busbw_gbs"}}` (`p2p_perf` for send/receive). v4.2 adds a `dump_stats` marker per
  communicator dump (records written, ring drops).
- v4.3: the `dump_stats` marker carries `header` and `metadata` once; the records after it are
  `{"coll_perf":{…}}` alone (the plugin's inspector_json_reader.py restores the context the same
  way: marker counts say how many records belong to it).

Ranks are per communicator, so a process is identified by (hostname, pid). `coll_exec_time_us`
is the collective's execution time on that process (GPU kernel timing by default,
NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING=1). Records are grouped by (communicator id, coll_sn).

Speed: a v4.0-v4.2 record is read without json: its context (header and metadata, the per-record
`dump_timestamp_us` left out) is parsed once and then recognised by comparing bytes, its
collective by one anchored regex (the writer's key order); any other line (markers, v4.3, other
key orders, p2p) is read with `json`: the same records either way (tests compare them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from hyperpod_perf.domain.bounded_stream import ReadBounds, line_aligned_blocks
from hyperpod_perf.straggler.model import MAX, MIN, SUM, WHO, Identity, N, TimingState

SOURCE = "inspector"
#: A v4.0-v4.2 record's collective in the writer's key order (inspectorCompletedColl): the
#: collective, sequence number, execution time, timing source.
_PERF = re.compile(
    rb'"coll_perf":\{"coll":"([^"\n]*+)"'
    rb'(?:,"coll_algo":"[^"\n]*+","coll_proto":"[^"\n]*+")?,"coll_sn":(\d++),"coll_msg_size_bytes":\d++,'
    rb'"coll_exec_time_us":(\d++(?:\.\d++)?)(?:,"coll_timing_source":"([^"\n]*+)")?'
)
#: The writer stamps every record anew (inspectorCommInfoMetaHeader calls inspectorGetTime), so
#: a record's context is its header and metadata with this key's value left out.
_STAMP = b'"dump_timestamp_us":'
_PERF_KEY = b'},"coll_perf":{'
_MAX_CONTEXTS = 10_000


def sniff(head: bytes) -> bool:
    """Whether the first bytes of a log are NCCL Inspector JSON lines."""
    start = head.lstrip()[:4096]
    return start.startswith(b"{") and (
        b'"inspector_output_format_version"' in start or start.startswith((b'{"coll_perf"', b'{"p2p_perf"'))
    )


class _Reader:
    """One Inspector file's records into the state (a fresh reader per file: v4.3 context never
    crosses files, as the plugin's own reader requires)."""

    def __init__(self, state: TimingState, source: str) -> None:
        self.state, self.source = state, source
        #: (metadata before its time, after it) -> (communicator key, identity index)
        self.contexts: dict[tuple[bytes, bytes], tuple[tuple[str, str], int] | None] = {}
        self.marker: tuple[tuple[str, str], int, float | None] | None = None  # v4.3 context
        self.bad = 0

    def context(self, header: dict, metadata: dict) -> tuple[tuple[str, str], int, float | None] | None:
        comm_id = str(header.get("id") or "?")
        n_ranks = _int(header.get("n_ranks"))
        key = (SOURCE, comm_id)
        info = self.state.comm(key, str(header.get("comm_name") or comm_id), n_ranks, SOURCE)
        if info is None:
            return None
        who = self.state.identity(
            Identity(host=_str(metadata.get("hostname")), pid=_str(metadata.get("pid")))
        )
        if who < 0:
            return None
        rank = _int(header.get("rank"))
        if rank is not None and len(self.state.comm_ranks) < 1_000_000:
            self.state.comm_ranks.setdefault((key, who), rank)
        ts = metadata.get("dump_timestamp_us")
        return key, who, float(ts) if isinstance(ts, int | float) else None

    def prefix_context(self, before: bytes, after: bytes) -> tuple[tuple[str, str], int] | None:
        """The (communicator, process) of a record's header and metadata, its time left out."""
        try:
            record = json.loads(before + _STAMP + b"0" + after + b"}")
            found = self.context(record["header"], record["metadata"])
        except (ValueError, KeyError, TypeError, AttributeError):
            found = None
        if len(self.contexts) >= _MAX_CONTEXTS:
            self.contexts.clear()
        self.contexts[before, after] = found[:2] if found is not None else None
        return self.contexts[before, after]

    def record(self, context: tuple[tuple[str, str], int, float | None], perf: dict) -> None:
        key, who, ts = context
        seq, exec_us = _int(perf.get("coll_sn")), perf.get("coll_exec_time_us")
        if seq is None or not isinstance(exec_us, int | float) or isinstance(exec_us, bool):
            self.bad += 1
            return
        self.add(
            key, who, ts, str(perf.get("coll") or "?"), seq, float(exec_us), perf.get("coll_timing_source")
        )

    def add(
        self,
        key: tuple[str, str],
        who: int,
        ts: float | None,
        op: str,
        seq: int,
        exec_us: float,
        timing: object,
    ) -> None:
        state = self.state
        state.add(key, seq, who, exec_us)
        state.records += 1
        info = state.comms[key]
        info.collectives += 1
        info.ops[op] = info.ops.get(op, 0) + 1
        if ts is not None:
            state.seen_at(ts)
        if timing:
            name = str(timing)[:40]
            state.timing_sources[name] = state.timing_sources.get(name, 0) + 1

    def line(self, line: bytes) -> None:
        """The general reading of one line (json): markers, v4.3 records, other key orders."""
        line = line.strip()
        if not line:
            return
        try:
            record = json.loads(line)
        except ValueError:
            self.bad += 1
            return
        if not isinstance(record, dict):
            self.bad += 1
            return
        if "dump_stats" in record:
            stats = record.get("dump_stats") or {}
            dropped = _int(stats.get("coll_dropped_since_last_dump")) if isinstance(stats, dict) else None
            if dropped:
                self.state.drop("collectives the Inspector ring overwrote before its dump", dropped)
            header, metadata = record.get("header"), record.get("metadata")
            self.marker = (
                self.context(header, metadata)
                if isinstance(header, dict) and isinstance(metadata, dict)
                else None
            )
            return
        perf = record.get("coll_perf")
        if not isinstance(perf, dict):
            return  # p2p_perf, proxy_trace: not collectives
        header, metadata = record.get("header"), record.get("metadata")
        if isinstance(header, dict) and isinstance(metadata, dict):
            context = self.context(header, metadata)
        else:
            context = self.marker  # v4.3: the record belongs to the last marker
        if context is None:
            self.bad += 1
            return
        self.record(context, perf)

    def buffer(self, buf: bytes) -> None:
        """One line-aligned buffer. A v4.0-v4.2 record (`{"header":…,"metadata":…,"coll_perf":…}`)
        is read without json: its context is parsed once, then recognised by comparing bytes
        (memcmp, no hash), and its collective by one anchored regex. Any other line (markers,
        v4.3 records, other key orders, damage) is read by `line` (json)."""
        state, contexts = self.state, self.contexts
        collectives = state.collectives
        perf_match = _PERF.match
        before = after = b""  # the last context, around its time
        context: tuple[tuple[str, str], int] | None = None
        key: tuple[str, str] = ("", "")
        who = -1
        counts: dict[tuple[tuple[str, str], bytes, bytes | None], int] = {}
        low = high = -1
        for line in buf.split(b"\n"):
            cut = line.find(_PERF_KEY)
            stamp = line.find(_STAMP, 0, cut) if cut > 0 else -1
            match = perf_match(line, cut + 2) if stamp > 0 else None
            if match is None or not line.startswith(b'{"header":{'):
                if line:
                    self.line(line)
                continue
            start = stamp + len(_STAMP)
            end = line.find(b",", start, cut)
            if end < 0:
                end = cut
            digits = line[start:end]
            if not digits.isdigit():
                self.line(line)
                continue
            if not (
                stamp == len(before)
                and cut + 1 - end == len(after)
                and line.startswith(before)
                and line.startswith(after, end)
            ):
                before, after = line[:stamp], line[end : cut + 1]
                context = contexts.get((before, after), _UNKNOWN)  # type: ignore[arg-type]
                if context is _UNKNOWN:
                    context = self.prefix_context(before, after)
                if context is not None:
                    key, who = context
            if context is None:
                self.bad += 1
                continue
            op, seq, exec_text, timing = match.groups()
            exec_us = float(exec_text)
            agg = collectives.get((key, int(seq)))
            if agg is None:
                state.add(key, int(seq), who, exec_us)
            else:
                agg[N] += 1
                agg[SUM] += exec_us
                if exec_us < agg[MIN]:
                    agg[MIN], agg[WHO] = exec_us, who
                elif exec_us > agg[MAX]:
                    agg[MAX] = exec_us
            tally = (key, op, timing)
            counts[tally] = counts.get(tally, 0) + 1
            ts = int(digits)
            if ts > high:
                high = ts
                if low < 0:
                    low = ts
            elif ts < low:
                low = ts
        for (comm_key, op, timing), n in counts.items():
            state.records += n
            info = state.comms[comm_key]
            info.collectives += n
            name = op.decode("utf-8", "replace")
            info.ops[name] = info.ops.get(name, 0) + n
            if timing:
                source = timing.decode("utf-8", "replace")[:40]
                state.timing_sources[source] = state.timing_sources.get(source, 0) + n
        if low >= 0:
            state.seen_at(float(low))
            state.seen_at(float(high))


_UNKNOWN = object()


def read_inspector(
    blocks: Iterable[bytes], source: str, state: TimingState, bounds: ReadBounds | None = None
) -> None:
    """Feed one Inspector file's records into `state` (lines bounded like every job-log reader)."""
    reader = _Reader(state, source)
    for buf in line_aligned_blocks(blocks, bounds if bounds is not None else ReadBounds()):
        reader.buffer(buf)
    state.count("NCCL Inspector files")
    if reader.bad:
        state.problem(source, f"{reader.bad} line(s) that are not Inspector records were skipped")


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _str(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text[:200] or None
