"""The run history in the report bucket: Evaluate writes a run's rows, Publish reads the look-back.

Why Evaluate writes and Publish reads: each step's role then holds one side only — Evaluate
`s3:PutObject` on `history/*`, Publish `s3:GetObject`/`s3:ListBucket` there — and the rows of the
run being published are already in place when its repeat offenders are counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.domain.errors import AwsAdapterError
from hyperpod_perf.domain.layout import RunLayout, history_cluster_prefix, history_key, run_id
from hyperpod_perf.domain.report import Report
from hyperpod_perf.history.encoding import decode_rows, encode_rows
from hyperpod_perf.history.rows import TABLES, history_rows, run_date

#: The look-back reads at most this many runs' findings objects, newest first (a cluster diagnosed
#: every 15 minutes for 30 days has 2,880; the bound keeps Publish's time and memory fixed).
MAX_LOOKBACK_OBJECTS = 600
READ_WORKERS = 8


def record_run(
    store: ReportStore, run: RunLayout, report: Report, repairs: Mapping[str, str] | None = None
) -> dict[str, int]:
    """One object per table for this run; returns the rows written per table."""
    rid = run_id(run)
    rows = history_rows(report, rid, repairs=repairs)
    day = run_date(rows, run.started[:10])
    for table in TABLES:
        store.put_bytes(
            history_key(table, report.cluster.name, day, rid),
            encode_rows(table, rows[table]),
            "application/gzip",
        )
    return {table: len(rows[table]) for table in TABLES}


def _key_date(key: str) -> str:
    marker = "/run_date="
    at = key.find(marker)
    return key[at + len(marker) : at + len(marker) + 10] if at >= 0 else ""


def recent_rows(
    store: ReportStore, table: str, cluster: str, now: datetime, days: int
) -> tuple[list[dict[str, Any]], int]:
    """The table's rows of the cluster's runs of the last `days` days (bounded); and how many
    objects the bound left out (0 normally)."""
    since = (now - timedelta(days=days)).strftime("%Y-%m-%d")
    keys = [k for k in store.list_keys(history_cluster_prefix(table, cluster)) if _key_date(k) >= since]
    keys.sort(key=lambda k: (_key_date(k), k), reverse=True)
    left_out = max(0, len(keys) - MAX_LOOKBACK_OBJECTS)
    keys = keys[:MAX_LOOKBACK_OBJECTS]

    def read(key: str) -> list[dict[str, Any]]:
        try:
            return decode_rows(store.get_bytes(key))
        except (AwsAdapterError, OSError, ValueError):  # one unreadable object loses only its run
            return []

    with ThreadPoolExecutor(max_workers=READ_WORKERS) as pool:
        batches = list(pool.map(read, keys))
    return [row for batch in batches for row in batch], left_out
