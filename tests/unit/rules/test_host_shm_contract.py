"""host.shm on a node without GPUs, field by field (reviewed): the OK / CONCERN / INFO findings with
their exact summary, evidence keys and values (size, estimated RAM and share, rounded), threshold text
(default and overridden), next step and handoff; which nodes count as GPU nodes (every accelerator
family prefix, other families, case, and nvidia-smi's presence when the type is unknown); a node
without GPUs and without /dev/shm.

The df tables are SYNTHETIC `df -kP` lines (test_shm_without_gpus.py's builder) except the real EKS pod
`df` (no devtmpfs row).
"""

from __future__ import annotations

from typing import Any

import pytest
from test_shm_without_gpus import EKS_POD_DF, GIB_KIB, _shm, _synthetic_df

from hyperpod_perf.domain.findings import Finding
from hyperpod_perf.rules.thresholds import Thresholds

NODE = "ip-10-1-2-3"
HANDOFF_I = "hyperpod-node-debugger § I"
THRESHOLD = "node without GPUs: /dev/shm >= 0.25 x RAM (RAM = 2 x devtmpfs)"
NEXT_STEP = (
    "Something shrank /dev/shm below the tmpfs default (half the RAM): remount it with its default size "
    "(`mount -o remount,size=50% /dev/shm`, as root) or fix the mount option that set it."
)
GPU_FLOOR_SUMMARY = "/dev/shm is 3 GiB, below 16 GiB"


def dumped(finding: Finding) -> dict[str, Any]:
    return finding.model_dump(mode="json")


def no_gpu_evidence(size_gib: float, instance_type: str | None, **extra: Any) -> dict[str, Any]:
    return {
        "size_gib": size_gib,
        "used_pct": 0.0,
        "filesystem": "tmpfs",
        "gpu_node": False,
        "instance_type": instance_type,
        **extra,
    }


def test_ok_field_by_field() -> None:
    # Given 16 GiB RAM (devtmpfs 8 GiB) and a 5 GiB /dev/shm: 31.25 % of RAM, above a quarter
    finding = _shm(_synthetic_df(8 * GIB_KIB, 5 * GIB_KIB), "ml.m5.xlarge")
    assert dumped(finding) == {
        "node": NODE,
        "check": "host.shm",
        "severity": "OK",
        "section": "I",
        "summary": "/dev/shm is 5 GiB, 31% of ~16 GiB RAM (node without GPUs)",
        "evidence": no_gpu_evidence(5.0, "m5.xlarge", ram_gib_estimated=16.0, share_of_ram=0.312),
        "threshold": THRESHOLD,
        "next_step": None,
        "handoff": None,
    }


def test_concern_field_by_field() -> None:
    # Given 16 GiB RAM and a 3 GiB /dev/shm: 18.75 % of RAM, below a quarter
    finding = _shm(_synthetic_df(8 * GIB_KIB, 3 * GIB_KIB), "ml.m5.xlarge")
    assert dumped(finding) == {
        "node": NODE,
        "check": "host.shm",
        "severity": "CONCERN",
        "section": "I",
        "summary": "/dev/shm is 3 GiB, 19% of ~16 GiB RAM on a node without GPUs (below 25%)",
        "evidence": no_gpu_evidence(3.0, "m5.xlarge", ram_gib_estimated=16.0, share_of_ram=0.188),
        "threshold": THRESHOLD,
        "next_step": NEXT_STEP,
        "handoff": HANDOFF_I,
    }


def test_ram_and_size_are_rounded_to_two_decimals_and_the_share_to_three() -> None:
    # Given devtmpfs 1234567 KiB (RAM 2.35465... GiB) and /dev/shm 345678 KiB (0.32966... GiB)
    finding = _shm(_synthetic_df(1_234_567, 345_678), "c5.large")
    # share = 345678 / 2469134 = 0.14000...
    assert finding.evidence["ram_gib_estimated"] == 2.35
    assert finding.evidence["size_gib"] == 0.33
    assert finding.evidence["share_of_ram"] == 0.14
    assert finding.summary == "/dev/shm is 0.33 GiB, 14% of ~2.35 GiB RAM on a node without GPUs (below 25%)"


def test_the_first_devtmpfs_row_gives_the_ram() -> None:
    # Given a second devtmpfs row (a container's) after the node's: the first one is the node's /dev
    df = _synthetic_df(8 * GIB_KIB, 5 * GIB_KIB) + f"devtmpfs {GIB_KIB} 0 {GIB_KIB} 0% /mnt/dev\n"
    assert _shm(df, "m5.xlarge").evidence["ram_gib_estimated"] == 16.0


