"""What changed since the previous run: new, resolved and still-present findings, and drift.

A finding is "the same" across runs when node, check and the identifying part of its evidence
(which GPU, which EFA device and counter, which file system, which pair) match; measured values
(temperature, busbw) are left out of the identity on purpose, so a GPU that is hot at 90 °C one
run and 92 °C the next is "still present", not "resolved + new".

A concern on a node the new run could not reach is not "resolved": it is left out of both lists
(the new run's collect.node finding says why), so a dead node never looks like a fixed one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from hyperpod_perf.domain import escaping
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.domain.names import NodeNames
from hyperpod_perf.domain.report import HistoryDelta, Report

#: Evidence keys that say *which* thing a finding is about (never how much).
IDENTITY_KEYS: tuple[str, ...] = (
    "gpu",
    "gpu_index",
    "index",
    "pci_bus_id",
    "bus_id",
    "device",
    "port",
    "counter",
    "link",
    "section",
    "file_system_id",
    "fs_id",
    "mount",
    "ost",
    "a",
    "b",
    "xid",
    "code",
    "instance_group",
)

#: Relative change of a key figure (|new - old| / |old|) reported as drift. Module default until
#: rules/thresholds.py carries `history_drift_ratio` (asked of the lead).
DEFAULT_DRIFT_RATIO = 0.10


def identity(finding: Finding) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    ev = finding.evidence or {}
    keyed = tuple((k, str(ev[k])) for k in IDENTITY_KEYS if k in ev and ev[k] is not None)
    return (finding.node or "", finding.check, keyed)


def _index(findings: Iterable[Finding]) -> dict[tuple[Any, ...], Finding]:
    out: dict[tuple[Any, ...], Finding] = {}
    for f in findings:
        if f.severity is not Severity.OK:
            out.setdefault(identity(f), f)
    return out


def _unreached(report: Report) -> set[str]:
    """Nodes the report holds no fresh evidence for (collection failed or not attempted)."""
    out = {n.node for n in report.nodes if n.collection != "collected"}
    for n in report.nodes:
        if n.collection != "collected":
            out.update(a for a in (n.hostname, n.instance_id) if a)
    return out


def _checked_nodes(report: Report) -> set[str] | None:
    """Node names present in the new report; None when the report lists no nodes at all."""
    if not report.nodes:
        return None
    names: set[str] = set()
    for n in report.nodes:
        names.update(a for a in (n.node, n.hostname, n.instance_id) if a)
    return names


def diff_reports(old: Report, new: Report, *, drift_ratio: float = DEFAULT_DRIFT_RATIO) -> HistoryDelta:
    before = _index(old.findings)
    after = _index(new.findings)
    unreached = _unreached(new)
    checked = _checked_nodes(new)
    seen = {g.node for g in new.findings if g.node}

    def rechecked(f: Finding) -> bool:
        if not f.node:
            return True
        if f.node in unreached:
            return False
        return f.node in seen or (checked is not None and f.node in checked)

    return HistoryDelta(
        previous_location=old.run.location,
        new=[f for key, f in after.items() if key not in before],
        resolved=[f for key, f in before.items() if key not in after and rechecked(f)],
        still_present=[f for key, f in after.items() if key in before],
        drift=figure_drift(old, new, drift_ratio),
    )


def _gpu_figures(report: Report) -> dict[str, dict[str, float]]:
    """NodeSummary.figures plus per-node GPU extremes derived from the GPU table."""
    out: dict[str, dict[str, float]] = {}
    for n in report.nodes:
        figures = dict(n.figures)
        clocks = [g.sm_clock_mhz for g in n.gpus if g.sm_clock_mhz is not None]
        temps = [g.temperature_c for g in n.gpus if g.temperature_c is not None]
        if clocks:
            figures.setdefault("min_sm_clock_mhz", min(clocks))
        if temps:
            figures.setdefault("max_temperature_c", max(temps))
        out[n.node] = figures
    return out


def figure_drift(old: Report, new: Report, ratio: float = DEFAULT_DRIFT_RATIO) -> list[dict[str, Any]]:
    """Per node and figure: the change when it moved by more than `ratio` (or from zero)."""
    before = _gpu_figures(old)
    drift: list[dict[str, Any]] = []
    for node, figures in _gpu_figures(new).items():
        previous = before.get(node)
        if not previous:
            continue
        for name in sorted(figures.keys() & previous.keys()):
            was, now = previous[name], figures[name]
            if not (math.isfinite(was) and math.isfinite(now)) or was == now:
                continue
            if was == 0:
                change = None  # from zero: any change counts (an error counter that started moving)
            else:
                change = (now - was) / abs(was)
                if abs(change) < ratio:
                    continue
            drift.append(
                {
                    "node": node,
                    "figure": name,
                    "old": was,
                    "new": now,
                    "change_pct": None if change is None else round(change * 100, 1),
                }
            )
    return drift


def describe_drift(item: dict[str, Any], names: NodeNames | None = None) -> str:
    """`ip-10-1-0-6 (i-…) efa_rx_drops: 0 → 1842 (from 0)`; the node by its id alone without `names`."""
    pct = item.get("change_pct")
    change = "from 0" if pct is None else f"{pct:+.1f}%"
    node = names.label(item["node"]) if names is not None else item["node"]
    return f"{node} {item['figure']}: {item['old']:g} → {item['new']:g} ({change})"


class HistoryIndex:
    """Fast status lookups for large reports (identity -> status)."""

    def __init__(self, delta: HistoryDelta | None) -> None:
        self.known = delta is not None
        self._status: dict[tuple[Any, ...], str] = {}
        if delta is not None:
            for f in delta.still_present:
                self._status[identity(f)] = "still present"
            for f in delta.new:
                self._status[identity(f)] = "new"

    def status(self, finding: Finding) -> str | None:
        return self._status.get(identity(finding)) if self.known else None

    def group_status(self, findings: Iterable[Finding]) -> str | None:
        """ "new" when any member is new, "still present" when all were seen before."""
        if not self.known:
            return None
        statuses = {self.status(f) for f in findings}
        if "new" in statuses:
            return "new"
        return "still present" if statuses == {"still present"} else None


def _line(f: Finding) -> str:
    where = f"{f.node}: " if f.node else ""
    return f"  {where}{f.check} — {f.summary}"


def render_diff_text(delta: HistoryDelta, *, limit: int = 50) -> str:
    """Plain-text diff for `hyperpod-perf report diff` and the e-mail's history block."""
    lines = [f"Compared with: {delta.previous_location or 'the previous report'}"]
    for title, items in (
        ("New since last run", delta.new),
        ("Resolved since last run", delta.resolved),
        ("Still present", delta.still_present),
    ):
        lines.append(f"{title}: {len(items)}")
        lines.extend(_line(f) for f in items[:limit])
        if len(items) > limit:
            lines.append(f"  … +{len(items) - limit} more")
    lines.append(f"Drift of key figures: {len(delta.drift)}")
    lines.extend(f"  {describe_drift(d)}" for d in delta.drift[:limit])
    if len(delta.drift) > limit:
        lines.append(f"  … +{len(delta.drift) - limit} more")
    return escaping.terminal("\n".join(lines) + "\n")
