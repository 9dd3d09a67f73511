"""Parser for nccl-tests `*_perf` output (all_reduce_perf, all_gather_perf, ...).

Operators hand us whatever their launcher printed: srun `--label` (`0: `) or mpirun
`--tag-output` (`[1,0]<stdout>:`) prefixes, banners from several nccl-tests generations, jobs
killed mid-table, and excerpts pasted with `...` where rows were cut. The parser therefore reads
line by line, keeps what it can measure and records everything odd in `problems` instead of
failing: a half-finished run still tells us the bandwidth it reached.

Error model:
- `parse_nccl_tests(text)` is total: it never raises on any string and returns a
  `NcclTestsLog` whose `problems` say what was missing or odd.
- `parse_nccl_tests_strict(text)` raises `NcclTestsParseError` (a `ValueError`) when the text holds
  no measured row at all; use it where a parse failure must become a collection finding
  (`NodeContext.section`).

The pair figure (`NcclRun.pair_busbw_gbps`) is the bus bandwidth at the largest message sizes:
for each of the two largest sizes measured, the mean of its busbw values (out-of-place and
in-place, all rows of that size); the figure is the larger of the two. Why:
- "Avg bus bandwidth" averages every size, so small, latency-bound messages drag it down;
  only the large sizes measure the link.
- Two sizes, not one, so a transient dip at a single size does not make a healthy pair look slow
  (a degraded link is slow at both).
- The maximum, not the mean, of the two: when the curve is still climbing at the top of the
  sweep, the second-largest size understates the link (real p5 excerpt: 313 GB/s at 1 GiB,
  438 GB/s at 2 GiB).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

_PREFIX = re.compile(
    r"^\s*(?:\[\d+,\d+\]<(?:stdout|stderr)>:\s?"  # mpirun --tag-output
    r"|\d+:\s"  # srun --label
    r"|\[pod/[^\]\s]+\]\s)"  # kubectl logs --prefix
)
_RANK = re.compile(
    r"^#\s*Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?(?:Pid\s+(\d+)\s+)?on\s+(\S+)\s+device\s+(\d+)"
    r"(?:\s+\[([^\]]*)\])?\s*(.*)$"
)
_NTHREAD = re.compile(r"^#?\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)")
_ITERS = re.compile(r"(?<![a-z] )iters:\s*(\d+)")
_VALIDATION = re.compile(r"validation:\s*(\d+)")
_VERSION = re.compile(r"^#\s*nccl-tests version\s+(\S+)")
_NCCL_VERSION = re.compile(r"^\s*#?\s*NCCL version\s+(\S+)")
_COLLECTIVE = re.compile(r"^#\s*Collective test (starting|concluded):\s*(\S+)")
_OOB = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_AVG = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?")
_ELISIONS = frozenset({"...", "[...]", "…", "# ..."})

#: Column-header aliases across nccl-tests generations (old builds print `bytes N type op ... res`).
_HEADER_ALIASES = {
    "size": "size",
    "bytes": "size",
    "count": "count",
    "n": "count",
    "type": "type",
    "redop": "redop",
    "op": "redop",
    "root": "root",
    "time": "time",
    "algbw": "algbw",
    "busbw": "busbw",
    "#wrong": "wrong",
    "wrong": "wrong",
    "error": "error",
    "res": "error",
}


class NcclTestsParseError(ValueError):
    """The text holds no nccl-tests measurement at all."""


@dataclass(frozen=True, slots=True)
class RankDevice:
    """One `#  Rank N Group G Pid P on HOST device D [bus] NAME` line."""

    rank: int
    host: str
    device: int
    group: int | None = None
    pid: int | None = None
    bus_id: str | None = None
    gpu_name: str | None = None


@dataclass(frozen=True, slots=True)
class Half:
    """One half of a table row (out-of-place or in-place); `None` where the tool printed N/A."""

    time_us: float | None
    algbw_gbps: float | None
    busbw_gbps: float | None
    wrong: int | None


@dataclass(frozen=True, slots=True)
class NcclRow:
    size_bytes: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    out_of_place: Half | None
    in_place: Half | None

    def busbw_values(self) -> list[float]:
        return [
            h.busbw_gbps
            for h in (self.out_of_place, self.in_place)
            if h is not None and h.busbw_gbps is not None
        ]


@dataclass(slots=True)
class NcclRun:
    """One nccl-tests invocation: header facts, table rows and summary lines."""

    tests_version: str | None = None
    nccl_version: str | None = None
    collective: str | None = None
    n_threads: int | None = None
    n_gpus: int | None = None
    min_bytes: int | None = None
    max_bytes: int | None = None
    iters: int | None = None
    validation: int | None = None
    ranks: list[RankDevice] = field(default_factory=list)
    rows: list[NcclRow] = field(default_factory=list)
    out_of_bounds: int | None = None
    out_of_bounds_status: str | None = None
    avg_busbw_gbps: float | None = None
    avg_busbw_check: str | None = None
    concluded: bool = False
    elided: bool = False
    truncated: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def hosts(self) -> tuple[str, ...]:
        """Distinct hosts named by the rank lines, in rank order."""
        return tuple(dict.fromkeys(r.host for r in self.ranks))

    @property
    def has_summary(self) -> bool:
        return self.avg_busbw_gbps is not None or self.out_of_bounds is not None or self.concluded

    @property
    def largest_size_bytes(self) -> int | None:
        return max((r.size_bytes for r in self.rows), default=None)

    @property
    def wrong_total(self) -> int | None:
        """Sum of #wrong over all rows; None when validation was off (`N/A`) or not printed."""
        values = [
            h.wrong
            for r in self.rows
            for h in (r.out_of_place, r.in_place)
            if h is not None and h.wrong is not None
        ]
        return sum(values) if values else None

    @property
    def correctness_failed(self) -> bool:
        return bool(self.wrong_total) or self.out_of_bounds_status == "FAILED" or bool(self.out_of_bounds)

    @property
    def busbw_by_size(self) -> dict[int, float]:
        """Mean busbw (out-of-place and in-place, every row of that size) per message size, ascending."""
        by_size: dict[int, list[float]] = {}
        for row in self.rows:
            values = row.busbw_values()
            if values:
                by_size.setdefault(row.size_bytes, []).extend(values)
        return {size: sum(by_size[size]) / len(by_size[size]) for size in sorted(by_size)}

    @property
    def pair_busbw_gbps(self) -> float | None:
        """Bus bandwidth at the largest sizes (see the module docstring for the definition)."""
        return busbw_at_or_below(self.busbw_by_size, None)

    @property
    def cut_short(self) -> bool:
        """The table provably stops before the run's own maxBytes (not an author's `...` elision)."""
        largest = self.largest_size_bytes
        return (
            largest is not None
            and self.max_bytes is not None
            and largest < self.max_bytes
            and not self.elided
        )


