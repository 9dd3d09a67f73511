"""EventBridge events (real captures) -> diagnosis requests with idempotent names."""

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hyperpod_perf.pipeline.triggers import ClusterTriggerConfig, TriggerRejected, decide, execution_name

EVENTS = Path(__file__).parents[2] / "fixtures" / "real" / "events"
CLUSTERS = [
    ClusterTriggerConfig(name="k8-1", alarmNames=["ServerCpuTooHigh"], fsxIds=["fs-0123456789abcdef0"]),
    ClusterTriggerConfig(name="ml-cluster", alarmPrefixes=["hpd-fsx-"]),
]


def load(name: str) -> dict:
    return json.loads((EVENTS / name).read_text())


def test_node_health_event_focuses_on_the_unhealthy_node():
    decision = decide(load("hyperpod_node_health_event.json"), CLUSTERS)
    assert decision.request.cluster == "k8-1"
    assert decision.request.nodes == ("i-0fdc8ceb3bfecc215",)
    assert decision.request.region == "us-west-2"
    assert decision.request.reason == "node i-0fdc8ceb3bfecc215 health Unhealthy (repair: Replace)"
    assert decision.request.fsx_ids == ("fs-0123456789abcdef0",)  # from the cluster's configuration
    assert decision.execution_name == "hpd-k8-1-20250509T2145Z"


def test_configured_alarm_in_alarm_state_starts_a_diagnosis_with_its_instance():
    decision = decide(load("cw-alarm-state-change_single-metric.json"), CLUSTERS)
    assert decision.request.cluster == "k8-1"
    assert decision.request.nodes == ("i-12345678901234567",)
    assert decision.request.reason == "CloudWatch alarm ServerCpuTooHigh in ALARM"


def test_alarm_by_prefix_and_fsx_dimension():
    event = load("cw-alarm-state-change_single-metric.json")
    event["detail"]["alarmName"] = "hpd-fsx-throughput-fs-0abc12345678"
    event["detail"]["configuration"]["metrics"][0]["metricStat"]["metric"]["dimensions"] = {
        "FileSystemId": "fs-0abc1234567890def"
    }
    decision = decide(event, CLUSTERS)
    assert decision.request.cluster == "ml-cluster"
    assert decision.request.fsx_ids == ("fs-0abc1234567890def",)
    assert decision.request.nodes == ()


@pytest.mark.parametrize(
    ("fixture", "edit", "reason"),
    [
        ("cw-alarm-state-change_metric-math.json", None, "unknown-alarm"),
        ("cw-alarm_lambda-action-payload_NOT-eventbridge.json", None, "malformed"),
        ("hyperpod_cluster_event.json", None, "not-error"),  # real event carries no EventLevel
        ("hyperpod_cluster_status_change.json", None, "not-in-service"),
        ("cw-alarm-state-change_single-metric.json", ("state", {"value": "OK"}), "not-alarm"),
        ("hyperpod_node_health_event.json", ("ClusterName", "bad;name$(x)"), "invalid"),
    ],
)
def test_events_that_do_not_lead_to_a_diagnosis_say_why(fixture, edit, reason):
    event = load(fixture)
    if edit:
        event["detail"][edit[0]] = edit[1]
        if edit[0] == "ClusterName":
            event["detail"]["ClusterArn"] = None
    with pytest.raises(TriggerRejected) as rejected:
        decide(event, CLUSTERS)
    assert rejected.value.reason == reason


def test_cluster_error_event_names_its_instance():
    event = load("hyperpod_cluster_event.json")
    event["detail"]["EventDetails"]["EventLevel"] = "Error"
    decision = decide(event, CLUSTERS)
    assert decision.request.cluster == "k8-2"
    assert decision.request.nodes == ("i-0391f86fa0fe0d465",)
    assert decision.request.reason.startswith("cluster event: Instance lifecycle script execution")


def test_storm_of_events_in_one_window_shares_one_name():
    base = load("hyperpod_node_health_event.json")
    names = set()
    for second in range(0, 15 * 60, 18):  # 50 events over the 15-minute window
        event = copy.deepcopy(base)
        event["time"] = (datetime(2025, 5, 9, 21, 45, tzinfo=UTC) + timedelta(seconds=second)).isoformat()
        names.add(decide(event, CLUSTERS).execution_name)
    assert names == {"hpd-k8-1-20250509T2145Z"}


def test_execution_names_are_valid_for_step_functions():
    name = execution_name("a" * 63, datetime(2026, 1, 1, tzinfo=UTC), 15)
    assert len(name) <= 80 and name.startswith("hpd-")
    assert all(ch.isalnum() or ch == "-" for ch in name)


# --- The alarm travels with the request: what it measures and what it saw ---------------------


