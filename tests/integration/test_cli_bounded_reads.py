"""Every file argument of the CLI is read with a bound (issue 24, finding 1, the CLI's part).

The audit's reproductions: `nccl plan --node-file /dev/zero` grew memory until killed (a
MemoryError traceback under a cap); a local `evaluate` of a 300 MB file used 1.26 GB. Each case
here is a hostile file — `/dev/zero`, a FIFO fed without end, a 300 MB sparse file — and the run's
peak Python memory (tracemalloc) is measured: it stays within a few times the bound, and the
outcome is one clear line and exit 2, or a finding that says the file was cut.
"""

from __future__ import annotations

import os
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from hyperpod_perf.cli import main
from hyperpod_perf.cli.common import FILE_ARGUMENT_MAX_BYTES
from hyperpod_perf.collect.snapshot import SNAPSHOT_FILE_MAX_BYTES, oversized_file_problem
from hyperpod_perf_dev.sim.node import NodeFaults, simulate_node

MiB = 1024 * 1024
DEV_ZERO = Path("/dev/zero")


def peak_of(argv: list[str]) -> tuple[int, int]:
    """(exit code, peak traced bytes) of one CLI run in this process."""
    tracemalloc.start()
    try:
        code = main(argv)
        return code, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture
def endless_fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO a writer thread feeds with node names until the reader goes away."""
    path = tmp_path / "nodes.fifo"
    os.mkfifo(path)
    stop = threading.Event()

    def feed() -> None:
        try:
            with open(path, "wb") as handle:
                line = b"ip-10-1-0-1\n" * 4096
                while not stop.is_set():
                    handle.write(line)
        except (BrokenPipeError, OSError):
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    yield path
    stop.set()
    try:  # unblock a writer still waiting for a reader (the command refused before opening)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass
    writer.join(timeout=5)


def _one_line(err: str, *mentions: str) -> None:
    assert "Traceback" not in err
    (line,) = err.splitlines()
    assert line.startswith("hyperpod-perf: ")
    for mention in mentions:
        assert mention in line, line


@pytest.mark.skipif(not DEV_ZERO.exists(), reason="no /dev/zero on this system")
def test_nccl_plan_with_dev_zero_as_the_node_file_stops_at_the_bound(tmp_path: Path, capsys, outcome) -> None:
    code, peak = peak_of(["nccl", "plan", "--node-file", str(DEV_ZERO), "--out", str(tmp_path / "plan")])
    _, err = capsys.readouterr()
    assert code == 2
    _one_line(err, "/dev/zero", "node file larger than 4 MiB")
    assert peak < 4 * FILE_ARGUMENT_MAX_BYTES, peak
    outcome("`nccl plan --node-file /dev/zero`", f"exit 2, one line; peak {peak // MiB} MiB traced")


def test_nccl_plan_with_an_endless_fifo_stops_at_the_bound(
    endless_fifo: Path, tmp_path: Path, capsys, outcome
) -> None:
    code, peak = peak_of(["nccl", "plan", "--node-file", str(endless_fifo), "--out", str(tmp_path / "plan")])
    _, err = capsys.readouterr()
    assert code == 2
    _one_line(err, "node file larger than 4 MiB")
    assert peak < 4 * FILE_ARGUMENT_MAX_BYTES, peak
    outcome("`nccl plan --node-file` an endless FIFO", f"exit 2, one line; peak {peak // MiB} MiB traced")


def test_evaluate_of_a_300_mb_file_reads_its_first_8_mib_and_says_so(tmp_path: Path, capsys, outcome) -> None:
    # Given a real node snapshot (Xid 79 on it) followed by 300 MB (a sparse file: no disk used)
    node = simulate_node(0, faults=NodeFaults(xid79=True))
    path = tmp_path / f"{node.instance_id}.txt"
    with open(path, "wb") as handle:
        handle.write(node.text.encode())
        handle.truncate(300 * 1000 * 1000)
    # When it is evaluated
    code, peak = peak_of(["evaluate", str(path), "--format", "json"])
    out, _ = capsys.readouterr()
    # Then memory stays near the 8 MiB bound (1.26 GB before), the node is judged (Xid 79 found)
    # and a collect.node finding says the file was cut
    assert peak < 12 * SNAPSHOT_FILE_MAX_BYTES, peak
    assert code == 1
    assert '"check": "gpu.xid"' in out and "Xid 79" in out
    assert oversized_file_problem() in out
    outcome(
        "`evaluate` of a 300 MB file", f"first 8 MiB judged, collect.node says so; peak {peak // MiB} MiB"
    )


@pytest.mark.skipif(not DEV_ZERO.exists(), reason="no /dev/zero on this system")
@pytest.mark.parametrize(
    ("argv", "mention"),
    [
        (["evaluate", "/dev/zero"], "not collector output"),
        (["evaluate", "--thresholds", "/dev/zero", "SNAPSHOT"], "thresholds file larger than 1 MiB"),
        (["report", "render", "/dev/zero", "--format", "md"], "report larger than 64 MiB"),
        (["report", "diff", "/dev/zero", "/dev/zero"], "report larger than 64 MiB"),
    ],
    ids=["evaluate", "thresholds", "report-render", "report-diff"],
)
def test_every_other_file_argument_refuses_dev_zero_in_one_line(
    argv, mention, tmp_path: Path, capsys, outcome
) -> None:
    snapshot = tmp_path / "n.txt"
    snapshot.write_text(simulate_node(0).text)
    argv = [str(snapshot) if a == "SNAPSHOT" else a for a in argv]
    code, peak = peak_of(argv)
    _, err = capsys.readouterr()
    assert code == 2
    _one_line(err, mention)
    assert peak < 200 * MiB, peak
    outcome(f"`{' '.join(argv[:2])}` with /dev/zero", "exit 2, one line naming the bound")


@pytest.mark.skipif(not DEV_ZERO.exists(), reason="no /dev/zero on this system")
def test_nccl_analyze_skips_an_endless_log_and_says_so(capsys, outcome) -> None:
    code, peak = peak_of(["nccl", "analyze", "/dev/zero", "--format", "json"])
    out, err = capsys.readouterr()
    assert "larger than 33554432 bytes; skipped" in out + err
    assert peak < 200 * MiB, peak
    assert "Traceback" not in err
    outcome("`nccl analyze /dev/zero`", f"skipped with its reason (exit {code})")
