"""The metrics branch of the real ASL (issue 21): ClusterMetrics reads a real Prometheus server,
its findings and verdict reach the report, and an unusable source never fails the run.

Given the 8-node simulated cluster and an exporter history of those very nodes (host names and
instance ids from the seeded cluster) with one node power-capped for the last 40 minutes, backfilled
into a real Prometheus; when a run names the cluster's workspace; then the report holds the
`metrics.gpu_clock` concern on that node's instance id, and its `metrics` section names it a suspect.
The ClusterMetrics function reaches the server through the same factory the deployed function uses
(`clients.metrics_source`), overridden to the loopback server, as the driver overrides the others.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hyperpod_perf.aws import clients
from hyperpod_perf.aws.prometheus import PrometheusHttp
from hyperpod_perf.domain.errors import AccessDenied
from hyperpod_perf_dev.localrun.driver import local_pipeline
from hyperpod_perf_dev.localrun.plan import ClusterPlan, RunPlan
from hyperpod_perf_dev.prometheus_local import serve_openmetrics
from hyperpod_perf_dev.sim.metrics import Fault, FleetHistory, SimNode

pytestmark = pytest.mark.prometheus  # skipped without it, failed in CI (tests/conftest.py)

PLAN = RunPlan(clusters=(ClusterPlan(name="ml-cluster", nodes=8),))


def _request(**extra: object) -> dict[str, object]:
    return {"cluster": "ml-cluster", "window_minutes": 60, "sample_size": 2, "scope": "all", **extra}


def test_a_power_capped_node_found_by_the_metrics_branch_reaches_the_report(tmp_path) -> None:
    with local_pipeline(PLAN) as run:
        nodes = run.cluster_nodes()
        now = datetime.now(UTC).replace(second=0, microsecond=0)
        capped = nodes[3]
        history = FleetHistory(
            [SimNode(n.instance_id, n.hostname) for n in nodes],
            now - timedelta(hours=3),
            now + timedelta(minutes=2),
            faults=[
                Fault(
                    "power_cap", now - timedelta(minutes=40), now + timedelta(minutes=2), node=capped.hostname
                )
            ],
        )
        history.write(str(tmp_path / "history.om"))
        with serve_openmetrics(tmp_path / "history.om", workdir=tmp_path) as url:
            clients.override("metrics_source", lambda workspace, region: PrometheusHttp(url))
            outcome = run.wait(run.start(_request(prometheus_workspace_id="ws-local-test")))

    assert outcome.status == "SUCCEEDED"
    assert "ClusterMetrics" in outcome.states_entered()
    [clock] = outcome.findings("metrics.gpu_clock", "CONCERN")
    assert clock["node"] == capped.instance_id and clock["evidence"]["host"] == capped.hostname
    assert "power-capped" in clock["summary"]
    report = outcome.report
    assert report["metrics"]["suspects"] == [capped.instance_id]
    assert report["metrics"]["nodes_seen"] == 8 and report["metrics"]["source"] == url
    assert [c["check"] for c in report["metrics"]["charts"]] == ["metrics.gpu_clock"]
    # and the SSM deep collection went to the suspect and a spread sample of 2 of the other 7
    # (positions 0 and 3 of them): 3 nodes, not 8; the other 5 were judged by their series only
    others = [n.instance_id for n in nodes if n is not capped]
    collected = sorted(r["instance_id"] for r in report["nodes"])
    assert collected == sorted([capped.instance_id, others[0], others[3]])
    assert report["metrics"]["deep_collect"] == "suspects"
    assert sorted(report["metrics"]["metrics_only"]) == sorted(set(others) - {others[0], others[3]})
    assert outcome.states_entered().count("CollectNode") == 3


def test_without_a_workspace_the_branch_is_skipped_and_the_report_has_no_metrics() -> None:
    with local_pipeline(PLAN) as run:
        outcome = run.wait(run.start(_request()))
    assert outcome.status == "SUCCEEDED"
    assert "ClusterMetrics" not in outcome.states_entered()
    assert len(outcome.report["nodes"]) == 8  # every target collected, as without the tier
    assert outcome.report["metrics"] is None
    assert outcome.findings("metrics.coverage") == []


def test_a_workspace_the_role_may_not_read_is_a_coverage_concern_not_a_failed_run() -> None:
    class Denied:
        source = "amp:us-west-2:ws-denied"

        def query_range(self, *args: object) -> list[object]:
            raise AccessDenied("User is not authorized to perform: aps:QueryMetrics", code="403")

    with local_pipeline(PLAN) as run:
        clients.override("metrics_source", lambda workspace, region: Denied())
        outcome = run.wait(run.start(_request(prometheus_workspace_id="ws-denied")))
    assert outcome.status == "SUCCEEDED"
    [coverage] = outcome.findings("metrics.coverage", "CONCERN")
    assert "amp:us-west-2:ws-denied could not be read (AccessDenied)" in coverage["summary"]
    assert outcome.report["metrics"]["errors"] == [
        "User is not authorized to perform: aps:QueryMetrics [403]"
    ]
    # nothing read: no narrowing, every target deep-collected
    assert outcome.report["metrics"]["deep_collect"] == "all" and len(outcome.report["nodes"]) == 8
