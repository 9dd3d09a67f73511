"""The `nvidia-smi --query-gpu` findings field by field (reviewed): temperature, PCIe link, clock
throttling, uncorrected ECC, remapped rows and GPU count, each at, just inside and just outside its
limit, with an overridden threshold, and on the answers that give nothing to judge.

The inputs are header-named query CSVs holding only the fields a check reads (the parser reads
columns by name, so this is the same shape `nvidia-smi --format=csv` prints, cut to the point).
"""

from __future__ import annotations

import pytest

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.parse.nvidia_smi import parse_gpu_query
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.gpu import common, query
from hyperpod_perf.rules.thresholds import Thresholds

H100 = "NVIDIA H100 80GB HBM3"
BUS = ("00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0")
G = "hyperpod-node-debugger § G"


def csv(*rows: dict[str, str]) -> str:
    """A header-named query CSV; a field one row does not set reads `[N/A]` there."""
    keys = list(dict.fromkeys(key for row in rows for key in row))
    return (
        ", ".join(keys) + "\n" + "".join(", ".join(row.get(k, "[N/A]") for k in keys) + "\n" for row in rows)
    )


def gpu(position: int, index: str | None = None, **fields: str) -> dict[str, str]:
    """GPU `position` (index defaults to the position; `[N/A]` makes the check fall back to it)."""
    return {
        "index": str(position) if index is None else index,
        "name": H100,
        "pci.bus_id": BUS[position],
        **{key.replace("__", "."): value for key, value in fields.items()},
    }


def context(
    body: str | None, rc: int = 0, instance_type: str | None = "ml.p5.48xlarge", **thresholds: float
) -> NodeContext:
    meta = "hostname=gpu-7\n" + (f"instance_type={instance_type}\n" if instance_type else "")
    sections = [("meta", meta, 0)]
    if body is not None:
        sections.append(("gpu-query", body, rc))
    return NodeContext(parse_container(render_container(sections), "n.txt"), Thresholds(**thresholds))


def run(check, body: str | None, rc: int = 0, instance_type: str | None = "ml.p5.48xlarge", **thresholds):
    ctx = context(body, rc, instance_type, **thresholds)
    return [f.model_dump(mode="json") for f in check(ctx, ctx.section("gpu-query", parse_gpu_query))]


def finding(
    check: str, severity: str, summary: str, evidence: dict, threshold=None, next_step=None, handoff=G
):
    return {
        "node": "gpu-7",
        "check": check,
        "severity": severity,
        "section": "G",
        "summary": summary,
        "evidence": evidence,
        "threshold": threshold,
        "next_step": next_step,
        "handoff": handoff,
    }


def label(position: int, index: int | None = None) -> dict[str, object]:
    return {"gpu": position if index is None else index, "bus_id": BUS[position], "name": H100}


# ------------------------------------------------------------------------------ no data to judge

ALL_QUERY_CHECKS = [
    (query.check_temperature, "gpu.temperature", "GPU temperature"),
    (query.check_pcie, "gpu.pcie_width", "GPU PCIe link"),
    (query.check_thermal_throttle, "gpu.thermal_throttle", "GPU clock throttling"),
    (query.check_ecc, "gpu.ecc_uncorrected", "GPU uncorrected ECC"),
    (query.check_remapped_rows, "gpu.remapped_rows", "GPU row remapping"),
    (query.check_gpu_count, "gpu.count", "GPU count"),
]


@pytest.mark.parametrize(("check", "check_id", "what"), ALL_QUERY_CHECKS)
def test_absent_query_is_info_not_present(check, check_id, what) -> None:
    # Given a node without the gpu-query section / with nvidia-smi not installed
    assert run(check, None) == [
        finding(
            check_id,
            "INFO",
            f"{what}: not present (section not in snapshot)",
            {"section": "gpu-query", "state": "absent", "rc": None},
            handoff=None,
        )
    ]
    assert run(check, "bash: nvidia-smi: command not found\n", rc=127) == [
        finding(
            check_id,
            "INFO",
            f"{what}: not present (tool not installed (rc=127))",
            {"section": "gpu-query", "state": "absent", "rc": 127},
            handoff=None,
        )
    ]


