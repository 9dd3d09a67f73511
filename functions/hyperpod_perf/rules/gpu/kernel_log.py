"""The kernel-log checks: NVIDIA Xid / SXid events (with the Xid action catalog) and OOM kills."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Any

from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.parse.dmesg import (
    EventKind,
    GpuKernelEvent,
    KernelGpuLog,
    OomEvent,
    OomKind,
)
from hyperpod_perf.rules.context import NodeContext, Section
from hyperpod_perf.rules.gpu.common import (
    HANDOFF_I,
    NEXT_OOM,
    NEXT_XID_UNPARSED,
    _Judge,
    _unavailable,
)

# --------------------------------------------------------------------------------------------
# The Xid action catalog (data: rules/xid_actions.json, loaded once at import)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class XidAction:
    key: str
    summary: str
    next_step: str
    title: str | None = None


class XidCatalog:
    """Code -> NVIDIA's recommended action; unknown codes get the generic look-up action."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._actions = data["actions"]
        self._codes = data["codes"]
        self._unknown = data["unknown_xid"]
        self._sxid = data["sxid"]
        self._fallen_off_bus = data["fallen_off_bus"]
        for key in [
            *(c["action"] for c in self._codes.values()),
            self._unknown,
            self._sxid,
            self._fallen_off_bus,
        ]:
            if key not in self._actions:
                raise ValueError(f"xid_actions.json: action {key!r} is used but not defined")

    def _action(self, key: str, title: str | None = None) -> XidAction:
        entry = self._actions[key]
        return XidAction(key, entry["summary"], entry["next_step"], title)

    def for_event(self, event: GpuKernelEvent) -> XidAction:
        if event.kind is EventKind.SXID:
            return self._action(self._sxid)
        if event.kind is EventKind.FALLEN_OFF_BUS:
            return self._action(self._fallen_off_bus, "GPU has fallen off the bus")
        entry = self._codes.get(str(event.code))
        if entry is None:
            return self._action(self._unknown)
        return self._action(entry["action"], entry.get("title"))

    def for_code(self, code: int) -> XidAction:
        """The action for a bare Xid code (a metric carries the code, not the kernel line)."""
        entry = self._codes.get(str(code))
        if entry is None:
            return self._action(self._unknown)
        return self._action(entry["action"], entry.get("title"))

    @property
    def codes(self) -> dict[str, str]:
        return {code: entry["action"] for code, entry in self._codes.items()}


def load_xid_catalog() -> XidCatalog:
    text = resources.files("hyperpod_perf.rules").joinpath("xid_actions.json").read_text(encoding="utf-8")
    return XidCatalog(json.loads(text))


XID_CATALOG = load_xid_catalog()


# gpu.xid
# --------------------------------------------------------------------------------------------


@dataclass
class _XidGroup:
    events: list[GpuKernelEvent]
    fallen_off_bus_lines: int = 0  # bare "fallen off the bus" messages of the same GPU (see below)


def _group_events(events: Iterable[GpuKernelEvent]) -> dict[tuple[str, int | None, str | None], _XidGroup]:
    """One group per distinct (kind, code, PCI id), in order of first appearance.

    A bare "fallen off the bus" message for a GPU that also logged Xid 79 is the same fault
    told twice, so it joins the Xid 79 group instead of raising a second concern.
    """
    events = list(events)
    xid79_pcis = {e.pci for e in events if e.kind is EventKind.XID and e.code == 79}
    groups: dict[tuple[str, int | None, str | None], _XidGroup] = {}
    for event in events:
        if event.kind is EventKind.FALLEN_OFF_BUS and event.pci in xid79_pcis:
            key = (EventKind.XID.value, 79, event.pci)
            groups.setdefault(key, _XidGroup([])).fallen_off_bus_lines += 1
            continue
        key = (event.kind.value, event.code, event.pci)
        groups.setdefault(key, _XidGroup([])).events.append(event)
    return groups


def _age_days(event: GpuKernelEvent, collected: datetime | None, uptime_s: float | None) -> float | None:
    """Days between the event's line and the collection (None when its stamp cannot be placed)."""
    if event.timestamp is None or collected is None:
        return None
    moment = event.timestamp.moment(collected, uptime_s)
    if moment is None:
        return None
    return round(max((collected - moment).total_seconds(), 0.0) / 86400, 4)  # 4 places: ~9 s


def _age_text(days: float) -> str:
    """`12 min ago`, `5 h ago`, `547 days ago`: an operator ranks an old event by its age."""
    if days < 1 / 24:
        return f"{max(round(days * 1440), 0)} min ago"
    if days < 2:
        return f"{round(days * 24)} h ago"
    return f"{round(days)} days ago"


def _distinct(values: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(v for v in values if v is not None))


def _event_name(kind: str, code: int | None) -> str:
    if kind == EventKind.SXID.value:
        return f"SXid {code}"
    if kind == EventKind.FALLEN_OFF_BUS.value:
        return "GPU fallen off the bus (no Xid)"
    return f"Xid {code}"


