"""What every benchmark shares: a figure with its spread and its limit, timing, the machine.

Why one `Figure` type: RESULTS.md must show every number the same way — median and spread over
repeated runs and, where the issues set a limit, the ratio to it and whether it is met — so no
benchmark can quietly report a best case.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

Progress = Callable[[str], None]


@dataclass
class Figure:
    """One measured quantity over repeated runs.

    `limit_kind` says which side of the limit is good: "max" (the value must stay under it, e.g.
    seconds) or "min" (it must reach it, e.g. efficiency). `ratio` is median / limit either way.
    """

    name: str
    unit: str
    samples: list[float]
    limit: float | None = None
    limit_kind: str = "max"
    source: str = ""  # the issue that set the limit
    note: str = ""
    why: str = ""  # what this run measured about the cause, shown if the target is missed
    #: measured / emulated / modelled; empty: the section's kind (bench/sections.py)
    kind: str = ""
    #: The 1-minute load average when the figure was taken (by default: when it was made, right
    #: after its samples in most benchmarks; a benchmark that knows better sets it, as
    #: {"min", "max"} over its runs where there are several).
    load_average_1m: float | dict[str, float] | None = field(default_factory=lambda: load_average())

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> tuple[float, float]:
        return min(self.samples), max(self.samples)

    @property
    def ratio(self) -> float | None:
        if self.limit is None or self.limit == 0:
            return None
        return self.median / self.limit

    @property
    def met(self) -> bool | None:
        if self.limit is None:
            return None
        return self.median <= self.limit if self.limit_kind == "max" else self.median >= self.limit

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            median=self.median,
            min=self.spread[0],
            max=self.spread[1],
            runs=len(self.samples),
            ratio=self.ratio,
        )
        data["met"] = self.met
        return data


@dataclass
class BenchResult:
    """What one benchmark module returns from `run()`."""

    name: str
    title: str
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tables: list[tuple[str, list[str], list[list[str]]]] = field(
        default_factory=list
    )  # caption, header, rows
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "figures": [f.to_dict() for f in self.figures],
            "notes": self.notes,
            "tables": [{"caption": c, "header": h, "rows": r} for c, h, r in self.tables],
            "details": self.details,
            "seconds": self.seconds,
        }


def repeat(fn: Callable[[], Any], runs: int) -> tuple[list[float], Any]:
    """Wall seconds of `runs` calls, and the last call's result."""
    timings, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        timings.append(time.perf_counter() - started)
    return timings, result


def project_root() -> Path:
    return Path(__file__).resolve().parents[1]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    """The machine the figures were measured on (they mean little without it)."""
    try:
        memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        memory_gib = None
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(memory_gib, 1) if memory_gib else None,
        "os": f"{platform.system()} {platform.release()}",
        "arch": platform.machine(),
        "python": sys.version.split()[0],
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average_1m": load_average(),
    }


def load_average() -> float | None:
    """Other work on the machine inflates wall times; RESULTS.md records the load around the run."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def fmt(value: float, unit: str) -> str:
    """Human-sized number for the tables."""
    if unit == "$":
        return f"${value:.4f}" if value < 1 else f"${value:,.2f}"
    if abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    elif abs(value) >= 1:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3f}"
    return f"{text} {unit}".strip()


def git_commit() -> str:
    """The commit measured (with `+dirty` when the work tree differs from it)."""

    def git(*args: str) -> str:
        here = Path(__file__).resolve().parent
        done = subprocess.run(["git", *args], cwd=here, capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def sized_runs_cli(
    argv: list[str] | None,
    *,
    doc: str,
    plan: tuple[tuple[int, int], ...],
    scale: float,
    measure: Callable[[tuple[tuple[int, int], ...], float], BenchResult],
) -> int:
    """The command line of the benches that run the pipeline at several cluster sizes.

    `--sizes 8,64 --runs 2 --scale 0.5` → `measure(((8, 2), (64, 2)), 0.5)`; prints its first
    table one row a line, its notes, and the wall time, so a size can be re-measured alone.
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(n) for n, _ in plan))
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--scale", type=float, default=scale)
    args = parser.parse_args(argv)
    began = time.monotonic()
    result = measure(tuple((int(n), args.runs) for n in args.sizes.split(",")), args.scale)
    caption, header, rows = result.tables[0]
    print(caption)
    for row in rows:
        print("  " + "; ".join(f"{h}: {v}" for h, v in zip(header, row, strict=True)))
    for note in result.notes:
        print(f"- {note}")
    print(f"{time.monotonic() - began:.0f} s")
    return 0
