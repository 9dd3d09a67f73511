"""Timing records of a simulated job, written in the real formats (straggler tests and bench).

Each writer follows the format's own writer, cited:

- `inspector_lines`: NCCL Inspector JSON lines as plugins/profiler/inspector/inspector_json.cc
  writes them — v4.0/v4.2 (header + metadata on every record; v4.2 also `comm_name` and a
  `dump_stats` marker per communicator dump) and v4.3 (the marker carries the context, records are
  `{"coll_perf":…}` alone), keys in the writer's order, compact separators as its json.cc emits.
- `fr_dump` + `pickle_like_torch` / `pickle.dumps` / `json.dumps`: a flight-recorder dump as
  FlightRecorderDetail.hpp `dump()` builds it, pickled the way torch's C++ Pickler does
  (torch/csrc/jit/serialization/pickler.cpp: protocol 2, `restore_type_tag` around every dict and
  generic list, `build_intlist` for int lists, strings memoised with BINPUT/BINGET), or with Python's
  pickle (as PyTorch's own test_loader.py writes its dumps), or as `dump_json()` (keys sorted, as
  nlohmann::json orders them).

The job: `ranks` ranks, 8 per host (`ip-10-1-0-<n>`), one pid each; every collective ends when
its last rank arrives, so each rank's duration is (last arrival - its own arrival) + the transfer.
A planted straggler arrives `late_ms` after the others; the others jitter by up to `jitter_ms`.
"""

from __future__ import annotations

import json
import random
import struct
from dataclasses import dataclass
from typing import Any

BASE_US = 1_748_030_377_000_000  # a dump time in the README's range (µs since the epoch)


@dataclass
class Job:
    ranks: int = 16
    collectives: int = 60
    transfer_ms: float = 20.0
    jitter_ms: float = 0.3
    late_rank: int | None = None
    late_ms: float = 5.0
    late_host: int | None = None  # every rank of this host index is late (a slow node)
    seed: int = 7
    step_ms: float = 250.0  # time between collectives (the dump time advances by it)

    def host(self, rank: int) -> str:
        return f"ip-10-1-0-{10 + rank // 8}"

    def pid(self, rank: int) -> int:
        return 4000 + rank

    def durations_us(self) -> list[list[float]]:
        """[collective][rank] duration in µs."""
        # bandit B311: simulated arrival jitter, not a secret
        rnd = random.Random(self.seed)  # nosec B311
        out = []
        for _ in range(self.collectives):
            arrival = [rnd.uniform(0.0, self.jitter_ms) for _ in range(self.ranks)]
            if self.late_rank is not None:
                arrival[self.late_rank] += self.late_ms
            if self.late_host is not None:
                for r in range(self.ranks):
                    if r // 8 == self.late_host:
                        arrival[r] += self.late_ms * rnd.uniform(0.8, 1.2)
            last = max(arrival)
            out.append([round((last - a + self.transfer_ms) * 1000.0, 1) for a in arrival])
        return out


