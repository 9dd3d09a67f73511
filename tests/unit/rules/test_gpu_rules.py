"""GPU-family rules on snapshots built from real outputs, with single values edited to plant faults."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.parse.nvidia_smi import canonical_field
from hyperpod_perf.rules import gpu
from hyperpod_perf.rules.context import NodeContext

REAL = Path(__file__).parents[2] / "fixtures" / "real"
H100_LOAD = "gpu-query/h100-80gb-hbm3_590.48.01_load_allfields.txt"
H100_IDLE = "gpu-query/h100-80gb-hbm3_590.48.01_idle_allfields.txt"
GPU_CHECKS = (
    "gpu.temperature",
    "gpu.pcie_width",
    "gpu.thermal_throttle",
    "gpu.ecc_uncorrected",
    "gpu.remapped_rows",
    "gpu.count",
    "gpu.xid",
    "gpu.nvlink_inactive",
    "gpu.nvlink_errors",
    "gpu.topology",
    "host.fabric_manager",
    "host.oom",
    "gpu.pcie_replay",
    "host.pcie_aer",
)


def real(path: str) -> str:
    return (REAL / path).read_text(encoding="utf-8")


def with_values(text: str, **changes: str) -> str:
    """A header-named gpu-query CSV with some fields replaced in every row (keys: `_` for `.`)."""
    lines = text.splitlines()
    header = [canonical_field(cell) for cell in next(csv.reader([lines[0]], skipinitialspace=True))]
    out = io.StringIO()
    out.write(lines[0] + "\n")
    for line in lines[1:]:
        cells = next(csv.reader([line], skipinitialspace=True))
        for key, value in changes.items():
            cells[header.index(key.replace("__", "."))] = value
        out.write(", ".join(cells) + "\n")
    return out.getvalue()


def kernel_doc_aer_section(bdf: str, vendor: str = "0x10de", pci_class: str = "0x030200") -> str:
    """A pcie-aer section: the kernel ABI document's sample aer_dev_* contents (real, 4.19 names)
    under the collector's device header (the header is ours, the counter lines are the sample's)."""
    lines = [f"== {bdf} vendor={vendor} device=0x2330 class={pci_class}"]
    for line in real("pcie-aer/kernel-abi-doc_aer_dev_samples_4.19-names.txt").splitlines():
        lines.append(f"-- {line.rsplit(' ', 1)[-1]}" if line.startswith("localhost ") else line)
    return "\n".join(lines) + "\n"


def healthy_sections(instance_type: str = "ml.p5.4xlarge") -> dict[str, tuple[str, int]]:
    """A clean node from the real 1x H100 captures (hence p5.4xlarge, AWS's 1x H100 size)."""
    return {
        "meta": (f"hostname=ip-10-1-2-3\ninstance_type={instance_type}\nuptime_s=625429\n", 0),
        "gpu-query": (real(H100_LOAD), 0),
        "gpu-topo": (real("gpu-topo/h100-1gpu-vm_590.48.01_ansi.txt"), 0),
        "nvlink-status": (real("nvlink-status/h100-80gb-hbm3_590.48.01_nvlink-s.txt"), 0),
        "nvlink-errors": (real("nvlink-status/h100_nvlink-e_error-counters_elided_stas00.txt"), 0),
        "xid": ("", 1),  # grep found nothing
        "fabric-manager": ("active\n", 0),
        "oom": ("", 1),
        "gpu-pcie": (real("gpu-pcie/h100-80gb-hbm3_590.48.01_idle_q_replays-9.txt"), 0),
        "pcie-aer": (kernel_doc_aer_section("0000:00:09.0"), 0),
    }


def evaluate(sections: dict[str, tuple[str, int]]) -> tuple[list[Finding], NodeContext]:
    text = render_container([(name, body, rc) for name, (body, rc) in sections.items()])
    ctx = NodeContext(parse_container(text, "node.txt"))
    return gpu.evaluate(ctx), ctx


def by_check(findings: list[Finding], check: str) -> list[Finding]:
    return [f for f in findings if f.check == check]


def only(findings: list[Finding], check: str) -> Finding:
    (finding,) = by_check(findings, check)
    return finding


# ------------------------------------------------------------------------------------------ healthy / absent


def test_healthy_node_yields_one_ok_per_check_with_evidence() -> None:
    # Given a 1-GPU p5 node whose GPU, NVLink and kernel-log outputs are all clean
    findings, ctx = evaluate(healthy_sections())
    # Then every check that applies reports exactly once, OK (the fabric manager does not apply on
    # p5 and says nothing; a single GPU has no GPU pair for the topology check)
    assert [(f.check, f.severity) for f in findings] == [
        ("gpu.temperature", Severity.OK),
        ("gpu.pcie_width", Severity.OK),
        ("gpu.thermal_throttle", Severity.OK),
        ("gpu.ecc_uncorrected", Severity.OK),
        ("gpu.remapped_rows", Severity.OK),
        ("gpu.count", Severity.OK),
        ("gpu.xid", Severity.OK),
        ("gpu.nvlink_inactive", Severity.OK),
        ("gpu.nvlink_errors", Severity.OK),
        ("gpu.topology", Severity.INFO),
        ("host.oom", Severity.OK),
        ("gpu.pcie_replay", Severity.OK),  # 9 replays in ~7 days: far below 8 per minute
        ("host.pcie_aer", Severity.OK),  # 2 correctable errors only
    ]
    assert ctx.collection_findings == []
    assert all(f.node == "ip-10-1-2-3" for f in findings)
    # And each OK carries the values it checked
    assert only(findings, "gpu.temperature").summary == "1 GPU, max 59 C"
    assert only(findings, "gpu.temperature").evidence["temperatures_c"] == {"0": 59.0}
    assert only(findings, "gpu.pcie_width").evidence == {
        "gpus": 1,
        "widths": [16],
        "gens": [5],
        "gen_below_max_while_idle": [],
    }
    throttle = only(findings, "gpu.thermal_throttle")
    assert throttle.evidence == {"gpus": 1, "min_clock_ratio": 1.0, "active_reasons": []}
    assert only(findings, "gpu.ecc_uncorrected").evidence["uncorrected_aggregate_total"] == 0
    nvlink = only(findings, "gpu.nvlink_inactive")
    assert nvlink.summary == "1 GPU, 18 NVLink links all active (26.562 GB/s)"
    assert only(findings, "gpu.nvlink_errors").evidence == {
        "gpus": 1,
        "links": 3,
        "counters": ["CRC Errors", "Recovery Errors", "Replay Errors"],
    }
    # And sections / hand-offs follow the catalog
    for finding in findings:
        assert finding.threshold
        if finding.check == "host.oom":
            assert (finding.section, finding.handoff) == (RunbookSection.RESOURCES, Handoff.NODE_I.value)
        else:
            assert finding.section is RunbookSection.GPU
            if finding.severity is Severity.OK:
                assert finding.handoff == Handoff.NODE_G.value


def test_node_without_gpu_tools_yields_info_not_present_never_concern() -> None:
    # Given a CPU node: nvidia-smi missing (rc=127), no kernel-log sections at all
    sections = {
        "meta": ("hostname=cpu-1\ninstance_type=ml.m5.2xlarge\n", 0),
        "gpu-query": ("bash: nvidia-smi: command not found\n", 127),
        "gpu-topo": ("bash: nvidia-smi: command not found\n", 127),
        "nvlink-status": ("bash: nvidia-smi: command not found\n", 127),
        "nvlink-errors": ("bash: nvidia-smi: command not found\n", 127),
    }
    findings, ctx = evaluate(sections)
    # Then every check that applies is INFO (nothing to judge), and nothing is reported as a
    # collection failure; the fabric manager check does not apply to m5 and says nothing
    assert [f.check for f in findings] == [c for c in GPU_CHECKS if c != "host.fabric_manager"]
    assert {f.severity for f in findings} == {Severity.INFO}
    assert (
        only(findings, "gpu.temperature").summary
        == "GPU temperature: not present (tool not installed (rc=127))"
    )
    assert only(findings, "gpu.xid").evidence == {"section": "xid", "state": "absent", "rc": None}
    assert ctx.collection_findings == []


def test_unparsable_gpu_query_becomes_collect_node_and_its_checks_stay_silent() -> None:
    sections = healthy_sections()
    sections["gpu-query"] = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
        9,
    )
    findings, ctx = evaluate(sections)
    assert [f.check for f in findings] == [
        c for c in GPU_CHECKS[4:] if c not in ("host.fabric_manager", "gpu.remapped_rows", "gpu.count")
    ]
    (problem,) = ctx.collection_findings
    assert problem.check == "collect.node"
    assert problem.evidence["section"] == "gpu-query"
    assert "does not match the expected field list" in problem.evidence["reason"]