@pytest.mark.parametrize(("check", "check_id", "what"), ALL_QUERY_CHECKS)
def test_timed_out_query_is_info_with_the_timeout_next_step(check, check_id, what) -> None:
    assert run(check, "", rc=124) == [
        finding(
            check_id,
            "INFO",
            f"{what}: not evaluated, the command timed out (rc=124)",
            {"section": "gpu-query", "state": "timeout", "rc": 124},
            next_step=common.NEXT_TIMEOUT,
        )
    ]


@pytest.mark.parametrize(("check", "check_id", "what"), ALL_QUERY_CHECKS)
def test_unparsable_query_gives_no_finding_here(check, check_id, what) -> None:
    # Given output that is not a query CSV: the context reports collect.node, the check stays silent
    ctx = context("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", rc=9)
    assert check(ctx, ctx.section("gpu-query", parse_gpu_query)) == []
    assert [f.check for f in ctx.collection_findings] == ["collect.node"]


@pytest.mark.parametrize(("check", "check_id", "what"), ALL_QUERY_CHECKS[:5])
def test_no_devices_found_is_info(check, check_id, what) -> None:
    assert run(check, "No devices were found\n") == [
        finding(
            check_id,
            "INFO",
            "no GPU reported by nvidia-smi: not present",
            {"section": "gpu-query", "gpus": 0},
            handoff=None,
        )
    ]


@pytest.mark.parametrize(
    ("check", "check_id", "summary", "threshold"),
    [
        (
            query.check_temperature,
            "gpu.temperature",
            "2 GPUs, temperature not reported: not present",
            "temperature.gpu >= 88 C -> CONCERN",
        ),
        (
            query.check_pcie,
            "gpu.pcie_width",
            "2 GPUs, PCIe link width not reported: not present",
            "pcie.link.width.current < max -> CONCERN; pcie.link.gen.current < max while busy -> INFO",
        ),
        (
            query.check_thermal_throttle,
            "gpu.thermal_throttle",
            "2 GPUs, SM clocks and clock-event reasons not reported: not present",
            "SM clock < 0.5 x max SM clock and temperature >= 80 C -> CONCERN; clock-event reasons "
            "hw_slowdown / sw_thermal / hw_thermal / hw_power_brake -> CONCERN",
        ),
        (
            query.check_ecc,
            "gpu.ecc_uncorrected",
            "2 GPUs, uncorrected ECC counts not reported (ECC off/N/A): not present",
            "ecc.errors.uncorrected.volatile.total > 0 or ...aggregate.total > 0 -> CONCERN",
        ),
        (
            query.check_remapped_rows,
            "gpu.remapped_rows",
            "2 GPUs, row remapping not reported (pre-Ampere GPU, MIG or older collector): not present",
            "remapped_rows.failure = Yes or remapped_rows.pending = Yes -> CONCERN",
        ),
    ],
)
def test_field_na_on_every_gpu_is_info_with_the_threshold(check, check_id, summary, threshold) -> None:
    # Given two GPUs listed, every field a check reads at [N/A] (and the max half of each pair set,
    # which alone judges nothing), with nvidia-smi exiting 3: the rc is noted next to the values
    body = csv(
        gpu(0, temperature__gpu="[N/A]", pcie__link__width__max="16", clocks__max__sm="1980"),
        gpu(1, pcie__link__width__current="16", clocks__current__sm="1980"),
    )
    assert run(check, body, rc=3) == [
        finding(check_id, "INFO", summary, {"gpus": 2, "section_rc": 3}, threshold=threshold, handoff=None)
    ]


# ------------------------------------------------------------------------------ gpu.temperature

TEMP_THRESHOLD = "temperature.gpu >= 88 C -> CONCERN"


def test_temperature_at_the_limit_is_a_concern_and_just_below_is_not() -> None:
    # Given GPU 0 at exactly 88 C and the second GPU (index N/A -> its position) at 87.9 C, rc=3
    body = csv(gpu(0, temperature__gpu="88"), gpu(1, index="[N/A]", temperature__gpu="87.9"))
    assert run(query.check_temperature, body, rc=3) == [
        finding(
            "gpu.temperature",
            "CONCERN",
            "GPU 0 at 88 C (>= 88 C)",
            {**label(0), "temperature_c": 88.0, "gpus_checked": 2, "section_rc": 3},
            TEMP_THRESHOLD,
            common.NEXT_TEMPERATURE,
        )
    ]


