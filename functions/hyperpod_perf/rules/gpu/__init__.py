"""GPU-family node rules (runbook § G hand-offs) plus the two host checks that read GPU-side data.

Checks: gpu.temperature, gpu.pcie_width, gpu.thermal_throttle, gpu.ecc_uncorrected,
gpu.remapped_rows, gpu.count, gpu.xid, gpu.nvlink_inactive, gpu.nvlink_errors, gpu.topology,
host.fabric_manager, host.oom, gpu.pcie_replay, host.pcie_aer.

Every check yields at least one finding, so the report proves what was looked at: OK with the
values checked, CONCERN per faulty GPU / event group, or INFO when this node has no such data
(no GPU, tool missing) — absence is never a CONCERN. A section that could not be parsed was
already reported as collect.node by the context; the checks that needed it stay silent.

The checks live by the data they read: query.py (`nvidia-smi --query-gpu`), nvlink.py (NVLink and
`topo -m`), kernel_log.py (Xid / OOM lines), fabric.py (the fabric manager), pcie.py (PCIe replay and
AER counters); common.py holds what they
share. This module runs them in catalog order and re-exports the names callers import from
`hyperpod_perf.rules.gpu`.
"""

from __future__ import annotations

from hyperpod_perf.domain.findings import Finding
from hyperpod_perf.parse.dmesg import parse_gpu_kernel_log, parse_oom
from hyperpod_perf.parse.nvidia_smi import (
    parse_gpu_query,
    parse_gpu_topology,
    parse_nvlink_errors,
    parse_nvlink_status,
)
from hyperpod_perf.parse.pcie import parse_gpu_pcie, parse_pcie_aer
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.gpu.common import (
    CLOCK_EVENT_REASONS,
    GPU_IDLE_BIT,
    GREP_RC,
    SLOWDOWN_BITS,
    SYSTEMCTL_RC,
    _report_timeout,
    _rows,
)
from hyperpod_perf.rules.gpu.fabric import check_fabric_manager, parse_systemctl_is_active
from hyperpod_perf.rules.gpu.kernel_log import (
    XID_CATALOG,
    XidAction,
    XidCatalog,
    check_oom,
    check_xid,
    load_xid_catalog,
)
from hyperpod_perf.rules.gpu.nvlink import check_nvlink_errors, check_nvlink_inactive, check_topology
from hyperpod_perf.rules.gpu.pcie import check_pcie_aer, check_pcie_replay
from hyperpod_perf.rules.gpu.query import (
    check_ecc,
    check_gpu_count,
    check_pcie,
    check_remapped_rows,
    check_temperature,
    check_thermal_throttle,
    decode_clock_event_reasons,
)

__all__ = [
    "CLOCK_EVENT_REASONS",
    "GPU_IDLE_BIT",
    "GREP_RC",
    "SLOWDOWN_BITS",
    "SYSTEMCTL_RC",
    "XID_CATALOG",
    "XidAction",
    "XidCatalog",
    "check_ecc",
    "check_fabric_manager",
    "check_gpu_count",
    "check_nvlink_errors",
    "check_nvlink_inactive",
    "check_oom",
    "check_pcie",
    "check_pcie_aer",
    "check_pcie_replay",
    "check_remapped_rows",
    "check_temperature",
    "check_thermal_throttle",
    "check_topology",
    "check_xid",
    "decode_clock_event_reasons",
    "evaluate",
    "load_xid_catalog",
    "parse_systemctl_is_active",
]


def evaluate(ctx: NodeContext) -> list[Finding]:
    """All GPU-family findings for one node, in catalog order."""
    query = ctx.section("gpu-query", parse_gpu_query)
    xid = ctx.section("xid", parse_gpu_kernel_log, accept_rc=GREP_RC)
    nvlink_status = ctx.section("nvlink-status", parse_nvlink_status)
    nvlink_errors = ctx.section("nvlink-errors", parse_nvlink_errors)
    topo = ctx.section("gpu-topo", parse_gpu_topology)
    oom = ctx.section("oom", parse_oom, accept_rc=GREP_RC)
    pcie_replay = ctx.section("gpu-pcie", parse_gpu_pcie)
    pcie_aer = ctx.section("pcie-aer", parse_pcie_aer)
    for data, tool in (
        (query, "nvidia-smi"),
        (nvlink_status, "nvidia-smi"),
        (nvlink_errors, "nvidia-smi"),
        (topo, "nvidia-smi"),
        (pcie_replay, "nvidia-smi"),
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
        *check_pcie_replay(ctx, pcie_replay, gpu_by_bus),
        *check_pcie_aer(ctx, pcie_aer),
    ]
