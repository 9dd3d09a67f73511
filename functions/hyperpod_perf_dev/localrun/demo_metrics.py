"""The demo's metrics tier: the simulated cluster's exporter history, served by a real Prometheus.

Why a tier of its own: Prometheus is a Debian package a fresh machine may lack. With `prometheus`
and `promtool` installed the demo backfills three hours of its nodes' dcgm-exporter, EFA exporter,
node_exporter and Slurm exporter series (sim/metrics.py) and the run's metrics stage reads them
through the same factory the deployed function uses; without them the demo says so and runs the
rest (the branch's NoMetricsSource path).

The faulty scenario's series agree with its snapshots (an EFA port down on node 6 retransmits, the
Xid 79 of node 5 shows in DCGM's Xid gauge) and add what a snapshot cannot see: node 7 slow but not
broken, its GPUs power-capped for the last 40 minutes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hyperpod_perf_dev.prometheus_local import binaries, serve_openmetrics
from hyperpod_perf_dev.sim.metrics import Fault, FleetHistory, SimNode

#: The workspace id the demo configures (any valid id: the factory is overridden to the local server).
DEMO_WORKSPACE = "ws-demo-local"
#: The demo run reads 3 h of window and 3 h of baseline before it.
HISTORY_HOURS = 6


def available() -> bool:
    return binaries() is not None


def demo_faults(hostnames: Sequence[str], scenario: str, now: datetime) -> list[Fault]:
    if scenario != "faulty":
        return []
    faults = []
    if len(hostnames) > 6:
        faults.append(
            Fault("power_cap", now - timedelta(minutes=40), now + timedelta(minutes=5), node=hostnames[6])
        )
    faults.append(
        Fault("efa_retrans", now - timedelta(minutes=30), now + timedelta(minutes=5), node=hostnames[5])
    )
    faults.append(
        Fault("xid", now - timedelta(minutes=25), now + timedelta(minutes=5), node=hostnames[4], code=79)
    )
    return faults


@contextlib.contextmanager
def serve_demo_history(nodes: Sequence[tuple[str, str]], scenario: str, workdir: Path) -> Iterator[str]:
    """(instance id, host name) of each node -> the URL of a Prometheus serving their history."""
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    history = FleetHistory(
        [SimNode(instance, host) for instance, host in nodes],
        now - timedelta(hours=HISTORY_HOURS),
        now + timedelta(minutes=5),
        faults=demo_faults([host for _, host in nodes], scenario, now),
    )
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "exporters.om"
    history.write(str(path))
    with serve_openmetrics(path, workdir=workdir) as url:
        yield url