def test_every_gpu_at_or_over_the_limit_gets_its_own_concern() -> None:
    body = csv(gpu(0, temperature__gpu="95"), gpu(1, temperature__gpu="40"), gpu(2, temperature__gpu="88.5"))
    findings = run(query.check_temperature, body)
    assert [(f["summary"], f["evidence"]["gpu"], f["evidence"]["gpus_checked"]) for f in findings] == [
        ("GPU 0 at 95 C (>= 88 C)", 0, 3),
        ("GPU 2 at 88.5 C (>= 88 C)", 2, 3),
    ]


def test_temperatures_below_the_limit_are_ok_with_every_reading() -> None:
    # Given 87.9 C and 40 C (the second GPU's index N/A -> labelled by its position) and one GPU
    # without a reading (not counted)
    body = csv(
        gpu(0, temperature__gpu="87.9"),
        gpu(1, index="[N/A]", temperature__gpu="40"),
        gpu(2, temperature__gpu="N/A"),
    )
    assert run(query.check_temperature, body) == [
        finding(
            "gpu.temperature",
            "OK",
            "2 GPUs, max 87.9 C",
            {"gpus": 2, "max_temperature_c": 87.9, "temperatures_c": {"0": 87.9, "1": 40.0}},
            TEMP_THRESHOLD,
        )
    ]


def test_temperature_limit_is_overridable() -> None:
    # Given the limit set to 70 C: 70 is a concern, 69.9 is not
    at = run(query.check_temperature, csv(gpu(0, temperature__gpu="70")), gpu_temperature_c=70)
    below = run(query.check_temperature, csv(gpu(0, temperature__gpu="69.9")), gpu_temperature_c=70)
    assert (at[0]["severity"], at[0]["summary"], at[0]["threshold"]) == (
        "CONCERN",
        "GPU 0 at 70 C (>= 70 C)",
        "temperature.gpu >= 70 C -> CONCERN",
    )
    assert (below[0]["severity"], below[0]["summary"]) == ("OK", "1 GPU, max 69.9 C")


# ------------------------------------------------------------------------------ gpu.pcie_width

PCIE_THRESHOLD = "pcie.link.width.current < max -> CONCERN; pcie.link.gen.current < max while busy -> INFO"


def pcie(width: int, width_max: int, gen: str, gen_max: str, **extra: str) -> dict[str, str]:
    return {
        "pcie.link.width.current": str(width),
        "pcie.link.width.max": str(width_max),
        "pcie.link.gen.current": gen,
        "pcie.link.gen.max": gen_max,
        **{key.replace("__", "."): value for key, value in extra.items()},
    }


def link(width: int, width_max: int, gen: int | None, gen_max: int | None) -> dict[str, int | None]:
    return {"width_current": width, "width_max": width_max, "gen_current": gen, "gen_max": gen_max}


def test_width_one_lane_group_below_max_is_a_concern_and_gen_below_max_while_busy_is_info() -> None:
    # Given GPU 0 at x8 of x16 (Gen5 of 5) and GPU 1 at x16 of x16 but Gen4 of 5 at 1 % utilisation
    # (just busy), with nvidia-smi exiting 3
    body = csv(
        gpu(0, **pcie(8, 16, "5", "5", utilization__gpu="100 %")),
        gpu(1, **pcie(16, 16, "4", "5", utilization__gpu="1 %")),
    )
    assert run(query.check_pcie, body, rc=3) == [
        finding(
            "gpu.pcie_width",
            "CONCERN",
            "GPU 0 PCIe link at x8 of x16",
            {**label(0), **link(8, 16, 5, 5), "section_rc": 3},
            PCIE_THRESHOLD,
            common.NEXT_PCIE_WIDTH,
        ),
        finding(
            "gpu.pcie_width",
            "INFO",
            "GPU 1 PCIe Gen4 of Gen5 while busy",
            {**label(1), **link(16, 16, 4, 5), "utilization_gpu_pct": 1.0, "section_rc": 3},
            PCIE_THRESHOLD,
            common.NEXT_PCIE_GEN,
        ),
    ]


