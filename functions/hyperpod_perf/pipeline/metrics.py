"""ClusterMetrics: the cluster's AMP workspace over the alarm window, judged per node, stored for Evaluate.

Why its own step, beside the fan-out: one range query per signal covers every node in seconds,
while the SSM collection needs a session per node (~3 StartSession calls/s per account); the
verdict names the suspects whatever the fan-out reaches. The baseline is the window's length again
before it (at least 30 minutes, at most 3 hours): long enough for a median, recent enough to be
the same job.

An unusable workspace (access denied, not found) is a `metrics.coverage` CONCERN in the report,
not a failed run: the other stages' results still make the report.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.domain.errors import AccessDenied, NotFound
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.domain.request import DiagnoseRequest
from hyperpod_perf.metrics.model import MetricsVerdict, MetricsWindow
from hyperpod_perf.pipeline.request import parse_time
from hyperpod_perf.rules.catalog import lookup
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds
from hyperpod_perf.service.metrics import MetricsSource, judge_metrics

BASELINE_MIN_MINUTES = 30
BASELINE_MAX_MINUTES = 180
#: Suspects returned to the state machine (the full list is in the stored verdict).
STATE_SUSPECTS_MAX = 50


def metrics_window(request: DiagnoseRequest, run: RunLayout) -> MetricsWindow:
    end = parse_time(run.started)
    start = end - timedelta(minutes=request.window_minutes)
    baseline = min(BASELINE_MAX_MINUTES, max(BASELINE_MIN_MINUTES, request.window_minutes))
    return MetricsWindow.around(start, end, baseline_minutes=baseline)


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


def cluster_metrics(
    request: DiagnoseRequest,
    run: RunLayout,
    *,
    source: Callable[[str, str | None], MetricsSource],
    store: ReportStore,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> dict[str, Any]:
    # bandit B101: type narrowing of an invariant the state machine's Choice established
    assert request.prometheus_workspace_id is not None  # nosec B101
    nodes = [ClusterNode.model_validate(n) for n in store.get_json(run.work("cluster"))["nodes"]]
    window = metrics_window(request, run)
    client = source(request.prometheus_workspace_id, request.region)
    try:
        verdict = judge_metrics(client, nodes, window, thresholds)
    except (AccessDenied, NotFound) as exc:
        verdict = unusable_source(client.source, window, exc)
    key = store.put_json(run.work("metrics"), verdict.model_dump(mode="json"))
    return {
        "key": key,
        "nodes_seen": verdict.nodes_seen,
        "concerns": sum(1 for f in verdict.findings if f.severity is Severity.CONCERN),
        "suspects": verdict.suspects[:STATE_SUSPECTS_MAX],
    }
