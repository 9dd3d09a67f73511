"""The report's metrics section: each finding's series against the fleet median, from zero, escaped."""

from __future__ import annotations

from hyperpod_perf.domain.report import ClusterSummary, Report
from hyperpod_perf.report.html_figures import metrics_section

CHART = {
    "check": "metrics.gpu_clock",
    "node": "i-0abc<script>",
    "title": "slowest GPU SM clock vs fleet median",
    "unit": "MHz",
    "window_start": "2026-12-01T11:00:00Z",
    "times": ["2026-12-01T10:58:00Z", "2026-12-01T10:59:00Z", "2026-12-01T11:00:00Z", "2026-12-01T11:01:00Z"],
    "node_values": [None, 1980.0, 1290.0, 1290.0],
    "fleet_median": [1980.0, 1980.0, None, 1980.0],
}
VERDICT = {
    "source": "amp:us-west-2:ws-1",
    "window": {
        "start": "2026-12-01T11:00:00Z",
        "end": "2026-12-01T12:00:00Z",
        "baseline_start": "x",
        "step_seconds": 60,
    },
    "suspects": ["i-0abc"],
    "nodes_seen": 8,
    "series_read": 128,
    "queries": 23,
    "exporters_missing": ["dcgm-exporter: DCGM_FI_DEV_THERMAL_VIOLATION"],
    "charts": [CHART],
}


def report(metrics: dict | None) -> Report:
    return Report(cluster=ClusterSummary(name="c"), metrics=metrics)


def test_a_chart_per_finding_draws_the_node_solid_and_the_fleet_dashed_from_zero():
    html = metrics_section(report(VERDICT))
    assert html.count("<svg") == 1
    assert "<details><summary>1 chart(s): each finding's series against the fleet</summary>" in html
    # the node's 3 points (the missing first one skipped) and the fleet's two runs around its gap
    polylines = [p for p in html.split("<polyline")[1:]]
    assert len(polylines) == 3
    assert sum('stroke-dasharray="4 3"' in p for p in polylines) == 2
    assert ">0</text>" in html  # the value axis starts at zero
    assert "i-0abc&lt;script&gt;" in html and "<script>" not in html
    assert "Suspects: <code>i-0abc</code>" in html
    assert "the alarm window starts at 11:00 UTC" in html
    assert "Not covered: dcgm-exporter: DCGM_FI_DEV_THERMAL_VIOLATION" in html


def test_without_a_metrics_source_the_section_says_so():
    assert "No metrics source in this run" in metrics_section(report(None))
