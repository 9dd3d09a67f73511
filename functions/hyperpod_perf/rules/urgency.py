"""Urgency tiers: act now, fix soon, watch — one order for every output. Pure.

A severity says whether a signal is a problem; the tier says what it costs the job right now, so
a paged engineer reads the failing node before the powersave governor. Each CONCERN of the
catalog has a default tier and the reason for it (`CONCERN_TIERS`); a few checks refine it from
their evidence (the Xid's catalogued action and age, whether any EFA port is left, whether a
remapping is pending or has failed, a hang rather than a slow rank). INFO is always `watch`;
OK has no tier.

Tiers are set once, where a report's findings are assembled (`with_tiers`), and renderers
read them through `urgency_of`, which also answers for a finding that never went through a
report (the CLI's `evaluate` of one snapshot).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hyperpod_perf.domain.findings import Finding, Severity, Tier
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds


@dataclass(frozen=True)
class Urgency:
    tier: Tier
    reason: str


_ACT, _FIX, _WATCH = Tier.ACT_NOW, Tier.FIX_SOON, Tier.WATCH

_FAILING = "the node is failing the job"
_SLOWS = "slows every step of the job"

#: The tier of a CONCERN of each check, and why. Every catalog id has a row (a test holds it).
CONCERN_TIERS: dict[str, tuple[Tier, str]] = {
    # GPU hardware: a rank that stops or computes wrong fails the job; a slow one slows it.
    "gpu.temperature": (_FIX, "a GPU at its temperature limit clocks itself down: the job runs at its pace"),
    "gpu.pcie_width": (_FIX, "a narrow PCIe link cuts host-GPU and GPUDirect bandwidth: a steady slowdown"),
    "gpu.thermal_throttle": (_FIX, "a GPU clocked down: synchronous training runs at its pace"),
    "gpu.ecc_uncorrected": (_ACT, f"uncorrected ECC errors since the GPU's last reset: {_FAILING}"),
    "gpu.remapped_rows": (_ACT, f"the GPU is out of spare memory rows: {_FAILING}"),
    "gpu.count": (_ACT, f"a GPU is missing from nvidia-smi (fallen off the bus): {_FAILING}"),
    "gpu.topology": (_FIX, "GPU pairs without their NVLink: collectives inside the node run over PCIe"),
    "gpu.xid": (_ACT, f"an Xid whose catalogued action is a GPU reset or a reboot: {_FAILING}"),
    "gpu.nvlink_inactive": (_ACT, "an NVLink down: NCCL inside the node falls back to PCIe or fails"),
    "gpu.nvlink_errors": (_FIX, "NVLink error counters rising: retries slow NCCL inside the node"),
    "gpu.pcie_replay": (_FIX, "PCIe replays: the link retries transfers, a steady slowdown"),
    "host.pcie_aer": (_ACT, "uncorrectable PCIe errors: transactions to a GPU or EFA device were lost"),
    "host.fabric_manager": (_ACT, "Fabric Manager down on an NVL72 node: its GPUs cannot join the job"),
    "host.oom": (_FIX, "the OOM killer ended a process: the job may have lost a worker, check its memory"),
    # EFA and the node's network setup
    "efa.devices": (_ACT, "no EFA device on an EFA instance: NCCL falls back to TCP sockets or fails"),
    "efa.port_state": (_FIX, "EFA ports down: the node moves its share of every collective on fewer links"),
    "efa.provider": (_ACT, "the EFA libfabric provider fails: NCCL falls back to TCP sockets"),
    "efa.counters": (_FIX, "EFA error counters: retransmits and drops slow collectives through the node"),
    "host.cpu_governor": (_FIX, "CPUs not on the performance governor: a steady tax on data loading"),
    "host.memlock": (_FIX, "memlock not unlimited: RDMA memory registration can fail under load"),
    "host.shm": (_FIX, "/dev/shm too small: data loaders and NCCL's shared memory can fail or slow"),
    "host.root_volume": (_FIX, "the root volume nearly full: logs, containers and checkpoints fail next"),
    "host.iowait": (_FIX, "CPUs waiting on I/O: data loading or checkpoints hold the step"),
    "host.io_pressure": (_FIX, "I/O pressure: tasks stall on the file system"),
    # File systems: every node waits on them at once
    "fs.lustre_df": (_FIX, "an OST inactive or full: writes to it fail or stall"),
    "fs.throughput": (_FIX, "FSx near provisioned throughput: loading and checkpoints stall on every node"),
    "fs.openzfs_iops": (_FIX, "FSx for OpenZFS at its IOPS limit: every node's I/O waits"),
    "fs.metadata": (_FIX, "FSx metadata-bound: file opens and creates wait on every node"),
    "fs.ost_hot": (_FIX, "one OST hot: files striped on it are read at one OST's speed"),
    "fs.ost_full": (_FIX, "an OST nearly full: writes striped on it fail next"),
    # Placement and the fleet
    "topology.az_spread": (_FIX, "nodes in two Availability Zones: cross-AZ collectives are slower"),
    "topology.ultraserver": (_FIX, "NVL72 nodes over several UltraServers: the NVLink domain is split"),
    "fleet.instance_types": (_FIX, "mixed instance types in one group: the job runs at the slowest's pace"),
    "fleet.version_drift": (_FIX, "driver / NCCL / EFA versions differ between nodes: hangs and slow paths"),
    "fleet.outlier": (_FIX, f"a node far from the fleet on a comparable signal: it {_SLOWS}"),
    # NCCL: pairs, job logs, stragglers
    "nccl.pair_slow": (_FIX, "slow node pairs: every collective through them slows each step"),
    "nccl.node_suspect": (_FIX, f"the node common to the slow pairs: it {_SLOWS}"),
    "nccl.below_baseline": (_FIX, "every pair below the instance type's expectation: the fabric is slow"),
    "nccl.fabric": (_FIX, "slow pairs across one network-layer boundary: the fabric or the placement"),
    "nccl.correctness": (_ACT, "nccl-tests computed wrong results: a node corrupts collectives"),
    "nccl.coverage": (_WATCH, "pairs not measured: a gap in the evidence, not a slowdown"),
    "nccl.log": (_WATCH, "an nccl-tests log could not be read whole: a gap in the evidence"),
    "nccl.transport": (_ACT, "NCCL runs on TCP sockets where EFA was expected: an order of magnitude slower"),
    "nccl.env": (_FIX, "NCCL / libfabric settings known to break or slow a job"),
    "nccl.memlock": (_ACT, "RDMA memory registration failing: NCCL cannot use EFA"),
    "nccl.timeout": (_ACT, "the job timed out or hung in a collective: it is not making progress"),
    "nccl.straggler": (_FIX, "a rank starts its collectives late: every other rank waits for it each step"),
    "nccl.joblog_coverage": (_WATCH, "job logs not read whole: a gap in the evidence"),
    # The metrics stage (the window's time series)
    "metrics.gpu_clock": (_FIX, f"a node's GPUs clocked below the fleet for minutes: it {_SLOWS}"),
    "metrics.gpu_thermal": (_FIX, "a node's GPUs at the temperature limit for minutes: they slow themselves"),
    "metrics.gpu_idle": (_FIX, "a node idle while the fleet works: it has left the job or waits on input"),
    "metrics.xid": (_ACT, f"a new Xid during the window: {_FAILING}"),
    "metrics.pcie_replay": (_FIX, "PCIe replays sustained: the link retries transfers"),
    "metrics.nvlink_errors": (_FIX, "NVLink errors rising: retries slow NCCL inside the node"),
    "metrics.efa_retransmits": (_FIX, f"EFA retransmits far above the fleet: the node {_SLOWS}"),
    "metrics.efa_errors": (_FIX, "EFA timeouts and unresponsive remotes: collectives through the node stall"),
    "metrics.network_low": (_FIX, "a node moving far less data than the fleet: it lags or has left the job"),
    "metrics.iowait": (_FIX, "iowait for minutes: data loading or checkpoints hold the step"),
    "metrics.io_pressure": (_FIX, "I/O pressure for minutes: tasks stall on the file system"),
    "metrics.slurm_state": (_FIX, "Slurm shows the node down or drained: the job lost it or will not get it"),
    "metrics.coverage": (_WATCH, "what the metrics source could not answer: a gap in the evidence"),
    # Health logs and history
    "health.deep_check": (_ACT, f"a HyperPod deep health check failed: {_FAILING}"),
    "health.hma": (_ACT, f"HyperPod's health agent flagged the node: {_FAILING}"),
    "history.after_repair": (_ACT, "a repaired node still shows the fault it was repaired for"),
    # Recommendations and collection
    "coverage.node_recovery": (_WATCH, "a recommendation: no slowdown now, faster recovery next time"),
    "coverage.deep_health_checks": (_WATCH, "a recommendation: no slowdown now, faults caught before a job"),
    "collect.node": (_FIX, "a node not checked: its state is unknown until it is read"),
}

#: Xid catalogue actions (rules/xid_actions.json) that take the GPU out of the job until it is
#: reset or the node rebooted; the others are the application's fault, cleanup or informational.
_XID_ACT_ACTIONS = frozenset({"reset_gpu", "restart_node", "nvlink_workflow"})
_XID_WATCH_ACTIONS = frozenset({"ignore_watch"})
#: `recovery_action` words the driver prints (Xid 154 "GPU recovery action changed ... (0x...)").
_RECOVERY_ACT = ("reset", "reboot", "drain")


def _xid(f: Finding, t: Thresholds) -> Urgency | None:
    ev = f.evidence
    age = ev.get("last_seen_days_ago")
    if isinstance(age, int | float) and age > t.event_stale_days:
        return Urgency(
            _WATCH,
            f"last seen {age:.0f} days before this run (over {t.event_stale_days:g}): a past event; "
            "act if it comes back or a GPU is missing now",
        )
    raw = ev.get("action")
    actions = set(raw) if isinstance(raw, list) else {raw}  # metrics.xid: one action per code
    recovery = " ".join(str(r) for r in ev.get("recovery_action") or ()).lower()
    if actions & _XID_ACT_ACTIONS or any(word in recovery for word in _RECOVERY_ACT):
        return None  # the default: act now
    if actions <= _XID_WATCH_ACTIONS:
        return Urgency(_WATCH, "an Xid the catalogue calls informational: watch for repeats")
    if "reset_to_activate_remap" in actions:
        return Urgency(_FIX, "a memory row remap waits for a GPU reset: running jobs may finish, reset after")
    return Urgency(
        _FIX,
        "an Xid the catalogue blames on the application or a cleanup: restart the job; "
        "act if it repeats on the same GPU",
    )


def _remapped_rows(f: Finding, _t: Thresholds) -> Urgency | None:
    if f.evidence.get("failure"):
        return None
    return Urgency(_FIX, "a memory row remap waits for a GPU reset: drain and reset when convenient")


def _ecc(f: Finding, _t: Thresholds) -> Urgency | None:
    volatile = f.evidence.get("uncorrected_volatile")
    if isinstance(volatile, int | float) and volatile > 0:
        return None
    return Urgency(
        _FIX,
        "uncorrected ECC errors in the GPU's lifetime count, none since its last reset: "
        "check its row remapping",
    )


def _efa_ports(f: Finding, _t: Thresholds) -> Urgency | None:
    if f.evidence.get("active") == 0:
        return Urgency(_ACT, "no EFA port active: NCCL falls back to TCP sockets or fails")
    return None


def _straggler(f: Finding, _t: Thresholds) -> Urgency | None:
    if f.summary.startswith("hang:"):
        return Urgency(_ACT, "the job is hung: the others wait in a collective this rank never reached")
    return None


def _gpu_idle(f: Finding, _t: Thresholds) -> Urgency | None:
    if f.node is None:
        return Urgency(_ACT, "every GPU of the job idle at once: the job is hung or stalled")
    return None


def _after_repair(f: Finding, _t: Thresholds) -> Urgency | None:
    if "not fixed" in f.summary:
        return None
    return Urgency(_FIX, "a repaired node still below the fleet: it slows the job")


_REFINE: dict[str, Callable[[Finding, Thresholds], Urgency | None]] = {
    "gpu.xid": _xid,
    "metrics.xid": _xid,
    "gpu.remapped_rows": _remapped_rows,
    "gpu.ecc_uncorrected": _ecc,
    "efa.port_state": _efa_ports,
    "nccl.straggler": _straggler,
    "metrics.gpu_idle": _gpu_idle,
    "history.after_repair": _after_repair,
}


def urgency_of(finding: Finding, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Urgency | None:
    """The finding's tier and why; None for OK. A tier already set (by `with_tiers`) is kept."""
    if finding.severity is Severity.OK:
        return None
    if finding.tier is not None:
        return Urgency(finding.tier, finding.tier_reason or "")
    if finding.severity is Severity.INFO:
        return Urgency(_WATCH, "for information")
    tier, reason = CONCERN_TIERS.get(finding.check, (_FIX, "a concern"))
    refine = _REFINE.get(finding.check)
    return (refine(finding, thresholds) if refine else None) or Urgency(tier, reason)


