"""FSx rules (runbook § B): is the file system saturated, or is the workload using it badly?

The runbook's two branches:
- saturated: CloudWatch utilization near 100% through the workload window -> the customer
  scales the file system (Lustre throughput = StorageCapacity (TiB) x PerUnitStorageThroughput);
- headroom, yet the nodes are I/O bound (high iowait / IO pressure) -> the I/O pattern is
  inefficient and the customer changes the application (DataLoader, checkpointing, small files).

"Sustained" = at least `fs_saturated_fraction` of the window's datapoints at or above
`fs_throughput_saturated_pct`, so a single checkpoint burst is not called saturation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hyperpod_perf.domain.cluster import MB, FileSystemInfo, FileSystemType, MetricSeries
from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

MAX_LISTED_NODES = 20

IO_PATTERN_ADVICE = (
    "The file system has headroom but the nodes wait on I/O: change the I/O pattern. "
    "DataLoader: raise num_workers, set pin_memory=True and persistent_workers=True. "
    "Checkpoints: save asynchronously and sharded (torch.distributed.checkpoint.async_save with FSDP "
    "SHARDED_STATE_DICT); FULL_STATE_DICT funnels everything through rank 0. "
    "Millions of small files: pack them into WebDataset/tar shards, or use FSx for OpenZFS or the "
    "node's NVMe scratch (/opt/dlami/nvme) - Lustre is built for large sequential I/O."
)


def _series(metrics: Sequence[MetricSeries], fs_id: str, metric: str, stat: str) -> MetricSeries | None:
    return next(
        (s for s in metrics if s.file_system_id == fs_id and s.metric == metric and s.stat == stat),
        None,
    )


def lustre_utilization(fs: FileSystemInfo, metrics: Sequence[MetricSeries]) -> list[tuple[Any, float, float]]:
    """(timestamp, MB/s, utilization %) per period: (read Sum + write Sum) / period vs provisioned."""
    provisioned = fs.provisioned_throughput_mbps
    read = _series(metrics, fs.file_system_id, "DataReadBytes", "Sum")
    write = _series(metrics, fs.file_system_id, "DataWriteBytes", "Sum")
    if read is None and write is None:
        return []
    period = (read or write).period_s  # type: ignore[union-attr]
    read_points = read.points() if read else {}
    write_points = write.points() if write else {}
    rows = []
    for moment in sorted(set(read_points) | set(write_points)):
        mbps = (read_points.get(moment, 0.0) + write_points.get(moment, 0.0)) / period / MB
        rows.append((moment, mbps, 100.0 * mbps / provisioned if provisioned else float("nan")))
    return rows


def _openzfs_utilization(fs: FileSystemInfo, metrics: Sequence[MetricSeries]) -> list[tuple[Any, float]]:
    """Per period, the higher of disk-throughput and network-throughput utilization (Average, %)."""
    disk = _series(metrics, fs.file_system_id, "FileServerDiskThroughputUtilization", "Average")
    network = _series(metrics, fs.file_system_id, "NetworkThroughputUtilization", "Average")
    disk_points = disk.points() if disk else {}
    network_points = network.points() if network else {}
    return [
        (moment, max(disk_points.get(moment, 0.0), network_points.get(moment, 0.0)))
        for moment in sorted(set(disk_points) | set(network_points))
    ]


def _sustained(values: Sequence[float], level: float, fraction: float) -> tuple[bool, float]:
    if not values:
        return False, 0.0
    share = sum(1 for v in values if v >= level) / len(values)
    return share >= fraction, share


def throughput(
    fs: FileSystemInfo,
    metrics: Sequence[MetricSeries],
    io_bound_nodes: Mapping[str, dict[str, Any]] | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> list[Finding]:
    """fs.throughput for one file system; `io_bound_nodes` are nodes (using it) in high iowait / PSI."""
    io_bound = dict(io_bound_nodes or {})
    level, fraction = thresholds.fs_throughput_saturated_pct, thresholds.fs_saturated_fraction
    threshold = (
        f"read+write throughput / provisioned >= {level:g}% for >= {fraction:.0%} of the window's datapoints"
    )
    evidence: dict[str, Any] = {"file_system_id": fs.file_system_id, "type": fs.type}
    if fs.type == FileSystemType.LUSTRE:
        rows = lustre_utilization(fs, metrics)
        provisioned = fs.provisioned_throughput_mbps
        evidence["provisioned_mbps"] = round(provisioned, 1) if provisioned else None
        evidence["provisioned_formula"] = fs.provisioned_formula()
        if not rows:
            return [_no_data(fs, "DataReadBytes/DataWriteBytes", evidence)]
        throughputs = [r[1] for r in rows]
        evidence.update(
            datapoints=len(rows),
            period_s=_period(metrics, fs),
            mean_mbps=round(sum(throughputs) / len(throughputs), 1),
            peak_mbps=round(max(throughputs), 1),
        )
        if not provisioned:
            return [
                _finding(
                    Severity.INFO,
                    f"{fs.file_system_id}: provisioned throughput unknown (deployment {fs.deployment_type}); "
                    f"measured peak {evidence['peak_mbps']} MB/s",
                    evidence,
                    threshold,
                )
            ]
        utilizations = [r[2] for r in rows]
    elif fs.type == FileSystemType.OPENZFS:
        zfs_rows = _openzfs_utilization(fs, metrics)
        evidence["throughput_capacity_mbps"] = fs.throughput_capacity
        if not zfs_rows:
            return [
                _no_data(fs, "FileServerDiskThroughputUtilization/NetworkThroughputUtilization", evidence)
            ]
        utilizations = [r[1] for r in zfs_rows]
        evidence.update(datapoints=len(zfs_rows), period_s=_period(metrics, fs))
    else:
        return []
    saturated, share = _sustained(utilizations, level, fraction)
    evidence.update(
        mean_utilization_pct=round(sum(utilizations) / len(utilizations), 1),
        peak_utilization_pct=round(max(utilizations), 1),
        share_at_or_above_pct=round(share, 3),
    )
    if io_bound:
        evidence["io_bound_nodes"] = dict(sorted(io_bound.items())[:MAX_LISTED_NODES])
        evidence["io_bound_node_count"] = len(io_bound)
    if saturated:
        return [
            _finding(
                Severity.CONCERN,
                f"{fs.file_system_id} is saturated: throughput >= {level:g}% of provisioned for "
                f"{share:.0%} of the window (mean {evidence['mean_utilization_pct']}%)",
                evidence,
                threshold,
                next_step=_scale_advice(fs),
            )
        ]
    if io_bound:
        pattern = io_pattern(fs, metrics)
        evidence.update(pattern)
        return [
            _finding(
                Severity.CONCERN,
                f"inefficient I/O pattern: {fs.file_system_id} has headroom (mean "
                f"{evidence['mean_utilization_pct']}%, peak {evidence['peak_utilization_pct']}% of "
                f"provisioned) but {len(io_bound)} node(s) are I/O bound{_pattern_text(pattern)}",
                evidence,
                threshold,
                next_step=IO_PATTERN_ADVICE,
            )
        ]
    return [
        _finding(
            Severity.OK,
            f"{fs.file_system_id} has headroom: mean {evidence['mean_utilization_pct']}%, peak "
            f"{evidence['peak_utilization_pct']}% of provisioned throughput",
            evidence,
            threshold,
        )
    ]


def io_pattern(fs: FileSystemInfo, metrics: Sequence[MetricSeries]) -> dict[str, Any]:
    """What the I/O looked like over the window: the average size of a data operation (bytes over
    operations, the Sum of each) and the share of metadata among all client operations."""

    def total(metric: str) -> float | None:
        series = _series(metrics, fs.file_system_id, metric, "Sum")
        return sum(series.values) if series and series.values else None

    data_bytes = [total("DataReadBytes"), total("DataWriteBytes")]
    data_ops = [total("DataReadOperations"), total("DataWriteOperations")]
    meta_ops = total("MetadataOperations")
    out: dict[str, Any] = {}
    ops = sum(x for x in data_ops if x)
    if ops:
        out["average_io_kib"] = round(sum(x for x in data_bytes if x) / ops / 1024, 1)
    if meta_ops is not None and (ops or meta_ops):
        out["metadata_share_of_operations_pct"] = round(100.0 * meta_ops / (ops + meta_ops), 1)
    return out


def _pattern_text(pattern: dict[str, Any]) -> str:
    parts = []
    if "average_io_kib" in pattern:
        parts.append(f"average I/O {pattern['average_io_kib']:g} KiB")
    if "metadata_share_of_operations_pct" in pattern:
        parts.append(f"metadata {pattern['metadata_share_of_operations_pct']:g}% of client operations")
    return f" ({', '.join(parts)})" if parts else ""


def _scale_advice(fs: FileSystemInfo) -> str:
    if fs.type == FileSystemType.LUSTRE:
        return (
            "Scale the file system (a cost decision): provisioned throughput is "
            f"{fs.provisioned_formula()}. "
            "Raise StorageCapacity (`aws fsx update-file-system --file-system-id "
            f"{fs.file_system_id} --storage-capacity <GiB>`) or, on persistent SSD deployments, "
            "PerUnitStorageThroughput (`--lustre-configuration PerUnitStorageThroughput=<MB/s/TiB>`); "
            "both changes are made online."
        )
    return (
        f"Scale the file system (a cost decision): raise the provisioned throughput capacity "
        f"(now {fs.throughput_capacity} MB/s) or SSD IOPS (`aws fsx update-file-system --file-system-id "
        f"{fs.file_system_id} --open-zfs-configuration ThroughputCapacity=<MB/s>`)."
    )


def openzfs_iops(
    fs: FileSystemInfo, metrics: Sequence[MetricSeries], thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> list[Finding]:
    """fs.openzfs_iops: FileServerDiskIopsUtilization >= 80% sustained -> CONCERN."""
    if fs.type != FileSystemType.OPENZFS:
        return []
    level, fraction = thresholds.openzfs_iops_utilization_pct, thresholds.fs_saturated_fraction
    threshold = (
        f"FileServerDiskIopsUtilization (Average) >= {level:g}% for >= {fraction:.0%} of the datapoints"
    )
    average = _series(metrics, fs.file_system_id, "FileServerDiskIopsUtilization", "Average")
    maximum = _series(metrics, fs.file_system_id, "FileServerDiskIopsUtilization", "Maximum")
    evidence: dict[str, Any] = {
        "file_system_id": fs.file_system_id,
        "iops_mode": fs.iops_mode,
        "iops": fs.iops,
    }
    if average is None or not average.values:
        return [_no_data(fs, "FileServerDiskIopsUtilization", evidence, check="fs.openzfs_iops")]
    saturated, share = _sustained(average.values, level, fraction)
    evidence.update(
        datapoints=len(average.values),
        mean_utilization_pct=round(sum(average.values) / len(average.values), 1),
        peak_utilization_pct=round(max(maximum.values if maximum and maximum.values else average.values), 1),
        share_at_or_above_pct=round(share, 3),
    )
    if saturated:
        return [
            _finding(
                Severity.CONCERN,
                f"{fs.file_system_id} disk IOPS utilization >= {level:g}% for {share:.0%} of the window",
                evidence,
                threshold,
                check="fs.openzfs_iops",
                next_step=(
                    "Raise the provisioned SSD IOPS (DiskIopsConfiguration Mode=USER_PROVISIONED) or the "
                    "throughput capacity, or reduce small random I/O in the workload."
                ),
            )
        ]
    return [
        _finding(
            Severity.OK,
            f"{fs.file_system_id} disk IOPS utilization mean {evidence['mean_utilization_pct']}%, "
            f"peak {evidence['peak_utilization_pct']}%",
            evidence,
            threshold,
            check="fs.openzfs_iops",
        )
    ]


def _period(metrics: Sequence[MetricSeries], fs: FileSystemInfo) -> int | None:
    return next((s.period_s for s in metrics if s.file_system_id == fs.file_system_id), None)


def _no_data(
    fs: FileSystemInfo, metric: str, evidence: dict[str, Any], check: str = "fs.throughput"
) -> Finding:
    return _finding(
        Severity.INFO,
        f"{fs.file_system_id}: no {metric} datapoints in the window (idle, or metrics not published)",
        evidence,
        None,
        check=check,
    )


def _finding(
    severity: Severity,
    summary: str,
    evidence: dict[str, Any],
    threshold: str | None,
    *,
    check: str = "fs.throughput",
    next_step: str | None = None,
) -> Finding:
    return Finding(
        check=check,
        severity=severity,
        section=RunbookSection.FILE_SYSTEM,
        summary=summary,
        evidence=dict(evidence),
        threshold=threshold,
        next_step=next_step,
    )


def evaluate(
    file_systems: Sequence[FileSystemInfo],
    metrics: Sequence[MetricSeries],
    io_bound_by_fs: Mapping[str, Mapping[str, dict[str, Any]]] | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> list[Finding]:
    findings: list[Finding] = []
    for fs in file_systems:
        io_bound = (io_bound_by_fs or {}).get(fs.file_system_id)
        findings.extend(throughput(fs, metrics, io_bound, thresholds))
        findings.extend(openzfs_iops(fs, metrics, thresholds))
    return findings
