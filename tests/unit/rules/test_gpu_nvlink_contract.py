"""The NVLink findings field by field (reviewed): `nvidia-smi nvlink -s` (inactive links, NVML's "all
links are inactive"), `nvlink -e` (error counters at 0 / 1) and `topo -m` GPU pairs against the
instance type's NVLink layout, plus the answers that give nothing to judge.

Inputs are written in the exact layout of the real captures in tests/fixtures/real/nvlink-status and
gpu-topo (`GPU n: <name> (UUID: ...)` blocks with tab-indented `Link n:` lines; the `topo -m` matrix).
"""

from __future__ import annotations

import pytest
from test_gpu_query_contract import finding

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.parse.nvidia_smi import (
    GpuTopology,
    parse_gpu_topology,
    parse_nvlink_errors,
    parse_nvlink_status,
)
from hyperpod_perf.rules.context import NodeContext, Section, SectionState
from hyperpod_perf.rules.gpu import common, nvlink

H100 = "NVIDIA H100 80GB HBM3"
INACTIVE_THRESHOLD = (
    "any NVLink link reported <inactive>, or NVML 'all links are inactive' / 'does not have or "
    "support Nvlink' for a GPU that should have NVLink (NVLink instance type, or NVLink-only model "
    "where the type is unknown) -> CONCERN"
)
ERRORS_THRESHOLD = "any non-zero NVLink error counter -> CONCERN"
ALL_INACTIVE = "NVML: Unable to retrieve NVLink information as all links are inActive"
MIG = "Nvlink queries are not supported for Devices in MIG mode"


def header(index: int, name: str = H100) -> str:
    return f"GPU {index}: {name} (UUID: GPU-{index:08d}-0000-0000-0000-000000000000)\n"


def uuid(index: int) -> str:
    return f"GPU-{index:08d}-0000-0000-0000-000000000000"


def status(index: int, *links: str, name: str = H100) -> str:
    """One GPU's `nvlink -s` block; each link is a speed (`26.562`) or `<inactive>`."""
    body = "".join(
        f"\t Link {n}: {value}{'' if value.startswith('<') else ' GB/s'}\n" for n, value in enumerate(links)
    )
    return header(index, name) + body


def errors(index: int, *links: tuple[int, int, int]) -> str:
    """One GPU's `nvlink -e` block: (replay, recovery, CRC) per link."""
    body = "".join(
        f"\t Link {n}: Replay Errors: {replay}\n\t Link {n}: Recovery Errors: {recovery}\n"
        f"\t Link {n}: CRC Errors: {crc}\n"
        for n, (replay, recovery, crc) in enumerate(links)
    )
    return header(index) + body


def context(
    section: str, body: str | None, rc: int = 0, instance_type: str | None = "ml.p5.48xlarge"
) -> NodeContext:
    meta = "hostname=gpu-7\n" + (f"instance_type={instance_type}\n" if instance_type else "")
    sections = [("meta", meta, 0)]
    if body is not None:
        sections.append((section, body, rc))
    return NodeContext(parse_container(render_container(sections), "n.txt"))


CHECKS = {
    "inactive": (nvlink.check_nvlink_inactive, "nvlink-status", parse_nvlink_status),
    "errors": (nvlink.check_nvlink_errors, "nvlink-errors", parse_nvlink_errors),
    "topology": (nvlink.check_topology, "gpu-topo", parse_gpu_topology),
}


def run(
    which: str, body: str | None, rc: int = 0, instance_type: str | None = "ml.p5.48xlarge"
) -> list[dict]:
    check, section, parser = CHECKS[which]
    ctx = context(section, body, rc, instance_type)
    return [f.model_dump(mode="json") for f in check(ctx, ctx.section(section, parser))]


# ------------------------------------------------------------------------------ no data to judge


@pytest.mark.parametrize(
    ("which", "check_id", "section", "what"),
    [
        ("inactive", "gpu.nvlink_inactive", "nvlink-status", "NVLink link state"),
        ("errors", "gpu.nvlink_errors", "nvlink-errors", "NVLink error counters"),
        ("topology", "gpu.topology", "gpu-topo", "GPU topology (topo -m)"),
    ],
)
def test_absent_timed_out_or_unparsable_section(which: str, check_id: str, section: str, what: str) -> None:
    assert run(which, None) == [
        finding(
            check_id,
            "INFO",
            f"{what}: not present (section not in snapshot)",
            {"section": section, "state": "absent", "rc": None},
            handoff=None,
        )
    ]
    assert run(which, "", rc=124) == [
        finding(
            check_id,
            "INFO",
            f"{what}: not evaluated, the command timed out (rc=124)",
            {"section": section, "state": "timeout", "rc": 124},
            next_step=common.NEXT_TIMEOUT,
        )
    ]
    assert run(which, "Failed to initialize NVML: Driver/library version mismatch\n", rc=255) == []


