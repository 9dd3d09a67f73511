"""GPU-family node rules (runbook § G hand-offs) plus the two host checks that read GPU-side data.

Checks: gpu.temperature, gpu.pcie_width, gpu.thermal_throttle, gpu.ecc_uncorrected,
gpu.remapped_rows, gpu.count, gpu.xid, gpu.nvlink_inactive, gpu.nvlink_errors, gpu.topology,
host.fabric_manager, host.oom.

Every check yields at least one finding, so the report proves what was looked at: OK with the
values checked, CONCERN per faulty GPU / event group, or INFO when this node has no such data
(no GPU, tool missing) — absence is never a CONCERN. A section that could not be parsed was
already reported as collect.node by the context; the checks that needed it stay silent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeVar

from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.parse.dmesg import (
    EventKind,
    GpuKernelEvent,
    KernelGpuLog,
    OomEvent,
    OomKind,
    parse_gpu_kernel_log,
    parse_oom,
)
from hyperpod_perf.parse.nvidia_smi import (
    GpuQuery,
    GpuQueryRow,
    GpuTopology,
    NvlinkErrorsGpu,
    NvlinkGpu,
    parse_gpu_query,
    parse_gpu_topology,
    parse_nvlink_errors,
    parse_nvlink_status,
)
from hyperpod_perf.rules.context import NodeContext, Section, SectionState
from hyperpod_perf.rules.gpu_sku import GpuSku, gpu_sku, nvlink_count

GPU = RunbookSection.GPU
HANDOFF_G = Handoff.NODE_G.value
HANDOFF_I = Handoff.NODE_I.value

#: `grep` exits 1 when nothing matched: for the kernel-log sections that means "no events".
GREP_RC = (0, 1)
#: `systemctl is-active` exits 3 (inactive/failed) or 4 (no such unit); the text is the answer.
SYSTEMCTL_RC = (0, 1, 2, 3, 4)

# NVIDIA's documented clocks-event-reason bits (nvmlClocksEventReason*).
CLOCK_EVENT_REASONS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
GPU_IDLE_BIT = 0x1
#: Reasons that mean the GPU is being slowed by heat or a power fault (not by its own power cap).
SLOWDOWN_BITS = 0x8 | 0x20 | 0x40 | 0x80

#: NVL72 instance types (GB200/GB300), whose NVLink domain needs the fabric manager running.
NVL72_TYPE_RE = re.compile(r"\bgb(?:200|300)\b", re.IGNORECASE)
#: Pairs listed one by one in a topology finding (8 GPUs: 28 pairs).
MAX_TOPO_LISTED = 28
SYSTEMD_STATES = frozenset(
    {"active", "inactive", "failed", "activating", "deactivating", "reloading", "unknown", "maintenance"}
)


# What the operator does next, per check (the runbook routes GPU faults to § G, OOM to § I).
NEXT_TIMEOUT = (
    "A hung nvidia-smi/systemctl often means a GPU or driver fault: see the collect.node finding and "
    "hyperpod-node-debugger § G."
)
NEXT_TEMPERATURE = (
    "Check cooling/airflow and this GPU's clock-event reasons (gpu.thermal_throttle); a GPU this hot "
    "throttles and slows every collective it is part of. Drain the node if it persists."
)
NEXT_PCIE_WIDTH = (
    "A degraded PCIe link cuts host<->GPU and GPUDirect bandwidth: reseat/replace is a hardware action — "
    "drain the node and hand off (hyperpod-node-debugger § G)."
)
NEXT_PCIE_GEN = (
    "Re-sample under load; if the link stays below its max generation, hand off (hyperpod-node-debugger § G)."
)
NEXT_THROTTLE = (
    "A throttled GPU makes the whole job wait for it: check cooling and power "
    "(`nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER`), drain the node if it persists "
    "(hyperpod-node-debugger § G)."
)
NEXT_ECC = (
    "Drain the node; check row remapping (`nvidia-smi -q -d ROW_REMAPPER`) and run DCGM diagnostics; "
    "uncorrected errors usually need a GPU reset or node replacement (hyperpod-node-debugger § G)."
)
NEXT_XID_UNPARSED = (
    "Read the raw lines (kept next to the report) and look the codes up in the NVIDIA Xid catalog "
    "(hyperpod-node-debugger § G)."
)
NEXT_NVLINK_INACTIVE = (
    "An inactive NVLink forces traffic onto slower paths: check `nvidia-smi nvlink -e`, the fabric "
    "manager, then reset the GPU or reboot; replace the node if links stay down "
    "(hyperpod-node-debugger § G)."
)
NEXT_NVLINK_ERRORS = (
    "Counters are cumulative since the driver loaded: re-read them after a minute of traffic; growing "
    "replay/recovery/CRC errors mean a degraded link — reset the GPU or drain the node "
    "(hyperpod-node-debugger § G)."
)
NEXT_FABRIC_MANAGER = (
    "Without the fabric manager the NVL72 NVLink domain is down. Check "
    "`journalctl -u nvidia-fabricmanager` and start it (`sudo systemctl start nvidia-fabricmanager`); "
    "its version must match the driver (hyperpod-node-debugger § G)."
)
NEXT_REMAP_PENDING = (
    "A spare memory row is waiting to be activated, which needs a GPU reset: drain the node and reset the "
    "GPU (`nvidia-smi -r -i <index>`) or reboot at the next convenient time (NVIDIA GPU memory error "
    "management; hyperpod-node-debugger § G)."
)
NEXT_REMAP_FAILURE = (
    "Row remapping failed: the GPU has no spare rows left for the failing memory — a replacement case "
    "(NVIDIA GPU memory error management). Drain the node and replace it (hyperpod-node-debugger § G)."
)
NEXT_GPU_COUNT = (
    "A GPU missing from nvidia-smi has usually fallen off the bus (look for Xid 79 / 'fallen off the "
    "bus' in gpu.xid): drain and reboot the node; if the GPU stays missing, replace the node "
    "(hyperpod-node-debugger § G)."
)
NEXT_TOPOLOGY = (
    "GPU pairs without NVLink fall back to PCIe/CPU paths (a known NVLink-training failure, usually "
    "fixed by a reboot): check `nvidia-smi nvlink -s` and the fabric manager, reboot the node, replace "
    "it if the pairs stay off NVLink (hyperpod-node-debugger § G)."
)
NEXT_OOM = (
    "Find whether host RAM or a container/cgroup limit ran out (cgroup=true): lower dataloader workers / "
    "pinned-memory use, raise the pod memory limit, or use a larger instance "
    "(hyperpod-node-debugger § I)."
)


def decode_clock_event_reasons(mask: int) -> list[str]:
    return [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]


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

    @property
    def codes(self) -> dict[str, str]:
        return {code: entry["action"] for code, entry in self._codes.items()}


def load_xid_catalog() -> XidCatalog:
    text = resources.files("hyperpod_perf.rules").joinpath("xid_actions.json").read_text(encoding="utf-8")
    return XidCatalog(json.loads(text))


XID_CATALOG = load_xid_catalog()


# --------------------------------------------------------------------------------------------
# Section access shared by the checks
# --------------------------------------------------------------------------------------------


def _unavailable(
    ctx: NodeContext, check: str, data: Section, what: str, section: RunbookSection = GPU
) -> list[Finding] | None:
    """The finding(s) for a check whose section gives no value, or None when there is a value.

    Absent (no section / rc=127) and timed out -> INFO, never CONCERN. A parse failure was
    already reported as collect.node by the context -> no finding here.
    """
    if data.value is not None:
        return None
    if data.state is SectionState.ABSENT:
        return [ctx.not_present(check, section, what, data)]
    if data.state is SectionState.TIMEOUT:
        return [
            ctx.finding(
                check,
                Severity.INFO,
                section,
                f"{what}: not evaluated, the command timed out (rc={data.rc})",
                evidence={"section": data.name, "state": data.state.value, "rc": data.rc},
                next_step=NEXT_TIMEOUT,
                handoff=HANDOFF_G,
            )
        ]
    return []


def _report_timeout(ctx: NodeContext, data: Section, tool: str) -> None:
    """A hung GPU tool is itself a symptom; report it once per section as a collection problem."""
    if data.state is SectionState.TIMEOUT and not any(
        f.evidence.get("section") == data.name for f in ctx.collection_findings
    ):
        ctx.collection_problem(
            data.name, f"{tool} timed out (rc={data.rc}); a hung {tool} often means a GPU/driver fault (§ G)"
        )


def _gpus(count: int) -> str:
    return f"{count} GPU" if count == 1 else f"{count} GPUs"


def _gpu_label(row: GpuQueryRow, position: int) -> dict[str, Any]:
    return {
        "gpu": row.index if row.index is not None else position,
        "bus_id": row.pci_bus_id,
        "name": row.name,
    }


def _with_rc(data: Section, evidence: dict[str, Any]) -> dict[str, Any]:
    """Note a non-zero exit code next to values that were still parsed from the output."""
    if data.state is SectionState.FAILED:
        evidence["section_rc"] = data.rc
    return evidence


def _rows(query: GpuQuery) -> list[tuple[int, GpuQueryRow]]:
    return list(enumerate(query.rows))


def _no_gpu_rows(ctx: NodeContext, check: str, data: Section, what: str) -> list[Finding] | None:
    """`_unavailable` for the gpu-query checks, plus INFO when nvidia-smi answered but listed no GPU.

    None when there are rows to judge.
    """
    if (missing := _unavailable(ctx, check, data, what)) is not None:
        return missing
    if not data.value.rows:
        return [
            ctx.finding(
                check,
                Severity.INFO,
                GPU,
                "no GPU reported by nvidia-smi: not present",
                evidence={"section": data.name, "gpus": 0},
            )
        ]
    return None


@dataclass(frozen=True)
class _Judge:
    """The findings of one check whose section has a value.

    They all share the node, the check, the parsed section (a non-zero rc is noted next to its
    values), the threshold the values were judged against, and where the runbook sends the
    operator (§ G unless the check belongs elsewhere), so each finding only adds what it says.
    """

    ctx: NodeContext
    check: str
    data: Section
    threshold: str
    section: RunbookSection = GPU
    handoff: str = HANDOFF_G

    def __call__(
        self, severity: Severity, summary: str, evidence: dict[str, Any], next_step: str | None = None
    ) -> Finding:
        return self.ctx.finding(
            self.check,
            severity,
            self.section,
            summary,
            evidence=_with_rc(self.data, evidence),
            threshold=self.threshold,
            next_step=next_step,
            handoff=self.handoff,
        )

    def not_reported(self, what: str, evidence: dict[str, Any]) -> Finding:
        """INFO when the tool answered but nothing it listed carried what this check judges."""
        return self.ctx.finding(
            self.check,
            Severity.INFO,
            self.section,
            f"{what}: not present",
            evidence=_with_rc(self.data, evidence),
            threshold=self.threshold,
        )

    def no_gpu_field(self, what: str) -> Finding:
        """`not_reported` for a gpu-query check: GPUs listed, the field `[N/A]` on every one."""
        gpus = len(self.data.value.rows)
        return self.not_reported(f"{_gpus(gpus)}, {what}", {"gpus": gpus})


# --------------------------------------------------------------------------------------------
# gpu-query checks
# --------------------------------------------------------------------------------------------


def check_temperature(ctx: NodeContext, data: Section) -> list[Finding]:
    check, limit = "gpu.temperature", ctx.thresholds.gpu_temperature_c
    if (missing := _no_gpu_rows(ctx, check, data, "GPU temperature")) is not None:
        return missing
    query: GpuQuery = data.value
    threshold = f"temperature.gpu >= {limit:g} C -> CONCERN"
    judge = _Judge(ctx, check, data, threshold)
    readings = [(pos, row, row.temperature_c) for pos, row in _rows(query) if row.temperature_c is not None]
    if not readings:
        return [judge.no_gpu_field("temperature not reported")]
    hottest = max(t for _, _, t in readings)
    hot = [(pos, row, t) for pos, row, t in readings if t >= limit]
    findings = [
        judge(
            Severity.CONCERN,
            f"GPU {_gpu_label(row, pos)['gpu']} at {t:g} C (>= {limit:g} C)",
            {**_gpu_label(row, pos), "temperature_c": t, "gpus_checked": len(readings)},
            NEXT_TEMPERATURE,
        )
        for pos, row, t in hot
    ]
    if findings:
        return findings
    return [
        judge(
            Severity.OK,
            f"{_gpus(len(readings))}, max {hottest:g} C",
            {
                "gpus": len(readings),
                "max_temperature_c": hottest,
                "temperatures_c": {str(_gpu_label(r, p)["gpu"]): t for p, r, t in readings},
            },
        )
    ]


def _busy(row: GpuQueryRow) -> bool | None:
    """Whether the GPU was working when sampled: PCIe gen drops at idle by design (power saving)."""
    if row.utilization_gpu_pct is not None:
        return row.utilization_gpu_pct > 0
    if row.clock_event_reasons is not None:
        return not row.clock_event_reasons & GPU_IDLE_BIT
    return None


def check_pcie(ctx: NodeContext, data: Section) -> list[Finding]:
    check = "gpu.pcie_width"
    if (missing := _no_gpu_rows(ctx, check, data, "GPU PCIe link")) is not None:
        return missing
    query: GpuQuery = data.value
    threshold = "pcie.link.width.current < max -> CONCERN; pcie.link.gen.current < max while busy -> INFO"
    judge = _Judge(ctx, check, data, threshold)
    measured = [
        (pos, row)
        for pos, row in _rows(query)
        if row.pcie_width_current is not None and row.pcie_width_max is not None
    ]
    if not measured:
        return [judge.no_gpu_field("PCIe link width not reported")]
    findings: list[Finding] = []
    gen_low_idle: list[int | None] = []
    for pos, row in measured:
        label = _gpu_label(row, pos)
        link = {
            "width_current": row.pcie_width_current,
            "width_max": row.pcie_width_max,
            "gen_current": row.pcie_gen_current,
            "gen_max": row.pcie_gen_max,
        }
        if row.pcie_width_current < row.pcie_width_max:
            findings.append(
                judge(
                    Severity.CONCERN,
                    f"GPU {label['gpu']} PCIe link at x{row.pcie_width_current} of x{row.pcie_width_max}",
                    {**label, **link},
                    NEXT_PCIE_WIDTH,
                )
            )
        gen_low = (
            row.pcie_gen_current is not None
            and row.pcie_gen_max is not None
            and row.pcie_gen_current < row.pcie_gen_max
        )
        if gen_low and _busy(row):
            findings.append(
                judge(
                    Severity.INFO,
                    f"GPU {label['gpu']} PCIe Gen{row.pcie_gen_current} of Gen{row.pcie_gen_max} while busy",
                    {**label, **link, "utilization_gpu_pct": row.utilization_gpu_pct},
                    NEXT_PCIE_GEN,
                )
            )
        elif gen_low:
            gen_low_idle.append(label["gpu"])
    if findings:
        return findings
    widths = sorted({row.pcie_width_current for _, row in measured})
    gens = sorted({row.pcie_gen_current for _, row in measured if row.pcie_gen_current is not None})
    return [
        judge(
            Severity.OK,
            f"{_gpus(len(measured))} at full PCIe width (x{'/x'.join(map(str, widths))}"
            + (f", Gen{'/'.join(map(str, gens))})" if gens else ")"),
            {
                "gpus": len(measured),
                "widths": widths,
                "gens": gens,
                "gen_below_max_while_idle": gen_low_idle,
            },
        )
    ]


def check_thermal_throttle(ctx: NodeContext, data: Section) -> list[Finding]:
    check = "gpu.thermal_throttle"
    ratio_limit = ctx.thresholds.gpu_throttle_clock_ratio
    temp_limit = ctx.thresholds.gpu_throttle_temperature_c
    if (missing := _no_gpu_rows(ctx, check, data, "GPU clock throttling")) is not None:
        return missing
    query: GpuQuery = data.value
    threshold = (
        f"SM clock < {ratio_limit:g} x max SM clock and temperature >= {temp_limit:g} C -> CONCERN; "
        "clock-event reasons hw_slowdown / sw_thermal / hw_thermal / hw_power_brake -> CONCERN"
    )
    judge = _Judge(ctx, check, data, threshold)
    findings: list[Finding] = []
    ratios: list[float] = []
    seen_reasons: set[str] = set()
    judged = 0
    for pos, row in _rows(query):
        sm, max_sm, temp, mask = (
            row.sm_clock_mhz,
            row.max_sm_clock_mhz,
            row.temperature_c,
            row.clock_event_reasons,
        )
        ratio = sm / max_sm if sm is not None and max_sm else None
        if ratio is None and mask is None:
            continue
        judged += 1
        reasons = decode_clock_event_reasons(mask) if mask is not None else []
        seen_reasons.update(reasons)
        if ratio is not None:
            ratios.append(ratio)
        slow_clock = ratio is not None and temp is not None and ratio < ratio_limit and temp >= temp_limit
        slowdown = decode_clock_event_reasons(mask & SLOWDOWN_BITS) if mask is not None else []
        if not slow_clock and not slowdown:
            continue
        label = _gpu_label(row, pos)
        why = []
        if slow_clock:
            why.append(f"SM clock {sm:g}/{max_sm:g} MHz at {temp:g} C")
        if slowdown:
            why.append("clock-event reasons " + ", ".join(slowdown))
        findings.append(
            judge(
                Severity.CONCERN,
                f"GPU {label['gpu']} throttled: " + "; ".join(why),
                {
                    **label,
                    "sm_clock_mhz": sm,
                    "max_sm_clock_mhz": max_sm,
                    "clock_ratio": round(ratio, 3) if ratio is not None else None,
                    "temperature_c": temp,
                    "clock_event_reasons": f"0x{mask:016X}" if mask is not None else None,
                    "active_reasons": reasons,
                    "slowdown_reasons": slowdown,
                },
                NEXT_THROTTLE,
            )
        )
    if findings:
        return findings
    if not judged:
        return [judge.no_gpu_field("SM clocks and clock-event reasons not reported")]
    summary = f"{_gpus(judged)}, no thermal/power slowdown"
    if ratios:
        summary += f" (lowest SM clock {min(ratios):.0%} of max)"
    return [
        judge(
            Severity.OK,
            summary,
            {
                "gpus": judged,
                "min_clock_ratio": round(min(ratios), 3) if ratios else None,
                "active_reasons": sorted(seen_reasons),
            },
        )
    ]


def check_ecc(ctx: NodeContext, data: Section) -> list[Finding]:
    check = "gpu.ecc_uncorrected"
    if (missing := _no_gpu_rows(ctx, check, data, "GPU uncorrected ECC")) is not None:
        return missing
    query: GpuQuery = data.value
    threshold = "ecc.errors.uncorrected.volatile.total > 0 or ...aggregate.total > 0 -> CONCERN"
    judge = _Judge(ctx, check, data, threshold)
    measured = [
        (pos, row)
        for pos, row in _rows(query)
        if row.ecc_uncorrected_volatile is not None or row.ecc_uncorrected_aggregate is not None
    ]
    if not measured:
        return [judge.no_gpu_field("uncorrected ECC counts not reported (ECC off/N/A)")]
    findings = []
    for pos, row in measured:
        volatile, aggregate = row.ecc_uncorrected_volatile or 0, row.ecc_uncorrected_aggregate or 0
        if volatile <= 0 and aggregate <= 0:
            continue
        label = _gpu_label(row, pos)
        findings.append(
            judge(
                Severity.CONCERN,
                f"GPU {label['gpu']} uncorrected ECC errors: volatile {volatile}, aggregate {aggregate}",
                {
                    **label,
                    "uncorrected_volatile": row.ecc_uncorrected_volatile,
                    "uncorrected_aggregate": row.ecc_uncorrected_aggregate,
                    "corrected_volatile": row.ecc_corrected_volatile,
                },
                NEXT_ECC,
            )
        )
    if findings:
        return findings
    return [
        judge(
            Severity.OK,
            f"{_gpus(len(measured))}, 0 uncorrected ECC errors (volatile and aggregate)",
            {
                "gpus": len(measured),
                "uncorrected_volatile_total": sum(r.ecc_uncorrected_volatile or 0 for _, r in measured),
                "uncorrected_aggregate_total": sum(r.ecc_uncorrected_aggregate or 0 for _, r in measured),
            },
        )
    ]


def check_remapped_rows(ctx: NodeContext, data: Section) -> list[Finding]:
    """Row remapping (Ampere and newer): pending -> reset needed; failure -> out of spare rows.

    The same two facts DCGM's health watch and NVIDIA's memory error management guide act on; read
    from `remapped_rows.pending` / `.failure` of the gpu-query.
    """
    check = "gpu.remapped_rows"
    if (missing := _no_gpu_rows(ctx, check, data, "GPU row remapping")) is not None:
        return missing
    query: GpuQuery = data.value
    threshold = "remapped_rows.failure = Yes or remapped_rows.pending = Yes -> CONCERN"
    judge = _Judge(ctx, check, data, threshold)
    measured = [
        (pos, row)
        for pos, row in _rows(query)
        if row.remapped_rows_pending is not None or row.remapped_rows_failure is not None
    ]
    if not measured:
        return [judge.no_gpu_field("row remapping not reported (pre-Ampere GPU, MIG or older collector)")]
    findings = []
    for pos, row in measured:
        label = _gpu_label(row, pos)
        counts = {
            "remapped_correctable": row.remapped_rows_correctable,
            "remapped_uncorrectable": row.remapped_rows_uncorrectable,
            "pending": row.remapped_rows_pending,
            "failure": row.remapped_rows_failure,
        }
        if row.remapped_rows_failure:
            findings.append(
                judge(
                    Severity.CONCERN,
                    f"GPU {label['gpu']} row remapping failed (out of spare rows)",
                    {**label, **counts},
                    NEXT_REMAP_FAILURE,
                )
            )
        elif row.remapped_rows_pending:
            findings.append(
                judge(
                    Severity.CONCERN,
                    f"GPU {label['gpu']} row remapping pending: a GPU reset is needed to activate it",
                    {**label, **counts},
                    NEXT_REMAP_PENDING,
                )
            )
    if findings:
        return findings
    return [
        judge(
            Severity.OK,
            f"{_gpus(len(measured))}, no row remapping pending or failed",
            {
                "gpus": len(measured),
                "remapped_correctable_total": sum(r.remapped_rows_correctable or 0 for _, r in measured),
                "remapped_uncorrectable_total": sum(r.remapped_rows_uncorrectable or 0 for _, r in measured),
            },
        )
    ]


def check_gpu_count(ctx: NodeContext, data: Section) -> list[Finding]:
    """GPUs listed by nvidia-smi vs the instance type's GPU count (a GPU off the bus is simply absent)."""
    check = "gpu.count"
    if (missing := _unavailable(ctx, check, data, "GPU count")) is not None:
        return missing
    query: GpuQuery = data.value
    listed = len(query.rows)
    sku = gpu_sku(ctx.instance_type)
    if sku is None:
        return [
            ctx.finding(
                check,
                Severity.INFO,
                GPU,
                f"{_gpus(listed)} listed; expected GPU count for "
                f"{ctx.instance_type or 'an unknown instance type'} not in the table",
                evidence={"gpus": listed, "instance_type": ctx.instance_type},
                threshold="GPUs listed != the instance type's GPU count -> CONCERN",
            )
        ]
    threshold = f"GPUs listed != {sku.gpus} ({ctx.instance_type}: {sku.gpus}x {sku.model}) -> CONCERN"
    judge = _Judge(ctx, check, data, threshold)
    evidence = {
        "gpus": listed,
        "expected": sku.gpus,
        "model": sku.model,
        "instance_type": ctx.instance_type,
        "bus_ids": [row.pci_bus_id for row in query.rows],
        "source": sku.source,
    }
    if listed == sku.gpus:
        return [judge(Severity.OK, f"{_gpus(listed)} listed, as {ctx.instance_type} has", evidence)]
    return [
        judge(
            Severity.CONCERN,
            f"{_gpus(listed)} listed; {ctx.instance_type} has {sku.gpus} {sku.model}",
            evidence,
            NEXT_GPU_COUNT,
        )
    ]


