"""Every threshold the rules use, in one place.

Defaults are the runbook's (or marked "new" where the runbook has none). Operators override
any subset from a JSON or TOML file (`--thresholds FILE`); unknown keys are rejected so a typo
never silently leaves a default in force.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hyperpod_perf.domain.bounded_read import FileTooLarge, read_bounded


class ThresholdsError(ValueError):
    """The thresholds file cannot be read or does not validate."""


class Thresholds(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # GPU (runbook § G hand-off)
    gpu_temperature_c: float = Field(88.0, description="temperature.gpu >= this -> CONCERN")
    gpu_throttle_clock_ratio: float = Field(0.5, description="SM clock / max SM clock below this ...")
    gpu_throttle_temperature_c: float = Field(80.0, description="... while temperature >= this -> CONCERN")
    # PCIe link errors. DCGM's PCIe health watch warns above 8 replays per minute
    # (NVIDIA/DCGM DCGM_LIMIT_MAX_PCIREPLAY_RATE, "the maximum recommended by RM"); a count since the
    # GPU's reset whose average over the uptime is above it proves at least one such minute.
    gpu_pcie_replays_per_minute: float = Field(
        8.0, description="replays since reset / uptime minutes > this -> CONCERN (DCGM PCIe watch)"
    )
    gpu_pcie_replay_rollovers_max: int = Field(
        0, description="replay-number rollovers (link retrained) > this -> CONCERN (new)"
    )
    # AER (kernel aer_dev_* counters): uncorrectable fatal / non-fatal as GCM's pcie-aer check grades them.
    pcie_aer_fatal_max: int = Field(0, description="aer_dev_fatal TOTAL_ERR_FATAL > this -> CONCERN")
    pcie_aer_nonfatal_max: int = Field(0, description="aer_dev_nonfatal TOTAL_ERR_NONFATAL > this -> CONCERN")
    # EFA
    efa_error_counters: tuple[str, ...] = (
        "rx_drops",
        "retrans_timeout_events",
        "unresponsive_remote_events",
        "impaired_remote_conn_events",
        "rdma_read_wr_err",
        "rdma_write_wr_err",
        "rdma_read_resp_wr_err",
    )
    # Host
    shm_min_gib: float = Field(
        16.0, description="/dev/shm smaller than this -> CONCERN (GPU / accelerator node)"
    )
    shm_min_ram_fraction_no_gpu: float = Field(
        0.25,
        description="node without GPUs (e.g. a HyperPod controller): /dev/shm below this x RAM -> CONCERN "
        "(RAM read as 2 x devtmpfs, the kernel's tmpfs default of half the RAM)",
    )
    root_volume_used_pct: float = Field(90.0, description="/ used >= this -> CONCERN")
    iowait_pct: float = Field(20.0, description="iowait > this -> CONCERN")
    io_pressure_some_avg10: float = Field(20.0, description="PSI io some avg10 > this -> CONCERN (new)")
    # File system
    lustre_ost_used_pct: float = Field(90.0, description="an OST >= this full -> CONCERN")
    fs_throughput_saturated_pct: float = Field(90.0, description="FSx throughput / provisioned >= this")
    fs_saturated_fraction: float = Field(
        0.8, description="share of the window's datapoints at/above the saturation level to call it sustained"
    )
    openzfs_iops_utilization_pct: float = Field(80.0, description="FileServerDiskIopsUtilization >= this")
    # FSx for Lustre beyond throughput (new; the runbook has none). Metadata: MetadataOperations per
    # second against the most the metadata configuration supports, 2 file creates/opens/closes per
    # second per provisioned Metadata IOPS (AWS, "Amazon FSx for Lustre performance", metadata
    # performance); the level mirrors openzfs_iops_utilization_pct, sustained by fs_saturated_fraction.
    fs_metadata_saturated_pct: float = Field(
        80.0, description="MetadataOperations/s >= this % of 2 x Metadata IOPS -> metadata-bound (new)"
    )
    # OST balance: the hottest OST (Maximum) against the mean OST (Average) of DataReadBytes /
    # DataWriteBytes, counted only while the hottest OST is at fs_throughput_saturated_pct of its
    # share of provisioned throughput (provisioned / OST count): one OST is then the limit.
    fs_ost_hot_ratio: float = Field(2.0, description="hottest OST / mean OST >= this ... (new)")
    fs_ost_hot_fraction: float = Field(
        0.25, description="... for >= this share of the window's datapoints -> one OST hot (new)"
    )
    # Fleet (new): robust z-score = |x - median| / (1.4826 * MAD)
    fleet_outlier_robust_z: float = 3.5
    fleet_outlier_min_relative_deviation: float = Field(
        0.05, description="ignore outliers closer than this fraction to the median (uniform fleets)"
    )
    # Metrics over the alarm window (metrics.*, new: judged on the exporters' series, see metrics/judge.py)
    metrics_min_minutes: float = Field(
        5.0, description="a deviation must last at least this long (minutes) to be a finding"
    )
    metrics_clock_low_ratio: float = Field(
        0.85, description="node's slowest-GPU SM clock / fleet median below this while busy -> CONCERN"
    )
    metrics_throttle_share: float = Field(
        0.10, description="power / thermal violation time above this share of the span -> named as the cause"
    )
    metrics_gpu_temperature_c: float = Field(88.0, description="hottest GPU >= this, sustained -> CONCERN")
    metrics_idle_util_pct: float = Field(5.0, description="every GPU of a node below this % -> idle")
    metrics_busy_util_pct: float = Field(
        50.0, description="a node (or the fleet) at or above this % in the baseline -> was running the job"
    )
    metrics_pcie_replays_per_minute: float = Field(
        8.0, description="PCIe replays per minute above this, sustained -> CONCERN (DCGM's PCIe watch limit)"
    )
    metrics_efa_retrans_fleet_ratio: float = Field(
        10.0, description="EFA retransmits (or receive drops) / fleet median at or above this -> CONCERN"
    )
    metrics_efa_retrans_min_per_s: float = Field(
        1.0, description="... and at least this many packets per second (noise floor)"
    )
    metrics_network_low_ratio: float = Field(
        0.5, description="EFA bytes / fleet median below this while the fleet moves data -> CONCERN"
    )
    metrics_network_min_bytes_per_s: float = Field(
        1e6, description="the fleet median must move at least this many bytes/s for network_low to apply"
    )
    metrics_iowait_pct: float = Field(20.0, description="CPU iowait above this %, sustained -> CONCERN")
    metrics_io_pressure_pct: float = Field(
        20.0, description="PSI io 'some' (time waiting on I/O) above this %, sustained -> CONCERN"
    )
    metrics_fleet_share: float = Field(
        0.5, description="this share of the nodes or more flagged at once -> one fleet finding (shared cause)"
    )
    # NCCL pairwise
    nccl_pair_slow_pct: float = Field(5.0, description="pair busbw more than this % below the run mean")
    nccl_drain_pct: float = Field(20.0, description="pair busbw more than this % below the median")
    nccl_suspect_share: float = Field(0.5, description="share of a node's pairs that must be slow")
    nccl_baseline_ratio: float = Field(0.9, description="median busbw below this x published -> CONCERN")
    # Straggler from the job's own timings (new: this project's choices, see straggler/analysis.py).
    # A collective is "waited on" when its mean duration exceeds the shortest by both of these.
    straggler_min_wait_ms: float = Field(
        1.0, description="a collective / report counts as waiting on a latecomer from this many ms"
    )
    straggler_min_wait_ratio: float = Field(
        0.10, description="... and from this fraction of its mean duration (noise between ranks stays below)"
    )
    straggler_share: float = Field(
        0.5, description="latecomer of at least this share of the waited-on collectives -> named"
    )
    straggler_min_collectives: int = Field(
        20, description="at least this many waited-on collectives before a straggler is named"
    )
    straggler_concern_loss_pct: float = Field(
        1.0, description="share of the others' time lost waiting >= this % -> CONCERN (below: INFO)"
    )
    # nvidia-resiliency-ext's own default (attribution/straggler/reporting.py gpu_rel_threshold=0.75)
    straggler_min_relative_score: float = Field(
        0.75, description="nvidia-resiliency-ext relative GPU score below this -> straggler"
    )
    # Not a threshold: the hourly price the operator pays per instance type (HyperPod bills ml.*
    # rates that differ from EC2's; none is built in), for the dollar figure of GPU-hours lost.
    instance_hour_price_usd: tuple[tuple[str, float], ...] = Field(
        (), description='instance type -> USD per instance-hour, e.g. {"ml.p5.48xlarge": 55.0}'
    )

    @field_validator("instance_hour_price_usd", mode="before")
    @classmethod
    def _prices(cls, value: object) -> object:
        """Written as an object of instance type -> price; kept as pairs (the model stays hashable)."""
        if isinstance(value, dict):
            return tuple(sorted(value.items()))
        return value

    def price_per_hour(self, instance_type: str | None) -> float | None:
        """The configured hourly price of an instance type, with or without its `ml.` prefix."""
        name = (instance_type or "").strip()
        prices = dict(self.instance_hour_price_usd)
        return prices.get(name) or prices.get(name.removeprefix("ml.")) or prices.get(f"ml.{name}")

    # History (new): a key figure moving more than this fraction between runs is reported as drift
    history_drift_ratio: float = 0.10
    # Run history (new). A fault that is back after the reboot NVIDIA's Xid catalog and HyperPod's
    # repair prescribe is hardware: the second occurrence in the window escalates to replacement.
    repeat_offender_runs: int = Field(
        2, ge=2, description="runs in the window with the same concern on a node -> repeat offender"
    )
    repeat_offender_window_days: int = Field(30, ge=1, le=366, description="repeat-offender look-back")
    # Slow pairs explained by the network layers (new): the share of slow pairs that cross one
    # boundary, and of that boundary's pairs that are slow, before the fabric is named, not a node.
    fabric_boundary_share: float = Field(
        0.8, gt=0, le=1, description="slow pairs crossing one layer boundary / all slow pairs >= this"
    )
    fabric_crossing_slow_share: float = Field(
        0.6, gt=0, le=1, description="... and slow pairs / all pairs across that boundary >= this"
    )
    # After a repair (new): the node's key figure this far below the fleet median -> still below the fleet
    repair_below_fleet_pct: float = Field(5.0, gt=0, lt=100, description="% below the fleet median")
    # Urgency (new): an Xid whose last line is older than this is a past event, not the job failing
    # now: ranked 'watch' (by age) unless a current signal (GPU missing, rows pending) says otherwise.
    event_stale_days: float = Field(
        7.0, gt=0, description="Xid / SXid last seen more than this many days before the run -> watch tier"
    )


DEFAULT_THRESHOLDS = Thresholds()


#: A thresholds file is a few dozen keys: 1 MiB is generous and keeps `/dev/zero` from filling memory.
THRESHOLDS_FILE_MAX_BYTES = 1024 * 1024


def load_thresholds(path: str | Path | None) -> Thresholds:
    """Defaults, overridden by the keys of a JSON or TOML file when one is given."""
    if path is None:
        return DEFAULT_THRESHOLDS
    file = Path(path)
    try:
        text = read_bounded(file, THRESHOLDS_FILE_MAX_BYTES, "thresholds file").decode("utf-8")
        data = tomllib.loads(text) if file.suffix.lower() == ".toml" else json.loads(text)
    except FileTooLarge as exc:
        raise ThresholdsError(str(exc)) from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ThresholdsError(f"{file}: cannot read thresholds: {exc}") from exc
    if not isinstance(data, dict):
        raise ThresholdsError(f"{file}: thresholds must be an object of key/value pairs")
    try:
        return Thresholds.model_validate({**DEFAULT_THRESHOLDS.model_dump(), **data})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ThresholdsError(f"{file}: invalid threshold {where}: {first['msg']}") from exc
