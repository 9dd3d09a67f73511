"""ClusterMetrics: the cluster's AMP workspace over the alarm window, judged before the fan-out.

Why first: one range query per signal covers every node in seconds, while the SSM collection needs
a session per node (~3 StartSession calls/s per account: >= 341 s for 1,024 nodes). In the
"suspects" tier (the default with a source) the deep collection then goes only where it matters:
the suspects, the event's nodes, the nodes without series, and a spread sample.

The baseline is the window's length again before it (at least 30 minutes, at most 3 hours):
long enough for a median, recent enough to be the same job.

An unusable workspace (access denied, not found) is a `metrics.coverage` CONCERN in the report,
not a failed run: the other stages' results still make the report.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.domain.cluster import ClusterInfo, ClusterNode
from hyperpod_perf.domain.errors import AccessDenied, NotFound
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.domain.request import DiagnoseRequest
from hyperpod_perf.metrics.model import MetricsVerdict, MetricsWindow
from hyperpod_perf.pipeline.cluster import fan_out
from hyperpod_perf.pipeline.request import parse_time
from hyperpod_perf.rules.catalog import lookup
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds
from hyperpod_perf.service.metrics import MetricsSource, judge_metrics
from hyperpod_perf.service.targets import spread


def metrics_window(request: DiagnoseRequest, run: RunLayout) -> MetricsWindow:
    end = parse_time(run.started)
    start = end - timedelta(minutes=request.window_minutes)
    return MetricsWindow.for_alarm(start, end)


def unusable_source(source: str, window: MetricsWindow, error: Exception) -> MetricsVerdict:
    entry = lookup("metrics.coverage")
    finding = Finding(
        check="metrics.coverage",
        severity=Severity.CONCERN,
        section=entry.section,
        summary=f"the metrics source {source} could not be read ({type(error).__name__}): nothing was "
        "judged over time",
        evidence={"error": str(error)[:500]},
        next_step="check the workspace id in the deployment's configuration and that the stack's "
        "ClusterMetrics role may aps:QueryMetrics on it",
    )
    return MetricsVerdict(source=source, window=window, findings=[finding], errors=[str(error)[:500]])


def deep_targets(
    targets: list[ClusterNode], verdict: MetricsVerdict, request: DiagnoseRequest
) -> list[ClusterNode]:
    """The nodes the SSM deep collection still needs: the verdict's suspects, the nodes the request
    (the event) names, the nodes the metrics could not see, and a spread sample of the rest (the
    fleet reference the node rules compare with), in the targets' order."""
    keep = set(verdict.suspects) | set(request.nodes) | set(verdict.nodes_without_series)
    rest = [n for n in targets if n.instance_id not in keep]
    keep |= {n.instance_id for n in spread(rest, request.sample_size)}
    return [n for n in targets if n.instance_id in keep]


def cluster_metrics(
    request: DiagnoseRequest,
    run: RunLayout,
    *,
    source: Callable[[str, str | None], MetricsSource],
    store: ReportStore,
    fan_out_settings: dict[str, Any],
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> dict[str, Any]:
    """The verdict stored for Evaluate, and the Map's fan-out: narrowed to `deep_targets` in the
    "suspects" tier when the metrics could be read, ResolveCluster's own otherwise."""
    # bandit B101: type narrowing of an invariant the state machine's Choice established
    assert request.prometheus_workspace_id is not None  # nosec B101
    gathered = store.get_json(run.work("cluster"))
    cluster = ClusterInfo.model_validate(gathered["cluster"])
    targets = [ClusterNode.model_validate(n) for n in gathered["nodes"]]
    window = metrics_window(request, run)
    client = source(request.prometheus_workspace_id, request.region)
    try:
        verdict = judge_metrics(client, targets, window, thresholds)
    except (AccessDenied, NotFound) as exc:
        verdict = unusable_source(client.source, window, exc)
    tier = request.deep_collect or "suspects"
    collect = targets
    if tier == "suspects" and verdict.nodes_seen:
        collect = deep_targets(targets, verdict, request)
    else:
        tier = "all"
    collected = {n.instance_id for n in collect}
    verdict = verdict.model_copy(
        update={
            "deep_collect": tier,
            "metrics_only": [n.instance_id for n in targets if n.instance_id not in collected],
        }
    )
    # Written in this order, the cluster file last: if any write fails, the state machine's Catch
    # goes on with ResolveCluster's fan-out, and its batches and cluster file are still the ones
    # this step read (the narrowed batches have a key of their own).
    resolved = fan_out(
        cluster.cluster_id, collect, run, store=store, batches_name="batches-deep", **fan_out_settings
    )
    store.put_json(run.work("metrics"), verdict.model_dump(mode="json"))
    if len(collect) < len(targets):  # Evaluate expects a result for exactly the nodes listed here
        nodes = [n.model_dump(mode="json") for n in collect]
        store.put_json(run.work("cluster"), {**gathered, "nodes": nodes})
    return resolved.model_dump(mode="json", exclude_none=True)