def _gpu_pairs(topo: GpuTopology) -> list[tuple[str, str, str]]:
    gpus = topo.gpus
    return [
        (a, b, topo.links[a].get(b, "?"))
        for i, a in enumerate(gpus)
        for b in gpus[i + 1 :]
        if a in topo.links
    ]


def check_topology(ctx: NodeContext, data: Section) -> list[Finding]:
    """`nvidia-smi topo -m` between GPU pairs vs the NVLink the instance type is built with.

    A pair reading SYS/NODE/PHB/PXB/PIX (or fewer NV links than the SKU has) on an NVLink SKU is a
    known NVLink-down symptom. Where the expectation is not known, the pairs without NVLink are
    only listed (INFO): PCIe GPUs legitimately show them.
    """
    check = "gpu.topology"
    if (missing := _unavailable(ctx, check, data, "GPU topology (topo -m)")) is not None:
        return missing
    topo: GpuTopology = data.value
    pairs = _gpu_pairs(topo)
    sku: GpuSku | None = gpu_sku(ctx.instance_type)
    expected = sku.nvlinks_per_pair if sku is not None else None
    threshold = (
        f"a GPU pair not at NV{expected} on {ctx.instance_type} -> CONCERN"
        if expected is not None
        else "GPU pairs judged only where the instance type's NVLink layout is known"
    )
    judge = _Judge(ctx, check, data, threshold)
    counts = sorted({link for _, _, link in pairs})
    base = {"gpus": len(topo.gpus), "pairs": len(pairs), "links": counts, "instance_type": ctx.instance_type}
    if not pairs:
        return [judge.not_reported(f"{_gpus(len(topo.gpus))}, no GPU pair to judge", base)]
    if expected is None:
        off = [f"GPU{a[3:]}-GPU{b[3:]} {link}" for a, b, link in pairs if nvlink_count(link) is None]
        summary = (
            f"{len(pairs)} GPU pair(s), links {'/'.join(counts)}; expected NVLink layout for "
            f"{ctx.instance_type or 'an unknown instance type'} not in the table"
        )
        return [judge(Severity.INFO, summary, {**base, "pairs_without_nvlink": off[:MAX_TOPO_LISTED]})]
    degraded = [(a, b, link) for a, b, link in pairs if (nvlink_count(link) or 0) < expected]
    if not degraded:
        return [judge(Severity.OK, f"all {len(pairs)} GPU pairs at NV{expected}", base)]
    listed = [f"{a}-{b} {link}" for a, b, link in degraded]
    gpus_involved = sorted(
        {g for a, b, _ in degraded for g in (a, b)}, key=lambda g: int(g[3:]) if g[3:].isdigit() else 0
    )
    return [
        judge(
            Severity.CONCERN,
            f"{len(degraded)} of {len(pairs)} GPU pairs not at NV{expected}: "
            + ", ".join(listed[:6])
            + (" ..." if len(listed) > 6 else ""),
            {
                **base,
                "expected": f"NV{expected}",
                "degraded_pairs": listed[:MAX_TOPO_LISTED],
                "gpus_involved": gpus_involved,
            },
            NEXT_TOPOLOGY,
        )
    ]


