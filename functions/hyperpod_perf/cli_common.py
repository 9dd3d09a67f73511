"""Helpers shared by the CLI's sub-command modules."""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import ValidationError

from hyperpod_perf.rules.thresholds import Thresholds, ThresholdsError, load_thresholds

EXIT_OK, EXIT_CONCERN, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad arguments or unreadable input: reported as one line, exit 2."""


def load_thresholds_or_exit(path: str | None) -> Thresholds:
    try:
        return load_thresholds(path)
    except ThresholdsError as exc:
        raise UsageError(str(exc)) from exc


def read_text_or_exit(path: str | Path) -> str:
    try:
        return Path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def emit(text: str, out: str | Path | None) -> None:
    if out:
        Path(out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def first_line(exc: Exception) -> str:
    """One line for the operator: a validation error's first field and message, else the first line."""
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        return f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
    return str(exc).splitlines()[0]
