"""Per-rank timings the trainer itself prints, read from the job's log lines.

Each wording is taken from the printing code (cited per pattern):

- Megatron-LM's per-iteration line (megatron/training/training.py `training_log`):
  ` [2025-…] iteration      100/  500000 | consumed samples: … | elapsed time per iteration
  (ms): 3412.5 | …` — printed by one rank only (the last), so it gives the step time, never a rank.
- Megatron-LM's timers with `--timing-log-option all` (megatron/core/timers.py
  `_get_all_ranks_time_string`): `times across ranks (ms):` then, per timer, `  <name>:` and one
  `     rank  N: <ms>` line per rank (per-iteration averages: `training_log` passes the log
  interval as the normaliser). The rank whose own work (`forward-compute`, `backward-compute`,
  `batch-generator`, `optimizer`) takes longest makes the others wait; the default `minmax`
  option prints only `(min, max) time across ranks (ms):` and names no rank.
- Megatron-LM's straggler detector (`--log-straggler`, megatron/core/utils.py
  `StragglerDetector.report`): `… | MnRtt/Rnk: 3478.91ms/0 | MxRtt/Rnk: 3680.43ms/3 | … |
  MnEtpt/Rnk: 380.10TF/3 | MxEtpt/Rnk: 401.23TF/0` — the rank with the longest GEMM time per
  iteration (MxRtt) and the lowest throughput (MnEtpt); a min and a max only, so the wait it
  causes is bounded by MxRtt - MnRtt, not measured.
- NVIDIA nvidia-resiliency-ext's straggler detection as NeMo / PyTorch Lightning log it
  (ptl_resiliency/straggler_det_callback.py): `STRAGGLER DETECTION WARNING: Some GPUs have worse
  relative performance. Affected ranks: {StragglerId(rank=3, node='node-1')}` (`… performance
  dropped …` for individual scores), and the score listings under `GPU relative performance:` /
  `GPU individual performance:`: `  Rank=3 Node=node-1 Score=0.62` (a relative score of 0.5 is a
  rank twice as slow as the best one: attribution/straggler/reporting.py).
"""

from __future__ import annotations

import re
import statistics
from typing import Any

from hyperpod_perf.straggler.model import Identity, TimingState, TrainerReport

ITERATION = re.compile(
    r"iteration\s+(?P<it>\d+)/\s*\d+\s*\|.*?elapsed time per iteration \(ms\): (?P<ms>\d+(?:\.\d+)?)"
)
DETECTOR = re.compile(
    r"MnRtt/Rnk: (?P<mn>\d+(?:\.\d+)?)ms/(?P<mnr>\d+) \| MxRtt/Rnk: (?P<mx>\d+(?:\.\d+)?)ms/(?P<mxr>\d+)"
)
_DETECTOR_TPUT = re.compile(r"MnEtpt/Rnk: (?P<tf>\d+(?:\.\d+)?)TF/(?P<r>\d+)")
NRX_WARNING = re.compile(
    r"STRAGGLER DETECTION WARNING: Some GPUs (?P<what>have worse relative performance|performance dropped)"
    r"\. Affected ranks: (?P<ranks>.*)"
)
_STRAGGLER_ID = re.compile(r"StragglerId\(rank=(?P<rank>\d+), node='?(?P<node>[^')]*)'?\)")
NRX_SCORE = re.compile(r"Rank=(?P<rank>\d+) Node=(?P<node>\S+) Score=(?P<score>\d+(?:\.\d+)?)")
NRX_BLOCK = re.compile(r"GPU (?P<kind>relative|individual) performance:")
#: One line of a `times across ranks (ms):` block (launcher prefixes before it are allowed).
TIMER_RANK = re.compile(rb"(?:^|\s)rank\s+(\d+): (\d+(?:\.\d+)?)\s*$")
TIMER_NAME = re.compile(rb"(?:^|[\s\]:>])\s*([A-Za-z][\w.-]*(?:-[\w.]+)*):\s*$")
TIMERS_ALL = b"times across ranks (ms):"
#: Megatron timers that time a rank's own work (not waiting on others): see the docstring.
OWN_WORK_TIMERS = ("forward-compute", "backward-compute", "batch-generator", "optimizer")
#: A timers block is at most this many lines (1,024 ranks x ~20 timers ~ 21,000).
MAX_TIMER_LINES = 200_000


