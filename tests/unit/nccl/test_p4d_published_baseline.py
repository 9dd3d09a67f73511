"""p4d.24xlarge has its own published 2-node all_reduce curve, no longer the p4de one.

Why: the p4de table (78.33 GB/s at 2 GiB, a newer stack) made every healthy p4d run of the
aws-samples/aws-efa-eks guide (~43.8 GB/s at 4 GiB over EFA with GPUDirect RDMA) read as
`nccl.below_baseline`. p4d now reads its figure from that guide, cited in nccl/baselines.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nccl_synth import synthetic_matrix

from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.nccl.analysis import analyze_logs, analyze_measurements
from hyperpod_perf.nccl.baselines import expected_busbw_gbps, published_curve

GIB = 1 << 30
CORPUS_LOG = (
    Path(__file__).resolve().parents[2]
    / "corpus/cases/nccl-tests/p4d-2node_eks-mpijob_a100-40gb_nccl-2.8.3.txt"
).read_text(encoding="utf-8")


def _baseline(analysis):
    (finding,) = [f for f in analysis.findings if f.check == "nccl.below_baseline"]
    return finding


def test_p4d_curve_is_its_own_and_cites_the_aws_efa_eks_guide():
    # Given the published curves of p4d and p4de
    p4d, p4de = published_curve("ml.p4d.24xlarge"), published_curve("p4de.24xlarge")
    # Then p4d has its own points, from the aws-efa-eks guide, up to 4 GiB
    assert p4d is not None and p4de is not None
    assert p4d.points != p4de.points
    assert "aws-samples/aws-efa-eks" in p4d.source
    assert expected_busbw_gbps("p4d.24xlarge", 2 * GIB) == 43.3
    assert expected_busbw_gbps("p4d.24xlarge") == 43.765
    assert expected_busbw_gbps("p4de.24xlarge", 2 * GIB) == 78.33


def test_the_guides_own_healthy_p4d_run_meets_the_p4d_figure():
    # Given the guide's healthy 2x p4d log, read as two pairs (4 GiB reached by both)
    logs = [("a__b.log", CORPUS_LOG), ("a__c.log", CORPUS_LOG)]
    analysis = analyze_logs(logs, instance_type="p4d.24xlarge")
    # Then it is compared at 4 GiB with the p4d figure, not the p4de one, and meets it
    finding = _baseline(analysis)
    assert finding.severity is Severity.OK
    assert finding.evidence["expected_gbps"] == 43.765
    assert finding.evidence["floor_gbps"] == 39.389  # 0.9 x 43.765, rounded to 3 places
    assert finding.evidence["compared_at_bytes"] == 4 * GIB


@pytest.mark.parametrize(
    ("median", "severity"),
    [
        (38.97, Severity.OK),  # at the floor: 0.9 x 43.3 (2 GiB)
        (38.98, Severity.OK),  # just inside
        (38.96, Severity.CONCERN),  # just outside
        (5.0, Severity.CONCERN),  # a pair on TCP sockets
        (78.0, Severity.OK),  # a newer stack on the same 4x 100 Gbps EFA
    ],
)
def test_p4d_floor_at_2_gib(median, severity):
    # Given three p4d nodes whose pairs all read `median` at 2 GiB
    _, measurements = synthetic_matrix(3, good_gbps=median, size_bytes=2 * GIB)
    # When compared with the p4d published figure
    finding = _baseline(analyze_measurements(measurements, instance_type="ml.p4d.24xlarge"))
    # Then below 0.9 x 43.3 GB/s is a CONCERN, at or above it OK
    assert finding.severity is severity
    assert finding.evidence["expected_gbps"] == 43.3