def test_hung_nvidia_smi_is_reported_once_and_checks_are_info() -> None:
    sections = healthy_sections()
    sections["gpu-query"] = ("", 124)
    findings, ctx = evaluate(sections)
    assert [(f.check, f.severity) for f in findings[:4]] == [
        (check, Severity.INFO) for check in GPU_CHECKS[:4]
    ]
    assert "timed out (rc=124)" in findings[0].summary
    (problem,) = ctx.collection_findings
    assert problem.summary.startswith("section gpu-query: nvidia-smi timed out (rc=124)")


def test_no_devices_found_is_info() -> None:
    sections = healthy_sections()
    sections["gpu-query"] = ("No devices were found\n", 0)
    findings, _ = evaluate(sections)
    assert only(findings, "gpu.temperature").severity is Severity.INFO
    assert only(findings, "gpu.temperature").summary == "no GPU reported by nvidia-smi: not present"


# ------------------------------------------------------------------------------------------ gpu-query faults


def test_pcie_width_below_max_is_a_concern() -> None:
    # Given the H100 under load with its link trained at x8 of x16
    sections = healthy_sections()
    sections["gpu-query"] = (with_values(real(H100_LOAD), pcie__link__width__current="8"), 0)
    findings, _ = evaluate(sections)
    concern = only(findings, "gpu.pcie_width")
    assert concern.severity is Severity.CONCERN
    assert concern.summary == "GPU 0 PCIe link at x8 of x16"
    assert concern.evidence == {
        "gpu": 0,
        "bus_id": "00000000:00:09.0",
        "name": "NVIDIA H100 80GB HBM3",
        "width_current": 8,
        "width_max": 16,
        "gen_current": 5,
        "gen_max": 5,
    }
    assert concern.next_step and concern.handoff == Handoff.NODE_G.value


