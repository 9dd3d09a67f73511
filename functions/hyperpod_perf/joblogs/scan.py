"""What the job's own logs say, gathered line by line into bounded state.

One `JobLogScan` reads the records of every log of a job (any order, any number of files) and
keeps only what the checks need: per NCCL process (host:pid) the network it ended on; every
NCCL_* / FI_* setting and who set it; memory-registration failures per host; the PyTorch
watchdog's view of each rank's collective sequence; the errors and the ranks a desync report or
a flight-recorder analysis names. Every collection is capped; what passes a cap is counted, so
memory stays constant whatever the volume (the `dropped` counters say when a cap was reached).

Pure: no I/O. What each message means is `messages.interpret`'s business; this module keeps the
state it updates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hyperpod_perf.domain.bounded_stream import ReadBounds
from hyperpod_perf.joblogs.messages import (
    GLOG_HEAD,
    HEADER,
    MAX_CACHED_MESSAGES,
    PROCESS_OPS,
    RECORD_RANK,
    interpret,
)
from hyperpod_perf.joblogs.normalize import Record, glog_seconds
from hyperpod_perf.straggler.model import TimingState

MAX_PROCESSES = 50_000
MAX_ENV_SETTINGS = 2_000
MAX_HOSTS_PER_ITEM = 8
MAX_RANK_KEYS = 100_000
MAX_EVENTS_PER_KIND = 200
MAX_SEQS_PER_RANK = 8


@dataclass(slots=True)
class Process:
    """One NCCL process: where it ran and the network it ended on."""

    host: str
    pid: str
    ranks: set[int] = field(default_factory=set)
    network: str | None = None  # the last `Using network X` / `Initialized NET plugin X`
    network_from_channels: str | None = None  # `via NET/X/` when no init line was logged
    provider: str | None = None
    fabric: str | None = None
    nics: int | None = None
    ofi_failure: str | None = None
    no_plugin: bool = False
    gdr_disabled: str | None = None
    socket_ifaces: tuple[str, ...] = ()
    #: (rank, nranks) of each communicator NCCL logged for it (its global rank: the largest)
    comm_ranks: set[tuple[int, int]] = field(default_factory=set)
    where: str = ""

    @property
    def final_network(self) -> str | None:
        return self.network or self.network_from_channels


@dataclass(slots=True)
class Setting:
    name: str
    value: str
    source: str  # environment | aws-ofi-nccl | aws-ofi-nccl platform defaults
    count: int = 0
    hosts: set[str] = field(default_factory=set)
    where: str = ""


@dataclass(slots=True)
class Event:
    """A notable line: kept once per (kind, host, rank) with a count of repeats."""

    kind: str
    host: str | None
    rank: int | None
    text: str
    where: str
    time_kind: str | None = None  # iso | glog: only times of one kind are comparable
    time: float | None = None
    count: int = 0


@dataclass(slots=True)
class RankWatch:
    """The PyTorch watchdog's view of one rank of one process group."""

    pg: str  # "?" when the line did not name it
    rank: int
    host: str | None = None
    seqs: dict[int, str] = field(default_factory=dict)  # timed-out SeqNum -> OpType
    work: int | None = None
    last_enqueued: int | None = None
    last_completed: int | None = None
    where: str = ""


@dataclass(slots=True)
class Named:
    """Ranks a desync report, a mismatch report or a flight-recorder analysis names."""

    method: str
    ranks: tuple[int, ...]
    detail: str
    where: str


