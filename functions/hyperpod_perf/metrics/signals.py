"""Every series the metrics stage reads, with the exporter that publishes it and its source.

Names are the exporters' own (never invented here):

- NVIDIA dcgm-exporter, `etc/default-counters.csv` (NVIDIA/dcgm-exporter): DCGM_FI_DEV_SM_CLOCK
  (gauge, MHz), DCGM_FI_DEV_GPU_TEMP (gauge, C), DCGM_FI_DEV_POWER_USAGE (gauge, W),
  DCGM_FI_DEV_GPU_UTIL (gauge, %), DCGM_FI_DEV_XID_ERRORS (gauge: the value of the last Xid),
  DCGM_FI_DEV_PCIE_REPLAY_COUNTER (counter). The NVLink error counters
  DCGM_FI_DEV_NVLINK_{CRC_FLIT,CRC_DATA,REPLAY,RECOVERY}_ERROR_COUNT_TOTAL are commented out in the
  defaults: a cluster without them is reported as not covered, never as healthy.
- HyperPod's Slurm observability lifecycle scripts (aws-samples/awsome-distributed-training,
  `1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/observability/
  dcgm_metrics_config/dcgm-metrics-basic.csv`) add DCGM_FI_DEV_POWER_VIOLATION and
  DCGM_FI_DEV_THERMAL_VIOLATION (counters of microseconds spent throttled). DCGM_FI_DEV_CLOCKS_EVENT_REASONS
  (formerly DCGM_FI_DEV_CLOCK_THROTTLE_REASONS) is a bitmask of NVML's clocks-event reasons.
- The EFA node exporter (awsome-distributed-training `4.validation_and_observability/
  3.efa-node-exporter`, a node_exporter fork, collector `amazon_efa_linux.go`):
  `node_amazonefa_<hw_counter>{device,port}` counters — rx_bytes, tx_bytes, rx_drops, and, from EFA
  drivers that publish them, retrans_pkts, retrans_timeout_events, impaired_remote_conn_events,
  unresponsive_remote_events (the sysfs hw_counters of the real p5 fixture in fixtures/real/efa-sysfs).
- node_exporter (prometheus/node_exporter): node_cpu_seconds_total{mode="iowait"} and
  node_pressure_io_waiting_seconds_total (PSI, /proc/pressure/io).
- The Slurm exporter HyperPod installs on the controller (SckyzO/slurm_exporter,
  internal/collector/node.go): slurm_node_status{node,status,partition} = 1, status being sinfo's
  long state name (allocated, idle, mixed, drained, down, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

#: Labels that can name the node a series belongs to, whichever exporter and scrape config wrote it:
#: dcgm-exporter's `Hostname`, HyperPod's OTEL relabel of `instance` to the host name, the Slurm
#: exporter's `node`, kube-prometheus' `node` / `kubernetes_node`, and an `instance_id` where the
#: collector adds EC2 metadata. Grouping by absent labels is harmless in PromQL (they are empty).
NODE_LABELS: tuple[str, ...] = ("instance_id", "Hostname", "node", "kubernetes_node", "host", "instance")


class Exporter(StrEnum):
    DCGM = "dcgm-exporter"
    EFA = "efa-node-exporter"
    NODE = "node_exporter"
    SLURM = "slurm_exporter"


class Kind(StrEnum):
    LEVEL = "level"  # a gauge read as is
    RATE = "rate"  # a counter read as a per-second rate over the rate range
    STATE = "state"  # a 0/1 series whose labels carry the state


@dataclass(frozen=True)
class Signal:
    name: str
    exporter: Exporter
    kind: Kind
    #: PromQL with `{by}` (the node labels) and `{range}` (the rate range) to fill in.
    template: str
    #: The metric names it reads, for the "exporter missing" note.
    metrics: tuple[str, ...]
    unit: str
    #: Read by the judge only when present: an absent optional series is a coverage note, not an error.
    optional: bool = False

    @property
    def summed(self) -> bool:
        """A template with `{metric}` is one query per metric, the answers added per node and step.

        Why not one query: `rate({__name__=~"a|b"}[5m])` drops the names, so a's and b's series of
        one device collide ("vector cannot contain metrics with the same labelset", seen on the real
        server), and `rate(a) or rate(b)` keeps only a where both exist; `a + b` drops a node that
        lacks one of them (older EFA drivers publish fewer counters).
        """
        return "{metric}" in self.template

    def promqls(self, rate_range_seconds: int) -> list[str]:
        by = ", ".join(NODE_LABELS)
        fill = {"by": by, "range": f"{rate_range_seconds}s"}
        if self.summed:
            return [self.template.format(metric=m, **fill) for m in self.metrics]
        return [self.template.format(**fill)]


def _sum_rate(metric: str) -> str:
    return f"sum by ({{by}}) (rate({metric}[{{range}}]))"


_EFA_ERROR_EVENTS = (
    "node_amazonefa_retrans_timeout_events",
    "node_amazonefa_impaired_remote_conn_events",
    "node_amazonefa_unresponsive_remote_events",
)
_NVLINK_ERRORS = (
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
)

SIGNALS: tuple[Signal, ...] = (
    # The slowest GPU of the node sets its pace in every collective: min over its GPUs.
    Signal("sm_clock", Exporter.DCGM, Kind.LEVEL, "min by ({by}) (DCGM_FI_DEV_SM_CLOCK)",
           ("DCGM_FI_DEV_SM_CLOCK",), "MHz"),
    Signal("gpu_temp", Exporter.DCGM, Kind.LEVEL, "max by ({by}) (DCGM_FI_DEV_GPU_TEMP)",
           ("DCGM_FI_DEV_GPU_TEMP",), "C"),
    Signal("power", Exporter.DCGM, Kind.LEVEL, "sum by ({by}) (DCGM_FI_DEV_POWER_USAGE)",
           ("DCGM_FI_DEV_POWER_USAGE",), "W"),
    # Idle means every GPU of the node idle: max over its GPUs.
    Signal("gpu_util", Exporter.DCGM, Kind.LEVEL, "max by ({by}) (DCGM_FI_DEV_GPU_UTIL)",
           ("DCGM_FI_DEV_GPU_UTIL",), "%"),
    Signal("xid", Exporter.DCGM, Kind.LEVEL, "max by ({by}) (DCGM_FI_DEV_XID_ERRORS)",
           ("DCGM_FI_DEV_XID_ERRORS",), "code"),
    # Microseconds throttled per second / 1e6: the share of the time the worst GPU was capped.
    Signal("power_violation", Exporter.DCGM, Kind.RATE,
           "max by ({by}) (rate(DCGM_FI_DEV_POWER_VIOLATION[{range}])) / 1e6",
           ("DCGM_FI_DEV_POWER_VIOLATION",), "share", optional=True),
    Signal("thermal_violation", Exporter.DCGM, Kind.RATE,
           "max by ({by}) (rate(DCGM_FI_DEV_THERMAL_VIOLATION[{range}])) / 1e6",
           ("DCGM_FI_DEV_THERMAL_VIOLATION",), "share", optional=True),
    # OR of every GPU's bitmask is not expressible in PromQL; the max shows the worst GPU's reasons
    # whenever one GPU carries all of them (the usual case: a node-wide power or thermal cap).
    # Either name, selected by __name__: the aggregation drops the name, and `a or b` cost the real
    # server 3.0 s against 1.4 s for this at 1,024 nodes (Prometheus 2.42, 240 steps).
    Signal("clock_reasons", Exporter.DCGM, Kind.LEVEL,
           'max by ({by}) ({{__name__=~"DCGM_FI_DEV_CLOCKS_EVENT_REASONS'
           '|DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"}})',
           ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"), "bitmask",
           optional=True),
    Signal("pcie_replay", Exporter.DCGM, Kind.RATE,
           "max by ({by}) (rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[{range}])) * 60",
           ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER",), "per minute"),
    Signal("nvlink_errors", Exporter.DCGM, Kind.RATE,
           "sum by ({by}) (rate({metric}[{range}])) * 60", _NVLINK_ERRORS, "per minute", optional=True),
    Signal("efa_retrans", Exporter.EFA, Kind.RATE, _sum_rate("node_amazonefa_retrans_pkts"),
           ("node_amazonefa_retrans_pkts",), "packets/s", optional=True),
    Signal("efa_errors", Exporter.EFA, Kind.RATE,
           "sum by ({by}) (rate({metric}[{range}]))", _EFA_ERROR_EVENTS, "events/s", optional=True),
    Signal("efa_rx_drops", Exporter.EFA, Kind.RATE, _sum_rate("node_amazonefa_rx_drops"),
           ("node_amazonefa_rx_drops",), "packets/s"),
    Signal("efa_bytes", Exporter.EFA, Kind.RATE,
           "sum by ({by}) (rate({metric}[{range}]))",
           ("node_amazonefa_tx_bytes", "node_amazonefa_rx_bytes"), "bytes/s"),
    # Share of CPU time in iowait, averaged over the node's CPUs, in percent.
    Signal("iowait", Exporter.NODE, Kind.RATE,
           "avg by ({by}) (rate(node_cpu_seconds_total{{mode=\"iowait\"}}[{range}])) * 100",
           ("node_cpu_seconds_total",), "%"),
    Signal("io_pressure", Exporter.NODE, Kind.RATE,
           "max by ({by}) (rate(node_pressure_io_waiting_seconds_total[{range}])) * 100",
           ("node_pressure_io_waiting_seconds_total",), "%", optional=True),
    # Kept per state: the node state is a label, not a value.
    Signal("slurm_state", Exporter.SLURM, Kind.STATE,
           "max by (node, status) (slurm_node_status)",
           ("slurm_node_status",), "state", optional=True),
)  # fmt: skip

BY_NAME: dict[str, Signal] = {s.name: s for s in SIGNALS}

#: NVML clocks-event reason bits (nvml.h nvmlClocksEventReason*): the ones that mean a slowdown.
CLOCK_EVENT_REASONS: dict[int, str] = {
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}


def clock_reason_names(mask: int) -> list[str]:
    return [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]