def check_xid(ctx: NodeContext, data: Section, gpu_by_bus: dict[str, int]) -> list[Finding]:
    check = "gpu.xid"
    if (missing := _unavailable(ctx, check, data, "Xid / SXid kernel log lines")) is not None:
        return missing
    log: KernelGpuLog = data.value
    threshold = "any Xid / SXid / fallen-off-the-bus line -> CONCERN"
    judge = _Judge(ctx, check, data, threshold)
    findings: list[Finding] = []
    collected, uptime = ctx.collected_at, ctx.uptime_s
    for (kind, code, pci), group in _group_events(log.events).items():
        events = group.events  # never empty: a bare bus message joins only a group holding its Xid 79
        first, last = events[0], events[-1]
        action = XID_CATALOG.for_event(first)
        recovery = _distinct(e.recovery_action for e in events)
        gpu_index = gpu_by_bus.get(pci) if pci else None
        where = f"GPU {gpu_index} (PCI {pci})" if gpu_index is not None else f"PCI {pci or 'unknown'}"
        title = f" ({action.title})" if action.title else ""
        next_step = action.next_step
        if recovery:
            next_step = f"The driver asks for: {', '.join(recovery)}. {next_step}"
        evidence = {
            "kind": kind,
            "code": code,
            "title": action.title,
            "pci": pci,
            "gpu": gpu_index,
            "count": len(group.events),
            "first_line": first.line,
            "last_line": last.line,
            "first_time": first.timestamp.text if first.timestamp else None,
            "last_time": last.timestamp.text if last.timestamp else None,
            "pids": _distinct(e.pid for e in events),
            "processes": _distinct(e.process for e in events),
            "action": action.key,
            "action_summary": action.summary,
        }
        if recovery:
            evidence["recovery_action"] = recovery
        if group.fallen_off_bus_lines:
            evidence["fallen_off_bus_lines"] = group.fallen_off_bus_lines
        age = _age_days(last, collected, uptime)
        if age is not None:
            evidence["last_seen_days_ago"] = age
        if kind == EventKind.SXID.value:
            evidence["severity"] = _distinct(e.severity for e in events)
            evidence["switch"] = _distinct(e.switch for e in events)
        if device := _distinct(e.device_id for e in events):
            evidence["device_id"] = device
        findings.append(
            judge(
                Severity.CONCERN,
                f"{_event_name(kind, code)}{title} on {where} x{len(events)}"
                + (f", last seen {_age_text(age)}" if age is not None else "")
                + ": "
                + (f"driver asks for {', '.join(recovery)}" if recovery else action.summary),
                evidence,
                next_step,
            )
        )
    if log.unparsed:
        findings.append(
            judge(
                Severity.CONCERN,
                f"{len(log.unparsed)} Xid/SXid line(s) in an unknown format",
                {"count": len(log.unparsed), "lines": list(log.unparsed[:5])},
                NEXT_XID_UNPARSED,
            )
        )
    if findings:
        return findings
    return [judge(Severity.OK, "no Xid / SXid lines in the kernel log", {"events": 0})]


# --------------------------------------------------------------------------------------------


def _victims(events: tuple[OomEvent, ...]) -> list[dict[str, Any]]:
    victims: dict[tuple[int | None, str | None], dict[str, Any]] = {}
    for event in events:
        if event.kind in (OomKind.KILLED, OomKind.SUMMARY):
            entry = victims.setdefault(
                (event.pid, event.process),
                {"pid": event.pid, "process": event.process, "cgroup": event.cgroup},
            )
            entry["cgroup"] = entry["cgroup"] or event.cgroup
    return list(victims.values())


def check_oom(ctx: NodeContext, data: Section) -> list[Finding]:
    check, section = "host.oom", RunbookSection.RESOURCES
    if (missing := _unavailable(ctx, check, data, "OOM-killer lines", section)) is not None:
        return missing
    events: tuple[OomEvent, ...] = data.value
    threshold = "any OOM kill in the kernel log -> CONCERN"
    judge = _Judge(ctx, check, data, threshold, section, HANDOFF_I)
    if not events:
        return [judge(Severity.OK, "no OOM kills in the kernel log", {"oom_lines": 0})]
    victims = _victims(events)
    if victims:
        names = ", ".join(f"{v['process']} (pid {v['pid']})" for v in victims[:5])
        summary = f"{len(victims)} process(es) OOM-killed: {names}"
    else:
        summary = f"OOM killer ran ({len(events)} line(s)), victim not in the collected lines"
    return [
        judge(
            Severity.CONCERN,
            summary,
            {
                "kills": len(victims),
                "victims": victims,
                "oom_lines": len(events),
                "first_line": events[0].line,
                "last_line": events[-1].line,
                "first_time": events[0].timestamp.text if events[0].timestamp else None,
                "last_time": events[-1].timestamp.text if events[-1].timestamp else None,
            },
            NEXT_OOM,
        )
    ]
