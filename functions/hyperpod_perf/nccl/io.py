"""Load nccl-tests logs from files, directories and (through an injected reader) S3.

The S3 reader is passed in, not imported: only `hyperpod_perf.aws` may import boto3, and tests
inject a fake. Errors are collected, not raised, so one unreadable file does not hide the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hyperpod_perf.domain.bounded_read import FileTooLarge, read_bounded

#: `s3://bucket/prefix` -> (name, text) pairs, the name ending in the object's file name.
S3Reader = Callable[[str], Iterable[tuple[str, str]]]

LOG_SUFFIXES = frozenset({".log", ".txt", ".out", ".err"})
MAX_LOG_BYTES = 32 * 1024 * 1024


@dataclass
class LoadedLogs:
    logs: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _read(path: Path, loaded: LoadedLogs) -> None:
    """Bounded by reading, not by `stat` (a FIFO or `/dev/zero` reports size 0 and never ends)."""
    try:
        loaded.logs.append(
            (str(path), read_bounded(path, MAX_LOG_BYTES, "log").decode("utf-8", errors="replace"))
        )
    except FileTooLarge:
        loaded.errors.append(f"{path}: larger than {MAX_LOG_BYTES} bytes; skipped")
    except OSError as exc:
        loaded.errors.append(f"{path}: cannot read ({exc.strerror or exc})")


def load_logs(
    paths: Iterable[str], s3_reader: S3Reader | None = None, on_read: Callable[[str], None] | None = None
) -> LoadedLogs:
    """Files are read as given; directories are walked for *.log/*.txt/*.out/*.err, sorted.
    `on_read` hears each file (or S3 prefix) as it is read: the CLI's progress line."""
    loaded = LoadedLogs()
    heard = on_read or (lambda _name: None)
    for spec in paths:
        if spec.startswith("s3://"):
            if s3_reader is None:
                loaded.errors.append(f"{spec}: S3 paths need AWS credentials (no S3 reader available)")
                continue
            heard(spec)
            try:
                loaded.logs.extend(s3_reader(spec))
            except Exception as exc:
                loaded.errors.append(f"{spec}: cannot list/read ({type(exc).__name__}: {exc})")
            continue
        path = Path(spec)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in LOG_SUFFIXES)
            if not files:
                loaded.errors.append(f"{path}: no *.log/*.txt/*.out/*.err files")
            for file in files:
                heard(str(file))
                _read(file, loaded)
        elif path.exists():  # a file, a FIFO, a device: read with the bound
            heard(str(path))
            _read(path, loaded)
        else:
            loaded.errors.append(f"{path}: no such file or directory")
    return loaded
