"""Benchmark: the fleet analysis of a 1,000-node cluster from in-memory snapshots (target < 2 s).

What is timed: splitting each node's collector output into sections, extracting the comparable
signals (SM clock under load, hottest GPU, EFA error total, versions) and running the fleet and
topology rules over all nodes. Generating the simulated snapshots is not timed. The node-level
evaluation of every snapshot is timed separately, for reference (it is per-node work that
Lambda fans out).

Run: `.venv/bin/python bench/bench_fleet.py [--nodes 1000] [--with-node-rules]`; `python -m bench` calls
`run()`, which reports the median of 5 analyses.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import BenchResult, Figure
from hyperpod_perf.collect.snapshot import parse_container
from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.rules import fleet, topology
from hyperpod_perf.rules.engine import evaluate_snapshot
from hyperpod_perf.rules.fleet_signals import extract
from hyperpod_perf_dev.sim.node import NodeFaults, simulate_cluster

TARGET_S = 2.0


RUNS = 5


@dataclass
class Measurement:
    seconds: float
    cpu_seconds: float
    concerns: list[tuple[str | None, str]]
    planted: str


def prepare(nodes_count: int) -> tuple[list[tuple[str, str]], list[ClusterNode], str]:
    """Simulated snapshots (not timed): one node at 1400 MHz among healthy ones."""
    slow = nodes_count // 3
    sim = simulate_cluster(nodes_count, {slow: NodeFaults(sm_clock_mhz=1400)})
    texts = [(f"{n.instance_id}.txt", n.text) for n in sim]
    nodes = [
        ClusterNode(
            instance_id=n.instance_id, group="workers", instance_type=n.instance_type, az="us-west-2a"
        )
        for n in sim
    ]
    return texts, nodes, sim[slow].instance_id


def measure(texts: list[tuple[str, str]], nodes: list[ClusterNode], planted: str) -> Measurement:
    """The timed part: split, extract the comparable signals, run the fleet and topology rules."""
    started, cpu_started = time.perf_counter(), time.process_time()
    snapshots = [parse_container(text, source) for source, text in texts]
    signals = [
        extract(s, node=n.instance_id, instance_type=n.instance_type)
        for s, n in zip(snapshots, nodes, strict=True)
    ]
    findings = topology.evaluate(nodes) + fleet.evaluate(nodes, signals)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    concerns = [(f.node, f.check) for f in findings if f.severity is Severity.CONCERN]
    return Measurement(elapsed, cpu, concerns, planted)


def run(progress: Callable[[str], None] = print, nodes_count: int = 1000) -> BenchResult:
    """For `python -m bench`: the median and spread of RUNS analyses."""
    texts, nodes, planted = prepare(nodes_count)
    runs = [measure(texts, nodes, planted) for _ in range(RUNS)]
    found = runs[-1].concerns == [(planted, "fleet.outlier")]
    progress(f"  fleet analysis of {nodes_count} nodes: {statistics.median(r.seconds for r in runs):.3f} s")
    result = BenchResult("fleet", f"Fleet analysis of {nodes_count:,} nodes")
    result.figures.append(
        Figure(
            f"fleet analysis of {nodes_count:,} nodes (split + signals + fleet/topology rules)",
            "s",
            [r.seconds for r in runs],
            limit=TARGET_S,
            source="issue 3",
            note=(
                f"CPU {statistics.median(r.cpu_seconds for r in runs):.2f} s; "
                + ("planted outlier found" if found else f"WRONG RESULT: {runs[-1].concerns}")
            ),
        )
    )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--with-node-rules", action="store_true", help="also time evaluate_snapshot per node")
    args = parser.parse_args()

    texts, nodes, planted = prepare(args.nodes)
    m = measure(texts, nodes, planted)
    print(f"fleet analysis of {args.nodes} nodes: {m.seconds:.3f} s wall, {m.cpu_seconds:.3f} s CPU", end="")
    print(f" (target < {TARGET_S:.0f} s)")
    print(f"  concerns: {m.concerns} (planted: node {planted} at 1400 MHz)")
    if args.with_node_rules:
        started = time.perf_counter()
        node_findings = sum(len(evaluate_snapshot(parse_container(t, s))) for s, t in texts)
        took = time.perf_counter() - started
        print(f"node rules on {args.nodes} snapshots: {took:.3f} s ({node_findings} findings)")
    ok = m.seconds < TARGET_S and m.concerns == [(planted, "fleet.outlier")]
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
