"""`nccl.straggler`: the rank (or host) whose collectives start late, what it costs, and hangs.

From a `TimingState`, pure:

1. Collectives (NCCL Inspector, timed flight-recorder dumps). A collective counts as *waited on*
   when its mean duration exceeds its shortest by at least `straggler_min_wait_ms` and
   `straggler_min_wait_ratio` of the mean; its latecomer is the process with the shortest
   duration (see model.py). The straggler is the process — or, failing one, the host — that is
   the latecomer of at least `straggler_share` of the waited-on collectives (at least
   `straggler_min_collectives` of them). In a healthy job the latecomer varies, and no rank is
   named: an OK finding says so.
2. Trainer reports (Megatron timers per rank, its straggler detector, nvidia-resiliency-ext
   scores): the same test over reports instead of collectives; scores below
   `straggler_min_relative_score` (nvidia-resiliency-ext's default 0.75) name their rank.
3. Hangs (flight recorder): in a process group where some ranks wait in collective #N (started
   or scheduled, not completed), a rank whose dump stops before #N never reached it.

What it costs, labelled with how it was computed: the share of time the other ranks spent
waiting (their summed wait over the time the records span), GPU-hours lost (every peer's wait,
one GPU per rank) and dollars when the operator gave the instance type's hourly price
(thresholds `instance_hour_price_usd`: HyperPod bills its own ml.* rates, so none is built in).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.rules.gpu_sku import gpu_sku
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds
from hyperpod_perf.straggler.model import MAX, MIN, SUM, WHO, Identity, TimingState
from hyperpod_perf.straggler.model import N as COUNT

CHECK = "nccl.straggler"
SECTION = RunbookSection.NCCL
#: A collective reported by fewer of its communicator's ranks than this is not judged.
MIN_RANK_COVERAGE = 0.5
SOURCE_COLLECTIVES = (
    "NCCL Inspector coll_exec_time_us per (communicator, coll_sn) (NVIDIA/nccl plugins/profiler/inspector); "
    "PyTorch flight recorder duration_ms per (process group, collective_seq_id) "
    "(torch/csrc/distributed/c10d/FlightRecorder.hpp): in a blocking collective the latecomer has the "
    "shortest duration and every other rank waits (its duration - the shortest)"
)
SOURCE_TRAINER = {
    "megatron timers": "Megatron-LM --timing-log-option all (megatron/core/timers.py): per-rank own-work "
    "timers per iteration; the others wait (slowest - median)",
    "megatron straggler detector": "Megatron-LM --log-straggler (megatron/core/utils.py StragglerDetector): "
    "min and max GEMM time per iteration across ranks; the wait is at most MxRtt - MnRtt",
}
SOURCE_NRX = (
    "NVIDIA nvidia-resiliency-ext straggler detection (ptl_resiliency/straggler_det_callback.py, "
    "attribution/straggler/reporting.py): relative score = this rank's performance / the best rank's"
)
SOURCE_FR_HANG = (
    "PyTorch flight-recorder dumps (FlightRecorderDetail.hpp): collective_seq_id and state per entry; "
    "a rank whose entries stop before the collective the others wait in never reached it"
)
PRICE_NOTE = (
    "no hourly price configured for this instance type: set instance_hour_price_usd in the thresholds "
    "file (HyperPod bills its ml.* rates: aws.amazon.com/sagemaker/pricing, SageMaker HyperPod)"
)


@dataclass
class Resolver:
    """Names a process as an operator reads it: global rank, host, pid."""

    state: TimingState
    rank_hosts: dict[int, str]
    process_ranks: dict[tuple[str, str], int]

    def rank(self, who: int) -> int | None:
        person = self.state.people[who]
        if person.rank is not None:
            return person.rank
        if person.host and person.pid and (person.host, person.pid) in self.process_ranks:
            return self.process_ranks[(person.host, person.pid)]
        # the identity's rank in its largest communicator (the global one when it took part)
        best: tuple[int, int] | None = None
        for (key, index), rank in self.state.comm_ranks.items():
            if index == who:
                size = self.state.comms[key].n_ranks or 0
                if best is None or size > best[0]:
                    best = (size, rank)
        return best[1] if best else None

    def host(self, who: int) -> str | None:
        person = self.state.people[who]
        if person.host:
            return person.host
        rank = self.rank(who)
        return self.rank_hosts.get(rank) if rank is not None else None

    def label(self, who: int) -> str:
        person = self.state.people[who]
        return Identity(self.host(who), person.pid, self.rank(who)).label()


def _sig(value: float, digits: int = 6) -> float:
    """Rounded to significant digits (GPU-hours range from thousandths to thousands)."""
    return float(f"{value:.{digits}g}")


def _money(gpu_hours: float, instance_type: str | None, thresholds: Thresholds) -> dict[str, Any]:
    name = (instance_type or "").strip()
    price = thresholds.price_per_hour(name)
    sku = gpu_sku(name)
    if not name or price is None or sku is None:
        return {"usd": None, "price_note": PRICE_NOTE if name else "instance type unknown: no dollar figure"}
    return {
        "usd": round(gpu_hours / sku.gpus * price, 2),
        "instance_hour_price_usd": price,
        "gpus_per_instance": sku.gpus,
        "price_source": "operator-supplied (thresholds instance_hour_price_usd)",
    }


def _cost_text(evidence: dict[str, Any]) -> str:
    usd = evidence.get("usd")
    return f"{evidence['gpu_hours_lost']:.3g} GPU-hours" + (f" (${usd:,.2f})" if usd is not None else "")


def _collective_findings(
    state: TimingState, names: Resolver, instance_type: str | None, t: Thresholds
) -> list[Finding]:
    min_wait_us = t.straggler_min_wait_ms * 1000.0
    judged = waited = incomplete = 0
    late_by: dict[int, int] = {}
    wait_by: dict[int, float] = {}
    lateness_by: dict[int, float] = {}
    mean_sum = 0.0
    for (key, _seq), agg in state.collectives.items():
        n = agg[COUNT]
        size = state.comms[key].n_ranks
        if n < 2 or (size and n < MIN_RANK_COVERAGE * size) or agg[WHO] < 0:
            incomplete += 1
            continue
        judged += 1
        mean = agg[SUM] / n
        mean_sum += mean
        late = mean - agg[MIN]
        if late >= min_wait_us and late >= t.straggler_min_wait_ratio * mean:
            waited += 1
            who = agg[WHO]
            late_by[who] = late_by.get(who, 0) + 1
            wait_by[who] = wait_by.get(who, 0.0) + (agg[SUM] - n * agg[MIN])
            lateness_by[who] = lateness_by.get(who, 0.0) + late
    if not judged:
        return [
            Finding(
                check=CHECK,
                severity=Severity.INFO,
                section=SECTION,
                summary=f"collective timings read ({state.records} record(s)) but no collective was "
                "reported by enough of its communicator's ranks to compare them",
                evidence={"records": state.records, "incomplete_collectives": incomplete},
                next_step="Collect the timing files of every rank (all hosts' Inspector logs or dumps).",
            )
        ]
    base: dict[str, Any] = {
        "collectives_judged": judged,
        "collectives_waited_on": waited,
        "incomplete_collectives": incomplete,
        "communicators": len(state.comms),
        "processes": len(state.people),
        "records": state.records,
        "sources": dict(state.sources),
        "timing_sources": dict(state.timing_sources),
        "thresholds": {
            "min_wait_ms": t.straggler_min_wait_ms,
            "min_wait_ratio": t.straggler_min_wait_ratio,
            "share": t.straggler_share,
            "min_collectives": t.straggler_min_collectives,
        },
        "source": SOURCE_COLLECTIVES,
    }
    culprit = _culprit(late_by, names, waited, t)
    if culprit is None:
        top = max(late_by.values(), default=0)
        return [
            Finding(
                check=CHECK,
                severity=Severity.OK,
                section=SECTION,
                summary=f"no rank is late: {judged} collective(s) of {len(state.comms)} communicator(s) "
                f"from {len(state.people)} process(es) read; {waited} waited on a latecomer, and no process "
                f"or host was the latecomer of {t.straggler_share:.0%} of them (most: {top})",
                evidence=base,
            )
        ]
    members, label, hosts, ranks = culprit
    late = sum(late_by.get(m, 0) for m in members)
    peer_wait_us = sum(wait_by.get(m, 0.0) for m in members)
    per_peer_us = sum(lateness_by.get(m, 0.0) for m in members)
    span_us = (state.last_us - state.first_us) if state.first_us is not None and state.last_us else 0.0
    if span_us >= 1e6:
        share = per_peer_us / span_us
        span = f"{span_us / 6e7:.1f} min" if span_us >= 1.2e8 else f"{span_us / 1e6:.0f} s"
        basis = f"of their time over the {span} the records span (dump times)"
    else:
        share = per_peer_us / mean_sum if mean_sum else 0.0
        basis = "of the time spent in the collectives read (the records give no time span)"
    gpu_hours = peer_wait_us / 3.6e9
    evidence = {
        **base,
        "straggler": label,
        "late_in": late,
        "late_share": round(late / waited, 3),
        "mean_wait_ms": round(per_peer_us / late / 1000.0, 3),
        "share_of_time_lost": round(share, 4),
        "share_basis": basis,
        "gpu_hours_lost": _sig(gpu_hours),
        "gpu_hours_basis": "every other rank's wait in the collectives it was late to, one GPU per rank, "
        "over the records read",
        **_money(gpu_hours, instance_type, t),
        "culprit": {"ranks": ranks, "hosts": hosts, "method": "collective timings"},
    }
    severity = Severity.CONCERN if share * 100 >= t.straggler_concern_loss_pct else Severity.INFO
    return [
        Finding(
            node=None,
            check=CHECK,
            severity=severity,
            section=SECTION,
            summary=f"{label} arrives late: the latecomer of {late} of {waited} waited-on collectives "
            f"({late / waited:.0%}), the others waiting {per_peer_us / late / 1000.0:.1f} ms each time — "
            f"{share:.1%} {basis}, {_cost_text(evidence)} lost",
            evidence=evidence,
            threshold=f"latecomer of >= {t.straggler_share:.0%} of >= {t.straggler_min_collectives} "
            f"waited-on collectives; CONCERN from {t.straggler_concern_loss_pct:g} % of the time lost",
            next_step="Run the node checks on that host first (GPU clocks and throttling, Xid, PCIe, EFA "
            "counters, CPU governor, data loading) and compare its step work with a peer's "
            "(py-spy dump / nsys on that rank).",
            handoff=Handoff.NCCL,
        )
    ]


def _culprit(
    late_by: dict[int, int], names: Resolver, waited: int, t: Thresholds
) -> tuple[list[int], str, list[str], list[int]] | None:
    """(identities, label, hosts, ranks) of the process, else the host, late often enough."""
    if waited < t.straggler_min_collectives or not late_by:
        return None
    who = max(late_by, key=lambda w: (late_by[w], -w))
    if late_by[who] >= t.straggler_share * waited:
        host, rank = names.host(who), names.rank(who)
        return [who], names.label(who), [host] if host else [], [rank] if rank is not None else []
    by_host: dict[str, list[int]] = {}
    for member in late_by:
        host = names.host(member)
        if host:
            by_host.setdefault(host, []).append(member)
    if not by_host:
        return None
    host = max(by_host, key=lambda h: (sum(late_by[m] for m in by_host[h]), h))
    if sum(late_by[m] for m in by_host[host]) < t.straggler_share * waited or len(by_host[host]) < 2:
        return None
    members = sorted(by_host[host])
    ranks = sorted({r for m in members if (r := names.rank(m)) is not None})
    label = f"host {host} ({len(members)} processes" + (
        f", ranks {', '.join(map(str, ranks[:16]))})" if ranks else ")"
    )
    return members, label, [host], ranks


def _trainer_findings(
    state: TimingState, names: Resolver, instance_type: str | None, t: Thresholds, world: int | None
) -> list[Finding]:
    findings: list[Finding] = []
    step_ms = statistics.median(state.step_ms) if state.step_ms else None
    for kind in sorted({r.kind for r in state.reports}):
        reports = [r for r in state.reports if r.kind == kind]
        late = [
            r
            for r in reports
            if r.excess_ms is not None
            and r.excess_ms >= t.straggler_min_wait_ms
            and r.excess_ms >= t.straggler_min_wait_ratio * (r.typical_ms or 0.0)
        ]
        counts: dict[int, int] = {}
        for r in late:
            counts[r.slowest] = counts.get(r.slowest, 0) + 1
        evidence: dict[str, Any] = {
            "kind": kind,
            "reports": len(reports),
            "reports_with_a_slow_rank": len(late),
            "source": SOURCE_TRAINER.get(kind, kind),
        }
        if not counts or max(counts.values()) < t.straggler_share * len(reports) or len(reports) < 2:
            findings.append(
                Finding(
                    check=CHECK,
                    severity=Severity.OK,
                    section=SECTION,
                    summary=f"no rank is late in {len(reports)} {kind} report(s)"
                    + (f" ({len(late)} had a slow rank, not the same one most of the time)" if late else ""),
                    evidence=evidence,
                )
            )
            continue
        rank = max(counts, key=lambda r: (counts[r], -r))
        mine = [r for r in late if r.slowest == rank]
        excess = statistics.mean(r.excess_ms for r in mine if r.excess_ms is not None)
        typical = statistics.mean(r.typical_ms for r in mine if r.typical_ms is not None)
        peers = (max(r.ranks for r in mine) or world or 0) - 1
        iterations = (state.iteration_span[1] - state.iteration_span[0]) if state.iteration_span else 0
        share = excess / step_ms if step_ms else excess / (typical + excess)
        host = names.rank_hosts.get(rank)
        gpu_hours = excess * max(peers, 0) * iterations / 3.6e6 if iterations and peers > 0 else None
        bound = "" if mine[0].exact else "at most "
        evidence.update(
            straggler=Identity(host, None, rank).label(),
            late_in=counts[rank],
            excess_ms_per_iteration=round(excess, 3),
            typical_ms=round(typical, 3),
            step_ms=step_ms,
            share_of_time_lost=round(share, 4),
            share_basis="of the iteration time (Megatron's elapsed time per iteration)"
            if step_ms
            else "of the slow rank's own work",
            exact=mine[0].exact,
            examples=[f"{r.detail} ({r.where})" for r in mine[:3]],
            culprit={"ranks": [rank], "hosts": [host] if host else [], "method": kind},
        )
        cost = ""
        if gpu_hours is not None:
            evidence.update(
                gpu_hours_lost=_sig(gpu_hours),
                gpu_hours_basis=f"{bound}the excess x {peers} waiting ranks x {iterations} iterations",
                **_money(gpu_hours, instance_type, t),
            )
            first, last = state.iteration_span
            cost = f", {bound}{_cost_text(evidence)} over iterations {first}-{last}"
        findings.append(
            Finding(
                check=CHECK,
                severity=Severity.CONCERN if share * 100 >= t.straggler_concern_loss_pct else Severity.INFO,
                section=SECTION,
                summary=f"{Identity(host, None, rank).label()} is the slowest in {counts[rank]} of "
                f"{len(reports)} {kind} report(s): {bound}{excess:.1f} ms per iteration beyond the typical "
                f"rank ({bound}{share:.1%} {evidence['share_basis']}){cost}",
                evidence=evidence,
                threshold=f"slowest in >= {t.straggler_share:.0%} of the reports by >= "
                f"{t.straggler_min_wait_ms:g} ms and {t.straggler_min_wait_ratio:.0%}",
                next_step="Check that rank's node first (GPU clocks, throttling, Xid, data loading); with "
                "--timing-log-option all Megatron prints every rank's timers.",
                handoff=Handoff.NCCL,
            )
        )
    return findings


def _nrx_findings(state: TimingState, names: Resolver, t: Thresholds) -> list[Finding]:
    slow: dict[int, tuple[float | None, str | None]] = {}
    for (kind, rank), node in state.nrx_flagged.items():
        if kind == "relative":
            slow[rank] = (state.nrx_scores.get(("relative", rank), (None,))[0], node)
    for (kind, rank), (score, node, _lines) in state.nrx_scores.items():
        if kind == "relative" and score < t.straggler_min_relative_score:
            slow.setdefault(rank, (score, node))
    scored = sum(1 for kind, _ in state.nrx_scores if kind == "relative")
    if not slow:
        if not scored:
            return []
        return [
            Finding(
                check=CHECK,
                severity=Severity.OK,
                section=SECTION,
                summary=f"no rank is late: nvidia-resiliency-ext relative scores of {scored} rank(s) all at "
                f"or above {t.straggler_min_relative_score:g}",
                evidence={"ranks_scored": scored, "source": SOURCE_NRX},
            )
        ]
    ranks = sorted(slow, key=lambda r: (slow[r][0] if slow[r][0] is not None else 0.0, r))
    worst = ranks[0]
    score, node = slow[worst]
    hosts = sorted({h for r in ranks if (h := slow[r][1] or names.rank_hosts.get(r))})
    listed = ", ".join(
        f"rank {r}"
        + (f" ({slow[r][1]})" if slow[r][1] else "")
        + (f" score {slow[r][0]:.2f}" if slow[r][0] is not None else "")
        for r in ranks[:8]
    )
    share = 1.0 - score if score is not None else None
    return [
        Finding(
            check=CHECK,
            severity=Severity.CONCERN,
            section=SECTION,
            summary=f"nvidia-resiliency-ext names {len(ranks)} straggler rank(s): {listed}"
            + (
                f" — the slowest runs at {score:.0%} of the best rank's speed (up to {share:.0%} of each "
                "step lost if it gates the step, modelled)"
                if score is not None and share is not None
                else ""
            ),
            evidence={
                "ranks": ranks[:200],
                "scores": {str(r): slow[r][0] for r in ranks[:200]},
                "nodes": {str(r): slow[r][1] for r in ranks[:200]},
                "share_of_time_lost_model": share,
                "source": SOURCE_NRX,
                "culprit": {
                    "ranks": ranks[:16],
                    "hosts": hosts[:16],
                    "method": "nvidia-resiliency-ext scores",
                },
            },
            threshold=f"relative score < {t.straggler_min_relative_score:g} or named in a STRAGGLER "
            "DETECTION WARNING",
            next_step="Check those nodes first (GPU clocks, throttling, Xid, thermal); "
            "nvidia-resiliency-ext's individual scores say whether the rank got slower than it was.",
            handoff=Handoff.NCCL,
        )
    ]


def _hang_findings(state: TimingState, rank_hosts: dict[int, str]) -> list[Finding]:
    findings: list[Finding] = []
    groups: dict[str, dict[int, Any]] = {}
    for (pg, rank), progress in state.fr.items():
        groups.setdefault(pg, {})[rank] = progress
    for pg, ranks in sorted(groups.items()):
        waiting = {r: p for r, p in ranks.items() if p.last_state != "completed"}
        if not waiting or len(ranks) < 2:
            continue
        top = max(p.last_seq for p in waiting.values())
        behind = sorted(r for r, p in ranks.items() if p.last_seq < top)
        size = state.fr_ranks.get(pg)
        missing = max(0, size - len(ranks)) if size else 0
        if not behind:
            continue
        first = ranks[behind[0]]
        op = next((p.last_op for p in waiting.values() if p.last_seq == top), "?")
        hosts = sorted({h for r in behind if (h := rank_hosts.get(r) or _path_host(ranks[r].where))})
        who = ", ".join(f"rank {r}" + (f" ({rank_hosts[r]})" if r in rank_hosts else "") for r in behind[:16])
        findings.append(
            Finding(
                check=CHECK,
                severity=Severity.CONCERN,
                section=SECTION,
                summary=f"hang: {who} never reached collective #{top} ({op}) of process group {pg}, which "
                f"{len(waiting)} other rank(s) wait in; its last was #{first.last_seq} ({first.last_state})"
                + (f"; {missing} rank(s) of the group left no dump" if missing else ""),
                evidence={
                    "process_group": pg,
                    "collective": top,
                    "op": op,
                    "behind": {str(r): ranks[r].last_seq for r in behind[:200]},
                    "waiting": sorted(waiting)[:200],
                    "dumps": len(ranks),
                    "group_size": size,
                    "source": SOURCE_FR_HANG,
                    "culprit": {"ranks": behind[:16], "hosts": hosts[:16], "method": "flight-recorder dumps"},
                },
                next_step="Read that rank's own stack now (py-spy dump --pid on its host) and run the node "
                "checks there; the others are blocked in the collective it never issued.",
                handoff=Handoff.NCCL,
            )
        )
    return findings


def _path_host(where: str) -> str | None:
    from hyperpod_perf.straggler.flight_recorder import host_of

    return host_of(where.split(" (rank", 1)[0])


def straggler_findings(
    state: TimingState,
    rank_hosts: dict[int, str],
    process_ranks: dict[tuple[str, str], int],
    instance_type: str | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    world: int | None = None,
) -> list[Finding]:
    """Every nccl.straggler finding; nothing when no timing source was read."""
    if state.empty:
        return []
    names = Resolver(state, rank_hosts, process_ranks)
    findings: list[Finding] = []
    if state.collectives:
        findings.extend(_collective_findings(state, names, instance_type, thresholds))
    if state.reports:
        findings.extend(_trainer_findings(state, names, instance_type, thresholds, world))
    findings.extend(_nrx_findings(state, names, thresholds))
    findings.extend(_hang_findings(state, rank_hosts))
    if state.fr_without_duration:
        findings.append(
            Finding(
                check=CHECK,
                severity=Severity.INFO,
                section=SECTION,
                summary=f"{state.fr_without_duration} flight-recorder dump(s) carry no duration_ms: "
                "collective times are recorded only with TORCH_NCCL_ENABLE_TIMING=1 (their sequence numbers "
                "are still read for hangs)",
                evidence={"dumps_without_duration": state.fr_without_duration},
            )
        )
    if not findings and state.step_ms:
        findings.append(
            Finding(
                check=CHECK,
                severity=Severity.INFO,
                section=SECTION,
                summary=f"{len(state.step_ms)} iteration time(s) read (median "
                f"{statistics.median(state.step_ms):.1f} ms) but no per-rank timing: Megatron prints the "
                "iteration line from one rank only",
                evidence={
                    "iterations": len(state.step_ms),
                    "median_step_ms": statistics.median(state.step_ms),
                },
                next_step="Log per-rank timings: Megatron --timing-log-option all or --log-straggler, NCCL "
                "Inspector (NCCL_PROFILER_PLUGIN), or the flight recorder with TORCH_NCCL_ENABLE_TIMING=1.",
            )
        )
    if state.dropped:
        findings.append(
            Finding(
                check=CHECK,
                severity=Severity.INFO,
                section=SECTION,
                summary="some timing detail passed the analysis bounds or the recorder's own ring and was "
                "counted, not kept: " + ", ".join(f"{k} {v}" for k, v in sorted(state.dropped.items())),
                evidence={"dropped": dict(state.dropped)},
            )
        )
    return findings


__all__ = ["CHECK", "MAX", "straggler_findings"]
