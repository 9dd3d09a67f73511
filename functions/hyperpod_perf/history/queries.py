"""The named questions over the run history: one SQL text each, valid in Trino and DuckDB.

Why one text for both engines: the same question answered by the CLI (DuckDB over the files) and
by Athena (the stack's named queries) must not drift apart. Each text lives in `sql/<name>.sql`,
uses only what both dialects share (positional `?` parameters, `min_by`/`max_by`, `regr_slope`,
window functions; times as fixed-format UTC strings, so string order is time order), and names
the tables as the Glue catalog does (`history_<table>`). Tests parse every text with sqlglot in
both dialects and run it on DuckDB over the files the demo writes.

Every question starts with `cluster = ?` and a `run_date >= ?` bound: the Glue table projects the
cluster partition as `injected` (any name, no crawler) and Athena prunes the dates from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from importlib.resources import files
from typing import Any

#: Prefix of the tables in the Glue database and the DuckDB views.
TABLE_PREFIX = "history_"


@dataclass(frozen=True)
class Question:
    name: str
    title: str
    #: The `?` placeholders in order, each the name of a value `bind` reads.
    parameters: tuple[str, ...]

    @property
    def sql(self) -> str:
        return _sql_text(self.name)

    def bind(self, values: dict[str, Any]) -> list[Any]:
        """The positional values for the placeholders, from named ones (a missing name is a KeyError)."""
        return [values[name] for name in self.parameters]


QUESTIONS: tuple[Question, ...] = (
    Question(
        "xid_nodes",
        "Nodes with an Xid (any, or one code) in the look-back",
        ("cluster", "since_date", "since_time", "code", "code"),
    ),
    Question(
        "chronic_stragglers",
        "Nodes flagged slow or outlier in at least k of the last n runs",
        ("cluster", "since_date", "last_runs", "cluster", "since_date", "min_flagged"),
    ),
    Question(
        "gpu_serial_moves",
        "GPU serials seen on more than one instance",
        ("cluster", "since_date", "cluster", "since_date"),
    ),
    Question(
        "pair_bandwidth_trend",
        "Nodes whose pair bandwidth trends down",
        ("cluster", "since_date", "min_runs", "min_drop"),
    ),
    Question(
        "concerns_by_check",
        "The fleet's concerns by check over time",
        ("cluster", "since_date"),
    ),
)
BY_NAME: dict[str, Question] = {q.name: q for q in QUESTIONS}


@cache
def _sql_text(name: str) -> str:
    return files("hyperpod_perf.history").joinpath("sql", f"{name}.sql").read_text(encoding="utf-8")


def window(now: datetime, days: int) -> dict[str, str]:
    """`since_date` / `since_time` for "the last `days` days" (UTC, the rows' string formats)."""
    since = now - timedelta(days=days)
    return {"since_date": since.strftime("%Y-%m-%d"), "since_time": since.strftime("%Y-%m-%dT%H:%M:%SZ")}
