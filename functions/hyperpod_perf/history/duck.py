"""The named questions on DuckDB, over a local copy of the history (the CLI, the demo, the tests).

Never imported by a Lambda function (DuckDB is a CLI dependency, not in the Lambda asset): the
import of `duckdb` is here alone, and lazy.

Each table is a view over its files, `history/<table>/cluster=…/run_date=…/*.jsonl.gz`, read with
the table's declared column types (not inferred, so every file reads alike) and the two partition
columns from the path as strings, as Athena's projection gives them. `materialize=True` loads the
views into tables once (the large look-backs: DuckDB then answers from memory, not by re-reading
every file for every question).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hyperpod_perf.history.queries import TABLE_PREFIX, Question
from hyperpod_perf.history.rows import PARTITION_KEYS, TABLES, duckdb_type


class HistoryError(ValueError):
    """The history cannot be read (no such directory, damaged objects): one line for the operator."""


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _struct(pairs: Sequence[tuple[str, str]]) -> str:
    return "{" + ", ".join(f"{_quote(name)}: {_quote(duckdb_type(kind))}" for name, kind in pairs) + "}"


def _empty_select(table: str) -> str:
    columns = [*TABLES[table], *PARTITION_KEYS]
    return (
        "SELECT " + ", ".join(f"CAST(NULL AS {duckdb_type(k)}) AS {n}" for n, k in columns) + " WHERE false"
    )


class HistoryDb:
    """A DuckDB connection with `history_<table>` over the files under `root` (`…/history`)."""

    def __init__(self, root: Path, *, materialize: bool = False, threads: int | None = None) -> None:
        import duckdb

        if not root.is_dir():
            raise HistoryError(f"{root}: no run history there (a directory with nodes/, findings/, ...)")
        self._duckdb = duckdb
        self.connection = duckdb.connect(":memory:")
        if threads:
            self.connection.execute(f"SET threads = {int(threads)}")
        for table in TABLES:
            self._create(root, table, materialize)

    def _create(self, root: Path, table: str, materialize: bool) -> None:
        folder = root / table
        name = f"{TABLE_PREFIX}{table}"
        if not any(folder.glob("cluster=*/run_date=*/*.jsonl.gz")):
            source = _empty_select(table)
        else:
            pattern = (folder / "cluster=*" / "run_date=*" / "*.jsonl.gz").as_posix()
            source = (
                # bandit B608: the only non-constant is the history path, quoted as an SQL literal
                f"SELECT * FROM read_json({_quote(pattern)}, format = 'newline_delimited', "  # nosec B608
                f"columns = {_struct(TABLES[table])}, hive_partitioning = true, "
                f"hive_types = {_struct(PARTITION_KEYS)})"
            )
        kind = "TABLE" if materialize else "VIEW"
        try:
            self.connection.execute(f"CREATE {kind} {name} AS {source}")
        except self._duckdb.Error as exc:
            raise HistoryError(
                f"{folder}: cannot read the history files: {str(exc).splitlines()[0]}"
            ) from exc

    def ask(self, question: Question, values: dict[str, Any]) -> tuple[list[str], list[tuple[Any, ...]]]:
        """The question's column names and rows."""
        try:
            cursor = self.connection.execute(question.sql, question.bind(values))
            rows = cursor.fetchall()
        except self._duckdb.Error as exc:
            raise HistoryError(f"{question.name}: {str(exc).splitlines()[0]}") from exc
        return [d[0] for d in cursor.description], rows

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> HistoryDb:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
