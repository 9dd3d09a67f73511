"""FSx findings field by field (reviewed): OpenZFS throughput takes the busier of disk and network,
OpenZFS IOPS saturated / headroom / no data, and `evaluate` passing each file system its own I/O-bound
nodes and the thresholds it was given."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from test_cluster_rules import LUSTRE, _lustre_series

from hyperpod_perf.domain.cluster import FileSystemInfo, MetricSeries
from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.rules import fsx
from hyperpod_perf.rules.thresholds import Thresholds

ZFS = FileSystemInfo(
    file_system_id="fs-0fedcba9876543210",
    type="OPENZFS",
    storage_capacity_gib=1024,
    throughput_capacity=160,
    iops_mode="AUTOMATIC",
    iops=3072,
)
ZFS_EVIDENCE = {"file_system_id": "fs-0fedcba9876543210", "iops_mode": "AUTOMATIC", "iops": 3072}
IOPS_THRESHOLD = "FileServerDiskIopsUtilization (Average) >= 80% for >= 80% of the datapoints"
THROUGHPUT_THRESHOLD = "read+write throughput / provisioned >= 90% for >= 80% of the window's datapoints"


def series(metric: str, values: list[float], stat: str = "Average", fs: FileSystemInfo = ZFS) -> MetricSeries:
    start = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
    return MetricSeries(
        file_system_id=fs.file_system_id,
        metric=metric,
        stat=stat,
        period_s=60,
        timestamps=tuple(start + timedelta(minutes=i) for i in range(len(values))),
        values=tuple(values),
    )


def dumped(findings):
    return [f.model_dump(mode="json") for f in findings]


def test_openzfs_throughput_is_the_busier_of_disk_and_network_per_datapoint():
    # Given disk at 40 % all along and the network at 95 % for 8 of 10 minutes
    metrics = [
        series("FileServerDiskThroughputUtilization", [40.0] * 10),
        series("NetworkThroughputUtilization", [95.0] * 8 + [10.0] * 2),
    ]
    # Then utilisation is max(disk, network): 95 x 8 and 40 x 2 -> saturated for 80 % of the window
    assert dumped(fsx.throughput(ZFS, metrics)) == [
        {
            "node": None,
            "check": "fs.throughput",
            "severity": "CONCERN",
            "section": "B",
            "summary": "fs-0fedcba9876543210 is saturated: throughput >= 90% of provisioned for 80% of the "
            "window (mean 84.0%)",
            "evidence": {
                "file_system_id": "fs-0fedcba9876543210",
                "type": "OPENZFS",
                "throughput_capacity_mbps": 160,
                "datapoints": 10,
                "period_s": 60,
                "mean_utilization_pct": 84.0,
                "peak_utilization_pct": 95.0,
                "share_at_or_above_pct": 0.8,
            },
            "threshold": THROUGHPUT_THRESHOLD,
            "next_step": "Scale the file system (a cost decision): raise the provisioned throughput "
            "capacity (now 160 MB/s) or SSD IOPS (`aws fsx update-file-system --file-system-id "
            "fs-0fedcba9876543210 --open-zfs-configuration ThroughputCapacity=<MB/s>`).",
            "handoff": None,
        }
    ]


def test_openzfs_without_datapoints_is_info_naming_the_metrics():
    (finding,) = fsx.throughput(ZFS, [])
    assert finding.severity is Severity.INFO and finding.threshold is None
    assert finding.summary == (
        "fs-0fedcba9876543210: no FileServerDiskThroughputUtilization/NetworkThroughputUtilization "
        "datapoints in the window (idle, or metrics not published)"
    )
    assert finding.evidence == {
        "file_system_id": "fs-0fedcba9876543210",
        "type": "OPENZFS",
        "throughput_capacity_mbps": 160,
    }


def test_openzfs_iops_saturated_uses_the_maximum_series_for_the_peak():
    metrics = [
        series("FileServerDiskIopsUtilization", [85.0] * 9 + [20.0]),
        series("FileServerDiskIopsUtilization", [99.0] * 10, "Maximum"),
    ]
    assert dumped(fsx.openzfs_iops(ZFS, metrics)) == [
        {
            "node": None,
            "check": "fs.openzfs_iops",
            "severity": "CONCERN",
            "section": "B",
            "summary": "fs-0fedcba9876543210 disk IOPS utilization >= 80% for 90% of the window",
            "evidence": {
                **ZFS_EVIDENCE,
                "datapoints": 10,
                "mean_utilization_pct": 78.5,
                "peak_utilization_pct": 99.0,
                "share_at_or_above_pct": 0.9,
            },
            "threshold": IOPS_THRESHOLD,
            "next_step": "Raise the provisioned SSD IOPS (DiskIopsConfiguration Mode=USER_PROVISIONED) or "
            "the throughput capacity, or reduce small random I/O in the workload.",
            "handoff": None,
        }
    ]


def test_openzfs_iops_headroom_and_no_data():
    (ok,) = fsx.openzfs_iops(ZFS, [series("FileServerDiskIopsUtilization", [30.0, 31.25])])
    assert (ok.check, ok.severity, ok.summary, ok.threshold, ok.next_step) == (
        "fs.openzfs_iops",
        Severity.OK,
        "fs-0fedcba9876543210 disk IOPS utilization mean 30.6%, peak 31.2%",
        IOPS_THRESHOLD,
        None,
    )
    assert ok.evidence == {
        **ZFS_EVIDENCE,
        "datapoints": 2,
        "mean_utilization_pct": 30.6,
        "peak_utilization_pct": 31.2,
        "share_at_or_above_pct": 0.0,
    }
    (none,) = fsx.openzfs_iops(ZFS, [series("FileServerDiskIopsUtilization", [])])
    assert (none.check, none.severity, none.threshold, none.evidence) == (
        "fs.openzfs_iops",
        Severity.INFO,
        None,
        ZFS_EVIDENCE,
    )
    assert none.summary == (
        "fs-0fedcba9876543210: no FileServerDiskIopsUtilization datapoints in the window (idle, or metrics "
        "not published)"
    )
    assert fsx.openzfs_iops(LUSTRE, []) == []  # IOPS utilisation is an OpenZFS metric only


def test_lustre_saturation_advice_names_both_online_changes():
    (finding,) = fsx.throughput(LUSTRE, _lustre_series([95.0] * 10))
    assert finding.next_step == (
        "Scale the file system (a cost decision): provisioned throughput is StorageCapacity 2400 GiB "
        "(2.4 TiB) x PerUnitStorageThroughput 250 MB/s/TiB = 600 MB/s. Raise StorageCapacity (`aws fsx "
        "update-file-system --file-system-id fs-0123456789abcdef0 --storage-capacity <GiB>`) or, on "
        "persistent SSD deployments, PerUnitStorageThroughput (`--lustre-configuration "
        "PerUnitStorageThroughput=<MB/s/TiB>`); both changes are made online."
    )


def test_evaluate_gives_each_file_system_its_io_bound_nodes_and_the_thresholds():
    metrics = [*_lustre_series([50.0] * 10), series("FileServerDiskIopsUtilization", [85.0] * 10)]
    io_bound = {LUSTRE.file_system_id: {"i-1": {"iowait_pct": 40.0}}, "fs-other": {"i-2": {}}}
    findings = fsx.evaluate([LUSTRE, ZFS], metrics, io_bound)
    assert [(f.check, f.severity) for f in findings] == [
        ("fs.throughput", Severity.CONCERN),  # Lustre: headroom but an I/O-bound node
        ("fs.throughput", Severity.INFO),  # OpenZFS: no throughput datapoints
        ("fs.openzfs_iops", Severity.CONCERN),
    ]
    assert findings[0].summary.startswith("inefficient I/O pattern: fs-0123456789abcdef0 has headroom")
    assert findings[0].evidence["io_bound_nodes"] == {"i-1": {"iowait_pct": 40.0}}
    # And thresholds passed to evaluate reach both checks
    lenient = Thresholds(openzfs_iops_utilization_pct=90.0, fs_throughput_saturated_pct=40.0)
    findings = fsx.evaluate([LUSTRE, ZFS], metrics, {}, lenient)
    assert [(f.check, f.severity) for f in findings] == [
        ("fs.throughput", Severity.CONCERN),  # 50 % >= 40 %: saturated under the override
        ("fs.throughput", Severity.INFO),
        ("fs.openzfs_iops", Severity.OK),
    ]


LUSTRE_EVIDENCE = {
    "file_system_id": "fs-0123456789abcdef0",
    "type": "LUSTRE",
    "provisioned_mbps": 600.0,
    "provisioned_formula": (
        "StorageCapacity 2400 GiB (2.4 TiB) x PerUnitStorageThroughput 250 MB/s/TiB = 600 MB/s"
    ),
    "datapoints": 3,
    "period_s": 60,
}


def test_lustre_headroom_rounds_its_figures_and_reads_a_window_with_only_reads():
    series = _lustre_series([33.333, 66.666, 12.3456])  # read 70 %, write 30 % of each total
    (both,) = fsx.throughput(LUSTRE, series)
    assert (both.severity, both.summary, both.threshold) == (
        Severity.OK,
        "fs-0123456789abcdef0 has headroom: mean 37.4%, peak 66.7% of provisioned throughput",
        THROUGHPUT_THRESHOLD,
    )
    assert both.evidence == {
        **LUSTRE_EVIDENCE,
        "mean_mbps": 224.7,
        "peak_mbps": 400.0,
        "mean_utilization_pct": 37.4,
        "peak_utilization_pct": 66.7,
        "share_at_or_above_pct": 0.0,
    }
    (reads,) = fsx.throughput(LUSTRE, series[:1])  # DataWriteBytes not published
    assert reads.evidence == {
        **LUSTRE_EVIDENCE,
        "mean_mbps": 157.3,
        "peak_mbps": 280.0,
        "mean_utilization_pct": 26.2,
        "peak_utilization_pct": 46.7,
        "share_at_or_above_pct": 0.0,
    }


def test_lustre_with_unknown_provisioning_is_info_with_the_measured_peak():
    scratch = FileSystemInfo(
        file_system_id="fs-0123456789abcdef0",
        type="LUSTRE",
        storage_capacity_gib=1200,
        deployment_type="SCRATCH_1",
        lustre_mount_name="abc",
    )
    (finding,) = fsx.throughput(scratch, _lustre_series([33.333, 66.666, 12.3456]))
    assert (finding.severity, finding.summary, finding.threshold) == (
        Severity.INFO,
        "fs-0123456789abcdef0: provisioned throughput unknown (deployment SCRATCH_1); measured peak "
        "400.0 MB/s",
        THROUGHPUT_THRESHOLD,
    )
    assert finding.evidence == {
        **LUSTRE_EVIDENCE,
        "provisioned_mbps": None,
        "provisioned_formula": None,
        "mean_mbps": 224.7,
        "peak_mbps": 400.0,
    }