# --------------------------------------------------------------------------------------------
# gpu.xid
# --------------------------------------------------------------------------------------------


@dataclass
class _XidGroup:
    events: list[GpuKernelEvent]
    also_without_xid: list[GpuKernelEvent]


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
            groups.setdefault(key, _XidGroup([], [])).also_without_xid.append(event)
            continue
        key = (event.kind.value, event.code, event.pci)
        groups.setdefault(key, _XidGroup([], [])).events.append(event)
    return groups


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
    for (kind, code, pci), group in _group_events(log.events).items():
        events = group.events or group.also_without_xid
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
        if group.also_without_xid:
            evidence["fallen_off_bus_lines"] = len(group.also_without_xid)
        if kind == EventKind.SXID.value:
            evidence["severity"] = _distinct(e.severity for e in events)
            evidence["switch"] = _distinct(e.switch for e in events)
        if device := _distinct(e.device_id for e in events):
            evidence["device_id"] = device
        findings.append(
            judge(
                Severity.CONCERN,
                f"{_event_name(kind, code)}{title} on {where} x{len(events)}: "
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
# NVLink
# --------------------------------------------------------------------------------------------


def _unsupported_info(ctx: NodeContext, check: str, gpus: list[Any]) -> Finding:
    return ctx.finding(
        check,
        Severity.INFO,
        GPU,
        f"NVLink not queryable on {len(gpus)} GPU(s): {gpus[0].unsupported}",
        evidence={"gpus": [g.index for g in gpus], "reason": gpus[0].unsupported},
    )


#: The two NVLink parse results: link states per GPU, or error counters per GPU.
_NvlinkT = TypeVar("_NvlinkT", NvlinkGpu, NvlinkErrorsGpu)


def _nvlink_findings(
    judge: _Judge,
    gpus: Sequence[_NvlinkT],
    findings: list[Finding],
    reported: list[_NvlinkT],
    what: str,
    all_clear: Callable[[list[_NvlinkT]], Finding],
) -> list[Finding]:
    """The verdict both NVLink checks share, after their per-GPU concerns (`findings`).

    GPUs whose NVLink cannot be queried are noted; any concern wins; with no GPU reporting `what`
    the check says so (unless the unsupported note already did); otherwise `all_clear` summarises
    the GPUs that did report.
    """
    unsupported = [g for g in gpus if g.unsupported]
    if unsupported:
        findings.append(_unsupported_info(judge.ctx, judge.check, unsupported))
    if any(f.severity is Severity.CONCERN for f in findings):
        return findings
    if not reported:
        return findings or [
            judge.not_reported(
                f"no NVLink {what} reported ({_gpus(len(gpus))})", {"gpus": len(gpus), "links": 0}
            )
        ]
    return [*findings, all_clear(reported)]


def check_nvlink_inactive(ctx: NodeContext, data: Section) -> list[Finding]:
    check = "gpu.nvlink_inactive"
    if (missing := _unavailable(ctx, check, data, "NVLink link state")) is not None:
        return missing
    gpus: tuple[NvlinkGpu, ...] = data.value
    threshold = (
        "any NVLink link reported <inactive>, or NVML 'all links are inactive' for a GPU of an NVLink "
        "instance type -> CONCERN"
    )
    judge = _Judge(ctx, check, data, threshold)
    findings = [
        judge(
            Severity.CONCERN,
            f"GPU {gpu.index} NVLink link(s) {', '.join(map(str, gpu.inactive_links))} inactive "
            f"({len(gpu.links) - len(gpu.inactive_links)} of {len(gpu.links)} active)",
            {
                "gpu": gpu.index,
                "name": gpu.name,
                "uuid": gpu.uuid,
                "inactive_links": gpu.inactive_links,
                "active_links": len(gpu.links) - len(gpu.inactive_links),
                "links_reported": len(gpu.links),
            },
            NEXT_NVLINK_INACTIVE,
        )
        for gpu in gpus
        if gpu.inactive_links
    ]
    findings += _all_links_inactive(ctx, judge, gpus)

    def all_active(with_links: list[NvlinkGpu]) -> Finding:
        speeds = sorted(
            {s.speed_gbps for g in with_links for s in g.links.values() if s.speed_gbps is not None}
        )
        links = sum(len(g.links) for g in with_links)
        return judge(
            Severity.OK,
            f"{_gpus(len(with_links))}, {links} NVLink links all active "
            f"({'/'.join(f'{s:g}' for s in speeds)} GB/s)",
            {"gpus": len(with_links), "links": links, "speeds_gbps": speeds},
        )

    with_links = [g for g in gpus if g.links]
    return _nvlink_findings(judge, gpus, findings, with_links, "links", all_active)


def _all_links_inactive(ctx: NodeContext, judge: _Judge, gpus: Sequence[NvlinkGpu]) -> list[Finding]:
    """GPUs for which NVML answered "all links are inactive": every NVLink of that GPU is down.

    CONCERN unless the instance type is known to have no NVLink (then the message is the normal
    answer of a PCIe GPU, INFO).
    """
    dead = [g for g in gpus if g.all_inactive]
    if not dead:
        return []
    sku = gpu_sku(ctx.instance_type)
    if sku is not None and not sku.has_nvlink:
        return [
            judge(
                Severity.INFO,
                f"{_gpus(len(dead))} report no active NVLink; {ctx.instance_type} has no NVLink",
                {
                    "gpus": [g.index for g in dead],
                    "instance_type": ctx.instance_type,
                    "message": dead[0].all_inactive,
                },
            )
        ]
    return [
        judge(
            Severity.CONCERN,
            f"GPU {gpu.index}: all NVLink links inactive (NVML: {gpu.all_inactive})",
            {
                "gpu": gpu.index,
                "name": gpu.name,
                "uuid": gpu.uuid,
                "all_links_inactive": True,
                "message": gpu.all_inactive,
                "instance_type": ctx.instance_type,
            },
            NEXT_NVLINK_INACTIVE,
        )
        for gpu in dead
    ]


def check_nvlink_errors(ctx: NodeContext, data: Section) -> list[Finding]:
    check = "gpu.nvlink_errors"
    if (missing := _unavailable(ctx, check, data, "NVLink error counters")) is not None:
        return missing
    gpus: tuple[NvlinkErrorsGpu, ...] = data.value
    threshold = "any non-zero NVLink error counter -> CONCERN"
    judge = _Judge(ctx, check, data, threshold)
    findings = []
    for gpu in gpus:
        nonzero = gpu.nonzero()
        if not nonzero:
            continue
        total = sum(v for counters in nonzero.values() for v in counters.values())
        findings.append(
            judge(
                Severity.CONCERN,
                f"GPU {gpu.index} NVLink errors on link(s) {', '.join(map(str, nonzero))} (total {total})",
                {
                    "gpu": gpu.index,
                    "name": gpu.name,
                    "uuid": gpu.uuid,
                    "nonzero_counters": {str(link): c for link, c in nonzero.items()},
                    "total": total,
                },
                NEXT_NVLINK_ERRORS,
            )
        )

    def all_zero(counted: list[NvlinkErrorsGpu]) -> Finding:
        links = sum(len(g.counters) for g in counted)
        counters = sorted({name for g in counted for c in g.counters.values() for name in c})
        return judge(
            Severity.OK,
            f"{_gpus(len(counted))}, {links} NVLink links, all error counters 0",
            {"gpus": len(counted), "links": links, "counters": counters},
        )

    counted = [g for g in gpus if g.counters]
    return _nvlink_findings(judge, gpus, findings, counted, "error counters", all_zero)


# --------------------------------------------------------------------------------------------
# host.fabric_manager and host.oom
# --------------------------------------------------------------------------------------------


def parse_systemctl_is_active(text: str) -> str:
    """`systemctl is-active <unit>` prints one state word (`active`, `inactive`, `failed`, ...)."""
    words = [line.strip().lower() for line in text.splitlines() if line.strip()]
    if not words or words[0] not in SYSTEMD_STATES:
        raise ValueError(f"not a systemctl is-active state: {text.strip()[:80]!r}")
    return words[0]


def check_fabric_manager(ctx: NodeContext) -> list[Finding]:
    """Only NVL72 nodes need the fabric manager, so only there is its section read at all:
    elsewhere `systemctl` may not even run (containers, no systemd) and that is no finding.

    On a known non-NVL72 type the check does not apply and says nothing: a "not applicable"
    line on every p5 node is noise in every node's card. Only an unknown type is an INFO."""
    check = "host.fabric_manager"
    instance_type = ctx.instance_type
    threshold = "NVL72 instance (p6e-gb200 / gb300) and nvidia-fabricmanager not active -> CONCERN"
    if instance_type is not None and not NVL72_TYPE_RE.search(instance_type):
        return []
    if instance_type is None:
        reason = "instance type unknown"
        return [
            ctx.finding(
                check,
                Severity.INFO,
                GPU,
                f"fabric manager check not applicable ({reason})",
                evidence={"instance_type": instance_type},
                threshold=threshold,
            )
        ]
    data = ctx.section("fabric-manager", parse_systemctl_is_active, accept_rc=SYSTEMCTL_RC)
    state = data.value
    if (missing := _unavailable(ctx, check, data, "fabric manager state")) is not None:
        return missing
    if state == "active":
        return [
            ctx.finding(
                check,
                Severity.OK,
                GPU,
                f"nvidia-fabricmanager active on {instance_type}",
                evidence={"instance_type": instance_type, "fabric_manager": state, "rc": data.rc},
                threshold=threshold,
                handoff=HANDOFF_G,
            )
        ]
    return [
        ctx.finding(
            check,
            Severity.CONCERN,
            GPU,
            f"nvidia-fabricmanager is {state} on NVL72 instance {instance_type}",
            evidence={"instance_type": instance_type, "fabric_manager": state, "rc": data.rc},
            threshold=threshold,
            next_step=NEXT_FABRIC_MANAGER,
            handoff=HANDOFF_G,
        )
    ]


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


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def evaluate(ctx: NodeContext) -> list[Finding]:
    """All GPU-family findings for one node, in catalog order."""
    query = ctx.section("gpu-query", parse_gpu_query)
    xid = ctx.section("xid", parse_gpu_kernel_log, accept_rc=GREP_RC)
    nvlink_status = ctx.section("nvlink-status", parse_nvlink_status)
    nvlink_errors = ctx.section("nvlink-errors", parse_nvlink_errors)
    topo = ctx.section("gpu-topo", parse_gpu_topology)
    oom = ctx.section("oom", parse_oom, accept_rc=GREP_RC)
    for data, tool in (
        (query, "nvidia-smi"),
        (nvlink_status, "nvidia-smi"),
        (nvlink_errors, "nvidia-smi"),
        (topo, "nvidia-smi"),
    ):
        _report_timeout(ctx, data, tool)
    gpu_by_bus = (
        {row.bus: row.index if row.index is not None else pos for pos, row in _rows(query.value) if row.bus}
        if query.value is not None
        else {}
    )
    return [
        *check_temperature(ctx, query),
        *check_pcie(ctx, query),
        *check_thermal_throttle(ctx, query),
        *check_ecc(ctx, query),
        *check_remapped_rows(ctx, query),
        *check_gpu_count(ctx, query),
        *check_xid(ctx, xid, gpu_by_bus),
        *check_nvlink_inactive(ctx, nvlink_status),
        *check_nvlink_errors(ctx, nvlink_errors),
        *check_topology(ctx, topo),
        *check_fabric_manager(ctx),
        *check_oom(ctx, oom),
    ]
