"""PyTorch NCCL flight-recorder dumps, read without ever unpickling untrusted data.

What a dump is (torch/csrc/distributed/c10d/FlightRecorder.hpp and FlightRecorderDetail.hpp):
one file per rank, written by `DebugInfoWriter` to `TORCH_NCCL_DEBUG_INFO_TEMP_FILE` (default
`/tmp/nccl_trace_rank_`, newer releases `TORCH_FR_DUMP_TEMP_FILE`) followed by the rank: the rank
is the file name's suffix, and the dump names no host (PyTorch's own analyser,
tools/flight_recorder/components/loader.py, calls it `host_rank<N>`). Its content, `dump()` as a
pickle (torch's C++ `Pickler`, protocol 2) or `dump_json()`:

    {"version": "2.x", "comm_lib_version": …, "pg_config": {name: {"name", "desc", "ranks"}},
     "pg_status": {pg_id: {"last_enqueued_collective", "last_started_collective",
                           "last_completed_collective"}},
     "entries": [{"record_id", "pg_id", "process_group": (name, desc), "collective_seq_id",
                  "p2p_seq_id", "op_id", "profiling_name", "time_created_ns",
                  "duration_ms" (only with TORCH_NCCL_ENABLE_TIMING=1), "input_sizes", …,
                  "state": "scheduled" | "started" | "completed",
                  "time_discovered_started_ns", "time_discovered_completed_ns" (the watchdog's
                  poll times, not the kernel's), "retired", "timeout_ms", "is_p2p", "frames"}]}

Safety: the pickle is read by `RestrictedUnpickler`, which builds only what torch's Pickler
writes for this dictionary — dicts, lists, tuples, strings, numbers, booleans, None — and maps
the only globals that Pickler emits for them (`torch.jit._pickle.build_intlist`,
`build_doublelist`, `build_boollist`, `build_stringlist`, `restore_type_tag`) to local functions
that return their argument. Any other global (what a malicious `__reduce__` needs), persistent
ids or extension codes make the dump refused, reported as such, and never executed. (Ascend's
torch_npu fork of the analyser uses the same allow-list idea: a `SafeUnpickler` of builtins.)
"""

from __future__ import annotations

import io
import json

# bandit B403: only RestrictedUnpickler reads a dump (find_class allow-list, persistent ids refused)
import pickle  # nosec B403
import re
from typing import Any

from hyperpod_perf.domain.gc_pause import collector_paused
from hyperpod_perf.straggler.model import MAX_FR_RANKS, FrProgress, Identity, TimingState

SOURCE = "flight recorder"
_SEQUENCES = (list, tuple)
MAX_DUMP_BYTES = 256 * 1024 * 1024
#: The rank suffix of a dump's file name (an extension a copy may have added is allowed).
_RANK_SUFFIX = re.compile(r"(\d+)(?:\.(?:json|pkl|pickle|bin))?$")
_HOST_DIR = re.compile(r"^(?:ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}|\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z][\w-]*-\d+)$")


def _same(value: Any) -> Any:
    return value


def _untagged(value: Any, tag: Any = None) -> Any:
    return value


#: The globals torch's C++ Pickler writes for plain data (pickler.cpp pushSpecializedList,
#: startTypeTag): each returns its first argument, which is already the plain list or dict.
_ALLOWED = {
    ("torch.jit._pickle", "build_intlist"): _same,
    ("torch.jit._pickle", "build_doublelist"): _same,
    ("torch.jit._pickle", "build_boollist"): _same,
    ("torch.jit._pickle", "build_stringlist"): _same,
    ("torch.jit._pickle", "restore_type_tag"): _untagged,
}


class UnsafeDump(Exception):
    """The pickle asks for something other than plain data: it is refused, not loaded."""


class RestrictedUnpickler(pickle.Unpickler):
    """Plain containers and scalars only; never imports or calls anything from the data."""

    def find_class(self, module: str, name: str) -> Any:
        allowed = _ALLOWED.get((module, name))
        if allowed is None:
            raise UnsafeDump(f"the pickle asks for {module}.{name}")
        return allowed

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafeDump("the pickle refers to a persistent object (a tensor storage)")


