"""Kernel-log parsers: NVIDIA Xid / NVSwitch SXid / "fallen off the bus" events, and OOM kills.

The same kernel message reaches us in many wrappings (`dmesg -T`, `dmesg --decode
--time-format iso`, `journalctl -k`, syslog's `kernel:` prefix, raw kmsg, or no prefix at all),
so events are found by their message text anywhere in the line and the timestamp is read from
whatever precedes it. Lines that are not events (driver banners, stack traces) are skipped; a
line that mentions Xid but cannot be read is kept in ``unparsed`` rather than dropped, because
an Xid we cannot decode is still an Xid.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from hyperpod_perf.parse.nvidia_smi import normalize_bus_id

PCI_RE = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?"
#: `rest` runs to the last non-blank (`.*\S`: one backtrack). The lazy `.*?\s*$` it replaces retried
#: the trailing-blank check at every character, quadratic on a long blank run after the comma.
XID_RE = re.compile(
    rf"NVRM: Xid \((?:PCI:)?(?P<pci>{PCI_RE})\): (?P<code>\d+)(?:,\s*(?P<rest>(?:.*\S)?))?\s*$"
)
SXID_RE = re.compile(
    rf"(?P<switch>nvidia-nvswitch\d+): SXid \(PCI:(?P<pci>{PCI_RE})\): (?P<code>\d+)"
    r"(?:,\s*(?P<severity>Non-fatal|Fatal))?(?:,\s*(?P<rest>(?:.*\S)?))?\s*$"
)
PID_RE = re.compile(
    r"^pid=(?P<pid>'[^']*'|<[^>]*>|[^,\s]+)(?:,\s*name=(?P<name>[^,]*))?(?:,\s*(?P<message>.*))?$"
)
FALLEN_OFF_RE = re.compile(r"fallen off the bus", re.IGNORECASE)
#: `GPU at PCI:0000:2a:00`, `GPU at 0000:01:00.0` (older drivers print no `PCI:`) and `GPU 0000:b3:00.0`.
FALLEN_OFF_PCI_RE = re.compile(rf"GPU\s+(?:at\s+)?(?:PCI:)?(?P<pci>{PCI_RE})")
PCI_DEVICE_ID_RE = re.compile(r"PCI ID: (?P<id>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{4})")
RECOVERY_ACTION_RE = re.compile(
    r"recovery action changed from \S+ \([^)]*\) to (?P<code>0x[0-9A-Fa-f]+) \((?P<label>[^)]*)\)"
)
XID_MENTION_RE = re.compile(r"\bS?Xid\b")
#: dmesg's own failure (e.g. `dmesg: read kernel buffer failed: Operation not permitted`).
TOOL_ERROR_RE = re.compile(r"^\s*(?:dmesg|journalctl): ")
PROMPT_RE = re.compile(r"^\s*(?:[$#]\s|[\w.-]+@[\w.-]+:\S*\s*[$#]\s)")

#: Timestamp wrappings, tried in order on the text before the message.
TIMESTAMP_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("dmesg-T", re.compile(r"\[(?P<ts>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4})\]")),
    ("iso", re.compile(r"(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:[+-]\d{2}:?\d{2}|Z)?)")),
    ("syslog", re.compile(r"^(?P<ts>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2})\s")),
    ("monotonic", re.compile(r"\[\s*(?P<ts>\d+\.\d+)\]")),
)


class EventKind(StrEnum):
    XID = "xid"
    SXID = "sxid"
    FALLEN_OFF_BUS = "fallen_off_bus"


@dataclass(frozen=True)
class Timestamp:
    text: str
    format: str  # dmesg-T | iso | syslog | monotonic

    def moment(self, collected: datetime | None, uptime_s: float | None = None) -> datetime | None:
        """When the line was logged (UTC), given when the node was collected and its uptime.

        `dmesg -T` and syslog print the node's local time; HyperPod nodes run in UTC (the AMI's
        default), so they are read as UTC. Syslog lines carry no year: the latest year that does not
        put the line after the collection. A monotonic `[secs]` stamp counts from boot, so it needs
        the uptime. None when the stamp cannot be placed.
        """
        try:
            if self.format == "dmesg-T":
                moment = datetime.strptime(" ".join(self.text.split()), "%a %b %d %H:%M:%S %Y")
                return moment.replace(tzinfo=UTC)
            if self.format == "iso":
                moment = datetime.fromisoformat(self.text.replace(",", "."))
                return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
            if collected is None:
                return None
            if self.format == "syslog":
                text = " ".join(self.text.split())
                for year in (collected.year, collected.year - 1):
                    moment = datetime.strptime(f"{year} {text}", "%Y %b %d %H:%M:%S").replace(tzinfo=UTC)
                    if moment <= collected + timedelta(minutes=5):
                        return moment
                return None
            if self.format == "monotonic" and uptime_s is not None:
                return collected - timedelta(seconds=uptime_s - float(self.text))
        except ValueError:
            return None
        return None


@dataclass(frozen=True)
class GpuKernelEvent:
    """One Xid / SXid / fallen-off-the-bus message, with what the line says about it."""

    kind: EventKind
    code: int | None  # None for "fallen off the bus" without an Xid
    pci: str | None  # short form `0000:2a:00` (joins with nvidia-smi bus ids)
    pci_raw: str | None
    pid: int | None
    pid_raw: str | None  # `1045242`, `'<unknown>'`, `'N/A'`, ... as printed
    process: str | None
    message: str
    timestamp: Timestamp | None
    line: str
    severity: str | None = None  # SXid: Fatal / Non-fatal
    recovery_action: str | None = None  # Xid 154: the action the driver asks for
    device_id: str | None = None  # vendor:device (`10de:26b5`) when the message names it
    switch: str | None = None  # SXid: the NVSwitch device (`nvidia-nvswitch0`)


@dataclass(frozen=True)
class KernelGpuLog:
    events: tuple[GpuKernelEvent, ...]
    unparsed: tuple[str, ...]  # lines naming Xid/SXid that did not match the known shapes


def _timestamp(prefix: str) -> Timestamp | None:
    for name, pattern in TIMESTAMP_PATTERNS:
        match = pattern.search(prefix)
        if match:
            return Timestamp(match["ts"], name)
    return None


def _logical_records(text: str) -> list[str]:
    """Join continuation lines (indented, no timestamp) onto the record they continue."""
    # parts of each record, joined once at the end: appending to a growing string would copy it
    # for every continuation line (quadratic on a long run of indented lines)
    records: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip() or PROMPT_RE.match(line):
            continue
        if line[:1].isspace() and records:
            records[-1].append(line.strip().removeprefix("NVRM:").strip())
        else:
            records.append([line.rstrip()])
    return [" ".join(parts) for parts in records]


def _optional(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return None if value in {"", "<unknown>", "'<unknown>'", "'N/A'", "N/A"} else value


def _pid(raw: str | None) -> int | None:
    return int(raw) if raw is not None and raw.isdigit() else None


def _xid_event(record: str, match: re.Match[str]) -> GpuKernelEvent:
    rest = match["rest"] or ""
    pid_match = PID_RE.match(rest)
    pid_raw = pid_match["pid"] if pid_match else None
    process = _optional(pid_match["name"]) if pid_match else None
    message = (pid_match["message"] or "") if pid_match else rest
    recovery = RECOVERY_ACTION_RE.search(message)
    return GpuKernelEvent(
        kind=EventKind.XID,
        code=int(match["code"]),
        pci=normalize_bus_id(match["pci"]),
        pci_raw=match["pci"],
        pid=_pid(pid_raw),
        pid_raw=pid_raw,
        process=process,
        message=message.strip(),
        timestamp=_timestamp(record[: match.start()]),
        line=record,
        recovery_action=f"{recovery['code']} ({recovery['label']})" if recovery else None,
    )


def _sxid_event(record: str, match: re.Match[str]) -> GpuKernelEvent:
    return GpuKernelEvent(
        kind=EventKind.SXID,
        code=int(match["code"]),
        pci=normalize_bus_id(match["pci"]),
        pci_raw=match["pci"],
        pid=None,
        pid_raw=None,
        process=None,
        message=(match["rest"] or "").strip(),
        timestamp=_timestamp(record[: match.start()]),
        line=record,
        severity=match["severity"],
        switch=match["switch"],
    )


def _fallen_off_event(record: str) -> GpuKernelEvent:
    start = record.find("NVRM:")
    pci = FALLEN_OFF_PCI_RE.search(record)
    device = PCI_DEVICE_ID_RE.search(record)
    return GpuKernelEvent(
        kind=EventKind.FALLEN_OFF_BUS,
        code=None,
        pci=normalize_bus_id(pci["pci"]) if pci else None,
        pci_raw=pci["pci"] if pci else None,
        pid=None,
        pid_raw=None,
        process=None,
        message=record[start + len("NVRM:") :].strip() if start >= 0 else record.strip(),
        timestamp=_timestamp(record[: max(start, 0)]),
        line=record,
        device_id=device["id"].lower() if device else None,
    )


def parse_gpu_kernel_log(text: str) -> KernelGpuLog:
    """Xid, SXid and fallen-off-the-bus events from kernel-log lines, in log order."""
    events: list[GpuKernelEvent] = []
    unparsed: list[str] = []
    for record in _logical_records(text):
        if TOOL_ERROR_RE.match(record):
            raise ValueError(f"kernel log could not be read: {record.strip()[:200]!r}")
        if xid := XID_RE.search(record):
            events.append(_xid_event(record, xid))
        elif sxid := SXID_RE.search(record):
            events.append(_sxid_event(record, sxid))
        elif FALLEN_OFF_RE.search(record):
            events.append(_fallen_off_event(record))
        elif XID_MENTION_RE.search(record):
            unparsed.append(record)
    return KernelGpuLog(events=tuple(events), unparsed=tuple(unparsed))


# --------------------------------------------------------------------------------------------
# OOM killer
# --------------------------------------------------------------------------------------------

#: Parenthesised parts are bounded: the kernel prints a task name of at most 15 characters and a
#: short constraint; unbounded, a line repeating `Out of memory (` with no `)` would be rescanned
#: to its end from every repetition (quadratic).
OOM_KILLED_RE = re.compile(
    r"(?P<scope>Memory cgroup )?[Oo]ut of memory(?: \([^)]{0,256}\))?: Kill(?:ed)? process (?P<pid>\d+)"
    r"(?:, UID \d+,)? \((?P<name>[^)]{0,256})\)"
)
OOM_KILL_SUMMARY_RE = re.compile(r"oom-kill:(?P<fields>\S+)")
#: Tried only where a word starts (the lookbehind): from any later offset of the same word the match
#: would end at the same blank, so the result is the plain pattern's, without rescanning a long word
#: from each of its characters (quadratic: an 80 KB word took ~40 s).
OOM_INVOKED_RE = re.compile(r"(?<!\S)(?P<name>\S++) invoked oom-killer")
OOM_MENTION_RE = re.compile(r"out of memory|oom-kill", re.IGNORECASE)


class OomKind(StrEnum):
    KILLED = (
        "killed"  # `Out of memory: Killed process N (name)`, RHEL's `... N, UID U, (name)`, cgroup variant
    )
    SUMMARY = "oom_kill"  # `oom-kill:constraint=...,task=name,pid=N,uid=U`
    INVOKED = "invoked"  # `name invoked oom-killer: ...` (the trigger, not the victim)
    OTHER = "other"


@dataclass(frozen=True)
class OomEvent:
    kind: OomKind
    pid: int | None
    process: str | None
    cgroup: bool  # killed by a memory cgroup limit rather than the whole host running out
    timestamp: Timestamp | None
    line: str


def parse_oom(text: str) -> tuple[OomEvent, ...]:
    """OOM-killer lines (`Out of memory` / `oom-kill`), in log order."""
    events: list[OomEvent] = []
    for record in _logical_records(text):
        if TOOL_ERROR_RE.match(record):
            raise ValueError(f"kernel log could not be read: {record.strip()[:200]!r}")
        if killed := OOM_KILLED_RE.search(record):
            events.append(
                OomEvent(
                    OomKind.KILLED,
                    int(killed["pid"]),
                    killed["name"],
                    killed["scope"] is not None,
                    _timestamp(record[: killed.start()]),
                    record,
                )
            )
        elif summary := OOM_KILL_SUMMARY_RE.search(record):
            fields = dict(part.split("=", 1) for part in summary["fields"].split(",") if "=" in part)
            events.append(
                OomEvent(
                    OomKind.SUMMARY,
                    _pid(fields.get("pid")),
                    fields.get("task"),
                    "global_oom" not in summary["fields"],
                    _timestamp(record[: summary.start()]),
                    record,
                )
            )
        elif invoked := OOM_INVOKED_RE.search(record):
            events.append(
                OomEvent(
                    OomKind.INVOKED,
                    None,
                    invoked["name"],
                    False,
                    _timestamp(record[: invoked.start()]),
                    record,
                )
            )
        elif OOM_MENTION_RE.search(record):
            events.append(OomEvent(OomKind.OTHER, None, None, False, _timestamp(record), record))
    return tuple(events)
