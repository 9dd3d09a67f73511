"""Benchmark: the node engine — parse + evaluate per snapshot, and `hyperpod-perf evaluate` on 1,000 files.

What is timed:
- `parse_container` and `evaluate_snapshot` on simulated p5.48xlarge snapshots (~60 KB each, as
  `hyperpod_perf_dev.sim.node` prints them, a few with planted faults), in µs per snapshot;
- the `hyperpod-perf evaluate` CLI over 1,000 snapshot files in ONE call, as a user runs it: a
  fresh subprocess, so interpreter start, imports, file reads and rendering are all included
  (issue 2: < 5 s);
- the CPU that parse + evaluate spend on those 1,000 files (their markers without the nonce of
  collector 2, which REFERENCE predates), this commit against REFERENCE (the code before the GPU,
  PCIe and topology checks of issue 14), each in a fresh process, the two timed in turn, ROUNDS
  times (issue 26: this commit at most the reference's CPU); and, where valgrind is installed,
  the CPU instructions per snapshot of both (callgrind, 20 snapshots: a count other load on the
  machine does not change).
Generating the snapshots and writing the files is not timed.

Run: `python -m bench.bench_engine`.
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import BenchResult, Figure, Progress, project_root
from hyperpod_perf.collect.snapshot import parse_container
from hyperpod_perf.rules.engine import evaluate_snapshot
from hyperpod_perf_dev.sim.node import NodeFaults, simulate_cluster

SNAPSHOTS = 200  # per in-process run
#: The code before issue 14's GPU, PCIe and topology checks (merge of h13driver, 2026-12-02).
REFERENCE = "3008e4b"
ROUNDS = 3
INSTRUCTION_SNAPSHOTS = 20
#: Run in a fresh process with the code under test on PYTHONPATH: CPU seconds of parse + evaluate
#: over every file of a directory (after one warm-up), or only the first N files (for callgrind).
_CPU_SCRIPT = """
import sys, time
from pathlib import Path
from hyperpod_perf.rules.engine import evaluate_text
paths = sorted(Path(sys.argv[1]).glob("*.txt"))[: int(sys.argv[2]) or None]
texts = [(p.name, p.read_bytes().decode("utf-8", errors="replace")) for p in paths]
evaluate_text(texts[0][1], texts[0][0])
started = time.process_time()
for name, text in texts[: int(sys.argv[3])]:
    evaluate_text(text, name)