def test_width_and_gen_low_on_one_busy_gpu_are_both_reported() -> None:
    body = csv(gpu(0, **pcie(15, 16, "4", "5", clocks_event_reasons__active="0x0000000000000000")))
    findings = run(query.check_pcie, body)
    assert [(f["severity"], f["summary"]) for f in findings] == [
        ("CONCERN", "GPU 0 PCIe link at x15 of x16"),
        ("INFO", "GPU 0 PCIe Gen4 of Gen5 while busy"),
    ]
    assert findings[1]["evidence"]["utilization_gpu_pct"] is None  # busy read from the idle bit being clear


@pytest.mark.parametrize(
    ("extra", "idle"),
    [
        ({"utilization.gpu": "0 %"}, True),  # 0 % utilisation: idle, gen drop by design
        ({"utilization.gpu": "0 %", "clocks_event_reasons.active": "0x0000000000000000"}, True),
        ({"clocks_event_reasons.active": "0x0000000000000001"}, True),  # GPU-idle bit
        ({"clocks_event_reasons.active": "0x0000000000000005"}, True),  # idle + power cap
        ({}, True),  # neither known: not called busy
    ],
)
def test_gen_below_max_while_idle_is_ok_and_noted(extra: dict[str, str], idle: bool) -> None:
    body = csv(gpu(0, **pcie(16, 16, "1", "5"), **{k.replace(".", "__"): v for k, v in extra.items()}))
    assert run(query.check_pcie, body) == [
        finding(
            "gpu.pcie_width",
            "OK",
            "1 GPU at full PCIe width (x16, Gen1)",
            {"gpus": 1, "widths": [16], "gens": [1], "gen_below_max_while_idle": [0]},
            PCIE_THRESHOLD,
        )
    ]


def test_busy_from_utilisation_wins_over_the_idle_bit() -> None:
    # Given utilisation 5 % while the mask says idle: the utilisation sample decides (busy)
    body = csv(gpu(0, **pcie(16, 16, "4", "5", utilization__gpu="5 %", clocks_event_reasons__active="0x1")))
    assert [(f["severity"], f["evidence"]["utilization_gpu_pct"]) for f in run(query.check_pcie, body)] == [
        ("INFO", 5.0)
    ]


def test_full_width_links_are_ok_with_every_width_and_gen() -> None:
    # Given an x8 and an x16 GPU each at its own max, Gen4 and Gen5 (each at max), a third GPU without
    # its max width (not judged)
    body = csv(
        gpu(0, **pcie(16, 16, "5", "5")),
        gpu(1, **pcie(8, 8, "4", "4")),
        gpu(2, **{"pcie.link.width.current": "16"}),
    )
    assert run(query.check_pcie, body) == [
        finding(
            "gpu.pcie_width",
            "OK",
            "2 GPUs at full PCIe width (x8/x16, Gen4/5)",
            {"gpus": 2, "widths": [8, 16], "gens": [4, 5], "gen_below_max_while_idle": []},
            PCIE_THRESHOLD,
        )
    ]


def test_full_width_without_generation_reported() -> None:
    body = csv(gpu(0, **pcie(16, 16, "[N/A]", "[N/A]")), gpu(1, **pcie(16, 16, "5", "[N/A]")))
    assert run(query.check_pcie, body)[0]["summary"] == "2 GPUs at full PCIe width (x16, Gen5)"
    body = csv(gpu(0, **pcie(16, 16, "[N/A]", "5", utilization__gpu="100")))
    assert run(query.check_pcie, body) == [
        finding(
            "gpu.pcie_width",
            "OK",
            "1 GPU at full PCIe width (x16)",
            {"gpus": 1, "widths": [16], "gens": [], "gen_below_max_while_idle": []},
            PCIE_THRESHOLD,
        )
    ]


# ------------------------------------------------------------------------------ gpu.thermal_throttle

THROTTLE_THRESHOLD = (
    "SM clock < 0.5 x max SM clock and temperature >= 80 C -> CONCERN; clock-event reasons "
    "hw_slowdown / sw_thermal / hw_thermal / hw_power_brake -> CONCERN"
)


