"""FSx for Lustre beyond throughput, field by field and at every threshold: metadata against the
Metadata IOPS, the hottest OST against the mean, the fullest OST.

Series are built the way GetMetricData returns them for FSx for Lustre (AWS, "Amazon FSx for Lustre
metrics and dimensions"): DataReadBytes/DataWriteBytes `Maximum` = the hottest OST, `Average` = the
mean OST, `SampleCount` = the number of OSTs; FreeDataStorageCapacity `Minimum` = the fullest OST.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hyperpod_perf.domain.cluster import MB, FileSystemInfo, MetricSeries
from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.rules import fsx, fsx_lustre
from hyperpod_perf.rules.thresholds import Thresholds

T = Thresholds
OK, INFO, CONCERN = Severity.OK, Severity.INFO, Severity.CONCERN
GIB = 1024**3
#: 2,400 GiB PERSISTENT_2 at 250 MB/s/TiB = 600 MB/s; 2 OSTs -> 300 MB/s each; AUTOMATIC mode at
#: 2,400 GiB = 3,000 Metadata IOPS = 6,000 file opens/s.
LUSTRE = FileSystemInfo(
    file_system_id="fs-0123456789abcdef0",
    type="LUSTRE",
    storage_capacity_gib=2400,
    deployment_type="PERSISTENT_2",
    per_unit_storage_throughput=250,
    metadata_mode="AUTOMATIC",
    metadata_iops=3000,
)
START = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)


def series(metric: str, stat: str, values: list[float], fs: FileSystemInfo = LUSTRE) -> MetricSeries:
    return MetricSeries(
        file_system_id=fs.file_system_id,
        metric=metric,
        stat=stat,
        period_s=60,
        timestamps=tuple(START + timedelta(minutes=i) for i in range(len(values))),
        values=tuple(values),
    )


def metadata_ops(ops_per_s: list[float]) -> list[MetricSeries]:
    return [series("MetadataOperations", "Sum", [v * 60 for v in ops_per_s])]


def osts(hottest_mbps: list[float], mean_mbps: list[float], count: int = 2, direction: str = "Write"):
    """Per-OST statistics of one direction: the hottest and the mean OST in MB/s, the OST count."""
    metric = f"Data{direction}Bytes"
    return [
        series(metric, "Maximum", [v * MB * 60 for v in hottest_mbps]),
        series(metric, "Average", [v * MB * 60 for v in mean_mbps]),
        series(metric, "SampleCount", [float(count)] * len(hottest_mbps)),
    ]


def free(fullest_free_gib: float, mean_free_gib: float, count: int = 2) -> list[MetricSeries]:
    return [
        series("FreeDataStorageCapacity", "Minimum", [fullest_free_gib * GIB]),
        series("FreeDataStorageCapacity", "Average", [mean_free_gib * GIB]),
        series("FreeDataStorageCapacity", "Sum", [mean_free_gib * GIB * count]),
        series("FreeDataStorageCapacity", "SampleCount", [float(count)]),
    ]


# ------------------------------------------------------------------------------------------ metadata


def test_automatic_metadata_iops_follow_awss_table():
    # AWS's table: 1,200 GiB 1,500; 2,400 GiB 3,000; 4,800-9,600 GiB 6,000; 12,000-45,600 GiB
    # 12,000; from 48,000 GiB 12,000 per 24,000 GiB
    table = {1200: 1500, 2400: 3000, 4800: 6000, 9600: 6000, 12000: 12000, 45600: 12000, 48000: 24000}
    assert {gib: fsx_lustre.automatic_metadata_iops(gib) for gib in table} == table
    assert fsx_lustre.automatic_metadata_iops(72000) == 36000


def test_metadata_iops_come_from_the_configuration_or_the_automatic_table():
    no_iops = LUSTRE.model_copy(update={"metadata_iops": None, "storage_capacity_gib": 9600})
    none = LUSTRE.model_copy(update={"metadata_iops": None, "metadata_mode": None})
    assert fsx_lustre.metadata_iops(LUSTRE) == (3000, "MetadataConfiguration Mode=AUTOMATIC Iops=3000")
    assert fsx_lustre.metadata_iops(no_iops) == (6000, "AUTOMATIC mode at 9600 GiB = 6000 Metadata IOPS")
    assert fsx_lustre.metadata_iops(none)[0] is None


def test_metadata_bound_names_the_rates_and_the_command_to_raise_the_iops():
    # Given 5,400 metadata ops/s (90 % of 6,000 file opens/s) for 9 of 10 minutes
    (finding,) = fsx_lustre.metadata(LUSTRE, metadata_ops([5400.0] * 9 + [600.0]))

    assert finding.model_dump(mode="json") == {
        "node": None,
        "check": "fs.metadata",
        "severity": "CONCERN",
        "section": "B",
        "summary": "metadata-bound: fs-0123456789abcdef0 metadata operations >= 80% of what its Metadata "
        "IOPS support for 90% of the window (mean 4,920 ops/s, peak 5,400 ops/s against 6,000 file "
        "opens/s that 3,000 Metadata IOPS support)",
        "evidence": {
            "file_system_id": "fs-0123456789abcdef0",
            "metadata_iops": 3000,
            "source": "MetadataConfiguration Mode=AUTOMATIC Iops=3000",
            "datapoints": 10,
            "mean_ops_per_s": 4920.0,
            "peak_ops_per_s": 5400.0,
            "supported_ops_per_s": {
                "file create/open/close": 6000.0,
                "file delete": 3000.0,
                "directory create/rename": 300.0,
                "directory delete": 600.0,
            },
            "mean_utilization_pct": 82.0,
            "peak_utilization_pct": 90.0,
            "share_at_or_above_pct": 0.9,
        },
        "threshold": "MetadataOperations/s >= 80% of 2 x Metadata IOPS for >= 80% of the window's datapoints",
        "next_step": "Raise the Metadata IOPS (a cost decision, online): `aws fsx update-file-system "
        "--file-system-id fs-0123456789abcdef0 --lustre-configuration "
        "'MetadataConfiguration={Mode=USER_PROVISIONED,Iops=6000}'` (now 3000; increases at least 6 hours "
        f"apart). {fsx_lustre.METADATA_ADVICE}",
        "handoff": None,
    }


@pytest.mark.parametrize(
    ("ops_per_s", "thresholds", "severity"),
    [
        ([4800.0] * 8 + [0.0] * 2, T(), CONCERN),  # 80 % of 6,000 opens/s for 80 % of the window: at both
        ([4799.0] * 8 + [0.0] * 2, T(), OK),  # just under the level
        ([4800.0] * 7 + [0.0] * 3, T(), OK),  # level met, for 70 % only
        ([4801.0] * 10, T(), CONCERN),  # just over, all along
        ([4801.0] * 10, T(fs_metadata_saturated_pct=85), OK),  # overridden level
        ([5100.0] * 10, T(fs_metadata_saturated_pct=85), CONCERN),  # at the overridden level
        ([4800.0] * 8 + [0.0] * 2, T(fs_saturated_fraction=0.85), OK),  # overridden share
    ],
)
def test_metadata_boundary(ops_per_s, thresholds, severity):
    (finding,) = fsx_lustre.metadata(LUSTRE, metadata_ops(ops_per_s), None, thresholds)
    assert finding.severity is severity


def test_metadata_without_a_configuration_reports_the_rates_only():
    old = LUSTRE.model_copy(
        update={"metadata_iops": None, "metadata_mode": None, "deployment_type": "SCRATCH_2"}
    )
    (finding,) = fsx_lustre.metadata(old, metadata_ops([900.0, 1100.0]))
    assert (finding.severity, finding.summary) == (
        INFO,
        "fs-0123456789abcdef0 metadata: mean 1,000 ops/s, peak 1,100 ops/s; no Metadata IOPS to judge them "
        "against (no MetadataConfiguration (not PERSISTENT_2 with a metadata configuration))",
    )
    (idle,) = fsx_lustre.metadata(LUSTRE, [])
    assert (idle.severity, idle.check, idle.threshold) == (INFO, "fs.metadata", None)
    assert idle.summary.endswith(
        "no MetadataOperations datapoints in the window (idle, or metrics not published)"
    )


def test_at_the_highest_metadata_iops_the_advice_is_to_reduce_the_load():
    top = LUSTRE.model_copy(update={"metadata_mode": "USER_PROVISIONED", "metadata_iops": 192000})
    (finding,) = fsx_lustre.metadata(top, metadata_ops([384000.0] * 5))
    assert (finding.severity, finding.next_step) == (CONCERN, fsx_lustre.METADATA_ADVICE)


# ------------------------------------------------------------------------------------------ hot OST


def test_one_ost_hot_names_the_ratio_the_share_and_the_ost_count():
    # Given 2 OSTs (300 MB/s each of 600 provisioned): one writes 290 MB/s, the mean is 145 (the
    # other idles) for 3 of 10 minutes
    metrics = osts([290.0] * 3 + [100.0] * 7, [145.0] * 3 + [90.0] * 7)
    (finding,) = fsx_lustre.ost_hot(LUSTRE, metrics)

    assert finding.model_dump(mode="json") == {
        "node": None,
        "check": "fs.ost_hot",
        "severity": "CONCERN",
        "section": "B",
        "summary": "one OST hot: the busiest OST of fs-0123456789abcdef0 wrote up to 2.0x the mean OST "
        "(290 MB/s, at 97% of its 300 MB/s share of provisioned (2 OSTs)) for 30% of the window",
        "evidence": {
            "file_system_id": "fs-0123456789abcdef0",
            "ost_count": 2,
            "per_ost_share_mbps": 300.0,
            "datapoints": 10,
            "peak_hot_to_mean_ratio": 2.0,
            "peak_hottest_ost_pct_of_share": 96.7,
            "hot_datapoints": 3,
            "share_hot_pct": 0.3,
        },
        "threshold": "hottest OST >= 2x the mean OST while at >= 90% of its share of provisioned "
        "throughput, for >= 25% of the window's datapoints",
        "next_step": fsx_lustre.OST_HOT_ADVICE,
        "handoff": None,
    }


@pytest.mark.parametrize(
    ("hottest", "mean", "thresholds", "severity"),
    [
        ([270.0] * 4 + [10.0] * 12, [135.0] * 4 + [10.0] * 12, T(), CONCERN),  # 2.0x at 90 % of share, 25 %
        ([270.0] * 4 + [10.0] * 12, [135.1] * 4 + [10.0] * 12, T(), OK),  # ratio just under 2
        ([269.9] * 4 + [10.0] * 12, [134.9] * 4 + [10.0] * 12, T(), OK),  # just under 90 % of the share
        ([270.0] * 3 + [10.0] * 13, [135.0] * 3 + [10.0] * 13, T(), OK),  # 3 of 16 datapoints: < 25 %
        ([280.0] * 5 + [10.0] * 11, [100.0] * 5 + [10.0] * 11, T(), CONCERN),  # just outside on every side
        ([280.0] * 5 + [10.0] * 11, [100.0] * 5 + [10.0] * 11, T(fs_ost_hot_ratio=3), OK),  # overridden ratio
        ([270.0] * 4 + [10.0] * 12, [135.0] * 4 + [10.0] * 12, T(fs_ost_hot_fraction=0.3), OK),
        ([270.0] * 4 + [10.0] * 12, [135.0] * 4 + [10.0] * 12, T(fs_throughput_saturated_pct=95), OK),
    ],
)
def test_ost_hot_boundary(hottest, mean, thresholds, severity):
    (finding,) = fsx_lustre.ost_hot(LUSTRE, osts(hottest, mean), thresholds)
    assert finding.severity is severity


def test_a_hot_read_ost_counts_like_a_hot_write_ost_and_balanced_osts_say_by_how_much():
    (reads,) = fsx_lustre.ost_hot(LUSTRE, osts([295.0] * 4, [140.0] * 4, direction="Read"))
    assert (reads.severity, reads.summary.split(" (")[0]) == (
        CONCERN,
        "one OST hot: the busiest OST of fs-0123456789abcdef0 read up to 2.1x the mean OST",
    )
    (balanced,) = fsx_lustre.ost_hot(LUSTRE, osts([150.0] * 4, [140.0] * 4))
    assert (balanced.severity, balanced.summary) == (
        OK,
        "fs-0123456789abcdef0 OSTs balanced: the busiest OST at most 1.1x the mean OST, peak 50% of its "
        "share of provisioned",
    )


def test_without_provisioned_throughput_an_imbalance_is_only_information():
    scratch = LUSTRE.model_copy(update={"per_unit_storage_throughput": None})
    (finding,) = fsx_lustre.ost_hot(scratch, osts([100.0] * 4, [20.0] * 4))
    assert (finding.severity, finding.evidence["per_ost_share_mbps"]) == (INFO, None)
    assert fsx_lustre.ost_hot(LUSTRE, []) == []  # no per-OST statistics: nothing to say


# ----------------------------------------------------------------------------------------- full OST


def test_one_ost_full_is_the_fullest_ost_from_its_free_space_and_the_ost_size():
    # Given 2 OSTs of 1,200 GiB (2,400 GiB / 2): the fullest has 60 GiB free (95 % used), the mean 600
    (finding,) = fsx_lustre.ost_full(LUSTRE, free(60.0, 600.0))

    assert finding.severity is CONCERN
    assert finding.summary == (
        "one OST full: the fullest OST of fs-0123456789abcdef0 is 95% used (60.0 GiB free, mean OST 50%); "
        "writes to it fail with ENOSPC"
    )
    assert finding.evidence == {
        "file_system_id": "fs-0123456789abcdef0",
        "basis": "1 - fullest OST free / (StorageCapacity / OST count); a formatted OST is a few % smaller, "
        "so the true figure is a little higher",
        "ost_count": 2,
        "fullest_ost_free_gib": 60.0,
        "fullest_ost_used_pct": 95.0,
        "mean_ost_used_pct": 50.0,
        "file_system_used_pct": 50.0,
    }
    assert finding.next_step.startswith("Move data off the full OST: `lfs df -h` names it")
    assert "`aws fsx update-file-system --file-system-id fs-0123456789abcdef0 --storage-capacity <GiB>`" in (
        finding.next_step
    )


@pytest.mark.parametrize(
    ("fullest_free_gib", "thresholds", "severity"),
    [
        (120.0, T(), CONCERN),  # 1,200 GiB OST, 120 free: 90 % used, at the limit
        (120.5, T(), OK),  # just inside
        (119.5, T(), CONCERN),  # just outside
        (119.5, T(lustre_ost_used_pct=95), OK),  # overridden
        (60.0, T(lustre_ost_used_pct=95), CONCERN),  # at the overridden limit
    ],
)
def test_ost_full_boundary(fullest_free_gib, thresholds, severity):
    (finding,) = fsx_lustre.ost_full(LUSTRE, free(fullest_free_gib, 600.0), thresholds)
    assert finding.severity is severity


def test_a_published_utilisation_wins_and_a_full_file_system_says_so():
    published = [*free(600.0, 600.0), series("StorageCapacityUtilization", "Maximum", [93.0])]
    (finding,) = fsx_lustre.ost_full(LUSTRE, published)
    assert (finding.severity, finding.evidence["fullest_ost_used_pct"], finding.evidence["basis"]) == (
        CONCERN,
        93.0,
        "StorageCapacityUtilization Maximum (published)",
    )
    (whole,) = fsx_lustre.ost_full(LUSTRE, free(50.0, 60.0))
    assert whole.summary.startswith("file system full: the fullest OST of fs-0123456789abcdef0 is 96% used")
    assert whole.next_step.startswith("Free space or scale: Raise StorageCapacity")
    (missing,) = fsx_lustre.ost_full(LUSTRE, [])
    assert (missing.severity, missing.check) == (INFO, "fs.ost_full")


def test_only_lustre_is_judged_and_evaluate_runs_every_check_per_file_system():
    zfs = FileSystemInfo(file_system_id="fs-0fedcba9876543210", type="OPENZFS", throughput_capacity=160)
    metrics = [*metadata_ops([100.0]), *osts([100.0], [90.0]), *free(600.0, 600.0)]
    findings = fsx_lustre.evaluate([LUSTRE, zfs], metrics)
    assert [(f.check, f.severity) for f in findings] == [
        ("fs.metadata", OK),
        ("fs.ost_hot", OK),
        ("fs.ost_full", OK),
    ]


# -------------------------------------------------------------------------- inefficient I/O pattern


def test_the_inefficient_pattern_verdict_carries_the_io_size_and_the_metadata_share():
    # Given 30 % of provisioned in 64 KiB operations and as many metadata operations as data ones
    total = 0.3 * 600 * MB * 60
    metrics = [
        series("DataReadBytes", "Sum", [total * 0.7] * 10),
        series("DataWriteBytes", "Sum", [total * 0.3] * 10),
        series("DataReadOperations", "Sum", [total * 0.7 / 65536] * 10),
        series("DataWriteOperations", "Sum", [total * 0.3 / 65536] * 10),
        series("MetadataOperations", "Sum", [total / 65536] * 10),
    ]
    (finding,) = fsx.throughput(LUSTRE, metrics, {"i-0a1b2c3d4e5f60001": {"host.iowait": {}}})
    assert finding.summary.endswith(
        "but 1 node(s) are I/O bound (average I/O 64 KiB, metadata 50% of client operations)"
    )
    assert (finding.evidence["average_io_kib"], finding.evidence["metadata_share_of_operations_pct"]) == (
        64.0,
        50.0,
    )
