"""gpu.pcie_replay and host.pcie_aer: the boundary table of their four thresholds (at the limit, just
inside, just outside, overridden) and what absent / unreadable / damaged input gives.

Inputs are real: the 1x H100 `nvidia-smi -q` capture (9 replays) with its replay line edited, and the
kernel ABI document's sample aer_dev_* contents with their TOTAL lines edited; the uptime in `meta`
is chosen so the DCGM rate limit (8 replays per minute) falls on a whole replay count.
"""

from __future__ import annotations

import re

import pytest
from test_gpu_rules import kernel_doc_aer_section, real

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.rules import gpu
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

OK, CONCERN, INFO = Severity.OK, Severity.CONCERN, Severity.INFO
T = Thresholds
H100_Q = "gpu-pcie/h100-80gb-hbm3_590.48.01_idle_q_replays-9.txt"
TEN_MINUTES_S = 600


def h100_q(replays: str = "9", rollovers: str = "0") -> str:
    text = re.sub(r"(Replays Since Reset\s+: )9", rf"\g<1>{replays}", real(H100_Q))
    return re.sub(r"(Replay Number Rollovers\s+: )0", rf"\g<1>{rollovers}", text)


def aer(fatal: int = 0, nonfatal: int = 0, correctable: int = 2, **header: str) -> str:
    text = kernel_doc_aer_section("0000:00:09.0", **header)
    text = text.replace("TOTAL_ERR_FATAL 0", f"TOTAL_ERR_FATAL {fatal}")
    text = text.replace("TOTAL_ERR_NONFATAL 0", f"TOTAL_ERR_NONFATAL {nonfatal}")
    return text.replace("Receiver Error 2", f"Receiver Error {correctable}").replace(
        "TOTAL_ERR_COR 2", f"TOTAL_ERR_COR {correctable}"
    )


