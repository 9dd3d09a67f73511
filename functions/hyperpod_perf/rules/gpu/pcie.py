"""PCIe link error checks: gpu.pcie_replay (the GPUs' replay counters) and host.pcie_aer (the kernel's
AER counters of the GPUs and EFA devices).

What the anchors treat as a fault, and how a single snapshot can say the same thing honestly:

- DCGM's health watch for PCIe (NVIDIA/DCGM `modules/health/DcgmHealthWatch.cpp`, the PCIe monitor)
  reads the replay counter a minute apart and warns (`DCGM_FR_PCI_REPLAY_RATE`) when it grew by more
  than `DCGM_LIMIT_MAX_PCIREPLAY_RATE` = 8 ("8 replays per minute is the maximum recommended by RM").
  One snapshot holds a count since the GPU was last reset, not a one-minute delta; the node's uptime
  bounds that interval from above. If count / uptime-minutes is above 8, at least one minute since the
  reset had more than 8 replays, so DCGM would have warned at least once: CONCERN. Below it the rate
  in any minute is unknown, so the count is shown and nothing is claimed (OK, evidence carries it).
- HyperPod's health-monitoring agent acts on "DCGM policy violation notifications" (AWS, SageMaker
  HyperPod health-monitoring agent page); DCGM's policy conditions include `DCGM_POLICY_COND_PCI`, fed by
  the same `DCGM_FI_DEV_PCIE_REPLAY_COUNTER`. Azure's NHC measures PCIe bandwidth (nvbandwidth,
  `azure_gpu_bandwidth.nhc`) instead of reading counters; that is an active test, out of scope here.
- `Replay Number Rollovers`: the PCIe data-link layer retrains the link when one packet is replayed four
  times in a row (REPLAY_NUM rollover). None of the anchors watch it; a retrained link is a link fault,
  so any rollover is a CONCERN (new, `gpu_pcie_replay_rollovers_max`).
- AER: GCM's health check `check-syslogs pcie-aer` (facebookresearch/gcm) reads the kernel's AER lines:
  uncorrectable fatal -> critical, uncorrectable non-fatal -> warning, corrected only -> OK ("hardware
  auto-recovered"). The same split is applied to the kernel's per-device counters
  (/sys/bus/pci/devices/<bdf>/aer_dev_*): fatal or non-fatal above zero -> CONCERN, correctable ->
  reported in the OK finding. A device without the files does not expose AER statistics (common on
  virtual machines): INFO "not readable", never a fault. The kernel ABI notes that a faulty endpoint
  may count nothing itself (its link partner counts), so zero here does not prove a clean link.
"""

from __future__ import annotations

from typing import Any

from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.parse.pcie import AerDevice, GpuPcieReport, GpuReplayCounters, PcieAerReport
from hyperpod_perf.rules.context import NodeContext, Section
from hyperpod_perf.rules.gpu.common import _Judge, _unavailable

NEXT_PCIE_REPLAY = (
    "PCIe replays mean the GPU's link is retransmitting corrupted packets (a marginal riser, retimer or "
    "slot), which slows host<->GPU and GPUDirect traffic and often comes before a GPU falls off the bus. "
    "Re-read `nvidia-smi -q -d PCIE` a minute apart to get the rate, check `gpu.pcie_width` and the AER "
    "counters of the same link; drain the node and hand off (hyperpod-node-debugger § G)."
)
NEXT_PCIE_AER = (
    "Uncorrectable PCIe errors on this device lost or corrupted transactions: look for the matching "
    "`AER:` lines in `dmesg` and an Xid on the same bus, then drain the node; a fatal error needs a "
    "reset or reboot, repeated errors a hardware replacement (hyperpod-node-debugger § G)."
)

_MINUTE_S = 60.0


def _uptime_minutes(ctx: NodeContext) -> float | None:
    seconds = ctx.uptime_s
    return None if seconds is None else seconds / _MINUTE_S


def _gpu_name(counters: GpuReplayCounters, gpu_by_bus: dict[str, int]) -> dict[str, Any]:
    index = gpu_by_bus.get(counters.bus) if counters.bus else None
    return {"gpu": index, "bus_id": counters.pci_bus_id}


def _where(label: dict[str, Any]) -> str:
    if label["gpu"] is None:
        return f"PCI {label['bus_id']}"
    return f"GPU {label['gpu']} (PCI {label['bus_id']})"


