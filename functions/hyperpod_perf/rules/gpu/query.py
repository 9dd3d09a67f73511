"""The `nvidia-smi --query-gpu` checks: temperature, PCIe link, clock throttling, ECC, remapped rows
and GPU count against the instance type.
"""

from __future__ import annotations

from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.parse.nvidia_smi import (
    GpuQuery,
    GpuQueryRow,
)
from hyperpod_perf.rules.context import NodeContext, Section
from hyperpod_perf.rules.gpu.common import (
    CLOCK_EVENT_REASONS,
    GPU,
    GPU_IDLE_BIT,
    NEXT_ECC,
    NEXT_GPU_COUNT,
    NEXT_PCIE_GEN,
    NEXT_PCIE_WIDTH,
    NEXT_REMAP_FAILURE,
    NEXT_REMAP_PENDING,
    NEXT_TEMPERATURE,
    NEXT_THROTTLE,
    SLOWDOWN_BITS,
    _gpu_label,
    _gpus,
    _Judge,
    _no_gpu_rows,
    _rows,
    _unavailable,
)
from hyperpod_perf.rules.gpu_sku import gpu_sku


def decode_clock_event_reasons(mask: int) -> list[str]:
    return [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]


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