def inspector_lines(job: Job, rank: int, version: str = "v4.2", comm_id: str = "0x7f8c496ae9f661") -> str:
    """One process's Inspector log (all collectives of the world communicator), `version` format."""
    durations = job.durations_us()
    header = {
        "id": comm_id,
        "comm_name": "DP Group 0",
        "rank": rank,
        "n_ranks": job.ranks,
        "nnodes": job.ranks // 8,
    }
    if version == "v4.0":
        del header["comm_name"]
    lines = []
    for seq, per_rank in enumerate(durations, 1):
        stamp = BASE_US + int(seq * job.step_ms * 1000)
        metadata = {
            "inspector_output_format_version": version,
            "git_rev": "9019a1912-dirty",
            "rec_mechanism": "nccl_profiler_interface",
            "dump_timestamp_us": stamp,
            "hostname": job.host(rank),
            "pid": job.pid(rank),
        }
        exec_us = per_rank[rank]
        size = 17179869184
        perf = {
            "coll": "AllReduce",
            "coll_algo": "RING",
            "coll_proto": "SIMPLE",
            "coll_sn": seq,
            "coll_msg_size_bytes": size,
            "coll_exec_time_us": int(exec_us),
            "coll_timing_source": "kernel_gpu",
            "coll_algobw_gbs": round(size / exec_us / 1000.0, 6),
            "coll_busbw_gbs": round(size / exec_us / 1000.0 * 2 * (job.ranks - 1) / job.ranks, 6),
        }
        if version == "v4.0":
            del perf["coll_algo"], perf["coll_proto"]
        stats = {
            "coll_records": 1,
            "coll_dropped_total": 0,
            "coll_dropped_since_last_dump": 0,
            "p2p_records": 0,
            "p2p_dropped_total": 0,
            "p2p_dropped_since_last_dump": 0,
        }
        if version == "v4.3":
            lines.append(_compact({"header": header, "metadata": metadata, "dump_stats": stats}))
            lines.append(_compact({"coll_perf": perf}))
            continue
        if version == "v4.2":
            lines.append(_compact({"header": header, "metadata": metadata, "dump_stats": stats}))
        lines.append(_compact({"header": header, "metadata": metadata, "coll_perf": perf}))
    return "\n".join(lines) + "\n"


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def nccl_init_lines(job: Job) -> str:
    """Every rank's NCCL `Init COMPLETE` line (src/init.cc), so a rank maps to its host."""
    return "".join(
        f"{job.host(r)}:{job.pid(r)}:{job.pid(r)} [{r % 8}] NCCL INFO ncclCommInitRankConfig "
        f"comm 0x55d0{r:04x} rank {r} nranks {job.ranks} cudaDev {r % 8} nvmlDev {r % 8} "
        f"busId {r % 8}3000 commId 0x3e1f - Init COMPLETE\n"
        for r in range(job.ranks)
    )


def fr_dump(
    job: Job,
    rank: int,
    *,
    timed: bool = True,
    stop_at: int | None = None,
    waiting_at: int | None = None,
) -> dict[str, Any]:
    """One rank's flight-recorder dump. `stop_at`: this rank's last entry (a hang's culprit);
    `waiting_at`: the collective this rank is stuck in (state started, not completed)."""
    durations = job.durations_us()
    entries = []
    last = len(durations) if stop_at is None else stop_at
    for seq in range(1, last + 1):
        in_flight = waiting_at is not None and seq == waiting_at
        entry: dict[str, Any] = {
            "frames": [
                {"name": "all_reduce", "filename": "torch/distributed/distributed_c10d.py", "line": 2696}
            ],
            "record_id": seq - 1,
            "pg_id": 0,
            "process_group": ("0", "default_pg"),
            "collective_seq_id": seq,
            "p2p_seq_id": 0,
            "op_id": seq,
            "profiling_name": "nccl:all_reduce",
            "time_created_ns": (BASE_US + int(seq * job.step_ms * 1000)) * 1000,
            "input_sizes": [[1024, 1024]],
            "input_dtypes": ["Float"],
            "output_sizes": [[1024, 1024]],
            "output_dtypes": ["Float"],
            "state": "started" if in_flight else "completed",
            "time_discovered_started_ns": (BASE_US + int(seq * job.step_ms * 1000)) * 1000 + 5_000_000,
            "time_discovered_completed_ns": None
            if in_flight
            else (BASE_US + int(seq * job.step_ms * 1000)) * 1000,
            "retired": not in_flight,
            "timeout_ms": 600000,
            "is_p2p": False,
        }
        if timed and not in_flight:
            entry["duration_ms"] = durations[seq - 1][rank] / 1000.0
        entries.append(entry)
    ranks = "[" + ", ".join(str(r) for r in range(job.ranks)) + "]"
    return {
        "version": "2.4",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": ranks}},
        "comm_lib_version": "2.21.5",
        "pg_status": {
            "0": {
                "last_enqueued_collective": last,
                "last_started_collective": last,
                "last_completed_collective": last - (1 if waiting_at else 0),
            }
        },
        "entries": entries,
    }


