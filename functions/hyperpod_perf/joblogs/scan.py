"""What the job's own logs say, gathered line by line into bounded state.

One `JobLogScan` reads the records of every log of a job (any order, any number of files) and
keeps only what the checks need: per NCCL process (host:pid) the network it ended on; every
NCCL_* / FI_* setting and who set it; memory-registration failures per host; the PyTorch
watchdog's view of each rank's collective sequence; the errors and the ranks a desync report or
a flight-recorder analysis names. Every collection is capped; what passes a cap is counted, so
memory stays constant whatever the volume (the `dropped` counters say when a cap was reached).

Pure: no I/O. The formats matched are NCCL's (`host:pid:tid [dev] NCCL INFO …`), aws-ofi-nccl's
(`NET/OFI …`), libfabric's and PyTorch ProcessGroupNCCL's, in the wordings of the versions the
real fixtures under tests/fixtures/real/joblogs show.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hyperpod_perf.joblogs.normalize import Record, glog_seconds

MAX_PROCESSES = 50_000
MAX_ENV_SETTINGS = 2_000
MAX_HOSTS_PER_ITEM = 8
MAX_RANK_KEYS = 100_000
MAX_EVENTS_PER_KIND = 200
MAX_SEQS_PER_RANK = 8

_HEADER = re.compile(r"^(?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] ")
_USING_NETWORK = re.compile(
    r"(?:Using network|Initialized NET plugin) (?P<net>[A-Za-z][\w ]*?)\s*(?:$|[←(,]|\s{2})"
)
_VIA_NET = re.compile(r"via NET/(?P<net>[^/]+)/")
_PROVIDER = re.compile(
    r"NET/OFI Selected [Pp]rovider is (?P<provider>[\w;]+)"
    r"(?:, fabric is (?P<fabric>[\w-]+))?(?: \(found (?P<nics>\d+) nics\))?"
)
_OFI_SETTING = re.compile(
    r"NET/OFI Setting (?P<name>(?:NCCL|FI"
    r"|OFI_NCCL)_[A-Z0-9_]+) (?:environment variable )?to (?P<value>.+?)\s*$"
)
_PLATFORM_TOPO = re.compile(
    r"NET/OFI Running on (?P<platform>\S+) platform, "
    r"Setting (?P<name>NCCL_TOPO_FILE) environment variable to (?P<value>\S+)"
)
_PLATFORM_PROTOCOL = re.compile(r"NET/OFI Using transport protocol (?P<value>\w+) \(platform set\)")
_ENV_SET = re.compile(
    r"(?P<name>(?:NCCL|FI|OFI_NCCL|TORCH_NCCL)_[A-Z0-9_]+) set by environment to (?P<value>.*?)\.?\s*$"
)
_SOCKET_IFACES = re.compile(r"NET/Socket : Using (?P<list>(?:\[\d+\]\S+\s*)+)")
_BOOTSTRAP = re.compile(r"Bootstrap : Using (?:\[\d+\])?(?P<iface>[^\s:]+):(?P<addr>\S+?)<")
_IFACE_ITEM = re.compile(r"\[\d+\](?P<iface>[^\s:]+):(?P<addr>[^<\s]+)")
_GDR_DISABLED = re.compile(r"GDR disabled on GDR-supported instance type (?P<type>\S+)")

_PG_RANK = re.compile(r"\[PG (?:ID )?(?P<pg>\d+)[^\]]*? Rank (?P<rank>\d+)\]")
_WATCHDOG = re.compile(
    r"\[Rank (?P<rank>\d+)\] Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), "
    r"OpType=(?P<op>\w+).*?\) ran for (?P<ran>\d+) milliseconds"
)
_PROGRESS = re.compile(
    r"(?:detected by watchdog at work|Timeout at NCCL work): (?P<work>\d+), last enqueued NCCL work: "
    r"(?P<enqueued>\d+), last completed NCCL work: (?P<completed>\d+)"
)
_ASYNC = re.compile(
    r"\[Rank (?P<rank>\d+)\] Collective WorkNCCL\(SeqNum=(?P<seq>\d+), "
    r"OpType=(?P<op>\w+).*?\) raised the following "
    r"async exception: (?P<what>.*)"
)
_NCCL_ERROR = re.compile(
    r"\b(?P<code>nccl(?:Internal|System|Remote|InvalidUsage|InvalidArgument|Unhandled\w*)Error)\b"
)
_LAGGING = re.compile(r"ranks \[(?P<ranks>[\d, ]+)\] are the lagging ranks")
_NOT_FINISHED = re.compile(r"\[(?P<ranks>[\d, ]+)\] joined but didn't finish collective #(?P<seq>\d+)")
_MISMATCH = re.compile(
    r"Rank (?P<a>\d+) is running collective: "
    r"CollectiveFingerPrint\((?:SequenceNumber=(?P<sa>\d+),? ?)?OpType=(?P<oa>\w+)"
    r".*?Rank (?P<b>\d+) is running collective: "
    r"CollectiveFingerPrint\((?:SequenceNumber=(?P<sb>\d+),? ?)?OpType=(?P<ob>\w+)"
)
_FR_HEADER = re.compile(r"Not all ranks joining collective,? (?:sequence number: )?(?P<what>.*)")
_FR_MISSING = re.compile(r"[Mm]issing ranks(?: are|:) \{(?P<ranks>[\d, ]+)\}")
_FR_GROUP = re.compile(r"group info: (?P<group>\S+)")
_RAY_WORKER_DIED = re.compile(r"A worker died or was killed.*?Worker IP address: (?P<ip>[\d.]+)")
_CONNECT_REFUSED = re.compile(r"connect to (?P<addr>[\d.]+)<[^>]*> returned Connection refused")
_MEM_REG = re.compile(
    r"Unable to register memory|fi_mr_reg\w* failed|ibv_reg_mr\w* failed|Call to ibv_reg_mr\w* failed"
    r"|register\w* .*Cannot allocate memory|RLIMIT_MEMLOCK|memlock"
)

#: aws-ofi-nccl warnings that stop communication (not the informational ones).
_OFI_ERROR = re.compile(r"RC: -?\d+|failed|Couldn't|Unable to")


def _ranks(text: str) -> list[int]:
    return [int(r) for r in re.findall(r"\d+", text)][:64]


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

    def __init__(self, instance_type: str | None = None) -> None:
        self.instance_type = instance_type
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

    # --- feeding --------------------------------------------------------------------------
    def feed(self, records: Iterable[Record]) -> JobLogScan:
        for record in records:
            self.add(record)
        return self

    def add(self, record: Record) -> None:
        """One normalised record (the general path: any prefix, CloudWatch time, glued lines)."""
        text = record.text
        header = _HEADER.match(text)
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
        if body[:1] == "[" and (glog := _GLOG_HEAD.match(body)):
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
            if kind in _PROCESS_OPS:
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
            elif kind == "event":
                event_rank = rank if op[2] is _RECORD_RANK else op[2]
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
            elif kind == "fr_missing":
                context = self._fr_context.get(source, "")
                detail = f"flight recorder: not all ranks joined collective {context}".strip()
                self._name("flight recorder analysis", list(op[1]), detail, where)

    def drop_cache(self) -> None:
        """Forget the per-message cache (before the scan is pickled back from a worker)."""
        self._ops = {}

    def merge(self, other: JobLogScan) -> JobLogScan:
        """Fold in the scan of another part of the same job's logs (parallel reading), bounds kept."""
        self.records += other.records
        self.logs += other.logs
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


