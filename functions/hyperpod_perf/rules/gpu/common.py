"""Shared by the GPU-family checks: the runbook hand-offs, what the operator does next per check,
and section access (absent / timed out / no GPU rows) plus `_Judge`, which every finding goes through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.parse.nvidia_smi import (
    GpuQuery,
    GpuQueryRow,
)
from hyperpod_perf.rules.context import NodeContext, Section, SectionState

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