def test_overridden_fraction_in_the_threshold_and_summary() -> None:
    # Given a fraction of 0.3: 5 of 16 GiB (31.25 %) is inside, 4.5 of 16 GiB (28.1 %) outside
    limits = Thresholds(shm_min_ram_fraction_no_gpu=0.3)
    inside = _shm(_synthetic_df(8 * GIB_KIB, 5 * GIB_KIB), "m5.xlarge", thresholds=limits)
    outside = _shm(_synthetic_df(8 * GIB_KIB, 9 * GIB_KIB // 2), "m5.xlarge", thresholds=limits)
    threshold = "node without GPUs: /dev/shm >= 0.3 x RAM (RAM = 2 x devtmpfs)"
    assert (inside.severity.value, inside.threshold) == ("OK", threshold)
    assert (outside.severity.value, outside.threshold) == ("CONCERN", threshold)
    assert outside.summary == "/dev/shm is 4.5 GiB, 28% of ~16 GiB RAM on a node without GPUs (below 30%)"
    # And the GPU floor does not apply to this node: 4.5 GiB is far below 16 GiB, yet judged on RAM
    assert _shm(_synthetic_df(8 * GIB_KIB, 9 * GIB_KIB // 2), "m5.xlarge").severity.value == "OK"


def test_ram_not_readable_field_by_field() -> None:
    # Given the real EKS pod df: /dev/shm 64 MiB, no devtmpfs row
    assert dumped(_shm(EKS_POD_DF, "ml.m5.xlarge")) == {
        "node": NODE,
        "check": "host.shm",
        "severity": "INFO",
        "section": "I",
        "summary": "/dev/shm is 0.06 GiB on a node without GPUs; RAM not readable from df (no devtmpfs), "
        "not judged",
        "evidence": {**no_gpu_evidence(0.06, "m5.xlarge"), "filesystem": "shm"},
        "threshold": None,
        "next_step": None,
        "handoff": None,
    }


def test_devtmpfs_of_size_zero_is_ram_not_readable() -> None:
    # Given a devtmpfs row of 0 blocks, no instance type and no nvidia-smi section
    finding = _shm(_synthetic_df(0, 3 * GIB_KIB), "")
    assert finding.severity.value == "INFO"
    assert finding.evidence == no_gpu_evidence(3.0, None)


@pytest.mark.parametrize(
    "instance_type",
    [
        "ml.p4d.24xlarge",
        "p5.48xlarge",
        "ml.g5.8xlarge",
        "gr6.4xlarge",
        "ml.trn1.32xlarge",
        "inf2.xlarge",
        "dl1.24xlarge",
        "P5.48XLARGE",  # the type's case does not matter
    ],
)
def test_accelerator_families_keep_the_16_gib_floor(instance_type: str) -> None:
    # Given a 3 GiB /dev/shm, a quarter of RAM would accept it (16 GiB RAM, 19 %: outside either way)
    # and 3 GiB of 8 GiB RAM (37 %) is inside the RAM rule: only the GPU floor makes it a CONCERN
    finding = _shm(_synthetic_df(4 * GIB_KIB, 3 * GIB_KIB), instance_type)
    assert (finding.severity.value, finding.summary) == ("CONCERN", GPU_FLOOR_SUMMARY)
    assert "gpu_node" not in finding.evidence


@pytest.mark.parametrize(
    "instance_type", ["ml.m5.xlarge", "c5.4xlarge", "r7i.2xlarge", "t3.medium", "x2idn.16xlarge"]
)
def test_other_families_are_judged_on_ram(instance_type: str) -> None:
    finding = _shm(_synthetic_df(4 * GIB_KIB, 3 * GIB_KIB), instance_type)
    assert finding.severity.value == "OK"
    assert finding.summary == "/dev/shm is 3 GiB, 38% of ~8 GiB RAM (node without GPUs)"
    assert finding.evidence["instance_type"] == instance_type.removeprefix("ml.")


@pytest.mark.parametrize(
    ("gpu_query", "gpu_node"),
    [
        (None, False),  # no nvidia-smi section at all
        (("", 127), False),  # nvidia-smi not installed
        (("index, name\n0, NVIDIA H100 80GB HBM3\n", 0), True),  # nvidia-smi answered
        (("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", 9), True),
        (("", 124), True),  # timed out: the tool is there
    ],
)
def test_unknown_type_is_a_gpu_node_when_nvidia_smi_is_there(
    gpu_query: tuple[str, int] | None, gpu_node: bool
) -> None:
    finding = _shm(_synthetic_df(4 * GIB_KIB, 3 * GIB_KIB), "", gpu_query)
    if gpu_node:
        assert (finding.severity.value, finding.summary) == ("CONCERN", GPU_FLOOR_SUMMARY)
    else:
        assert (finding.severity.value, finding.evidence["gpu_node"]) == ("OK", False)


def test_node_without_gpus_and_without_dev_shm_is_a_concern() -> None:
    # Given a controller whose df has no /dev/shm row
    df = "\n".join(
        line for line in _synthetic_df(4 * GIB_KIB, 3 * GIB_KIB).splitlines() if "/dev/shm" not in line
    )
    finding = _shm(df + "\n", "m5.xlarge")
    assert (finding.severity.value, finding.summary) == ("CONCERN", "/dev/shm is not mounted")
    assert finding.evidence == {"mountpoints": ["/", "/dev"]}
