"""FSx throughput from CloudWatch series that do not line up, and the rounding an operator reads.

CloudWatch leaves a period out of a series when nothing was published for it (an idle minute has no
DataWriteBytes datapoint), so read and write (Lustre) or disk and network (OpenZFS) need not share
timestamps. A period missing from one series counts as 0 for it — never as a shifted value. The
inputs are chosen so that any other fallback, or a different rounding, changes a number below.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from test_fsx_contract import THROUGHPUT_THRESHOLD, ZFS, dumped, series

from hyperpod_perf.domain.cluster import MB, FileSystemInfo, MetricSeries
from hyperpod_perf.rules import fsx
from hyperpod_perf.rules.fsx import IO_PATTERN_ADVICE

START = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
#: 1,234 GiB x 125 MB/s/TiB = 154.25 MB/s: one decimal (154.2) and two (154.25) differ.
ODD = FileSystemInfo(
    file_system_id="fs-0aaaabbbbccccdddd",
    type="LUSTRE",
    storage_capacity_gib=1234,
    deployment_type="PERSISTENT_2",
    lustre_mount_name="abcdefgh",
    per_unit_storage_throughput=125,
)


def lustre(metric: str, minutes: list[int], values: list[float]) -> MetricSeries:
    return MetricSeries(
        file_system_id=ODD.file_system_id,
        metric=metric,
        stat="Sum",
        period_s=60,
        timestamps=tuple(START + timedelta(minutes=m) for m in minutes),
        values=tuple(values),
    )


def test_lustre_periods_missing_from_one_series_count_zero_for_it():
    # Given reads at minutes 0 and 1, writes at minutes 1 and 2 (bytes per 60 s period)
    metrics = [
        lustre("DataReadBytes", [0, 1], [60 * 10 * MB, 60 * 20 * MB]),
        lustre("DataWriteBytes", [1, 2], [60 * 5 * MB, 60 * 7 * MB]),
    ]
    # Then minute 0 is reads only, minute 1 both, minute 2 writes only
    rows = fsx.lustre_utilization(ODD, metrics)
    assert [(moment.minute, mbps) for moment, mbps, _ in rows] == [(0, 10.0), (1, 25.0), (2, 7.0)]
    assert [pct for _, _, pct in rows] == [100.0 * m / 154.25 for m in (10.0, 25.0, 7.0)]


def test_lustre_with_writes_only_is_judged_from_the_writes():
    # Given a file system that published DataWriteBytes and no DataReadBytes at all
    rows = fsx.lustre_utilization(ODD, [lustre("DataWriteBytes", [0], [60 * 3 * MB])])
    assert [(moment.minute, mbps) for moment, mbps, _ in rows] == [(0, 3.0)]


def test_lustre_evidence_rounds_provisioned_and_peak_to_one_decimal_and_the_share_to_three():
    # Given 3 periods at 150.123 / 10 / 150.987 MB/s of 154.25 provisioned (2 of 3 at >= 90 %)
    metrics = [lustre("DataReadBytes", [0, 1, 2], [60 * 150.123 * MB, 60 * 10 * MB, 60 * 150.987 * MB])]
    (finding,) = fsx.throughput(ODD, metrics)
    evidence = finding.evidence
    assert (evidence["provisioned_mbps"], evidence["peak_mbps"], evidence["mean_mbps"]) == (
        154.2,
        151.0,
        103.7,
    )
    assert evidence["share_at_or_above_pct"] == 0.667
    assert (finding.severity.value, finding.threshold) == ("OK", THROUGHPUT_THRESHOLD)


def test_headroom_with_io_bound_nodes_is_an_inefficient_pattern_concern_with_the_threshold():
    # Given the same file system at 10 % of provisioned and two nodes stuck in I/O wait
    metrics = [lustre("DataReadBytes", [0, 1], [60 * 15.425 * MB, 60 * 15.425 * MB])]
    nodes = {"i-0b": {"iowait_pct": 40.0}, "i-0a": {"psi_some_avg10": 35.0}}
    (finding,) = fsx.throughput(ODD, metrics, io_bound_nodes=nodes)
    assert finding.model_dump(mode="json")["threshold"] == THROUGHPUT_THRESHOLD
    assert finding.summary == (
        "inefficient I/O pattern: fs-0aaaabbbbccccdddd has headroom (mean 10.0%, peak 10.0% of provisioned) "
        "but 2 node(s) are I/O bound"
    )
    assert finding.next_step == IO_PATTERN_ADVICE
    assert list(finding.evidence["io_bound_nodes"]) == ["i-0a", "i-0b"]


def test_openzfs_periods_missing_from_one_series_count_zero_for_it():
    # Given disk utilisation at minutes 0-1 only and network at minutes 1-2 only, all below 1 %
    start = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
    disk = series("FileServerDiskThroughputUtilization", [0.5, 0.25])
    network = MetricSeries(
        file_system_id=ZFS.file_system_id,
        metric="NetworkThroughputUtilization",
        stat="Average",
        period_s=60,
        timestamps=(start + timedelta(minutes=1), start + timedelta(minutes=2)),
        values=(0.75, 0.5),
    )
    # Then each minute is the busier of what was published: 0.5, max(0.25, 0.75), 0.5
    (finding,) = fsx.throughput(ZFS, [disk, network])
    assert dumped([finding])[0]["evidence"] == {
        "file_system_id": ZFS.file_system_id,
        "type": "OPENZFS",
        "throughput_capacity_mbps": 160,
        "datapoints": 3,
        "period_s": 60,
        "mean_utilization_pct": 0.6,
        "peak_utilization_pct": 0.8,
        "share_at_or_above_pct": 0.0,
    }


def test_openzfs_iops_share_is_rounded_to_three_decimals():
    # Given IOPS utilisation at 85 / 20 / 90 %: 2 of 3 datapoints at or above 80 % (below the 80 % share)
    (finding,) = fsx.openzfs_iops(ZFS, [series("FileServerDiskIopsUtilization", [85.0, 20.0, 90.0])])
    assert (finding.severity.value, finding.evidence["share_at_or_above_pct"]) == ("OK", 0.667)
    assert finding.summary == "fs-0fedcba9876543210 disk IOPS utilization mean 65.0%, peak 90.0%"
