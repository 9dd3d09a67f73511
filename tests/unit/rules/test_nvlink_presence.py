"""gpu.nvlink_inactive when a GPU has no working NVLink at all: NVML's "all links are inActive"
and nvidia-smi's "Device does not have or support Nvlink".

Why: both messages are normal on a card that has no NVLink bridge (a desktop GeForce) or no
NVLink (an L40S); they are a fault only where the GPU should have NVLink — an NVLink instance
type, or, the type unknown, a GPU model only built as an NVLink part (SXM / HBM3 / B200).
Outputs are the real captures of the corpus (nvidia_gpu_exporter) and of gpud issue 1085.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.parse.nvidia_smi import parse_nvlink_status
from hyperpod_perf.rules import gpu
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.gpu_sku import nvlink_expected

TESTS = Path(__file__).resolve().parents[2]
RTX2080_INACTIVE = TESTS / "corpus/cases/nvlink-status/rtx2080super-595_595.71.05.txt"
L40S_NO_NVLINK = TESTS / "corpus/cases/nvlink-status/l40s_595.80.txt"
RTX4080_NO_NVLINK = TESTS / "corpus/cases/nvlink-status/rtx4080super_595.71.05.txt"
B200_INACTIVE = TESTS / "fixtures/real/nvlink-status/b200_nvlink-s_all-links-inactive_gpud-issue1085.txt"


def _nvlink_findings(path: Path, instance_type: str = "") -> tuple[list[Finding], NodeContext]:
    """The gpu.nvlink_inactive findings of a node whose only GPU section is this nvlink-status."""
    meta = f"hostname=ip-10-1-2-3\ninstance_type={instance_type}\n"
    text = render_container([("meta", meta, 0), ("nvlink-status", path.read_text(encoding="utf-8"), 0)])
    ctx = NodeContext(parse_container(text, "node.txt"))
    return [f for f in gpu.evaluate(ctx) if f.check == "gpu.nvlink_inactive"], ctx


def test_does_not_have_or_support_nvlink_is_read_not_a_parse_failure():
    # Given the L40S capture: `Device does not have or support Nvlink` under GPU 0
    (gpu0,) = parse_nvlink_status(L40S_NO_NVLINK.read_text(encoding="utf-8"))
    # Then the parser keeps the message, with no links and nothing else set
    assert gpu0.no_nvlink == "Device does not have or support Nvlink"
    assert (gpu0.links, gpu0.all_inactive, gpu0.unsupported) == ({}, None, None)


@pytest.mark.parametrize("path", [L40S_NO_NVLINK, RTX4080_NO_NVLINK])
def test_gpu_without_nvlink_on_an_unknown_type_is_info(path):
    # Given a PCIe / desktop GPU saying it has no NVLink, instance type unknown
    findings, ctx = _nvlink_findings(path)
    # Then one INFO naming why, and no collect.node finding
    (finding,) = findings
    assert finding.severity is Severity.INFO
    assert finding.summary.startswith("1 GPU without NVLink (Device does not have or support Nvlink)")
    assert "instance type unknown" in finding.summary
    assert ctx.collection_findings == []


@pytest.mark.parametrize(
    ("instance_type", "severity"),
    [
        ("ml.g6e.4xlarge", Severity.INFO),  # L40S instance type: no NVLink
        ("ml.p5.48xlarge", Severity.CONCERN),  # an NVLink type: the driver sees none of the links
        ("ml.c5.xlarge", Severity.INFO),  # a type not in the GPU table, L40S not NVLink-only
    ],
)
def test_gpu_without_nvlink_is_a_concern_only_where_nvlink_is_expected(instance_type, severity):
    findings, _ = _nvlink_findings(L40S_NO_NVLINK, instance_type)
    (finding,) = findings
    assert finding.severity is severity
    if severity is Severity.CONCERN:
        assert finding.evidence["gpu"] == 0 and finding.evidence["no_nvlink"] is True


@pytest.mark.parametrize(
    ("path", "instance_type", "severity"),
    [
        (RTX2080_INACTIVE, "", Severity.INFO),  # desktop card, no bridge, no type: the corpus case
        (RTX2080_INACTIVE, "ml.g5.2xlarge", Severity.INFO),  # a type without NVLink
        (RTX2080_INACTIVE, "ml.p4d.24xlarge", Severity.CONCERN),  # an NVLink type
        (B200_INACTIVE, "", Severity.CONCERN),  # no type, but B200 is only built with NVLink
        (B200_INACTIVE, "ml.p6-b200.48xlarge", Severity.CONCERN),
    ],
)
def test_all_links_inactive_is_a_concern_only_where_nvlink_is_expected(path, instance_type, severity):
    findings, ctx = _nvlink_findings(path, instance_type)
    assert [f.severity for f in findings] == [severity]
    assert ctx.collection_findings == []


@pytest.mark.parametrize(
    ("instance_type", "name", "expected"),
    [
        ("p5.48xlarge", "NVIDIA GeForce RTX 2080 SUPER", True),  # the type decides when known
        ("g6e.xlarge", "NVIDIA B200", False),
        (None, "NVIDIA A100-SXM4-40GB", True),
        (None, "Tesla V100-SXM2-32GB", True),
        (None, "NVIDIA H100 80GB HBM3", True),
        (None, "NVIDIA H200", True),
        (None, "NVIDIA B200", True),
        (None, "NVIDIA GB200", True),
        (None, "NVIDIA H100 PCIe", None),
        (None, "NVIDIA H200 NVL", None),
        (None, "NVIDIA L40S", None),
        (None, "NVIDIA GeForce RTX 2080 SUPER", None),
    ],
)
def test_nvlink_expected_from_type_then_model(instance_type, name, expected):
    assert nvlink_expected(instance_type, name) is expected