def fr_json(dump: dict[str, Any]) -> bytes:
    """`dump_json()`: nlohmann::json objects keep their keys sorted; time_discovered_* 0 when unset."""

    def fix(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: (0 if v is None and k.startswith("time_discovered") else fix(v)) for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [fix(v) for v in value]
        return value

    return json.dumps(fix(dump), sort_keys=True, separators=(",", ":")).encode()


class _TorchPickler:
    """The opcodes torch's C++ Pickler writes for plain IValues (pickler.cpp), protocol 2."""

    def __init__(self) -> None:
        self.out = bytearray(b"\x80\x02")
        self.memo = 0
        self.strings: dict[str, int] = {}
        self.globals: dict[tuple[str, str], int] = {}

    def put(self) -> int:
        self.out += b"q" + bytes([self.memo]) if self.memo < 256 else b"r" + struct.pack("<I", self.memo)
        self.memo += 1
        return self.memo - 1

    def get(self, memo: int) -> None:
        self.out += b"h" + bytes([memo]) if memo < 256 else b"j" + struct.pack("<I", memo)

    def global_(self, module: str, name: str) -> None:
        key = (module, name)
        if key in self.globals:
            self.get(self.globals[key])
            return
        self.out += b"c" + module.encode() + b"\n" + name.encode() + b"\n"
        self.globals[key] = self.put()

    def value(self, v: Any) -> None:
        if v is None:
            self.out += b"N"
        elif isinstance(v, bool):
            self.out += b"\x88" if v else b"\x89"
        elif isinstance(v, int):
            if 0 <= v < 256:
                self.out += b"K" + bytes([v])
            elif 0 <= v < 65536:
                self.out += b"M" + struct.pack("<H", v)
            elif -(2**31) <= v < 2**31:
                self.out += b"J" + struct.pack("<i", v)
            else:
                self.out += b"\x8a\x08" + struct.pack("<q", v)
        elif isinstance(v, float):
            self.out += b"G" + struct.pack(">d", v)
        elif isinstance(v, str):
            if v in self.strings:
                self.get(self.strings[v])
                return
            raw = v.encode()
            self.out += b"X" + struct.pack("<I", len(raw)) + raw
            self.strings[v] = self.put()
        elif isinstance(v, tuple):
            if len(v) == 2:
                self.value(v[0])
                self.value(v[1])
                self.out += b"\x86"
            else:
                self.out += b"("
                for item in v:
                    self.value(item)
                self.out += b"t"
        elif isinstance(v, list) and v and all(isinstance(i, int) and not isinstance(i, bool) for i in v):
            self.global_("torch.jit._pickle", "build_intlist")
            self.out += b"(]("
            for item in v:
                self.value(item)
            self.out += b"etR"
        elif isinstance(v, list):
            self.global_("torch.jit._pickle", "restore_type_tag")
            self.out += b"]("
            for item in v:
                self.value(item)
            self.out += b"e"
            self.value("List[Any]")
            self.out += b"\x86R"
        elif isinstance(v, dict):
            self.global_("torch.jit._pickle", "restore_type_tag")
            self.out += b"}("
            for key, item in v.items():
                self.value(key)
                self.value(item)
            self.out += b"u"
            self.value("Dict[str, Any]")
            self.out += b"\x86R"
        else:
            raise TypeError(type(v))


def pickle_like_torch(value: Any) -> bytes:
    pickler = _TorchPickler()
    pickler.value(value)
    pickler.out += b"."
    return bytes(pickler.out)


def megatron_timers_block(job: Job, own_ms: dict[int, float], typical_ms: float = 180.0) -> str:
    """One `--timing-log-option all` block as megatron/core/timers.py formats it."""
    lines = ["times across ranks (ms):"]
    for name, share in (("forward-backward", 1.0), ("forward-compute", 0.4), ("backward-compute", 0.6)):
        lines.append(f"  {name}:")
        for rank in range(job.ranks):
            ms = (own_ms.get(rank, typical_ms) if name != "forward-backward" else typical_ms * 1.3) * share
            lines.append(f"     rank {rank:2d}: {ms:.2f}")
    return "\n".join(lines) + "\n"