def busbw_at_or_below(by_size: dict[int, float], limit: int | None) -> float | None:
    """The pair figure over the sizes <= `limit` (all sizes when None): the larger of the means at
    the two largest such sizes (module docstring: why two, why the larger)."""
    sizes = [size for size in by_size if limit is None or size <= limit]
    if not sizes:
        return None
    return max(by_size[size] for size in sorted(sizes)[-2:])


@dataclass(slots=True)
class NcclTestsLog:
    """Everything read from one text: usually one run, several when runs were appended."""

    runs: list[NcclRun] = field(default_factory=list)
    prefix_stripped: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def measured_runs(self) -> list[NcclRun]:
        return [r for r in self.runs if r.pair_busbw_gbps is not None]


@dataclass(frozen=True, slots=True)
class _Layout:
    """Token positions of a table row."""

    width: int
    root: int | None
    halves: tuple[tuple[int, int, int, int | None, bool], ...]  # (time, algbw, busbw, wrong|error, is_count)


def _layout_from_header(tokens: list[str]) -> _Layout | None:
    names = [_HEADER_ALIASES.get(t.lower(), t.lower()) for t in tokens]
    if "size" not in names or "busbw" not in names:
        return None
    positions: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        positions.setdefault(name, []).append(i)
    halves = []
    for h in range(len(positions.get("busbw", []))):
        try:
            time_i = positions["time"][h]
            algbw_i = positions["algbw"][h]
            busbw_i = positions["busbw"][h]
        except (KeyError, IndexError):
            return None
        check = positions.get("wrong", positions.get("error", []))
        is_count = "wrong" in positions
        halves.append((time_i, algbw_i, busbw_i, check[h] if h < len(check) else None, is_count))
    root = positions["root"][0] if "root" in positions else None
    return _Layout(width=len(names), root=root, halves=tuple(halves))


