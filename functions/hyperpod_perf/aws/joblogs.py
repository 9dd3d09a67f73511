"""A training job's own logs, streamed from S3 objects or a CloudWatch Logs group.

Streaming matters here: a job's logs can be gigabytes, and the Lambda (or the CLI) must read them
in constant memory. S3 objects are read in blocks from the response body (gzip inflated on the
fly, within a size and a ratio bound: `domain.bounded_stream`), so the job-log scan's block
reader skips the lines no check reads without splitting them; lines are never longer than
`MAX_LINE_BYTES`. CloudWatch events are yielded as they arrive, each as one line in the
CloudWatch export form `| timestamp | message`, so the job-log normaliser keeps the event time.
Both are bounded (objects, bytes, events, line length, decompressed size) and say when a bound
was hit.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.errors import translate_client_error
from hyperpod_perf.aws.logs import API_PAGE_LIMIT, epoch_ms
from hyperpod_perf.aws.s3 import ReportStore, split_s3_uri
from hyperpod_perf.domain.bounded_stream import (
    MAX_LINE_BYTES,
    ReadBounds,
    bounded_lines,
    gunzip_bounded,
    line_range,
)

MAX_JOB_LOG_OBJECTS = 20_000
MAX_JOB_LOG_BYTES = 8 * 1024**3
MAX_JOB_LOG_EVENTS = 2_000_000
_CHUNK = 1024 * 1024

__all__ = ["JobLogSources", "ReadBounds", "S3Log", "iter_log_group", "iter_prefix_logs"]


class S3Log:
    """One S3 object of a job's logs, read when the scan reaches it (one object open at a time).

    `blocks()` gives its (inflated) bytes in blocks for the scan's block reader; iterating gives
    its lines, each at most MAX_LINE_BYTES."""

    def __init__(
        self,
        client: Any,
        bucket: str,
        key: str,
        byte_range: str,
        bounds: ReadBounds,
        lines: tuple[int, int] | None = None,
    ) -> None:
        self.client, self.bucket, self.key, self.range, self.bounds = client, bucket, key, byte_range, bounds
        #: (start, end): only the lines starting in these bytes of a plain object (one Distributed
        #: Map child's share of a large log; `line_range` makes the shares meet exactly)
        self.lines = lines
        self.uri = f"s3://{bucket}/{key}" + (f" (bytes {lines[0]}-{lines[1]})" if lines else "")
        if lines:
            first = max(lines[0] - 1, 0)
            self.range = f"bytes={first}-{lines[1] + MAX_LINE_BYTES}"

    def _raw(self) -> Iterator[bytes]:
        """The object's stored bytes; an object that cannot be read (or breaks while being read)
        is recorded in the bounds with the reason, and the other objects are still read."""
        try:
            ranged = {"Range": self.range} if self.range else {}
            response = self.client.get_object(Bucket=self.bucket, Key=self.key, **ranged)
            body = response["Body"]
            while chunk := body.read(_CHUNK):
                yield chunk
        except (ClientError, BotoCoreError) as exc:
            error = translate_client_error(exc, f"s3:GetObject {self.uri}")
            self.bounds.cut(self.uri, f"not read ({error.reason}): {str(error)[:200]}")

    def blocks(self) -> Iterator[bytes]:
        if self.key.endswith(".gz"):
            return gunzip_bounded(self._raw(), self.uri, self.bounds)
        if self.lines:
            start, end = self.lines
            return line_range(self._raw(), max(start - 1, 0), start, end)
        return self._raw()

    def __iter__(self) -> Iterator[bytes]:
        return bounded_lines(self.blocks(), self.bounds)


def iter_prefix_logs(
    client: Any,
    uri: str,
    bounds: ReadBounds | None = None,
    *,
    max_objects: int = MAX_JOB_LOG_OBJECTS,
    max_bytes: int = MAX_JOB_LOG_BYTES,
) -> Iterator[tuple[str, S3Log]]:
    """(s3 uri, object) of every object under `s3://bucket/prefix`, `.gz` inflated within bounds."""
    bounds = bounds or ReadBounds()
    bucket, prefix = split_s3_uri(uri)
    listed = ReportStore(client, bucket).list_objects(prefix, limit=max_objects + 1)
    objects = [(key, size) for key, size in listed if not key.endswith("/")]
    if len(objects) > max_objects:
        bounds.objects_skipped += len(objects) - max_objects
        objects = objects[:max_objects]
    yield from objects_logs(client, bucket, objects, bounds, max_bytes=max_bytes)


def objects_logs(
    client: Any,
    bucket: str,
    objects: list[tuple[str, int]],
    bounds: ReadBounds,
    *,
    max_bytes: int = MAX_JOB_LOG_BYTES,
) -> Iterator[tuple[str, S3Log]]:
    """(s3 uri, object) of the (key, size) objects given, within a byte budget over them all
    (the stored size: a `.gz` counts what it weighs in S3, its inflated size has its own bound)."""
    budget = max_bytes
    for key, size in objects:
        if budget <= 0:
            bounds.bytes_cut = True
            bounds.objects_skipped += 1
            continue
        log = S3Log(client, bucket, key, f"bytes=0-{budget - 1}", bounds)
        budget -= size
        if budget < 0:
            bounds.bytes_cut = True
        yield log.uri, log


def iter_log_group(
    client: Any,
    group: str,
    start: datetime,
    end: datetime,
    filter_pattern: str | None = None,
    bounds: ReadBounds | None = None,
    *,
    max_events: int = MAX_JOB_LOG_EVENTS,
) -> Iterator[tuple[str, list[bytes]]]:
    """(group:stream, [one line]) per event, in the CloudWatch export form `| time | message`."""
    bounds = bounds or ReadBounds()
    token: str | None = None
    seen = 0
    while True:
        kwargs: dict[str, Any] = {
            "logGroupName": group,
            "startTime": epoch_ms(start),
            "endTime": epoch_ms(end),
            "limit": API_PAGE_LIMIT,
        }
        if filter_pattern:
            kwargs["filterPattern"] = filter_pattern
        if token:
            kwargs["nextToken"] = token
        try:
            page = client.filter_log_events(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise translate_client_error(exc, f"logs:FilterLogEvents {group}") from exc
        for event in page.get("events") or []:
            if seen >= max_events:
                bounds.events_cut = True
                return
            seen += 1
            moment = datetime.fromtimestamp((event.get("timestamp") or 0) / 1000, UTC).isoformat()
            message = (event.get("message") or "").rstrip("\n")
            for line in message.split("\n"):
                raw = f"| {moment} | {line}".encode()
                if len(raw) > MAX_LINE_BYTES:
                    bounds.lines_cut += 1
                    raw = raw[:MAX_LINE_BYTES]
                yield f"{group}:{event.get('logStreamName') or ''}", [raw]
        token = page.get("nextToken")
        if not token:
            return


#: Logs Insights returns at most this many rows per query (CloudWatch Logs quotas).
INSIGHTS_ROWS = 10_000
#: Insights is worth its per-query start-up from this window on (shorter: FilterLogEvents).
INSIGHTS_MIN_WINDOW_S = 15 * 60
INSIGHTS_POLL_S = 1.0
INSIGHTS_WAIT_S = 240.0
#: Queries per window; what is left after them is read with FilterLogEvents.
INSIGHTS_MAX_QUERIES = 64


class InsightsUnavailable(Exception):
    """A Logs Insights query could not run or finish: read the window with FilterLogEvents."""


def _insights_rows(client: Any, group: str, low_ms: int, high_ms: int, query: str, sleep: Any) -> list[dict]:
    try:
        query_id = client.start_query(
            logGroupName=group,
            startTime=low_ms // 1000,  # whole seconds: the rows are cut to [low, high) afterwards
            endTime=-(-high_ms // 1000),
            queryString=query,
            limit=INSIGHTS_ROWS,
        )["queryId"]
        waited = 0.0
        while True:
            answer = client.get_query_results(queryId=query_id)
            status = answer.get("status")
            if status == "Complete":
                break
            if status not in ("Scheduled", "Running") or waited >= INSIGHTS_WAIT_S:
                raise InsightsUnavailable(f"query {status or 'unknown'} after {waited:.0f} s")
            sleep(INSIGHTS_POLL_S)
            waited += INSIGHTS_POLL_S
    except (ClientError, BotoCoreError) as exc:
        raise InsightsUnavailable(str(translate_client_error(exc, f"logs:StartQuery {group}"))) from exc
    return [{field["field"]: field.get("value") for field in row} for row in answer.get("results") or []]


def _insights_ms(value: Any) -> int | None:
    """`@timestamp` as AWS returns it (`2025-06-02 10:00:00.000`, UTC) or in epoch milliseconds."""
    text = str(value or "").strip()
    if text.isdigit():
        return int(text)
    try:
        return epoch_ms(datetime.fromisoformat(text.replace(" ", "T")).replace(tzinfo=UTC))
    except ValueError:
        return None


def iter_log_group_insights(
    client: Any,
    group: str,
    start: datetime,
    end: datetime,
    pattern: str,
    bounds: ReadBounds | None = None,
    *,
    sleep: Any = None,
    max_events: int = MAX_JOB_LOG_EVENTS,
) -> Iterator[tuple[str, list[bytes]]]:
    """The group's events matching `pattern` (a regex of the lines the checks read), found by
    CloudWatch Logs Insights server-side, in the same form as `iter_log_group`.

    Faster than FilterLogEvents on a large group: the service scans in parallel and only the
    lines a check can read come back, where FilterLogEvents pages through every event (10,000 or
    1 MB a call). Rows come sorted by time; a query that fills its 10,000 rows is continued from
    its last timestamp (a time cursor over [start, end]); the rows are cut to the cursor's
    half-open window client-side, so no event is read twice. If Insights cannot be used (no
    permission, a refused or failed query, too many queries), the rest of the window is read with
    FilterLogEvents: the same events, more slowly."""
    import time

    bounds = bounds or ReadBounds()
    sleep = sleep or time.sleep
    query = (
        "fields @timestamp, @message, @logStream | filter @message like /"
        + pattern.replace("/", "\\/")
        + "/ | sort @timestamp asc | limit "
        + str(INSIGHTS_ROWS)
    )
    cursor, high = epoch_ms(start), epoch_ms(end) + 1  # [cursor, high): the part not read yet
    seen = 0
    for _ in range(INSIGHTS_MAX_QUERIES):
        try:
            rows = _insights_rows(client, group, cursor, high, query, sleep)
        except InsightsUnavailable:
            break
        timed = [(ms, row) for row in rows if (ms := _insights_ms(row.get("@timestamp"))) is not None]
        full = len(rows) >= INSIGHTS_ROWS
        last = max((ms for ms, _ in timed), default=cursor)
        upto = last if full else high  # a full answer may have cut rows at its last timestamp
        for ms, row in sorted(timed, key=lambda item: item[0]):
            if not cursor <= ms < upto:
                continue
            if seen >= max_events:
                bounds.events_cut = True
                return
            seen += 1
            moment = datetime.fromtimestamp(ms / 1000, UTC).isoformat()
            message = (row.get("@message") or "").rstrip("\n")
            for line in message.split("\n"):
                raw = f"| {moment} | {line}".encode()
                if len(raw) > MAX_LINE_BYTES:
                    bounds.lines_cut += 1
                    raw = raw[:MAX_LINE_BYTES]
                yield f"{group}:{row.get('@logStream') or ''}", [raw]
        if not full:
            return
        if upto <= cursor:  # one millisecond holds more rows than a query returns
            break
        cursor = upto
    rest_start = datetime.fromtimestamp(cursor / 1000, UTC)
    rest_end = datetime.fromtimestamp((high - 1) / 1000, UTC)
    yield from iter_log_group(client, group, rest_start, rest_end, None, bounds, max_events=max_events - seen)


class JobLogSources:
    """The two places a job's logs are read from, as the pipeline's job-log step uses them."""

    def __init__(self, s3: Any, logs: Any) -> None:
        self._s3 = s3
        self._logs = logs

    @classmethod
    def for_region(cls, region: str | None, profile: str | None = None) -> JobLogSources:
        """For the CLI: clients in the region asked for; a missing region or profile is one clear error."""
        from hyperpod_perf.aws.clients import regional_client

        try:
            return cls(regional_client("s3", region, profile), regional_client("logs", region, profile))
        except BotoCoreError as exc:
            raise translate_client_error(exc, "AWS client set-up (pass --region or set a profile)") from exc

    def prefix(self, uri: str, bounds: ReadBounds) -> Iterator[tuple[str, S3Log]]:
        return iter_prefix_logs(self._s3, uri, bounds)

    def list_prefix(self, uri: str, limit: int) -> tuple[str, list[tuple[str, int]]]:
        """(bucket, [(key, size)]) under an `s3://bucket/prefix` (folder markers left out)."""
        bucket, prefix = split_s3_uri(uri)
        listed = ReportStore(self._s3, bucket).list_objects(prefix, limit=limit)
        return bucket, [(key, size) for key, size in listed if not key.endswith("/")]

    def pieces(
        self, bucket: str, pieces: list[tuple[str, int, int]], bounds: ReadBounds
    ) -> Iterator[tuple[str, S3Log]]:
        """(uri, log) of (key, start, end) pieces: the whole object when end is 0, else the lines
        starting in bytes [start, end) of it (a plain log split between children)."""
        for key, start, end in pieces:
            log = S3Log(self._s3, bucket, key, "", bounds, (start, end) if end else None)
            yield log.uri, log

    def group(
        self,
        group: str,
        start: datetime,
        end: datetime,
        filter_pattern: str | None,
        bounds: ReadBounds,
        insights_pattern: str | None = None,
    ) -> Iterator[tuple[str, list[bytes]]]:
        """The group's events in the window: through Logs Insights when `insights_pattern` is
        given, the window is long enough for it to pay and no FilterLogEvents pattern was asked
        for; FilterLogEvents otherwise (and whenever Insights is unavailable)."""
        wide = (end - start).total_seconds() >= INSIGHTS_MIN_WINDOW_S
        if insights_pattern and not filter_pattern and wide:
            return iter_log_group_insights(self._logs, group, start, end, insights_pattern, bounds)
        return iter_log_group(self._logs, group, start, end, filter_pattern, bounds)
