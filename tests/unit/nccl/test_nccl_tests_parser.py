"""The nccl-tests parser against every real output in the shared fixtures, and synthetic variants."""

from __future__ import annotations

import pytest
from nccl_synth import DATA, REAL

from hyperpod_perf.parse.nccl_tests import (
    NcclTestsParseError,
    parse_nccl_tests,
    parse_nccl_tests_strict,
    strip_launcher_prefix,
)


def _only_run(name: str):
    log = parse_nccl_tests((REAL / name).read_text(encoding="utf-8"))
    assert len(log.runs) == 1
    return log, log.runs[0]


def test_p5_srun_label_16g_reads_every_row_and_the_top_busbw():
    # Given the real 2x p5 srun --label output (8 B .. 16 GiB, no summary lines kept by its author)
    log, run = _only_run("p5-2node_srun-label_allreduce-16G.txt")
    # Then the `0: ` prefix is stripped and all 32 rows are read
    assert log.prefix_stripped
    assert len(run.rows) == 32
    assert run.rows[0].size_bytes == 8 and run.rows[-1].size_bytes == 17179869184
    last = run.rows[-1]
    assert last.out_of_place.busbw_gbps == 487.09 and last.in_place.busbw_gbps == 487.26
    assert (
        last.out_of_place.time_us == 66132
        and last.dtype == "float"
        and last.redop == "sum"
        and last.root == -1
    )
    # And the pair figure is the 16 GiB mean (larger than the 8 GiB mean 479.115)
    assert run.pair_busbw_gbps == pytest.approx((487.09 + 487.26) / 2)
    assert run.wrong_total == 0 and not run.correctness_failed
    # And having no summary line, the run is flagged as cut short
    assert run.truncated and run.avg_busbw_gbps is None
    assert run.hosts == ()


def test_p4de_srun_label_reads_78_gbps_at_2g():
    _, run = _only_run("p4de-2node_srun-label_allreduce.txt")
    assert len(run.rows) == 29
    assert run.largest_size_bytes == 2147483648
    assert run.pair_busbw_gbps == pytest.approx(78.33)
    # 1 GiB row: 76.79 / 76.86 — lower, so the 2 GiB size wins
    assert run.rows[-2].out_of_place.busbw_gbps == 76.79
    assert run.truncated


def test_p5_mpirun_prefix_excerpt_with_elision_and_summary():
    # Given the real EKS excerpt: `[1,0]<stdout>:` prefix, `...` elision, summary lines present
    log, run = _only_run("p5-2node_mpirun-prefix_eks-excerpt.txt")
    assert log.prefix_stripped
    assert len(run.rows) == 7
    assert run.elided and not run.truncated
    assert run.out_of_bounds == 0 and run.out_of_bounds_status == "OK"
    assert run.avg_busbw_gbps == pytest.approx(52.9753)
    # The figure is the 2 GiB size (437.84), not the 1 GiB one (313.29): the curve is still climbing
    assert run.pair_busbw_gbps == pytest.approx((437.79 + 437.89) / 2)
    assert any("elided" in p for p in run.problems)


def test_g5_low_bandwidth_excerpt():
    _, run = _only_run("g5-8xl-2node_eks_mpirun-prefix_low-bw_excerpt.txt")
    assert [r.size_bytes for r in run.rows] == [262144, 524288, 1048576, 2097152, 4194304]
    assert run.avg_busbw_gbps == pytest.approx(1.15327)
    assert run.pair_busbw_gbps == pytest.approx((2.40 + 2.51) / 2)
    assert run.elided and not run.truncated


def test_h100_tree_excerpt_without_prefix():
    log, run = _only_run("h100-2node-1gpu-each_mpirun_tree_low-bw_excerpt.txt")
    assert not log.prefix_stripped
    assert len(run.rows) == 5
    assert run.rows[0].in_place.time_us == 93.35
    # Top two sizes: 32 MiB (41.415) and 16 MiB (39.925) -> 41.415
    assert run.pair_busbw_gbps == pytest.approx((41.31 + 41.52) / 2)
    assert run.truncated


