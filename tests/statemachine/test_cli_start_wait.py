"""`hyperpod-perf start --wait` against the real state machine in moto: the run followed to its end
and its exit code the one every other command gives (0 no concern, 1 concerns, 3 the run failed)."""

from __future__ import annotations

import pytest

from hyperpod_perf.cli import main
from hyperpod_perf.cli import pipeline as cli_pipeline
from hyperpod_perf_dev.localrun.demo import demo_cluster
from hyperpod_perf_dev.localrun.driver import local_pipeline
from hyperpod_perf_dev.localrun.plan import ClusterPlan, RunPlan


def start_and_wait(run, capsys, cluster: str) -> tuple[int, str, str]:
    code = main(
        [
            "start",
            "--cluster", cluster,
            "--region", run.dep.region,
            "--state-machine-arn", run.dep.state_machine_arn,
            "--wait",
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Poll the execution every 0.1 s instead of every 3 s (moto runs it in seconds)."""
    monkeypatch.setattr(cli_pipeline, "FOLLOW_POLL_S", 0.1)


def test_a_run_that_found_concerns_exits_1(capsys) -> None:
    # Given the demo's faulty 8-node cluster in the deployed (moto) state machine
    with local_pipeline(RunPlan(clusters=(demo_cluster("faulty", 8),))) as run:
        # When a diagnosis is started from the CLI and followed to its end
        code, out, err = start_and_wait(run, capsys, "ml-cluster")

    # Then it succeeded, found the planted concerns, and says so in its exit code
    assert "Traceback" not in err
    lines = out.splitlines()
    assert lines[0].startswith("started arn:aws:states:")
    assert "execution SUCCEEDED" in lines
    (verdict,) = [line for line in lines if line.startswith("verdict: ")]
    # (node 5's Xid 79 is act now: the verdict leads with it, then the other GPU node and the EFA one)
    assert verdict.startswith(
        "verdict: 1 node is failing the job (gpu.xid); 1 node has GPU faults; 1 node has EFA"
    )
    # PCIe, Xid, EFA port, governor, the AZ spread and the saturated file system
    assert verdict.endswith(" (6 concern(s))")
    assert any(line.startswith("report: reports/ml-cluster/") for line in lines)
    assert code == 1


def test_a_run_with_no_concern_exits_0(capsys) -> None:
    # Given a healthy two-node cluster in one AZ, its file system at 35 % of its throughput
    plan = RunPlan(clusters=(ClusterPlan(nodes=2, availability_zones=1),))
    with local_pipeline(plan) as run:
        code, out, err = start_and_wait(run, capsys, "ml-cluster")

    assert "execution SUCCEEDED" in out.splitlines(), err
    assert "(0 concern(s))" in out
    assert code == 0


def test_a_run_that_failed_exits_3_not_0(capsys) -> None:
    # Given a state machine asked about a cluster that does not exist
    with local_pipeline(RunPlan(clusters=(ClusterPlan(nodes=2),))) as run:
        code, out, err = start_and_wait(run, capsys, "ghost-cluster")

    # Then the execution failed, the exit code is 3, and the reason is on stdout and stderr
    assert "execution FAILED (DiagnosisFailed: " in out
    assert err.strip().endswith("hyperpod-perf: the diagnosis did not finish (FAILED)")
    assert code == 3