print(time.process_time() - started)
"""
RUNS = 5
CLI_FILES = 1000
CLI_RUNS = 3
CLI_LIMIT_S = 5.0

FAULTS = {
    3: NodeFaults(pcie_width_gpu=3),
    7: NodeFaults(xid79=True, xid79_gpu=5),
    11: NodeFaults(efa_port_down="rdmap113s0"),
    13: NodeFaults(governor="powersave"),
}


def _cli() -> list[str]:
    script = Path(sys.executable).parent / "hyperpod-perf"
    return [str(script)] if script.exists() else [sys.executable, "-m", "hyperpod_perf.cli"]


def run(progress: Progress = print) -> BenchResult:
    result = BenchResult("engine", "Engine: parse + evaluate per node snapshot; the evaluate CLI")
    sim = simulate_cluster(SNAPSHOTS, FAULTS)
    texts = [(f"{n.instance_id}.txt", n.text) for n in sim]
    parse_us, evaluate_us, findings = [], [], 0
    for _ in range(RUNS):
        started = time.perf_counter()
        snapshots = [parse_container(text, source) for source, text in texts]
        parsed = time.perf_counter()
        findings = sum(len(evaluate_snapshot(s)) for s in snapshots)
        done = time.perf_counter()
        parse_us.append((parsed - started) / SNAPSHOTS * 1e6)
        evaluate_us.append((done - parsed) / SNAPSHOTS * 1e6)
    total_us = [p + e for p, e in zip(parse_us, evaluate_us, strict=True)]
    progress(f"  parse + evaluate: {statistics.median(total_us):,.0f} µs per snapshot")
    size_kb = statistics.mean(len(t.encode()) for _, t in texts) / 1024
    result.figures += [
        Figure("parse per snapshot", "µs", parse_us, note=f"{size_kb:.0f} KB p5.48xlarge snapshots"),
        Figure("evaluate per snapshot", "µs", evaluate_us, note=f"{findings / SNAPSHOTS:.0f} findings each"),
        Figure("parse + evaluate per snapshot", "µs", total_us),
    ]

    cli_sim = simulate_cluster(CLI_FILES, FAULTS)
    with tempfile.TemporaryDirectory(prefix="hpd-bench-") as tmp:
        directory = Path(tmp) / "snapshots"
        directory.mkdir()
        for node in cli_sim:
            (directory / f"{node.instance_id}.txt").write_text(node.text)
        out = Path(tmp) / "out.json"
        command = [*_cli(), "evaluate", str(directory), "--format", "json", "-o", str(out)]
        timings = []
        for _ in range(CLI_RUNS):
            started = time.perf_counter()
            completed = subprocess.run(command, capture_output=True, text=True, check=False)
            timings.append(time.perf_counter() - started)
            if completed.returncode not in (0, 1):  # 1 = a CONCERN was found (planted faults)
                raise RuntimeError(f"evaluate failed ({completed.returncode}): {completed.stderr[-2000:]}")
        out_kb = out.stat().st_size / 1024
        progress(f"  hyperpod-perf evaluate, {CLI_FILES} files: {statistics.median(timings):.2f} s")
        cli = Figure(
            f"`hyperpod-perf evaluate` over {CLI_FILES:,} snapshot files (one call, subprocess)",
            "s",
            timings,
            limit=CLI_LIMIT_S,
            source="issue 2",
            note=f"exit code {completed.returncode}, JSON output {out_kb:,.0f} KB",
        )
        result.figures.append(cli)
        _compare_with_reference(result, directory, progress)
    spots = ", ".join(f"{name} {share:.0%}" for name, share in hot_spots(texts[:30]))
    cli.why = (
        f"Parse + evaluate costs {statistics.median(total_us) / 1000:.1f} ms per snapshot "
        f"(× {CLI_FILES:,} = {statistics.median(total_us) * CLI_FILES / 1e6:.1f} s before start-up and "
        f"rendering); the hottest code: {spots}."
    )
    result.notes.append(
        "Where evaluate's time goes (cProfile, 30 snapshots, cumulative share of evaluate_snapshot; "
        f"nested entries overlap): {spots}."
    )
    return result


def _reference_tree(into: Path) -> Path | None:
    """The REFERENCE commit's functions/ extracted from git, or None (no git, shallow clone)."""
    archive = subprocess.run(
        ["git", "archive", REFERENCE, "functions"], cwd=project_root(), capture_output=True, check=False
    )
    if archive.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "functions"


_NONCE_RE = re.compile(r"^(=== hpd:(?:begin|end) [^\n]*?) nonce=[0-9a-f]{32}( ===)$", re.MULTILINE)


def _without_nonces(directory: Path, into: Path) -> Path:
    """The snapshots with collector 1's markers (no nonce): the one format both commits read, so
    both judge the same files (REFERENCE predates the nonce and would find no section)."""
    into.mkdir()
    for path in directory.glob("*.txt"):
        (into / path.name).write_text(_NONCE_RE.sub(r"\1\2", path.read_text()))
    return into