# ------------------------------------------------------------------------------ gpu.nvlink_inactive


def test_one_inactive_link_is_a_concern_with_the_counts() -> None:
    # Given GPU 0 with 4 active links and GPU 1 with link 2 of 4 inactive, nvidia-smi exiting 3
    body = status(0, "26.562", "26.562", "26.562", "26.562") + status(
        1, "26.562", "26.562", "<inactive>", "26.562"
    )
    assert run("inactive", body, rc=3) == [
        finding(
            "gpu.nvlink_inactive",
            "CONCERN",
            "GPU 1 NVLink link(s) 2 inactive (3 of 4 active)",
            {
                "gpu": 1,
                "name": H100,
                "uuid": uuid(1),
                "inactive_links": [2],
                "active_links": 3,
                "links_reported": 4,
                "section_rc": 3,
            },
            INACTIVE_THRESHOLD,
            common.NEXT_NVLINK_INACTIVE,
        )
    ]


def test_several_inactive_links_are_listed() -> None:
    body = status(3, "25.781", "<inactive>", "25.781", "<inactive>", "<inactive>")
    (result,) = run("inactive", body)
    assert result["summary"] == "GPU 3 NVLink link(s) 1, 3, 4 inactive (2 of 5 active)"


def test_all_links_active_is_ok_with_the_speeds() -> None:
    # Given a V100 (25.781 GB/s links) and an H100 (26.562 GB/s links), all active
    body = status(0, "25.781", "25.781", name="Tesla V100-SXM2-32GB") + status(
        1, "26.562", "26.562", "26.562"
    )
    assert run("inactive", body) == [
        finding(
            "gpu.nvlink_inactive",
            "OK",
            "2 GPUs, 5 NVLink links all active (25.781/26.562 GB/s)",
            {"gpus": 2, "links": 5, "speeds_gbps": [25.781, 26.562]},
            INACTIVE_THRESHOLD,
        )
    ]


def test_no_links_listed_is_info_not_reported() -> None:
    assert run("inactive", header(0) + header(1)) == [
        finding(
            "gpu.nvlink_inactive",
            "INFO",
            "no NVLink links reported (2 GPUs): not present",
            {"gpus": 2, "links": 0},
            INACTIVE_THRESHOLD,
            handoff=None,
        )
    ]


def test_mig_gpu_is_noted_once_and_the_others_still_judged() -> None:
    # Given GPU 0 in MIG mode (NVLink not queryable) and GPU 1 with two active links
    unsupported = finding(
        "gpu.nvlink_inactive",
        "INFO",
        f"NVLink not queryable on 1 GPU(s): {MIG}",
        {"gpus": [0], "reason": MIG},
        handoff=None,
    )
    body = header(0) + MIG + "\n" + status(1, "26.562", "26.562")
    assert run("inactive", body) == [
        unsupported,
        finding(
            "gpu.nvlink_inactive",
            "OK",
            "1 GPU, 2 NVLink links all active (26.562 GB/s)",
            {"gpus": 1, "links": 2, "speeds_gbps": [26.562]},
            INACTIVE_THRESHOLD,
        ),
    ]
    # And with only MIG GPUs, the note is the whole answer (no "not reported" on top)
    assert run("inactive", header(0) + MIG + "\n" + header(4) + MIG + "\n") == [
        {
            **unsupported,
            "summary": f"NVLink not queryable on 2 GPU(s): {MIG}",
            "evidence": {"gpus": [0, 4], "reason": MIG},
        }
    ]


def test_a_concern_comes_before_the_unsupported_note_and_no_ok_follows() -> None:
    body = status(0, "<inactive>", "26.562") + header(1) + MIG + "\n" + status(2, "26.562")
    assert [(f["severity"], f["summary"][:23]) for f in run("inactive", body)] == [
        ("CONCERN", "GPU 0 NVLink link(s) 0 "),
        ("INFO", "NVLink not queryable on"),
    ]


