"""The JSON report validates against report.schema.json and loads back into the model."""

from __future__ import annotations

import json

import jsonschema
import pytest
from report_builders import hot_gpu, node, report

from hyperpod_perf.domain.report import REPORT_SCHEMA_VERSION
from hyperpod_perf.report.json_report import load_report, render_json, report_schema
from hyperpod_perf_dev.synthetic import synthetic_report, synthetic_report_with_history

VALIDATOR = jsonschema.Draft202012Validator


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = report_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    VALIDATOR.check_schema(schema)


@pytest.mark.parametrize(
    "build",
    [lambda: synthetic_report_with_history(8), lambda: synthetic_report(40), lambda: report([], [])],
    ids=["demo-with-history", "40-nodes-first-run", "empty"],
)
def test_rendered_reports_validate(build) -> None:  # type: ignore[no-untyped-def]
    # Given a report; When rendered as JSON
    doc = json.loads(render_json(build()))
    # Then it validates and carries the schema version and a verdict
    VALIDATOR(report_schema()).validate(doc)
    assert doc["schema_version"] == REPORT_SCHEMA_VERSION
    assert doc["verdict"]


def test_summary_groups_and_counts_are_derived_from_findings() -> None:
    r = report([hot_gpu("a", 90), hot_gpu("b", 91)], [node("a"), node("b"), node("c")])
    doc = json.loads(render_json(r))
    assert doc["summary"]["counts"] == {"OK": 0, "INFO": 0, "CONCERN": 2}
    assert doc["summary"]["nodes_with_concern"] == 2
    (group,) = doc["summary"]["groups"]
    assert (group["check"], group["nodes"], group["count"], group["status"]) == (
        "gpu.temperature",
        ["a", "b"],
        2,
        None,
    )


def test_json_round_trips_through_the_model() -> None:
    original = synthetic_report_with_history(8)
    loaded = load_report(render_json(original))
    assert loaded.findings == original.findings
    assert loaded.history == original.history
    assert loaded.verdict.startswith("1 node has GPU faults; 1 node has EFA problems; 1 node degrades NCCL")


def test_schema_rejects_a_finding_with_an_unknown_severity() -> None:
    doc = json.loads(render_json(report([hot_gpu("a", 90)], [node("a")])))
    doc["findings"][0]["severity"] = "WARNING"
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR(report_schema()).validate(doc)


def test_schema_rejects_a_report_without_schema_version() -> None:
    doc = json.loads(render_json(report([], [])))
    del doc["schema_version"]
    with pytest.raises(jsonschema.ValidationError, match="schema_version"):
        VALIDATOR(report_schema()).validate(doc)