def check_pcie_replay(ctx: NodeContext, data: Section, gpu_by_bus: dict[str, int]) -> list[Finding]:
    """gpu.pcie_replay: replay counters whose average since boot exceeds DCGM's rate, or any rollover."""
    check = "gpu.pcie_replay"
    if (missing := _unavailable(ctx, check, data, "GPU PCIe replay counters")) is not None:
        return missing
    report: GpuPcieReport = data.value
    rate_limit = ctx.thresholds.gpu_pcie_replays_per_minute
    rollover_limit = ctx.thresholds.gpu_pcie_replay_rollovers_max
    threshold = (
        f"replays / uptime minutes > {rate_limit:g} (DCGM PCIe watch) or replay-number rollovers "
        f"> {rollover_limit} -> CONCERN"
    )
    judge = _Judge(ctx, check, data, threshold)
    if not report.gpus:
        return [judge.not_reported("no GPU listed by nvidia-smi -q", {"gpus": 0})]
    read = [g for g in report.gpus if g.replays is not None or g.rollovers is not None]
    if not read:
        gpus = len(report.gpus)
        return [judge.not_reported(f"{gpus} GPU(s), replay counters N/A", {"gpus": gpus})]
    minutes = _uptime_minutes(ctx)
    findings: list[Finding] = []
    counts: dict[str, dict[str, Any]] = {}
    for gpu in read:
        label = _gpu_name(gpu, gpu_by_bus)
        rate = gpu.replays / minutes if gpu.replays is not None and minutes else None
        counts[gpu.pci_bus_id] = {"replays": gpu.replays, "rollovers": gpu.rollovers}
        evidence = {
            **label,
            "replays_since_reset": gpu.replays,
            "replay_number_rollovers": gpu.rollovers,
            "uptime_minutes": round(minutes, 1) if minutes else None,
            "replays_per_minute_since_boot": round(rate, 3) if rate is not None else None,
        }
        if gpu.rollovers is not None and gpu.rollovers > rollover_limit:
            findings.append(
                judge(
                    Severity.CONCERN,
                    f"{_where(label)}: {gpu.rollovers} PCIe replay-number rollover(s) (> {rollover_limit}): "
                    "the link retrained after repeated failed replays",
                    evidence,
                    NEXT_PCIE_REPLAY,
                )
            )
        elif rate is not None and rate > rate_limit:
            findings.append(
                judge(
                    Severity.CONCERN,
                    f"{_where(label)}: {gpu.replays} PCIe replays in {minutes:.0f} min of uptime, "
                    f"{rate:.1f}/min on average (> {rate_limit:g}/min, DCGM's PCIe limit)",
                    evidence,
                    NEXT_PCIE_REPLAY,
                )
            )
    if findings:
        return findings
    replaying = {bus: c for bus, c in counts.items() if c["replays"]}
    uptime = round(minutes, 1) if minutes else None
    evidence = {"gpus": len(read), "counters": counts, "uptime_minutes": uptime}
    if replaying and minutes is None:
        return [
            judge(
                Severity.INFO,
                f"{len(replaying)} of {len(read)} GPU(s) show PCIe replays, uptime unknown: "
                "the rate cannot be judged",
                evidence,
            )
        ]
    note = ", no replays"
    if replaying:
        note = f", replays on {len(replaying)} (below {rate_limit:g}/min since boot)"
    return [judge(Severity.OK, f"{len(read)} GPU(s){note}, no replay rollover", evidence)]


def _device_label(device: AerDevice) -> dict[str, Any]:
    return {"bdf": device.bdf, "kind": device.kind, "vendor": device.vendor, "device": device.device}


def check_pcie_aer(ctx: NodeContext, data: Section) -> list[Finding]:
    """host.pcie_aer: uncorrectable (fatal / non-fatal) AER counts on the GPUs and EFA devices."""
    check = "host.pcie_aer"
    if (missing := _unavailable(ctx, check, data, "PCIe AER counters")) is not None:
        return missing
    report: PcieAerReport = data.value
    fatal_limit = ctx.thresholds.pcie_aer_fatal_max
    nonfatal_limit = ctx.thresholds.pcie_aer_nonfatal_max
    threshold = (
        f"aer_dev_fatal TOTAL > {fatal_limit} or aer_dev_nonfatal TOTAL > {nonfatal_limit} -> CONCERN; "
        "correctable errors are reported, not judged"
    )
    judge = _Judge(ctx, check, data, threshold)
    if not report.devices:
        return [judge.not_reported("no NVIDIA or EFA PCI device listed", {"devices": 0})]
    readable = [d for d in report.devices if d.readable]
    evidence_base: dict[str, Any] = {
        "devices": len(report.devices),
        "readable": len(readable),
        "not_readable": [d.bdf for d in report.devices if not d.readable],
    }
    if report.skipped_lines:
        evidence_base["skipped_lines"] = report.skipped_lines
    if not readable:
        return [
            judge.not_reported(
                f"{len(report.devices)} NVIDIA/EFA device(s), AER counters not readable (not exposed by the "
                "kernel)",
                evidence_base,
            )
        ]
    findings: list[Finding] = []
    for device in readable:
        fatal, nonfatal = device.total("fatal"), device.total("nonfatal")
        if fatal <= fatal_limit and nonfatal <= nonfatal_limit:
            continue
        named = {kind: counts.nonzero for kind, counts in device.counts.items() if counts.nonzero}
        findings.append(
            judge(
                Severity.CONCERN,
                f"{device.kind.upper()} PCI {device.bdf}: {fatal} fatal and {nonfatal} non-fatal "
                "uncorrectable PCIe error(s) counted by the kernel (AER)",
                {
                    **_device_label(device),
                    "fatal": fatal,
                    "nonfatal": nonfatal,
                    "correctable": device.total("correctable"),
                    "errors": named,
                },
                NEXT_PCIE_AER,
            )
        )
    if findings:
        return findings
    corrected = {d.bdf: d.total("correctable") for d in readable if d.total("correctable")}
    note = f"; correctable errors on {len(corrected)} (corrected by the link, no action)" if corrected else ""
    return [
        judge(
            Severity.OK,
            f"{len(readable)} of {len(report.devices)} device(s) readable, no uncorrectable PCIe error{note}",
            {**evidence_base, "correctable_by_device": corrected},
        )
    ]