def clocks(sm: str, max_sm: str = "1980", temp: str = "85", mask: str | None = None) -> dict[str, str]:
    fields = {"clocks.current.sm": sm, "clocks.max.sm": max_sm, "temperature.gpu": temp}
    if mask is not None:
        fields["clocks_event_reasons.active"] = mask
    return fields


def test_slow_clock_at_the_temperature_limit_is_a_concern_with_every_value() -> None:
    # Given GPU 0 at 989/1980 MHz (ratio 0.4995, just under 0.5) and exactly 80 C, mask 0 (rc=3)
    body = csv(gpu(0, **clocks("989", temp="80", mask="0x0000000000000000")))
    assert run(query.check_thermal_throttle, body, rc=3) == [
        finding(
            "gpu.thermal_throttle",
            "CONCERN",
            "GPU 0 throttled: SM clock 989/1980 MHz at 80 C",
            {
                **label(0),
                "sm_clock_mhz": 989.0,
                "max_sm_clock_mhz": 1980.0,
                "clock_ratio": 0.499,
                "temperature_c": 80.0,
                "clock_event_reasons": "0x0000000000000000",
                "active_reasons": [],
                "slowdown_reasons": [],
                "section_rc": 3,
            },
            THROTTLE_THRESHOLD,
            common.NEXT_THROTTLE,
        )
    ]


@pytest.mark.parametrize(
    ("sm", "temp"),
    [("990", "99"), ("989", "79.9"), ("1980", "95")],  # ratio exactly 0.5; just under 80 C; full clock
)
def test_slow_clock_needs_both_limits(sm: str, temp: str) -> None:
    body = csv(gpu(0, **clocks(sm, temp=temp)))
    (result,) = run(query.check_thermal_throttle, body)
    assert result["severity"] == "OK"


def test_slow_clock_and_slowdown_reasons_are_told_together() -> None:
    # Given 800/1980 MHz at 90 C with reasons sw_power_cap + hw_slowdown + hw_power_brake (0x8C)
    body = csv(gpu(0, **clocks("800", temp="90", mask="0x000000000000008C")))
    (result,) = run(query.check_thermal_throttle, body)
    assert result["summary"] == (
        "GPU 0 throttled: SM clock 800/1980 MHz at 90 C; "
        "clock-event reasons hw_slowdown, hw_power_brake_slowdown"
    )
    assert result["evidence"] == {
        **label(0),
        "sm_clock_mhz": 800.0,
        "max_sm_clock_mhz": 1980.0,
        "clock_ratio": 0.404,
        "temperature_c": 90.0,
        "clock_event_reasons": "0x000000000000008C",
        "active_reasons": ["sw_power_cap", "hw_slowdown", "hw_power_brake_slowdown"],
        "slowdown_reasons": ["hw_slowdown", "hw_power_brake_slowdown"],
    }


def test_slowdown_reason_without_clocks_is_a_concern_with_none_for_what_is_missing() -> None:
    # Given only the mask (sw thermal slowdown) on GPU 1; GPU 0 reports nothing throttling-related
    body = csv(gpu(0), gpu(1, clocks_event_reasons__active="0x20"))
    assert run(query.check_thermal_throttle, body) == [
        finding(
            "gpu.thermal_throttle",
            "CONCERN",
            "GPU 1 throttled: clock-event reasons sw_thermal_slowdown",
            {
                **label(1),
                "sm_clock_mhz": None,
                "max_sm_clock_mhz": None,
                "clock_ratio": None,
                "temperature_c": None,
                "clock_event_reasons": "0x0000000000000020",
                "active_reasons": ["sw_thermal_slowdown"],
                "slowdown_reasons": ["sw_thermal_slowdown"],
            },
            THROTTLE_THRESHOLD,
            common.NEXT_THROTTLE,
        )
    ]


def test_a_slow_clock_without_a_temperature_is_not_throttling() -> None:
    body = csv(gpu(0, **clocks("300", temp="[N/A]")))
    assert run(query.check_thermal_throttle, body)[0]["severity"] == "OK"


