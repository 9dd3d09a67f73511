"""A job-log scan as plain JSON, and back: the partial scans of the Distributed Map's children.

Each child of the job-log map scans its batch of objects and writes what it found here; the
reduce step (NcclResults) reads every part back and merges them (`JobLogScan.merge`), so 100 GiB
of logs are read by many functions at once but judged as one job. JSON, never pickle: a part is
data in a bucket, and data is not code. Every collection of the scan is bounded, so a part is too.
"""

from __future__ import annotations

from typing import Any

from hyperpod_perf.domain.bounded_stream import ReadBounds
from hyperpod_perf.joblogs.scan import Event, JobLogScan, Named, Process, RankWatch, Setting
from hyperpod_perf.straggler.model import CommInfo, FrProgress, Identity, TimingState, TrainerReport

FORMAT = 1


def scan_to_dict(scan: JobLogScan) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "instance_type": scan.instance_type,
        "records": scan.records,
        "logs": scan.logs,
        "sources": sorted(scan.sources),
        "bounds": scan.bounds.to_dict(),
        "processes": [
            {
                **{k: getattr(p, k) for k in _PROCESS_SCALARS},
                "ranks": sorted(p.ranks),
                "socket_ifaces": list(p.socket_ifaces),
                "comm_ranks": sorted(p.comm_ranks),
            }
            for p in scan.processes.values()
        ],
        "settings": [
            {
                "name": s.name,
                "value": s.value,
                "source": s.source,
                "count": s.count,
                "hosts": sorted(s.hosts),
                "where": s.where,
            }
            for s in scan.settings.values()
        ],
        "platforms": sorted(scan.platforms),
        "events": [
            {
                k: getattr(e, k)
                for k in ("kind", "host", "rank", "text", "where", "time_kind", "time", "count")
            }
            for e in scan.events.values()
        ],
        "watches": [
            {
                "pg": w.pg,
                "rank": w.rank,
                "host": w.host,
                "seqs": [[seq, op] for seq, op in w.seqs.items()],
                "work": w.work,
                "last_enqueued": w.last_enqueued,
                "last_completed": w.last_completed,
                "where": w.where,
            }
            for w in scan.watches.values()
        ],
        "named": [
            {"method": n.method, "ranks": list(n.ranks), "detail": n.detail, "where": n.where}
            for n in scan.named
        ],
        "dropped": dict(scan.dropped),
        "fr_context": dict(scan._fr_context),
        "timings": timings_to_dict(scan.timings),
    }


_PROCESS_SCALARS = (
    "host",
    "pid",
    "network",
    "network_from_channels",
    "provider",
    "fabric",
    "nics",
    "ofi_failure",
    "no_plugin",
    "gdr_disabled",
    "where",
)


def scan_from_dict(data: dict[str, Any]) -> JobLogScan:
    if data.get("format") != FORMAT:
        raise ValueError(f"not a job-log scan part of format {FORMAT}")
    scan = JobLogScan(data.get("instance_type"), ReadBounds.from_dict(data.get("bounds") or {}))
    scan.records = int(data.get("records") or 0)
    scan.logs = int(data.get("logs") or 0)
    scan.sources = set(data.get("sources") or [])
    for p in data.get("processes") or []:
        process = Process(
            **{k: p.get(k) for k in _PROCESS_SCALARS if k not in ("host", "pid", "where", "no_plugin")},
            host=p["host"],
            pid=p["pid"],
            where=p.get("where") or "",
            no_plugin=bool(p.get("no_plugin")),
            ranks=set(p.get("ranks") or []),
            socket_ifaces=tuple(p.get("socket_ifaces") or ()),
            comm_ranks={(int(r), int(n)) for r, n in p.get("comm_ranks") or []},
        )
        scan.processes[(process.host, process.pid)] = process
    for s in data.get("settings") or []:
        setting = Setting(
            s["name"], s["value"], s["source"], int(s["count"]), set(s.get("hosts") or []), s["where"]
        )
        scan.settings[(setting.name, setting.value, setting.source)] = setting
    scan.platforms = set(data.get("platforms") or [])
    for e in data.get("events") or []:
        event = Event(
            e["kind"], e["host"], e["rank"], e["text"], e["where"], e["time_kind"], e["time"], e["count"]
        )
        scan.events[(event.kind, event.host, event.rank)] = event
        scan.event_kinds[event.kind] = scan.event_kinds.get(event.kind, 0) + 1
    for w in data.get("watches") or []:
        watch = RankWatch(
            w["pg"],
            int(w["rank"]),
            w.get("host"),
            {int(seq): op for seq, op in w.get("seqs") or []},
            w.get("work"),
            w.get("last_enqueued"),
            w.get("last_completed"),
            w.get("where") or "",
        )
        scan.watches[(watch.pg, watch.rank)] = watch
    scan.named = [
        Named(n["method"], tuple(n["ranks"]), n["detail"], n["where"]) for n in data.get("named") or []
    ]
    scan.dropped = {str(k): int(v) for k, v in (data.get("dropped") or {}).items()}
    scan._fr_context = dict(data.get("fr_context") or {})
    scan.timings = timings_from_dict(data.get("timings") or {})
    return scan


