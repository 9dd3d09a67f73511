"""nvidia-smi parsers against real outputs (tests/fixtures/real/{gpu-query,gpu-topo,nvlink-status})."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_perf.parse.nvidia_smi import (
    QUERY_FIELDS,
    canonical_field,
    normalize_bus_id,
    parse_gpu_query,
    parse_gpu_topology,
    parse_nvlink_errors,
    parse_nvlink_status,
)

REAL = Path(__file__).parents[2] / "fixtures" / "real"


def real(path: str) -> str:
    return (REAL / path).read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------ gpu-query


def test_every_gpu_query_fixture_parses() -> None:
    # Given every real gpu-query capture
    files = sorted((REAL / "gpu-query").iterdir())
    assert len(files) == 5
    # When each is parsed
    parsed = {f.name: parse_gpu_query(f.read_text(encoding="utf-8")) for f in files}
    # Then every one yields GPU rows with a name and a bus id
    for name, query in parsed.items():
        assert query.rows, name
        assert all(row.name and row.bus for row in query.rows), name


def test_all_fields_h100_idle_reads_values_by_header_name_with_units() -> None:
    # Given the ~200-column H100 capture, headers with units (`clocks.current.sm [MHz]`)
    query = parse_gpu_query(real("gpu-query/h100-80gb-hbm3_590.48.01_idle_allfields.txt"))
    # Then the design's fields are found by name, values stripped of their units
    assert query.had_header
    assert len(query.header) == 212
    (gpu,) = query.rows
    assert gpu.index == 0
    assert gpu.name == "NVIDIA H100 80GB HBM3"
    assert gpu.pci_bus_id == "00000000:00:09.0"
    assert gpu.bus == "0000:00:09"
    assert gpu.temperature_c == 41
    assert gpu.sm_clock_mhz == 345  # header `clocks.current.sm [MHz]`, query alias `clocks.sm`
    assert gpu.max_sm_clock_mhz == 1980
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max) == (5, 5)
    assert (gpu.pcie_width_current, gpu.pcie_width_max) == (16, 16)
    assert (gpu.ecc_uncorrected_volatile, gpu.ecc_uncorrected_aggregate, gpu.ecc_corrected_volatile) == (
        0,
        0,
        0,
    )
    assert gpu.clock_event_reasons == 0x1  # `0x0000000000000001` = GPU idle
    assert gpu.power_draw_w == 69.85
    assert gpu.power_limit_w == 700.0
    assert gpu.driver_version == "590.48.01"
    assert gpu.utilization_gpu_pct == 0
    # And the "no value" spellings are None, not strings
    assert gpu.get("clocks.applications.graphics") is None  # [Requested functionality has been deprecated]
    assert gpu.get("hostname") is None  # [N/A]


def test_all_fields_h100_under_load() -> None:
    (gpu,) = parse_gpu_query(real("gpu-query/h100-80gb-hbm3_590.48.01_load_allfields.txt")).rows
    assert (gpu.temperature_c, gpu.sm_clock_mhz, gpu.utilization_gpu_pct) == (59, 1980, 100)
    assert gpu.clock_event_reasons == 0
    assert gpu.power_draw_w == 631.95


def test_all_fields_h200_mig_has_na_utilization() -> None:
    (gpu,) = parse_gpu_query(real("gpu-query/h200-mig_590.48.01_idle_allfields.txt")).rows
    assert gpu.name == "NVIDIA H200"
    assert gpu.bus == "0000:83:00"
    assert gpu.temperature_c == 28
    assert gpu.utilization_gpu_pct is None  # [N/A] in MIG mode


def test_noheader_csv_falls_back_to_the_design_field_order() -> None:
    # Given `--format=csv,noheader` output with index, name, bus id
    query = parse_gpu_query(real("gpu-query/h100-8gpu_noheader_index-name-busid.txt"))
    # Then the columns are the design list's leading fields
    assert not query.had_header
    assert query.header == ("index", "name", "pci.bus_id")
    assert [row.index for row in query.rows] == list(range(8))
    assert {row.name for row in query.rows} == {"NVIDIA H100 80GB HBM3"}
    assert [row.bus for row in query.rows] == [
        "0000:18:00",
        "0000:2a:00",
        "0000:3a:00",
        "0000:5d:00",
        "0000:9a:00",
        "0000:ab:00",
        "0000:ba:00",
        "0000:db:00",
    ]
    assert query.rows[0].temperature_c is None  # not queried


def test_alias_header_prompt_and_elision_are_handled() -> None:
    # Given a query for gpu_name,gpu_bus_id,vbios_version pasted with its prompt and a `[...]` elision
    query = parse_gpu_query(real("gpu-query/h100_name-busid-vbios_elided_stas00.txt"))
    # Then the header aliases (`name`, `pci.bus_id`) are read and the noise lines skipped
    assert query.header == ("name", "pci.bus_id", "vbios_version")
    assert [(r.name, r.pci_bus_id, r.get("vbios_version")) for r in query.rows] == [
        ("NVIDIA H100 80GB HBM3", "00000000:04:00.0", "96.00.89.00.01"),
        ("NVIDIA H100 80GB HBM3", "00000000:8B:00.0", "96.00.89.00.01"),
    ]
    assert query.rows[0].index is None


def test_columns_in_any_order_old_field_names_and_not_supported() -> None:
    # Given an older driver's header: other column order, `clocks_throttle_reasons.active`, [Not Supported]
    text = (
        "pci.bus_id, clocks_throttle_reasons.active, index, temperature.gpu, "
        "ecc.errors.uncorrected.volatile.total, clocks.current.sm [MHz]\n"
        "00000000:53:00.0, 0x0000000000000048, 3, 84, [Not Supported], 900 MHz\n"
    )
    # When parsed
    (gpu,) = parse_gpu_query(text).rows
    # Then fields are matched by (canonical) name, not by position
    assert (gpu.index, gpu.bus, gpu.temperature_c, gpu.sm_clock_mhz) == (3, "0000:53:00", 84, 900)
    assert gpu.clock_event_reasons == 0x48
    assert gpu.ecc_uncorrected_volatile is None


def test_design_query_noheader_maps_all_17_fields() -> None:
    # Given a header-less row of the exact design query
    text = (
        "5, NVIDIA H100 80GB HBM3, 00000000:97:00.0, 45, 1980 MHz, 1980 MHz, 5, 5, 8, 16, 0, 2, 0, "
        "0x0000000000000000, 650.10 W, 700.00 W, 550.54.15\n"
    )
    (gpu,) = parse_gpu_query(text).rows
    assert len(QUERY_FIELDS) == 23
    assert (gpu.index, gpu.pcie_width_current, gpu.pcie_width_max) == (5, 8, 16)
    assert gpu.ecc_uncorrected_aggregate == 2
    assert gpu.driver_version == "550.54.15"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "no output"),
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", "does not match"),
        ("index, name\n0, a, b\n", "3 values for 2 columns"),
        ("index, name\n", "without any GPU row"),
    ],
)
def test_garbage_gpu_query_raises_with_reason(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_gpu_query(text)


def test_no_devices_is_an_empty_result_not_an_error() -> None:
    assert parse_gpu_query("No devices were found\n").rows == ()


def test_field_and_bus_id_normalisation() -> None:
    assert canonical_field("clocks.current.sm [MHz]") == "clocks.current.sm"
    assert canonical_field("clocks.sm") == "clocks.current.sm"
    assert canonical_field("gpu_name") == "name"
    assert canonical_field("clocks_throttle_reasons.active") == "clocks_event_reasons.active"
    assert normalize_bus_id("00000000:2A:00.0") == normalize_bus_id("0000:2a:00") == "0000:2a:00"
    assert normalize_bus_id("garbage") is None


# ------------------------------------------------------------------------------------------ gpu-topo


def test_topology_with_ansi_escapes_and_tabs() -> None:
    topo = parse_gpu_topology(real("gpu-topo/h100-1gpu-vm_590.48.01_ansi.txt"))
    assert topo.gpus == ("GPU0",)
    assert topo.nics == ()
    assert topo.links == {"GPU0": {"GPU0": "X"}}
    assert topo.attributes["GPU0"] == {"CPU Affinity": "0-19", "NUMA Affinity": "0", "GPU NUMA ID": None}


@pytest.mark.parametrize(
    ("fixture", "affinity0", "affinity7", "has_gpu_numa_id"),
    [
        ("gpu-topo/p5-48xl_8gpu_no-nics_eks.txt", "0-47,96-143", "48-95,144-191", True),
        ("gpu-topo/h100-8gpu_no-gpu-numa-id-col_stas00.txt", "0-51,104-155", "52-103,156-207", False),
    ],
)
def test_eight_gpu_nvswitch_topology(
    fixture: str, affinity0: str, affinity7: str, has_gpu_numa_id: bool
) -> None:
    topo = parse_gpu_topology(real(fixture))
    assert topo.gpus == tuple(f"GPU{i}" for i in range(8))
    for row in topo.gpus:
        for column in topo.gpus:
            assert topo.links[row][column] == ("X" if row == column else "NV18")
    assert topo.attributes["GPU0"]["CPU Affinity"] == affinity0
    assert topo.attributes["GPU7"]["CPU Affinity"] == affinity7
    assert topo.attributes["GPU7"]["NUMA Affinity"] == "1"
    assert ("GPU NUMA ID" in topo.attributes["GPU0"]) is has_gpu_numa_id


def test_topology_with_nic_columns_and_legend() -> None:
    # Given the NIC layout nvidia-smi prints (constructed from its documented format; no complete
    # real NIC sample exists in the corpus)
    text = (
        "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \tNV18\tPXB\t0-47\t0\t\tN/A\n"
        "GPU1\tNV18\t X \tSYS\t0-47\t0\t\tN/A\n"
        "NIC0\tPXB\tSYS\t X \t\t\t\t\n"
        "\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: rdmap79s0\n"
    )
    topo = parse_gpu_topology(text)
    assert topo.nics == ("NIC0",)
    assert topo.links["GPU0"]["NIC0"] == "PXB"
    assert topo.links["NIC0"]["GPU1"] == "SYS"
    assert topo.nic_names == {"NIC0": "rdmap79s0"}


@pytest.mark.parametrize(
    "text", ["", "command not found\n", "\tGPU0\tGPU1\nGPU0\t X \n", "\tGPU0\nGPU0\tNV1\n"]
)
def test_garbage_topology_raises(text: str) -> None:
    with pytest.raises(ValueError, match="gpu-topo"):
        parse_gpu_topology(text)


# ------------------------------------------------------------------------------------------ nvlink


def test_nvlink_status_a100_eight_gpus_twelve_links() -> None:
    gpus = parse_nvlink_status(real("nvlink-status/a100-sxm4-80gb-8gpu_nvlink-s_gpud.txt"))
    assert [g.index for g in gpus] == list(range(8))
    assert {g.name for g in gpus} == {"NVIDIA A100-SXM4-80GB"}
    assert gpus[0].uuid == "GPU-5269b708-678a-b1a8-60f0-c90406537486"
    assert all(sorted(g.links) == list(range(12)) for g in gpus)
    assert {s.speed_gbps for g in gpus for s in g.links.values()} == {25.0}
    assert all(not g.inactive_links for g in gpus)


def test_nvlink_status_h100_tab_indented() -> None:
    (gpu,) = parse_nvlink_status(real("nvlink-status/h100-80gb-hbm3_590.48.01_nvlink-s.txt"))
    assert gpu.name == "NVIDIA H100 80GB HBM3"
    assert len(gpu.links) == 18
    assert {s.speed_gbps for s in gpu.links.values()} == {26.562}


def test_nvlink_status_elided() -> None:
    (gpu,) = parse_nvlink_status(real("nvlink-status/h100_nvlink--status_elided_stas00.txt"))
    assert sorted(gpu.links) == [0, 17]


def test_nvlink_status_inactive_links() -> None:
    (gpu,) = parse_nvlink_status(real("nvlink-status/v100-sxm2_nvlink-s_inactive-links_excerpt.txt"))
    assert (gpu.index, gpu.name, gpu.uuid) == (3, "Tesla V100-SXM2-32GB", None)  # UUID masked as `...`
    assert gpu.inactive_links == [3, 5]
    assert gpu.links[0].speed_gbps == 25.781
    assert not gpu.links[3].active


def test_nvlink_status_mig_not_supported() -> None:
    (gpu,) = parse_nvlink_status(real("nvlink-status/h200-mig_590.48.01_nvlink-s_unsupported.txt"))
    assert gpu.links == {}
    assert gpu.unsupported == "Nvlink queries are not supported for Devices in MIG mode"


def test_nvlink_errors_counters_per_link() -> None:
    (gpu,) = parse_nvlink_errors(real("nvlink-status/h100_nvlink-e_error-counters_elided_stas00.txt"))
    assert sorted(gpu.counters) == [0, 1, 17]
    assert gpu.counters[17] == {"Replay Errors": 0, "Recovery Errors": 0, "CRC Errors": 0}
    assert gpu.nonzero() == {}


def test_nvlink_errors_nonzero_counter() -> None:
    text = real("nvlink-status/h100_nvlink-e_error-counters_elided_stas00.txt").replace(
        "Link 1: CRC Errors: 0", "Link 1: CRC Errors: 12"
    )
    (gpu,) = parse_nvlink_errors(text)
    assert gpu.nonzero() == {1: {"CRC Errors": 12}}


@pytest.mark.parametrize(
    ("parser", "text"),
    [
        (parse_nvlink_status, "Failed to initialize NVML: Driver/library version mismatch\n"),
        (parse_nvlink_status, "GPU 0: NVIDIA H100 (UUID: GPU-1)\n\t Link 0: warp speed\n"),
        (parse_nvlink_errors, "GPU 0: NVIDIA H100 (UUID: GPU-1)\n\t Link 0: CRC Errors: lots\n"),
    ],
)
def test_garbage_nvlink_raises(parser, text: str) -> None:
    with pytest.raises(ValueError, match="nvlink"):
        parser(text)


def test_empty_nvlink_output_means_no_nvlink() -> None:
    assert parse_nvlink_status("") == ()


# ------------------------------------------------------------------------- damaged and hostile text


def test_a_csv_field_over_the_csv_limit_is_a_value_error() -> None:
    # Given a gpu-query row with a 200 000-character field (csv.Error before: over its 128 KiB limit)
    with pytest.raises(ValueError, match="gpu-query: not a CSV line"):
        parse_gpu_query("index, name\n0, " + "x" * 200_000 + "\n")


def test_gpu_header_name_and_uuid_are_split_at_the_last_uuid_group() -> None:
    # Given nvlink -s headers: a name with blanks and parentheses, padding, and no UUID at all
    text = (
        "GPU 0: NVIDIA H100 (SXM5)   (UUID: GPU-11111111-2222)  \n\t Link 0: 26.562 GB/s\n"
        "GPU 1:   NVIDIA A100 (UUID: )\n\t Link 0: <inactive>\n"
        "GPU 2: NVIDIA A10G  \n"
    )
    # When parsed
    gpus = parse_nvlink_status(text)
    # Then the UUID is the trailing `(UUID: ...)` group and the name what precedes it, unpadded
    assert [(g.index, g.name, g.uuid) for g in gpus] == [
        (0, "NVIDIA H100 (SXM5)", "GPU-11111111-2222"),
        (1, "  NVIDIA A100", None),
        (2, "NVIDIA A10G", None),
    ]
    assert gpus[0].links[0].speed_gbps == 26.562 and gpus[1].inactive_links == [0]


def test_link_values_and_counters_are_read_up_to_their_last_non_blank() -> None:
    # Given link lines with blanks inside and after their values
    status = parse_nvlink_status("GPU 0: x\n  Link 0: <not active>   \n")
    errors = parse_nvlink_errors("GPU 0: x\n  Link 3: Replay Errors:   7  \n  Link 3: CRC Errors: N/A\n")
    # Then the state and the counters are read whole
    assert status[0].links[0].raw == "<not active>" and not status[0].links[0].active
    assert errors[0].counters == {3: {"Replay Errors": 7, "CRC Errors": None}}


def test_serial_and_uuid_read_by_header_name_from_a_real_all_fields_capture() -> None:
    # Given a real H100 `--query-gpu` capture with every field (its author zeroed the identities)
    text = (REAL / "gpu-query" / "h100-80gb-hbm3_590.48.01_idle_allfields.txt").read_text()
    # When it is parsed
    (gpu,) = parse_gpu_query(text).rows
    # Then the board serial and the UUID are read as the capture prints them
    assert (gpu.serial, gpu.uuid) == ("0000000000000", "GPU-00000000-0000-0000-0000-000000000000")


def test_serial_not_available_is_none_and_header_less_rows_keep_positions() -> None:
    # Given the collector's own field list, header-less, on a board without a serial ([N/A])
    row = [
        "0", "NVIDIA H100 80GB HBM3", "00000000:18:00.0", "45", "1980 MHz", "1980 MHz", "5", "5", "16",
        "16", "0", "0", "0", "0x0000000000000000", "650.10 W", "700.00 W", "550.54.15", "No", "No", "0",
        "0", "[N/A]", "GPU-5b3c1e8a-0c2f-4a51-9d0e-1f2a3b4c5d6e",
    ]  # fmt: skip
    (gpu,) = parse_gpu_query(", ".join(row) + "\n").rows
    # Then serial is None and uuid is the last field
    assert gpu.serial is None
    assert gpu.uuid == "GPU-5b3c1e8a-0c2f-4a51-9d0e-1f2a3b4c5d6e"
    assert gpu.driver_version == "550.54.15"
