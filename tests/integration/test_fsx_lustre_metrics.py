"""FSx for Lustre beyond throughput against moto: the metadata configuration DescribeFileSystems
returns, and the per-OST statistics one GetMetricData call returns, judged by the Lustre rules.

FSx for Lustre publishes one datapoint per OST (per disk) per minute under the FileSystemId
dimension alone (FSx for Lustre User Guide, "Monitoring with Amazon CloudWatch"): the tests put
exactly that into moto's CloudWatch, which computes Sum / Maximum / Average / Minimum /
SampleCount from them as CloudWatch does. moto's FSx model keeps the LustreConfiguration it was
created with, MetadataConfiguration included, so no extension of it is needed here.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest
from hyperpod_moto import REGION
from moto import mock_aws

from hyperpod_perf.aws.cloudwatch import FsxMetrics
from hyperpod_perf.aws.fsx import FsxFileSystems
from hyperpod_perf.domain.cluster import MB
from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.rules import fsx_lustre
from hyperpod_perf_dev.sim.lustre_osts import LustreShape, put_lustre_osts

GIB = 1024**3
NOW = datetime(2025, 6, 2, 12, 0, tzinfo=UTC)
MINUTES = 20


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        yield


def _lustre(fsx, metadata: dict) -> str:
    return fsx.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=4800,
        StorageType="SSD",
        SubnetIds=["subnet-0123456789abcdef0"],
        LustreConfiguration={
            "DeploymentType": "PERSISTENT_2",
            "PerUnitStorageThroughput": 250,
            "MetadataConfiguration": metadata,
        },
    )["FileSystem"]["FileSystemId"]


def _per_ost(
    cw, fs_id: str, metric: str, per_minute: list[list[float]], unit: str, start: datetime | None = None
) -> None:
    """One datapoint per OST per minute, the FileSystemId dimension only, as FSx publishes."""
    data = [
        {
            "MetricName": metric,
            "Dimensions": [{"Name": "FileSystemId", "Value": fs_id}],
            "Timestamp": (start or NOW - timedelta(minutes=MINUTES)) + timedelta(minutes=minute),
            "Value": value,
            "Unit": unit,
        }
        for minute, values in enumerate(per_minute)
        for value in values
    ]
    for offset in range(0, len(data), 1000):
        cw.put_metric_data(Namespace="AWS/FSx", MetricData=data[offset : offset + 1000])


def test_per_ost_statistics_come_back_from_one_call_and_name_a_hot_and_a_full_ost(aws):
    # Given a 4,800 GiB PERSISTENT_2 file system (1,200 MB/s, 4 OSTs of 1,200 GiB: 300 MB/s each)
    # with 12,000 user-provisioned Metadata IOPS; for 20 minutes OST 0 writes 290 MB/s while the
    # other three write 40 MB/s, OST 3 has 60 GiB free, and clients run 21,000 metadata ops/s
    fsx, cw = boto3.client("fsx", region_name=REGION), boto3.client("cloudwatch", region_name=REGION)
    fs_id = _lustre(fsx, {"Mode": "USER_PROVISIONED", "Iops": 12000})
    writes = [[290 * MB * 60, 40 * MB * 60, 40 * MB * 60, 40 * MB * 60]] * MINUTES
    _per_ost(cw, fs_id, "DataWriteBytes", writes, "Bytes")
    _per_ost(cw, fs_id, "DataReadBytes", [[10 * MB * 60] * 4] * MINUTES, "Bytes")
    _per_ost(cw, fs_id, "MetadataOperations", [[21000 * 60 / 4] * 4] * MINUTES, "Count")
    free = [600 * GIB, 600 * GIB, 600 * GIB, 60 * GIB]
    _per_ost(cw, fs_id, "FreeDataStorageCapacity", [free] * MINUTES, "Bytes")

    # When the file system is described and its window fetched
    (fs,), errors = FsxFileSystems(fsx).describe([fs_id])
    metrics = FsxMetrics(cw)
    series = metrics.fetch([fs], NOW - timedelta(minutes=MINUTES), NOW, now=NOW)

    # Then the metadata configuration is read, one call brought every statistic, and CloudWatch's
    # statistics are the file system (Sum), the hottest / mean OST and the OST count
    assert errors == {} and (fs.metadata_mode, fs.metadata_iops) == ("USER_PROVISIONED", 12000)
    assert metrics.calls == 1
    got = {(s.metric, s.stat): s.values for s in series}
    assert set(got[("DataWriteBytes", "Sum")]) == {410 * MB * 60}
    assert set(got[("DataWriteBytes", "Maximum")]) == {290 * MB * 60}
    assert set(got[("DataWriteBytes", "Average")]) == {102.5 * MB * 60}
    assert set(got[("DataWriteBytes", "SampleCount")]) == {4.0}
    assert set(got[("FreeDataStorageCapacity", "Minimum")]) == {60 * GIB}
    assert got[("ClientConnections", "Maximum")] == ()  # not published here: no datapoints, no error

    # and the Lustre rules read them: OST 0 at 2.8x the mean and 97 % of its share, OST 3 95 % used,
    # metadata at 21,000 of 24,000 opens/s (87.5 %)
    by_check = {f.check: f for f in fsx_lustre.evaluate([fs], series)}
    assert by_check["fs.ost_hot"].severity is Severity.CONCERN
    hot = by_check["fs.ost_hot"].evidence
    assert {k: hot[k] for k in ("ost_count", "per_ost_share_mbps", "peak_hot_to_mean_ratio")} == {
        "ost_count": 4,
        "per_ost_share_mbps": 300.0,
        "peak_hot_to_mean_ratio": 2.83,
    }
    assert (hot["peak_hottest_ost_pct_of_share"], hot["share_hot_pct"]) == (96.7, 1.0)
    assert by_check["fs.ost_full"].severity is Severity.CONCERN
    assert by_check["fs.ost_full"].evidence["fullest_ost_used_pct"] == 95.0
    assert by_check["fs.metadata"].severity is Severity.CONCERN
    assert by_check["fs.metadata"].evidence["peak_utilization_pct"] == 87.5


def test_the_simulations_statistic_sets_give_the_statistics_of_per_ost_datapoints(aws):
    # Given the same minute's load published twice: per-OST datapoints (fs A) and the simulator's
    # statistic sets (fs B, what the demo uses)
    cw = boto3.client("cloudwatch", region_name=REGION)
    shape = LustreShape(osts=3, weights=(0.5, 0.3, 0.2), metadata_ops_per_s=100.0)
    start = NOW - timedelta(minutes=2)
    put_lustre_osts(
        cw, "fs-000000000000000bb", start, [(300 * MB, 60 * MB)] * 2, storage_capacity_gib=3600, shape=shape
    )
    reads = [[300 * MB * 60 * w for w in shape.weights]] * 2
    _per_ost(cw, "fs-000000000000000aa", "DataReadBytes", reads, "Bytes", start)

    def stats(fs_id: str) -> dict[str, tuple[float, ...]]:
        from hyperpod_perf.domain.cluster import FileSystemInfo

        fs = FileSystemInfo(file_system_id=fs_id, type="LUSTRE", storage_capacity_gib=3600)
        fetched = FsxMetrics(cw).fetch([fs], start, NOW, now=NOW)
        return {s.stat: s.values for s in fetched if s.metric == "DataReadBytes" and s.values}

    # Then CloudWatch (moto) answers the same Sum, Maximum, Average and SampleCount
    direct, simulated = stats("fs-000000000000000aa"), stats("fs-000000000000000bb")
    assert set(direct) == {"Sum", "Maximum", "Average", "SampleCount"}
    for stat, values in direct.items():
        assert simulated[stat] == pytest.approx(values), stat
