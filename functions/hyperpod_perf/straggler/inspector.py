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

Speed: a buffer of v4.0-v4.2 records is read with one regex over the whole buffer (the writer's
key order), falling back to `json` line by line when a line does not match it (other key orders,
v4.3, markers, p2p): the same records either way (tests compare them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from hyperpod_perf.domain.bounded_stream import ReadBounds, line_aligned_blocks
from hyperpod_perf.straggler.model import Identity, TimingState

SOURCE = "inspector"
#: The v4.0-v4.2 record in the writer's key order: context prefix, collective, sequence number,
#: execution time, timing source.
_RECORD = re.compile(
    rb'(\{"header":\{[^{}\n]*\},"metadata":\{[^{}\n]*\},)"coll_perf":\{"coll":"([^"\n]*)"'
    rb'(?:,"coll_algo":"[^"\n]*","coll_proto":"[^"\n]*")?,"coll_sn":(\d+),"coll_msg_size_bytes":\d+,'
    rb'"coll_exec_time_us":(\d+(?:\.\d+)?)(?:,"coll_timing_source":"([^"\n]*)")?'
)
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
        self.contexts: dict[bytes, tuple[tuple[str, str], int, float | None] | None] = {}
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

    def prefix_context(self, prefix: bytes) -> tuple[tuple[str, str], int, float | None] | None:
        if prefix in self.contexts:
            return self.contexts[prefix]
        try:
            record = json.loads(prefix[:-1] + b"}")
            found = self.context(record["header"], record["metadata"])
        except (ValueError, KeyError, TypeError, AttributeError):
            found = None
        if len(self.contexts) >= _MAX_CONTEXTS:
            self.contexts.clear()
        self.contexts[prefix] = found
        return found

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
        if b'\n{"coll_perf"' not in buf and not buf.startswith(b'{"coll_perf"'):
            found = _RECORD.findall(buf)
            if len(found) == buf.count(b'"coll_perf"'):
                self._fast(found)
                if b'"dump_stats"' in buf:
                    for line in buf.split(b"\n"):
                        if b'"dump_stats"' in line:
                            self.line(line)
                return
        for line in buf.split(b"\n"):
            if line.startswith(b'{"header"') and b'"coll_perf"' in line and (match := _RECORD.match(line)):
                self._fast([match.groups()])
            else:
                self.line(line)

    def _fast(self, found: list[tuple[bytes, ...]]) -> None:
        contexts = self.contexts
        for prefix, op, seq, exec_us, timing in found:
            context = contexts.get(prefix) if prefix in contexts else self.prefix_context(prefix)
            if context is None:
                self.bad += 1
                continue
            key, who, ts = context
            self.add(
                key,
                who,
                ts,
                op.decode("utf-8", "replace"),
                int(seq),
                float(exec_us),
                timing.decode() if timing else None,
            )


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
