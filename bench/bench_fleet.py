"""Benchmark: the fleet analysis of a 1,000-node cluster from in-memory snapshots (target < 2 s).

What is timed: splitting each node's collector output into sections, extracting the comparable
signals (SM clock under load, hottest GPU, EFA error total, versions) and running the fleet and
topology rules over all nodes. Generating the simulated snapshots is not timed. The node-level
evaluation of every snapshot is timed separately, for reference (it is per-node work that
Lambda fans out).

Run: `.venv/bin/python bench/bench_fleet.py [--nodes 1000] [--with-node-rules]`
"""

from __future__ import annotations

import argparse
import time

from hyperpod_perf.cluster_models import ClusterNode
from hyperpod_perf.collect.snapshot import parse_container
from hyperpod_perf.engine import evaluate_snapshot
from hyperpod_perf.fleet_signals import extract
from hyperpod_perf.models import Severity
from hyperpod_perf.rules import fleet, topology
from hyperpod_perf.sim.node import NodeFaults, simulate_cluster

TARGET_S = 2.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--with-node-rules", action="store_true", help="also time evaluate_snapshot per node")
    args = parser.parse_args()

    slow = args.nodes // 3
    sim = simulate_cluster(args.nodes, {slow: NodeFaults(sm_clock_mhz=1400)})
    texts = [(f"{n.instance_id}.txt", n.text) for n in sim]
    nodes = [
        ClusterNode(
            instance_id=n.instance_id, group="workers", instance_type=n.instance_type, az="us-west-2a"
        )
        for n in sim
    ]

    started, cpu_started = time.perf_counter(), time.process_time()
    snapshots = [parse_container(text, source) for source, text in texts]
    signals = [
        extract(s, node=n.instance_id, instance_type=n.instance_type)
        for s, n in zip(snapshots, nodes, strict=True)
    ]
    findings = topology.evaluate(nodes) + fleet.evaluate(nodes, signals)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started

    concerns = [(f.node, f.check) for f in findings if f.severity is Severity.CONCERN]
    print(f"fleet analysis of {args.nodes} nodes: {elapsed:.3f} s wall, {cpu:.3f} s CPU", end="")
    print(f" (target < {TARGET_S:.0f} s)")
    print(f"  concerns: {concerns} (planted: node {sim[slow].instance_id} at 1400 MHz)")
    if args.with_node_rules:
        started = time.perf_counter()
        node_findings = sum(len(evaluate_snapshot(s)) for s in snapshots)
        took = time.perf_counter() - started
        print(f"node rules on {args.nodes} snapshots: {took:.3f} s ({node_findings} findings)")
    ok = elapsed < TARGET_S and concerns == [(sim[slow].instance_id, "fleet.outlier")]
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
