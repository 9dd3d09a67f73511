"""Benchmark: `hyperpod-perf logs analyze` over 1 GiB of job logs; not run by CI.

The input is generated at bench time and deleted afterwards (never committed): the real excerpts
of tests/fixtures/real/joblogs repeated until the size is reached, each copy with its NCCL host
names numbered (`host-c<N>`, N cycling over 512 values: ~13,000 distinct host names and ~16,000
NCCL processes, the size of a job on a large cluster) so the per-process state grows as a large
job's would. Every line is thus a real-format line, but the mix is far denser in lines the
checks read than a real job log (where channel set-up and training progress dominate): a
worst case for speed. The whole CLI runs in a child process (read, normalise, scan, findings,
JSON); wall time and the child's peak RSS are measured, 3 runs.

Targets (issue 17): < 30 s and < 200 MB RSS for 1 GiB on this 2-core machine.
Run: `python bench/bench_joblogs.py [--mib 1024]`; `python -m bench` calls `run()`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import BenchResult, Figure, Progress

REAL = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "real" / "joblogs"
SIZE_MIB = 1024
RUNS = 3
TARGET_S = 30.0
TARGET_RSS_MB = 200.0
HOSTS = 512
_TOKEN = "\x00N\x00"
_HEADER = re.compile(r"([A-Za-z0-9][\w.-]*)(:\d+:\d+ \[\d+\] )")


def template() -> str:
    """Every real excerpt once, NCCL host names followed by a copy token."""
    text = "".join(p.read_text(encoding="utf-8") + "\n" for p in sorted(REAL.glob("*.log")))
    return _HEADER.sub(lambda m: f"{m.group(1)}-c{_TOKEN}{m.group(2)}", text)


def generate(path: Path, size_mib: int = SIZE_MIB) -> int:
    """Write the bench input; returns its size in bytes."""
    block = template()
    target = size_mib * 1024 * 1024
    written = 0
    with path.open("w", encoding="utf-8") as out:
        copy = 0
        while written < target:
            chunk = block.replace(_TOKEN, str(copy % HOSTS))
            out.write(chunk)
            written += len(chunk.encode())
            copy += 1
    return path.stat().st_size


def measure_once(path: Path) -> tuple[float, float, dict]:
    """(seconds, peak RSS MB, output summary) of one CLI run in a child process.

    The summary also holds the CPU seconds the run used (its worker processes included): on a
    shared machine the wall time depends on the load, the CPU time much less."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before = usage.ru_maxrss
    cpu_before = usage.ru_utime + usage.ru_stime
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "hyperpod_perf.cli", "logs", "analyze", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_kib = usage.ru_maxrss
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"logs analyze failed ({proc.returncode}): {proc.stderr.strip()[:300]}")
    findings = json.loads(proc.stdout)["findings"]
    summary = {
        "findings": len(findings),
        "concerns": sorted({f["check"] for f in findings if f["severity"] == "CONCERN"}),
        "rss_note": "ru_maxrss of children is a running maximum" if peak_kib == before else "",
        "cpu_seconds": usage.ru_utime + usage.ru_stime - cpu_before,
        "load_average_1m": os.getloadavg()[0],
    }
    return seconds, max(peak_kib, before) / 1024, summary


def measure(size_mib: int = SIZE_MIB, runs: int = RUNS, progress: Progress = print) -> dict:
    with tempfile.TemporaryDirectory(prefix="hpd-joblogs-bench-") as tmp:
        path = Path(tmp) / "job.log"
        started = time.perf_counter()
        size = generate(path, size_mib)
        took = time.perf_counter() - started
        progress(f"  generated {size / 2**20:,.0f} MiB from the real excerpts in {took:.0f} s")
        seconds, rss, cpu, summary = [], [], [], {}
        for _ in range(runs):
            s, r, summary = measure_once(path)
            seconds.append(s)
            rss.append(r)
            cpu.append(summary["cpu_seconds"])
            progress(
                f"  logs analyze: {s:.1f} s wall, {summary['cpu_seconds']:.1f} s CPU, peak RSS {r:.0f} MB "
                f"(load average {summary['load_average_1m']:.1f})"
            )
    return {"size": size, "seconds": seconds, "rss": rss, "cpu": cpu, "summary": summary}


def run(progress: Progress = print) -> BenchResult:
    """For `python -m bench`."""
    data = measure(SIZE_MIB, RUNS, progress=progress)
    mib = data["size"] / 2**20
    result = BenchResult("joblogs", f"Job-log forensics over {mib:,.0f} MiB (real excerpts repeated)")
    note = (
        f"{mib:,.0f} MiB = the real excerpts repeated, {HOSTS:,} numbered copies of their hosts; "
        "worst-case mix (every excerpt line is one the checks read); "
        f"{data['summary']['findings']} findings, concerns "
        f"{', '.join(data['summary']['concerns'])}"
    )
    result.figures.append(
        Figure(
            f"logs analyze, {mib:,.0f} MiB",
            "s",
            data["seconds"],
            limit=TARGET_S,
            source="issue 17",
            note=note,
        )
    )
    result.figures.append(
        Figure(
            f"logs analyze, {mib:,.0f} MiB: CPU time, all processes",
            "s",
            data["cpu"],
            note="independent of the machine's other load (load average "
            f"{data['summary']['load_average_1m']:.1f} at the end of the last run); "
            "the parts run in parallel, one process per CPU",
        )
    )
    result.figures.append(
        Figure(
            f"logs analyze, {mib:,.0f} MiB: peak RSS",
            "MB",
            data["rss"],
            limit=TARGET_RSS_MB,
            source="issue 17",
            note="the largest single process (the parent, which merges the parts' scans)",
        )
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=SIZE_MIB)
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args()
    data = measure(args.mib, args.runs)
    print(json.dumps({k: v for k, v in data.items()}, indent=2))


if __name__ == "__main__":
    main()
