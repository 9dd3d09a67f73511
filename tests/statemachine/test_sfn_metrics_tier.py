"""The suspects tier through the real ASL from an alarm (issue 21): with a metrics source, StartSession
is called for the suspects the metrics name and the spread sample only — never once per node.

Given a 32-node cluster whose AMP workspace is configured (deepCollect "suspects", the default with a
source), the deployment's sample of 4, and a metrics source whose series show two slow-but-not-broken
nodes (one power-capped, one retransmitting on EFA) — the emulated Prometheus the time-to-findings
bench uses (hyperpod_perf_dev.prometheus_emulated), reached through AmpWorkspace and SigV4 as
deployed; when the cluster's FSx alarm fires and the execution runs; then the StartSession meter saw
6 calls (2 suspects + 4 sampled), one per node deep-collected, and the other 26 nodes were judged by
their series only. Runs in seconds: no real Prometheus needed (test_sfn_metrics.py has that one).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from botocore.credentials import Credentials

from hyperpod_perf.aws import clients
from hyperpod_perf.aws.prometheus import AmpWorkspace
from hyperpod_perf_dev.localrun.driver import local_pipeline
from hyperpod_perf_dev.localrun.plan import ClusterPlan, RunPlan
from hyperpod_perf_dev.localrun.sessions import instance_of
from hyperpod_perf_dev.prometheus_emulated import EmulatedPrometheus, FleetModel
from hyperpod_perf_dev.sim.metrics import Fault, SimNode

NODES, SAMPLE = 32, 4
CAPPED, RETRANSMITTING = 9, 20  # node indices given a fault in the series


def test_an_alarm_run_with_a_metrics_source_starts_sessions_only_for_suspects_and_the_sample() -> None:
    started: list[str] = []

    def meter(target: str) -> None:
        started.append(instance_of(target))
        return None

    plan = RunPlan(
        clusters=(
            ClusterPlan(
                name="ml-cluster", nodes=NODES, prometheus_workspace_id="ws-tier", deep_collect="suspects"
            ),
        ),
        environment={"NODE_SAMPLE_SIZE": str(SAMPLE)},
        map_concurrency=8,
        start_gate=meter,
    )
    with local_pipeline(plan) as run:
        nodes = run.cluster_nodes()
        now = datetime.now(UTC)
        faults = [
            Fault(
                "power_cap",
                now - timedelta(minutes=40),
                now + timedelta(minutes=10),
                node=nodes[CAPPED].hostname,
            ),
            Fault(
                "efa_retrans",
                now - timedelta(minutes=30),
                now + timedelta(minutes=10),
                node=nodes[RETRANSMITTING].hostname,
            ),
        ]
        server = EmulatedPrometheus(
            FleetModel([SimNode(n.instance_id, n.hostname) for n in nodes], faults),
            latency_s=0.0,
            require_sigv4=True,
        ).start()
        try:
            credentials = Credentials("AKIDTEST", "test-secret")
            clients.override(
                "metrics_source",
                lambda workspace, region: AmpWorkspace(
                    workspace, region=region or "us-west-2", credentials=credentials, endpoint=server.url
                ),
            )
            outcome = run.wait(run.start_from_alarm(), timeout_s=240)
        finally:
            server.stop()

    assert outcome.status == "SUCCEEDED"
    report = outcome.report
    suspects = {nodes[CAPPED].instance_id, nodes[RETRANSMITTING].instance_id}
    assert set(report["metrics"]["suspects"]) == suspects
    assert report["metrics"]["deep_collect"] == "suspects" and report["metrics"]["nodes_seen"] == NODES
    # every signal's query answered, once for the baseline (at its stride) and once for the window
    assert server.queries == report["metrics"]["queries"] == 2 * 23
    # StartSession: once per suspect and per sampled node, 6 in all, not 32
    assert len(started) == len(set(started)) == len(suspects) + SAMPLE
    assert suspects <= set(started)
    deep = sorted(r["instance_id"] for r in report["nodes"])
    assert deep == sorted(started)
    assert len(report["metrics"]["metrics_only"]) == NODES - len(started)
    assert set(report["metrics"]["metrics_only"]).isdisjoint(started)
    assert outcome.states_entered().count("CollectNode") >= 1
