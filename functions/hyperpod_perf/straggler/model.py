"""Bounded state of a job's timing records: who took part in which collective, for how long.

Every source is reduced to the same few facts as it streams past, so 1,024 ranks x 10,000
collectives (5 GB of Inspector JSON) fit in a few tens of MB:

- per collective (communicator, sequence number): how many processes reported it, the sum, the
  shortest and the longest of their durations, and who had the shortest. In a blocking
  collective every rank finishes at about the same moment, so each rank's duration is the time
  from its own arrival to the end: the latecomer shows the shortest, and every other rank waited
  `its duration - the shortest` for it (NCCL Inspector's `coll_exec_time_us`, the flight
  recorder's `duration_ms`). Durations need no clock shared between hosts; start timestamps would.
- per process: who it is (host, pid as NCCL Inspector names a process: its ranks are per
  communicator; a flight-recorder dump names only the rank in its file name) and its rank in each
  communicator;
- per trainer report (Megatron's per-rank timers, its straggler detector, nvidia-resiliency-ext's
  scores): the rank that did the most work and by how much (`TrainerReport`);
- per flight-recorder process group: how far each rank got (`FrProgress`), for hangs.

Every collection is capped; what passes a cap is counted in `dropped`. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Distinct collectives kept (all communicators together); later ones are counted, not kept.
MAX_COLLECTIVES = 400_000
MAX_PROCESSES = 100_000
MAX_COMMS = 20_000
MAX_REPORTS = 5_000
MAX_PROBLEMS = 100
MAX_FR_RANKS = 100_000

# Positions in a collective's aggregate list (a list, not an object: millions are updated).
N, SUM, MIN, WHO, MAX = 0, 1, 2, 3, 4


@dataclass(frozen=True, slots=True)
class Identity:
    """A process as the records name it: (host, pid) for NCCL Inspector, the rank for a
    flight-recorder dump or a trainer line (host filled in from the job's NCCL lines later)."""

    host: str | None = None
    pid: str | None = None
    rank: int | None = None

    def label(self) -> str:
        parts = []
        if self.rank is not None:
            parts.append(f"rank {self.rank}")
        if self.host:
            parts.append(f"host {self.host}")
        if self.pid:
            parts.append(f"pid {self.pid}")
        return ", ".join(parts) or "an unnamed process"


@dataclass(slots=True)
class CommInfo:
    """One communicator (NCCL Inspector) or process group (flight recorder)."""

    name: str
    n_ranks: int | None
    source: str  # "inspector" | "flight recorder"
    collectives: int = 0
    ops: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class TrainerReport:
    """One report of per-rank work from the trainer: which rank did the most, and by how much.

    `excess_ms` is the time the slowest rank's own work took beyond the typical rank's (the
    others wait about that long per iteration); `step_ms` the iteration time when known."""

    kind: str  # "megatron timers" | "megatron straggler detector" | "nvidia-resiliency-ext"
    slowest: int  # the rank
    excess_ms: float | None
    typical_ms: float | None
    ranks: int
    where: str
    detail: str
    exact: bool = True  # False: an upper bound (min/max reports do not give the median)


@dataclass(slots=True)
class FrProgress:
    """How far one rank got in one flight-recorder process group."""

    last_seq: int
    last_state: str
    last_op: str
    last_created_ns: int | None
    where: str


class TimingState:
    """Everything the timing sources said, bounded. Feed it, then hand it to `analysis`."""

    def __init__(self) -> None:
        self.identities: dict[Identity, int] = {}
        self.people: list[Identity] = []
        self.comms: dict[tuple[str, str], CommInfo] = {}
        #: (comm key, sequence number) -> [n, sum_us, min_us, who (identity index), max_us]
        self.collectives: dict[tuple[tuple[str, str], int], list] = {}
        #: (comm key, identity index) -> the identity's rank in that communicator
        self.comm_ranks: dict[tuple[tuple[str, str], int], int] = {}
        self.first_us: float | None = None
        self.last_us: float | None = None
        self.records = 0
        self.sources: dict[str, int] = {}  # kind -> files or lines read
        self.timing_sources: dict[str, int] = {}  # Inspector coll_timing_source -> records
        self.reports: list[TrainerReport] = []
        self.step_ms: list[float] = []  # `elapsed time per iteration (ms)` values (bounded)
        self.iterations: int = 0
        self.fr: dict[tuple[str, int], FrProgress] = {}  # (pg name, rank) -> progress
        self.fr_ranks: dict[str, int | None] = {}  # pg name -> ranks in it (pg_config)
        self.fr_without_duration = 0  # dumps whose entries carry no duration_ms
        self.problems: list[tuple[str, str, bool]] = []  # (source, why, refused as unsafe)
        self.dropped: dict[str, int] = {}
        # nvidia-resiliency-ext scores (trainer.py): the block kind each log is in, the lowest
        # score per (kind, rank) with its node and line count, the ranks its warnings name
        self.nrx_kind: dict[str, str] = {}
        self.nrx_scores: dict[tuple[str, int], tuple[float, str, int]] = {}
        self.nrx_flagged: dict[tuple[str, int], str] = {}
        self.iteration_span: list[int] = []  # first and last Megatron iteration numbers read

    # --- feeding ------------------------------------------------------------------------------
    def identity(self, who: Identity) -> int:
        index = self.identities.get(who)
        if index is None:
            if len(self.people) >= MAX_PROCESSES:
                self.drop("processes")
                return -1
            index = self.identities[who] = len(self.people)
            self.people.append(who)
        return index

    def comm(self, key: tuple[str, str], name: str, n_ranks: int | None, source: str) -> CommInfo | None:
        info = self.comms.get(key)
        if info is None:
            if len(self.comms) >= MAX_COMMS:
                self.drop("communicators")
                return None
            info = self.comms[key] = CommInfo(name, n_ranks, source)
        elif n_ranks and not info.n_ranks:
            info.n_ranks = n_ranks
        return info

    def add(self, key: tuple[str, str], seq: int, who: int, duration_us: float) -> None:
        """One process's duration of one collective (the hot path of every timing source)."""
        slot = (key, seq)
        agg = self.collectives.get(slot)
        if agg is None:
            if len(self.collectives) >= MAX_COLLECTIVES:
                self.drop("collectives")
                return
            self.collectives[slot] = [1, duration_us, duration_us, who, duration_us]
            return
        agg[N] += 1
        agg[SUM] += duration_us
        if duration_us < agg[MIN]:
            agg[MIN], agg[WHO] = duration_us, who
        elif duration_us > agg[MAX]:
            agg[MAX] = duration_us

    def add_all(self, records: list[tuple[tuple[str, str], int, float]], who: int, scale: float) -> None:
        """`add(key, seq, who, duration * scale)` for each (key, seq, duration) in order: one
        process's durations, e.g. a flight-recorder dump's, without a call per record."""
        collectives = self.collectives
        for key, seq, duration in records:
            us = duration * scale
            slot = (key, seq)
            agg = collectives.get(slot)
            if agg is None:
                if len(collectives) >= MAX_COLLECTIVES:
                    self.drop("collectives")
                    continue
                collectives[slot] = [1, us, us, who, us]
                continue
            agg[N] += 1
            agg[SUM] += us
            if us < agg[MIN]:
                agg[MIN], agg[WHO] = us, who
            elif us > agg[MAX]:
                agg[MAX] = us

    def seen_at(self, us: float) -> None:
        if self.first_us is None or us < self.first_us:
            self.first_us = us
        if self.last_us is None or us > self.last_us:
            self.last_us = us

    def report(self, report: TrainerReport) -> None:
        if len(self.reports) >= MAX_REPORTS:
            self.drop("trainer reports")
            return
        self.reports.append(report)

    def step(self, ms: float) -> None:
        self.iterations += 1
        if len(self.step_ms) < MAX_REPORTS:
            self.step_ms.append(ms)

    def problem(self, source: str, why: str, *, refused: bool = False) -> None:
        if len(self.problems) >= MAX_PROBLEMS:
            self.drop("timing sources not read")
            return
        self.problems.append((source, why, refused))

    def count(self, kind: str, n: int = 1) -> None:
        self.sources[kind] = self.sources.get(kind, 0) + n

    def drop(self, what: str, n: int = 1) -> None:
        self.dropped[what] = self.dropped.get(what, 0) + n

    @property
    def empty(self) -> bool:
        return not (
            self.collectives
            or self.reports
            or self.step_ms
            or self.fr
            or self.problems
            or self.nrx_scores
            or self.nrx_flagged
        )

    # --- merging (parallel parts, Distributed Map children) -----------------------------------
    def merge(self, other: TimingState) -> TimingState:
        remap = [self.identity(person) for person in other.people]
        for key, info in other.comms.items():
            mine = self.comm(key, info.name, info.n_ranks, info.source)
            if mine is not None:
                mine.collectives += info.collectives
                for op, n in info.ops.items():
                    mine.ops[op] = mine.ops.get(op, 0) + n
        for slot, agg in other.collectives.items():
            who = remap[agg[WHO]] if agg[WHO] >= 0 else -1
            mine_agg = self.collectives.get(slot)
            if mine_agg is None:
                if len(self.collectives) >= MAX_COLLECTIVES:
                    self.drop("collectives")
                    continue
                self.collectives[slot] = [agg[N], agg[SUM], agg[MIN], who, agg[MAX]]
                continue
            mine_agg[N] += agg[N]
            mine_agg[SUM] += agg[SUM]
            if agg[MIN] < mine_agg[MIN]:
                mine_agg[MIN], mine_agg[WHO] = agg[MIN], who
            mine_agg[MAX] = max(mine_agg[MAX], agg[MAX])
        for (key, who), rank in other.comm_ranks.items():
            if remap[who] >= 0:
                self.comm_ranks.setdefault((key, remap[who]), rank)
        for us in (other.first_us, other.last_us):
            if us is not None:
                self.seen_at(us)
        self.records += other.records
        for kind, n in other.sources.items():
            self.count(kind, n)
        for kind, n in other.timing_sources.items():
            self.timing_sources[kind] = self.timing_sources.get(kind, 0) + n
        for report in other.reports:
            self.report(report)
        for ms in other.step_ms:
            if len(self.step_ms) < MAX_REPORTS:
                self.step_ms.append(ms)
        self.iterations += other.iterations
        for key, progress in other.fr.items():
            mine_fr = self.fr.get(key)
            if mine_fr is None or progress.last_seq > mine_fr.last_seq:
                self.fr[key] = progress
        for pg, ranks in other.fr_ranks.items():
            self.fr_ranks.setdefault(pg, ranks)
        self.fr_without_duration += other.fr_without_duration
        for source, why, refused in other.problems:
            self.problem(source, why, refused=refused)
        for what, n in other.dropped.items():
            self.drop(what, n)
        for key, (score, node, lines) in other.nrx_scores.items():
            seen = self.nrx_scores.get(key)
            total = lines + (seen[2] if seen else 0)
            self.nrx_scores[key] = (
                (score, node, total) if seen is None or score < seen[0] else (seen[0], seen[1], total)
            )
        self.nrx_flagged.update(other.nrx_flagged)
        if other.iteration_span:
            span = self.iteration_span or other.iteration_span
            self.iteration_span = [
                min(span[0], other.iteration_span[0]),
                max(span[1], other.iteration_span[1]),
            ]
        return self