def test_pcie_gen_below_max_is_info_while_busy_and_ignored_while_idle() -> None:
    # Given the same Gen4-of-Gen5 link once under load (100 % busy) and once idle
    busy = healthy_sections()
    busy["gpu-query"] = (with_values(real(H100_LOAD), pcie__link__gen__current="4"), 0)
    idle = healthy_sections()
    idle["gpu-query"] = (with_values(real(H100_IDLE), pcie__link__gen__current="4"), 0)
    busy_findings, _ = evaluate(busy)
    idle_findings, _ = evaluate(idle)
    # Then busy -> INFO, idle -> OK (gen drops at idle by design), noted in evidence
    info = only(busy_findings, "gpu.pcie_width")
    assert (info.severity, info.summary) == (Severity.INFO, "GPU 0 PCIe Gen4 of Gen5 while busy")
    assert info.evidence["utilization_gpu_pct"] == 100
    ok = only(idle_findings, "gpu.pcie_width")
    assert ok.severity is Severity.OK
    assert ok.evidence["gen_below_max_while_idle"] == [0]


def test_hot_gpu_with_low_clock_raises_temperature_and_throttle() -> None:
    sections = healthy_sections()
    sections["gpu-query"] = (
        with_values(real(H100_LOAD), temperature__gpu="90", clocks__current__sm="800 MHz"),
        0,
    )
    findings, _ = evaluate(sections)
    temperature = only(findings, "gpu.temperature")
    assert (temperature.severity, temperature.summary) == (Severity.CONCERN, "GPU 0 at 90 C (>= 88 C)")
    assert temperature.threshold == "temperature.gpu >= 88 C -> CONCERN"
    throttle = only(findings, "gpu.thermal_throttle")
    assert throttle.severity is Severity.CONCERN
    assert throttle.summary == "GPU 0 throttled: SM clock 800/1980 MHz at 90 C"
    assert throttle.evidence["clock_ratio"] == 0.404
    assert throttle.evidence["slowdown_reasons"] == []


def test_idle_low_clock_at_normal_temperature_is_not_throttling() -> None:
    # Given the idle capture: SM at 345 of 1980 MHz (17 %), 41 C, reason GPU idle
    sections = healthy_sections()
    sections["gpu-query"] = (real(H100_IDLE), 0)
    findings, _ = evaluate(sections)
    throttle = only(findings, "gpu.thermal_throttle")
    assert throttle.severity is Severity.OK
    assert throttle.evidence == {"gpus": 1, "min_clock_ratio": 0.174, "active_reasons": ["gpu_idle"]}


@pytest.mark.parametrize(
    ("mask", "severity", "slowdown"),
    [
        ("0x0000000000000048", Severity.CONCERN, ["hw_slowdown", "hw_thermal_slowdown"]),
        ("0x0000000000000020", Severity.CONCERN, ["sw_thermal_slowdown"]),
        ("0x0000000000000080", Severity.CONCERN, ["hw_power_brake_slowdown"]),
        ("0x0000000000000004", Severity.OK, None),  # SW power cap: the GPU at its own limit, not a fault
        ("0x0000000000000011", Severity.OK, None),  # idle + sync boost
    ],
)
def test_clock_event_reason_bits(mask: str, severity: Severity, slowdown: list[str] | None) -> None:
    sections = healthy_sections()
    sections["gpu-query"] = (with_values(real(H100_LOAD), clocks_event_reasons__active=mask), 0)
    findings, _ = evaluate(sections)
    throttle = only(findings, "gpu.thermal_throttle")
    assert throttle.severity is severity
    if slowdown is not None:
        assert throttle.evidence["slowdown_reasons"] == slowdown
        assert throttle.evidence["clock_event_reasons"] == mask.upper().replace("0X", "0x")
        assert throttle.summary == "GPU 0 throttled: clock-event reasons " + ", ".join(slowdown)


def test_decode_clock_event_reasons_uses_nvidia_bits() -> None:
    assert gpu.decode_clock_event_reasons(0x1FF) == list(gpu.CLOCK_EVENT_REASONS.values())
    assert gpu.decode_clock_event_reasons(0x104) == ["sw_power_cap", "display_clock_setting"]


@pytest.mark.parametrize(
    ("volatile", "aggregate"),
    [("1", "0"), ("0", "3"), ("2", "2")],
)
def test_uncorrected_ecc_volatile_or_aggregate_is_a_concern(volatile: str, aggregate: str) -> None:
    sections = healthy_sections()
    sections["gpu-query"] = (
        with_values(
            real(H100_LOAD),
            ecc__errors__uncorrected__volatile__total=volatile,
            ecc__errors__uncorrected__aggregate__total=aggregate,
        ),
        0,
    )
    findings, _ = evaluate(sections)
    ecc = only(findings, "gpu.ecc_uncorrected")
    assert ecc.severity is Severity.CONCERN
    assert ecc.summary == f"GPU 0 uncorrected ECC errors: volatile {volatile}, aggregate {aggregate}"
    assert (ecc.evidence["uncorrected_volatile"], ecc.evidence["uncorrected_aggregate"]) == (
        int(volatile),
        int(aggregate),
    )


