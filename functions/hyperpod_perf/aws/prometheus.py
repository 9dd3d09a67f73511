"""Range queries against Prometheus' HTTP API: a plain URL, or an Amazon Managed Prometheus workspace.

Both speak the same API (Prometheus docs, "HTTP API", `/api/v1/query_range`: a form-encoded POST of
`query`, `start`, `end`, `step`; the answer `{"status": "success", "data": {"resultType": "matrix",
"result": [{"metric": {...}, "values": [[<unix seconds>, "<value>"], ...]}]}}`, or `{"status":
"error", "errorType": ..., "error": ...}` with HTTP 400 / 422 / 503). An AMP workspace serves it at
`https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/api/v1/query_range`, signed with
SigV4 for the service `aps` (AMP User Guide, "Query using Prometheus-compatible APIs"; IAM action
`aps:QueryMetrics`). The signature is botocore's own (`SigV4Auth`), never hand-made.

HTTP failures become the project's named errors, so the state machine can Retry / Catch them:
429 -> Throttled, 5xx / connection -> TransientError, 401 / 403 -> AccessDenied, 404 -> NotFound,
400 / 422 (a query Prometheus rejects) -> InvalidRequest.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import urllib3

from hyperpod_perf.domain.errors import (
    AccessDenied,
    AwsAdapterError,
    InvalidRequest,
    NotFound,
    Throttled,
    TransientError,
)

#: An answer bigger than this is refused, not parsed (1,024 nodes x 240 points is ~ 8 MB).
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
QUERY_TIMEOUT_SECONDS = 60.0
#: Connections kept per host: the metrics stage runs a few queries at once.
POOL_SIZE = 8


@dataclass(frozen=True)
class RangeSeries:
    """One series of a matrix: its labels, its sample times (unix seconds) and values, aligned."""

    labels: dict[str, str]
    times: list[float]
    values: list[float]

    @property
    def points(self) -> list[tuple[float, float]]:
        return list(zip(self.times, self.values, strict=True))


class PrometheusHttp:
    """Prometheus' HTTP API at a base URL (`http://host:9090`), unsigned."""

    def __init__(
        self,
        base_url: str,
        *,
        pool: urllib3.PoolManager | None = None,
        timeout: float = QUERY_TIMEOUT_SECONDS,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._pool = pool or urllib3.PoolManager(retries=False, maxsize=POOL_SIZE)
        self._timeout = timeout

    @property
    def source(self) -> str:
        return self.base_url

    def _headers(self, url: str, body: str) -> dict[str, str]:
        return {"Content-Type": "application/x-www-form-urlencoded"}

    def query_range(self, query: str, start: datetime, end: datetime, step_seconds: int) -> list[RangeSeries]:
        url = f"{self.base_url}/api/v1/query_range"
        body = urlencode(
            {
                "query": query,
                "start": f"{start.timestamp():.3f}",
                "end": f"{end.timestamp():.3f}",
                "step": f"{step_seconds}s",
            }
        )
        context = f"query_range {self.source}"
        try:
            response = self._pool.request(
                "POST",
                url,
                body=body.encode(),
                headers=self._headers(url, body),
                timeout=urllib3.Timeout(total=self._timeout),
                preload_content=False,
            )
        except urllib3.exceptions.HTTPError as exc:
            raise TransientError(f"cannot reach the metrics source: {exc}", context=context) from exc
        try:
            raw = response.read(MAX_RESPONSE_BYTES + 1)
        finally:
            response.release_conn()
        if len(raw) > MAX_RESPONSE_BYTES:
            raise InvalidRequest(
                f"answer larger than {MAX_RESPONSE_BYTES} bytes: narrow the window", context=context
            )
        return parse_matrix(response.status, raw, context)


class NoRegion(ValueError):
    """No region given and none in the profile: the AMP endpoint cannot be named."""


class AmpWorkspace(PrometheusHttp):
    """An Amazon Managed Prometheus workspace, every request signed with SigV4 (service `aps`)."""

    SERVICE = "aps"

    def __init__(
        self,
        workspace_id: str,
        *,
        region: str,
        credentials: Any = None,
        endpoint: str | None = None,
        pool: urllib3.PoolManager | None = None,
    ) -> None:
        base = endpoint or f"https://aps-workspaces.{region}.amazonaws.com"
        super().__init__(f"{base.rstrip('/')}/workspaces/{workspace_id}", pool=pool)
        self.workspace_id = workspace_id
        self.region = region
        self._credentials = credentials

    @classmethod
    def with_profile(cls, workspace_id: str, *, region: str | None, profile: str | None) -> AmpWorkspace:
        """The workspace signed with a named profile's (or the default chain's) credentials."""
        import boto3

        session = boto3.Session(profile_name=profile, region_name=region)
        if not session.region_name:
            raise NoRegion("--amp-workspace needs a region (--region or the profile's)")
        return cls(workspace_id, region=session.region_name, credentials=session.get_credentials())

    @classmethod
    def with_session(cls, workspace_id: str, *, region: str | None, session: Any) -> AmpWorkspace:
        """The workspace signed with a botocore session's credentials (a function's own: no
        profile, so no boto3 to load; `aws/clients.py`)."""
        region = region or session.get_config_variable("region")
        if not region:
            raise NoRegion("the AMP workspace needs a region (the request's or AWS_REGION)")
        return cls(workspace_id, region=region, credentials=session.get_credentials())

    @property
    def source(self) -> str:
        return f"amp:{self.region}:{self.workspace_id}"

    def _headers(self, url: str, body: str) -> dict[str, str]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        credentials = self._credentials
        if credentials is None:
            import botocore.session

            credentials = botocore.session.get_session().get_credentials()
            if credentials is None:
                raise AccessDenied("no AWS credentials to sign the AMP query with", context=self.source)
        request = AWSRequest(
            method="POST", url=url, data=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
        SigV4Auth(credentials.get_frozen_credentials(), self.SERVICE, self.region).add_auth(request)
        return dict(request.headers.items())


_gc_lock = threading.Lock()
_gc_pausers = 0


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while an answer is parsed (the queries' threads share it).

    Why: an answer of 1,024 series x 240 points is ~500,000 new lists and tuples, none in a cycle,
    and each allocation burst triggers a collection that walks them all: measured here, 0.58-0.70 s
    per answer with the collector against 0.23 s without (bench/bench_metrics.py). Reference
    counting still frees everything; the collector resumes when the last parser is done.
    """
    global _gc_pausers
    with _gc_lock:
        _gc_pausers += 1
        was_enabled = gc.isenabled() if _gc_pausers == 1 else True
        gc.disable()
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausers -= 1
            if _gc_pausers == 0 and was_enabled:
                gc.enable()


def _points_one_by_one(pairs: object) -> list[tuple[float, float]]:
    """A series with a garbled sample: the others kept."""
    points = []
    for pair in pairs if isinstance(pairs, list) else ():
        try:
            points.append((float(pair[0]), float(pair[1])))
        except (TypeError, ValueError, IndexError, KeyError):
            continue
    return points


def parse_matrix(status: int, raw: bytes, context: str) -> list[RangeSeries]:
    """The matrix of a query_range answer, or the named error its status and body say."""
    with _gc_paused():
        return _parse_matrix(status, raw, context)


def _parse_matrix(status: int, raw: bytes, context: str) -> list[RangeSeries]:
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        document = None
    detail = ""
    if isinstance(document, dict) and document.get("status") == "error":
        detail = f"{document.get('errorType', 'error')}: {document.get('error', '')}"
    elif status >= 400:
        detail = raw[:200].decode("utf-8", errors="replace").strip()
    error: type[AwsAdapterError] | None = None
    if status == 429:
        error = Throttled
    elif status >= 500:
        error = TransientError
    elif status in (401, 403):
        error = AccessDenied
    elif status == 404:
        error = NotFound
    elif status >= 400 or detail:
        error = InvalidRequest
    if error:
        raise error(detail or f"HTTP {status}", code=str(status), context=context)
    if not isinstance(document, dict) or not isinstance(document.get("data"), dict):
        raise InvalidRequest("not a Prometheus API answer (no data)", context=context)
    data = document["data"]
    if data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise InvalidRequest(f"expected a matrix, got {data.get('resultType')!r}", context=context)
    series: list[RangeSeries] = []
    for entry in data["result"]:
        labels = entry.get("metric") or {}
        pairs = entry.get("values") or ()
        try:  # the common case in two comprehensions (5.6 M points per run at 1,024 nodes): the
            # times are JSON numbers already, the values strings ("1980", "NaN")
            times = [t for t, _ in pairs]
            values = [float(v) for _, v in pairs]
            total = sum(times) + sum(values)  # TypeError on a time that is not a number
        except (TypeError, ValueError):
            times, values, total = _points_one_by_one(pairs), [], math.nan
            times, values = [t for t, _ in times], [v for _, v in times]
        if not math.isfinite(total):  # "NaN" (0/0), "+Inf" (x/0) somewhere: keep the finite ones
            kept = [(t, v) for t, v in zip(times, values, strict=True) if math.isfinite(v)]
            times, values = [t for t, _ in kept], [v for _, v in kept]
        series.append(RangeSeries({str(k): str(v) for k, v in labels.items()}, times, values))
    return series