class JobLogScan:
    """Bounded state over the records of a job's logs. Feed records, then read the fields."""

    def __init__(self, instance_type: str | None = None, bounds: ReadBounds | None = None) -> None:
        self.instance_type = instance_type
        #: What the readers cut or skipped (line length, gzip bounds, unreadable objects).
        self.bounds = bounds if bounds is not None else ReadBounds()
        #: What the job's timing records said (NCCL Inspector, flight recorder, trainer lines).
        self.timings = TimingState()
        self.records = 0
        self.logs = 0  # logs (files, objects, streams) read, interesting or not
        self.sources: set[str] = set()
        self.processes: dict[tuple[str, str], Process] = {}
        self.settings: dict[tuple[str, str, str], Setting] = {}
        self.platforms: set[str] = set()
        self.events: dict[tuple[str, str | None, int | None], Event] = {}
        self.event_kinds: dict[str, int] = {}
        self.watches: dict[tuple[str, int], RankWatch] = {}
        self.named: list[Named] = []
        self.dropped: dict[str, int] = {}
        self._fr_context: dict[str, str] = {}
        self._ops: dict[str, tuple[tuple[Any, ...], ...]] = {}
        self._raw_ops: dict[bytes, tuple[tuple[Any, ...], ...]] = {}
        self._glog_ops: dict[bytes, tuple[tuple[Any, ...], ...]] = {}

    # --- feeding --------------------------------------------------------------------------
    def feed(self, records: Iterable[Record]) -> JobLogScan:
        for record in records:
            self.add(record)
        return self

    def add(self, record: Record) -> None:
        """One normalised record (the general path: any prefix, CloudWatch time, glued lines)."""
        text = record.text
        header = HEADER.match(text)
        if header:
            self.add_body(
                text[header.end() :],
                header.group("host"),
                header.group("pid"),
                record.rank,
                record.source,
                record.line,
                record.timestamp,
                record.repeat,
            )
        else:
            self.add_body(
                text,
                record.host,
                record.source,
                record.rank,
                record.source,
                record.line,
                record.timestamp,
                record.repeat,
            )

    def add_body(
        self,
        body: str,
        host: str | None,
        pid: str,
        rank: int | None,
        source: str,
        line: int,
        timestamp: str | None = None,
        repeat: int = 1,
    ) -> None:
        """The message of one record (NCCL header removed) and where it came from.

        What a message means does not depend on the rank that logged it, and a job's ranks log
        the same messages, so the interpretation is cached by message (glog time stripped)."""
        self.records += 1
        key = body
        glog_time: float | None = None
        if body[:1] == "[" and (glog := GLOG_HEAD.match(body)):
            key = body[glog.end() :]
            glog_time = glog_seconds(body)
        ops = self._ops.get(key)
        if ops is None:
            ops = interpret(key)
            if len(self._ops) >= MAX_CACHED_MESSAGES:
                self._ops.clear()
            self._ops[key] = ops
        if ops:
            if timestamp:
                time_kind, time = _iso_time(timestamp)
            elif glog_time is not None:
                time_kind, time = "glog", glog_time
            else:
                time_kind, time = None, None
            self._apply(
                ops, body, host or "?", pid, rank, f"{source}:{line}", time_kind, time, repeat, source
            )

    def add_message(
        self,
        message: bytes,
        host: str | None,
        pid: str,
        rank: int | None,
        source: str,
        line: int,
        timestamp: str | None = None,
    ) -> None:
        """`add_body` for a message still in bytes (the block reader's fast path).

        The interpretation is cached by the bytes, so a message seen before is not decoded
        unless it says something. A glog-timed message (`[E1206 18:44:12.75 file.cpp:607] …`,
        each with its own time) is cached by what follows its glog head, and its time is read
        only when it says something; one `add_body` would not read alike (a head over non-ASCII
        bytes, a message of white space alone) takes `add_body`."""
        if message[:1] == b"[":
            glog = _GLOG_HEAD_BYTES(message)
            ops = self._glog_ops.get(message[glog.end() :]) if glog is not None else _BY_TEXT
            if ops is None:
                key = message[glog.end() :]  # type: ignore[union-attr]
                text = key.decode("utf-8", "replace").rstrip()  # = add_body's key (ASCII head)
                ops = _BY_TEXT if not text else self._ops.get(text)
                if ops is None:
                    ops = interpret(text)
                if len(self._glog_ops) >= MAX_CACHED_MESSAGES:
                    self._glog_ops.clear()
                self._glog_ops[key] = ops
            if ops is _BY_TEXT:
                self.add_body(
                    message.decode("utf-8", "replace").rstrip(), host, pid, rank, source, line, timestamp
                )
                return
            self.records += 1
            if ops:
                body = message.decode("utf-8", "replace").rstrip()
                if timestamp:
                    time_kind, time = _iso_time(timestamp)
                else:
                    time = glog_seconds(body)
                    time_kind = "glog" if time is not None else None
                self._apply(ops, body, host or "?", pid, rank, f"{source}:{line}", time_kind, time, 1, source)
            return
        ops = self._raw_ops.get(message)
        if ops is None:
            body = message.decode("utf-8", "replace").rstrip()
            if body[:1] == "[":  # not after a byte-level rstrip of odd whitespace: the str path
                self.add_body(body, host, pid, rank, source, line, timestamp)
                return
            ops = self._ops.get(body)
            if ops is None:
                ops = interpret(body)
            if len(self._raw_ops) >= MAX_CACHED_MESSAGES:
                self._raw_ops.clear()
            self._raw_ops[message] = ops
        self.records += 1
        if ops:
            time_kind, time = _iso_time(timestamp) if timestamp else (None, None)
            body = message.decode("utf-8", "replace").rstrip()
            self._apply(ops, body, host or "?", pid, rank, f"{source}:{line}", time_kind, time, 1, source)

    def _apply(
        self,
        ops: tuple[tuple[Any, ...], ...],
        body: str,
        host: str,
        pid: str,
        rank: int | None,
        where: str,
        time_kind: str | None,
        time: float | None,
        repeat: int,
        source: str,
    ) -> None:
        named_host = None if host == "?" else host
        for op in ops:
            kind = op[0]
            if kind in PROCESS_OPS:
                process = self._process(host, pid, rank, where)
                if process is None:
                    continue
                if kind == "net":
                    process.network = op[1]
                elif kind == "via":
                    if not process.network:
                        process.network_from_channels = op[1]
                elif kind == "provider":
                    process.provider, process.fabric, process.nics = op[1], op[2], op[3]
                elif kind == "ofi_fail":
                    process.ofi_failure = process.ofi_failure or op[1]
                elif kind == "no_plugin":
                    process.no_plugin = True
                elif kind == "gdr":
                    process.gdr_disabled = op[1]
                elif kind == "ifaces":
                    process.socket_ifaces = op[1]
                elif kind == "comm_rank" and len(process.comm_ranks) < 64:
                    process.comm_ranks.add((op[1], op[2]))
            elif kind == "event":
                event_rank = rank if op[2] is RECORD_RANK else op[2]
                event_host = op[3] if op[3] is not None else named_host
                self._event(op[1], event_host, event_rank, body, where, time_kind, time, repeat)
            elif kind == "setting":
                self._setting(op[1], op[2], op[3], named_host, where)
            elif kind == "platform":
                self.platforms.add(op[1])
            elif kind == "seq":
                watch = self._watch(op[1], op[2], named_host, where)
                if watch is not None and len(watch.seqs) < MAX_SEQS_PER_RANK:
                    watch.seqs.setdefault(op[3], op[4])
            elif kind == "progress":
                watch = self._watch(op[1], op[2], named_host, where)
                if watch is not None:
                    watch.work, watch.last_enqueued, watch.last_completed = op[3], op[4], op[5]
            elif kind == "named":
                self._name(op[1], list(op[2]), op[3] or body, where)
            elif kind == "fr_context":
                self._fr_context[source] = op[1]
            elif kind == "fr_group":
                self._fr_context[source] = f"{self._fr_context.get(source, '')} (group {op[1]})"
            elif kind == "timing":
                from hyperpod_perf.straggler.trainer import apply as apply_timing

                apply_timing(op, self.timings, source, where)
            elif kind == "fr_missing":
                context = self._fr_context.get(source, "")
                detail = f"flight recorder: not all ranks joined collective {context}".strip()
                self._name("flight recorder analysis", list(op[1]), detail, where)

    def add_timer_block(self, lines: list[bytes], source: str, line: int) -> None:
        """A Megatron `times across ranks (ms):` block (the readers collect its lines)."""
        from hyperpod_perf.straggler.trainer import timer_block

        self.records += 1
        timer_block(lines, f"{source}:{line}", self.timings)

    def drop_cache(self) -> None:
        """Forget the per-message cache (before the scan is pickled back from a worker)."""
        self._ops = {}
        self._raw_ops = {}
        self._glog_ops = {}

    def merge(self, other: JobLogScan) -> JobLogScan:
        """Fold in the scan of another part of the same job's logs (parallel reading), bounds kept."""
        self.records += other.records
        self.logs += other.logs
        if other.bounds is not self.bounds:
            self.bounds.merge(other.bounds)
        if other.timings is not self.timings:
            self.timings.merge(other.timings)
        self.sources |= set(list(other.sources)[: max(0, 10_000 - len(self.sources))])
        self.platforms |= other.platforms
        for what, count in other.dropped.items():
            self.dropped[what] = self.dropped.get(what, 0) + count
        for key, process in other.processes.items():
            mine = self.processes.get(key)
            if mine is None:
                if len(self.processes) >= MAX_PROCESSES:
                    self._drop("processes")
                    continue
                self.processes[key] = process
                continue
            mine.ranks |= set(list(process.ranks)[: max(0, 8 - len(mine.ranks))])
            mine.network = process.network or mine.network  # the other part comes later in the log
            mine.network_from_channels = mine.network_from_channels or process.network_from_channels
            if process.provider:
                mine.provider, mine.fabric, mine.nics = process.provider, process.fabric, process.nics
            mine.ofi_failure = mine.ofi_failure or process.ofi_failure
            mine.no_plugin = mine.no_plugin or process.no_plugin
            mine.gdr_disabled = mine.gdr_disabled or process.gdr_disabled
            mine.socket_ifaces = process.socket_ifaces or mine.socket_ifaces
            mine.comm_ranks |= set(list(process.comm_ranks)[: max(0, 64 - len(mine.comm_ranks))])
        for key, setting in other.settings.items():
            mine_setting = self.settings.get(key)
            if mine_setting is None:
                if len(self.settings) >= MAX_ENV_SETTINGS:
                    self._drop("settings")
                    continue
                self.settings[key] = setting
                continue
            mine_setting.count += setting.count
            mine_setting.hosts |= set(
                list(setting.hosts)[: max(0, MAX_HOSTS_PER_ITEM - len(mine_setting.hosts))]
            )
        for key, event in other.events.items():
            mine_event = self.events.get(key)
            if mine_event is None:
                if self.event_kinds.get(event.kind, 0) >= MAX_EVENTS_PER_KIND:
                    self._drop(f"events:{event.kind}")
                    continue
                self.event_kinds[event.kind] = self.event_kinds.get(event.kind, 0) + 1
                self.events[key] = event
                continue
            mine_event.count += event.count
            earlier = mine_event.time is None or (event.time is not None and event.time < mine_event.time)
            if event.time is not None and event.time_kind == mine_event.time_kind and earlier:
                mine_event.time = event.time
        for key, watch in other.watches.items():
            mine_watch = self.watches.get(key)
            if mine_watch is None:
                if len(self.watches) >= MAX_RANK_KEYS:
                    self._drop("ranks")
                    continue
                self.watches[key] = watch
                continue
            for seq, op in watch.seqs.items():
                if len(mine_watch.seqs) < MAX_SEQS_PER_RANK:
                    mine_watch.seqs.setdefault(seq, op)
            if watch.last_enqueued is not None:
                mine_watch.work, mine_watch.last_enqueued = watch.work, watch.last_enqueued
                mine_watch.last_completed = watch.last_completed
            mine_watch.host = mine_watch.host or watch.host
        for named in other.named:
            if len(self.named) >= MAX_EVENTS_PER_KIND:
                self._drop("named")
                continue
            self.named.append(named)
        return self

    def _drop(self, what: str) -> None:
        self.dropped[what] = self.dropped.get(what, 0) + 1

    def _process(self, host: str, pid: str, rank: int | None, where: str) -> Process | None:
        key = (host, pid)
        process = self.processes.get(key)
        if process is None:
            if len(self.processes) >= MAX_PROCESSES:
                self._drop("processes")
                return None
            process = self.processes[key] = Process(host=host, pid=pid, where=where)
        if rank is not None and len(process.ranks) < 8:
            process.ranks.add(rank)
        return process

    def _setting(self, name: str, value: str, source: str, host: str | None, where: str) -> None:
        key = (name, value, source)
        setting = self.settings.get(key)
        if setting is None:
            if len(self.settings) >= MAX_ENV_SETTINGS:
                self._drop("settings")
                return
            setting = self.settings[key] = Setting(name, value, source, where=where)
        setting.count += 1
        if host and len(setting.hosts) < MAX_HOSTS_PER_ITEM:
            setting.hosts.add(host)

    def _event(
        self,
        kind: str,
        host: str | None,
        rank: int | None,
        text: str,
        where: str,
        time_kind: str | None,
        time: float | None,
        repeat: int,
    ) -> None:
        key = (kind, host, rank)
        event = self.events.get(key)
        if event is None:
            if self.event_kinds.get(kind, 0) >= MAX_EVENTS_PER_KIND:
                self._drop(f"events:{kind}")
                return
            self.event_kinds[kind] = self.event_kinds.get(kind, 0) + 1
            event = self.events[key] = Event(kind, host, rank, text.strip()[:400], where, time_kind, time)
        elif time is not None and time_kind == event.time_kind and (event.time is None or time < event.time):
            event.time = time
        event.count += repeat

    def _watch(self, pg: str, rank: int, host: str | None, where: str) -> RankWatch | None:
        key = (pg, rank)
        watch = self.watches.get(key)
        if watch is None:
            if len(self.watches) >= MAX_RANK_KEYS:
                self._drop("ranks")
                return None
            watch = self.watches[key] = RankWatch(pg=pg, rank=rank, host=host, where=where)
        return watch

    def _name(self, method: str, ranks: list[int], detail: str, where: str) -> None:
        if len(self.named) >= MAX_EVENTS_PER_KIND:
            self._drop("named")
            return
        self.named.append(Named(method, tuple(ranks), detail.strip()[:300], where))


#: GLOG_HEAD over bytes (its ASCII span decodes to the same characters `add_body` matches).
_GLOG_HEAD_BYTES = re.compile(GLOG_HEAD.pattern.encode()).match
#: The interpretation `add_message` leaves to `add_body` (a glog message it would not read alike).
_BY_TEXT: tuple[tuple[Any, ...], ...] = (("by text",),)


def _iso_time(timestamp: str) -> tuple[str | None, float | None]:
    try:
        return "iso", datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None, None