def test_one_faulty_gpu_among_eight_from_the_design_query() -> None:
    # Given 8 GPUs in the design's header-less layout, GPU 5 hot and at x8
    rows = [
        f"{i}, NVIDIA H100 80GB HBM3, 00000000:{bus}:00.0, {90 if i == 5 else 45}, 1980 MHz, 1980 MHz, 5, 5, "
        f"{8 if i == 5 else 16}, 16, 0, 0, 0, 0x0000000000000000, 650.00 W, 700.00 W, 550.54.15"
        for i, bus in enumerate(["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"])
    ]
    sections = healthy_sections()
    sections["gpu-query"] = ("\n".join(rows) + "\n", 0)
    findings, _ = evaluate(sections)
    assert only(findings, "gpu.temperature").evidence["gpu"] == 5
    assert only(findings, "gpu.temperature").evidence["gpus_checked"] == 8
    assert only(findings, "gpu.pcie_width").evidence["bus_id"] == "00000000:AB:00.0"
    assert (
        only(findings, "gpu.ecc_uncorrected").summary
        == "8 GPUs, 0 uncorrected ECC errors (volatile and aggregate)"
    )


# ------------------------------------------------------------------------------------------ gpu.xid


def test_xid_catalog_is_the_designs_table() -> None:
    expected = {
        **dict.fromkeys(("13", "31", "94"), "restart_app"),
        **dict.fromkeys(("43", "92"), "ignore_watch"),
        "63": "reset_to_activate_remap",
        "45": "follow_previous_xid",
        **dict.fromkeys(("48", "62", "64", "95", "119", "120", "140"), "reset_gpu"),
        **dict.fromkeys(("74", "149"), "nvlink_workflow"),
        "79": "restart_node",
        "154": "follow_recovery_action",
    }
    assert gpu.XID_CATALOG.codes == expected


def test_xid_groups_by_code_and_pci_with_counts_and_actions() -> None:
    # Given the akash node's dmesg -T: Xid 43 x2 on 00:05, Xid 31 on 00:07, Xid 94 on 00:08
    sections = healthy_sections()
    sections["xid"] = (real("xid/akash_dmesg-T_xid43-31-94_535.183.01.txt"), 0)
    findings, _ = evaluate(sections)
    xids = by_check(findings, "gpu.xid")
    # Then one CONCERN per (code, PCI id), in order of first appearance
    assert [(f.severity, f.evidence["code"], f.evidence["pci"], f.evidence["count"]) for f in xids] == [
        (Severity.CONCERN, 43, "0000:00:05", 2),
        (Severity.CONCERN, 31, "0000:00:07", 1),
        (Severity.CONCERN, 94, "0000:00:08", 1),
    ]
    first = xids[0]
    assert (
        first.summary == "Xid 43 (GPU stopped processing) on PCI 0000:00:05 x2: "
        "informational: no action now, watch for repeats"
    )
    assert first.evidence["pids"] == [1045242, 1084984]
    assert first.evidence["processes"] == ["pt_main_thread"]
    assert first.evidence["first_time"] == "Wed Jul 31 23:14:18 2024"
    assert first.evidence["last_time"] == "Wed Jul 31 23:15:26 2024"
    assert first.evidence["last_line"].endswith("43, pid=1084984, name=pt_main_thread, Ch 00000008")
    assert [f.evidence["action"] for f in xids] == ["ignore_watch", "restart_app", "restart_app"]
    assert xids[2].evidence["pids"] == []  # pid='<unknown>'
    assert all(f.threshold and f.next_step and f.handoff == Handoff.NODE_G.value for f in xids)


def test_xid_is_joined_to_the_gpu_index_and_154_carries_the_recovery_action() -> None:
    # Given 8 GPUs (GPU 1 at 2A:00) and that GPU's Xid 120 followed by Xid 154
    sections = healthy_sections()
    sections["gpu-query"] = (real("gpu-query/h100-8gpu_noheader_index-name-busid.txt"), 0)
    sections["xid"] = (real("xid/gpu-node-01_dmesg-T_xid120-154_gsp.txt"), 0)
    findings, _ = evaluate(sections)
    xid120, xid154 = by_check(findings, "gpu.xid")
    assert xid120.summary == "Xid 120 (GSP error) on GPU 1 (PCI 0000:2a:00) x1: reset the GPU"
    assert xid120.evidence["gpu"] == 1
    assert xid154.summary == (
        "Xid 154 (GPU recovery action changed) on GPU 1 (PCI 0000:2a:00) x1: "
        "driver asks for 0x1 (GPU Reset Required)"
    )
    assert xid154.evidence["recovery_action"] == ["0x1 (GPU Reset Required)"]
    assert xid154.next_step is not None
    assert xid154.next_step.startswith("The driver asks for: 0x1 (GPU Reset Required).")


def test_fallen_off_the_bus_line_joins_its_xid79() -> None:
    sections = healthy_sections()
    sections["xid"] = (real("xid/no-prefix_xid79-154-os-reboot_610.43.02.txt"), 0)
    findings, _ = evaluate(sections)
    xid79, xid154 = by_check(findings, "gpu.xid")
    assert (xid79.evidence["code"], xid79.evidence["action"], xid79.evidence["fallen_off_bus_lines"]) == (
        79,
        "restart_node",
        1,
    )
    assert xid154.evidence["recovery_action"] == ["0x2 (OS Reboot)"]