# --- interpreting one message (pure, cached per message) -------------------------------------

_RECORD_RANK = object()  # an event's rank is the record's (from its launcher prefix)
_PROCESS_OPS = frozenset({"net", "via", "provider", "ofi_fail", "no_plugin", "gdr", "ifaces"})
MAX_CACHED_MESSAGES = 50_000
_GLOG_HEAD = re.compile(r"\[[EWIF]\d{4} [\d:.]+ [\w.]+:\d+\] ")


def interpret(body: str) -> tuple[tuple[Any, ...], ...]:
    """What one message says, as operations on the scan state (no host, rank or time in them)."""
    ops: list[tuple[Any, ...]] = []
    if "NET" in body or "network" in body or "Bootstrap" in body or "GDR" in body:
        _transport_ops(body, ops)
    if "set by environment" in body or "NET/OFI" in body:
        _setting_ops(body, ops)
    if "fi_getinfo" in body:
        _libfabric_ops(body, ops)
    if _MEM_REG.search(body):
        ops.append(("event", "memreg", _RECORD_RANK, None))
    elif "WARN NET/OFI" in body and _OFI_ERROR.search(body):
        ops.append(("event", "ofi_error", _RECORD_RANK, None))
    _failure_ops(body, ops)
    return tuple(ops)