def sniff(head: bytes, name: str) -> bool:
    """Whether a file is a flight-recorder dump: a pickle, or the JSON form's first key."""
    start = head[:2]
    if start[:1] == b"\x80" and start[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return True
    stripped = head.lstrip()[:64]
    return stripped.startswith(b'{"comm_lib_version"') or (
        "nccl_trace_rank_" in name.rsplit("/", 1)[-1] and stripped.startswith(b"{")
    )


def load_dump(data: bytes) -> dict[str, Any]:
    """The dump as plain data (pickle through the restricted reader, or JSON); raises UnsafeDump
    or ValueError. Built with the collector paused: ~25 containers per entry (domain/gc_pause)."""
    with collector_paused():
        if data[:1] == b"\x80":
            try:
                # buffered: the C unpickler peeks ahead instead of a read() call per opcode (2.5x)
                dump = RestrictedUnpickler(io.BufferedReader(io.BytesIO(data), 1 << 20)).load()
            except UnsafeDump:
                raise
            except Exception as exc:  # any malformed pickle: a clear error, never a traceback
                raise ValueError(f"not a readable pickle ({type(exc).__name__}: {str(exc)[:120]})") from exc
        else:
            try:
                dump = json.loads(data)
            except ValueError as exc:
                raise ValueError(f"not JSON ({str(exc)[:120]})") from exc
    if not isinstance(dump, dict) or not isinstance(dump.get("entries", []), list):
        raise ValueError("not a flight-recorder dump (no 'entries' list)")
    return dump


def rank_of(name: str) -> int | None:
    match = _RANK_SUFFIX.search(name.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else None


def host_of(name: str) -> str | None:
    """The host a dump's path names, when its folder is a host name (e.g. `…/ip-10-1-2-3/…`)."""
    parts = name.replace("\\", "/").split("/")
    for part in reversed(parts[:-1]):
        if _HOST_DIR.match(part):
            return part
    return None


def _ranks_count(value: Any) -> int | None:
    if isinstance(value, list | tuple):
        return len(value)
    if isinstance(value, str):
        return len(re.findall(r"\d+", value)) or None
    return None


def read_dump(data: bytes, name: str, state: TimingState) -> None:
    """One rank's dump into `state`: durations per collective (when timed), progress per group.
    The dump is loaded, walked and freed with the collector paused: the walk's own small tuples
    would otherwise set off collections that traverse every container of the dump."""
    with collector_paused():
        _read_dump(data, name, state)


def _read_dump(data: bytes, name: str, state: TimingState) -> None:
    rank = rank_of(name)
    try:
        dump = load_dump(data)
    except UnsafeDump as exc:
        state.problem(name, f"flight-recorder dump refused, not loaded: {exc}", refused=True)
        return
    except ValueError as exc:
        state.problem(name, f"flight-recorder dump not read: {exc}")
        return
    if rank is None:
        state.problem(name, "flight-recorder dump whose file name ends in no rank: not read")
        return
    state.count("flight-recorder dumps")
    who = state.identity(Identity(host=host_of(name), rank=rank))
    config = dump.get("pg_config") if isinstance(dump.get("pg_config"), dict) else {}
    for pg_name, info in config.items():
        if str(pg_name) not in state.fr_ranks:  # (the first dump's figure is kept: read it once)
            ranks = _ranks_count(info.get("ranks")) if isinstance(info, dict) else None
            state.fr_ranks[str(pg_name)] = ranks
    timed = False
    where = f"{name} (rank {rank})"
    last: dict[str, tuple[int, dict]] = {}  # pg -> (seq, entry) of its latest entry
    comms: dict[str, Any] = {}  # pg -> (key, CommInfo | None)
    low = high = None
    # per entry only what differs between entries; counted per dump, added to the state after
    timed_records: list[tuple[tuple[str, str], int, float]] = []
    counts: dict[str, int] = {}  # pg -> its timed entries
    ops: dict[tuple[str, str], int] = {}  # (pg, profiling name) -> its timed entries
    for entry in dump.get("entries") or []:
        if type(entry) is not dict or entry.get("is_p2p"):
            continue
        seq = entry.get("collective_seq_id")
        if type(seq) is not int:  # (not a bool either)
            continue
        group = entry.get("process_group")
        pg = str(group[0]) if isinstance(group, _SEQUENCES) and group else str(entry.get("pg_id", "?"))
        latest = last.get(pg)
        if latest is None or seq >= latest[0]:
            last[pg] = (seq, entry)
        duration = entry.get("duration_ms")
        if (type(duration) is float or type(duration) is int) and entry.get("state") == "completed":
            timed = True
            comm = comms.get(pg)
            if comm is None:
                key = (SOURCE, pg)
                comm = comms[pg] = (key, state.comm(key, pg, state.fr_ranks.get(pg), SOURCE))
                if comm[1] is not None and who >= 0:
                    state.comm_ranks.setdefault((key, who), rank)
            if comm[1] is None or who < 0:
                continue
            timed_records.append((comm[0], seq, duration))
            counts[pg] = counts.get(pg, 0) + 1
            op = entry.get("profiling_name")
            op = op[:80] if type(op) is str and op else str(op or "?")[:80]
            ops[(pg, op)] = ops.get((pg, op), 0) + 1
            created = entry.get("time_created_ns")
            if type(created) is int and created:
                if low is None or created < low:
                    low = created
                if high is None or created > high:
                    high = created
    state.add_all(timed_records, who, 1000.0)
    state.records += len(timed_records)
    for pg, n in counts.items():
        comms[pg][1].collectives += n
    for (pg, op), n in ops.items():
        info = comms[pg][1]
        info.ops[op] = info.ops.get(op, 0) + n
    for pg, (seq, entry) in last.items():
        progress = state.fr.get((pg, rank))
        if progress is None and len(state.fr) >= MAX_FR_RANKS:
            state.drop("flight-recorder ranks")
        elif progress is None or seq >= progress.last_seq:
            created = entry.get("time_created_ns")
            state.fr[(pg, rank)] = FrProgress(
                seq,
                str(entry.get("state") or "?"),
                str(entry.get("profiling_name") or "?")[:80],
                created if isinstance(created, int) and not isinstance(created, bool) else None,
                where,
            )
    for ns in (low, high):
        if ns is not None:
            state.seen_at(ns / 1000.0)
    if not timed:
        state.fr_without_duration += 1
