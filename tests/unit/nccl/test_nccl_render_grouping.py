"""`nccl analyze` text: findings that differ only by the log they name are one line."""

from __future__ import annotations

from pathlib import Path

from hyperpod_perf.nccl.commands import run_analyze

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "nccl-tests"
#: Real 2x p5.48xlarge all_reduce_perf log (see tests/fixtures/real/SOURCES.md).
P5_LOG = REAL / "p5-2node_srun-label_allreduce-16G.txt"


def test_many_logs_cut_short_are_one_grouped_line(tmp_path: Path) -> None:
    # Given the real p5 log (its excerpt ends before the "# Avg bus bandwidth" summary line), as 5
    # pairs' logs
    cut = P5_LOG.read_text()
    assert "# Avg bus bandwidth" not in cut
    names = [f"ip-10-1-0-{k}__ip-10-1-0-{k + 1}.log" for k in range(5)]
    for name in names:
        (tmp_path / name).write_text(cut)

    # When analysed as text
    out, _code = run_analyze([str(tmp_path)], "text")

    # Then "no summary line" is one line naming how many logs and the first few, not 5 lines
    cut_lines = [line for line in out.splitlines() if "no summary line" in line]
    assert len(cut_lines) == 1
    assert cut_lines[0].startswith(
        "[INFO] nccl.log: 5 logs: no summary line; its rows are compared at the size every log reached ("
    )
    assert cut_lines[0].endswith("+2 more)")
    assert out.count("next: Re-run this pair if its figure matters") == 1


def test_a_single_log_cut_short_keeps_its_own_line(tmp_path: Path) -> None:
    (tmp_path / "a__b.log").write_text(P5_LOG.read_text())
    out, _code = run_analyze([str(tmp_path)], "text")
    assert [line for line in out.splitlines() if "no summary line" in line] == [
        f"[INFO] nccl.log: {tmp_path / 'a__b.log'}: no summary line; "
        "its rows are compared at the size every log reached"
    ]
