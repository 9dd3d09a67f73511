"""Deep health check results and Health Monitoring Agent events from the cluster's log group.

HyperPod writes both under `/aws/sagemaker/Clusters/<cluster-name>/<cluster-id>`: streams
`DeepHealthCheckResults/<id>` and `SagemakerHealthMonitoringAgent/<group>/<instance-id>`. The
search is bounded (max events per kind) because a long window on a large cluster can hold
far more lines than a report can use; hitting the bound is reported, never silent.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.errors import translate_client_error
from hyperpod_perf.domain.cluster import LogFetch, LogKind, LogRecord
from hyperpod_perf.domain.errors import NotFound

DEEP_HEALTH_PREFIX = "DeepHealthCheckResults/"
HMA_PREFIX = "SagemakerHealthMonitoringAgent/"
HMA_MARKER = "HealthMonitoringAgentDetectionEvent"
API_PAGE_LIMIT = 10_000

#: kind -> (stream prefix, filter pattern or None)
SEARCHES: tuple[tuple[LogKind, str, str | None], ...] = (
    (LogKind.DEEP_HEALTH, DEEP_HEALTH_PREFIX, None),
    (LogKind.HMA, HMA_PREFIX, f'"{HMA_MARKER}"'),
)


def cluster_log_group(cluster_name: str, cluster_id: str) -> str:
    return f"/aws/sagemaker/Clusters/{cluster_name}/{cluster_id}"


def epoch_ms(moment: datetime) -> int:
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return int(aware.timestamp() * 1000)


class ClusterLogs:
    def __init__(self, client: Any, *, page_size: int = API_PAGE_LIMIT) -> None:
        self._client = client
        self._page_size = max(1, min(page_size, API_PAGE_LIMIT))

    def fetch(
        self, cluster_name: str, cluster_id: str, start: datetime, end: datetime, *, max_events: int = 2000
    ) -> LogFetch:
        group = cluster_log_group(cluster_name, cluster_id)
        records: list[LogRecord] = []
        truncated = False
        for kind, prefix, pattern in SEARCHES:
            try:
                found, cut = self._search(group, kind, prefix, pattern, start, end, max_events)
            except NotFound:
                return LogFetch(log_group=group, group_missing=True)
            records.extend(found)
            truncated = truncated or cut
        return LogFetch(log_group=group, records=tuple(records), truncated=truncated)

    def _search(
        self,
        group: str,
        kind: LogKind,
        prefix: str,
        pattern: str | None,
        start: datetime,
        end: datetime,
        max_events: int,
    ) -> tuple[list[LogRecord], bool]:
        records: list[LogRecord] = []
        seen: set[str] = set()
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {
                "logGroupName": group,
                "logStreamNamePrefix": prefix,
                "startTime": epoch_ms(start),
                "endTime": epoch_ms(end),
                "limit": min(self._page_size, max_events - len(records) + 1),
            }
            if pattern:
                kwargs["filterPattern"] = pattern
            if token:
                kwargs["nextToken"] = token
            try:
                page = self._client.filter_log_events(**kwargs)
            except (ClientError, BotoCoreError) as exc:
                raise translate_client_error(exc, f"logs:FilterLogEvents {group}") from exc
            token = page.get("nextToken")
            for event in page.get("events") or []:
                stream = event.get("logStreamName") or ""
                event_id = event.get("eventId")
                # the prefix is re-checked here: not every implementation honours it
                if not stream.startswith(prefix) or (event_id and event_id in seen):
                    continue
                if len(records) >= max_events:
                    return records, True  # one more matching event than the bound allows
                if event_id:
                    seen.add(event_id)
                records.append(
                    LogRecord(
                        kind=kind,
                        stream=stream,
                        timestamp_ms=event.get("timestamp"),
                        message=event.get("message") or "",
                        event_id=event_id,
                    )
                )
            if not token:
                return records, False
            if len(records) >= max_events:
                return records, True