@pytest.mark.parametrize("instance_type", ["ml.p5.48xlarge", None, "ml.p6e-gb200.36xlarge"])
def test_all_links_inactive_on_an_nvlink_or_unknown_type_is_a_concern_per_gpu(instance_type) -> None:
    # Given NVML's answer for GPUs 2 and 5 (leptonai/gpud#1085's message) and GPU 0 healthy
    body = (
        status(0, "26.562") + header(2, "NVIDIA B200") + ALL_INACTIVE + "\n" + header(5) + ALL_INACTIVE + "\n"
    )
    named = instance_type.removeprefix("ml.") if instance_type else None
    expected = [
        finding(
            "gpu.nvlink_inactive",
            "CONCERN",
            f"GPU {index}: all NVLink links inactive (NVML: {ALL_INACTIVE})",
            {
                "gpu": index,
                "name": name,
                "uuid": uuid(index),
                "all_links_inactive": True,
                "message": ALL_INACTIVE,
                "instance_type": named,
            },
            INACTIVE_THRESHOLD,
            common.NEXT_NVLINK_INACTIVE,
        )
        for index, name in ((2, "NVIDIA B200"), (5, H100))
    ]
    assert run("inactive", body, instance_type=instance_type) == expected


def test_all_links_inactive_on_a_type_without_nvlink_is_one_info() -> None:
    body = header(0, "NVIDIA A10G") + ALL_INACTIVE + "\n" + header(1, "NVIDIA A10G") + ALL_INACTIVE + "\n"
    assert run("inactive", body, instance_type="ml.g5.12xlarge") == [
        finding(
            "gpu.nvlink_inactive",
            "INFO",
            "2 GPUs report no active NVLink; g5.12xlarge has no NVLink",
            {
                "gpus": [0, 1],
                "names": ["NVIDIA A10G"],
                "instance_type": "g5.12xlarge",
                "message": ALL_INACTIVE,
            },
            INACTIVE_THRESHOLD,
        )
    ]


# ------------------------------------------------------------------------------ gpu.nvlink_errors


def test_a_single_error_is_a_concern_with_the_nonzero_counters_and_total() -> None:
    # Given GPU 0 clean and GPU 1 with 1 CRC error on link 0 and 2 replay + 3 recovery on link 2 (rc=3)
    body = errors(0, (0, 0, 0), (0, 0, 0)) + errors(1, (0, 0, 1), (0, 0, 0), (2, 3, 0))
    assert run("errors", body, rc=3) == [
        finding(
            "gpu.nvlink_errors",
            "CONCERN",
            "GPU 1 NVLink errors on link(s) 0, 2 (total 6)",
            {
                "gpu": 1,
                "name": H100,
                "uuid": uuid(1),
                "nonzero_counters": {"0": {"CRC Errors": 1}, "2": {"Replay Errors": 2, "Recovery Errors": 3}},
                "total": 6,
                "section_rc": 3,
            },
            ERRORS_THRESHOLD,
            common.NEXT_NVLINK_ERRORS,
        )
    ]


def test_all_counters_zero_is_ok_with_the_counter_names() -> None:
    body = errors(0, (0, 0, 0), (0, 0, 0)) + errors(1, (0, 0, 0))
    assert run("errors", body) == [
        finding(
            "gpu.nvlink_errors",
            "OK",
            "2 GPUs, 3 NVLink links, all error counters 0",
            {"gpus": 2, "links": 3, "counters": ["CRC Errors", "Recovery Errors", "Replay Errors"]},
            ERRORS_THRESHOLD,
        )
    ]


def test_no_counters_listed_is_info_and_mig_is_noted() -> None:
    assert run("errors", header(0)) == [
        finding(
            "gpu.nvlink_errors",
            "INFO",
            "no NVLink error counters reported (1 GPU): not present",
            {"gpus": 1, "links": 0},
            ERRORS_THRESHOLD,
            handoff=None,
        )
    ]
    assert run("errors", header(0) + MIG + "\n" + errors(1, (0, 0, 0))) == [
        finding(
            "gpu.nvlink_errors",
            "INFO",
            f"NVLink not queryable on 1 GPU(s): {MIG}",
            {"gpus": [0], "reason": MIG},
            handoff=None,
        ),
        finding(
            "gpu.nvlink_errors",
            "OK",
            "1 GPU, 1 NVLink links, all error counters 0",
            {"gpus": 1, "links": 1, "counters": ["CRC Errors", "Recovery Errors", "Replay Errors"]},
            ERRORS_THRESHOLD,
        ),
    ]