def test_fallen_off_the_bus_without_xid_is_its_own_concern() -> None:
    sections = healthy_sections()
    sections["xid"] = (real("xid/nvsentinel155_dmesg-raw_fallen-off-bus_no-xid_570.158.01.txt"), 0)
    findings, _ = evaluate(sections)
    finding = only(findings, "gpu.xid")
    assert finding.severity is Severity.CONCERN
    assert finding.summary == (
        "GPU fallen off the bus (no Xid) (GPU has fallen off the bus) on PCI 0000:b3:00 x1: "
        "GPU has fallen off the bus: restart the node"
    )
    assert (finding.evidence["kind"], finding.evidence["code"], finding.evidence["device_id"]) == (
        "fallen_off_bus",
        None,
        ["10de:26b5"],
    )


def test_nvlink_xids_and_an_unknown_code() -> None:
    sections = healthy_sections()
    sections["xid"] = (real("xid/kmsg-lines_xid149-145_nvlink-netir_gb200-style.txt"), 0)
    findings, _ = evaluate(sections)
    assert [
        (f.evidence["code"], f.evidence["pci"], f.evidence["action"]) for f in by_check(findings, "gpu.xid")
    ] == [
        (149, "0019:01:00", "nvlink_workflow"),
        (149, "0000:00:00", "nvlink_workflow"),
        (145, "0018:01:00", "lookup"),
    ]


def test_sxid_and_undecodable_lines() -> None:
    sections = healthy_sections()
    sections["xid"] = (
        "[ 8123.456789] nvidia-nvswitch3: SXid (PCI:0000:c5:00.0): 24007, Fatal, "
        "Link 45 sourcetrack timeout\n"
        "[ 8124.000000] NVRM: Xid (PCI:0000:53:00): garbled\n",
        0,
    )
    findings, _ = evaluate(sections)
    sxid, unknown = by_check(findings, "gpu.xid")
    assert (
        sxid.summary
        == "SXid 24007 on PCI 0000:c5:00 x1: NVSwitch SXid: look the code up in the NVIDIA SXid catalog"
    )
    assert (sxid.evidence["severity"], sxid.evidence["switch"]) == (["Fatal"], ["nvidia-nvswitch3"])
    assert unknown.severity is Severity.CONCERN
    assert unknown.evidence["lines"] == ["[ 8124.000000] NVRM: Xid (PCI:0000:53:00): garbled"]


def test_every_real_xid_fixture_raises_at_least_one_concern() -> None:
    for file in sorted((REAL / "xid").iterdir()):
        sections = healthy_sections()
        sections["xid"] = (file.read_text(encoding="utf-8"), 0)
        findings, ctx = evaluate(sections)
        xids = by_check(findings, "gpu.xid")
        assert xids and all(f.severity is Severity.CONCERN for f in xids), file.name
        assert ctx.collection_findings == [], file.name


# ------------------------------------------------------------------------------------------ NVLink


def test_inactive_nvlink_is_a_concern_per_gpu() -> None:
    sections = healthy_sections()
    sections["nvlink-status"] = (real("nvlink-status/v100-sxm2_nvlink-s_inactive-links_excerpt.txt"), 0)
    findings, _ = evaluate(sections)
    finding = only(findings, "gpu.nvlink_inactive")
    assert finding.severity is Severity.CONCERN
    assert finding.summary == "GPU 3 NVLink link(s) 3, 5 inactive (4 of 6 active)"
    assert finding.evidence["inactive_links"] == [3, 5]
    assert finding.evidence["name"] == "Tesla V100-SXM2-32GB"


def test_eight_gpu_a100_all_links_active() -> None:
    sections = healthy_sections()
    sections["nvlink-status"] = (real("nvlink-status/a100-sxm4-80gb-8gpu_nvlink-s_gpud.txt"), 0)
    findings, _ = evaluate(sections)
    finding = only(findings, "gpu.nvlink_inactive")
    assert (finding.severity, finding.summary) == (
        Severity.OK,
        "8 GPUs, 96 NVLink links all active (25 GB/s)",
    )


def test_mig_mode_nvlink_is_info() -> None:
    sections = healthy_sections()
    sections["nvlink-status"] = (real("nvlink-status/h200-mig_590.48.01_nvlink-s_unsupported.txt"), 0)
    findings, _ = evaluate(sections)
    finding = only(findings, "gpu.nvlink_inactive")
    assert finding.severity is Severity.INFO
    assert (
        finding.summary
        == "NVLink not queryable on 1 GPU(s): Nvlink queries are not supported for Devices in MIG mode"
    )


def test_nonzero_nvlink_error_counters_are_a_concern() -> None:
    sections = healthy_sections()
    text = real("nvlink-status/h100_nvlink-e_error-counters_elided_stas00.txt")
    text = text.replace("Link 1: Replay Errors: 0", "Link 1: Replay Errors: 7").replace(
        "Link 17: CRC Errors: 0", "Link 17: CRC Errors: 2"
    )
    sections["nvlink-errors"] = (text, 0)
    findings, _ = evaluate(sections)
    finding = only(findings, "gpu.nvlink_errors")
    assert finding.severity is Severity.CONCERN
    assert finding.summary == "GPU 0 NVLink errors on link(s) 1, 17 (total 9)"
    assert finding.evidence["nonzero_counters"] == {"1": {"Replay Errors": 7}, "17": {"CRC Errors": 2}}


