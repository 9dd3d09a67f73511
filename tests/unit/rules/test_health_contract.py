"""HyperPod health findings field by field (reviewed): health.deep_check and health.hma in every shape
— no record, passing records, failed records (JSON and plain lines), HMA events with and without an
Xid — with the per-node grouping and its cap of 50 findings at, inside and outside the limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hyperpod_perf.domain.cluster import LogKind, LogRecord
from hyperpod_perf.rules import health

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "deep-health"
NODE = "i-0abc1234567890def"
DEEP_STREAM = f"DeepHealthCheckResults/{NODE}"
HMA_STREAM = f"SagemakerHealthMonitoringAgent/worker-group-1/{NODE}"
TS_MS = 1_724_265_335_000  # 2024-08-21T18:35:35Z
TS = "2024-08-21T18:35:35Z"
DEEP_STEP = (
    "HyperPod flags the instance for reboot/replacement when NodeRecovery is Automatic; otherwise "
    "replace it (aws sagemaker batch-replace-cluster-nodes) once the node debugger confirms the fault."
)
HMA_STEP = (
    "HMA marks the instance unhealthy; with NodeRecovery=Automatic HyperPod reboots or replaces it. "
    "Confirm the node's state (aws sagemaker describe-cluster-node) and follow the node debugger."
)
XID_ACTIONS = json.loads((Path(health.__file__).parent / "xid_actions.json").read_text(encoding="utf-8"))
HMA_PRETTY = (FIXTURES / "hma_npd-event_xid71_pretty.json").read_text(encoding="utf-8")
HMA_XID71_MESSAGE = (
    'Node condition NvidiaErrorReboot is now: True, reason: XidHardwareFailure, message: "NVRM: Xid '
    '(PCI:0000:b9:00): 71, pid=<unknown>, name=<unknown>, NVLink: fatal error detected on link 6"'
)


def deep(message: str, stream: str = DEEP_STREAM, timestamp_ms: int | None = TS_MS) -> LogRecord:
    return LogRecord(kind=LogKind.DEEP_HEALTH, stream=stream, timestamp_ms=timestamp_ms, message=message)


def hma_record(message: str, stream: str = HMA_STREAM, timestamp_ms: int | None = TS_MS) -> LogRecord:
    return LogRecord(kind=LogKind.HMA, stream=stream, timestamp_ms=timestamp_ms, message=message)


def dumped(findings):
    return [f.model_dump(mode="json") for f in findings]


def concern(check, node, summary, evidence, threshold, next_step):
    return {
        "node": node,
        "check": check,
        "severity": "CONCERN",
        "section": "G",
        "summary": summary,
        "evidence": evidence,
        "threshold": threshold,
        "next_step": next_step,
        "handoff": "hyperpod-node-debugger § F",
    }


# --- health.deep_check ---------------------------------------------------------------------------


def test_no_deep_health_record_is_info_with_how_to_run_one():
    # Given only an HMA record (no DeepHealthCheckResults)
    assert dumped(health.deep_check([hma_record(HMA_PRETTY)])) == [
        {
            "node": None,
            "check": "health.deep_check",
            "severity": "INFO",
            "section": "C",
            "summary": "no deep health check results in the window",
            "evidence": {"records": 0},
            "threshold": None,
            "next_step": "Deep health checks run when nodes are created or replaced, or on demand "
            "(aws sagemaker start-cluster-health-check).",
            "handoff": None,
        }
    ]


def test_passing_records_are_ok_with_the_nodes_that_passed():
    # Given the real passing stress-ng log on one node, and the real EFA loopback line on a stream without an
    # instance id (so nothing names the node) and a third node named only in a JSON message
    records = [
        deep(
            (FIXTURES / "dhc_instance_stress-ng.log").read_text(encoding="utf-8"),
            "DeepHealthCheckResults/i-0bbb1234567890def/",
        ),
        deep(
            (FIXTURES / "dhc_instance_efa-loopback.log").read_text(encoding="utf-8"),
            "DeepHealthCheckResults/x",
        ),
        deep('{"level": "info", "msg": "check passed on i-0aaa1234567890def"}', "DeepHealthCheckResults/x"),
    ]
    assert dumped(health.deep_check(records)) == [
        {
            "node": None,
            "check": "health.deep_check",
            "severity": "OK",
            "section": "C",
            "summary": "5 deep health check record(s) in the window, none failed",
            "evidence": {"records": 5, "nodes": ["i-0aaa1234567890def", "i-0bbb1234567890def"]},
            "threshold": "any failed deep health check",
            "next_step": None,
            "handoff": None,
        }
    ]


def test_real_failed_cluster_check_is_a_concern_with_its_bandwidth_figures():
    record = deep(
        (FIXTURES / "dhc_cluster-level_nccl-bw-below-threshold_p4d.json").read_text(encoding="utf-8")
    )
    message = (
        "Encountered FaultyInstance. Replace the Instance. Region: us-west-2, InstanceType: p4d.24xlarge. "
        "ERROR:Bandwidth has less than threshold: Expected minimum threshold :80,NCCL Test output Bw: 30"
    )
    assert dumped(health.deep_check([record, record])) == [
        concern(
            "health.deep_check",
            NODE,
            f"deep health check failed: {message[:200]}",
            {
                "message": message,
                "level": "error",
                "first_seen": "2024-06-18T21:15:22Z",
                "occurrences": 2,
                "stream": DEEP_STREAM,
                "nccl_expected_min_bw": 80.0,
                "nccl_observed_bw": 30.0,
            },
            "any failed deep health check",
            DEEP_STEP,
        )
    ]


def test_plain_failed_lines_group_per_node_and_message_in_order_of_first_appearance():
    # Given plain log lines: two identical failures, another failure, a passing line
    text = (
        "2024-08-20T21:54:58Z ERROR GpuPci Count check\n"
        "\n"
        "2024-08-20T21:55:58Z info stress-ng success\n"
        "2024-08-20T21:56:58Z info dcgm diag failed\n"
        "2024-08-20T21:57:58Z error GpuPci Count check\n"
    )
    findings = dumped(health.deep_check([deep(text)]))
    assert [(f["node"], f["summary"], f["evidence"]) for f in findings] == [
        (
            NODE,
            "deep health check failed: GpuPci Count check",
            {
                "message": "GpuPci Count check",
                "level": "error",
                "first_seen": "2024-08-20T21:54:58Z",
                "occurrences": 2,
                "stream": DEEP_STREAM,
            },
        ),
        (
            NODE,
            "deep health check failed: dcgm diag failed",
            {
                "message": "dcgm diag failed",
                "level": "info",
                "first_seen": "2024-08-20T21:56:58Z",
                "occurrences": 1,
                "stream": DEEP_STREAM,
            },
        ),
    ]


def test_a_line_without_timestamp_takes_the_event_time_and_the_node_from_its_text():
    record = deep("  GPU check failed on i-0ccc1234567890def  ", stream="DeepHealthCheckResults")
    (entry,) = health.parse_deep_health(record)
    assert entry == health.DeepHealthEntry(
        node="i-0ccc1234567890def",
        timestamp=TS,
        level=None,
        message="GPU check failed on i-0ccc1234567890def",
        failed=True,
        stream="DeepHealthCheckResults",
    )
    no_time = health.parse_deep_health(deep("GPU check failed", timestamp_ms=None))
    assert [(e.node, e.timestamp) for e in no_time] == [(NODE, None)]


def test_json_record_fields_message_level_ts_and_a_log_prefix():
    # Given JSON records: with `message` instead of `msg`, a null level, no ts, and one behind a log prefix
    records = [
        deep('{"message": "loopback failed", "level": null}'),
        deep('2024-08-20 worker: {"level": "WARN", "msg": "ok", "ts": "2024-08-20T00:00:00Z"} trailing'),
        deep('{"level": "", "msg": ""}'),
    ]
    entries = [e for r in records for e in health.parse_deep_health(r)]
    assert [(e.level, e.message, e.timestamp, e.failed) for e in entries] == [
        (None, "loopback failed", TS, True),
        ("WARN", "ok", "2024-08-20T00:00:00Z", False),
        (None, "", TS, False),
    ]


@pytest.mark.parametrize("level", ["error", "ERROR", "fatal", "critical", "panic"])
def test_failed_levels(level):
    (entry,) = health.parse_deep_health(deep(f'{{"level": "{level}", "msg": "x"}}'))
    assert entry.failed is True


@pytest.mark.parametrize(
    ("message", "failed"),
    [
        ("Encountered FaultyInstance", True),
        ("please replace the instance", True),
        ("check fail", True),
        ("check FAILED", True),
        ("hardware failure", True),
        ("it fails", True),
        ("replacementRequired: true", True),
        ("rebootRequired:true", True),
        ("bandwidth less than threshold", True),
        ("replacementRequired: false rebootRequired:false", False),
        ("failover configured", False),
        ("success", False),
    ],
)
def test_failure_words_in_an_info_message(message, failed):
    (entry,) = health.parse_deep_health(deep(f"2024-08-20T21:54:58Z info {message}"))
    assert (entry.level, entry.failed) == ("info", failed)


@pytest.mark.parametrize("count", [49, 50, 51])
def test_at_most_50_findings_per_check(count):
    # Given `count` nodes each with one failure: at most MAX_EVENT_FINDINGS (50) findings, the first ones
    records = [deep("check failed", stream=f"DeepHealthCheckResults/i-0{i:016x}") for i in range(count)]
    findings = health.deep_check(records)
    assert [f.node for f in findings] == [f"i-0{i:016x}" for i in range(min(count, 50))]


def test_bandwidth_figures_with_decimals():
    message = "ERROR: Expected minimum threshold : 80.5 , NCCL Test output Bw : 30.25"
    (finding,) = health.deep_check([deep(f'{{"level": "error", "msg": "{message}"}}')])
    assert (finding.evidence["nccl_expected_min_bw"], finding.evidence["nccl_observed_bw"]) == (80.5, 30.25)


def test_summary_quotes_the_first_200_characters():
    message = "failed " + "x" * 300
    (finding,) = health.deep_check([deep(f'{{"level": "error", "msg": "{message}"}}')])
    assert finding.summary == f"deep health check failed: {message[:200]}"
    assert finding.evidence["message"] == message


# --- health.hma ----------------------------------------------------------------------------------


def test_no_hma_event_is_ok():
    # Given a non-event JSON line, plain text without the marker, and a deep health record
    records = [
        hma_record('{"level":"info","msg":"agent started"}'),
        hma_record("agent heartbeat"),
        deep(HMA_PRETTY),
    ]
    assert dumped(health.hma(records)) == [
        {
            "node": None,
            "check": "health.hma",
            "severity": "OK",
            "section": "G",
            "summary": "no Health Monitoring Agent detection events in the window",
            "evidence": {"events": 0},
            "threshold": "any HMA detection event",
            "next_step": None,
            "handoff": None,
        }
    ]


def test_real_xid71_event_repeated_is_one_concern_with_its_xid_and_action():
    # Given the real HMA Xid 71 event twice on the node's stream
    record = hma_record(HMA_PRETTY)
    entry = XID_ACTIONS["codes"].get("71")
    title, action = (
        (entry.get("title"), XID_ACTIONS["actions"][entry["action"]]["summary"])
        if entry
        else (None, "look the code up in NVIDIA's Xid catalog")
    )
    assert dumped(health.hma([record, record])) == [
        concern(
            "health.hma",
            NODE,
            "Health Monitoring Agent reported XidHardwareFailure: Xid 71" + (f" ({title})" if title else ""),
            {
                "reason": "XidHardwareFailure",
                "message": HMA_XID71_MESSAGE,
                "severity": "warn",
                "first_seen": "2024-08-22T20:59:29Z",
                "occurrences": 2,
                "xid": 71,
                "pci": "0000:b9:00",
                "xid_title": title,
                "xid_action": action,
            },
            "any HMA detection event",
            HMA_STEP,
        )
    ]


def _event(details: dict | None = None, key: str = "details", **top) -> str:
    data = {"level": "info", "ts": "2024-08-21T18:00:00Z", "msg": "NPD caught event: %v", **top}
    if details is not None:
        data[key] = details
    data["HealthMonitoringAgentDetectionEvent"] = "HealthEvent"
    return json.dumps(data)


def test_event_with_a_catalogued_xid_names_its_title_and_the_action():
    code = next(c for c, e in XID_ACTIONS["codes"].items() if e.get("title"))
    entry = XID_ACTIONS["codes"][code]
    message = f"NVRM: Xid (0000:3b:00): {code}, pid=1234"
    (finding,) = health.hma([hma_record(_event({"reason": None, "message": message, "severity": " "}))])
    assert finding.summary == f"Health Monitoring Agent reported Xid: Xid {code} ({entry['title']})"
    assert finding.evidence == {
        "reason": None,
        "message": message,
        "severity": "info",
        "first_seen": "2024-08-21T18:00:00Z",
        "occurrences": 1,
        "xid": int(code),
        "pci": "0000:3b:00",
        "xid_title": entry["title"],
        "xid_action": XID_ACTIONS["actions"][entry["action"]]["summary"],
    }


def test_event_without_xid_names_its_reason_or_says_detection_event():
    with_reason = hma_record(_event({"reason": "KernelDeadlock", "message": "task hung"}, key="Details"))
    without = hma_record(_event(None, message="node unhealthy"), stream="SagemakerHealthMonitoringAgent/g/x")
    findings = health.hma([with_reason, without])
    assert [(f.node, f.summary, f.evidence) for f in findings] == [
        (
            NODE,
            "Health Monitoring Agent reported KernelDeadlock",
            {
                "reason": "KernelDeadlock",
                "message": "task hung",
                "severity": "info",
                "first_seen": "2024-08-21T18:00:00Z",
                "occurrences": 1,
            },
        ),
        (
            None,
            "Health Monitoring Agent reported detection event",
            {
                "reason": None,
                "message": "node unhealthy",
                "severity": "info",
                "first_seen": "2024-08-21T18:00:00Z",
                "occurrences": 1,
            },
        ),
    ]


@pytest.mark.parametrize("key", ["details", "details: ", "details:", "Details"])
def test_details_under_each_key_and_as_a_json_string(key):
    details = {"reason": "XidHardwareFailure", "timestamp": "2024-08-22T20:59:29Z", "severity": "warn"}
    for value in (details, json.dumps(details)):
        event = health.parse_hma(hma_record(_event(value, key=key)))
        assert (event.reason, event.timestamp, event.severity) == (
            "XidHardwareFailure",
            "2024-08-22T20:59:29Z",
            "warn",
        )


def test_event_fields_fall_back_to_the_record_and_the_node_to_the_message():
    # Given an event with no details, no ts and no level, on a stream that names no instance
    text = json.dumps(
        {"message": "Xid on i-0ddd1234567890def", "HealthMonitoringAgentDetectionEvent": "HealthEvent"}
    )
    event = health.parse_hma(hma_record(text, stream="SagemakerHealthMonitoringAgent/g"))
    assert event == health.HmaEvent(
        node="i-0ddd1234567890def",
        timestamp=TS,
        severity=None,
        reason=None,
        message="Xid on i-0ddd1234567890def",
        xid=None,
        pci=None,
        raw=text,
        parsed=True,
    )


def test_marker_only_in_the_text_of_a_json_record_is_an_event():
    text = json.dumps({"message": "HealthMonitoringAgentDetectionEvent seen", "level": "warn"})
    event = health.parse_hma(hma_record(text))
    assert (event.message, event.severity, event.parsed) == (
        "HealthMonitoringAgentDetectionEvent seen",
        "warn",
        True,
    )


def test_unparseable_event_keeps_its_raw_text_and_xid():
    # Given a record that holds the marker but is not JSON (cut off), naming an unknown Xid
    raw = "HealthMonitoringAgentDetectionEvent {broken NVRM: Xid (PCI:0000:b9:00): 999 " + "y" * 600
    (finding,) = health.hma([hma_record(raw)])
    assert finding.node == NODE
    assert finding.summary == "Health Monitoring Agent reported Xid: Xid 999"
    assert finding.evidence == {
        "reason": None,
        "message": raw[:300],
        "severity": None,
        "first_seen": TS,
        "occurrences": 1,
        "xid": 999,
        "pci": "0000:b9:00",
        "xid_title": None,
        "xid_action": "look the code up in NVIDIA's Xid catalog",
        "raw": raw[:500],
    }


def test_evaluate_is_deep_check_then_hma():
    findings = health.evaluate([hma_record(HMA_PRETTY), deep("2024-08-20T21:55:58Z info stress-ng success")])
    assert [(f.check, f.severity.value) for f in findings] == [
        ("health.deep_check", "OK"),
        ("health.hma", "CONCERN"),
    ]


def test_event_times_are_utc_whatever_the_local_time_zone(monkeypatch):
    # Given a machine in New York (the CLI runs on laptops, not only in Lambda)
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        (entry,) = health.parse_deep_health(deep("GPU check failed"))
    finally:
        monkeypatch.undo()
        time.tzset()
    assert entry.timestamp == TS


@pytest.mark.parametrize(
    "text",
    [
        # a record pasted from a JSON array (trailing comma), with a nested object
        '{"level": "error", "msg": "GPU check", "detail": {"code": 1}},',
        # a log prefix before it and a nested object inside
        '2024-08-20T21:54:58Z worker {"level": "error", "msg": "GPU check", "detail": {"code": 1}}',
    ],
)
def test_a_json_record_inside_other_text_is_read_from_its_first_to_its_last_brace(text):
    (entry,) = health.parse_deep_health(deep(text))
    assert (entry.level, entry.message, entry.failed) == ("error", "GPU check", True)
