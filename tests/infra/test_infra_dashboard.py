"""The CloudWatch dashboard: what it plots, and that every report can link to it."""

from __future__ import annotations

import json
from typing import Any

from infra_synth import Synth


def _joined(value: Any) -> str:
    """A CloudFormation string with its intrinsics written as <Ref> / <Pseudo> placeholders."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(_joined(p) for p in parts)
    if isinstance(value, dict) and "Ref" in value:
        return f"<{value['Ref']}>"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return f"<{'.'.join(value['Fn::GetAtt'])}>"
    return json.dumps(value)


def _body(synth: Synth) -> dict[str, Any]:
    (dashboard,) = synth.of_type("AWS::CloudWatch::Dashboard").values()
    text = _joined(dashboard["Properties"]["DashboardBody"])
    # The body is JSON once the placeholders (state machine ARN, region) are filled in.
    return json.loads(text.replace("<AWS::Region>", "us-west-2"))


def _widget(body: dict[str, Any], title_part: str) -> dict[str, Any]:
    (widget,) = [w for w in body["widgets"] if title_part in w["properties"].get("title", "")]
    return widget["properties"]


def test_dashboard_is_named_after_the_stack_and_its_url_is_an_output(synth: Synth) -> None:
    (dashboard,) = synth.of_type("AWS::CloudWatch::Dashboard").values()
    assert _joined(dashboard["Properties"]["DashboardName"]) == "<AWS::StackName>-fleet"
    url = _joined(synth.template["Outputs"]["DashboardUrl"]["Value"])
    assert url == (
        "https://<AWS::Region>.console.aws.amazon.com/cloudwatch/home?region=<AWS::Region>"
        "#dashboards/dashboard/<AWS::StackName>-fleet"
    )


def test_only_the_report_writing_function_carries_the_dashboard_url(synth: Synth) -> None:
    carrying = {
        f["Properties"]["Handler"].rsplit(".", 2)[-2]
        for f in synth.of_type("AWS::Lambda::Function").values()
        if "DASHBOARD_URL" in f["Properties"]["Environment"]["Variables"]
    }
    assert carrying == {"evaluate"}


def test_concerns_are_one_line_per_check_id_from_the_emf_check_dimension(synth: Synth) -> None:
    concerns = _widget(_body(synth), "Concerns by check id")
    (expression,) = [m[0]["expression"] for m in concerns["metrics"] if "expression" in m[0]]
    query = '{HyperPodPerf,Check,service} MetricName="Concerns" service="hyperpod-perf"'
    assert expression == f"SEARCH('{query}', 'Sum', 3600)"


def test_runs_failures_and_time_to_findings_are_plotted(synth: Synth) -> None:
    body = _body(synth)
    runs = json.dumps(_widget(body, "Diagnosis runs")["metrics"])
    for metric in ("ExecutionsStarted", "ExecutionsSucceeded", "ExecutionsFailed", "ExecutionsTimedOut"):
        assert metric in runs
    failures = _widget(body, "Nodes not collected")["metrics"]
    assert failures[0][:2] == ["HyperPodPerf", "CollectionFailures"]
    timing = _widget(body, "Time to findings")["metrics"]
    assert [m[1] for m in timing] == ["TimeToFindings", "TimeToFindings"]
    assert [m[-1]["stat"] for m in timing] == ["p50", "Maximum"]


def test_lustre_throughput_is_drawn_against_its_provisioned_line_openzfs_is_not(synth: Synth) -> None:
    body = _body(synth)
    fs = _widget(body, "Lustre fs-0123456789abcdef0")
    assert fs["annotations"]["horizontal"] == [
        {"value": 2400, "label": "provisioned 2,400 MB/s", "yAxis": "left"}
    ]
    (expression,) = [m[0]["expression"] for m in fs["metrics"] if "expression" in m[0]]
    assert expression == "(r + w) / PERIOD(r) / 1000000"
    assert "DataReadBytes" in json.dumps(fs["metrics"]) and "DataWriteBytes" in json.dumps(fs["metrics"])
    assert not [w for w in body["widgets"] if "fs-0fedcba9876543210" in json.dumps(w)]