def test_all_links_inactive_message_is_a_concern_not_a_parse_failure() -> None:
    # Given a B200 GPU for which NVML printed "Unable to retrieve NVLink information as all links
    # are inActive" (leptonai/gpud#1085), on an 8x B200 instance type
    sections = healthy_sections("ml.p6-b200.48xlarge")
    sections["nvlink-status"] = (real("nvlink-status/b200_nvlink-s_all-links-inactive_gpud-issue1085.txt"), 0)
    findings, ctx = evaluate(sections)
    # Then it is gpu.nvlink_inactive CONCERN naming GPU 2, and no collect.node parse failure
    finding = only(findings, "gpu.nvlink_inactive")
    assert finding.severity is Severity.CONCERN
    assert finding.summary == (
        "GPU 2: all NVLink links inactive "
        "(NVML: NVML: Unable to retrieve NVLink information as all links are inActive)"
    )
    assert finding.evidence["gpu"] == 2 and finding.evidence["all_links_inactive"] is True
    assert ctx.collection_findings == []


@pytest.mark.parametrize(
    ("instance_type", "severity"),
    [("ml.p5.48xlarge", Severity.CONCERN), (None, Severity.CONCERN), ("ml.g5.2xlarge", Severity.INFO)],
)
def test_all_links_inactive_is_info_only_where_the_instance_type_has_no_nvlink(
    instance_type: str | None, severity: Severity
) -> None:
    sections = healthy_sections(instance_type or "")
    sections["nvlink-status"] = (real("nvlink-status/b200_nvlink-s_all-links-inactive_gpud-issue1085.txt"), 0)
    findings, _ = evaluate(sections)
    assert only(findings, "gpu.nvlink_inactive").severity is severity


# ------------------------------------------------------------------------------------------ gpu.topology

P5_TOPO = "gpu-topo/p5-48xl_8gpu_no-nics_eks.txt"


def _set_pair(text: str, a: int, b: int, link: str) -> str:
    """The real matrix with the GPU a/GPU b cell (both directions) replaced by `link`."""
    lines = text.splitlines()
    header_at = next(i for i, line in enumerate(lines) if line.split()[:1] == ["GPU0"])
    out = []
    for i, line in enumerate(lines):
        cells = line.split()
        if i > header_at and cells and cells[0] in (f"GPU{a}", f"GPU{b}"):
            other = b if cells[0] == f"GPU{a}" else a
            assert cells[1 + other].startswith("NV"), line
            cells[1 + other] = link
            line = "\t".join(cells)
        out.append(line)
    return "\n".join(out) + "\n"


def test_p5_topology_all_pairs_nv18_is_ok() -> None:
    sections = healthy_sections("ml.p5.48xlarge")
    sections["gpu-topo"] = (real(P5_TOPO), 0)
    findings, _ = evaluate(sections)
    finding = only(findings, "gpu.topology")
    assert (finding.severity, finding.summary) == (Severity.OK, "all 28 GPU pairs at NV18")


@pytest.mark.parametrize("link", ["SYS", "NODE", "PHB", "PXB", "PIX", "NV12", "NV17"])
def test_p5_pair_off_nvlink_or_short_of_links_is_a_concern_naming_the_pair(link: str) -> None:
    # Given the real p5 matrix with GPU1<->GPU6 changed to a PCIe path or fewer NVLinks (NV17 = one down)
    sections = healthy_sections("ml.p5.48xlarge")
    sections["gpu-topo"] = (_set_pair(real(P5_TOPO), 1, 6, link), 0)
    findings, _ = evaluate(sections)
    finding = only(findings, "gpu.topology")
    assert finding.severity is Severity.CONCERN
    assert finding.summary == f"1 of 28 GPU pairs not at NV18: GPU1-GPU6 {link}"
    assert finding.evidence["degraded_pairs"] == [f"GPU1-GPU6 {link}"]
    assert finding.evidence["gpus_involved"] == ["GPU1", "GPU6"]


def test_p4d_expects_nv12_so_the_p5_matrix_nv18_is_ok_and_nv11_is_not() -> None:
    sections = healthy_sections("ml.p4d.24xlarge")
    sections["gpu-topo"] = (real(P5_TOPO).replace("NV18", "NV12"), 0)
    assert only(evaluate(sections)[0], "gpu.topology").severity is Severity.OK
    sections["gpu-topo"] = (_set_pair(real(P5_TOPO).replace("NV18", "NV12"), 0, 7, "NV11"), 0)
    assert only(evaluate(sections)[0], "gpu.topology").severity is Severity.CONCERN


def test_nvlink_down_pair_on_an_unknown_instance_type_is_listed_as_info() -> None:
    # Given Azure NC80adis_H100_v5's matrix with GPU0<->GPU1 at SYS (Azure/azhpc-images#443): a type
    # this table does not know, so the expected layout is unknown
    sections = healthy_sections("Standard_NC80adis_H100_v5")
    sections["gpu-topo"] = (real("gpu-topo/nc80adis-h100-v5_2gpu_sys-nvlink-down_azhpc-images443.txt"), 0)
    finding = only(evaluate(sections)[0], "gpu.topology")
    # Then the pair without NVLink is named, as INFO (a PCIe GPU pair would read the same)
    assert finding.severity is Severity.INFO
    assert finding.evidence["pairs_without_nvlink"] == ["GPU0-GPU1 SYS"]


