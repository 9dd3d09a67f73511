"""Which rank or host stalled first in a hang — as far as the logs allow, and saying so when not.

Three kinds of evidence, strongest first:

1. A report that names ranks: PyTorch's desync report (TORCH_NCCL_DESYNC_DEBUG; wording from
   torch/csrc/distributed/c10d/TraceUtils.h: "ranks [X] are the lagging ranks that caused this
   timeout", "[X] joined but didn't finish collective #N"), a collective-mismatch report
   (TORCH_DISTRIBUTED_DEBUG=DETAIL: "Rank A is running collective: CollectiveFingerPrint(
   SequenceNumber=…"), a flight-recorder analysis (torchfrtrace: "missing ranks: {X}", as in the
   PyTorch flight-recorder tutorial), or Ray naming the worker that died.
2. Sequence numbers: ProcessGroupNCCL numbers the collectives of each process group. A rank whose
   last enqueued collective is below the one another rank of the same group waits on never
   issued it: the others wait for that rank. Only ranks of one process group are compared; a
   rank that timed out in several collectives (several groups, no group named) makes the
   comparison impossible, and the finding says so.
3. Time: the rank or host whose first hard error (remote exit, NCCL error, refused connection)
   comes at least a second before anyone else's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hyperpod_perf.joblogs.scan import JobLogScan, RankWatch

HARD_ERRORS = ("remote_exit", "nccl_error", "connect_refused", "watchdog_stuck", "ofi_error", "socket_error")
FIRST_IN_TIME_MARGIN_S = 1.0
MAX_LISTED = 16


@dataclass
class Localisation:
    ranks: list[int] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    method: str | None = None
    detail: str = ""
    notes: list[str] = field(default_factory=list)  # other evidence read, including "cannot tell" reasons

    @property
    def found(self) -> bool:
        return bool(self.ranks or self.hosts)


def _merge_groups(
    watches: dict[tuple[str, int], RankWatch],
) -> tuple[dict[str, dict[int, RankWatch]], dict[str, set[int]]]:
    """Watchdog lines without a group join the one group their rank (or every rank) names.

    Also returns, per group, the ranks placed there only because it is the only group named:
    an assumption the findings state."""
    groups: dict[str, dict[int, RankWatch]] = {}
    assumed: dict[str, set[int]] = {}
    for (pg, rank), watch in watches.items():
        if pg != "?":
            groups.setdefault(pg, {})[rank] = watch
    known_by_rank: dict[int, set[str]] = {}
    for pg, ranks in groups.items():
        for rank in ranks:
            known_by_rank.setdefault(rank, set()).add(pg)
    for (pg, rank), watch in watches.items():
        if pg != "?":
            continue
        own = known_by_rank.get(rank)
        pgs = own or (set(groups) if len(groups) == 1 else set())
        target = next(iter(pgs)) if len(pgs) == 1 else "?"
        if not own and target != "?":
            assumed.setdefault(target, set()).add(rank)
        merged = groups.setdefault(target, {}).setdefault(rank, RankWatch(pg=target, rank=rank))
        for seq, op in watch.seqs.items():
            merged.seqs.setdefault(seq, op)
        merged.host = merged.host or watch.host
        merged.where = merged.where or watch.where
    return groups, assumed


def _group_name(pg: str, assumed: set[int]) -> str:
    if pg == "?":
        return "lines naming no process group (taken as one group)"
    if assumed:
        listed = ", ".join(map(str, sorted(assumed)))
        return f"process group {pg} (assumed for rank(s) {listed}: their lines name no group)"
    return f"process group {pg}"


def _group_lag(group: str, ranks: dict[int, RankWatch]) -> tuple[list[int], str] | str | None:
    """(lagging ranks, why) or a reason the group cannot tell, or None when nothing differs."""
    waiting = {r: max(w.seqs) if w.seqs else w.work for r, w in ranks.items()}
    waiting = {r: s for r, s in waiting.items() if s is not None}
    if len(waiting) < 2:
        return None
    several = [r for r, w in ranks.items() if len(w.seqs) > 1]
    if several:
        return (
            f"rank {several[0]} timed out in {len(ranks[several[0]].seqs)} collectives "
            f"(SeqNum {', '.join(str(s) for s in sorted(ranks[several[0]].seqs))}): the lines name "
            "no process "
            "group, so sequence numbers cannot be compared across ranks"
        )
    top = max(waiting.values())
    reached = {r: max(x for x in (waiting.get(r), ranks[r].last_enqueued) if x is not None) for r in waiting}
    lagging = sorted(r for r, s in reached.items() if s < top)
    if lagging:
        waiter = min(r for r, s in waiting.items() if s == top)
        first = ranks[lagging[0]]
        issued = (
            f"last enqueued #{first.last_enqueued}"
            if first.last_enqueued is not None
            else f"timed out at #{waiting[lagging[0]]}"
        )
        return lagging, (
            f"in {group}, rank {waiter} waits on collective #{top} that rank "
            f"{', '.join(str(r) for r in lagging[:MAX_LISTED])} never reached ({issued})"
        )
    return None


def _mismatch(group: str, ranks: dict[int, RankWatch]) -> tuple[list[int], str] | None:
    """Ranks timing out at the same SeqNum with different operations."""
    by_seq: dict[int, dict[str, list[int]]] = {}
    for rank, watch in ranks.items():
        for seq, op in watch.seqs.items():
            by_seq.setdefault(seq, {}).setdefault(op, []).append(rank)
    for seq, ops in sorted(by_seq.items()):
        if len(ops) < 2:
            continue
        sides = sorted(ops.items(), key=lambda item: len(item[1]))
        text = "; ".join(f"{op}: rank(s) {', '.join(map(str, sorted(rs)[:MAX_LISTED]))}" for op, rs in sides)
        if len(sides[0][1]) < len(sides[1][1]):
            return (
                sorted(sides[0][1]),
                f"at SeqNum {seq} ({group}) ranks run different collectives ({text}): the minority "
                "is out of step",
            )
        return [], (
            f"at SeqNum {seq} ({group}) ranks run different collectives ({text}): a collective mismatch, or "
            "different process groups with the same sequence number — the logs do not tell which "
            "side is wrong"
        )
    return None


def _first_in_time(scan: JobLogScan) -> tuple[str, str] | None:
    """(actor, why) when one rank/host's first hard error clearly precedes everyone else's."""
    firsts: dict[str, tuple[str, float, str]] = {}
    for event in scan.events.values():
        if event.kind not in HARD_ERRORS or event.time is None or event.time_kind is None:
            continue
        actor = (
            f"rank {event.rank}" if event.rank is not None else f"host {event.host}" if event.host else None
        )
        if actor is None:
            continue
        seen = firsts.get(actor)
        if seen is None or event.time < seen[1]:
            firsts[actor] = (event.time_kind, event.time, event.kind)
    kinds = {kind for kind, _, _ in firsts.values()}
    if len(firsts) < 2 or len(kinds) != 1:
        return None
    ordered = sorted(firsts.items(), key=lambda item: item[1][1])
    (actor, (_, t0, kind)), (_, (_, t1, _)) = ordered[0], ordered[1]
    if t1 - t0 >= FIRST_IN_TIME_MARGIN_S:
        return (
            actor,
            f"{actor} reported {kind.replace('_', ' ')} {t1 - t0:.1f} s before any other rank or host",
        )
    return None


def localise(scan: JobLogScan) -> Localisation:
    result = Localisation()
    decisive = [n for n in scan.named if "does not say" not in n.method]
    for named in scan.named:
        result.notes.append(
            f"{named.method}: rank(s) {', '.join(map(str, named.ranks[:MAX_LISTED]))} ({named.where})"
        )
    died = [e for e in scan.events.values() if e.kind == "worker_died" and e.host]
    if decisive:
        first = decisive[0]
        result.ranks, result.method, result.detail = list(first.ranks), first.method, first.detail
    elif died:
        result.hosts = sorted({e.host for e in died if e.host})[:MAX_LISTED]
        result.method = "Ray reports the worker process died"
        result.detail = died[0].text[:300]
    groups, assumed = _merge_groups(scan.watches)
    for pg, ranks in sorted(groups.items()):
        group = _group_name(pg, assumed.get(pg, set()))
        lag = _group_lag(group, ranks)
        if isinstance(lag, str):
            result.notes.append(lag)
        elif lag is not None:
            lagging, why = lag
            result.notes.append(why)
            if not result.found:
                result.ranks, result.method, result.detail = lagging, "collective sequence lag", why
        mismatch = _mismatch(group, ranks)
        if mismatch is not None:
            ranks_named, why = mismatch
            result.notes.append(why)
            if ranks_named and not result.found:
                result.ranks, result.method, result.detail = ranks_named, "collective mismatch", why
    first = _first_in_time(scan)
    if first is not None:
        actor, why = first
        result.notes.append(why)
        if not result.found:
            kind, _, value = actor.partition(" ")
            if kind == "rank":
                result.ranks = [int(value)]
            else:
                result.hosts = [value]
            result.method, result.detail = "first to fail in time", why
    return result
