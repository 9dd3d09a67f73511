"""Published 2-node all_reduce_perf bus bandwidth per instance type, by message size (GB/s).

Why a curve and not one number: busbw keeps climbing with the message size (a healthy p5 pair
reads ~438 GB/s at 1 GiB and ~487 GB/s at 16 GiB), so a figure means something only at the size
it was measured at. The analysis compares the pairs' median at the largest size every ranked log
reached with the published value at that same size (`expected_at`).

A type is in the table only when a published measurement of it is cited here; any other type
gets INFO, never a made-up expectation.

Sources:
- `AWS_NCCL_README`: the nccl-tests guide in github awslabs/awsome-distributed-training,
  micro-benchmarks/nccl-tests/README.md (commit 0edaf1526bc47185ce5f827100416f99bd7b69e1), its two
  all_reduce_perf tables for 2 instances over EFA (both kept verbatim in
  tests/fixtures/real/nccl-tests): 2x p4de.24xlarge (16 A100, 8 B..2 GiB) and 2x p5.48xlarge
  (16 H100, 8 B..16 GiB). Each value below is the mean of that row's out-of-place and in-place
  busbw.
- `AWS_EFA_EKS_README`: github aws-samples/aws-efa-eks README.md (commit
  9d6557e1689b2dbb59c485d73fcf425833773077), the guide's working 2x p4d.24xlarge EKS run over EFA
  with GPUDirect RDMA (NCCL 2.9.9, 16 A100-SXM4-40GB, 8 B..4 GiB; rank 0's table kept in
  tests/corpus/cases/nccl-tests). p4d gets its own curve from it and no longer borrows the p4de
  one: that p4de table (a 2023+ stack) reads ~78 GB/s at 2 GiB where this p4d run reads ~43 GB/s,
  so p4d pairs judged against the p4de figure were called below baseline while healthy. The
  aws-ofi-nccl issue #64 (2x p4d, 2021) states the same expectation ("bus bandwidth over 40GB/s").
  The figure is the lower, older published one: a p4d reading under 0.9 x it is below what AWS
  showed as working, whatever the stack.
- p5e/p5en (H200; p5en with EFAv3) and p6 types: no published 2-node table found -> not listed.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

GIB = 1 << 30
MIB = 1 << 20

AWS_NCCL_README = (
    "awslabs/awsome-distributed-training micro-benchmarks/nccl-tests/README.md @ 0edaf152, "
    "2-instance all_reduce_perf over EFA"
)


@dataclass(frozen=True)
class PublishedCurve:
    """busbw (GB/s) at message sizes (bytes), ascending, and where the figures come from."""

    points: tuple[tuple[int, float], ...]
    source: str

    def at(self, size_bytes: int) -> tuple[int, float] | None:
        """The published point at the largest size <= `size_bytes`; None below the first point.

        Why not interpolate: the comparison must be against a measured value, and the curve is
        monotonic, so the point at or below the compared size is the conservative (lower) one.
        """
        sizes = [s for s, _ in self.points]
        i = bisect_right(sizes, size_bytes)
        return self.points[i - 1] if i else None


_P4DE = PublishedCurve(
    points=(
        (256 * MIB, 69.765),  # 69.89 / 69.64
        (512 * MIB, 74.29),  # 74.28 / 74.30
        (1 * GIB, 76.825),  # 76.79 / 76.86
        (2 * GIB, 78.33),  # 78.33 / 78.33
    ),
    source=f"{AWS_NCCL_README}: 2x p4de.24xlarge table",
)
AWS_EFA_EKS_README = (
    "aws-samples/aws-efa-eks README.md @ 9d6557e1, 2x p4d.24xlarge all_reduce_perf over EFA (NCCL 2.9.9)"
)
_P4D = PublishedCurve(
    points=(
        (256 * MIB, 37.76),  # 38.04 / 37.48
        (512 * MIB, 41.155),  # 41.10 / 41.21
        (1 * GIB, 42.47),  # 42.48 / 42.46
        (2 * GIB, 43.3),  # 43.36 / 43.24
        (4 * GIB, 43.765),  # 43.81 / 43.72
    ),
    source=AWS_EFA_EKS_README,
)
_P5 = PublishedCurve(
    points=(
        (1 * GIB, 438.955),  # 436.95 / 440.96
        (2 * GIB, 442.89),  # 443.72 / 442.06
        (4 * GIB, 465.1),  # 465.87 / 464.33
        (8 * GIB, 479.115),  # 479.28 / 478.95
        (16 * GIB, 487.175),  # 487.09 / 487.26
    ),
    source=f"{AWS_NCCL_README}: 2x p5.48xlarge table",
)

PUBLISHED_BUSBW: dict[str, PublishedCurve] = {
    "p4d.24xlarge": _P4D,
    "p4de.24xlarge": _P4DE,
    "p5.48xlarge": _P5,
}


def instance_family(instance_type: str) -> str:
    """`ml.p5.48xlarge` -> `p5`; `ml.p6e-gb200.36xlarge` -> `p6e`."""
    name = instance_type.strip().lower().removeprefix("ml.")
    return name.partition(".")[0].partition("-")[0]


def published_curve(instance_type: str | None) -> PublishedCurve | None:
    """The published curve for `ml.p5.48xlarge` / `p5.48xlarge`; None when not given or not cited."""
    if not instance_type:
        return None
    return PUBLISHED_BUSBW.get(instance_type.strip().lower().removeprefix("ml."))


def expected_busbw_gbps(instance_type: str | None, size_bytes: int | None = None) -> float | None:
    """The published busbw at `size_bytes` (default: the curve's largest size), or None."""
    curve = published_curve(instance_type)
    if curve is None:
        return None
    point = curve.points[-1] if size_bytes is None else curve.at(size_bytes)
    return point[1] if point else None