def _cpu_seconds(functions: Path, directory: Path, files: int) -> float:
    env = {"PYTHONPATH": str(functions), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", _CPU_SCRIPT, str(directory), str(files), str(files)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return float(done.stdout.strip())


def _instructions(functions: Path, directory: Path, snapshots: int) -> float:
    """CPU instructions per snapshot (callgrind): the run over `snapshots` files minus the run over
    none (interpreter start, imports and the warm-up file are in both)."""
    env = {"PYTHONPATH": str(functions), "PATH": "/usr/bin:/bin"}

    def collected(evaluated: int) -> int:
        with tempfile.TemporaryDirectory(prefix="hpd-cg-") as tmp:
            done = subprocess.run(
                [
                    "valgrind",
                    "--tool=callgrind",
                    f"--callgrind-out-file={tmp}/out",
                    sys.executable,
                    "-c",
                    _CPU_SCRIPT,
                    str(directory),
                    str(snapshots),
                    str(evaluated),
                ],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
        return int(re.findall(r"Collected : (\d+)", done.stderr)[-1])

    return (collected(snapshots) - collected(0)) / snapshots


def _compare_with_reference(result: BenchResult, directory: Path, progress: Progress) -> None:
    """This commit's parse + evaluate CPU against REFERENCE's on the same files, timed in turn."""
    with tempfile.TemporaryDirectory(prefix="hpd-ref-") as tmp:
        reference = _reference_tree(Path(tmp))
        if reference is None:
            result.notes.append(
                f"The comparison with {REFERENCE} was skipped: git could not extract it here."
            )
            return
        ours = project_root() / "functions"
        directory = _without_nonces(directory, Path(tmp) / "v1")
        now_s, then_s = [], []
        for _ in range(ROUNDS):
            then_s.append(_cpu_seconds(reference, directory, CLI_FILES))
            now_s.append(_cpu_seconds(ours, directory, CLI_FILES))
        progress(
            f"  evaluate CPU, {CLI_FILES} files: {statistics.median(now_s):.2f} s "
            f"(at {REFERENCE}: {statistics.median(then_s):.2f} s)"
        )
        result.figures += [
            Figure(
                f"parse + evaluate CPU over {CLI_FILES:,} snapshots, this commit",
                "s",
                now_s,
                note="one process, in turn with the next",
            ),
            Figure(
                f"parse + evaluate CPU over {CLI_FILES:,} snapshots, at {REFERENCE} (before issue 14)",
                "s",
                then_s,
            ),
            Figure(
                f"parse + evaluate CPU, this commit / {REFERENCE} (timed in turn)",
                "×",
                [now / then for now, then in zip(now_s, then_s, strict=True)],
                limit=1.0,
                source="issue 26",
            ),
        ]
        if shutil.which("valgrind") is None:
            result.notes.append(
                "CPU instructions were not counted: valgrind is not installed (apt-get install valgrind)."
            )
            return
        now_ir = _instructions(ours, directory, INSTRUCTION_SNAPSHOTS)
        then_ir = _instructions(reference, directory, INSTRUCTION_SNAPSHOTS)
        progress(f"  instructions per snapshot: {now_ir / 1e6:.1f} M (at {REFERENCE}: {then_ir / 1e6:.1f} M)")
        result.figures += [
            Figure(
                "CPU instructions per snapshot, parse + evaluate, this commit",
                "M",
                [now_ir / 1e6],
                note=f"callgrind, {INSTRUCTION_SNAPSHOTS} snapshots",
            ),
            Figure(f"CPU instructions per snapshot, parse + evaluate, at {REFERENCE}", "M", [then_ir / 1e6]),
            Figure(
                f"CPU instructions, this commit / {REFERENCE}",
                "×",
                [now_ir / then_ir],
                limit=1.0,
                source="issue 26",
                note="load-independent",
            ),
        ]


def hot_spots(texts: list[tuple[str, str]], top: int = 6) -> list[tuple[str, float]]:
    """The project's functions with the largest cumulative time under evaluate_snapshot."""
    import cProfile
    import pstats

    snapshots = [parse_container(text, source) for source, text in texts]
    profiler = cProfile.Profile()
    profiler.enable()
    for snapshot in snapshots:
        evaluate_snapshot(snapshot)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = max((v[3] for k, v in stats.items() if k[2] == "evaluate_snapshot"), default=0.0) or 1.0
    ours = [
        (f"{Path(k[0]).parent.name}/{Path(k[0]).name}:{k[2]}", v[3] / total)
        for k, v in stats.items()
        if "hyperpod_perf" in k[0] and k[2] not in ("evaluate_snapshot", "section", "_parse", "evaluate")
    ]
    return sorted(ours, key=lambda item: -item[1])[:top]


if __name__ == "__main__":
    outcome = run()
    for figure in outcome.figures:
        print(f"{figure.name}: median {figure.median:,.3f} {figure.unit} (min {figure.spread[0]:,.3f})")
    print(*outcome.notes, sep="\n")
