"""Pipeline steps that need no AWS: request validation, target choice, failure records, problems."""

import json

import pytest

from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.domain.layout import RunLayout, safe_segment
from hyperpod_perf.domain.request import DiagnoseRequest, TargetScope
from hyperpod_perf.pipeline.errors import InvalidRequest
from hyperpod_perf.pipeline.request import failure_from_state_error, report_problem, validate_request
from hyperpod_perf.service.targets import select_targets


def _nodes(count: int, group: str = "workers", start: int = 0) -> list[ClusterNode]:
    return [ClusterNode(instance_id=f"i-{i:017x}", group=group) for i in range(start, start + count)]


def test_validate_builds_the_run_layout_from_the_execution():
    # Given a start-execution input and the context object's name and start time
    out = validate_request(
        {"cluster": "ml-cluster", "nodes": ["i-0123456789abcdef0"]}, "exec-1", "2026-11-30T12:00:05Z"
    )
    # Then the request is normalised and the run's prefix is reports/<cluster>/<UTC stamp>-<execution>/
    assert out["request"]["cluster"] == "ml-cluster"
    assert out["request"]["nodes"] == ["i-0123456789abcdef0"]
    assert out["run"]["prefix"] == "reports/ml-cluster/20261130T120005Z-exec-1/"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("not an object", "must be a JSON object"),
        ({"cluster": "a;b"}, "invalid request field 'cluster'"),
        ({"cluster": "c", "nodes": ["$(reboot)"]}, "invalid request field 'nodes'"),
        ({"cluster": "c", "window_minutes": 1}, "invalid request field 'window_minutes'"),
        ({"cluster": "c", "extra": 1}, "invalid request field 'extra'"),
    ],
)
def test_invalid_requests_are_named_errors_with_the_field(raw, message):
    with pytest.raises(InvalidRequest, match=message):
        validate_request(raw, "e", "2026-01-01T00:00:00Z")


def test_scope_all_and_auto_without_focus_take_every_node():
    nodes = _nodes(10)
    assert select_targets(nodes, DiagnoseRequest(cluster="c", scope=TargetScope.ALL)) == nodes
    assert select_targets(nodes, DiagnoseRequest(cluster="c")) == nodes


def test_auto_scope_takes_the_focus_node_plus_a_spread_sample_of_its_group():
    workers, others = _nodes(20), _nodes(5, group="login", start=100)
    focus = workers[7].instance_id
    request = DiagnoseRequest(cluster="c", nodes=(focus,), sample_size=4)
    chosen = select_targets([*workers, *others], request)
    assert chosen[0].instance_id == focus
    assert len(chosen) == 5 and {n.group for n in chosen} == {"workers"}
    # spread evenly over the 19 sorted peers (positions 0, 4, 9, 14; the focus node is not a peer)
    assert [n.instance_id for n in chosen[1:]] == [workers[i].instance_id for i in (0, 4, 10, 15)]
    assert select_targets([*workers, *others], request) == chosen


def test_focus_scope_takes_only_the_named_nodes():
    nodes = _nodes(6)
    request = DiagnoseRequest(cluster="c", nodes=(nodes[2].instance_id,), scope=TargetScope.FOCUS)
    assert select_targets(nodes, request) == [nodes[2]]


def test_state_error_cause_is_unwrapped_from_the_lambda_error_json():
    cause = json.dumps({"errorType": "SessionTimeout", "errorMessage": "idle for 60 s"})
    assert failure_from_state_error({"Error": "SessionTimeout", "Cause": cause}) == (
        "SessionTimeout",
        "idle for 60 s",
    )
    assert failure_from_state_error({"Error": "States.Timeout", "Cause": "plain text"}) == (
        "States.Timeout",
        "plain text",
    )
    assert failure_from_state_error({}) == ("Unknown", "")


def test_problem_notification_says_what_failed_and_what_to_do():
    # Given a run that stopped because the cluster does not exist
    sent = []
    cause = json.dumps(
        {"errorType": "ClusterNotFound", "errorMessage": "cluster 'nope' not found in region us-east-1"}
    )
    report_problem(
        {"cluster": "nope"},
        "exec-9",
        {"Error": "ClusterNotFound", "Cause": cause},
        store=None,
        notify=lambda subject, text, chat: sent.append((subject, text, chat)) or "m-1",
    )
    ((subject, text, chat),) = sent
    assert subject == "hyperpod-perf: diagnosis of nope could not run (ClusterNotFound)"
    assert "Reason:    cluster 'nope' not found in region us-east-1" in text
    assert "aws sagemaker list-clusters" in text
    assert chat["content"]["title"] == ":warning: hyperpod-perf could not diagnose nope"


def test_layout_keys_cannot_escape_the_run_prefix():
    run = RunLayout(
        prefix="reports/c/20260101T000000Z-e/", execution="e", started="2026-01-01T00:00:00+00:00"
    )
    assert run.raw("../../etc/passwd") == "reports/c/20260101T000000Z-e/raw/etc_passwd.txt"
    assert safe_segment("a/b\nc") == "a_b_c"


def test_the_deployment_sample_size_applies_only_where_the_request_set_none():
    from hyperpod_perf.pipeline.cluster import with_deployment_defaults

    # Given a validated request as it travels between states (only what the caller set)
    unset = validate_request({"cluster": "c"}, "e", "2026-01-01T00:00:00Z")["request"]
    explicit = validate_request({"cluster": "c", "sample_size": 2}, "e", "2026-01-01T00:00:00Z")["request"]
    assert unset == {"cluster": "c"}
    # When the deployment's NODE_SAMPLE_SIZE is applied
    defaulted = with_deployment_defaults(DiagnoseRequest.model_validate(unset), sample_size=16)
    kept = with_deployment_defaults(DiagnoseRequest.model_validate(explicit), sample_size=16)
    # Then it fills the unset value and never overrides the caller's
    assert (defaulted.sample_size, kept.sample_size) == (16, 2)


def test_problem_notification_escapes_text_from_the_rejected_input_for_slack():
    # Given an invalid request whose cluster name tries to mention the whole channel
    sent = []
    cause = json.dumps({"errorType": "InvalidRequest", "errorMessage": "invalid request field 'cluster'"})
    report_problem(
        {"cluster": "<!channel>"},
        "exec-3",
        {"Error": "InvalidRequest", "Cause": cause},
        store=None,
        notify=lambda subject, text, chat: sent.append(chat) or "m-3",
    )
    # Then the Chatbot message carries it as text, never as a Slack mention
    (chat,) = sent
    assert chat["content"]["title"] == ":warning: hyperpod-perf could not diagnose &lt;!channel&gt;"
    assert "<!" not in json.dumps(chat)