def findings_for(
    gpu_pcie: tuple[str, int] | None = None,
    pcie_aer: tuple[str, int] | None = None,
    *,
    uptime_s: int | None = TEN_MINUTES_S,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> tuple[list[Finding], NodeContext]:
    meta = "hostname=ip-10-1-2-3\ninstance_type=ml.p5.4xlarge\n"
    if uptime_s is not None:
        meta += f"uptime_s={uptime_s}\n"
    sections = [("meta", meta, 0)]
    if gpu_pcie is not None:
        sections.append(("gpu-pcie", *gpu_pcie))
    if pcie_aer is not None:
        sections.append(("pcie-aer", *pcie_aer))
    ctx = NodeContext(parse_container(render_container(sections), "node.txt"), thresholds=thresholds)
    found = [f for f in gpu.evaluate(ctx) if f.check in ("gpu.pcie_replay", "host.pcie_aer")]
    return found, ctx


def one(findings: list[Finding], check: str) -> Finding:
    (finding,) = [f for f in findings if f.check == check]
    return finding


# ------------------------------------------------------------------------------------ gpu.pcie_replay


@pytest.mark.parametrize(
    ("replays", "thresholds", "severity"),
    [
        (80, T(), OK),  # at the limit: 8.0 per minute is not above DCGM's 8
        (79, T(), OK),  # just inside
        (81, T(), CONCERN),  # just outside: 8.1 per minute
        (81, T(gpu_pcie_replays_per_minute=10), OK),  # overridden: inside the new limit
        (100, T(gpu_pcie_replays_per_minute=10), OK),  # overridden: at the new limit
        (101, T(gpu_pcie_replays_per_minute=10), CONCERN),  # overridden: just outside
    ],
)
def test_replay_rate_boundary(replays: int, thresholds: Thresholds, severity: Severity) -> None:
    # Given the real H100 report with N replays on a node up for exactly ten minutes
    findings, _ = findings_for((h100_q(str(replays)), 0), thresholds=thresholds)
    finding = one(findings, "gpu.pcie_replay")
    # Then the severity follows replays / 10 against the per-minute limit
    assert finding.severity is severity
    if severity is CONCERN:
        assert finding.evidence["replays_since_reset"] == replays
        assert finding.evidence["replays_per_minute_since_boot"] == replays / 10
        assert finding.evidence["uptime_minutes"] == 10.0
        assert finding.summary.startswith("PCI 00000000:00:09.0: ")  # no gpu-query row to name it
        assert (finding.section, finding.handoff) == (RunbookSection.GPU, Handoff.NODE_G.value)
        assert "nvidia-smi -q -d PCIE" in finding.next_step
    else:
        assert finding.evidence["counters"]["00000000:00:09.0"] == {"replays": replays, "rollovers": 0}


@pytest.mark.parametrize(
    ("rollovers", "thresholds", "severity"),
    [
        (0, T(), OK),  # at the limit (0 allowed)
        (1, T(), CONCERN),  # just outside: the link retrained once
        (1, T(gpu_pcie_replay_rollovers_max=1), OK),  # overridden: at the new limit
        (2, T(gpu_pcie_replay_rollovers_max=1), CONCERN),  # overridden: just outside
    ],
)
def test_replay_rollover_boundary(rollovers: int, thresholds: Thresholds, severity: Severity) -> None:
    # Given the real report's 9 replays (0.9/min: inside the rate) and N replay-number rollovers
    findings, _ = findings_for((h100_q(rollovers=str(rollovers)), 0), thresholds=thresholds)
    finding = one(findings, "gpu.pcie_replay")
    assert finding.severity is severity
    if severity is CONCERN:
        assert "rollover" in finding.summary
        assert finding.evidence["replay_number_rollovers"] == rollovers


def test_real_report_on_a_week_old_node_is_ok_with_the_count_shown() -> None:
    # Given the unedited capture (9 replays) on a node up ~7.2 days
    findings, _ = findings_for((real(H100_Q), 0), uptime_s=625_429)
    finding = one(findings, "gpu.pcie_replay")
    assert finding.severity is OK
    assert finding.summary == "1 GPU(s), replays on 1 (below 8/min since boot), no replay rollover"
    assert finding.evidence["uptime_minutes"] == 10423.8


def test_replays_without_uptime_are_info_and_zero_replays_without_uptime_are_ok() -> None:
    findings, _ = findings_for((real(H100_Q), 0), uptime_s=None)
    assert one(findings, "gpu.pcie_replay").severity is INFO
    assert "uptime unknown" in one(findings, "gpu.pcie_replay").summary
    findings, _ = findings_for((h100_q("0"), 0), uptime_s=None)
    assert one(findings, "gpu.pcie_replay").severity is OK


def test_rollover_is_judged_even_without_uptime() -> None:
    findings, _ = findings_for((h100_q(rollovers="3"), 0), uptime_s=None)
    assert one(findings, "gpu.pcie_replay").severity is CONCERN


def test_replay_section_absent_timed_out_or_unparsable() -> None:
    # Absent (older collector) -> INFO, never a CONCERN
    findings, ctx = findings_for(None)
    assert one(findings, "gpu.pcie_replay").severity is INFO
    assert ctx.collection_findings == []
    # A hung nvidia-smi -> INFO here plus one collect.node naming the section
    findings, ctx = findings_for(("", 124))
    assert one(findings, "gpu.pcie_replay").severity is INFO
    assert [f.evidence["section"] for f in ctx.collection_findings] == ["gpu-pcie"]
    # nvidia-smi failing with a message -> collect.node, and this check stays silent
    failed = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    findings, ctx = findings_for((failed, 9))
    assert [f.check for f in findings] == ["host.pcie_aer"]
    assert [f.evidence["section"] for f in ctx.collection_findings] == ["gpu-pcie"]


def test_counters_na_on_every_gpu_is_info() -> None:
    findings, _ = findings_for((h100_q("N/A", "N/A"), 0))
    finding = one(findings, "gpu.pcie_replay")
    assert (finding.severity, finding.summary) == (INFO, "1 GPU(s), replay counters N/A: not present")


# -------------------------------------------------------------------------------------- host.pcie_aer


@pytest.mark.parametrize(
    ("fatal", "nonfatal", "thresholds", "severity"),
    [
        (0, 0, T(), OK),  # at both limits
        (1, 0, T(), CONCERN),  # fatal just outside
        (0, 1, T(), CONCERN),  # non-fatal just outside
        (1, 0, T(pcie_aer_fatal_max=1), OK),  # overridden: at the new fatal limit
        (2, 0, T(pcie_aer_fatal_max=1), CONCERN),  # overridden: just outside
        (0, 1, T(pcie_aer_nonfatal_max=1), OK),  # overridden: at the new non-fatal limit
        (0, 2, T(pcie_aer_nonfatal_max=1), CONCERN),  # overridden: just outside
        (0, 1, T(pcie_aer_fatal_max=5), CONCERN),  # one limit raised does not relax the other
    ],
)
def test_aer_uncorrectable_boundary(
    fatal: int, nonfatal: int, thresholds: Thresholds, severity: Severity
) -> None:
    findings, _ = findings_for(pcie_aer=(aer(fatal, nonfatal), 0), thresholds=thresholds)
    finding = one(findings, "host.pcie_aer")
    assert finding.severity is severity
    if severity is CONCERN:
        assert (finding.evidence["fatal"], finding.evidence["nonfatal"]) == (fatal, nonfatal)
        assert finding.evidence["bdf"] == "0000:00:09.0"
        assert finding.summary.startswith("GPU PCI 0000:00:09.0: ")
        assert "dmesg" in finding.next_step


def test_correctable_errors_alone_are_ok_and_reported() -> None:
    # Given the kernel's sample unchanged: 2 correctable (Receiver Error), nothing uncorrectable
    findings, _ = findings_for(pcie_aer=(aer(correctable=100_000), 0))
    finding = one(findings, "host.pcie_aer")
    assert finding.severity is OK
    assert finding.evidence["correctable_by_device"] == {"0000:00:09.0": 100_000}
    assert "correctable errors on 1" in finding.summary


def test_efa_device_is_named_as_efa() -> None:
    findings, _ = findings_for(pcie_aer=(aer(fatal=1, vendor="0x1d0f", pci_class="0x020000"), 0))
    finding = one(findings, "host.pcie_aer")
    assert (finding.severity, finding.evidence["kind"]) == (CONCERN, "efa")


def test_aer_not_exposed_no_devices_or_absent_are_info() -> None:
    headers_only = "== 0000:53:00.0 vendor=0x10de device=0x2330 class=0x030200\n"
    for section in ((headers_only, 0), ("", 0), None):
        findings, ctx = findings_for(pcie_aer=section)
        assert one(findings, "host.pcie_aer").severity is INFO
        assert ctx.collection_findings == []
    findings, _ = findings_for(pcie_aer=(headers_only, 0))
    assert one(findings, "host.pcie_aer").evidence["not_readable"] == ["0000:53:00.0"]


def test_one_readable_device_among_unexposed_ones_is_still_judged() -> None:
    text = "== 0000:4f:00.0 vendor=0x1d0f device=0xefa2 class=0x020000\n" + aer(nonfatal=3)
    findings, _ = findings_for(pcie_aer=(text, 0))
    assert one(findings, "host.pcie_aer").severity is CONCERN


def test_concern_names_the_gpu_index_from_gpu_query() -> None:
    # Given the real H100 gpu-query row and -q report of the same GPU (PCI 00000000:00:09.0)
    meta = f"hostname=ip-10-1-2-3\ninstance_type=ml.p5.4xlarge\nuptime_s={TEN_MINUTES_S}\n"
    sections = [
        ("meta", meta, 0),
        ("gpu-query", real("gpu-query/h100-80gb-hbm3_590.48.01_load_allfields.txt"), 0),
        ("gpu-pcie", h100_q("200"), 0),
    ]
    ctx = NodeContext(parse_container(render_container(sections), "node.txt"))
    finding = one(gpu.evaluate(ctx), "gpu.pcie_replay")
    # Then the CONCERN names GPU 0 by its index as well as its bus id
    assert finding.severity is CONCERN
    assert finding.summary.startswith("GPU 0 (PCI 00000000:00:09.0): 200 PCIe replays in 10 min of uptime")
    assert finding.evidence["gpu"] == 0
