"""Events that trigger a diagnosis: malformed, null-field, oversized and hostile events are
rejected with a reason (the trigger logs it and counts it by `Reason`), never an exception.

What is proven:
- every real EventBridge capture, with each of its fields in turn nulled, removed, or replaced by
  another JSON type or a 10 KB string, either yields a valid request or raises TriggerRejected
  with a known reason — nothing else escapes;
- hypothesis-generated JSON (any shape) and envelope-valid events with arbitrary details behave
  the same;
- identifiers carrying injections are `invalid` (node, cluster, FSx, region) or `unknown-alarm`;
  an alarm accepted by a configured prefix still only yields the configured cluster, validated
  instance ids and a one-line printable reason;
- oversized, deeply nested and out-of-range-time events are rejected, not crashes.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hyperpod_perf.domain.request import CLUSTER_NAME_PATTERN, FSX_ID_PATTERN, INSTANCE_ID_PATTERN
from hyperpod_perf.pipeline.triggers import (
    ALARM,
    CLUSTER_EVENT,
    CLUSTER_STATE,
    NODE_HEALTH,
    ClusterTriggerConfig,
    TriggerDecision,
    TriggerRejected,
    decide,
)

FUZZ = settings(settings.get_profile("hpd-fuzz"))
EVENTS = Path(__file__).parents[2] / "fixtures" / "real" / "events"
CLUSTERS = [
    ClusterTriggerConfig(name="k8-1", alarmNames=["ServerCpuTooHigh"], fsxIds=["fs-0123456789abcdef0"]),
    ClusterTriggerConfig(name="ml-cluster", alarmPrefixes=["hpd-"]),
]
REASONS = {
    "malformed",
    "oversized",
    "unsupported",
    "not-alarm",
    "unknown-alarm",
    "healthy",
    "not-error",
    "not-in-service",
    "invalid",
}
#: The real captures delivered to the trigger (the ListClusterEvents API dump is not an event).
FIXTURES = sorted(p.name for p in EVENTS.glob("*.json") if "list-cluster-events" not in p.name)
HOSTILE = ["x;reboot", "$(reboot)", "`reboot`", "../../etc", "a\nb", "a\x00b", "\u0430bc", "a" * 10240]


def load(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text())


def outcome_of(event: Any) -> str:
    """`accepted` (after checking the request is clean) or the rejection reason."""
    try:
        decision = decide(event, CLUSTERS)
    except TriggerRejected as rejected:
        assert rejected.reason in REASONS, rejected.reason
        assert rejected.detail and len(str(rejected)) < 400
        return rejected.reason
    assert_clean(decision)
    return "accepted"


def assert_clean(decision: TriggerDecision) -> None:
    """An accepted event only ever carries validated identifiers and a one-line reason."""
    request = decision.request
    assert re.fullmatch(CLUSTER_NAME_PATTERN[1:-1], request.cluster_name)
    assert all(re.fullmatch(INSTANCE_ID_PATTERN[1:-1], n) for n in request.nodes)
    assert all(re.fullmatch(FSX_ID_PATTERN[1:-1], f) for f in request.fsx_ids)
    assert request.reason.isprintable() and len(request.reason) <= 256
    assert re.fullmatch(r"hpd-[A-Za-z0-9-]{1,56}-\d{8}T\d{4}Z", decision.execution_name), (
        decision.execution_name
    )


# --- real events, one field at a time ----------------------------------------------------------


def field_paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    if path:
        yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from field_paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from field_paths(child, (*path, index))


REMOVE = object()
REPLACEMENTS: dict[str, Any] = {
    "null": None,
    "removed": REMOVE,
    "string": "ALARM",
    "number": 7,
    "list": [1, "x"],
    "object": {},
    "10 KB string": "a" * 10240,
}


def edited(event: dict[str, Any], path: tuple, replacement: Any) -> dict[str, Any]:
    event = copy.deepcopy(event)
    parent = event
    for key in path[:-1]:
        parent = parent[key]
    if replacement is REMOVE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(replacement)
    return event


@pytest.mark.parametrize("fixture", FIXTURES)
def test_each_field_nulled_removed_or_retyped_is_rejected_with_a_reason_or_still_clean(fixture, outcome):
    # Given a real event with one field at a time nulled, removed or given another type
    original = load(fixture)
    seen: Counter[str] = Counter()
    for path in field_paths(original):
        for replacement in REPLACEMENTS.values():
            # When decided, then it is a clean request or a TriggerRejected with a known reason
            seen[outcome_of(edited(original, path, replacement))] += 1

    # ... and the edits the envelope cannot do without are caught as malformed
    assert seen["malformed"] > 0 or not isinstance(original, dict)
    assert sum(seen.values()) == len(list(field_paths(original))) * len(REPLACEMENTS)
    outcome(
        f"real event {fixture}, every field nulled/removed/retyped in turn",
        "; ".join(f"{reason} x{count}" for reason, count in sorted(seen.items())),
    )


@pytest.mark.parametrize(
    ("path", "replacement", "reason"),
    [
        (("detail", "state"), "ALARM", "not-alarm"),
        (("detail", "state"), ["ALARM"], "not-alarm"),
        (("detail", "configuration"), "broken", "accepted"),
        (("detail", "configuration", "metrics", 0), "broken", "accepted"),
        (("detail", "configuration", "metrics", 0, "metricStat"), 7, "accepted"),
    ],
    ids=["state-string", "state-list", "configuration-string", "metric-string", "metricStat-number"],
)
def test_alarm_fields_of_the_wrong_type_do_not_crash_the_trigger(path, replacement, reason, outcome):
    # Given the real single-metric alarm with a nested field of the wrong JSON type (these raised
    # AttributeError before the trigger read nested objects defensively)
    event = edited(load("cw-alarm-state-change_single-metric.json"), path, replacement)

    # Then it is judged like a missing field: not an exception
    assert outcome_of(event) == reason
    outcome(f"alarm event with `{'.'.join(map(str, path))}` = {replacement!r}", reason)


def test_a_node_health_event_whose_summary_is_not_an_object_is_still_diagnosed(outcome):
    event = edited(load("hyperpod_node_health_event.json"), ("detail", "HealthSummary"), "Unhealthy")
    decision = decide(event, CLUSTERS)
    assert decision.request.nodes == ("i-0fdc8ceb3bfecc215",)
    assert decision.request.reason == "node i-0fdc8ceb3bfecc215 health unknown"
    outcome("node health event with HealthSummary a string", "diagnosed; health reported as unknown")


# --- hostile identifiers -----------------------------------------------------------------------


@pytest.mark.parametrize("payload", HOSTILE)
@pytest.mark.parametrize(
    ("fixture", "path", "reason"),
    [
        ("hyperpod_node_health_event.json", ("detail", "ClusterName"), "invalid"),
        ("hyperpod_node_health_event.json", ("detail", "InstanceId"), "invalid"),
        ("hyperpod_node_health_event.json", ("region",), "invalid"),
        ("cw-alarm-state-change_single-metric.json", ("detail", "alarmName"), "unknown-alarm"),
    ],
    ids=["cluster-name", "instance-id", "region", "alarm-name"],
)
def test_hostile_identifiers_in_events_are_rejected(fixture, path, reason, payload, outcome):
    # Given a real event with an identifier carrying an injection
    event = edited(load(fixture), path, payload)

    # Then the trigger rejects it with the reason the metric counts
    assert outcome_of(event) == reason
    outcome(f"event `{path[-1]}` carrying {payload[:12]!r}", f"TriggerRejected({reason})")


def test_hostile_fsx_dimension_of_a_configured_alarm_is_invalid(outcome):
    event = load("cw-alarm-state-change_single-metric.json")
    event["detail"]["configuration"]["metrics"][0]["metricStat"]["metric"]["dimensions"] = {
        "FileSystemId": "fs-0abc;reboot"
    }
    assert outcome_of(event) == "invalid"
    outcome("alarm FileSystemId dimension `fs-0abc;reboot`", "TriggerRejected(invalid)")


@pytest.mark.parametrize("payload", HOSTILE)
def test_an_alarm_accepted_by_prefix_only_carries_configured_and_validated_values(payload, outcome):
    # Given a configured alarm prefix followed by hostile text, and a hostile instance dimension
    event = load("cw-alarm-state-change_single-metric.json")
    event["detail"]["alarmName"] = "hpd-" + payload
    event["detail"]["configuration"]["metrics"][0]["metricStat"]["metric"]["dimensions"] = {
        "InstanceId": "i-0123456789abcdef0;reboot"
    }

    # When decided
    decision = decide(event, CLUSTERS)

    # Then the cluster is the configured one, the bad instance id is dropped, and the alarm name
    # only appears inside the one-line, printable, bounded reason
    assert decision.request.cluster == "ml-cluster"
    assert decision.request.nodes == ()
    assert_clean(decision)
    outcome(
        f"configured alarm prefix + {payload[:12]!r}",
        "accepted for the configured cluster; name only in the printable reason",
    )


# --- envelopes, sizes, times -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (None, "malformed"),
        ([], "malformed"),
        ("event", "malformed"),
        (42, "malformed"),
        ({}, "malformed"),
        ({"detail-type": ALARM}, "malformed"),
    ],
    ids=["null", "list", "string", "number", "empty-object", "no-envelope"],
)
def test_events_that_are_not_eventbridge_objects_are_malformed(event, reason, outcome):
    assert outcome_of(event) == reason
    outcome(f"event {json.dumps(event)}", f"TriggerRejected({reason})")


def test_an_oversized_event_is_rejected_before_validation(outcome):
    event = load("hyperpod_node_health_event.json")
    event["detail"]["Tags"] = {"blob": "x" * (300 * 1024)}
    assert outcome_of(event) == "oversized"
    outcome("event of 300 KB", "TriggerRejected(oversized)")


def test_a_deeply_nested_event_is_malformed_not_a_recursion_error(outcome):
    # Given an event nested deeper than the interpreter's recursion limit
    event = load("hyperpod_node_health_event.json")
    nested: dict[str, Any] = {}
    for _ in range(5000):
        nested = {"x": nested}
    event["detail"]["Tags"] = nested

    # Then it is rejected as malformed (repr/validation would raise RecursionError)
    assert outcome_of(event) == "malformed"
    outcome("event nested 5000 levels deep", "TriggerRejected(malformed)")


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_an_event_time_with_no_utc_equivalent_is_malformed(when, outcome):
    # Given an event time at the edge of the calendar (OverflowError when converted to UTC)
    event = load("hyperpod_node_health_event.json")
    event["time"] = when
    assert outcome_of(event) == "malformed"
    outcome(f"event time {when}", "TriggerRejected(malformed)")


# --- generated events --------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=25,
)
DETAIL_KEYS = [
    "alarmName",
    "state",
    "configuration",
    "ClusterName",
    "ClusterArn",
    "InstanceId",
    "HealthSummary",
    "EventDetails",
    "EventLevel",
    "ClusterStatus",
    "Description",
]


@st.composite
def eventbridge_events(draw: st.DrawFn) -> dict[str, Any]:
    """Valid envelopes of the four trigger kinds with details of arbitrary content."""
    detail = draw(st.dictionaries(st.sampled_from(DETAIL_KEYS), JSON, max_size=6))
    if draw(st.booleans()):
        detail["alarmName"] = draw(st.sampled_from(["ServerCpuTooHigh", "hpd-x", "other"]))
        detail["state"] = draw(st.sampled_from([{"value": "ALARM"}, {"value": "OK"}, "ALARM", None]))
    return {
        "version": "0",
        "id": "00000000-0000-0000-0000-000000000000",
        "detail-type": draw(st.sampled_from([ALARM, NODE_HEALTH, CLUSTER_EVENT, CLUSTER_STATE, "Other"])),
        "source": draw(st.sampled_from(["aws.cloudwatch", "aws.sagemaker"])),
        "account": "123456789012",
        "time": draw(st.sampled_from(["2025-05-09T21:46:15Z", "0001-01-01T00:00:00+14:00", "not a time"])),
        "region": draw(st.sampled_from(["us-west-2", "us-west-\u0663", "x;y"])),
        "resources": [],
        "detail": detail,
    }


@FUZZ
@given(event=JSON)
def test_any_json_value_is_rejected_with_a_reason(event):
    # Given any JSON value as the event, then it is rejected (a random value is never a trigger)
    assert outcome_of(event) in REASONS


@FUZZ
@given(event=eventbridge_events())
def test_any_detail_of_a_trigger_kind_is_a_clean_request_or_a_reason(event):
    outcome_of(event)