def _default_layout(width: int) -> _Layout | None:
    """Row layouts of known generations, used when the column header was not seen."""
    if width == 13:  # size count type redop root + 2 x (time algbw busbw #wrong)
        return _Layout(13, 4, ((5, 6, 7, 8, True), (9, 10, 11, 12, True)))
    if width == 9:
        return _Layout(9, 4, ((5, 6, 7, 8, True),))
    if width == 12:  # older: no root column
        return _Layout(12, None, ((4, 5, 6, 7, True), (8, 9, 10, 11, True)))
    return None


def _float(token: str) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _int(token: str) -> int | None:
    return int(token) if token.isdigit() else None


def _parse_row(tokens: list[str], layout: _Layout | None) -> NcclRow | None:
    if len(tokens) < 8 or not tokens[0].isdigit() or not tokens[1].isdigit():
        return None
    if not tokens[2][:1].isalpha():
        return None
    if layout is None or layout.width != len(tokens):
        layout = _default_layout(len(tokens))
        if layout is None:
            return None
    halves: list[Half | None] = []
    for time_i, algbw_i, busbw_i, check_i, is_count in layout.halves:
        wrong = _int(tokens[check_i]) if check_i is not None and is_count else None
        halves.append(Half(_float(tokens[time_i]), _float(tokens[algbw_i]), _float(tokens[busbw_i]), wrong))
    root = None
    if layout.root is not None:
        try:
            root = int(tokens[layout.root])
        except ValueError:
            root = None
    return NcclRow(
        size_bytes=int(tokens[0]),
        count=int(tokens[1]),
        dtype=tokens[2],
        redop=tokens[3],
        root=root,
        out_of_place=halves[0] if halves else None,
        in_place=halves[1] if len(halves) > 1 else None,
    )


def strip_launcher_prefix(line: str) -> tuple[str, bool]:
    """Remove launcher prefixes (`0: `, `[1,0]<stdout>:`, `[pod/x/c] `); report whether one was there.

    Up to three are removed because launchers nest (srun --label around mpirun --tag-output).
    """
    found = False
    for _ in range(3):
        match = _PREFIX.match(line)
        if match is None:
            break
        line, found = line[match.end() :], True
    return line, found