def test_header_only_excerpt_names_both_hosts_but_measures_nothing():
    # Given the real 16-rank header (cut at rank 11) from two hosts with right-aligned names
    log, run = _only_run("h100-2node-16rank_header-only_busbw0-issue_excerpt.txt")
    assert run.n_threads == 1 and run.n_gpus == 1
    assert run.min_bytes == 134217728 and run.max_bytes == 2147483648
    assert run.iters == 10 and run.validation == 1
    assert run.hosts == ("h100-2", "h100-4")
    assert len(run.ranks) == 12
    r8 = run.ranks[8]
    assert (r8.rank, r8.group, r8.pid, r8.host, r8.device) == (8, 0, 739786, "h100-4", 0)
    assert r8.bus_id == "0002:00:01" and r8.gpu_name == "NVIDIA H100 80GB HBM3"
    # Then there is no figure, and the strict parser says so
    assert run.pair_busbw_gbps is None and run.truncated
    assert "no measured busbw in any run" in log.problems
    with pytest.raises(NcclTestsParseError):
        parse_nccl_tests_strict((REAL / "h100-2node-16rank_header-only_busbw0-issue_excerpt.txt").read_text())


def test_new_format_with_wrong_results_and_failed_out_of_bounds():
    log = parse_nccl_tests((DATA / "synthetic_v2.18_two-hosts_wrong-and-oob-failed.txt").read_text())
    (run,) = log.runs
    assert run.tests_version == "2.18.3" and run.collective == "all_reduce_perf" and run.concluded
    assert run.nccl_version == "2.23.4+cuda12.6"
    assert run.hosts == ("ip-10-1-0-11", "ip-10-1-0-12")
    assert run.wrong_total == 5 and run.out_of_bounds == 5 and run.out_of_bounds_status == "FAILED"
    assert run.correctness_failed
    assert run.avg_busbw_gbps == pytest.approx(359.187)
    assert run.pair_busbw_gbps == pytest.approx((372.69 + 371.46) / 2)
    assert not run.truncated and not run.problems


def test_old_format_two_appended_runs_with_validation_off():
    # Given two old-style runs (no '#' on nThread/summary lines, `#   Rank  0 Pid` lines, N/A #wrong)
    log = parse_nccl_tests((DATA / "synthetic_old-format_validation-off_two-runs.txt").read_text())
    assert len(log.runs) == 2
    first, second = log.runs
    assert first.hosts == ("node-a", "node-b") and second.hosts == ("node-a", "node-b")
    assert first.validation == 0 and first.wrong_total is None
    assert first.rows[0].root is None and first.rows[0].out_of_place.wrong is None
    assert first.out_of_bounds_status == "OK" and first.avg_busbw_gbps == pytest.approx(0.568333)
    assert first.pair_busbw_gbps == pytest.approx((0.83 + 0.76) / 2)
    # And the second run stops at 2 MiB of maxBytes 4 MiB, with no summary: flagged
    assert second.truncated and any("table stops at 2097152" in p for p in second.problems)
    assert second.pair_busbw_gbps == pytest.approx(max((0.69 + 0.31) / 2, (0.51 + 0.32) / 2))


@pytest.mark.parametrize(
    ("line", "expected", "had"),
    [
        ("0: #  size", "#  size", True),
        ("12:         8   2 float", "        8   2 float", True),
        ("[1,0]<stdout>:# Avg bus bandwidth    : 1.2", "# Avg bus bandwidth    : 1.2", True),
        ("[1,13]<stderr>:NCCL WARN x", "NCCL WARN x", True),
        ("[pod/launcher-abc/mpi] # Out of bounds values : 0 OK", "# Out of bounds values : 0 OK", True),
        ("     8388608       2097152     float", "     8388608       2097152     float", False),
    ],
)
def test_launcher_prefixes(line, expected, had):
    assert strip_launcher_prefix(line) == (expected, had)


def test_arbitrary_text_gives_problems_not_exceptions():
    log = parse_nccl_tests("hello\nSegmentation fault (core dumped)\n")
    assert log.runs == [] and log.problems == ["no nccl-tests output found"]


def test_nan_average_is_reported_not_kept():
    log = parse_nccl_tests(
        "  8 2 float sum -1 1.0 0.00 0.00 0 1.0 0.00 0.00 0\n# Avg bus bandwidth    : -nan \n"
    )
    assert log.runs[0].avg_busbw_gbps is None
    assert any("not a number" in p for p in log.runs[0].problems)


def test_nested_launcher_prefixes_are_all_removed():
    assert strip_launcher_prefix("0: [1,0]<stdout>:# Avg bus bandwidth : 3") == (
        "# Avg bus bandwidth : 3",
        True,
    )