def _transport_ops(body: str, ops: list[tuple[Any, ...]]) -> None:
    if "Using network" in body or "Initialized NET plugin" in body:
        if match := _USING_NETWORK.search(body):
            ops.append(("net", match.group("net").strip()))
        return
    if "via NET/" in body:
        if match := _VIA_NET.search(body):
            ops.append(("via", match.group("net")))
        return
    if "elected" in body and (match := _PROVIDER.search(body)):
        nics = int(match.group("nics")) if match.group("nics") else None
        ops.append(("provider", match.group("provider"), match.group("fabric"), nics))
        return
    failure = None
    if "initialization failed" in body and "NET/OFI" in body:
        failure = "aws-ofi-nccl initialization failed"
    elif "No eligible providers" in body:
        failure = "no eligible libfabric provider"
    elif "Failed to initialize NET plugin" in body and "IB" not in body:
        failure = body.strip()[:200]
    if failure:
        ops.append(("ofi_fail", failure))
        return
    if "No plugin found" in body:
        ops.append(("no_plugin",))
        return
    if "GDR disabled" in body and (match := _GDR_DISABLED.search(body)):
        ops.append(("gdr", match.group("type")))
        ops.append(("platform", match.group("type")))
        return
    if "NET/Socket : Using" in body and (match := _SOCKET_IFACES.search(body)):
        items = _IFACE_ITEM.findall(match.group("list"))
        ops.append(("ifaces", tuple(f"{i}:{a}" for i, a in items)[:8]))
        if any(_link_local(iface, addr) for iface, addr in items):
            ops.append(("event", "link_local_iface", _RECORD_RANK, None))
        return
    if "Bootstrap : Using" in body and (match := _BOOTSTRAP.search(body)):
        if _link_local(match.group("iface"), match.group("addr")):
            ops.append(("event", "link_local_iface", _RECORD_RANK, None))
        return
    if "socket interface found" in body or "neither AF_INET" in body:
        ops.append(("event", "socket_ifname_missing", _RECORD_RANK, None))


def _libfabric_ops(body: str, ops: list[tuple[Any, ...]]) -> None:
    """libfabric's own `fi_getinfo: provider efa output empty list` (no EFA device usable)."""
    if "fi_getinfo" in body and "efa" in body and ("empty list" in body or "No data available" in body):
        ops.append(("event", "libfabric_no_efa", _RECORD_RANK, None))


def _setting_ops(body: str, ops: list[tuple[Any, ...]]) -> None:
    if "set by environment" in body and (match := _ENV_SET.search(body)):
        ops.append(("setting", match.group("name"), match.group("value").strip()[:300], "environment"))
    elif "NET/OFI Running on" in body and (match := _PLATFORM_TOPO.search(body)):
        ops.append(("platform", match.group("platform")))
        ops.append(
            ("setting", match.group("name"), match.group("value")[:300], "aws-ofi-nccl platform defaults")
        )
    elif "platform set" in body and (match := _PLATFORM_PROTOCOL.search(body)):
        ops.append(("setting", "OFI_NCCL_PROTOCOL", match.group("value"), "aws-ofi-nccl platform defaults"))
    elif "NET/OFI Setting" in body and (match := _OFI_SETTING.search(body)):
        ops.append(
            ("setting", match.group("name"), match.group("value").strip().strip('"')[:300], "aws-ofi-nccl")
        )
    elif "NCCL_PROTO was set to" in body and "corrupt data" in body:
        ops.append(("event", "proto_ll_on_efa", None, None))