def test_the_request_carries_what_the_real_single_metric_alarm_measures_and_saw():
    decision = decide(load("cw-alarm-state-change_single-metric.json"), CLUSTERS)

    alarm = decision.request.alarm
    assert alarm.model_dump(exclude_none=True) == {
        "name": "ServerCpuTooHigh",
        "description": "Goes into alarm when server CPU utilization is too high!",
        "state": "ALARM",
        "state_reason": "Threshold Crossed: 1 out of the last 1 datapoints [99.50160229693434 (02/10/19 "
        "16:59:00)] was greater than the threshold (50.0) (minimum 1 datapoint for OK -> ALARM transition).",
        "state_time": "2019-10-02T17:04:40.989+0000",
        "threshold": 50.0,  # from reasonData, a JSON document inside a string
        "comparison": ">",  # from the reason's words: "was greater than the threshold"
        "period_s": 300,
        "recent_datapoints": (99.50160229693434,),
        "metrics": (
            {
                "id": "30b6c6b2-a864-43a2-4877-c09a1afc3b87",
                "namespace": "AWS/EC2",
                "name": "CPUUtilization",
                "dimensions": {"InstanceId": "i-12345678901234567"},
                "stat": "Average",
                "period_s": 300,
                "return_data": True,
            },
        ),
    }
    # and it survives the state machine's JSON (the request is the execution input)
    again = type(decision.request).model_validate(decision.request.model_dump(mode="json", exclude_none=True))
    assert again.alarm == alarm


def test_a_metric_math_alarm_keeps_its_expression_and_its_inputs():
    event = load("cw-alarm-state-change_metric-math.json")
    alarm = decide(
        event, [ClusterTriggerConfig(name="k8-1", alarmNames=["TotalNetworkTrafficTooHigh"])]
    ).request.alarm

    assert [(m.id, m.expression, m.name, m.return_data) for m in alarm.metrics] == [
        ("e1", "SUM(METRICS())", None, True),
        ("m1", None, "NetworkIn", False),
        ("m2", None, "NetworkOut", False),
    ]
    assert (alarm.result.label, [m.name for m in alarm.measured]) == (
        "Total Network Traffic",
        ["NetworkIn", "NetworkOut"],
    )
    assert (alarm.threshold, alarm.comparison, alarm.recent_datapoints) == (10000.0, ">", (45628.0,))


@pytest.mark.parametrize(
    ("words", "comparison"),
    [
        ("was greater than or equal to the threshold (90.0)", ">="),
        ("was less than the threshold (3.0)", "<"),
        ("were less than or equal to the threshold (3.0)", "<="),
        ("Unchecked: Initial alarm creation", None),
    ],
)
def test_the_comparison_is_read_from_the_reasons_words(words, comparison):
    event = load("cw-alarm-state-change_single-metric.json")
    event["detail"]["state"]["reason"] = f"Threshold Crossed: 1 datapoint [5.0] {words}"
    assert decide(event, CLUSTERS).request.alarm.comparison == comparison


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("reasonData", "{not json"),
        ("reasonData", '["a list"]'),
        ("reasonData", '{"threshold": "high", "recentDatapoints": [1, "x", null, true], "period": 0}'),
        ("reason", None),
        ("reason", "x\u0000y\n" * 2000),
    ],
)
def test_unreadable_alarm_fields_leave_that_part_out_and_never_stop_the_run(field, value):
    event = load("cw-alarm-state-change_single-metric.json")
    event["detail"]["state"][field] = value
    event["detail"]["configuration"]["metrics"].append({"id": "e9", "metricStat": "not an object"})

    alarm = decide(event, CLUSTERS).request.alarm

    assert alarm.name == "ServerCpuTooHigh" and alarm.metrics[0].name == "CPUUtilization"
    if field == "reasonData":
        assert alarm.threshold is None and alarm.period_s is None
        assert alarm.recent_datapoints == ((1.0,) if "recentDatapoints" in value else ())
    elif value:
        assert alarm.state_reason.isprintable() and len(alarm.state_reason) == 1024


def test_node_health_event_records_the_repair_it_announces():
    decision = decide(load("hyperpod_node_health_event.json"), CLUSTERS)
    assert (decision.request.repair_action, decision.request.after_repair) == ("Replace", False)


@pytest.mark.parametrize("status", ["Schedulable", "Healthy"])
def test_a_node_back_in_service_starts_its_before_after_diagnosis_under_its_own_name(status):
    event = load("hyperpod_node_health_event.json")
    event["detail"]["HealthSummary"].update({"HealthStatus": status, "RepairAction": None})
    decision = decide(event, CLUSTERS)
    assert decision.request.after_repair is True and decision.request.repair_action is None
    assert decision.request.nodes == ("i-0fdc8ceb3bfecc215",)
    assert decision.request.reason == f"node i-0fdc8ceb3bfecc215 back in service ({status}): before/after"
    assert decision.execution_name == "hpdr-k8-1-20250509T2145Z"
    assert (
        len(execution_name("c" * 63, datetime(2025, 5, 9, tzinfo=UTC), 15).replace("hpd-", "hpdr-", 1)) <= 80
    )


