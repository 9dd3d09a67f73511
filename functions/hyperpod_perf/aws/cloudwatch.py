"""FSx CloudWatch metrics for a window: one GetMetricData call for every metric of every file system.

Why one call: GetMetricData is billed per metric but takes up to 500 queries, and it keeps the
series aligned on the same period boundaries, which the saturation rule relies on when it adds
read and write bytes period by period.

Statistics matter: for Lustre DataReadBytes/DataWriteBytes, `Sum` is the whole file system
(`Maximum` would be one OST), so throughput = Sum / period. OpenZFS publishes utilizations in
percent; `Average` says whether it was sustained, `Maximum` shows the peaks.

Beyond throughput, Lustre's per-OST statistics come from the same FileSystemId-only metrics
(FSx for Lustre User Guide, "Amazon FSx for Lustre metrics and dimensions", network I/O metrics):
for DataReadBytes/DataWriteBytes "the Minimum statistic is the minimum number of bytes ... on a
single OST", "the Maximum statistic is the maximum number of bytes ... on the OST", "the Average
statistic is the average number of bytes ... per OST" and "the SampleCount statistic is the
number of OSTs"; FreeDataStorageCapacity's Minimum is the free space of the fullest OST. So the
hottest OST, the mean OST, the OST count and the fullest OST are all plain MetricStat queries in
the same call. The MDT / MDS metrics (DiskIopsUtilization per StorageTargetId, CPUUtilization
per FileServer) carry a second dimension whose values only ListMetrics or a Metrics Insights
query (one per call, the latest three hours) can enumerate: they are not read here, and the
metadata verdict judges MetadataOperations against the configured Metadata IOPS instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.errors import translate_client_error
from hyperpod_perf.domain.cluster import FileSystemInfo, FileSystemType, MetricSeries

NAMESPACE = "AWS/FSx"
MAX_QUERIES_PER_CALL = 500
MAX_DATAPOINTS_PER_CALL = 100_800
#: CloudWatch keeps 1-minute datapoints for 15 days; older ranges need 5-minute periods.
ONE_MINUTE_RETENTION = timedelta(days=15)
PERIODS = (60, 300, 900, 3600, 21600, 86400)

#: metric -> statistics to fetch, per file-system type
METRICS_BY_TYPE: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    FileSystemType.LUSTRE: (
        # Sum: the file system; Maximum / Average: the hottest / mean OST; SampleCount: the OSTs.
        ("DataReadBytes", ("Sum", "Maximum", "Average", "SampleCount")),
        ("DataWriteBytes", ("Sum", "Maximum", "Average", "SampleCount")),
        # Operation counts: the average I/O size and the share of metadata among client operations.
        ("DataReadOperations", ("Sum",)),
        ("DataWriteOperations", ("Sum",)),
        ("MetadataOperations", ("Sum",)),
        # Free space: Minimum is the fullest OST, Average the mean OST, SampleCount the OSTs.
        ("FreeDataStorageCapacity", ("Minimum", "Average", "Sum", "SampleCount")),
        # Published for some file systems only (else no datapoints): the fullest target in percent.
        ("StorageCapacityUtilization", ("Maximum",)),
        ("ClientConnections", ("Maximum",)),
    ),
    FileSystemType.OPENZFS: (
        ("FileServerDiskIopsUtilization", ("Average", "Maximum")),
        ("FileServerDiskThroughputUtilization", ("Average", "Maximum")),
        ("NetworkThroughputUtilization", ("Average", "Maximum")),
    ),
}


def choose_period(start: datetime, end: datetime, n_queries: int, now: datetime | None = None) -> int:
    """60 s where CloudWatch still has it and the call stays under its datapoint limit."""
    window_s = max(60.0, (end - start).total_seconds())
    period = 60
    if now is not None and _utc(now) - _utc(start) > ONE_MINUTE_RETENTION:
        period = 300
    per_query_budget = MAX_DATAPOINTS_PER_CALL / max(1, n_queries)
    for candidate in PERIODS:
        if candidate >= period and window_s / candidate <= per_query_budget:
            return candidate
    return PERIODS[-1]


def build_queries(file_systems: Iterable[FileSystemInfo], period: int) -> list[tuple[dict[str, Any], tuple]]:
    """(MetricDataQuery, (fs id, metric, stat)) for every metric the file systems publish."""
    queries: list[tuple[dict[str, Any], tuple]] = []
    for fs in file_systems:
        for metric, stats in METRICS_BY_TYPE.get(fs.type, ()):
            for stat in stats:
                query = {
                    "Id": f"m{len(queries)}",
                    "MetricStat": {
                        "Metric": {
                            "Namespace": NAMESPACE,
                            "MetricName": metric,
                            "Dimensions": [{"Name": "FileSystemId", "Value": fs.file_system_id}],
                        },
                        "Period": period,
                        "Stat": stat,
                    },
                    "ReturnData": True,
                }
                queries.append((query, (fs.file_system_id, metric, stat)))
    return queries


class FsxMetrics:
    def __init__(self, client: Any) -> None:
        self._client = client
        self.calls = 0  # GetMetricData requests made (pages included), for tests and cost notes

    def fetch(
        self,
        file_systems: Iterable[FileSystemInfo],
        start: datetime,
        end: datetime,
        *,
        period: int | None = None,
        now: datetime | None = None,
    ) -> list[MetricSeries]:
        systems = list(file_systems)
        n_queries = sum(len(stats) for fs in systems for _, stats in METRICS_BY_TYPE.get(fs.type, ()))
        if n_queries == 0:
            return []
        period = period or choose_period(start, end, n_queries, now)
        start = _floor(start, period)
        end = _ceil(end, period)
        queries = build_queries(systems, period)
        series: list[MetricSeries] = []
        for offset in range(0, len(queries), MAX_QUERIES_PER_CALL):
            series.extend(self._one_call(queries[offset : offset + MAX_QUERIES_PER_CALL], start, end, period))
        return series

    def _one_call(
        self, queries: list[tuple[dict[str, Any], tuple]], start: datetime, end: datetime, period: int
    ) -> list[MetricSeries]:
        points: dict[str, dict[datetime, float]] = {q["Id"]: {} for q, _ in queries}
        status: dict[str, str] = {}
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {
                "MetricDataQueries": [q for q, _ in queries],
                "StartTime": start,
                "EndTime": end,
                "ScanBy": "TimestampAscending",
            }
            if token:
                kwargs["NextToken"] = token
            try:
                page = self._client.get_metric_data(**kwargs)
            except (ClientError, BotoCoreError) as exc:
                raise translate_client_error(exc, "cloudwatch:GetMetricData") from exc
            self.calls += 1
            for result in page.get("MetricDataResults") or []:
                query_id = result.get("Id")
                if query_id not in points:
                    continue
                points[query_id].update(
                    zip(result.get("Timestamps") or [], result.get("Values") or [], strict=False)
                )
                if result.get("StatusCode") and status.get(query_id) != "PartialData":
                    status[query_id] = result["StatusCode"]
            token = page.get("NextToken")
            if not token:
                break
        series = []
        for query, (fs_id, metric, stat) in queries:
            ordered = sorted(points[query["Id"]].items())
            series.append(
                MetricSeries(
                    file_system_id=fs_id,
                    metric=metric,
                    stat=stat,
                    period_s=period,
                    timestamps=tuple(t for t, _ in ordered),
                    values=tuple(float(v) for _, v in ordered),
                    status=status.get(query["Id"], "Complete"),
                )
            )
        return series


def _utc(moment: datetime) -> datetime:
    """Naive datetimes are taken as UTC (CloudWatch's clock), never as local time."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _floor(moment: datetime, period: int) -> datetime:
    return datetime.fromtimestamp(math.floor(_utc(moment).timestamp() / period) * period, tz=UTC)


def _ceil(moment: datetime, period: int) -> datetime:
    return datetime.fromtimestamp(math.ceil(_utc(moment).timestamp() / period) * period, tz=UTC)