def interpret(body: str) -> list[tuple[Any, ...]]:
    """What one trainer line says, as ("timing", what, …) operations (cached per message)."""
    ops: list[tuple[Any, ...]] = []
    if "elapsed time per iteration" in body and (match := ITERATION.search(body)):
        ops.append(("timing", "step", int(match.group("it")), float(match.group("ms"))))
    elif "MxRtt/Rnk" in body and (match := DETECTOR.search(body)):
        low = _DETECTOR_TPUT.search(body)
        ops.append(
            (
                "timing",
                "detector",
                float(match.group("mn")),
                int(match.group("mnr")),
                float(match.group("mx")),
                int(match.group("mxr")),
                int(low.group("r")) if low else None,
            )
        )
    elif "STRAGGLER DETECTION WARNING" in body and (match := NRX_WARNING.search(body)):
        kind = "relative" if "relative" in match.group("what") else "individual"
        flagged = tuple(
            (int(m.group("rank")), m.group("node")) for m in _STRAGGLER_ID.finditer(match.group("ranks"))
        )
        ops.append(("timing", "nrx_flagged", kind, flagged[:256]))
    elif "Score=" in body and (match := NRX_SCORE.search(body)):
        ops.append(
            (
                "timing",
                "nrx_score",
                int(match.group("rank")),
                match.group("node"),
                float(match.group("score")),
            )
        )
    elif "performance:" in body and (match := NRX_BLOCK.search(body)):
        ops.append(("timing", "nrx_block", match.group("kind")))
    return ops


def apply(op: tuple[Any, ...], state: TimingState, source: str, where: str) -> None:
    """One ("timing", …) operation of `interpret`, applied with the line's log and place."""
    what = op[1]
    if what == "step":
        iteration, ms = op[2], op[3]
        state.step(ms)
        span = state.iteration_span
        state.iteration_span = [min(span[0], iteration), max(span[1], iteration)] if span else [iteration] * 2
    elif what == "detector":
        mn, mnr, mx, mxr, low_tput = op[2:]
        detail = f"MnRtt/Rnk {mn:.2f}ms/{mnr}, MxRtt/Rnk {mx:.2f}ms/{mxr}"
        if low_tput is not None:
            detail += f", lowest throughput rank {low_tput}"
        state.report(
            TrainerReport("megatron straggler detector", mxr, mx - mn, mn, 0, where, detail, exact=False)
        )
    elif what == "nrx_block":
        if len(state.nrx_kind) < 10_000:
            state.nrx_kind[source] = op[2]
    elif what == "nrx_score":
        kind = state.nrx_kind.get(source, "relative")
        rank, node, score = op[2], op[3], op[4]
        seen = state.nrx_scores.get((kind, rank))
        if seen is None and len(state.nrx_scores) >= 100_000:
            state.drop("trainer scores")
            return
        lines = (seen[2] if seen else 0) + 1
        state.nrx_scores[(kind, rank)] = (
            (score, node, lines)
            if seen is None or score < seen[0]
            else (
                seen[0],
                seen[1],
                lines,
            )
        )
    elif what == "nrx_flagged":
        for rank, node in op[3]:
            if len(state.nrx_flagged) < 100_000:
                state.nrx_flagged[(op[2], rank)] = node


def timer_block(lines: list[bytes], where: str, state: TimingState) -> None:
    """One `times across ranks (ms):` block: the rank whose own work took longest, and by how
    much beyond the median rank (per iteration: the timers are averaged over the log interval)."""
    timer: str | None = None
    own: dict[int, float] = {}
    timers: set[str] = set()
    for raw in lines:
        if match := TIMER_RANK.search(raw):
            if timer is not None and timer.startswith(OWN_WORK_TIMERS):
                rank = int(match.group(1))
                own[rank] = own.get(rank, 0.0) + float(match.group(2))
        elif match := TIMER_NAME.search(raw):
            timer = match.group(1).decode("ascii", "replace")
            if timer.startswith(OWN_WORK_TIMERS):
                timers.add(timer)
    if len(own) < 2:
        return
    slowest = max(own, key=lambda r: (own[r], -r))
    typical = statistics.median(own.values())
    state.report(
        TrainerReport(
            "megatron timers",
            slowest,
            own[slowest] - typical,
            typical,
            len(own),
            where,
            f"own work ({', '.join(sorted(timers))}) per iteration: rank {slowest} {own[slowest]:.1f} ms, "
            f"median rank {typical:.1f} ms over {len(own)} ranks",
        )
    )
    state.identity(Identity(rank=slowest))
