"""The check catalog: every check the project can report, declared once.

Why a table: a finding's `check` id is the contract with operators (reports, notifications,
history, alarms on the `Check` metric dimension). Declaring each id here — with its runbook
section, hand-off, the thresholds it reads, the rule that emits it and one line of meaning —
makes any rule one hop from its id, lets `hyperpod-perf checks` and docs/CHECKS.md print the
whole list, and lets a report refuse a finding whose id nobody declared (a typo in a rule would
otherwise silently start a new series in every dashboard).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection


class UnknownCheckError(ValueError):
    """A finding names a check id the catalog does not declare (a programming error)."""


@dataclass(frozen=True)
class Check:
    id: str
    section: RunbookSection
    #: Where a CONCERN is handed off (None: this project owns the follow-up).
    handoff: Handoff | None
    #: `module:function` of the rule that emits it, importable from `hyperpod_perf`.
    rule: str
    meaning: str
    #: Field names of `rules.thresholds.Thresholds` this check reads.
    thresholds: tuple[str, ...] = ()

    @property
    def family(self) -> str:
        return self.id.split(".", 1)[0]


_S = RunbookSection
_H = Handoff

_CHECKS: tuple[Check, ...] = (
    # GPU hardware (runbook § G, handed off to the node debugger)
    Check("gpu.temperature", _S.GPU, _H.NODE_G, "rules.gpu.query:check_temperature",
          "a GPU at or above the temperature limit", ("gpu_temperature_c",)),
    Check("gpu.pcie_width", _S.GPU, _H.NODE_G, "rules.gpu.query:check_pcie",
          "a GPU's PCIe link trained narrower than its maximum width (x8 instead of x16)"),
    Check("gpu.thermal_throttle", _S.GPU, _H.NODE_G, "rules.gpu.query:check_thermal_throttle",
          "SM clock far below its maximum while hot, or clock-event reasons naming a slowdown",
          ("gpu_throttle_clock_ratio", "gpu_throttle_temperature_c")),
    Check("gpu.ecc_uncorrected", _S.GPU, _H.NODE_G, "rules.gpu.query:check_ecc",
          "uncorrected ECC errors (volatile or aggregate) on a GPU"),
    Check("gpu.remapped_rows", _S.GPU, _H.NODE_G, "rules.gpu.query:check_remapped_rows",
          "a GPU memory row remapping pending (reset to activate) or failed (out of spare rows)"),
    Check("gpu.count", _S.GPU, _H.NODE_G, "rules.gpu.query:check_gpu_count",
          "fewer GPUs listed than the instance type has (a GPU that fell off the bus can vanish)"),
    Check("gpu.topology", _S.GPU, _H.NODE_G, "rules.gpu.nvlink:check_topology",
          "GPU pairs in `nvidia-smi topo -m` without the SKU's NVLink (SYS/NODE/PHB/PXB/PIX, fewer links)"),
    Check("gpu.xid", _S.GPU, _H.NODE_G, "rules.gpu.kernel_log:check_xid",
          "an NVIDIA Xid in the kernel log, with the catalog's action for its code and its age",
          ("event_stale_days",)),
    Check("gpu.nvlink_inactive", _S.GPU, _H.NODE_G, "rules.gpu.nvlink:check_nvlink_inactive",
          "an NVLink reported inactive, or a GPU that should have NVLink (NVLink instance type or "
          "NVLink-only model) reporting none up ('all links are inActive', "
          "'does not have or support Nvlink')"),
    Check("gpu.nvlink_errors", _S.GPU, _H.NODE_G, "rules.gpu.nvlink:check_nvlink_errors",
          "non-zero NVLink error counters"),
    Check("host.fabric_manager", _S.GPU, _H.NODE_G, "rules.gpu.fabric:check_fabric_manager",
          "NVL72 node (p6e-gb200/gb300) whose NVIDIA Fabric Manager is not active"),
    Check("host.oom", _S.RESOURCES, _H.NODE_I, "rules.gpu.kernel_log:check_oom",
          "the kernel's OOM killer ended a process"),
    Check("gpu.pcie_replay", _S.GPU, _H.NODE_G, "rules.gpu.pcie:check_pcie_replay",
          "GPU PCIe replays averaging above DCGM's per-minute limit since boot, or a replay-number "
          "rollover (the link retrained)",
          ("gpu_pcie_replays_per_minute", "gpu_pcie_replay_rollovers_max")),
    Check("host.pcie_aer", _S.GPU, _H.NODE_G, "rules.gpu.pcie:check_pcie_aer",
          "uncorrectable (fatal / non-fatal) PCIe AER errors counted by the kernel on a GPU or EFA device",
          ("pcie_aer_fatal_max", "pcie_aer_nonfatal_max")),
    # EFA / network (runbook § A)
    Check("efa.devices", _S.NCCL, _H.NODE_A, "rules.efa:_devices",
          "no EFA device on an EFA-capable instance type"),
    Check("efa.port_state", _S.NCCL, _H.NODE_A, "rules.efa:_port_state",
          "fewer EFA ports ACTIVE than present"),
    Check("efa.provider", _S.NCCL, _H.NCCL, "rules.efa:_provider",
          "`fi_info -p efa` fails while EFA devices exist or the instance type has EFA: NCCL would fall "
          "back to TCP"),
    Check("efa.counters", _S.NCCL, None, "rules.efa:_counters",
          "EFA error counters (drops, retransmit timeouts, unresponsive remotes, RDMA errors) above zero",
          ("efa_error_counters",)),
    # Host configuration and resources
    Check("host.cpu_governor", _S.NCCL, None, "rules.host:_cpu_governor",
          "a CPU frequency governor other than `performance`"),
    Check("host.memlock", _S.NCCL, _H.NCCL, "rules.host:_memlock",
          "`ulimit -l` not unlimited: RDMA memory registration can fail"),
    Check("host.shm", _S.RESOURCES, _H.NODE_I, "rules.host:_shm",
          "/dev/shm missing or smaller than the minimum (GPU nodes), or shrunk below a share of the RAM "
          "(nodes without GPUs)", ("shm_min_gib", "shm_min_ram_fraction_no_gpu")),
    Check("host.root_volume", _S.RESOURCES, _H.NODE_I, "rules.host:_root_volume",
          "the root volume at or above the used-space limit", ("root_volume_used_pct",)),
    Check("host.iowait", _S.FILE_SYSTEM, None, "rules.host:_iowait",
          "CPU time waiting on I/O above the limit (from /proc/stat)", ("iowait_pct",)),
    Check("host.io_pressure", _S.FILE_SYSTEM, None, "rules.host:_io_pressure",
          "Linux PSI `io some avg10` above the limit", ("io_pressure_some_avg10",)),
    # File systems (runbook § B)
    Check("fs.lustre_df", _S.FILE_SYSTEM, None, "rules.filesystem:_lustre_df",
          "`lfs df` hung, an OST inactive, or an OST at or above the fullness limit",
          ("lustre_ost_used_pct",)),
    Check("fs.throughput", _S.FILE_SYSTEM, None, "rules.fsx:throughput",
          "FSx for Lustre throughput sustained near provisioned (scale it) or I/O-bound nodes with "
          "headroom (fix the access pattern)",
          ("fs_throughput_saturated_pct", "fs_saturated_fraction", "iowait_pct")),
    Check("fs.openzfs_iops", _S.FILE_SYSTEM, None, "rules.fsx:openzfs_iops",
          "FSx for OpenZFS disk IOPS utilization sustained at or above the limit",
          ("openzfs_iops_utilization_pct", "fs_saturated_fraction")),
    # FSx for Lustre beyond throughput (CloudWatch per-OST statistics, the metadata configuration)
    Check("fs.metadata", _S.FILE_SYSTEM, None, "rules.fsx_lustre:metadata",
          "FSx for Lustre metadata operations sustained near what the Metadata IOPS support "
          "(metadata-bound)", ("fs_metadata_saturated_pct", "fs_saturated_fraction")),
    Check("fs.ost_hot", _S.FILE_SYSTEM, None, "rules.fsx_lustre:ost_hot",
          "the hottest FSx for Lustre OST far above the mean OST while at its share of provisioned "
          "throughput (one OST hot: stripe wider)",
          ("fs_ost_hot_ratio", "fs_ost_hot_fraction", "fs_throughput_saturated_pct")),
    Check("fs.ost_full", _S.FILE_SYSTEM, None, "rules.fsx_lustre:ost_full",
          "the fullest FSx for Lustre OST at or above the fullness limit, from CloudWatch (one OST or the "
          "file system full)", ("lustre_ost_used_pct",)),
    # Topology and fleet (cluster level)
    Check("topology.az_spread", _S.NCCL, _H.CLUSTER_B, "rules.topology:az_spread",
          "job nodes span more than one Availability Zone"),
    Check("topology.ultraserver", _S.NCCL, _H.CLUSTER_B, "rules.topology:ultraserver",
          "NVL72 job nodes spread over more than one UltraServer"),
    Check("fleet.instance_types", _S.NCCL, None, "rules.fleet:instance_types",
          "more than one instance type among one instance group's job nodes"),
    Check("fleet.version_drift", _S.NCCL, _H.VERSIONS, "rules.fleet:version_drift",
          "driver / CUDA / NCCL / EFA / OFI versions differ between nodes"),
    Check("fleet.outlier", _S.NCCL, None, "rules.fleet:outliers",
          "a node far from the fleet median on a comparable signal (robust z-score)",
          ("fleet_outlier_robust_z", "fleet_outlier_min_relative_deviation")),
    # Pairwise NCCL (runbook § A)
    Check("nccl.pair_slow", _S.NCCL, None, "nccl.analysis.findings:_slow_pair_findings",
          "a node pair's all-reduce bus bandwidth below the run mean",
          ("nccl_pair_slow_pct", "nccl_drain_pct")),
    Check("nccl.node_suspect", _S.NCCL, None, "nccl.analysis.findings:_suspect_findings",
          "the node common to most slow pairs (localisation)", ("nccl_suspect_share",)),
    Check("nccl.below_baseline", _S.NCCL, _H.NCCL, "nccl.analysis.findings:_baseline_finding",
          "every pair below the instance type's published expectation", ("nccl_baseline_ratio",)),
    Check("nccl.fabric", _S.NCCL, _H.CLUSTER_B, "nccl.analysis.findings:fabric_findings",
          "the slow pairs cross one network-layer boundary while each side is fast: the fabric or the "
          "placement, not a node", ("fabric_boundary_share", "fabric_crossing_slow_share")),
    Check("nccl.correctness", _S.NCCL, _H.NODE_G, "nccl.analysis.findings:_correctness_findings",
          "nccl-tests reported wrong results (#wrong > 0)"),
    Check("nccl.coverage", _S.NCCL, None, "nccl.analysis.findings:_coverage_finding",
          "pairs the plan expected but no log measured"),
    Check("nccl.log", _S.NCCL, None, "nccl.analysis.findings:_log_findings",
          "an nccl-tests log that is cut short, unreadable or out of bounds"),
    # The training job's own logs (`logs analyze`, the request's job-log locations)
    Check("nccl.transport", _S.NCCL, _H.NCCL, "joblogs.rules:transport_findings",
          "the network each rank's NCCL really used: sockets where EFA/InfiniBand was expected"),
    Check("nccl.env", _S.NCCL, _H.NCCL, "joblogs.rules:env_findings",
          "NCCL_* / FI_* settings and who set them; overrides known to break or slow a job"),
    Check("nccl.memlock", _S.NCCL, _H.NCCL, "joblogs.rules:memlock_findings",
          "memory-registration failures (fi_mr_reg, ibv_reg_mr, a small memlock ulimit)"),
    Check("nccl.timeout", _S.NCCL, _H.NCCL, "joblogs.rules:timeout_findings",
          "watchdog timeouts, NCCL errors, desyncs and hangs, with the rank or host that stalled first"),
    Check("nccl.straggler", _S.NCCL, _H.NCCL, "straggler.analysis:straggler_findings",
          "the rank / host whose collectives start late (NCCL Inspector, flight recorder, Megatron timers, "
          "nvidia-resiliency-ext), the time and GPU-hours it costs, or the rank a hang waits for",
          ("straggler_min_wait_ms", "straggler_min_wait_ratio", "straggler_share",
           "straggler_min_collectives", "straggler_concern_loss_pct", "straggler_min_relative_score",
           "instance_hour_price_usd")),
    Check("nccl.joblog_coverage", _S.NCCL, None, "joblogs.coverage:coverage_findings",
          "job logs not read whole: a source not readable, an object a read bound stopped (gzip bomb, "
          "corrupt or cut gzip, size), objects or events past the budget, over-long lines cut"),
    # The fleet's time series over the alarm window (dcgm-exporter, EFA node exporter, node_exporter,
    # Slurm exporter via Prometheus / Amazon Managed Prometheus: metrics/signals.py cites each series)
    Check("metrics.gpu_clock", _S.GPU, _H.NODE_G, "metrics.judge:FleetJudge.gpu_clock",
          "a node's slowest GPU clocked well below the fleet (or its own baseline) while busy, for minutes; "
          "the power / thermal violation counters and clock-event reasons name the cause",
          ("metrics_clock_low_ratio", "metrics_busy_util_pct", "metrics_throttle_share",
           "metrics_min_minutes")),
    Check("metrics.gpu_thermal", _S.GPU, _H.NODE_G, "metrics.judge:FleetJudge.gpu_thermal",
          "a node's hottest GPU at or above the temperature limit for minutes",
          ("metrics_gpu_temperature_c", "metrics_min_minutes")),
    Check("metrics.gpu_idle", _S.NCCL, _H.NCCL, "metrics.judge:FleetJudge.gpu_idle",
          "every GPU of the job idle at once after running (a hang), or one node idle while the fleet runs",
          ("metrics_idle_util_pct", "metrics_busy_util_pct", "metrics_min_minutes")),
    Check("metrics.xid", _S.GPU, _H.NODE_G, "metrics.judge:FleetJudge.xid",
          "a new Xid code in dcgm-exporter's DCGM_FI_DEV_XID_ERRORS during the window "
          "(INFO: one held from before)"),
    Check("metrics.pcie_replay", _S.GPU, _H.NODE_G, "metrics.judge:judge",
          "GPU PCIe replays above DCGM's per-minute limit, sustained",
          ("metrics_pcie_replays_per_minute", "metrics_min_minutes")),
    Check("metrics.nvlink_errors", _S.GPU, _H.NODE_G, "metrics.judge:judge",
          "NVLink CRC / replay / recovery error counters rising, sustained", ("metrics_min_minutes",)),
    Check("metrics.efa_retransmits", _S.NCCL, _H.NODE_A, "metrics.judge:FleetJudge.fleet_ratio",
          "EFA retransmitted packets many times the fleet's, sustained",
          ("metrics_efa_retrans_fleet_ratio", "metrics_efa_retrans_min_per_s", "metrics_min_minutes")),
    Check("metrics.efa_errors", _S.NCCL, _H.NODE_A, "metrics.judge:judge",
          "EFA retransmit timeouts, impaired / unresponsive remote connections, or receive drops "
          "far above the fleet",
          ("metrics_efa_retrans_fleet_ratio", "metrics_efa_retrans_min_per_s", "metrics_min_minutes")),
    Check("metrics.network_low", _S.NCCL, _H.NCCL, "metrics.judge:FleetJudge.network_low",
          "a node moving far fewer EFA bytes than the fleet while the fleet moves data",
          ("metrics_network_low_ratio", "metrics_network_min_bytes_per_s", "metrics_min_minutes")),
    Check("metrics.iowait", _S.FILE_SYSTEM, _H.CLUSTER_B, "metrics.judge:FleetJudge.host_io",
          "CPU iowait high for minutes on a node, or on most nodes at once (a shared file-system cause)",
          ("metrics_iowait_pct", "metrics_fleet_share", "metrics_min_minutes")),
    Check("metrics.io_pressure", _S.FILE_SYSTEM, _H.CLUSTER_B, "metrics.judge:FleetJudge.host_io",
          "Linux I/O pressure (PSI) high for minutes on a node, or on most nodes at once",
          ("metrics_io_pressure_pct", "metrics_fleet_share", "metrics_min_minutes")),
    Check("metrics.slurm_state", _S.RESOURCES, None, "metrics.judge:FleetJudge.slurm_state",
          "the Slurm exporter shows the node down, drained, failing or not responding during the window"),
    Check("metrics.coverage", _S.COLLECTION, None, "service.metrics:coverage_findings",
          "what the metrics source could not answer: an exporter with no series, nodes without series, "
          "series matching no node, a query that failed"),
    # Health logs (HyperPod deep health checks, Health Monitoring Agent)
    Check("health.deep_check", _S.GPU, _H.NODE_F, "rules.health:deep_check",
          "a failed HyperPod deep health check in CloudWatch Logs"),
    Check("health.hma", _S.GPU, _H.NODE_F, "rules.health:hma",
          "a HyperPod Health Monitoring Agent detection event"),
    # Run history
    Check("history.after_repair", _S.GPU, None, "history.repair:verdict",
          "a node back after a HyperPod reboot or replacement, against its last report and the fleet: "
          "fixed, not fixed or still below the fleet", ("repair_below_fleet_pct",)),
    # Coverage recommendations (runbook § C)
    Check("coverage.node_recovery", _S.COVERAGE, None, "rules.coverage:node_recovery",
          "cluster NodeRecovery is not Automatic (the command to enable it)"),
    Check("coverage.deep_health_checks", _S.COVERAGE, None, "rules.coverage:deep_health_checks",
          "a GPU instance group without on-start deep health checks"),
    # Collection (runbook § X)
    Check("collect.node", _S.COLLECTION, _H.SSM, "rules.context:NodeContext.collection_problem",
          "a node could not be reached, or part of its output could not be read"),
)  # fmt: skip

CATALOG: dict[str, Check] = {c.id: c for c in _CHECKS}


def lookup(check_id: str) -> Check:
    try:
        return CATALOG[check_id]
    except KeyError:
        raise UnknownCheckError(
            f"check id {check_id!r} is not in the check catalog (rules/catalog.py)"
        ) from None


def ensure_catalogued(findings: Iterable[Finding]) -> None:
    """Refuse a report carrying a check id nobody declared."""
    unknown = sorted({f.check for f in findings} - CATALOG.keys())
    if unknown:
        raise UnknownCheckError(
            f"check ids not in the check catalog (rules/catalog.py): {', '.join(unknown)}"
        )