class _Builder:
    """Accumulates runs while walking the lines."""

    def __init__(self) -> None:
        self.log = NcclTestsLog()
        self.run = NcclRun()
        self.layout: _Layout | None = None
        self.started = False  # current run has content beyond its banner

    def new_run_if_started(self) -> None:
        if self.started or self.run.rows or self.run.has_summary:
            self.finish_run()
            self.run = NcclRun()
            self.layout = None
            self.started = False

    def finish_run(self) -> None:
        run = self.run
        if not (run.rows or run.ranks or run.has_summary or run.n_gpus is not None or run.tests_version):
            return
        if not run.rows:
            run.problems.append("no measurement rows")
            run.truncated = not run.has_summary
        elif not run.has_summary:
            run.truncated = True
            run.problems.append("no summary line (Avg bus bandwidth / Out of bounds): run was cut short")
        largest = run.largest_size_bytes
        if largest is not None and run.max_bytes is not None and largest < run.max_bytes and not run.elided:
            run.truncated = True
            run.problems.append(f"table stops at {largest} B of maxBytes {run.max_bytes} B")
        if run.elided:
            run.problems.append("rows elided in the source ('...')")
        self.log.runs.append(run)

    def feed(self, line: str) -> None:
        stripped = line.strip()
        if not stripped:
            return
        if stripped in _ELISIONS:
            self.run.elided = True
            return
        if stripped.startswith("#") or stripped.startswith(("nThread", "Out of bounds", "Avg bus")):
            self.feed_comment(stripped)
            return
        if (m := _NCCL_VERSION.match(stripped)) is not None:
            self.run.nccl_version = m.group(1)
            return
        tokens = stripped.split()
        row = _parse_row(tokens, self.layout)
        if row is not None:
            if self.run.has_summary:  # rows after a summary belong to a new, banner-less run
                self.new_run_if_started()
            self.run.rows.append(row)
            self.started = True

    def feed_comment(self, text: str) -> None:
        run = self.run
        if (m := _RANK.match(text)) is not None:
            if run.rows or run.has_summary:
                self.new_run_if_started()
                run = self.run
            run.ranks.append(
                RankDevice(
                    rank=int(m.group(1)),
                    group=int(m.group(2)) if m.group(2) else None,
                    pid=int(m.group(3)) if m.group(3) else None,
                    host=m.group(4),
                    device=int(m.group(5)),
                    bus_id=m.group(6),
                    gpu_name=m.group(7).strip() or None,
                )
            )
            return
        if (m := _VERSION.match(text)) is not None:
            self.new_run_if_started()
            self.run.tests_version = m.group(1)
            return
        if (m := _COLLECTIVE.match(text)) is not None:
            if m.group(1) == "starting":
                if run.rows or run.has_summary or run.collective:
                    self.new_run_if_started()
                self.run.collective = m.group(2)
            else:
                run.concluded = True
                run.collective = run.collective or m.group(2)
            return
        if (m := _NTHREAD.match(text)) is not None:
            if run.rows or run.has_summary or run.n_gpus is not None:
                self.new_run_if_started()
                run = self.run
            run.n_threads, run.n_gpus = int(m.group(1)), int(m.group(2))
            run.min_bytes, run.max_bytes = int(m.group(3)), int(m.group(4))
            if (it := _ITERS.search(text)) is not None:
                run.iters = int(it.group(1))
            if (va := _VALIDATION.search(text)) is not None:
                run.validation = int(va.group(1))
            return
        if (m := _OOB.match(text)) is not None:
            run.out_of_bounds = int(m.group(1))
            run.out_of_bounds_status = m.group(2) or ("FAILED" if run.out_of_bounds else "OK")
            return
        if (m := _AVG.match(text)) is not None:
            value = _float(m.group(1))
            if value is None:
                run.problems.append(f"Avg bus bandwidth is not a number: {m.group(1)!r}")
                run.avg_busbw_gbps = math.nan
            else:
                run.avg_busbw_gbps = value
            run.avg_busbw_check = m.group(2)
            return
        if (m := _NCCL_VERSION.match(text)) is not None:
            run.nccl_version = m.group(1)
            return
        tokens = text.lstrip("#").split()
        if tokens and tokens[0].lower() in ("size", "bytes") and "busbw" in tokens:
            layout = _layout_from_header(tokens)
            if layout is not None:
                if run.rows:
                    self.new_run_if_started()
                self.layout = layout


def parse_nccl_tests(text: str) -> NcclTestsLog:
    """Total parse: every string gives a `NcclTestsLog`; oddities go to `problems`."""
    builder = _Builder()
    prefixed = 0
    for raw in text.splitlines():
        line, had_prefix = strip_launcher_prefix(raw)
        prefixed += had_prefix
        builder.feed(line)
    builder.finish_run()
    log = builder.log
    log.prefix_stripped = prefixed > 0
    # A NaN average (from "-nan") is kept out of the numbers the caller sees.
    for run in log.runs:
        if run.avg_busbw_gbps is not None and math.isnan(run.avg_busbw_gbps):
            run.avg_busbw_gbps = None
    if not log.runs:
        log.problems.append("no nccl-tests output found")
    elif not log.measured_runs:
        log.problems.append("no measured busbw in any run")
    return log


def parse_nccl_tests_strict(text: str) -> NcclTestsLog:
    """Like `parse_nccl_tests`, but raise `NcclTestsParseError` when nothing was measured."""
    log = parse_nccl_tests(text)
    if not log.measured_runs:
        reason = "; ".join(log.problems) or "no measurement"
        raise NcclTestsParseError(reason)
    return log
