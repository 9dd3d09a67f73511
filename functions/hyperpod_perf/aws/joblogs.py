"""A training job's own logs, streamed from S3 objects or a CloudWatch Logs group.

Streaming matters here: a job's logs can be gigabytes, and the Lambda (or the CLI) must read them
in constant memory. S3 objects are read line by line from the response body (gzip decompressed
on the fly); CloudWatch events are yielded as they arrive, each as one line in the CloudWatch
export form `| timestamp | message`, so the job-log normaliser keeps the event time. Both are
bounded (objects, bytes, events) and say when a bound was hit.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.errors import translate_client_error
from hyperpod_perf.aws.logs import API_PAGE_LIMIT, epoch_ms
from hyperpod_perf.aws.s3 import ReportStore, split_s3_uri

MAX_JOB_LOG_OBJECTS = 20_000
MAX_JOB_LOG_BYTES = 8 * 1024**3
MAX_JOB_LOG_EVENTS = 2_000_000
_CHUNK = 1024 * 1024


@dataclass
class ReadBounds:
    """What a read skipped because of its bounds (reported to the operator, never silent)."""

    objects_skipped: int = 0
    bytes_cut: bool = False
    events_cut: bool = False


def _lines(body: Any) -> Iterator[bytes]:
    """Byte lines of a streaming body, keeping at most one partial line in memory."""
    rest = b""
    while chunk := body.read(_CHUNK):
        chunk = rest + chunk
        lines = chunk.split(b"\n")
        rest = lines.pop()
        yield from lines
    if rest:
        yield rest


def iter_prefix_logs(
    client: Any,
    uri: str,
    bounds: ReadBounds | None = None,
    *,
    max_objects: int = MAX_JOB_LOG_OBJECTS,
    max_bytes: int = MAX_JOB_LOG_BYTES,
) -> Iterator[tuple[str, Iterator[bytes]]]:
    """(s3 uri, byte lines) of every object under `s3://bucket/prefix`, `.gz` decompressed."""
    bounds = bounds or ReadBounds()
    bucket, prefix = split_s3_uri(uri)
    keys = [
        k for k in ReportStore(client, bucket).list_keys(prefix, limit=max_objects + 1) if not k.endswith("/")
    ]
    if len(keys) > max_objects:
        bounds.objects_skipped = len(keys) - max_objects
        keys = keys[:max_objects]
    budget = max_bytes
    for key in keys:
        if budget <= 0:
            bounds.bytes_cut = True
            bounds.objects_skipped += 1
            continue
        try:
            response = client.get_object(Bucket=bucket, Key=key, Range=f"bytes=0-{budget - 1}")
        except (ClientError, BotoCoreError) as exc:
            raise translate_client_error(exc, f"s3:GetObject s3://{bucket}/{key}") from exc
        length = int(response.get("ContentLength") or 0)
        budget -= length
        body = response["Body"]
        if key.endswith(".gz"):
            body = gzip.GzipFile(fileobj=body)
        yield f"s3://{bucket}/{key}", _lines(body)


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
                yield f"{group}:{event.get('logStreamName') or ''}", [f"| {moment} | {line}".encode()]
        token = page.get("nextToken")
        if not token:
            return


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

    def prefix(self, uri: str, bounds: ReadBounds) -> Iterator[tuple[str, Iterator[bytes]]]:
        return iter_prefix_logs(self._s3, uri, bounds)

    def group(
        self, group: str, start: datetime, end: datetime, filter_pattern: str | None, bounds: ReadBounds
    ) -> Iterator[tuple[str, list[bytes]]]:
        return iter_log_group(self._logs, group, start, end, filter_pattern, bounds)
