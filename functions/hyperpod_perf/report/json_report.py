"""The JSON report: the stored source of truth every other rendering can be rebuilt from.

It is the Report model as JSON (so `report render` and `report diff` can load any stored run)
plus a derived `summary` block (overall severity, counts, the grouped concerns) for consumers
that only want the answer. Its shape is pinned by `report.schema.json` (JSON Schema draft
2020-12) and `schema_version`; a field change in the model fails the schema test until both
are updated (see docs/REPORT_SCHEMA.md).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.domain.names import NodeNames
from hyperpod_perf.domain.report import Report
from hyperpod_perf.report.verdict import overall_severity
from hyperpod_perf.report.view import build_view
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

SCHEMA_FILE = "report.schema.json"


@cache
def report_schema() -> dict[str, Any]:
    return json.loads(resources.files("hyperpod_perf.report").joinpath(SCHEMA_FILE).read_text("utf-8"))


def report_document(report: Report, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> dict[str, Any]:
    view = build_view(report, thresholds)
    doc = report.model_dump(mode="json")
    _add_hostnames(doc, view.names)
    doc["verdict"] = view.verdict
    doc["summary"] = {
        "severity": overall_severity(report).value,
        "counts": {s.value: n for s, n in view.counts.items()},
        "nodes": len(view.rows),
        "nodes_with_concern": len(view.nodes_with_concern),
        "groups": [
            {
                "check": g.check,
                "severity": g.severity.value,
                "family": g.family,
                "section": g.section.value,
                "title": g.title,
                "threshold": g.threshold,
                "nodes": g.nodes,
                "node_labels": g.node_labels,
                "count": len(g.findings),
                "next_step": g.next_step,
                "handoff": g.handoff,
                "status": view.history.group_status(g.findings),
            }
            for g in view.groups
            if g.severity is not Severity.OK
        ],
    }
    return doc


def _add_hostnames(doc: dict[str, Any], names: NodeNames) -> None:
    """`hostname` beside `node` in every finding (the history's too) and metrics chart: `node`
    stays the instance id (the contract readers key on), the host name is what operators type.
    Derived when written, like `summary`, so a stored report never disagrees with its nodes."""
    history = doc.get("history") or {}
    lists = [doc.get("findings") or [], *(history.get(k) or [] for k in ("new", "resolved", "still_present"))]
    for findings in lists:
        for i, f in enumerate(findings):  # `hostname` right after `node`, where a reader looks
            findings[i] = {"node": f.get("node"), "hostname": names.hostname(f.get("node")), **f}
    for chart in (doc.get("metrics") or {}).get("charts") or []:
        if isinstance(chart, dict):
            chart["hostname"] = names.hostname(chart.get("node"))


def render_json(report: Report, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> str:
    """Compact (a 1,000-node report is ~2 MB instead of ~3.5 MB indented); `jq .` pretty-prints it."""
    return json.dumps(report_document(report, thresholds), ensure_ascii=False, separators=(",", ":")) + "\n"


def load_report(text: str) -> Report:
    """A stored JSON report back into the model (the derived `summary` is recomputed, not read)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("a report is a JSON object")
    data.pop("summary", None)
    return Report.model_validate(data)