def test_same_azure_matrix_on_an_nvlink_sku_is_a_concern() -> None:
    sections = healthy_sections("ml.p5.48xlarge")
    sections["gpu-topo"] = (real("gpu-topo/nc80adis-h100-v5_2gpu_sys-nvlink-down_azhpc-images443.txt"), 0)
    finding = only(evaluate(sections)[0], "gpu.topology")
    assert (finding.severity, finding.evidence["degraded_pairs"]) == (Severity.CONCERN, ["GPU0-GPU1 SYS"])


# ------------------------------------------------------------------------------------------ gpu.count

EIGHT_H100 = "gpu-query/h100-8gpu_noheader_index-name-busid.txt"


def test_eight_gpus_on_p5_is_ok() -> None:
    sections = healthy_sections("ml.p5.48xlarge")
    sections["gpu-query"] = (real(EIGHT_H100), 0)
    finding = only(evaluate(sections)[0], "gpu.count")
    assert (finding.severity, finding.summary) == (Severity.OK, "8 GPUs listed, as p5.48xlarge has")


def test_gpu_vanished_from_the_list_is_a_concern() -> None:
    # Given the real 8x H100 list with one GPU gone (what a GPU that fell off the bus looks like)
    lines = real(EIGHT_H100).splitlines()
    sections = healthy_sections("ml.p5.48xlarge")
    sections["gpu-query"] = ("\n".join(lines[:3] + lines[4:]) + "\n", 0)
    finding = only(evaluate(sections)[0], "gpu.count")
    assert (finding.severity, finding.summary) == (Severity.CONCERN, "7 GPUs listed; p5.48xlarge has 8 H100")
    assert (finding.evidence["gpus"], finding.evidence["expected"]) == (7, 8)


@pytest.mark.parametrize(
    ("instance_type", "expected"),
    [
        ("ml.p4d.24xlarge", 8),
        ("ml.p4de.24xlarge", 8),
        ("ml.p5e.48xlarge", 8),
        ("ml.p5en.48xlarge", 8),
        ("ml.p6-b200.48xlarge", 8),
        ("ml.g5.48xlarge", 8),
        ("ml.g5.12xlarge", 4),
        ("ml.g5.2xlarge", 1),
        ("ml.p5.4xlarge", 1),
    ],
)
def test_gpu_count_table(instance_type: str, expected: int) -> None:
    sections = healthy_sections(instance_type)
    sections["gpu-query"] = (real(EIGHT_H100), 0)
    finding = only(evaluate(sections)[0], "gpu.count")
    assert finding.evidence["expected"] == expected
    assert finding.severity is (Severity.OK if expected == 8 else Severity.CONCERN)


def test_unknown_instance_type_gpu_count_is_info() -> None:
    finding = only(evaluate(healthy_sections("ml.m5.2xlarge"))[0], "gpu.count")
    assert finding.severity is Severity.INFO


# ------------------------------------------------------------------------------------------ gpu.remapped_rows


def test_real_h100_capture_reports_no_remapping_pending_or_failed() -> None:
    # Given the real H100 capture: remapped_rows.pending No, .failure No, 0 / 0 rows
    finding = only(evaluate(healthy_sections())[0], "gpu.remapped_rows")
    assert (finding.severity, finding.summary) == (Severity.OK, "1 GPU, no row remapping pending or failed")
    assert finding.evidence["remapped_uncorrectable_total"] == 0


@pytest.mark.parametrize(
    ("pending", "failure", "severity", "summary"),
    [
        ("No", "No", Severity.OK, "1 GPU, no row remapping pending or failed"),
        ("Yes", "No", Severity.CONCERN, "GPU 0 row remapping pending: a GPU reset is needed to activate it"),
        ("No", "Yes", Severity.CONCERN, "GPU 0 row remapping failed (out of spare rows)"),
        ("Yes", "Yes", Severity.CONCERN, "GPU 0 row remapping failed (out of spare rows)"),
    ],
)
def test_remapped_rows_pending_or_failure_is_a_concern(pending, failure, severity, summary) -> None:
    # Given the real capture with the two flags set (what `nvidia-smi -q` showed for the A100 of
    # stas00/ml-engineering's Xid 63 example: Pending: Yes, Remapping Failure Occurred: No)
    sections = healthy_sections()
    sections["gpu-query"] = (
        with_values(real(H100_LOAD), remapped_rows__pending=pending, remapped_rows__failure=failure),
        0,
    )
    finding = only(evaluate(sections)[0], "gpu.remapped_rows")
    assert (finding.severity, finding.summary) == (severity, summary)


def test_mig_capture_without_remapping_values_is_info() -> None:
    sections = healthy_sections()
    sections["gpu-query"] = (real("gpu-query/h200-mig_590.48.01_idle_allfields.txt"), 0)
    finding = only(evaluate(sections)[0], "gpu.remapped_rows")
    assert finding.severity is Severity.INFO and "not reported" in finding.summary


# ------------------------------------------------------------------------------------------ new real lines


def test_fallen_off_the_bus_gpu_at_form_names_its_pci_and_gpu() -> None:
    sections = healthy_sections()
    sections["xid"] = (real("xid/debian-blog_fallen-off-bus_gpu-at-bdf_no-xid.txt"), 0)
    (finding,) = by_check(evaluate(sections)[0], "gpu.xid")
    assert finding.severity is Severity.CONCERN
    assert finding.summary.startswith(
        "GPU fallen off the bus (no Xid) (GPU has fallen off the bus) on PCI 0000:01:00 x2"
    )
    assert finding.evidence["pci"] == "0000:01:00"