def test_a_healthy_event_without_a_node_is_rejected():
    event = load("hyperpod_node_health_event.json")
    event["detail"]["HealthSummary"]["HealthStatus"] = "Schedulable"
    del event["detail"]["InstanceId"]
    with pytest.raises(TriggerRejected) as caught:
        decide(event, CLUSTERS)
    assert caught.value.reason == "healthy"


def test_the_clusters_amp_workspace_goes_with_its_runs_and_only_its_own():
    # Given k8-1 configured with its AMP workspace and ml-cluster without one
    clusters = [
        ClusterTriggerConfig(name="k8-1", alarmNames=["ServerCpuTooHigh"], prometheusWorkspaceId="ws-k8-1"),
        ClusterTriggerConfig(name="ml-cluster", alarmPrefixes=["hpd-fsx-"]),
    ]
    decision = decide(load("cw-alarm-state-change_single-metric.json"), clusters)
    assert decision.request.prometheus_workspace_id == "ws-k8-1"
    assert decision.request.deep_collect == "suspects"  # the configuration's default
    event = load("cw-alarm-state-change_single-metric.json")
    event["detail"]["alarmName"] = "hpd-fsx-throughput-fs-0abc12345678"
    assert decide(event, clusters).request.prometheus_workspace_id is None


def _envelope_variants() -> list[object]:
    """Real captures, and each broken the ways an envelope can break."""
    base = load("hyperpod_node_health_event.json")
    variants: list[object] = [load(path.name) for path in sorted(EVENTS.glob("*.json"))]
    for field in (
        "version",
        "id",
        "source",
        "account",
        "time",
        "region",
        "resources",
        "detail-type",
        "detail",
    ):
        variants.append({k: v for k, v in base.items() if k != field})  # missing
        variants.append({**base, field: None})  # null
        variants.append({**base, field: 7})  # wrong type
    variants += [
        {**base, "time": "not a time"},
        {**base, "resources": ["arn", 3]},
        {**base, "detail": "{}"},
        {**base, "detail": []},
        {**base, "source": "aws.scheduler", "detail": "{}"},  # EventBridge Scheduler's empty payload
        {**base, "replay-name": "replay-1"},
        {**base, "replay-name": 5},
        {**base, "detail_type": "by field name"},
        "not an object",
        [],
    ]
    return variants


def test_the_trigger_envelope_accepts_and_rejects_what_powertools_eventbridge_model_does():
    # Given Powertools' EventBridgeModel, which the trigger used before it had its own envelope
    # (Powertools' parser package is not loaded by any function: cold start)
    from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
    from pydantic import ValidationError

    from hyperpod_perf.pipeline.triggers import EventBridgeEvent

    def outcome(model, event):
        try:
            parsed = model.model_validate(event)
        except ValidationError as exc:
            return ("rejected", sorted({str(e["loc"][0]) for e in exc.errors() if e["loc"]}))
        return ("accepted", parsed.model_dump(by_alias=True))

    # When each variant is validated by both
    # Then both agree: accepted with the same values, or rejected on the same fields
    verdicts = []
    for event in _envelope_variants():
        ours = outcome(EventBridgeEvent, event)
        assert ours == outcome(EventBridgeModel, event), event
        verdicts.append(ours[0])
    # (the variants exercise both sides: every real capture accepted, every broken field rejected)
    assert verdicts.count("accepted") >= len(list(EVENTS.glob("*.json"))) and verdicts.count("rejected") >= 27


def test_the_execution_input_leaves_the_sample_size_to_the_deployment():
    from hyperpod_perf.domain.request import DiagnoseRequest
    from hyperpod_perf.pipeline.cluster import with_deployment_defaults
    from hyperpod_perf.pipeline.triggers import execution_input

    # Given an alarm's decision (the event sets no sample size)
    decision = decide(load("cw-alarm-state-change_single-metric.json"), CLUSTERS)
    # When it becomes the execution's input and a step re-reads it with the deployment's defaults
    sent = execution_input(decision.request)
    again = DiagnoseRequest.model_validate(sent)
    # Then the event's own fields travel, the sample size does not, and NODE_SAMPLE_SIZE applies
    assert "sample_size" not in sent and "window_minutes" not in sent
    assert sent["cluster"] == "k8-1" and sent["nodes"] == ["i-12345678901234567"]
    assert again == decision.request  # the same request once the model's defaults are back
    assert with_deployment_defaults(again, sample_size=3).sample_size == 3