def timings_to_dict(state: TimingState) -> dict[str, Any]:
    comms = list(state.comms)
    index = {key: i for i, key in enumerate(comms)}
    return {
        "people": [[p.host, p.pid, p.rank] for p in state.people],
        "comms": [
            [key[0], key[1], c.name, c.n_ranks, c.source, c.collectives, c.ops]
            for key, c in state.comms.items()
        ],
        "collectives": [[index[key], seq, *agg] for (key, seq), agg in state.collectives.items()],
        "comm_ranks": [[index[key], who, rank] for (key, who), rank in state.comm_ranks.items()],
        "first_us": state.first_us,
        "last_us": state.last_us,
        "records": state.records,
        "sources": state.sources,
        "timing_sources": state.timing_sources,
        "reports": [
            [r.kind, r.slowest, r.excess_ms, r.typical_ms, r.ranks, r.where, r.detail, r.exact]
            for r in state.reports
        ],
        "step_ms": state.step_ms,
        "iterations": state.iterations,
        "fr": [
            [pg, rank, p.last_seq, p.last_state, p.last_op, p.last_created_ns, p.where]
            for (pg, rank), p in state.fr.items()
        ],
        "fr_ranks": state.fr_ranks,
        "fr_without_duration": state.fr_without_duration,
        "problems": [list(p) for p in state.problems],
        "dropped": state.dropped,
        "nrx_kind": state.nrx_kind,
        "nrx_scores": [[kind, rank, *value] for (kind, rank), value in state.nrx_scores.items()],
        "nrx_flagged": [[kind, rank, node] for (kind, rank), node in state.nrx_flagged.items()],
        "iteration_span": state.iteration_span,
    }


def timings_from_dict(data: dict[str, Any]) -> TimingState:
    state = TimingState()
    for host, pid, rank in data.get("people") or []:
        state.identity(Identity(host, pid, rank))
    comms: list[tuple[str, str]] = []
    for kind, name_id, name, n_ranks, source, collectives, ops in data.get("comms") or []:
        key = (kind, name_id)
        comms.append(key)
        state.comms[key] = CommInfo(name, n_ranks, source, collectives, dict(ops))
    for row in data.get("collectives") or []:
        key_index, seq, n, total, low, who, high = row
        state.collectives[(comms[key_index], int(seq))] = [n, total, low, who, high]
    for key_index, who, rank in data.get("comm_ranks") or []:
        state.comm_ranks[(comms[key_index], int(who))] = int(rank)
    state.first_us, state.last_us = data.get("first_us"), data.get("last_us")
    state.records = int(data.get("records") or 0)
    state.sources = dict(data.get("sources") or {})
    state.timing_sources = dict(data.get("timing_sources") or {})
    state.reports = [TrainerReport(*row) for row in data.get("reports") or []]
    state.step_ms = list(data.get("step_ms") or [])
    state.iterations = int(data.get("iterations") or 0)
    for pg, rank, seq, status, op, created, where in data.get("fr") or []:
        state.fr[(pg, int(rank))] = FrProgress(seq, status, op, created, where)
    state.fr_ranks = dict(data.get("fr_ranks") or {})
    state.fr_without_duration = int(data.get("fr_without_duration") or 0)
    state.problems = [(s, w, bool(r)) for s, w, r in data.get("problems") or []]
    state.dropped = dict(data.get("dropped") or {})
    state.nrx_kind = dict(data.get("nrx_kind") or {})
    state.nrx_scores = {
        (kind, int(rank)): (score, node, lines)
        for kind, rank, score, node, lines in data.get("nrx_scores") or []
    }
    state.nrx_flagged = {(kind, int(rank)): node for kind, rank, node in data.get("nrx_flagged") or []}
    state.iteration_span = list(data.get("iteration_span") or [])
    return state
