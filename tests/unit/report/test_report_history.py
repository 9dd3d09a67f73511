"""History: new / resolved / still present by identity, drift of key figures, and the diff text."""

from __future__ import annotations

from report_builders import finding, gpus, hot_gpu, node, report

from hyperpod_perf.domain.findings import RunbookSection, Severity
from hyperpod_perf.report.history import diff_reports, render_diff_text


def efa_drops(node_name: str, device: str, value: int) -> object:
    return finding(
        node_name,
        "efa.counters",
        summary=f"{device} rx_drops = {value}",
        section=RunbookSection.NCCL,
        evidence={"device": device, "counter": "rx_drops", "value": value},
    )


def test_new_resolved_and_still_present_by_node_check_and_evidence_identity() -> None:
    # Given a previous run: hot GPU 3 on a (90 °C), drops on b's rdmap16s27, governor on c
    old = report(
        [
            hot_gpu("a", 90),
            efa_drops("b", "rdmap16s27", 10),
            finding("c", "host.cpu_governor", section=RunbookSection.NCCL),
        ],
        [node("a"), node("b"), node("c")],
    )
    # And a new run: GPU 3 on a now 93 °C (same GPU), drops on b's *other* device, c fixed
    new = report(
        [
            hot_gpu("a", 93),
            efa_drops("b", "rdmap32s27", 5),
            finding("c", "host.cpu_governor", Severity.OK, section=RunbookSection.NCCL),
        ],
        [node("a"), node("b"), node("c")],
        location="s3://bucket-a/c1/run2/",
    )
    # When diffed
    delta = diff_reports(old, new)
    # Then a measured value change is not a new finding, another device is, and c is resolved
    assert [(f.node, f.summary) for f in delta.still_present] == [("a", "GPU 3 at 93 °C")]
    assert [(f.node, f.evidence["device"]) for f in delta.new] == [("b", "rdmap32s27")]
    assert sorted((f.node, f.check) for f in delta.resolved) == [
        ("b", "efa.counters"),
        ("c", "host.cpu_governor"),
    ]
    assert delta.previous_location == "s3://bucket-a/c1/run1/"


def test_concern_on_a_node_that_could_not_be_reached_is_not_resolved() -> None:
    # Given a hot GPU last run, and this run the node's collection failed
    old = report([hot_gpu("a", 90)], [node("a")])
    new = report(
        [finding("a", "collect.node", section=RunbookSection.COLLECTION, summary="session timed out")],
        [node("a", collection="failed", collection_error="timeout")],
    )
    # When diffed
    delta = diff_reports(old, new)
    # Then the hot GPU is neither resolved nor still present; the collection failure is new
    assert delta.resolved == []
    assert delta.still_present == []
    assert [f.check for f in delta.new] == ["collect.node"]


def test_node_absent_from_the_new_run_is_not_resolved() -> None:
    old = report([hot_gpu("a", 90)], [node("a"), node("b")])
    new = report([finding("b", "gpu.temperature", Severity.OK)], [node("b")])
    assert diff_reports(old, new).resolved == []


def test_drift_beyond_the_relative_threshold_and_from_zero() -> None:
    # Given busbw 360 -> 300 (-16.7 %), sm clock 1980 -> 1950 (-1.5 %), drops 0 -> 42
    old = report([], [node("a", figures={"busbw_gbps": 360.0, "efa_rx_drops": 0.0}, gpus=gpus(60, 1980))])
    new = report([], [node("a", figures={"busbw_gbps": 300.0, "efa_rx_drops": 42.0}, gpus=gpus(61, 1950))])
    # When diffed with the default 10 % threshold
    drift = diff_reports(old, new).drift
    # Then busbw and the counter drift; the small clock change and temperature do not
    assert drift == [
        {"node": "a", "figure": "busbw_gbps", "old": 360.0, "new": 300.0, "change_pct": -16.7},
        {"node": "a", "figure": "efa_rx_drops", "old": 0.0, "new": 42.0, "change_pct": None},
    ]


def test_derived_gpu_figures_drift_when_a_gpu_throttles() -> None:
    old = report([], [node("a", gpus=gpus(60, 1980))])
    new = report([], [node("a", gpus=gpus(60, 990))])
    assert diff_reports(old, new).drift == [
        {"node": "a", "figure": "min_sm_clock_mhz", "old": 1980.0, "new": 990.0, "change_pct": -50.0}
    ]


def test_diff_text_lists_each_bucket_with_counts() -> None:
    old = report(
        [finding("c", "host.cpu_governor", section=RunbookSection.NCCL, summary="powersave")], [node("c")]
    )
    new = report([hot_gpu("c", 91)], [node("c", figures={})])
    text = render_diff_text(diff_reports(old, new))
    assert text.splitlines() == [
        "Compared with: s3://bucket-a/c1/run1/",
        "New since last run: 1",
        "  c: gpu.temperature — GPU 3 at 91 °C",
        "Resolved since last run: 1",
        "  c: host.cpu_governor — powersave",
        "Still present: 0",
        "Drift of key figures: 0",
    ]