def test_xid63_asks_for_a_reset_to_activate_the_remapped_row() -> None:
    sections = healthy_sections()
    sections["xid"] = (real("xid/a100-sxm4_xid63_row-remapper-pending_stas00.txt"), 0)
    (finding,) = by_check(evaluate(sections)[0], "gpu.xid")
    assert finding.severity is Severity.CONCERN
    assert finding.evidence["action"] == "reset_to_activate_remap"
    assert "reset" in finding.summary and "no action" not in finding.summary
    assert "ROW_REMAPPER" in (finding.next_step or "")


def test_rhel_style_oom_names_the_victim() -> None:
    sections = healthy_sections()
    sections["oom"] = (real("oom/rhel-style_killed-process-uid_gpud-testdata.txt"), 0)
    finding = only(evaluate(sections)[0], "host.oom")
    assert finding.summary == "1 process(es) OOM-killed: httpd (pid 123)"


# ------------------------------------------------------------------------------------------ host.*


@pytest.mark.parametrize(
    ("state", "rc", "severity"),
    [("active", 0, Severity.OK), ("inactive", 3, Severity.CONCERN), ("failed", 3, Severity.CONCERN)],
)
def test_fabric_manager_on_nvl72(state: str, rc: int, severity: Severity) -> None:
    sections = healthy_sections("ml.p6e-gb200.36xlarge")
    sections["fabric-manager"] = (f"{state}\n", rc)
    findings, ctx = evaluate(sections)
    finding = only(findings, "host.fabric_manager")
    assert finding.severity is severity
    assert finding.evidence == {"instance_type": "p6e-gb200.36xlarge", "fabric_manager": state, "rc": rc}
    assert ctx.collection_findings == []
    if severity is Severity.CONCERN:
        assert finding.summary == f"nvidia-fabricmanager is {state} on NVL72 instance p6e-gb200.36xlarge"
        assert finding.next_step and finding.handoff == Handoff.NODE_G.value


def test_fabric_manager_missing_on_nvl72_is_info_and_garbage_is_collect_node() -> None:
    absent = healthy_sections("ml.p6e-gb200.36xlarge")
    del absent["fabric-manager"]
    garbage = healthy_sections("ml.p6e-gb200.36xlarge")
    garbage["fabric-manager"] = ("Failed to connect to bus: No such file or directory\n", 1)
    absent_findings, _ = evaluate(absent)
    garbage_findings, ctx = evaluate(garbage)
    assert only(absent_findings, "host.fabric_manager").severity is Severity.INFO
    assert by_check(garbage_findings, "host.fabric_manager") == []
    assert [f.evidence["section"] for f in ctx.collection_findings] == ["fabric-manager"]


def test_oom_kills_are_a_resources_concern() -> None:
    # Given OOM-killer lines (kernel printk formats; constructed, as no real capture is in the corpus)
    sections = healthy_sections()
    sections["oom"] = (
        "[Tue Mar  5 10:00:00 2024] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
        "mems_allowed=0-1,global_oom,task_memcg=/,task=python3,pid=2481,uid=0\n"
        "[Tue Mar  5 10:00:00 2024] Out of memory: Killed process 2481 (python3) total-vm:812044kB, "
        "anon-rss:518420kB, file-rss:1240kB, shmem-rss:0kB, UID:0 pgtables:1300kB oom_score_adj:0\n"
        "[Tue Mar  5 10:05:00 2024] Memory cgroup out of memory: Killed process 4182 (order-worker) "
        "total-vm:812044kB, anon-rss:518420kB, file-rss:1240kB, shmem-rss:0kB\n",
        0,
    )
    findings, _ = evaluate(sections)
    finding = only(findings, "host.oom")
    assert finding.severity is Severity.CONCERN
    assert (finding.section, finding.handoff) == (RunbookSection.RESOURCES, Handoff.NODE_I.value)
    assert finding.summary == "2 process(es) OOM-killed: python3 (pid 2481), order-worker (pid 4182)"
    assert finding.evidence["victims"] == [
        {"pid": 2481, "process": "python3", "cgroup": False},
        {"pid": 4182, "process": "order-worker", "cgroup": True},
    ]
    assert (finding.evidence["first_time"], finding.evidence["last_time"]) == (
        "Tue Mar  5 10:00:00 2024",
        "Tue Mar  5 10:05:00 2024",
    )
    assert finding.next_step


def test_fabric_manager_section_is_not_read_where_the_check_does_not_apply():
    # Given a p5 node whose systemctl cannot run (no systemd, e.g. in a container)
    text = render_container(
        [
            ("meta", "hostname=h\ninstance_type=ml.p5.48xlarge\n", 0),
            (
                "fabric-manager",
                "System has not been booted with systemd as init system (PID 1). Can't operate.\n",
                1,
            ),
        ]
    )
    # When the GPU family evaluates it
    ctx = NodeContext(parse_container(text, "h.txt"))
    findings = gpu.evaluate(ctx)
    fabric = [f for f in findings if f.check == "host.fabric_manager"]
    # Then the check says nothing (it does not apply to p5) and no collect.node problem is raised
    assert fabric == []
    assert not [f for f in ctx.collection_findings if f.evidence.get("section") == "fabric-manager"]