# ------------------------------------------------------------------------------ gpu.topology


def topo(n: int, link: str = "NV18", **pairs: str) -> str:
    """An n-GPU `topo -m` matrix, every pair at `link` except `pairs` (`g1_g6="SYS"`)."""
    cells = {}
    for key, value in pairs.items():
        a, b = (int(x[1:]) for x in key.split("_"))
        cells[(a, b)] = cells[(b, a)] = value
    head = "\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    rows = "".join(
        f"GPU{a}\t"
        + "\t".join("X" if a == b else cells.get((a, b), link) for b in range(n))
        + f"\t0-47\t{a // 4}\t\tN/A\n"
        for a in range(n)
    )
    return head + rows + "\nLegend:\n\n  X    = Self\n"


def topology_threshold(expected: int, instance_type: str) -> str:
    return f"a GPU pair not at NV{expected} on {instance_type} -> CONCERN"


def test_every_pair_at_the_expected_nvlink_count_is_ok() -> None:
    assert run("topology", topo(8), rc=3) == [
        finding(
            "gpu.topology",
            "OK",
            "all 28 GPU pairs at NV18",
            {"gpus": 8, "pairs": 28, "links": ["NV18"], "instance_type": "p5.48xlarge", "section_rc": 3},
            topology_threshold(18, "p5.48xlarge"),
        )
    ]


def test_more_links_than_expected_is_ok_and_one_fewer_is_a_concern() -> None:
    # Given p4d (NV12 expected): NV13 on one pair is not a fault; NV11 on another is
    assert (
        run("topology", topo(4, "NV12", g0_g1="NV13"), instance_type="ml.p4d.24xlarge")[0]["severity"] == "OK"
    )
    assert run("topology", topo(4, "NV12", g2_g3="NV11"), instance_type="ml.p4d.24xlarge") == [
        finding(
            "gpu.topology",
            "CONCERN",
            "1 of 6 GPU pairs not at NV12: GPU2-GPU3 NV11",
            {
                "gpus": 4,
                "pairs": 6,
                "links": ["NV11", "NV12"],
                "instance_type": "p4d.24xlarge",
                "expected": "NV12",
                "degraded_pairs": ["GPU2-GPU3 NV11"],
                "gpus_involved": ["GPU2", "GPU3"],
            },
            topology_threshold(12, "p4d.24xlarge"),
            common.NEXT_TOPOLOGY,
        )
    ]


def test_many_degraded_pairs_list_six_in_the_summary_and_all_in_the_evidence() -> None:
    # Given GPU 10 of an 11-GPU matrix (to order GPU2 before GPU10) off NVLink to every other GPU
    off = {f"g{i}_g10": "SYS" for i in range(10)}
    (result,) = run("topology", topo(11, **off))
    listed = [f"GPU{i}-GPU10 SYS" for i in range(10)]
    assert result["summary"] == "10 of 55 GPU pairs not at NV18: " + ", ".join(listed[:6]) + " ..."
    assert result["evidence"]["degraded_pairs"] == listed
    assert result["evidence"]["gpus_involved"] == [f"GPU{i}" for i in range(11)]
    assert result["evidence"]["links"] == ["NV18", "SYS"]


def test_exactly_six_degraded_pairs_have_no_ellipsis() -> None:
    (result,) = run("topology", topo(4, "SYS"))
    assert result["summary"] == (
        "6 of 6 GPU pairs not at NV18: GPU0-GPU1 SYS, GPU0-GPU2 SYS, GPU0-GPU3 SYS, GPU1-GPU2 SYS, "
        "GPU1-GPU3 SYS, GPU2-GPU3 SYS"
    )


def test_degraded_pairs_in_the_evidence_stop_at_the_listing_limit() -> None:
    # Given a 9-GPU matrix all on SYS: 36 pairs, 28 listed
    (result,) = run("topology", topo(9, "SYS"))
    assert result["summary"].startswith("36 of 36 GPU pairs not at NV18: ")
    assert len(result["evidence"]["degraded_pairs"]) == common.MAX_TOPO_LISTED == 28
    assert result["evidence"]["degraded_pairs"][-1] == "GPU4-GPU6 SYS"


