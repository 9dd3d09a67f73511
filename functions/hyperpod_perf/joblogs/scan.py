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


@dataclass
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


@dataclass
class Setting:
    name: str
    value: str
    source: str  # environment | aws-ofi-nccl | aws-ofi-nccl platform defaults
    count: int = 0
    hosts: set[str] = field(default_factory=set)
    where: str = ""


@dataclass
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


@dataclass
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


@dataclass
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

    # --- feeding --------------------------------------------------------------------------
    def feed(self, records: Iterable[Record]) -> JobLogScan:
        for record in records:
            self.add(record)
        return self

    def add(self, record: Record) -> None:
        self.records += 1
        if len(self.sources) < 10_000:
            self.sources.add(record.source)
        text = record.text
        header = _HEADER.match(text)
        host = header.group("host") if header else record.host
        where = f"{record.source}:{record.line}"
        body = text[header.end() :] if header else text
        if "NET" in body or "network" in body or "Bootstrap" in body or "GDR" in body:
            self._transport(record, header, host, body, where)
        if "set by environment" in body or "NET/OFI" in body:
            self._settings(body, host, where)
        if _MEM_REG.search(body):
            self._event("memreg", host, record.rank, body, where, record)
        elif "WARN NET/OFI" in body and _OFI_ERROR.search(body):
            self._event("ofi_error", host, record.rank, body, where, record)
        self._failures(record, host, body, where)

    def _drop(self, what: str) -> None:
        self.dropped[what] = self.dropped.get(what, 0) + 1

    def _process(self, record: Record, header: re.Match[str] | None, host: str | None) -> Process | None:
        key = (host or "?", header.group("pid") if header else record.source)
        process = self.processes.get(key)
        if process is None:
            if len(self.processes) >= MAX_PROCESSES:
                self._drop("processes")
                return None
            process = Process(host=key[0], pid=key[1], where=f"{record.source}:{record.line}")
            self.processes[key] = process
        if record.rank is not None and len(process.ranks) < 8:
            process.ranks.add(record.rank)
        return process

    def _transport(
        self, record: Record, header: re.Match[str] | None, host: str | None, body: str, where: str
    ) -> None:
        if "Using network" in body or "Initialized NET plugin" in body:
            match = _USING_NETWORK.search(body)
            if match and (process := self._process(record, header, host)):
                process.network = match.group("net").strip()
            return
        if "via NET/" in body:
            match = _VIA_NET.search(body)
            if match and (process := self._process(record, header, host)) and not process.network:
                process.network_from_channels = match.group("net")
            return
        if "elected" in body and (match := _PROVIDER.search(body)):
            if process := self._process(record, header, host):
                process.provider = match.group("provider")
                process.fabric = match.group("fabric")
                process.nics = int(match.group("nics")) if match.group("nics") else None
            return
        failure = None
        if "initialization failed" in body and "NET/OFI" in body:
            failure = "aws-ofi-nccl initialization failed"
        elif "No eligible providers" in body:
            failure = "no eligible libfabric provider"
        elif "Failed to initialize NET plugin" in body and "IB" not in body:
            failure = body.strip()[:200]
        if failure:
            if process := self._process(record, header, host):
                process.ofi_failure = process.ofi_failure or failure
            return
        if "No plugin found" in body:
            if process := self._process(record, header, host):
                process.no_plugin = True
            return
        if "GDR disabled" in body and (match := _GDR_DISABLED.search(body)):
            if process := self._process(record, header, host):
                process.gdr_disabled = match.group("type")
            self.platforms.add(match.group("type"))
            return
        if "NET/Socket : Using" in body and (match := _SOCKET_IFACES.search(body)):
            items = _IFACE_ITEM.findall(match.group("list"))
            if process := self._process(record, header, host):
                process.socket_ifaces = tuple(f"{i}:{a}" for i, a in items)[:8]
            for iface, addr in items:
                if _link_local(iface, addr):
                    self._event("link_local_iface", host, record.rank, body, where, record)
            return
        if "Bootstrap : Using" in body and (match := _BOOTSTRAP.search(body)):
            if _link_local(match.group("iface"), match.group("addr")):
                self._event("link_local_iface", host, record.rank, body, where, record)
            return
        if "socket interface found" in body or "neither AF_INET" in body:
            self._event("socket_ifname_missing", host, record.rank, body, where, record)

    def _settings(self, body: str, host: str | None, where: str) -> None:
        found: list[tuple[str, str, str]] = []
        if "set by environment" in body and (match := _ENV_SET.search(body)):
            found.append((match.group("name"), match.group("value").strip(), "environment"))
        elif "NET/OFI Running on" in body and (match := _PLATFORM_TOPO.search(body)):
            self.platforms.add(match.group("platform"))
            found.append((match.group("name"), match.group("value"), "aws-ofi-nccl platform defaults"))
        elif "platform set" in body and (match := _PLATFORM_PROTOCOL.search(body)):
            found.append(("OFI_NCCL_PROTOCOL", match.group("value"), "aws-ofi-nccl platform defaults"))
        elif "NET/OFI Setting" in body and (match := _OFI_SETTING.search(body)):
            found.append((match.group("name"), match.group("value").strip().strip('"'), "aws-ofi-nccl"))
        elif "NCCL_PROTO was set to" in body and "corrupt data" in body:
            self._event("proto_ll_on_efa", host, None, body, where, None)
        for name, value, source in found:
            key = (name, value[:300], source)
            setting = self.settings.get(key)
            if setting is None:
                if len(self.settings) >= MAX_ENV_SETTINGS:
                    self._drop("settings")
                    continue
                setting = self.settings[key] = Setting(name, value[:300], source, where=where)
            setting.count += 1
            if host and len(setting.hosts) < MAX_HOSTS_PER_ITEM:
                setting.hosts.add(host)

    def _event(
        self, kind: str, host: str | None, rank: int | None, text: str, where: str, record: Record | None
    ) -> Event | None:
        key = (kind, host, rank)
        event = self.events.get(key)
        if event is None:
            if self.event_kinds.get(kind, 0) >= MAX_EVENTS_PER_KIND:
                self._drop(f"events:{kind}")
                return None
            self.event_kinds[kind] = self.event_kinds.get(kind, 0) + 1
            time_kind, time = _time_of(record, text)
            event = self.events[key] = Event(kind, host, rank, text.strip()[:400], where, time_kind, time)
        event.count += record.repeat if record else 1
        return event

    def _watch(self, pg: str, rank: int, host: str | None, where: str) -> RankWatch | None:
        key = (pg, rank)
        watch = self.watches.get(key)
        if watch is None:
            if len(self.watches) >= MAX_RANK_KEYS:
                self._drop("ranks")
                return None
            watch = self.watches[key] = RankWatch(pg=pg, rank=rank, host=host, where=where)
        return watch

    def _failures(self, record: Record, host: str | None, body: str, where: str) -> None:
        if "Watchdog caught" in body and (match := _WATCHDOG.search(body)):
            pg_match = _PG_RANK.search(body, 0, match.start() + 1)
            pg = pg_match.group("pg") if pg_match else "?"
            rank = int(match.group("rank"))
            watch = self._watch(pg, rank, host, where)
            if watch is not None and len(watch.seqs) < MAX_SEQS_PER_RANK:
                watch.seqs.setdefault(int(match.group("seq")), match.group("op"))
            self._event("watchdog_timeout", host, rank, body, where, record)
            return
        if "last enqueued NCCL work" in body and (match := _PROGRESS.search(body)):
            pg_match = _PG_RANK.search(body)
            if pg_match and (
                watch := self._watch(pg_match.group("pg"), int(pg_match.group("rank")), host, where)
            ):
                watch.work = int(match.group("work"))
                watch.last_enqueued = int(match.group("enqueued"))
                watch.last_completed = int(match.group("completed"))
            return
        if "async exception" in body and (match := _ASYNC.search(body)):
            what = match.group("what")
            kind = "remote_exit" if "remote process exited" in what else "nccl_error"
            self._event(kind, host, int(match.group("rank")), body, where, record)
            return
        if "remote process exited" in body:
            self._event("remote_exit", host, record.rank, body, where, record)
            return
        if "watchdog got stuck" in body:
            self._event("watchdog_stuck", host, _pg_rank(body, record.rank), body, where, record)
            return
        if "A worker died" in body and (match := _RAY_WORKER_DIED.search(body)):
            self._event("worker_died", match.group("ip"), record.rank, body, where, record)
            return
        if "Connection refused" in body and (match := _CONNECT_REFUSED.search(body)):
            self._event("connect_refused", host, record.rank, body, where, record)
            return
        if "lagging ranks" in body and (match := _LAGGING.search(body)):
            self._name("desync report (never joined)", _ranks(match.group("ranks")), body, where)
            return
        if "didn't finish collective" in body and (match := _NOT_FINISHED.search(body)):
            ranks = _ranks(match.group("ranks"))
            self._name(
                f"desync report (joined collective #{match.group('seq')} but did not finish)",
                ranks,
                body,
                where,
            )
            return
        if "mismatch between collectives" in body and (match := _MISMATCH.search(body)):
            self._mismatch(match, body, where)
            return
        if "joining collective" in body and (match := _FR_HEADER.search(body)):
            self._fr_context[record.source] = match.group("what").strip()[:200]
            return
        if "group info:" in body and (match := _FR_GROUP.search(body)):
            context = self._fr_context.get(record.source, "")
            self._fr_context[record.source] = f"{context} (group {match.group('group')})"
            return
        if "issing ranks" in body and (match := _FR_MISSING.search(body)):
            context = self._fr_context.get(record.source, "")
            detail = f"flight recorder: not all ranks joined collective {context}".strip()
            self._name("flight recorder analysis", _ranks(match.group("ranks")), detail, where)
            return
        if "nccl" in body and (match := _NCCL_ERROR.search(body)):
            self._event("nccl_error", host, _pg_rank(body, record.rank), body, where, record)
            return
        if "unhandled system error" in body:
            self._event("nccl_error", host, _pg_rank(body, record.rank), body, where, record)

    def _name(self, method: str, ranks: list[int], detail: str, where: str) -> None:
        if len(self.named) >= MAX_EVENTS_PER_KIND:
            self._drop("named")
            return
        self.named.append(Named(method, tuple(ranks), detail.strip()[:300], where))

    def _mismatch(self, match: re.Match[str], body: str, where: str) -> None:
        a, b = int(match.group("a")), int(match.group("b"))
        sa, sb = match.group("sa"), match.group("sb")
        if sa is not None and sb is not None and int(sa) != int(sb):
            lagging = a if int(sa) < int(sb) else b
            self._name(
                f"collective mismatch report (rank {lagging} is behind in sequence: "
                f"{min(int(sa), int(sb))} vs "
                f"{max(int(sa), int(sb))})",
                [lagging],
                body,
                where,
            )
        else:
            self._name(
                f"collective mismatch report (rank {a} runs {match.group('oa')}, rank {b} runs "
                f"{match.group('ob')}; "
                "the report does not say which side is wrong)",
                [a, b],
                body,
                where,
            )


def _pg_rank(body: str, fallback: int | None) -> int | None:
    match = _PG_RANK.search(body) or re.search(r"\[Rank (\d+)\]", body)
    if match:
        return int(match.group("rank") if "rank" in match.groupdict() else match.group(1))
    return fallback


def _link_local(iface: str, addr: str) -> bool:
    """169.254.0.0/16 (IPv4 link-local) or an interface named like the EKS Pod Identity link."""
    return addr.startswith("169.254.") or iface.startswith("pod-id-link") or addr.lower().startswith("fe80:")


def _time_of(record: Record | None, text: str) -> tuple[str | None, float | None]:
    if record is not None and record.timestamp:
        try:
            return "iso", datetime.fromisoformat(record.timestamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    seconds = glog_seconds(text)
    return ("glog", seconds) if seconds is not None else (None, None)
