"""Per-node signals that are comparable across a fleet, extracted from raw snapshots.

Why a separate step: fleet rules compare one number per node (SM clock under load, hottest GPU,
EFA error total) and the version strings; extracting them once keeps the rules pure and lets a
1,000-node comparison run on small records instead of re-parsing text.

A section that is missing or cannot be parsed simply yields no signal here: the node-level
evaluation already reports it as a `collect.node` finding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

from hyperpod_perf.collect.snapshot import RawSnapshot
from hyperpod_perf.parse.efa import parse_efa_counters
from hyperpod_perf.parse.nvidia_smi import GpuQueryRow, parse_gpu_query
from hyperpod_perf.parse.procfs import parse_versions
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

T = TypeVar("T")

#: A GPU counts as "under load" when it draws at least this share of its power limit.
LOADED_POWER_SHARE = 0.3
#: ... or reports at least this utilization (when the query includes utilization.gpu).
LOADED_UTILIZATION_PCT = 50.0


class Direction(StrEnum):
    LOW_IS_BAD = "low"
    HIGH_IS_BAD = "high"


@dataclass(frozen=True)
class SignalSpec:
    name: str
    unit: str
    direction: Direction
    description: str
    next_step: str
    handoff: str | None


SM_CLOCK = SignalSpec(
    "gpu.sm_clock_under_load_mhz",
    "MHz",
    Direction.LOW_IS_BAD,
    "lowest SM clock among the node's loaded GPUs",
    "Check the node's clock-event reasons and power/thermal state (nvidia-smi -q -d PERFORMANCE); "
    "a slow GPU paces every collective, so drain the node from the job until resolved.",
    "hyperpod-node-debugger § G",
)
TEMPERATURE = SignalSpec(
    "gpu.temperature_max_c",
    "C",
    Direction.HIGH_IS_BAD,
    "hottest GPU on the node",
    "Compare the node's GPU temperatures and fan/cooling state with its peers; a hot node throttles first.",
    "hyperpod-node-debugger § G",
)
EFA_ERRORS = SignalSpec(
    "efa.error_counters_total",
    "events",
    Direction.HIGH_IS_BAD,
    "sum of the EFA error counters over all devices (since boot)",
    "Inspect the node's EFA counters and run a pairwise NCCL test that includes it; "
    "a degraded EFA path makes every pair with this node slow.",
    "hyperpod-node-debugger § A",
)
SIGNALS: tuple[SignalSpec, ...] = (SM_CLOCK, TEMPERATURE, EFA_ERRORS)


@dataclass(frozen=True)
class NodeSignals:
    node: str
    instance_type: str | None = None
    group: str | None = None
    values: dict[str, float] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)


def _parse(snapshot: RawSnapshot, name: str, parser: Callable[[str], T]) -> T | None:
    section = snapshot.sections.get(name)
    if section is None or section.rc not in (0, None):
        return None
    try:
        return parser(section.text)
    except Exception:
        return None


def _is_triple(line: str) -> bool:
    parts = line.split()
    return len(parts) == 3 and parts[2].lstrip("-").isdigit()


def _efa_error_total(snapshot: RawSnapshot, wanted: frozenset[str]) -> float | None:
    """Sum of the error counters over all EFA devices; None when the node reports no device.

    Fast path for the collector's own `<device> <counter> <value>` lines: a p5 prints ~740 of
    them and a 1,000-node comparison must stay well under two seconds, so the wanted counters
    are found with `str.find` instead of parsing every line. Any other shape (pasted listings,
    Prometheus text) goes through the full parser.
    """
    section = snapshot.sections.get("efa-counters")
    if section is None or section.rc not in (0, None):
        return None
    text = section.text
    body = text.lstrip()
    if not body:
        return None
    newline = body.find("\n")
    first = body if newline == -1 else body[:newline]
    if _is_triple(first):
        total = 0
        for name in wanted:
            needle = f" {name} "
            at = text.find(needle)
            while at != -1:
                line_start = text.rfind("\n", 0, at) + 1
                line_end = text.find("\n", at)
                line = text[line_start : line_end if line_end != -1 else len(text)]
                if _is_triple(line):
                    total += int(line.split()[2])
                at = text.find(needle, at + len(needle))
        return float(total)
    counters = _parse(snapshot, "efa-counters", parse_efa_counters)
    if counters is None or not counters.devices:
        return None
    return float(
        sum(v for device in counters.devices.values() for name, v in device.items() if name in wanted)
    )


def _loaded(row: GpuQueryRow) -> bool:
    utilization = row.utilization_gpu_pct
    if utilization is not None:
        return utilization >= LOADED_UTILIZATION_PCT
    draw, limit = row.power_draw_w, row.power_limit_w
    if draw is not None and limit:
        return draw >= LOADED_POWER_SHARE * limit
    return True  # no load indication at all: take the clock as it is


def extract(
    snapshot: RawSnapshot,
    *,
    node: str | None = None,
    instance_type: str | None = None,
    group: str | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> NodeSignals:
    values: dict[str, float] = {}
    query = _parse(snapshot, "gpu-query", parse_gpu_query)
    if query is not None and query.rows:
        clocks = [r.sm_clock_mhz for r in query.rows if _loaded(r) and r.sm_clock_mhz is not None]
        if clocks:
            values[SM_CLOCK.name] = min(clocks)
        temperatures = [r.temperature_c for r in query.rows if r.temperature_c is not None]
        if temperatures:
            values[TEMPERATURE.name] = max(temperatures)
    efa_errors = _efa_error_total(snapshot, frozenset(thresholds.efa_error_counters))
    if efa_errors is not None:
        values[EFA_ERRORS.name] = efa_errors
    versions = _parse(snapshot, "versions", parse_versions) or {}
    meta = snapshot.meta
    return NodeSignals(
        node=node or snapshot.node_name(),
        instance_type=(instance_type or meta.get("instance_type") or None),
        group=group,
        values=values,
        versions={k: v for k, v in versions.items() if v and v.strip()},
    )