def test_unthrottled_gpus_are_ok_with_the_lowest_ratio_and_the_reasons_seen() -> None:
    # Given GPU 0 idle at 345/1980 MHz (reasons idle + power cap) and GPU 1 at full clock, a third GPU
    # with max SM clock 0 (no ratio) and no mask: not judged
    body = csv(
        gpu(0, **clocks("345", temp="41", mask="0x5")),
        gpu(1, **clocks("1980", temp="60", mask="0x10")),
        gpu(2, **clocks("100", max_sm="0", temp="90")),
    )
    assert run(query.check_thermal_throttle, body) == [
        finding(
            "gpu.thermal_throttle",
            "OK",
            "2 GPUs, no thermal/power slowdown (lowest SM clock 17% of max)",
            {
                "gpus": 2,
                "min_clock_ratio": 0.174,
                "active_reasons": ["gpu_idle", "sw_power_cap", "sync_boost"],
            },
            THROTTLE_THRESHOLD,
        )
    ]


def test_only_masks_reported_is_ok_without_a_ratio() -> None:
    body = csv(gpu(0, clocks_event_reasons__active="0x0"))
    assert run(query.check_thermal_throttle, body) == [
        finding(
            "gpu.thermal_throttle",
            "OK",
            "1 GPU, no thermal/power slowdown",
            {"gpus": 1, "min_clock_ratio": None, "active_reasons": []},
            THROTTLE_THRESHOLD,
        )
    ]


def test_throttle_limits_are_overridable() -> None:
    # Given ratio limit 0.8 and temperature limit 60: 1500/1980 (0.758) at 60 C is throttled
    body = csv(gpu(0, **clocks("1500", temp="60")))
    (result,) = run(
        query.check_thermal_throttle, body, gpu_throttle_clock_ratio=0.8, gpu_throttle_temperature_c=60
    )
    assert (result["severity"], result["summary"], result["threshold"]) == (
        "CONCERN",
        "GPU 0 throttled: SM clock 1500/1980 MHz at 60 C",
        "SM clock < 0.8 x max SM clock and temperature >= 60 C -> CONCERN; clock-event reasons "
        "hw_slowdown / sw_thermal / hw_thermal / hw_power_brake -> CONCERN",
    )


def test_decode_clock_event_reasons_reads_each_bit_once() -> None:
    assert query.decode_clock_event_reasons(0) == []
    assert query.decode_clock_event_reasons(0x48) == ["hw_slowdown", "hw_thermal_slowdown"]
    assert query.decode_clock_event_reasons(0x200) == []  # a bit NVIDIA does not define


# ------------------------------------------------------------------------------ gpu.ecc_uncorrected

ECC_THRESHOLD = "ecc.errors.uncorrected.volatile.total > 0 or ...aggregate.total > 0 -> CONCERN"


def ecc(volatile: str, aggregate: str, corrected: str = "0") -> dict[str, str]:
    return {
        "ecc.errors.uncorrected.volatile.total": volatile,
        "ecc.errors.uncorrected.aggregate.total": aggregate,
        "ecc.errors.corrected.volatile.total": corrected,
    }


def test_one_uncorrected_error_is_a_concern_with_the_counts() -> None:
    # Given GPU 1 with 1 volatile uncorrected error and the aggregate N/A; GPU 0 clean
    body = csv(gpu(0, **ecc("0", "0")), gpu(1, **ecc("1", "[N/A]", corrected="12")))
    assert run(query.check_ecc, body, rc=3) == [
        finding(
            "gpu.ecc_uncorrected",
            "CONCERN",
            "GPU 1 uncorrected ECC errors: volatile 1, aggregate 0",
            {
                **label(1),
                "uncorrected_volatile": 1,
                "uncorrected_aggregate": None,
                "corrected_volatile": 12,
                "section_rc": 3,
            },
            ECC_THRESHOLD,
            common.NEXT_ECC,
        )
    ]


def test_aggregate_alone_is_a_concern() -> None:
    body = csv(gpu(0, **ecc("[N/A]", "1")))
    (result,) = run(query.check_ecc, body)
    assert (result["severity"], result["summary"]) == (
        "CONCERN",
        "GPU 0 uncorrected ECC errors: volatile 0, aggregate 1",
    )