def tier_rank(finding: Finding) -> int:
    """Sort position by tier: act now, fix soon, watch, then OK."""
    found = urgency_of(finding)
    return found.tier.rank if found else 3


def age_key(finding: Finding) -> float:
    """Within a tier, an event days old after the recent ones, older further down (anything under
    a day, or without an age, counts as recent: the impact order decides among those)."""
    age = finding.evidence.get("last_seen_days_ago")
    return float(age) if isinstance(age, int | float) and age >= 1 else 0.0


def with_tiers(findings: Iterable[Finding], thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[Finding]:
    """Each finding with its tier and reason set (what the report stores)."""
    out = []
    for f in findings:
        found = urgency_of(f, thresholds)
        if found is None or (f.tier is found.tier and f.tier_reason == found.reason):
            out.append(f)
        else:
            out.append(f.model_copy(update={"tier": found.tier, "tier_reason": found.reason}))
    return out


def tier_counts(findings: Iterable[Finding]) -> dict[Tier, int]:
    counts = dict.fromkeys(Tier, 0)
    for f in findings:
        if (found := urgency_of(f)) is not None:
            counts[found.tier] += 1
    return counts


def top_tier(findings: Iterable[Finding]) -> Tier | None:
    """The most urgent tier among the findings (None when all are OK)."""
    ranks = [u.tier for f in findings if (u := urgency_of(f)) is not None]
    return min(ranks, key=lambda t: t.rank) if ranks else None
