"""A simulated FSx for Lustre file system's CloudWatch metrics, published the way FSx publishes them.

FSx for Lustre "emits a data point per disk per minute" under the FileSystemId dimension alone
(FSx for Lustre User Guide, "Monitoring with Amazon CloudWatch", archived in
awsdocs/amazon-fsx-lustre-user-guide doc_source/monitoring-cloudwatch.md @ c55836f), which is why
`Sum` is the file system, `Maximum`/`Minimum`/`Average` are one OST and `SampleCount` is the
number of OSTs. This module publishes each minute's per-OST values into moto's CloudWatch (as
statistic sets, see `put_lustre_osts`), so GetMetricData computes those statistics itself; the
integration tests check that this gives what per-OST datapoints give.

What is a model here, not a recording (label it "simulated" where shown): how the load is split
over the OSTs (`weights`), the metadata operation rate, the average I/O size, how full each OST is
and ClientConnections (one connection per client per server: an assumption).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hyperpod_perf_dev.sim.lustre_load import lustre_load

GIB = 1024**3
MIB = 1024**2
NAMESPACE = "AWS/FSx"
#: PutMetricData takes at most 1,000 datums per call.
PUT_BATCH = 1000


@dataclass(frozen=True)
class LustreShape:
    """How the simulated file system is laid out and loaded (beyond its aggregate throughput)."""

    osts: int = 4
    #: Share of each minute's bytes per OST (normalised); None: even, with a little jitter.
    weights: Sequence[float] | None = None
    metadata_ops_per_s: float = 1800.0
    io_size_bytes: int = MIB
    used_fraction: float = 0.55  # the mean OST's used share of its size
    used_spread: float = 0.06  # +/- around it, OST by OST
    clients: int = 8


def alarm_tail_load(
    minutes: int,
    provisioned_bytes_per_s: float,
    utilization: float,
    *,
    tail_minutes: int,
    tail_utilization: float,
) -> list[tuple[float, float]]:
    """The demo's load: `lustre_load` for most of the window, then `tail_minutes` at
    `tail_utilization` (what the alarm saw when it fired), the whole still averaging `utilization`."""
    if tail_minutes <= 0 or tail_minutes >= minutes:
        return lustre_load(minutes, provisioned_bytes_per_s, utilization)
    head = minutes - tail_minutes
    head_mean = (utilization * minutes - tail_utilization * tail_minutes) / head
    samples = lustre_load(head, provisioned_bytes_per_s, max(head_mean, 0.01))
    total = tail_utilization * provisioned_bytes_per_s
    jitter = [0.006 * (1 if i % 2 else -1) for i in range(tail_minutes)]
    if tail_minutes % 2:
        jitter[-1] = 0.0  # +/- pairs cancel: the tail's mean is exactly tail_utilization
    return samples + [(total * (1 + j) * 0.85, total * (1 + j) * 0.15) for j in jitter]


def _weights(shape: LustreShape, rng: random.Random) -> list[float]:
    raw = list(shape.weights) if shape.weights else [1 + rng.uniform(-0.08, 0.08) for _ in range(shape.osts)]
    total = sum(raw)
    return [w / total for w in raw]


def put_lustre_osts(
    client: Any,
    fs_id: str,
    start: datetime,
    samples: Sequence[tuple[float, float]],
    *,
    storage_capacity_gib: int,
    shape: LustreShape = LustreShape(),
    seed: int = 7,
) -> None:
    """Each minute's per-OST datapoints of data bytes and operations, metadata operations and free
    capacity, sent as one statistic set per metric (PutMetricData StatisticValues: the SampleCount,
    Sum, Minimum and Maximum of the OSTs' datapoints, which CloudWatch aggregates exactly as it
    aggregates the datapoints themselves, in a fraction of the calls); ClientConnections once a minute."""
    # bandit B311: simulated values (seeded, reproducible), not a secret
    rng = random.Random(seed)  # nosec B311
    ost_bytes = storage_capacity_gib * GIB / shape.osts
    used = [
        shape.used_fraction + rng.uniform(-shape.used_spread, shape.used_spread) for _ in range(shape.osts)
    ]
    free = [ost_bytes * (1 - u) for u in used]
    dims = [{"Name": "FileSystemId", "Value": fs_id}]
    data: list[dict[str, Any]] = []

    def per_ost(metric: str, stamp: datetime, values: Sequence[float], unit: str) -> None:
        stats = {
            "SampleCount": len(values),
            "Sum": sum(values),
            "Minimum": min(values),
            "Maximum": max(values),
        }
        data.append(
            {
                "MetricName": metric,
                "Dimensions": dims,
                "Timestamp": stamp,
                "StatisticValues": stats,
                "Unit": unit,
            }
        )

    for minute, (read, write) in enumerate(samples):
        stamp = start + timedelta(minutes=minute)
        weights = _weights(shape, rng)
        metadata = shape.metadata_ops_per_s * 60 * (1 + rng.uniform(-0.1, 0.1))
        reads = [read * 60 * w for w in weights]
        writes = [write * 60 * w for w in weights]
        per_ost("DataReadBytes", stamp, reads, "Bytes")
        per_ost("DataWriteBytes", stamp, writes, "Bytes")
        per_ost("DataReadOperations", stamp, [b / shape.io_size_bytes for b in reads], "Count")
        per_ost("DataWriteOperations", stamp, [b / shape.io_size_bytes for b in writes], "Count")
        per_ost("MetadataOperations", stamp, [metadata / shape.osts] * shape.osts, "Count")
        per_ost("FreeDataStorageCapacity", stamp, free, "Bytes")
        connections = float(shape.clients * (shape.osts + 1))
        data.append(
            {
                "MetricName": "ClientConnections",
                "Dimensions": dims,
                "Timestamp": stamp,
                "Value": connections,
                "Unit": "Count",
            }
        )
    for offset in range(0, len(data), PUT_BATCH):
        client.put_metric_data(Namespace=NAMESPACE, MetricData=data[offset : offset + PUT_BATCH])