def test_zero_uncorrected_errors_are_ok_with_totals() -> None:
    # Given 0/0 on GPU 0, volatile 0 with aggregate N/A on GPU 1, and GPU 2 without ECC (not counted);
    # corrected errors do not matter
    body = csv(
        gpu(0, **ecc("0", "0", corrected="5")), gpu(1, **ecc("0", "[N/A]")), gpu(2, **ecc("[N/A]", "[N/A]"))
    )
    assert run(query.check_ecc, body) == [
        finding(
            "gpu.ecc_uncorrected",
            "OK",
            "2 GPUs, 0 uncorrected ECC errors (volatile and aggregate)",
            {"gpus": 2, "uncorrected_volatile_total": 0, "uncorrected_aggregate_total": 0},
            ECC_THRESHOLD,
        )
    ]


# ------------------------------------------------------------------------------ gpu.remapped_rows

REMAP_THRESHOLD = "remapped_rows.failure = Yes or remapped_rows.pending = Yes -> CONCERN"


def remap(pending: str, failure: str, correctable: str = "0", uncorrectable: str = "0") -> dict[str, str]:
    return {
        "remapped_rows.correctable": correctable,
        "remapped_rows.uncorrectable": uncorrectable,
        "remapped_rows.pending": pending,
        "remapped_rows.failure": failure,
    }


def test_failure_and_pending_are_concerns_with_their_counts() -> None:
    # Given GPU 0 healthy, GPU 1 failed (and pending: failure wins), GPU 2 pending (rc=3)
    body = csv(
        gpu(0, **remap("No", "No", correctable="2")),
        gpu(1, **remap("Yes", "Yes", uncorrectable="512")),
        gpu(2, **remap("Yes", "No", uncorrectable="1")),
    )
    assert run(query.check_remapped_rows, body, rc=3) == [
        finding(
            "gpu.remapped_rows",
            "CONCERN",
            "GPU 1 row remapping failed (out of spare rows)",
            {
                **label(1),
                "remapped_correctable": 0,
                "remapped_uncorrectable": 512,
                "pending": True,
                "failure": True,
                "section_rc": 3,
            },
            REMAP_THRESHOLD,
            common.NEXT_REMAP_FAILURE,
        ),
        finding(
            "gpu.remapped_rows",
            "CONCERN",
            "GPU 2 row remapping pending: a GPU reset is needed to activate it",
            {
                **label(2),
                "remapped_correctable": 0,
                "remapped_uncorrectable": 1,
                "pending": True,
                "failure": False,
                "section_rc": 3,
            },
            REMAP_THRESHOLD,
            common.NEXT_REMAP_PENDING,
        ),
    ]


def test_no_remapping_pending_or_failed_is_ok_with_totals() -> None:
    # Given two GPUs with remapped rows but nothing pending or failed, a third reporting only pending
    # (counts N/A: still judged, its counts add nothing), a fourth reporting nothing (not counted)
    body = csv(
        gpu(0, **remap("No", "No", correctable="2", uncorrectable="1")),
        gpu(1, **remap("No", "No", correctable="3", uncorrectable="4")),
        gpu(2, **remap("No", "[N/A]", correctable="[N/A]", uncorrectable="[N/A]")),
    )
    assert run(query.check_remapped_rows, body) == [
        finding(
            "gpu.remapped_rows",
            "OK",
            "3 GPUs, no row remapping pending or failed",
            {"gpus": 3, "remapped_correctable_total": 5, "remapped_uncorrectable_total": 5},
            REMAP_THRESHOLD,
        )
    ]


def test_failure_alone_reported_is_judged() -> None:
    body = csv(gpu(0, **{"remapped_rows.failure": "Yes"}))
    (result,) = run(query.check_remapped_rows, body)
    assert (result["severity"], result["evidence"]["pending"]) == ("CONCERN", None)


# ------------------------------------------------------------------------------ gpu.count


def test_gpu_count_matching_the_instance_type_is_ok_with_the_source() -> None:
    body = csv(*(gpu(0) for _ in range(8)))
    assert run(query.check_gpu_count, body, rc=3) == [
        finding(
            "gpu.count",
            "OK",
            "8 GPUs listed, as p5.48xlarge has",
            {
                "gpus": 8,
                "expected": 8,
                "model": "H100",
                "instance_type": "p5.48xlarge",
                "bus_ids": [BUS[0]] * 8,
                "source": "Amazon EC2 accelerated computing instance specifications; NVIDIA H100 datasheet "
                "(18 NVLinks)",
                "section_rc": 3,
            },
            "GPUs listed != 8 (p5.48xlarge: 8x H100) -> CONCERN",
        )
    ]