@pytest.mark.parametrize(
    ("instance_type", "named"), [("Standard_NC80adis_H100_v5", "Standard_NC80adis_H100_v5"), (None, None)]
)
def test_unknown_layout_lists_pairs_without_nvlink_as_info(instance_type, named) -> None:
    # Given Azure's 2-GPU matrix with the pair at SYS (Azure/azhpc-images#443), type not in the table
    (result,) = run("topology", topo(3, "NV12", g0_g1="SYS", g1_g2="PHB"), instance_type=instance_type)
    assert result == finding(
        "gpu.topology",
        "INFO",
        "3 GPU pair(s), links NV12/PHB/SYS; expected NVLink layout for "
        f"{named or 'an unknown instance type'} not in the table",
        {
            "gpus": 3,
            "pairs": 3,
            "links": ["NV12", "PHB", "SYS"],
            "instance_type": named,
            "pairs_without_nvlink": ["GPU0-GPU1 SYS", "GPU1-GPU2 PHB"],
        },
        "GPU pairs judged only where the instance type's NVLink layout is known",
    )


def test_unknown_layout_without_nvlink_lists_at_most_the_listing_limit() -> None:
    (result,) = run("topology", topo(9, "SYS"), instance_type="ml.g5.48xlarge")
    assert result["severity"] == "INFO"
    assert len(result["evidence"]["pairs_without_nvlink"]) == 28


def test_single_gpu_has_no_pair_to_judge() -> None:
    assert run("topology", topo(1)) == [
        finding(
            "gpu.topology",
            "INFO",
            "1 GPU, no GPU pair to judge: not present",
            {"gpus": 1, "pairs": 0, "links": [], "instance_type": "p5.48xlarge"},
            topology_threshold(18, "p5.48xlarge"),
            handoff=None,
        )
    ]


def test_a_missing_matrix_cell_counts_as_no_nvlink_and_a_gpu_without_a_row_adds_no_pair() -> None:
    # Given a matrix value built by hand (the parser always fills every cell): GPU0's row lacks its
    # GPU1 cell, and GPU2 is a column without a row of its own
    topo = GpuTopology(
        devices=("GPU0", "GPU1", "GPU2"),
        links={"GPU0": {"GPU0": "X", "GPU2": "NV18"}, "GPU1": {"GPU0": "NV18", "GPU1": "X", "GPU2": "NV18"}},
        attributes={},
    )
    ctx = context("gpu-topo", None)
    (result,) = nvlink.check_topology(ctx, Section("gpu-topo", SectionState.OK, value=topo, rc=0))
    # Then the pair without a cell reads "?" (not NVLink -> degraded); GPU2 pairs come from the others' rows
    assert (result.summary, result.evidence["links"]) == (
        "1 of 3 GPU pairs not at NV18: GPU0-GPU1 ?",
        ["?", "NV18"],
    )


def test_seven_degraded_pairs_list_six_and_an_ellipsis() -> None:
    # Given GPU4 of a 5-GPU matrix off NVLink to all four others, and GPU0-GPU1, GPU2-GPU3 too
    (result,) = run(
        "topology", topo(5, g0_g4="SYS", g1_g4="SYS", g2_g4="SYS", g3_g4="SYS", g0_g1="PHB", g2_g3="NODE")
    )
    assert result["summary"] == "6 of 10 GPU pairs not at NV18: " + (
        "GPU0-GPU1 PHB, GPU0-GPU4 SYS, GPU1-GPU4 SYS, GPU2-GPU3 NODE, GPU2-GPU4 SYS, GPU3-GPU4 SYS"
    )
    (result,) = run(
        "topology",
        topo(5, g0_g4="SYS", g1_g4="SYS", g2_g4="SYS", g3_g4="SYS", g0_g1="PHB", g2_g3="NODE", g1_g2="NV17"),
    )
    assert result["summary"] == "7 of 10 GPU pairs not at NV18: " + (
        "GPU0-GPU1 PHB, GPU0-GPU4 SYS, GPU1-GPU2 NV17, GPU1-GPU4 SYS, GPU2-GPU3 NODE, GPU2-GPU4 SYS ..."
    )
    assert len(result["evidence"]["degraded_pairs"]) == 7
