"""parse/pcie.py on real `nvidia-smi -q` reports and the kernel's documented aer_dev_* contents, plus
damaged inputs (labelled synthetic): a garbled line is skipped and counted, never raised on."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_perf.parse.pcie import parse_gpu_pcie, parse_pcie_aer

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"


def real(path: str) -> str:
    return (REAL / path).read_text(encoding="utf-8")


def aer_section(bdf: str = "0000:53:00.0", vendor: str = "0x10de", pci_class: str = "0x030200") -> str:
    """The kernel ABI document's sample aer_dev_* contents (real) under the collector's device header."""
    lines = [f"== {bdf} vendor={vendor} device=0x2330 class={pci_class}"]
    for line in real("pcie-aer/kernel-abi-doc_aer_dev_samples_4.19-names.txt").splitlines():
        lines.append(f"-- {line.rsplit(' ', 1)[-1]}" if line.startswith("localhost ") else line)
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------ gpu-pcie


@pytest.mark.parametrize(
    ("capture", "bus_id", "replays"),
    [
        ("gpu-pcie/h100-80gb-hbm3_590.48.01_idle_q_replays-9.txt", "00000000:00:09.0", 9),
        ("gpu-pcie/h200_590.48.01_idle_q.txt", "00000000:83:00.0", 0),
        ("gpu-pcie/l40s_595.80_idle_q.txt", "00000000:01:00.0", 0),
    ],
)
def test_real_full_q_reports_give_each_gpus_replay_counters(capture: str, bus_id: str, replays: int) -> None:
    # Given a real full `nvidia-smi -q` report (the PCI block sits among ~250 other lines)
    report = parse_gpu_pcie(real(capture))
    # Then exactly its one GPU is read, with the replay count and the rollovers the capture shows
    (gpu,) = report.gpus
    assert (gpu.pci_bus_id, gpu.replays, gpu.rollovers) == (bus_id, replays, 0)
    assert gpu.bus == "0000:" + bus_id[9:].rsplit(".", 1)[0].lower()
    assert report.unreadable_values == ()


def test_several_gpus_na_values_and_old_driver_key_spelling() -> None:
    # Given (synthetic) a two-GPU report: old drivers print `Replays since reset` and no rollover line;
    # a GPU in a VM may print N/A
    text = (
        "==============NVSMI LOG==============\n\nAttached GPUs : 2\n"
        "GPU 00000000:10:1C.0\n    PCI\n        Replays since reset         : 12\n"
        "GPU 00000000:10:1D.0\n    PCI\n        Replays Since Reset : N/A\n"
        "        Replay Number Rollovers : N/A\n"
    )
    report = parse_gpu_pcie(text)
    assert [(g.pci_bus_id, g.replays, g.rollovers) for g in report.gpus] == [
        ("00000000:10:1C.0", 12, None),
        ("00000000:10:1D.0", None, None),
    ]
    assert report.unreadable_values == ()


def test_garbled_value_is_kept_as_unreadable_not_raised() -> None:
    # Given (synthetic) a counter line damaged in transit
    text = "Attached GPUs : 1\nGPU 00000000:53:00.0\n    PCI\n        Replays Since Reset : 1x3\n"
    report = parse_gpu_pcie(text)
    # Then the GPU is listed without a count, and the damaged line is kept for the evidence
    assert [(g.replays, g.rollovers) for g in report.gpus] == [(None, None)]
    assert report.unreadable_values == ("Replays Since Reset : 1x3",)


def test_zero_gpus_is_an_empty_report_and_an_error_message_is_refused() -> None:
    assert parse_gpu_pcie("==============NVSMI LOG==============\n\nAttached GPUs : 0\n").gpus == ()
    with pytest.raises(ValueError, match="not an nvidia-smi -q report"):
        parse_gpu_pcie("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")


# ------------------------------------------------------------------------------------------ pcie-aer


def test_kernel_documented_contents_with_long_error_names_are_read() -> None:
    # Given the kernel's own sample files (4.19 names with spaces: `Receiver Error 2`)
    report = parse_pcie_aer(aer_section())
    (device,) = report.devices
    # Then each file's TOTAL line is the total, and only the non-zero named errors are listed
    assert (device.bdf, device.kind, device.readable) == ("0000:53:00.0", "gpu", True)
    assert device.counts["correctable"].total == 2
    assert device.counts["correctable"].nonzero == {"Receiver Error": 2}
    assert (device.total("nonfatal"), device.total("fatal")) == (0, 0)
    assert device.counts["fatal"].nonzero == {}
    assert report.skipped_lines == 0


def test_devices_without_files_unreadable_files_and_damaged_lines() -> None:
    # Given (synthetic) an EFA device without AER files, a GPU whose fatal file could not be read,
    # short 5.15 names, a file without its TOTAL line, garbage and a truncated counter line
    text = (
        "stray line before any device\n"
        "== 0000:4f:00.0 vendor=0x1d0f device=0xefa2 class=0x020000\n"
        "== 0000:53:00.0 vendor=0x10de device=0x2330 class=0x030200\n"
        "-- aer_dev_correctable\nRxErr 3\nBadTLP 1\nTOTAL_ERR_COR 4\n"
        "-- aer_dev_nonfatal\nUnsupReq 2\nCmpltTO\n"
        "-- aer_dev_fatal\n<unreadable>\n"
        "== 0000:9b:00.0 vendor=0x10de device=0x22a3 class=0x068000\n"
        "-- aer_dev_fatal\n"
    )
    report = parse_pcie_aer(text)
    efa_dev, gpu_dev, switch = report.devices
    assert (efa_dev.kind, efa_dev.readable, efa_dev.counts) == ("efa", False, {})
    assert gpu_dev.counts["correctable"].total == 4
    assert gpu_dev.counts["nonfatal"].total == 2  # no TOTAL line: the sum of the named errors
    assert gpu_dev.unreadable == ("fatal",)
    assert (switch.kind, switch.readable, switch.unreadable) == ("nvidia", False, ("fatal",))  # empty file
    assert report.skipped_lines == 2  # the stray line and `CmpltTO` without a count


def test_named_count_above_the_total_is_never_under_reported() -> None:
    # Given (synthetic) one ERR_FATAL message carrying two errors (the kernel ABI: totals count messages)
    report = parse_pcie_aer("== 0000:53:00.0 vendor=0x10de\n-- aer_dev_fatal\nDLP 2\nTOTAL_ERR_FATAL 1\n")
    assert report.devices[0].total("fatal") == 2


def test_empty_section_has_no_devices() -> None:
    assert parse_pcie_aer("").devices == ()


def test_text_without_any_device_line_is_refused() -> None:
    # Given (synthetic) garbage where the section should be: not the collector's format at all
    with pytest.raises(ValueError, match="no `== <bdf>` device line in 2 line"):
        parse_pcie_aer("GPU 0: overheated\nrdmap0 4: ACTIVE\n")