@pytest.mark.parametrize("listed", [7, 9])
def test_one_gpu_missing_or_extra_is_a_concern(listed: int) -> None:
    body = csv(*(gpu(i % 3) for i in range(listed)))
    (result,) = run(query.check_gpu_count, body)
    assert (result["severity"], result["summary"], result["next_step"], result["handoff"]) == (
        "CONCERN",
        f"{listed} GPUs listed; p5.48xlarge has 8 H100",
        common.NEXT_GPU_COUNT,
        G,
    )
    assert (
        result["evidence"]["gpus"],
        result["evidence"]["expected"],
        len(result["evidence"]["bus_ids"]),
    ) == (
        listed,
        8,
        listed,
    )


def test_single_gpu_type_listing_none_is_a_concern() -> None:
    (result,) = run(query.check_gpu_count, "No devices were found\n", instance_type="ml.g5.2xlarge")
    assert (result["severity"], result["summary"]) == ("CONCERN", "0 GPUs listed; g5.2xlarge has 1 A10G")


@pytest.mark.parametrize(
    ("instance_type", "named"), [("ml.m5.2xlarge", "m5.2xlarge"), (None, "an unknown instance type")]
)
def test_gpu_count_without_an_expectation_is_info(instance_type: str | None, named: str) -> None:
    body = csv(gpu(0))
    assert run(query.check_gpu_count, body, instance_type=instance_type) == [
        finding(
            "gpu.count",
            "INFO",
            f"1 GPU listed; expected GPU count for {named} not in the table",
            {"gpus": 1, "instance_type": None if instance_type is None else named},
            "GPUs listed != the instance type's GPU count -> CONCERN",
            handoff=None,
        )
    ]


def test_a_faulty_gpu_without_an_index_is_named_by_its_row_position_in_every_check() -> None:
    # Given three GPUs, the third (row position 2) with index [N/A] (as MIG / a lost GPU can print),
    # hot, at x8, throttled, with an uncorrected ECC error and a pending row remap
    fault = {
        "temperature.gpu": "95",
        **pcie(8, 16, "5", "5"),
        **clocks("800", temp="95", mask="0x40"),
        **ecc("1", "1"),
        **remap("Yes", "No"),
    }
    healthy = {
        "temperature.gpu": "40",
        **pcie(16, 16, "5", "5"),
        **clocks("1980", temp="40", mask="0x0"),
        **ecc("0", "0"),
        **remap("No", "No"),
    }
    body = csv(
        gpu(0, **{k.replace(".", "__"): v for k, v in healthy.items()}),
        gpu(1, **{k.replace(".", "__"): v for k, v in healthy.items()}),
        gpu(2, index="[N/A]", **{k.replace(".", "__"): v for k, v in fault.items()}),
    )
    for check in (
        query.check_temperature,
        query.check_pcie,
        query.check_thermal_throttle,
        query.check_ecc,
        query.check_remapped_rows,
    ):
        (result,) = run(check, body)
        assert result["severity"] == "CONCERN"
        assert result["summary"].startswith("GPU 2 ")
        assert {k: result["evidence"][k] for k in ("gpu", "bus_id", "name")} == label(2)


def test_the_index_nvidia_smi_prints_names_the_gpu_not_the_row_position() -> None:
    # Given GPUs listed as index 6 and 7 (rows 0 and 1), the second hot
    body = csv(gpu(0, index="6", temperature__gpu="40"), gpu(1, index="7", temperature__gpu="90"))
    (result,) = run(query.check_temperature, body)
    assert (result["summary"], result["evidence"]["gpu"], result["evidence"]["bus_id"]) == (
        "GPU 7 at 90 C (>= 88 C)",
        7,
        BUS[1],
    )
    body = csv(gpu(0, index="6", temperature__gpu="40"), gpu(1, index="7", temperature__gpu="41"))
    assert run(query.check_temperature, body)[0]["evidence"]["temperatures_c"] == {"6": 40.0, "7": 41.0}
