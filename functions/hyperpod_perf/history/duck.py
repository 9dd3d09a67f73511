"""The named questions on DuckDB, over a local copy of the history (the CLI, the demo, the tests).

Never imported by a Lambda function (DuckDB is a CLI dependency, not in the Lambda asset): the
import of `duckdb` is here alone, and lazy.

Each table is a view over its files, `history/<table>/cluster=…/run_date=…/*.jsonl.gz`, read with
the table's declared column types (not inferred, so every file reads alike) and the two partition
columns from the path as strings, as Athena's projection gives them.

With a `cache` directory each partition (one table, cluster and day) is read from a Parquet copy
made once: gzip JSON Lines has to be decompressed and parsed whole for every question (4–7 s
each over 90 days x 1,024 nodes, bench), Parquet is columnar and each question reads only its
columns. A copy is named by a digest of its partition's file names and sizes, so a day that gets
a new run (today) is copied again, and a day no longer in the history is no longer read; a copy
is written under a temporary name and renamed, so two processes sharing the cache never read a
half-written one. The JSON Lines files stay the source of truth: deleting the cache loses nothing.
`materialize=True` loads the views into tables once instead.
"""

from __future__ import annotations

import hashlib
import os
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


def _read_json(pattern: str, table: str, *, hive: bool) -> str:
    partitions = f", hive_partitioning = true, hive_types = {_struct(PARTITION_KEYS)}" if hive else ""
    return (
        # bandit B608: the only non-constant is a history path, quoted as an SQL literal
        f"SELECT * FROM read_json({_quote(pattern)}, format = 'newline_delimited', "  # nosec B608
        f"columns = {_struct(TABLES[table])}{partitions})"
    )


def cache_for(base: Path, root: Path) -> Path:
    """The Parquet copies of one history directory, under a cache directory shared by several."""
    digest = hashlib.sha256(str(root.resolve()).encode("utf-8")).hexdigest()[:16]
    return base / "columnar" / digest


class HistoryDb:
    """A DuckDB connection with `history_<table>` over the files under `root` (`…/history`)."""

    def __init__(
        self,
        root: Path,
        *,
        materialize: bool = False,
        threads: int | None = None,
        cache: Path | None = None,
    ) -> None:
        import duckdb

        if not root.is_dir():
            raise HistoryError(f"{root}: no run history there (a directory with nodes/, findings/, ...)")
        self._duckdb = duckdb
        self.connection = duckdb.connect(":memory:")
        if threads:
            self.connection.execute(f"SET threads = {int(threads)}")
        #: Partitions copied to Parquet by this connection (the rest were in the cache already).
        self.copied = 0
        for table in TABLES:
            self._create(root, table, materialize, cache)

    def _create(self, root: Path, table: str, materialize: bool, cache: Path | None) -> None:
        folder = root / table
        name = f"{TABLE_PREFIX}{table}"
        if not any(folder.glob("cluster=*/run_date=*/*.jsonl.gz")):
            source = _empty_select(table)
        elif cache is not None:
            copies = [
                self._columnar(table, folder, part, cache)
                for part in sorted(folder.glob("cluster=*/run_date=*"))
            ]
            listed = ", ".join(_quote(c.as_posix()) for c in copies if c is not None)
            source = (
                # bandit B608: the only non-constants are the cache's paths, each quoted as an SQL literal
                f"SELECT * FROM read_parquet([{listed}], hive_partitioning = true, "  # nosec B608
                f"hive_types = {_struct(PARTITION_KEYS)})"
            )
        else:
            pattern = (folder / "cluster=*" / "run_date=*" / "*.jsonl.gz").as_posix()
            source = _read_json(pattern, table, hive=True)
        kind = "TABLE" if materialize else "VIEW"
        try:
            self.connection.execute(f"CREATE {kind} {name} AS {source}")
        except self._duckdb.Error as exc:
            raise HistoryError(
                f"{folder}: cannot read the history files: {str(exc).splitlines()[0]}"
            ) from exc

    def _columnar(self, table: str, folder: Path, partition: Path, cache: Path) -> Path | None:
        """The partition's Parquet copy, made now if its files changed since the last one."""
        files = sorted(partition.glob("*.jsonl.gz"))
        if not files:
            return None
        manifest = "\n".join(f"{f.name}\t{f.stat().st_size}" for f in files)
        digest = hashlib.sha256(manifest.encode("utf-8")).hexdigest()[:16]
        target = cache / table / partition.relative_to(folder) / f"{digest}.parquet"
        if target.is_file():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = target.with_name(f".{digest}.{os.getpid()}.tmp")
        try:
            self.connection.execute(
                f"COPY ({_read_json((partition / '*.jsonl.gz').as_posix(), table, hive=False)}) "
                f"TO {_quote(scratch.as_posix())} (FORMAT parquet)"
            )
            os.replace(scratch, target)
        except self._duckdb.Error as exc:
            scratch.unlink(missing_ok=True)
            raise HistoryError(
                f"{partition}: cannot read the history files: {str(exc).splitlines()[0]}"
            ) from exc
        for stale in target.parent.glob("*.parquet"):
            if stale != target:
                stale.unlink(missing_ok=True)  # the partition's older copy, before its newest run
        self.copied += 1
        return target

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
