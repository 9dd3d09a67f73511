"""gpu.pcie_replay and host.pcie_aer field by field (reviewed): every finding shape with its exact check,
severity, section, summary, evidence keys and values, threshold text, next step and handoff; the rate
computed from the uptime (minutes, rounding), uptime that is missing, zero, negative or unreadable, GPUs
whose counters are only partly readable, several GPUs / devices in one section, and the thresholds
overridden in the threshold text.

Inputs are the real 1x H100 `nvidia-smi -q` capture (its replay lines edited) and the kernel ABI
document's sample aer_dev_* contents (their TOTAL lines edited), as in test_pcie_rules.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_gpu_rules import real
from test_pcie_rules import H100_Q, aer, findings_for, h100_q, one

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.domain.findings import Finding
from hyperpod_perf.parse.pcie import parse_gpu_pcie
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.gpu import check_pcie_replay
from hyperpod_perf.rules.thresholds import Thresholds

NODE = "ip-10-1-2-3"
BUS = "00000000:00:09.0"
HANDOFF = "hyperpod-node-debugger § G"
REPLAY_THRESHOLD = "replays / uptime minutes > 8 (DCGM PCIe watch) or replay-number rollovers > 0 -> CONCERN"
AER_THRESHOLD = (
    "aer_dev_fatal TOTAL > 0 or aer_dev_nonfatal TOTAL > 0 -> CONCERN; correctable errors are reported, "
    "not judged"
)
NEXT_REPLAY = (
    "PCIe replays mean the GPU's link is retransmitting corrupted packets (a marginal riser, retimer or "
    "slot), which slows host<->GPU and GPUDirect traffic and often comes before a GPU falls off the bus. "
    "Re-read `nvidia-smi -q -d PCIE` a minute apart to get the rate, check `gpu.pcie_width` and the AER "
    "counters of the same link; drain the node and hand off (hyperpod-node-debugger § G)."
)
NEXT_AER = (
    "Uncorrectable PCIe errors on this device lost or corrupted transactions: look for the matching "
    "`AER:` lines in `dmesg` and an Xid on the same bus, then drain the node; a fatal error needs a "
    "reset or reboot, repeated errors a hardware replacement (hyperpod-node-debugger § G)."
)


def dumped(finding: Finding) -> dict[str, Any]:
    return finding.model_dump(mode="json")


def replay(
    text: str, rc: int = 0, *, uptime_s: int | str | None = 600, thresholds: Thresholds | None = None
) -> Finding:
    """The single gpu.pcie_replay finding for a gpu-pcie section (uptime given as meta's raw value)."""
    findings = replays(text, rc, uptime_s=uptime_s, thresholds=thresholds)
    (finding,) = findings
    return finding


def replays(
    text: str,
    rc: int = 0,
    *,
    uptime_s: int | str | None = 600,
    thresholds: Thresholds | None = None,
    gpu_by_bus: dict[str, int] | None = None,
) -> list[Finding]:
    meta = f"hostname={NODE}\ninstance_type=ml.p5.4xlarge\n"
    if uptime_s is not None:
        meta += f"uptime_s={uptime_s}\n"
    sections = [("meta", meta, 0), ("gpu-pcie", text, rc)]
    ctx = NodeContext(
        parse_container(render_container(sections), "node.txt"),
        **({"thresholds": thresholds} if thresholds else {}),
    )
    return check_pcie_replay(ctx, ctx.section("gpu-pcie", parse_gpu_pcie), gpu_by_bus or {})


def two_gpus(first: str, second: str) -> str:
    """Two GPUs in one report: the real capture twice, the second under bus 00000000:00:0A.0."""
    return first + second.replace(f"GPU {BUS}", "GPU 00000000:00:0A.0")


def concern_replay(
    summary: str, evidence: dict[str, Any], threshold: str = REPLAY_THRESHOLD
) -> dict[str, Any]:
    return {
        "node": NODE,
        "check": "gpu.pcie_replay",
        "severity": "CONCERN",
        "section": "G",
        "summary": summary,
        "evidence": evidence,
        "threshold": threshold,
        "next_step": NEXT_REPLAY,
        "handoff": HANDOFF,
    }


def judged_replay(severity: str, summary: str, evidence: dict[str, Any]) -> dict[str, Any]:
    return {
        "node": NODE,
        "check": "gpu.pcie_replay",
        "severity": severity,
        "section": "G",
        "summary": summary,
        "evidence": evidence,
        "threshold": REPLAY_THRESHOLD,
        "next_step": None,
        "handoff": HANDOFF,
    }


# ------------------------------------------------------------------------------------ gpu.pcie_replay


def test_rate_concern_field_by_field_just_outside_the_limit() -> None:
    # Given 81 replays in 10 minutes: 8.1 per minute, just above DCGM's 8
    finding = replay(h100_q("81"))
    # Then one CONCERN naming the bus, the count, the minutes and the average rate
    assert dumped(finding) == concern_replay(
        f"PCI {BUS}: 81 PCIe replays in 10 min of uptime, 8.1/min on average (> 8/min, DCGM's PCIe limit)",
        {
            "gpu": None,
            "bus_id": BUS,
            "replays_since_reset": 81,
            "replay_number_rollovers": 0,
            "uptime_minutes": 10.0,
            "replays_per_minute_since_boot": 8.1,
        },
    )


def test_rate_uses_minutes_of_sixty_seconds_and_rounds_the_evidence() -> None:
    # Given 1000 replays in 7 minutes 7 seconds (427 s = 7.1166... min): 140.515... per minute
    finding = replay(h100_q("1000"), uptime_s=427)
    assert finding.severity.value == "CONCERN"
    assert finding.evidence["uptime_minutes"] == 7.1
    assert finding.evidence["replays_per_minute_since_boot"] == 140.515
    # The summary rounds minutes to whole ones and the rate to one decimal
    assert finding.summary == (
        f"PCI {BUS}: 1000 PCIe replays in 7 min of uptime, 140.5/min on average (> 8/min, DCGM's PCIe limit)"
    )


def test_rate_limit_holds_on_a_fractional_uptime() -> None:
    # Given 30 s of uptime (half a minute): 4 replays is 8.0/min (at the limit), 5 is 10.0/min (outside)
    at_limit = replay(h100_q("4"), uptime_s=30)
    outside = replay(h100_q("5"), uptime_s=30)
    assert dumped(at_limit) == judged_replay(
        "OK",
        "1 GPU(s), replays on 1 (below 8/min since boot), no replay rollover",
        {"gpus": 1, "counters": {BUS: {"replays": 4, "rollovers": 0}}, "uptime_minutes": 0.5},
    )
    assert outside.severity.value == "CONCERN"
    assert outside.evidence["replays_per_minute_since_boot"] == 10.0
    assert outside.evidence["uptime_minutes"] == 0.5
    assert outside.summary.startswith(f"PCI {BUS}: 5 PCIe replays in 0 min of uptime, 10.0/min on average")


def test_rollover_concern_field_by_field_and_it_wins_over_the_rate() -> None:
    # Given one rollover and 9 replays (0.9/min): the rollover alone is the fault
    assert dumped(replay(h100_q(rollovers="1"))) == concern_replay(
        f"PCI {BUS}: 1 PCIe replay-number rollover(s) (> 0): the link retrained after repeated failed "
        "replays",
        {
            "gpu": None,
            "bus_id": BUS,
            "replays_since_reset": 9,
            "replay_number_rollovers": 1,
            "uptime_minutes": 10.0,
            "replays_per_minute_since_boot": 0.9,
        },
    )
    # And with the rate above the limit as well, one finding: the rollover's (the stronger sign)
    both = replay(h100_q("500", rollovers="2"))
    assert both.summary.startswith(f"PCI {BUS}: 2 PCIe replay-number rollover(s) (> 0)")
    assert both.evidence["replays_per_minute_since_boot"] == 50.0


def test_rollover_without_a_replay_count_is_judged() -> None:
    # Given `Replays Since Reset : N/A` and 1 rollover, uptime known
    finding = replay(h100_q("N/A", "1"))
    assert finding.severity.value == "CONCERN"
    assert finding.evidence == {
        "gpu": None,
        "bus_id": BUS,
        "replays_since_reset": None,
        "replay_number_rollovers": 1,
        "uptime_minutes": 10.0,
        "replays_per_minute_since_boot": None,
    }


def test_replays_without_a_rollover_count_are_judged_on_the_rate() -> None:
    # Given `Replay Number Rollovers : N/A` and 81 replays in 10 minutes
    finding = replay(h100_q("81", "N/A"))
    assert finding.severity.value == "CONCERN"
    assert finding.evidence["replay_number_rollovers"] is None
    assert finding.evidence["replays_per_minute_since_boot"] == 8.1
    # And 80 (at the limit) is OK, the GPU counted with its readable counter only
    assert dumped(replay(h100_q("80", "N/A"))) == judged_replay(
        "OK",
        "1 GPU(s), replays on 1 (below 8/min since boot), no replay rollover",
        {"gpus": 1, "counters": {BUS: {"replays": 80, "rollovers": None}}, "uptime_minutes": 10.0},
    )


def test_a_gpu_with_only_the_rollover_counter_readable_is_counted() -> None:
    # Given replays N/A and rollovers 0 (readable, inside the limit) with the uptime known
    assert dumped(replay(h100_q("N/A", "0"))) == judged_replay(
        "OK",
        "1 GPU(s), no replays, no replay rollover",
        {"gpus": 1, "counters": {BUS: {"replays": None, "rollovers": 0}}, "uptime_minutes": 10.0},
    )


def test_ok_without_replays_field_by_field() -> None:
    assert dumped(replay(h100_q("0"))) == judged_replay(
        "OK",
        "1 GPU(s), no replays, no replay rollover",
        {"gpus": 1, "counters": {BUS: {"replays": 0, "rollovers": 0}}, "uptime_minutes": 10.0},
    )


def test_ok_with_replays_below_the_rate_and_a_failed_rc_noted() -> None:
    # Given the real capture (9 replays) on a node up 625429 s, nvidia-smi exiting 1 after printing it
    assert dumped(replay(real(H100_Q), 1, uptime_s=625_429)) == judged_replay(
        "OK",
        "1 GPU(s), replays on 1 (below 8/min since boot), no replay rollover",
        {
            "gpus": 1,
            "counters": {BUS: {"replays": 9, "rollovers": 0}},
            "uptime_minutes": 10423.8,
            "section_rc": 1,
        },
    )


@pytest.mark.parametrize("uptime", [None, "0", "-5", "abc", "", "inf", "1e400", "nan"])
def test_replays_with_uptime_missing_zero_negative_or_unreadable_are_info(uptime: str | None) -> None:
    # Given replays on the GPU and no usable uptime: the rate cannot be known
    assert dumped(replay(h100_q("500"), uptime_s=uptime)) == judged_replay(
        "INFO",
        "1 of 1 GPU(s) show PCIe replays, uptime unknown: the rate cannot be judged",
        {"gpus": 1, "counters": {BUS: {"replays": 500, "rollovers": 0}}, "uptime_minutes": None},
    )


def test_no_replays_without_uptime_is_ok_with_no_minutes() -> None:
    assert dumped(replay(h100_q("0"), uptime_s="0")) == judged_replay(
        "OK",
        "1 GPU(s), no replays, no replay rollover",
        {"gpus": 1, "counters": {BUS: {"replays": 0, "rollovers": 0}}, "uptime_minutes": None},
    )


def test_uptime_of_one_second_is_used() -> None:
    # Given 1 s of uptime (1/60 min): a single replay is 60/min, above the limit
    finding = replay(h100_q("1"), uptime_s=1)
    assert finding.severity.value == "CONCERN"
    assert finding.evidence["uptime_minutes"] == 0.0  # rounded to one decimal for the evidence
    assert finding.evidence["replays_per_minute_since_boot"] == 60.0


def test_two_gpus_one_outside_only_it_is_reported_and_named_by_index() -> None:
    # Given two GPUs, the first inside (9 replays) and the second at 200 replays in 10 minutes
    text = two_gpus(h100_q("9"), h100_q("200"))
    findings = replays(text, gpu_by_bus={"0000:00:09": 0, "0000:00:0a": 1})
    # Then exactly one CONCERN, for GPU 1, named by its index and bus id
    assert [dumped(f) for f in findings] == [
        concern_replay(
            "GPU 1 (PCI 00000000:00:0A.0): 200 PCIe replays in 10 min of uptime, 20.0/min on average "
            "(> 8/min, DCGM's PCIe limit)",
            {
                "gpu": 1,
                "bus_id": "00000000:00:0A.0",
                "replays_since_reset": 200,
                "replay_number_rollovers": 0,
                "uptime_minutes": 10.0,
                "replays_per_minute_since_boot": 20.0,
            },
        )
    ]


def test_two_gpus_both_outside_give_two_findings() -> None:
    findings = replays(two_gpus(h100_q("100"), h100_q(rollovers="1")), gpu_by_bus={"0000:00:09": 0})
    assert [(f.severity.value, f.evidence["gpu"], f.evidence["bus_id"]) for f in findings] == [
        ("CONCERN", 0, BUS),
        ("CONCERN", None, "00000000:00:0A.0"),
    ]
    assert findings[0].summary.startswith(f"GPU 0 (PCI {BUS}): 100 PCIe replays")
    assert findings[1].summary.startswith("PCI 00000000:00:0A.0: 1 PCIe replay-number rollover(s)")


def test_two_gpus_ok_counts_only_the_replaying_ones() -> None:
    # Given two GPUs inside the limit, only the second one replaying
    finding = replay(two_gpus(h100_q("0"), h100_q("7")))
    assert dumped(finding) == judged_replay(
        "OK",
        "2 GPU(s), replays on 1 (below 8/min since boot), no replay rollover",
        {
            "gpus": 2,
            "counters": {
                BUS: {"replays": 0, "rollovers": 0},
                "00000000:00:0A.0": {"replays": 7, "rollovers": 0},
            },
            "uptime_minutes": 10.0,
        },
    )
    # And without uptime, the INFO counts the replaying GPUs among the read ones
    unknown = replay(two_gpus(h100_q("0"), h100_q("7")), uptime_s=None)
    assert unknown.summary == "1 of 2 GPU(s) show PCIe replays, uptime unknown: the rate cannot be judged"
    assert unknown.evidence["gpus"] == 2


def test_unread_gpu_is_left_out_of_the_counts() -> None:
    # Given two GPUs, the first with both counters N/A: only the second is judged and counted
    finding = replay(two_gpus(h100_q("N/A", "N/A"), h100_q("3")))
    assert dumped(finding) == judged_replay(
        "OK",
        "1 GPU(s), replays on 1 (below 8/min since boot), no replay rollover",
        {"gpus": 1, "counters": {"00000000:00:0A.0": {"replays": 3, "rollovers": 0}}, "uptime_minutes": 10.0},
    )


def test_counters_na_and_no_gpu_listed_are_info_field_by_field() -> None:
    na = {
        "node": NODE,
        "check": "gpu.pcie_replay",
        "severity": "INFO",
        "section": "G",
        "summary": "1 GPU(s), replay counters N/A: not present",
        "evidence": {"gpus": 1},
        "threshold": REPLAY_THRESHOLD,
        "next_step": None,
        "handoff": None,
    }
    assert dumped(replay(h100_q("N/A", "N/A"))) == na
    empty = "==============NVSMI LOG==============\n\nAttached GPUs                          : 0\n"
    assert dumped(replay(empty)) == {
        **na,
        "summary": "no GPU listed by nvidia-smi -q: not present",
        "evidence": {"gpus": 0},
    }


def test_overridden_limits_appear_in_the_threshold_and_summary() -> None:
    # Given a rate limit of 12.5/min and 2 rollovers allowed
    limits = Thresholds(gpu_pcie_replays_per_minute=12.5, gpu_pcie_replay_rollovers_max=2)
    threshold = "replays / uptime minutes > 12.5 (DCGM PCIe watch) or replay-number rollovers > 2 -> CONCERN"
    # 126 replays in 10 min (12.6/min) is outside, 125 (12.5/min) at the limit
    outside = replay(h100_q("126", "2"), thresholds=limits)
    assert (outside.threshold, outside.severity.value) == (threshold, "CONCERN")
    assert outside.summary == (
        f"PCI {BUS}: 126 PCIe replays in 10 min of uptime, 12.6/min on average (> 12.5/min, "
        "DCGM's PCIe limit)"
    )
    at_limit = replay(h100_q("125", "2"), thresholds=limits)
    assert (at_limit.severity.value, at_limit.threshold) == ("OK", threshold)
    assert at_limit.summary == "1 GPU(s), replays on 1 (below 12.5/min since boot), no replay rollover"
    rolled = replay(h100_q("0", "3"), thresholds=limits)
    assert rolled.summary == (
        f"PCI {BUS}: 3 PCIe replay-number rollover(s) (> 2): the link retrained after repeated failed replays"
    )


def test_absent_and_timed_out_sections_field_by_field() -> None:
    findings, _ = findings_for(None)
    assert dumped(one(findings, "gpu.pcie_replay")) == {
        "node": NODE,
        "check": "gpu.pcie_replay",
        "severity": "INFO",
        "section": "G",
        "summary": "GPU PCIe replay counters: not present (section not in snapshot)",
        "evidence": {"section": "gpu-pcie", "state": "absent", "rc": None},
        "threshold": None,
        "next_step": None,
        "handoff": None,
    }
    findings, _ = findings_for(("", 124), ("", 124))
    timed_out = dumped(one(findings, "gpu.pcie_replay"))
    assert (timed_out["severity"], timed_out["summary"], timed_out["evidence"], timed_out["handoff"]) == (
        "INFO",
        "GPU PCIe replay counters: not evaluated, the command timed out (rc=124)",
        {"section": "gpu-pcie", "state": "timeout", "rc": 124},
        HANDOFF,
    )
    aer_timed_out = dumped(one(findings, "host.pcie_aer"))
    assert (aer_timed_out["summary"], aer_timed_out["evidence"]) == (
        "PCIe AER counters: not evaluated, the command timed out (rc=124)",
        {"section": "pcie-aer", "state": "timeout", "rc": 124},
    )


# -------------------------------------------------------------------------------------- host.pcie_aer


def aer_finding(text: str, rc: int = 0, thresholds: Thresholds | None = None) -> list[Finding]:
    findings, _ = findings_for(pcie_aer=(text, rc), **({"thresholds": thresholds} if thresholds else {}))
    return [f for f in findings if f.check == "host.pcie_aer"]


def judged_aer(severity: str, summary: str, evidence: dict[str, Any], handoff: str | None = HANDOFF) -> dict:
    return {
        "node": NODE,
        "check": "host.pcie_aer",
        "severity": severity,
        "section": "G",
        "summary": summary,
        "evidence": evidence,
        "threshold": AER_THRESHOLD,
        "next_step": None,
        "handoff": handoff,
    }


def test_aer_concern_field_by_field() -> None:
    # Given 2 fatal, 3 non-fatal and 7 correctable (Receiver Error) on a GPU
    (finding,) = aer_finding(aer(2, 3, 7))
    assert dumped(finding) == {
        "node": NODE,
        "check": "host.pcie_aer",
        "severity": "CONCERN",
        "section": "G",
        "summary": "GPU PCI 0000:00:09.0: 2 fatal and 3 non-fatal uncorrectable PCIe error(s) counted by the "
        "kernel (AER)",
        "evidence": {
            "bdf": "0000:00:09.0",
            "kind": "gpu",
            "vendor": "0x10de",
            "device": "0x2330",
            "fatal": 2,
            "nonfatal": 3,
            "correctable": 7,
            "errors": {"correctable": {"Receiver Error": 7}},
        },
        "threshold": AER_THRESHOLD,
        "next_step": NEXT_AER,
        "handoff": HANDOFF,
    }


def test_aer_concern_names_the_uncorrectable_errors_and_drops_zero_counts() -> None:
    # Given the sample with one named non-fatal error set (Completion Timeout 4) and no correctable
    text = aer(0, 4, 0).replace("Completion Timeout 0", "Completion Timeout 4", 2)
    (finding,) = aer_finding(text)
    # The first `Completion Timeout` line belongs to aer_dev_fatal: its TOTAL stays 0, yet the named
    # count of 4 is never reported as less (the TOTAL counts messages, not errors)
    assert finding.evidence["fatal"] == 4
    assert finding.evidence["nonfatal"] == 4
    assert finding.evidence["correctable"] == 0
    assert finding.evidence["errors"] == {
        "fatal": {"Completion Timeout": 4},
        "nonfatal": {"Completion Timeout": 4},
    }
    assert finding.summary.startswith("GPU PCI 0000:00:09.0: 4 fatal and 4 non-fatal ")


def test_aer_ok_without_and_with_correctable_errors_field_by_field() -> None:
    (clean,) = aer_finding(aer(0, 0, 0))
    assert dumped(clean) == judged_aer(
        "OK",
        "1 of 1 device(s) readable, no uncorrectable PCIe error",
        {"devices": 1, "readable": 1, "not_readable": [], "correctable_by_device": {}},
    )
    # A damaged line is skipped and counted in the evidence
    (corrected,) = aer_finding(aer(0, 0, 4) + "garbage line\n")
    assert dumped(corrected) == judged_aer(
        "OK",
        "1 of 1 device(s) readable, no uncorrectable PCIe error; correctable errors on 1 (corrected by the "
        "link, no action)",
        {
            "devices": 1,
            "readable": 1,
            "not_readable": [],
            "skipped_lines": 1,
            "correctable_by_device": {"0000:00:09.0": 4},
        },
    )


def test_aer_ok_with_an_unexposed_device_and_a_failed_rc() -> None:
    text = "== 0000:4f:00.0 vendor=0x1d0f device=0xefa2 class=0x020000\n" + aer(0, 0, 2)
    (finding,) = aer_finding(text, rc=1)
    assert dumped(finding) == judged_aer(
        "OK",
        "1 of 2 device(s) readable, no uncorrectable PCIe error; correctable errors on 1 (corrected by the "
        "link, no action)",
        {
            "devices": 2,
            "readable": 1,
            "not_readable": ["0000:4f:00.0"],
            "section_rc": 1,
            "correctable_by_device": {"0000:00:09.0": 2},
        },
    )


def test_aer_not_readable_and_no_device_field_by_field() -> None:
    (unexposed,) = aer_finding("== 0000:53:00.0 vendor=0x10de device=0x2330 class=0x030200\n")
    assert dumped(unexposed) == judged_aer(
        "INFO",
        "1 NVIDIA/EFA device(s), AER counters not readable (not exposed by the kernel): not present",
        {"devices": 1, "readable": 0, "not_readable": ["0000:53:00.0"]},
        handoff=None,
    )
    (none,) = aer_finding("")
    assert dumped(none) == judged_aer(
        "INFO", "no NVIDIA or EFA PCI device listed: not present", {"devices": 0}, handoff=None
    )


def test_aer_two_devices_only_the_faulty_one_reported_with_its_kind() -> None:
    # Given a clean GPU and an EFA device with 1 non-fatal error
    efa = aer(0, 1, 0, vendor="0x1d0f", pci_class="0x020000").replace("0000:00:09.0", "0000:4f:00.0")
    (finding,) = aer_finding(aer(0, 0, 2) + efa)
    assert finding.summary == (
        "EFA PCI 0000:4f:00.0: 0 fatal and 1 non-fatal uncorrectable PCIe error(s) counted by the "
        "kernel (AER)"
    )
    assert (finding.evidence["bdf"], finding.evidence["kind"], finding.evidence["vendor"]) == (
        "0000:4f:00.0",
        "efa",
        "0x1d0f",
    )
    assert finding.evidence["errors"] == {}
    # And both faulty -> two findings, in section order
    both = aer_finding(aer(1, 0, 0) + efa)
    assert [(f.evidence["bdf"], f.evidence["fatal"], f.evidence["nonfatal"]) for f in both] == [
        ("0000:00:09.0", 1, 0),
        ("0000:4f:00.0", 0, 1),
    ]


@pytest.mark.parametrize(
    ("fatal", "nonfatal", "severity"),
    [
        (2, 3, "OK"),  # both at their overridden limits
        (3, 3, "CONCERN"),  # fatal just outside
        (2, 4, "CONCERN"),  # non-fatal just outside
        (1, 2, "OK"),  # both inside
    ],
)
def test_aer_overridden_limits_boundary_and_threshold_text(fatal: int, nonfatal: int, severity: str) -> None:
    limits = Thresholds(pcie_aer_fatal_max=2, pcie_aer_nonfatal_max=3)
    (finding,) = aer_finding(aer(fatal, nonfatal, 0), thresholds=limits)
    assert finding.severity.value == severity
    assert finding.threshold == (
        "aer_dev_fatal TOTAL > 2 or aer_dev_nonfatal TOTAL > 3 -> CONCERN; correctable errors are reported, "
        "not judged"
    )
