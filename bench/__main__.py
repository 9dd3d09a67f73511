"""`make bench`: re-run the benchmark sections whose inputs changed, keep the others, and write
bench/RESULTS.md from every kept record.

The record (bench/results.json) holds one entry per section (bench/sections.py: SECTIONS), each
with its figures, notes and tables, the commit and date it was measured at, the hash of its inputs
then (the files its figures depend on and the package versions), the 1-minute load average while
it ran, and per figure its kind (measured / emulated / modelled) and the load average when it was
taken. A run re-measures a section when its inputs hash differs from its record's (or it has no
record), keeps every other record as it is, and regenerates RESULTS.md from all of them, so no
section is lost because it was not re-run — the sections measured by hand included (their command
is in the record, and RESULTS.md says when their inputs changed since).

Options: `--only a,b` measures exactly these (whatever their hashes), `--force` measures every
section, `--status` prints each section's state and measures nothing, `--quick` shrinks the
pipeline plan (8 and 64 nodes, one run each) for a fast look, `--render` only rewrites RESULTS.md
from results.json.

Adding a section is one entry in bench/sections.py (see its docstring).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

from bench.common import BenchResult, git_commit, load_average, machine
from bench.results_md import render_results
from bench.sections import BY_NAME, SECTIONS, Context, Section, inputs_hash

BUDGET_S = 600
HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help=f"comma-separated subset of {','.join(BY_NAME)}")
    parser.add_argument("--force", action="store_true", help="measure every section")
    parser.add_argument("--status", action="store_true", help="say what would be re-run, run nothing")
    parser.add_argument("--quick", action="store_true", help="pipeline at 8 and 64 nodes, one run each")
    parser.add_argument("--render", action="store_true", help="only rewrite RESULTS.md from results.json")
    parser.add_argument("--out", type=Path, default=HERE, help="directory for RESULTS.md and results.json")
    args = parser.parse_args(argv)
    only = [name for name in args.only.split(",") if name]
    unknown = sorted(set(only) - set(BY_NAME))
    if unknown:
        parser.error(f"unknown section(s): {', '.join(unknown)}")
    logging.getLogger().setLevel(logging.WARNING)

    document = load_record(args.out / "results.json")
    kept = {b["name"]: b for b in document["benchmarks"]}
    plan = {s.name: why for s in SECTIONS if (why := rerun_reason(s, kept.get(s.name), only, args.force))}
    for section in SECTIONS:  # a section re-run re-runs what it takes results from (cost: pipeline)
        if section.name in plan:
            for need in section.needs:
                plan.setdefault(need, f"needed by {section.name}")
    if args.status or args.render:
        for section in SECTIONS:
            state = (
                plan.get(section.name)
                or f"up to date (measured at {_short(kept[section.name].get('commit'))})"
            )
            print(f"{section.name:10s} {state}")
        if args.render:
            _write(args.out, document)
        return 0

    started = time.monotonic()
    host = machine()
    commit = git_commit()  # what is measured: the code as it is now, before anything runs

    def progress(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f} s] {message}", flush=True)

    progress(f"machine: {host['cpu']}, {host['cores']} cores, Python {host['python']}")
    progress(f"load average at start: {host['load_average_1m']}")
    context = Context(progress, {}, quick=args.quick)
    for section in SECTIONS:
        if section.name not in plan:
            continue
        if not section.in_make_bench:
            progress(f"== {section.name}: not run by make bench ({section.how}); {plan[section.name]}")
            continue
        progress(f"== {section.name} ({plan[section.name]}; load average {load_average()})")
        kept[section.name] = measure(section, context, commit, host)
        progress(f"== {section.name} done in {kept[section.name]['seconds']:.0f} s")
    document = {
        "machine": {**host, "load_average_1m_end": load_average()},
        "commit": commit,
        "total_seconds": time.monotonic() - started,
        "budget_seconds": BUDGET_S,
        "command": _command(sys.argv[1:] if argv is None else argv),
        "benchmarks": [kept[s.name] for s in SECTIONS if s.name in kept],
    }
    _write(args.out, document)
    progress(f"wrote {args.out / 'RESULTS.md'} and results.json; total {document['total_seconds']:.0f} s")
    for b in document["benchmarks"]:
        for f in b["figures"]:
            if f["met"] is False:
                progress(f"target missed: {b['name']}: {f['name']}")
    return 0


def rerun_reason(section: Section, record: dict[str, Any] | None, only: list[str], force: bool) -> str:
    """Why `section` is measured now, or "" to keep its record."""
    if only:
        return "asked for (--only)" if section.name in only else ""
    if force:
        return "asked for (--force)"
    if record is None:
        return "no record yet"
    if not record.get("inputs_hash"):
        return "its record predates input hashes"
    if record["inputs_hash"] != inputs_hash(section):
        return f"its inputs changed since it was measured at {_short(record.get('commit'))}"
    return ""


def measure(section: Section, context: Context, commit: str, host: dict[str, Any]) -> dict[str, Any]:
    """Run one section; its record, with the load average sampled every second while it ran."""
    loads: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            value = load_average()
            if value is not None:
                loads.append(value)
            stop.wait(1.0)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    began = time.monotonic()
    try:
        result: BenchResult = section.run(context)
    finally:
        stop.set()
        sampler.join()
    context.done[section.name] = result
    result.seconds = time.monotonic() - began
    for figure in result.figures:
        figure.kind = figure.kind or section.kind
    record = result.to_dict()
    record["details"] = {k: v for k, v in record["details"].items() if not k.startswith("_")}
    return {
        **record,
        "kind": section.kind,
        "commit": commit,
        "date_utc": host["date_utc"],
        "machine": f"{host['cpu']}, {host['cores']} cores, Python {host['python']}",
        "inputs_hash": inputs_hash(section),
        "load_average_1m": {"min": min(loads, default=None), "max": max(loads, default=None)},
        "how": section.how or "make bench",
    }


def load_record(path: Path) -> dict[str, Any]:
    if not path.exists():
        empty = {"commit": None, "total_seconds": 0, "budget_seconds": BUDGET_S, "command": ""}
        return {"machine": machine(), **empty, "benchmarks": []}
    return json.loads(path.read_text())


def _write(out: Path, document: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(document, indent=2, default=str) + "\n")
    (out / "RESULTS.md").write_text(render_results(document))


def _short(commit: str | None) -> str:
    return commit[:12] if commit else "an unrecorded commit"


def _command(args: list[str]) -> str:
    """The command as run, without the output directory (a local path, not part of the result)."""
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--out":
            skip = True
        elif not arg.startswith("--out="):
            kept.append(arg)
    return " ".join(["python -m bench", *kept])


if __name__ == "__main__":
    raise SystemExit(main())
