"""The NVLink checks: GPU-pair topology (`nvidia-smi topo -m`), inactive links and error counters."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.parse.nvidia_smi import (
    GpuTopology,
    NvlinkErrorsGpu,
    NvlinkGpu,
)
from hyperpod_perf.rules.context import NodeContext, Section
from hyperpod_perf.rules.gpu.common import (
    GPU,
    MAX_TOPO_LISTED,
    NEXT_NVLINK_ERRORS,
    NEXT_NVLINK_INACTIVE,
    NEXT_TOPOLOGY,
    _gpus,
    _Judge,
    _unavailable,
)
from hyperpod_perf.rules.gpu_sku import GpuSku, gpu_sku, nvlink_count, nvlink_expected


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
    # GPU2 before GPU10 (shorter name first), and a total order whatever the column names are
    gpus_involved = sorted({g for a, b, _ in degraded for g in (a, b)}, key=lambda g: (len(g), g))
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
        "any NVLink link reported <inactive>, or NVML 'all links are inactive' / 'does not have or "
        "support Nvlink' for a GPU that should have NVLink (NVLink instance type, or NVLink-only model "
        "where the type is unknown) -> CONCERN"
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
    findings += _no_nvlink(ctx, judge, gpus)

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
    """GPUs for which NVML answered "all links are inactive": none of that GPU's NVLinks is up.

    CONCERN only where NVLink is expected (an NVLink instance type, or, the type unknown, a GPU
    model only built as an NVLink part): there every NVLink of the GPU is down. Elsewhere it is
    what a card with NVLink connectors but no bridge prints (a single GeForce RTX 2080 SUPER in the
    nvidia_gpu_exporter captures), so INFO.
    """
    return _nvml_answers(
        ctx,
        judge,
        [(g, g.all_inactive) for g in gpus if g.all_inactive],
        flag="all_links_inactive",
        concern=lambda gpu, message: f"GPU {gpu.index}: all NVLink links inactive (NVML: {message})",
        info=lambda gpus, message: f"{gpus} report no active NVLink",
    )


def _no_nvlink(ctx: NodeContext, judge: _Judge, gpus: Sequence[NvlinkGpu]) -> list[Finding]:
    """GPUs for which nvidia-smi printed "Device does not have or support Nvlink".

    That is NVML saying the GPU has no NVLink to query (a PCIe card): INFO. On a GPU that should
    have NVLink (an NVLink instance type, or an NVLink-only model) it means the driver sees none of
    its links, so its peer traffic goes over PCIe: CONCERN.
    """
    return _nvml_answers(
        ctx,
        judge,
        [(g, g.no_nvlink) for g in gpus if g.no_nvlink],
        flag="no_nvlink",
        concern=lambda gpu, message: (
            f"GPU {gpu.index} ({gpu.name}) reports no NVLink (`{message}`) where NVLink is expected"
        ),
        info=lambda gpus, message: f"{gpus} without NVLink ({message})",
    )


def _nvml_answers(
    ctx: NodeContext,
    judge: _Judge,
    answered: list[tuple[NvlinkGpu, str]],
    *,
    flag: str,
    concern: Callable[[NvlinkGpu, str], str],
    info: Callable[[str, str], str],
) -> list[Finding]:
    """GPUs for which NVML printed a sentence instead of link states: a CONCERN per GPU where NVLink
    is expected, one INFO for the others saying why they are not a concern."""
    expected = [(g, m) for g, m in answered if nvlink_expected(ctx.instance_type, g.name)]
    findings = [
        judge(
            Severity.CONCERN,
            concern(gpu, message),
            {
                "gpu": gpu.index,
                "name": gpu.name,
                "uuid": gpu.uuid,
                flag: True,
                "message": message,
                "instance_type": ctx.instance_type,
            },
            NEXT_NVLINK_INACTIVE,
        )
        for gpu, message in expected
    ]
    others = [(g, m) for g, m in answered if (g, m) not in expected]
    if others:
        findings.append(
            judge(
                Severity.INFO,
                f"{info(_gpus(len(others)), others[0][1])}; {_why_not_expected(ctx)}",
                {
                    "gpus": [g.index for g, _ in others],
                    "names": sorted({g.name for g, _ in others}),
                    "instance_type": ctx.instance_type,
                    "message": others[0][1],
                },
            )
        )
    return findings


def _why_not_expected(ctx: NodeContext) -> str:
    """Why a GPU without working NVLink is not a concern here."""
    if gpu_sku(ctx.instance_type) is not None:
        return f"{ctx.instance_type} has no NVLink"
    where = (
        f"instance type {ctx.instance_type} not in the table"
        if ctx.instance_type
        else "instance type unknown"
    )
    return f"{where} and the GPU model is not an NVLink-only part"


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
