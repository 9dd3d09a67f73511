"""What the dashboard reads: the per-check `Concerns` EMF documents and the time to findings."""

from __future__ import annotations

import json

import pytest

from hyperpod_perf.handlers.observability import NAMESPACE, SERVICE, emit_concerns_by_check
from hyperpod_perf.pipeline.reporting import _seconds_between


def test_each_check_gets_one_valid_emf_document_with_a_check_dimension(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two checks that raised concerns in a run, in Lambda (metrics not disabled)
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)
    emit_concerns_by_check({"gpu.xid": 2, "efa.port_state": 1})
    # When the EMF documents are read back from the log
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    # Then there is one per check, each declaring the Concerns metric under {service, Check}
    assert [d["Check"] for d in docs] == ["efa.port_state", "gpu.xid"]
    for doc, count in zip(docs, (1.0, 2.0), strict=True):
        (directive,) = doc["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == NAMESPACE
        assert directive["Dimensions"] == [["service", "Check"]]
        assert directive["Metrics"] == [{"Name": "Concerns", "Unit": "Count"}]
        assert doc["service"] == SERVICE
        assert doc["Concerns"] in (count, [count])
        assert isinstance(doc["_aws"]["Timestamp"], int)


def test_no_concerns_emits_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    emit_concerns_by_check({})
    assert capsys.readouterr().out == ""


def test_metrics_disabled_prints_no_emf_document(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the local run's setting (the demo and the state-machine tests set it: no CloudWatch here)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    # When a run with concerns emits its per-check documents
    emit_concerns_by_check({"gpu.xid": 2, "efa.port_state": 1})
    # Then nothing reaches stdout: the demo's story has no {"_aws": ...} line
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("started", "finished", "seconds"),
    [
        ("2026-12-01T10:00:00+00:00", "2026-12-01T10:02:03.500000+00:00", 123.5),
        ("2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z", 0.0),
        ("2026-12-01T10:00:05+00:00", "2026-12-01T10:00:00+00:00", 0.0),  # clock skew: never negative
        (None, "2026-12-01T10:00:00+00:00", None),
        ("not a time", "2026-12-01T10:00:00+00:00", None),
        ("2026-12-01T10:00:00", "2026-12-01T10:00:01+00:00", None),  # no zone: not comparable
    ],
)
def test_time_to_findings_is_seconds_from_start_to_report(
    started: str | None, finished: str | None, seconds: float | None
) -> None:
    assert _seconds_between(started, finished) == seconds
