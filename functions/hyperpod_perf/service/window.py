"""The look-back window of a diagnosis (`--since 3h`), bounded by what CloudWatch keeps."""

from __future__ import annotations

import re
from datetime import timedelta

from hyperpod_perf.service.errors import DiagnosisError

WINDOW_RE = re.compile(r"^\s*(?P<amount>\d+)\s*(?P<unit>[smhd])\s*$", re.IGNORECASE)


WINDOW_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


#: CloudWatch keeps 1-minute metrics 15 days; a longer window would silently coarsen the data.
MAX_WINDOW = timedelta(days=15)


def parse_window(text: str) -> timedelta:
    """`3h`, `90m`, `1d`, `45s` -> a timedelta (positive, at most 15 days)."""
    match = WINDOW_RE.match(text or "")
    if not match:
        raise DiagnosisError(f"--since {text!r}: expected a number and a unit s/m/h/d, e.g. 3h, 90m, 1d")
    window = timedelta(**{WINDOW_UNITS[match["unit"].lower()]: int(match["amount"])})
    if window <= timedelta(0):
        raise DiagnosisError(f"--since {text!r}: the window must be longer than zero")
    if window > MAX_WINDOW:
        raise DiagnosisError(f"--since {text!r}: at most 15d (CloudWatch keeps 1-minute data 15 days)")
    return window
