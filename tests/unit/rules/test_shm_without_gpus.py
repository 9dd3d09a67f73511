"""host.shm on a node without GPUs (a HyperPod controller / login node): judged against its RAM.

Why: the 16 GiB floor is for NCCL and DataLoader workers on GPU nodes. The real `df -h` of a
HyperPod Slurm head node (awslabs/ai-on-sagemaker-hyperpod docs) shows /dev/shm 3.8G, the tmpfs
default of half its small RAM (devtmpfs 3.8G too): healthy, not a CONCERN. A /dev/shm shrunk far
below the default is still one. Synthetic df lines below are built in the `df -kP` layout and
say so; the head node output is the real one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.rules import host
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.thresholds import Thresholds

REAL = Path(__file__).resolve().parents[2] / "fixtures/real/iostat-proc"
HEAD_NODE_DF = (REAL / "df-h_hyperpod-slurm-headnode_fsx-lustre_opt-sagemaker.txt").read_text(
    encoding="utf-8"
)
EKS_POD_DF = (REAL / "df_1k-blocks_hyperpod-eks-pod_emptydir-nvme_with-prompt.txt").read_text(
    encoding="utf-8"
)
GIB_KIB = 1024 * 1024


def _shm(df_text: str, instance_type: str = "", gpu_query: tuple[str, int] | None = None, thresholds=None):
    sections = [("meta", f"hostname=ip-10-1-2-3\ninstance_type={instance_type}\n", 0), ("df", df_text, 0)]
    if gpu_query is not None:
        sections.append(("gpu-query", *gpu_query))
    ctx = NodeContext(parse_container(render_container(sections), "node.txt"), thresholds or Thresholds())
    (finding,) = [f for f in host.evaluate(ctx) if f.check == "host.shm"]
    return finding


def _synthetic_df(devtmpfs_kib: int, shm_kib: int) -> str:
    """SYNTHETIC `df -kP`: a devtmpfs of the given size (half the RAM) and a /dev/shm."""
    return (
        "Filesystem 1024-blocks Used Available Capacity Mounted on\n"
        f"/dev/root {146 * GIB_KIB} {59 * GIB_KIB} {87 * GIB_KIB} 41% /\n"
        f"devtmpfs {devtmpfs_kib} 0 {devtmpfs_kib} 0% /dev\n"
        f"tmpfs {shm_kib} 0 {shm_kib} 0% /dev/shm\n"
    )


@pytest.mark.parametrize(
    ("instance_type", "gpu_query"),
    [
        ("", None),  # the corpus case: no type, no nvidia-smi section
        ("", ("", 127)),  # nvidia-smi not installed
        ("ml.m5.xlarge", None),  # a controller instance type
        ("ml.t3.medium", ("", 127)),
    ],
)
def test_real_head_node_shm_at_half_its_ram_is_ok(instance_type, gpu_query):
    finding = _shm(HEAD_NODE_DF, instance_type, gpu_query)
    assert finding.severity is Severity.OK
    assert finding.evidence["gpu_node"] is False
    assert (finding.evidence["size_gib"], finding.evidence["ram_gib_estimated"]) == (3.8, 7.6)
    assert finding.evidence["share_of_ram"] == 0.5
    assert finding.summary == "/dev/shm is 3.8 GiB, 50% of ~7.6 GiB RAM (node without GPUs)"


@pytest.mark.parametrize(
    ("instance_type", "gpu_query"),
    [
        ("ml.p4d.24xlarge", None),  # a GPU type: the 16 GiB floor
        ("ml.trn1.32xlarge", None),  # Trainium: an accelerator node too
        ("", ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", 9)),
    ],
)
def test_same_df_on_a_gpu_node_keeps_the_16_gib_floor(instance_type, gpu_query):
    finding = _shm(HEAD_NODE_DF, instance_type, gpu_query)
    assert finding.severity is Severity.CONCERN
    assert finding.summary == "/dev/shm is 3.8 GiB, below 16 GiB"


@pytest.mark.parametrize(
    ("shm_kib", "thresholds", "severity"),
    [
        (4 * GIB_KIB, Thresholds(), Severity.OK),  # at the limit: 4 of 16 GiB = 0.25
        (4 * GIB_KIB + 1, Thresholds(), Severity.OK),  # just inside
        (4 * GIB_KIB - 1, Thresholds(), Severity.CONCERN),  # just outside
        (64 * 1024, Thresholds(), Severity.CONCERN),  # a container's 64 MiB
        (4 * GIB_KIB, Thresholds(shm_min_ram_fraction_no_gpu=0.5), Severity.CONCERN),  # overridden
        (8 * GIB_KIB, Thresholds(shm_min_ram_fraction_no_gpu=0.5), Severity.OK),
    ],
)
def test_share_of_ram_boundary(shm_kib, thresholds, severity):
    # Given a node without GPUs with 16 GiB RAM (devtmpfs 8 GiB)
    finding = _shm(_synthetic_df(8 * GIB_KIB, shm_kib), "ml.m5.xlarge", thresholds=thresholds)
    # Then /dev/shm below the fraction of RAM is a CONCERN, at or above it OK
    assert finding.severity is severity


def test_without_devtmpfs_the_ram_is_unknown_and_shm_is_not_judged():
    # Given the real EKS pod df (no devtmpfs row; /dev/shm 64 MiB) on a node without GPUs
    finding = _shm(EKS_POD_DF, "ml.m5.xlarge")
    assert finding.severity is Severity.INFO
    assert "RAM not readable from df" in finding.summary