def _failure_ops(body: str, ops: list[tuple[Any, ...]]) -> None:
    if "Watchdog caught" in body and (match := _WATCHDOG.search(body)):
        pg_match = _PG_RANK.search(body, 0, match.start() + 1)
        rank = int(match.group("rank"))
        ops.append(
            (
                "seq",
                pg_match.group("pg") if pg_match else "?",
                rank,
                int(match.group("seq")),
                match.group("op"),
            )
        )
        ops.append(("event", "watchdog_timeout", rank, None))
        return
    if "last enqueued NCCL work" in body and (match := _PROGRESS.search(body)):
        if pg_match := _PG_RANK.search(body):
            ops.append(
                (
                    "progress",
                    pg_match.group("pg"),
                    int(pg_match.group("rank")),
                    int(match.group("work")),
                    int(match.group("enqueued")),
                    int(match.group("completed")),
                )
            )
        return
    if "async exception" in body and (match := _ASYNC.search(body)):
        kind = "remote_exit" if "remote process exited" in match.group("what") else "nccl_error"
        ops.append(("event", kind, int(match.group("rank")), None))
        return
    if "remote process exited" in body:
        ops.append(("event", "remote_exit", _RECORD_RANK, None))
        return
    if "watchdog got stuck" in body:
        ops.append(("event", "watchdog_stuck", _pg_rank(body, _RECORD_RANK), None))
        return
    if "A worker died" in body and (match := _RAY_WORKER_DIED.search(body)):
        ops.append(("event", "worker_died", _RECORD_RANK, match.group("ip")))
        return
    if "Connection refused" in body and _CONNECT_REFUSED.search(body):
        ops.append(("event", "connect_refused", _RECORD_RANK, None))
        return
    if "lagging ranks" in body and (match := _LAGGING.search(body)):
        ops.append(("named", "desync report (never joined)", tuple(_ranks(match.group("ranks"))), None))
        return
    if "didn't finish collective" in body and (match := _NOT_FINISHED.search(body)):
        method = f"desync report (joined collective #{match.group('seq')} but did not finish)"
        ops.append(("named", method, tuple(_ranks(match.group("ranks"))), None))
        return
    if "mismatch between collectives" in body and (match := _MISMATCH.search(body)):
        ops.append(_mismatch_op(match))
        return
    if "joining collective" in body and (match := _FR_HEADER.search(body)):
        ops.append(("fr_context", match.group("what").strip()[:200]))
        return
    if "group info:" in body and (match := _FR_GROUP.search(body)):
        ops.append(("fr_group", match.group("group")))
        return
    if "issing ranks" in body and (match := _FR_MISSING.search(body)):
        ops.append(("fr_missing", tuple(_ranks(match.group("ranks")))))
        return
    if ("nccl" in body and _NCCL_ERROR.search(body)) or "unhandled system error" in body:
        ops.append(("event", "nccl_error", _pg_rank(body, _RECORD_RANK), None))


def _mismatch_op(match: re.Match[str]) -> tuple[Any, ...]:
    a, b = int(match.group("a")), int(match.group("b"))
    sa, sb = match.group("sa"), match.group("sb")
    if sa is not None and sb is not None and int(sa) != int(sb):
        lagging = a if int(sa) < int(sb) else b
        low, high = sorted((int(sa), int(sb)))
        method = f"collective mismatch report (rank {lagging} is behind in sequence: {low} vs {high})"
        return ("named", method, (lagging,), None)
    method = (
        f"collective mismatch report (rank {a} runs {match.group('oa')}, rank {b} runs {match.group('ob')}; "
        "the report does not say which side is wrong)"
    )
    return ("named", method, (a, b), None)


def _pg_rank(body: str, fallback: Any) -> Any:
    match = _PG_RANK.search(body) or re.search(r"\[Rank (\d+)\]", body)
    if match:
        return int(match.group("rank") if "rank" in match.groupdict() else match.group(1))
    return fallback


def _link_local(iface: str, addr: str) -> bool:
    """169.254.0.0/16 (IPv4 link-local) or an interface named like the EKS Pod Identity link."""
    return addr.startswith("169.254.") or iface.startswith("pod-id-link") or addr.lower().startswith("fe80:")


def _iso_time(timestamp: str) -> tuple[str | None, float | None]:
    try:
        return "iso", datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None, None
