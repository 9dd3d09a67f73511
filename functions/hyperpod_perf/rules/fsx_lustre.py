"""FSx for Lustre beyond throughput (runbook § B): metadata, the hottest OST, the fullest OST.

A Lustre file system can be slow with its aggregate throughput well under provisioned:

- metadata-bound: every open, create, stat and delete goes to the metadata server, whose rate is
  set by the file system's Metadata IOPS (LustreConfiguration.MetadataConfiguration);
- one OST hot: a file striped over one OST (the default for files under the layout's first
  component) funnels its I/O through one storage server while the others idle;
- one OST full: Lustre fails a write with ENOSPC when the OST holding the object is full, even
  with free space elsewhere.

The figures come from the same GetMetricData call as the throughput (aws/cloudwatch.py): for
DataReadBytes/DataWriteBytes `Maximum` is the hottest OST, `Average` the mean OST and
`SampleCount` the number of OSTs; FreeDataStorageCapacity's `Minimum` is the fullest OST's free
space ("Amazon FSx for Lustre metrics and dimensions", FSx for Lustre User Guide).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hyperpod_perf.domain.cluster import MB, FileSystemInfo, FileSystemType, MetricSeries
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.rules.fsx import _finding, _no_data, _series, _sustained
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

GIB = 1024**3
_EMPTY = MetricSeries(file_system_id="", metric="", stat="", period_s=60)

#: Operations per second that one provisioned Metadata IOPS supports, by kind of operation
#: (FSx for Lustre User Guide, "Amazon FSx for Lustre performance" § metadata performance, and
#: "Managing metadata performance"). MetadataOperations does not say which kinds it counts, so the
#: verdict judges against the most generous rate (2/s, file create/open/close): at 80 % of it the
#: metadata server is busy whatever the mix; deletes and directory operations saturate sooner.
METADATA_OPS_PER_IOPS: dict[str, float] = {
    "file create/open/close": 2.0,
    "file delete": 1.0,
    "directory create/rename": 0.1,
    "directory delete": 0.2,
}
CEILING_OPS_PER_IOPS = max(METADATA_OPS_PER_IOPS.values())

#: AUTOMATIC mode (SSD): Metadata IOPS by storage capacity, (capacity at most GiB, IOPS); from
#: 48,000 GiB up, 12,000 IOPS per 24,000 GiB (same pages). Valid SSD capacities are 1,200 GiB,
#: 2,400 GiB and multiples of 2,400 GiB, so each row covers every valid capacity up to its bound.
AUTOMATIC_METADATA_IOPS: tuple[tuple[int, int], ...] = (
    (1200, 1500),
    (2400, 3000),
    (9600, 6000),
    (45600, 12000),
)
AUTOMATIC_IOPS_PER_24000_GIB = 12000

#: USER_PROVISIONED Metadata IOPS an SSD file system accepts: 1500, 3000, 6000, 12000 and multiples
#: of 12000 up to 192000 (FSx API Reference, FileSystemLustreMetadataConfiguration.Iops).
METADATA_IOPS_STEPS: tuple[int, ...] = (1500, 3000, 6000, *range(12000, 192001, 12000))

OST_HOT_ADVICE = (
    "Stripe the hot files over more OSTs: `lfs getstripe <file>` shows a stripe count of 1 for files "
    "under the layout's first component; set `lfs setstripe -c -1 <dir>` (or -c 8/16) on the checkpoint "
    "and shard directories before writing, `lfs migrate -c -1 <file>` for files already written; "
    "`lfs df -h` on a client shows which OST runs hot or full."
)
METADATA_ADVICE = (
    "Reduce metadata load: pack small files into WebDataset/tar shards, list the data set once and "
    "share the list instead of os.walk/ls -l in every rank, and keep checkpoints to a few large "
    "files per rank."
)


def automatic_metadata_iops(storage_capacity_gib: int) -> int:
    """Metadata IOPS AUTOMATIC mode provisions for `storage_capacity_gib` (SSD)."""
    for bound, iops in AUTOMATIC_METADATA_IOPS:
        if storage_capacity_gib <= bound:
            return iops
    return AUTOMATIC_IOPS_PER_24000_GIB * (storage_capacity_gib // 24000)


def metadata_iops(fs: FileSystemInfo) -> tuple[int | None, str]:
    """(Metadata IOPS, where the figure comes from); None when the file system publishes none."""
    if fs.metadata_iops:
        mode = fs.metadata_mode or "?"
        return fs.metadata_iops, f"MetadataConfiguration Mode={mode} Iops={fs.metadata_iops}"
    if fs.metadata_mode == "AUTOMATIC" and fs.storage_capacity_gib:
        iops = automatic_metadata_iops(fs.storage_capacity_gib)
        return iops, f"AUTOMATIC mode at {fs.storage_capacity_gib} GiB = {iops} Metadata IOPS"
    return None, "no MetadataConfiguration (not PERSISTENT_2 with a metadata configuration)"


def _next_metadata_iops(current: int) -> int | None:
    return next((step for step in METADATA_IOPS_STEPS if step > current), None)


def _per_second(series: MetricSeries | None) -> dict[Any, float]:
    if series is None:
        return {}
    return {t: v / series.period_s for t, v in series.points().items()}


def metadata_rates(fs: FileSystemInfo, metrics: Sequence[MetricSeries]) -> list[tuple[Any, float]]:
    """(timestamp, MetadataOperations per second), oldest first: what fs.metadata judges."""
    rates = _per_second(_series(metrics, fs.file_system_id, "MetadataOperations", "Sum"))
    return sorted(rates.items())


def metadata_ceiling(fs: FileSystemInfo) -> float | None:
    """File creates/opens/closes per second the Metadata IOPS support (None when not published)."""
    iops, _ = metadata_iops(fs)
    return CEILING_OPS_PER_IOPS * iops if iops else None


def ost_count(fs: FileSystemInfo, metrics: Sequence[MetricSeries]) -> int | None:
    """The number of OSTs: the SampleCount of the per-OST data statistics (or of the free capacity)."""
    counts = [
        v
        for metric in ("DataReadBytes", "DataWriteBytes", "FreeDataStorageCapacity")
        for v in (_series(metrics, fs.file_system_id, metric, "SampleCount") or _EMPTY).values
        if v
    ]
    return int(max(counts)) if counts else None


def hottest_ost_share(fs: FileSystemInfo, metrics: Sequence[MetricSeries]) -> list[tuple[Any, float]]:
    """(timestamp, busiest OST's reads or writes as % of its share of provisioned), oldest first:
    the figure fs.ost_hot holds against the saturation level. Empty when provisioned is unknown."""
    osts, provisioned = ost_count(fs, metrics), fs.provisioned_throughput_mbps
    if not osts or not provisioned:
        return []
    share: dict[Any, float] = {}
    for direction in ("Read", "Write"):
        for moment, hottest, _mean, _count in _ost_rows(fs, metrics, direction):
            share[moment] = max(share.get(moment, 0.0), 100.0 * hottest / (provisioned / osts))
    return sorted(share.items())


def metadata(
    fs: FileSystemInfo,
    metrics: Sequence[MetricSeries],
    io_bound_nodes: Mapping[str, Any] | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> list[Finding]:
    """fs.metadata: MetadataOperations per second against what the Metadata IOPS support."""
    if fs.type != FileSystemType.LUSTRE:
        return []
    level, fraction = thresholds.fs_metadata_saturated_pct, thresholds.fs_saturated_fraction
    threshold = (
        f"MetadataOperations/s >= {level:g}% of {CEILING_OPS_PER_IOPS:g} x Metadata IOPS for >= "
        f"{fraction:.0%} of the window's datapoints"
    )
    values = [rate for _, rate in metadata_rates(fs, metrics)]
    iops, source = metadata_iops(fs)
    evidence: dict[str, Any] = {"file_system_id": fs.file_system_id, "metadata_iops": iops, "source": source}
    if not values:
        return [_no_data(fs, "MetadataOperations", evidence, check="fs.metadata")]
    evidence.update(
        datapoints=len(values),
        mean_ops_per_s=round(sum(values) / len(values), 1),
        peak_ops_per_s=round(max(values), 1),
    )
    if io_bound_nodes:
        evidence["io_bound_node_count"] = len(io_bound_nodes)
    connections = _series(metrics, fs.file_system_id, "ClientConnections", "Maximum")
    if connections is not None and connections.values:
        evidence["client_connections_peak"] = int(max(connections.values))
    if iops is None:
        return [
            _finding(
                Severity.INFO,
                f"{fs.file_system_id} metadata: mean {evidence['mean_ops_per_s']:,.0f} ops/s, peak "
                f"{evidence['peak_ops_per_s']:,.0f} ops/s; no Metadata IOPS to judge them against ({source})",
                evidence,
                threshold,
                check="fs.metadata",
            )
        ]
    ceiling = CEILING_OPS_PER_IOPS * iops
    evidence["supported_ops_per_s"] = {kind: per * iops for kind, per in METADATA_OPS_PER_IOPS.items()}
    utilisations = [100.0 * v / ceiling for v in values]
    saturated, share = _sustained(utilisations, level, fraction)
    evidence.update(
        mean_utilization_pct=round(sum(utilisations) / len(utilisations), 1),
        peak_utilization_pct=round(max(utilisations), 1),
        share_at_or_above_pct=round(share, 3),
    )
    figures = (
        f"mean {evidence['mean_ops_per_s']:,.0f} ops/s, peak {evidence['peak_ops_per_s']:,.0f} ops/s "
        f"against {ceiling:,.0f} file opens/s that {iops:,} Metadata IOPS support"
    )
    if saturated:
        return [
            _finding(
                Severity.CONCERN,
                f"metadata-bound: {fs.file_system_id} metadata operations >= {level:g}% of what its "
                f"Metadata IOPS support for {share:.0%} of the window ({figures})",
                evidence,
                threshold,
                check="fs.metadata",
                next_step=_metadata_advice(fs, iops),
            )
        ]
    return [
        _finding(
            Severity.OK,
            f"{fs.file_system_id} metadata has headroom: {figures} "
            f"(peak {evidence['peak_utilization_pct']}%)",
            evidence,
            threshold,
            check="fs.metadata",
        )
    ]


def _metadata_advice(fs: FileSystemInfo, iops: int) -> str:
    higher = _next_metadata_iops(iops)
    if fs.metadata_mode is None or higher is None:
        return METADATA_ADVICE
    return (
        f"Raise the Metadata IOPS (a cost decision, online): `aws fsx update-file-system --file-system-id "
        f"{fs.file_system_id} --lustre-configuration 'MetadataConfiguration={{Mode=USER_PROVISIONED,"
        f"Iops={higher}}}'` (now {iops}; increases at least 6 hours apart). {METADATA_ADVICE}"
    )


def _ost_rows(
    fs: FileSystemInfo, metrics: Sequence[MetricSeries], direction: str
) -> list[tuple[Any, float, float, float]]:
    """(timestamp, hottest OST MB/s, mean OST MB/s, OST count) per period of reads or writes."""
    metric = f"Data{direction}Bytes"
    hottest = _series(metrics, fs.file_system_id, metric, "Maximum")
    mean = _series(metrics, fs.file_system_id, metric, "Average")
    count = _series(metrics, fs.file_system_id, metric, "SampleCount")
    if hottest is None or mean is None:
        return []
    mean_points, count_points = mean.points(), count.points() if count else {}
    rows = []
    for moment, peak in sorted(hottest.points().items()):
        if moment in mean_points:
            period = hottest.period_s
            rows.append(
                (moment, peak / period / MB, mean_points[moment] / period / MB, count_points.get(moment, 0.0))
            )
    return rows


def ost_hot(
    fs: FileSystemInfo, metrics: Sequence[MetricSeries], thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> list[Finding]:
    """fs.ost_hot: the hottest OST far above the mean OST while it runs at its share of provisioned."""
    if fs.type != FileSystemType.LUSTRE:
        return []
    ratio_level, fraction = thresholds.fs_ost_hot_ratio, thresholds.fs_ost_hot_fraction
    saturated_pct = thresholds.fs_throughput_saturated_pct
    threshold = (
        f"hottest OST >= {ratio_level:g}x the mean OST while at >= {saturated_pct:g}% of its share of "
        f"provisioned throughput, for >= {fraction:.0%} of the window's datapoints"
    )
    rows = {d: _ost_rows(fs, metrics, d) for d in ("Read", "Write")}
    moments = sorted({r[0] for d in rows.values() for r in d})
    if not moments:
        return []
    osts = ost_count(fs, metrics)
    provisioned = fs.provisioned_throughput_mbps
    share_mbps = provisioned / osts if provisioned and osts else None
    evidence: dict[str, Any] = {
        "file_system_id": fs.file_system_id,
        "ost_count": osts,
        "per_ost_share_mbps": round(share_mbps, 1) if share_mbps else None,
        "datapoints": len(moments),
    }
    hot: dict[Any, tuple[str, float, float, float]] = {}
    peak_ratio, peak_pct = 0.0, 0.0
    for direction, direction_rows in rows.items():
        for moment, hottest, mean, _count in direction_rows:
            ratio = hottest / mean if mean > 0 else 0.0
            pct = 100.0 * hottest / share_mbps if share_mbps else 0.0
            peak_ratio = max(peak_ratio, ratio)
            peak_pct = max(peak_pct, pct)
            at_limit = pct >= saturated_pct if share_mbps else True
            if ratio >= ratio_level and at_limit and (moment not in hot or ratio > hot[moment][1]):
                hot[moment] = (direction, ratio, hottest, pct)
    share = len(hot) / len(moments)
    evidence.update(
        peak_hot_to_mean_ratio=round(peak_ratio, 2),
        peak_hottest_ost_pct_of_share=round(peak_pct, 1) if share_mbps else None,
        hot_datapoints=len(hot),
        share_hot_pct=round(share, 3),
    )
    if share >= fraction and hot:
        direction, ratio, hottest, pct = max(hot.values(), key=lambda h: h[1])
        verb = "read" if direction == "Read" else "wrote"
        limit = (
            f", at {pct:.0f}% of its {share_mbps:,.0f} MB/s share of provisioned ({osts} OSTs)"
            if share_mbps
            else ""
        )
        severity = Severity.CONCERN if share_mbps else Severity.INFO
        return [
            _finding(
                severity,
                f"one OST hot: the busiest OST of {fs.file_system_id} {verb} up to {ratio:.1f}x the mean OST "
                f"({hottest:,.0f} MB/s{limit}) for {share:.0%} of the window",
                evidence,
                threshold,
                check="fs.ost_hot",
                next_step=OST_HOT_ADVICE,
            )
        ]
    return [
        _finding(
            Severity.OK,
            f"{fs.file_system_id} OSTs balanced: the busiest OST at most {peak_ratio:.1f}x the mean OST"
            + (f", peak {peak_pct:.0f}% of its share of provisioned" if share_mbps else ""),
            evidence,
            threshold,
            check="fs.ost_hot",
        )
    ]


def _latest(series: MetricSeries | None) -> float | None:
    return series.values[-1] if series is not None and series.values else None


def ost_full(
    fs: FileSystemInfo, metrics: Sequence[MetricSeries], thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> list[Finding]:
    """fs.ost_full: the fullest OST at or above the fullness limit (its latest datapoint)."""
    if fs.type != FileSystemType.LUSTRE:
        return []
    level = thresholds.lustre_ost_used_pct
    threshold = f"fullest OST used >= {level:g}% (FreeDataStorageCapacity Minimum, latest datapoint)"
    fs_id = fs.file_system_id
    fullest_free = _latest(_series(metrics, fs_id, "FreeDataStorageCapacity", "Minimum"))
    mean_free = _latest(_series(metrics, fs_id, "FreeDataStorageCapacity", "Average"))
    total_free = _latest(_series(metrics, fs_id, "FreeDataStorageCapacity", "Sum"))
    osts = _latest(_series(metrics, fs_id, "FreeDataStorageCapacity", "SampleCount"))
    published = _latest(_series(metrics, fs_id, "StorageCapacityUtilization", "Maximum"))
    evidence: dict[str, Any] = {"file_system_id": fs_id}
    if fullest_free is None and published is None:
        return [_no_data(fs, "FreeDataStorageCapacity", evidence, check="fs.ost_full")]
    ost_bytes = fs.storage_capacity_gib * GIB / osts if fs.storage_capacity_gib and osts else None
    if published is not None:
        fullest_pct: float | None = published
        evidence["basis"] = "StorageCapacityUtilization Maximum (published)"
    elif ost_bytes:
        fullest_pct = max(0.0, 100.0 * (1 - fullest_free / ost_bytes))  # type: ignore[operator]
        evidence["basis"] = (
            "1 - fullest OST free / (StorageCapacity / OST count); a formatted OST is a few % smaller, "
            "so the true figure is a little higher"
        )
    else:
        fullest_pct = None
    mean_pct = max(0.0, 100.0 * (1 - mean_free / ost_bytes)) if ost_bytes and mean_free is not None else None
    fs_pct = (
        max(0.0, 100.0 * (1 - total_free / (fs.storage_capacity_gib * GIB)))
        if fs.storage_capacity_gib and total_free is not None
        else None
    )
    evidence.update(
        ost_count=int(osts) if osts else None,
        fullest_ost_free_gib=round(fullest_free / GIB, 1) if fullest_free is not None else None,
        fullest_ost_used_pct=round(fullest_pct, 1) if fullest_pct is not None else None,
        mean_ost_used_pct=round(mean_pct, 1) if mean_pct is not None else None,
        file_system_used_pct=round(fs_pct, 1) if fs_pct is not None else None,
    )
    if fullest_pct is None:
        return [
            _finding(
                Severity.INFO,
                f"{fs_id}: fullest OST has {evidence['fullest_ost_free_gib']} GiB free (OST size unknown)",
                evidence,
                threshold,
                check="fs.ost_full",
            )
        ]
    mean_text = f", mean OST {mean_pct:.0f}%" if mean_pct is not None else ""
    if fullest_pct >= level:
        whole = fs_pct is not None and fs_pct >= level
        what = "file system full" if whole else "one OST full"
        return [
            _finding(
                Severity.CONCERN,
                f"{what}: the fullest OST of {fs_id} is {fullest_pct:.0f}% used "
                f"({evidence['fullest_ost_free_gib']} GiB free{mean_text}); writes to it fail with ENOSPC",
                evidence,
                threshold,
                check="fs.ost_full",
                next_step=_full_advice(fs, whole),
            )
        ]
    return [
        _finding(
            Severity.OK,
            f"{fs_id} fullest OST {fullest_pct:.0f}% used{mean_text}",
            evidence,
            threshold,
            check="fs.ost_full",
        )
    ]


def _full_advice(fs: FileSystemInfo, whole: bool) -> str:
    scale = (
        f"Raise StorageCapacity (a cost decision): `aws fsx update-file-system --file-system-id "
        f"{fs.file_system_id} --storage-capacity <GiB>`; FSx then rebalances data onto the new servers "
        "in the background."
    )
    if whole:
        return f"Free space or scale: {scale}"
    return (
        "Move data off the full OST: `lfs df -h` names it, `lfs find <mount> --ost <index> --size +1G` "
        "lists its large files, `lfs migrate -c -1 <file>` restripes them over every OST. "
        f"Or {scale[0].lower()}{scale[1:]}"
    )


def evaluate(
    file_systems: Sequence[FileSystemInfo],
    metrics: Sequence[MetricSeries],
    io_bound_by_fs: Mapping[str, Mapping[str, Any]] | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> list[Finding]:
    findings: list[Finding] = []
    for fs in file_systems:
        findings.extend(metadata(fs, metrics, (io_bound_by_fs or {}).get(fs.file_system_id), thresholds))
        findings.extend(ost_hot(fs, metrics, thresholds))
        findings.extend(ost_full(fs, metrics, thresholds))
    return findings
