"""Benchmark: 100 GiB of job logs through the pipeline's Distributed Map — emulated, time-scaled.

Not run by CI. The target (issue 22): 100 GiB in the pipeline < 3 min, peak memory per child
< 1 GiB.

1. The fan-out, for real at a scaled size: moto S3 holds OBJECTS logs of OBJECT_KIB KiB (real
   excerpts in bench_joblogs' realistic mix: 95 % lines no check reads, host names numbered per
   object) and 1,024 ranks' NCCL Inspector files with a straggler planted on rank 517; the
   planner's BATCH_BYTES is divided by FACTOR = 100 GiB / those bytes, so the real ASL
   (PlanJobLogs -> the ScanJobLogs Distributed Map -> NcclResults) on the local pipeline driver,
   with the real handlers, fans out into the children a 100 GiB prefix would get and merges their
   parts; the run must name the straggler. PlanJobLogs and NcclResults are timed as they ran: they
   list and merge as many objects and parts as the real run would.
2. One child at full size: CHILD_OBJECTS logs of CHILD_MIB MiB each (the same mix, then the worst
   case: every line one a check reads) in moto, scanned by the real ScanJobLogs function
   (`scan_batch`); its CPU time, scaled to a 1 GiB batch, plus
   the S3 reads moto does not emulate (ASSUMED: a GetObject's first byte S3_FIRST_BYTE_S and the
   transfer at S3_BYTES_PER_S, not overlapped with the scan: conservative) is a child's real time
   (a Lambda child at 1,769 MB has one vCPU: its wall is its CPU time).
3. The map's real time: every child taken as long as that full one (each batch weighs at most
   1 GiB), MaxConcurrency (100) at a time: ceil(children / 100) x a child.
   Real-time estimate = plan + map + reduce.

Memory per child: the scaled child's batch, one CHILD_MIB object and the full child's batch are
re-run under tracemalloc (its peak allocations do not grow with the bytes: one block at a time,
the scan state capped; moto hands an object over whole, so the peak holds one object), plus a
fresh interpreter with the handler imported (VmHWM).

Run: `python bench/bench_joblog_map.py [--gib 100] [--objects 1000] [--object-kib 100]`.
CHILD_OBJECTS x CHILD_MIB is a quarter of a batch (the bench's budget); `--child-mib 256` reads a
whole 1 GiB batch.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time
import tracemalloc
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_joblogs import _TOKEN, mixed_template, template
from bench.common import BenchResult, Figure, Progress

TARGET_GIB = 100
OBJECTS = 1000
OBJECT_KIB = 100
CHILD_OBJECTS = 4
CHILD_MIB = 64
TARGET_S = 180.0
TARGET_CHILD_MB = 1024.0
RANKS = 1024
INSPECTOR_COLLECTIVES = 20
LATE_RANK = 517
#: Assumed S3 figures for a child's reads (not measured here): a GetObject's first byte (AWS's
#: "Timeouts and Retries for Latency-Sensitive Applications" whitepaper: small requests' median
#: latency "in the tens of milliseconds"; the upper end taken) and one connection's transfer rate.
S3_FIRST_BYTE_S = 0.1
S3_BYTES_PER_S = 75e6
MAX_CONCURRENCY = 100  # pipeline/joblog_map.py: the plan's MaxConcurrency at most


def _objects(count: int, size: int, mix: str = "mix") -> list[bytes]:
    """`count` logs of about `size` bytes of bench_joblogs' realistic mix (or its worst case, every
    line one a check reads), each with its own host names."""
    block = mixed_template() if mix == "mix" else template()
    out = []
    for n in range(count):
        text = block.replace(_TOKEN, str(n)).encode()
        while len(text) < size:
            text += text
        cut = text.rfind(b"\n", 0, size) + 1
        out.append(text[:cut])
    return out


def _inspector_files() -> dict[str, bytes]:
    from bench.bench_straggler import durations_us, host

    files = {}
    for rank in range(RANKS):
        lines = [
            json.dumps(
                {
                    "header": {
                        "id": "0x7f8c496ae9f661",
                        "rank": rank,
                        "n_ranks": RANKS,
                        "nnodes": RANKS // 8,
                    },
                    "metadata": {
                        "inspector_output_format_version": "v4.2",
                        "git_rev": "e0ca6f2",
                        "rec_mechanism": "nccl_profiler_interface",
                        "dump_timestamp_us": 1_748_030_377_000_000 + seq * 250_000,
                        "hostname": host(rank),
                        "pid": 4000 + rank,
                    },
                    "coll_perf": {
                        "coll": "AllReduce",
                        "coll_sn": seq,
                        "coll_msg_size_bytes": 67108864,
                        "coll_exec_time_us": us,
                        "coll_timing_source": "kernel_gpu",
                    },
                },
                separators=(",", ":"),
            )
            for seq, us in enumerate(durations_us(rank, INSPECTOR_COLLECTIVES), 1)
        ]
        files[f"inspector/{host(rank)}-pid{4000 + rank}.log"] = ("\n".join(lines) + "\n").encode()
    return files


class _Meter:
    """Per call of the wrapped handler functions: thread CPU, wall, and the S3 GetObject calls made
    in that thread meanwhile (their count and CPU: per-object work, which does not scale)."""

    def __init__(self) -> None:
        self.calls: dict[str, list[dict[str, Any]]] = {}
        self.first: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        self.lock = threading.Lock()
        self.local = threading.local()

    def wrap(self, name: str, fn: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.lock:
                self.first.setdefault(name, (args, kwargs))
            self.local.gets, self.local.get_cpu = 0, 0.0
            cpu, wall = time.thread_time(), time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                call = {
                    "cpu": time.thread_time() - cpu,
                    "wall": time.perf_counter() - wall,
                    "gets": self.local.gets,
                    "get_cpu": self.local.get_cpu,
                    "pieces": args[0].get("pieces") if args and isinstance(args[0], dict) else None,
                }
                with self.lock:
                    self.calls.setdefault(name, []).append(call)

        return timed

    def api_call(self, original: Any) -> Any:
        meter = self

        def call(client: Any, operation: str, params: dict[str, Any]) -> Any:
            if operation != "GetObject" or not hasattr(meter.local, "gets"):
                return original(client, operation, params)
            cpu = time.thread_time()
            try:
                return original(client, operation, params)
            finally:
                meter.local.gets += 1
                meter.local.get_cpu += time.thread_time() - cpu

        return call


@contextmanager
def _metered(meter: _Meter, batch_bytes: int):
    from botocore.client import BaseClient

    import hyperpod_perf.handlers.plan_job_logs as plan_handler
    import hyperpod_perf.handlers.scan_job_logs as scan_handler
    import hyperpod_perf.pipeline.joblog_map as joblog_map

    saved = (plan_handler.plan_job_logs, scan_handler.scan_batch, joblog_map.reduce_parts)
    saved_bytes, saved_call = joblog_map.BATCH_BYTES, BaseClient._make_api_call
    BaseClient._make_api_call = meter.api_call(saved_call)
    plan_handler.plan_job_logs = meter.wrap("plan", saved[0])
    scan_handler.scan_batch = meter.wrap("child", saved[1])
    joblog_map.reduce_parts = meter.wrap("reduce", saved[2])
    joblog_map.BATCH_BYTES = batch_bytes
    try:
        yield
    finally:
        plan_handler.plan_job_logs, scan_handler.scan_batch, joblog_map.reduce_parts = saved
        joblog_map.BATCH_BYTES, BaseClient._make_api_call = saved_bytes, saved_call


def _interpreter_mb() -> float:
    """Peak RSS of a fresh interpreter with the ScanJobLogs handler imported (a Lambda child's
    floor): VmHWM, which starts anew at exec (ru_maxrss would keep the forking parent's)."""
    code = (
        "import hyperpod_perf.handlers.scan_job_logs\n"
        "print(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1]) / 1024


def _batch_bytes(pieces: list[list[Any]], sizes: dict[str, int]) -> int:
    """The bytes a batch reads: whole objects are (key, 0, 0), ranges (key, start, end)."""
    return sum((end - start) if end else sizes[key] for key, start, end in pieces)


def _child_peak(
    sizes: dict[str, int],
    scan_batch: Any,
    call: tuple[tuple[Any, ...], dict[str, Any]],
    batch: dict[str, Any],
) -> tuple[float, int]:
    """(peak traced MB, bytes) of one child re-run over `batch`, with the map's first child's run,
    sources and store."""
    (_, layout, *_), kwargs = call
    tracemalloc.start()
    try:
        scan_batch(batch, layout, sources=kwargs["sources"], store=kwargs["store"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20, _batch_bytes(batch["pieces"], sizes)


def measure(
    target_gib: int = TARGET_GIB,
    objects: int = OBJECTS,
    object_kib: int = OBJECT_KIB,
    child_mib: int = CHILD_MIB,
    progress: Progress = print,
) -> dict[str, Any]:
    from hyperpod_perf_dev.localrun.demo import demo_cluster
    from hyperpod_perf_dev.localrun.driver import local_pipeline
    from hyperpod_perf_dev.localrun.plan import RunPlan

    started = time.perf_counter()
    logs = _objects(objects, object_kib * 1024)
    inspector = _inspector_files()
    actual = sum(map(len, logs)) + sum(map(len, inspector.values()))
    factor = target_gib * 2**30 / actual
    batch_bytes = max(1, int(2**30 / factor))
    progress(
        f"  generated {objects:,} logs of {object_kib} KiB and {RANKS:,} Inspector files "
        f"({actual / 2**20:,.0f} MiB, standing for {target_gib} GiB: x{factor:,.0f}) in "
        f"{time.perf_counter() - started:.0f} s"
    )
    meter = _Meter()
    with local_pipeline(RunPlan(clusters=(demo_cluster("healthy", 8),))) as run:
        s3, bucket = run.dep.client("s3"), run.dep.bucket
        loaded = time.perf_counter()
        sizes = {f"nccl/job-42/node-{n:04d}/train.log": len(body) for n, body in enumerate(logs)}
        sizes.update({f"nccl/job-42/{key}": len(body) for key, body in inspector.items()})
        bodies = [*logs, *inspector.values()]
        for key, body in zip(sizes, bodies, strict=True):
            s3.put_object(Bucket=bucket, Key=key, Body=body)
        progress(
            f"  put {len(logs) + len(inspector):,} objects into moto S3 "
            f"in {time.perf_counter() - loaded:.0f} s"
        )
        ran = time.perf_counter()
        with _metered(meter, batch_bytes):
            outcome = run.run(
                {"cluster": "ml-cluster", "job_logs_s3_prefix": f"s3://{bucket}/nccl/job-42/"}, "bench"
            )
        local_s = time.perf_counter() - ran
        plan = json.loads(outcome.get("work/joblogs-plan.json"))
        batches = json.loads(outcome.get("work/joblogs-batches.json"))
        (straggler,) = outcome.findings("nccl.straggler", "CONCERN") or [None]
        if (
            outcome.status != "SUCCEEDED"
            or straggler is None
            or f"rank {LATE_RANK}," not in straggler["summary"]
        ):
            raise RuntimeError(f"the run did not name the planted straggler ({outcome.status})")
        progress(f"  the real ASL ran {plan['batches']} children in {local_s:.0f} s here")
        from hyperpod_perf.pipeline.joblog_map import scan_batch

        # one child at full size, objects of CHILD_MIB MiB: the realistic mix, then the worst case
        (_, layout, *_), kwargs = meter.first["child"]
        full: dict[str, dict[str, Any]] = {}
        per_gib: dict[str, float] = {}
        for mix in ("mix", "worst"):
            batch: dict[str, Any] = {"index": 99_999, "bucket": bucket, "pieces": []}
            for n, body in enumerate(_objects(CHILD_OBJECTS, child_mib * 2**20, mix)):
                key = f"nccl/full-child-{mix}/node-{n:04d}/train.log"
                s3.put_object(Bucket=bucket, Key=key, Body=body)
                sizes[key] = len(body)
                batch["pieces"].append([key, 0, 0])
            cpu, wall = time.thread_time(), time.perf_counter()
            scan_batch(batch, layout, sources=kwargs["sources"], store=kwargs["store"])
            took_cpu, took_wall = time.thread_time() - cpu, time.perf_counter() - wall
            read = _batch_bytes(batch["pieces"], sizes)
            per_gib[mix] = took_cpu * 2**30 / read
            full[mix] = batch
            progress(
                f"  one child over {read / 2**20:,.0f} MiB ({mix}): {took_cpu:.1f} s CPU, "
                f"{took_wall:.1f} s wall"
            )
        # memory: the scaled child's batch again, then one and all of the full child's objects
        one = {**full["mix"], "pieces": full["mix"]["pieces"][:1]}
        peaks = [
            _child_peak(sizes, scan_batch, meter.first["child"], b) for b in (batches[0], one, full["mix"])
        ]
    children = len(meter.calls.get("child", []))
    plan_s = sum(call["wall"] for call in meter.calls.get("plan", []))
    reduce_s = sum(call["wall"] for call in meter.calls.get("reduce", []))
    reads_s = 2**30 / (child_mib * 2**20) * S3_FIRST_BYTE_S  # GetObjects per GiB
    reads_s += 2**30 / S3_BYTES_PER_S
    child_s = {mix: cpu + reads_s for mix, cpu in per_gib.items()}
    waves = math.ceil(children / MAX_CONCURRENCY)
    return {
        "factor": factor,
        "actual_bytes": actual,
        "children": children,
        "waves": waves,
        "plan_s": plan_s,
        "reduce_s": reduce_s,
        "reads_s": reads_s,
        "child_cpu_per_gib_s": per_gib,
        "child_s": child_s,
        "child_mib": child_mib,
        "total_s": {mix: plan_s + waves * seconds + reduce_s for mix, seconds in child_s.items()},
        "local_s": local_s,
        "peaks": peaks,
        "interpreter_mb": _interpreter_mb(),
        "load": os.getloadavg()[0],
        "summary": straggler["summary"],
    }


def run(progress: Progress = print) -> BenchResult:
    """For `python -m bench`."""
    data = measure(progress=progress)
    result = BenchResult(
        "joblogmap", f"{TARGET_GIB} GiB of job logs on the Distributed Map (emulated, time-scaled)"
    )
    load = f"load average {data['load']:.1f}"
    mixes = {"mix": "realistic mix", "worst": "worst case"}
    for mix, label in mixes.items():
        result.figures.append(
            Figure(
                f"{TARGET_GIB} GiB: PlanJobLogs, the map, NcclResults ({label}): real-time estimate",
                "s",
                [data["total_s"][mix]],
                limit=TARGET_S,
                source="issue 22",
                note=f"plan {data['plan_s']:.1f} s + {data['children']} children, {MAX_CONCURRENCY} at a "
                f"time ({data['waves']} x {data['child_s'][mix]:.0f} s) + reduce {data['reduce_s']:.1f} s; "
                f"{load}",
            )
        )
    for mix, label in mixes.items():
        result.figures.append(
            Figure(
                f"a child's 1 GiB batch ({label}): real-time estimate",
                "s",
                [data["child_s"][mix]],
                note=f"scan CPU {data['child_cpu_per_gib_s'][mix]:.1f} s per GiB (measured: one child "
                f"over {CHILD_OBJECTS} x {data['child_mib']} MiB) + S3 reads {data['reads_s']:.0f} s "
                f"({S3_FIRST_BYTE_S * 1000:.0f} ms per GetObject, {S3_BYTES_PER_S / 1e6:.0f} MB/s: assumed)",
            )
        )
    (scaled_mb, scaled_bytes), (one_mb, one_bytes), (all_mb, all_bytes) = data["peaks"]
    result.figures.append(
        Figure(
            "peak memory per child",
            "MB",
            [data["interpreter_mb"] + max(scaled_mb, one_mb, all_mb)],
            limit=TARGET_CHILD_MB,
            source="issue 22",
            note=f"a fresh interpreter with the handler imported {data['interpreter_mb']:.0f} MB (VmHWM) + "
            f"the child's peak allocations (tracemalloc): {scaled_mb:.1f} MB over "
            f"{scaled_bytes / 2**20:.1f} MiB, {one_mb:.0f} MB over {one_bytes / 2**20:.0f} MiB, "
            f"{all_mb:.0f} MB over {all_bytes / 2**20:.0f} MiB (flat in the bytes; moto hands each "
            f"object over whole, {data['child_mib']} MiB of it, where S3 streams it)",
        )
    )
    result.notes.append(f"the planted straggler: {data['summary'][:200]}")
    result.notes.append(
        f"the emulated fan-out ({data['actual_bytes'] / 2**20:,.0f} MiB standing for {TARGET_GIB} GiB, "
        f"x{data['factor']:,.0f}) ran its {data['children']} children in {data['local_s']:.0f} s "
        f"here ({load})"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=int, default=TARGET_GIB)
    parser.add_argument("--objects", type=int, default=OBJECTS)
    parser.add_argument("--object-kib", type=int, default=OBJECT_KIB)
    parser.add_argument("--child-mib", type=int, default=CHILD_MIB)
    args = parser.parse_args()
    data = measure(
        args.gib, args.objects, args.object_kib, args.child_mib, progress=lambda m: print(m, file=sys.stderr)
    )
    print(json.dumps(data, indent=2, default=str))


if __name__ == "__main__":
    main()
