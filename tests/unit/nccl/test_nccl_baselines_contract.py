"""Published busbw per instance type (reviewed): which types have a cited curve, the point used at a
compared size, and None (-> INFO, never a made-up figure) for the others. p4d's own figure is pinned
where it is set, not here."""

from __future__ import annotations

import pytest

from hyperpod_perf.nccl.baselines import (
    AWS_NCCL_README,
    PUBLISHED_BUSBW,
    expected_busbw_gbps,
    instance_family,
    published_curve,
)

GIB = 1 << 30
MIB = 1 << 20
README = (
    "awslabs/awsome-distributed-training micro-benchmarks/nccl-tests/README.md @ 0edaf152, "
    "2-instance all_reduce_perf over EFA"
)


def test_the_cited_source_and_curves_of_p5_and_p4de():
    assert AWS_NCCL_README == README
    p5 = published_curve("p5.48xlarge")
    assert p5 is not None and p5.source == f"{README}: 2x p5.48xlarge table"
    assert p5.points == (
        (GIB, 438.955),
        (2 * GIB, 442.89),
        (4 * GIB, 465.1),
        (8 * GIB, 479.115),
        (16 * GIB, 487.175),
    )
    p4de = published_curve("p4de.24xlarge")
    assert p4de is not None and p4de.source == f"{README}: 2x p4de.24xlarge table"
    assert p4de.points == ((256 * MIB, 69.765), (512 * MIB, 74.29), (GIB, 76.825), (2 * GIB, 78.33))


@pytest.mark.parametrize("name", ["ml.p5.48xlarge", "P5.48XLARGE", "  ml.p5.48xlarge "])
def test_the_sagemaker_prefix_case_and_spaces_do_not_matter(name):
    assert published_curve(name) is PUBLISHED_BUSBW["p5.48xlarge"]


@pytest.mark.parametrize("name", [None, "", "ml.p5en.48xlarge", "ml.p5e.48xlarge", "g5.8xlarge", "p5"])
def test_no_cited_curve_is_none(name):
    assert published_curve(name) is None
    assert expected_busbw_gbps(name) is None and expected_busbw_gbps(name, GIB) is None


@pytest.mark.parametrize(
    ("size", "point"),
    [
        (GIB - 1, None),  # below the first published size
        (GIB, (GIB, 438.955)),  # at a point
        (2 * GIB - 1, (GIB, 438.955)),  # just below the next: the lower point
        (2 * GIB, (2 * GIB, 442.89)),
        (3 * GIB, (2 * GIB, 442.89)),
        (16 * GIB, (16 * GIB, 487.175)),
        (64 * GIB, (16 * GIB, 487.175)),  # past the last point
    ],
)
def test_the_point_at_or_below_a_compared_size(size, point):
    curve = published_curve("p5.48xlarge")
    assert curve is not None and curve.at(size) == point
    assert expected_busbw_gbps("ml.p5.48xlarge", size) == (point[1] if point else None)


def test_expected_busbw_without_a_size_is_the_largest_published_point():
    assert expected_busbw_gbps("p5.48xlarge") == 487.175
    assert expected_busbw_gbps("p4de.24xlarge") == 78.33
    assert expected_busbw_gbps("p4de.24xlarge", 512 * MIB) == 74.29


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("ml.p5.48xlarge", "p5"),
        ("ml.p6e-gb200.36xlarge", "p6e"),
        (" ML.P4DE.24XLARGE ", "p4de"),
        ("p5en.48xlarge", "p5en"),
        ("trn1", "trn1"),
    ],
)
def test_instance_family(name, family):
    assert instance_family(name) == family
