"""`hyperpod-perf demo` (= `make demo`): the whole pipeline offline, as an operator sees it.

The real state machine and handlers run in moto against a simulated 8-node ml.p5.48xlarge cluster
with planted faults; these tests check what the command prints and writes, and that the files it
writes agree with what the engine says about the raw snapshots it kept.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from hyperpod_perf.cli import main
from hyperpod_perf.collect.snapshot import SECTION_ORDER, parse_container
from hyperpod_perf_dev.localrun.demo_metrics import available as metrics_tier

pytestmark = pytest.mark.slow

NODE = "i-0a1b2c3d4e5f6{:04d}".format
#: What the faulty scenario plants (issue: the pipeline's offline run), node by node.
PLANTED_NODE_CONCERNS = {
    (NODE(3), "gpu.pcie_width"),
    (NODE(5), "gpu.xid"),
    (NODE(6), "efa.port_state"),
    (NODE(2), "host.cpu_governor"),
}
PLANTED_CLUSTER_CONCERNS = {(None, "topology.az_spread"), (None, "fs.throughput")}
#: What its exporter history adds when the metrics tier runs (Prometheus installed): node 7 slow but
#: healthy in its snapshot (power-capped), and the series of node 6's and node 5's snapshot faults.
METRICS = metrics_tier()
PLANTED_METRICS_CONCERNS = (
    {(NODE(7), "metrics.gpu_clock"), (NODE(6), "metrics.efa_retransmits"), (NODE(5), "metrics.xid")}
    if METRICS
    else set()
)
REPORT_FILES = [
    "notification-chatbot.json",
    "notification-email.txt",
    "report.html",
    "report.json",
    "report.md",
]


@dataclass(frozen=True)
class DemoRun:
    code: int
    out: str
    err: str
    seconds: float
    directory: Path

    @property
    def report(self) -> dict:
        return json.loads((self.directory / "report.json").read_text())

    def concerns(self) -> set[tuple[str | None, str]]:
        return {(f["node"], f["check"]) for f in self.report["findings"] if f["severity"] == "CONCERN"}


def run_cli(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def run_demo(directory: Path, *extra: str) -> DemoRun:
    started = time.monotonic()
    code, out, err = run_cli("demo", "--out", directory, *extra)
    return DemoRun(code, out, err, time.monotonic() - started, directory)


@pytest.fixture(scope="module")
def faulty(tmp_path_factory) -> DemoRun:
    return run_demo(tmp_path_factory.mktemp("demo") / "demo-out")


def test_demo_succeeds_within_30_seconds(faulty):
    assert faulty.code == 0, faulty.err
    assert "Traceback" not in faulty.err
    assert faulty.seconds < 30
    assert "execution SUCCEEDED" in faulty.out


def test_demo_story_has_no_emf_metric_lines(faulty):
    # The handlers' Powertools metrics are EMF documents on stdout in Lambda; the local run
    # disables them, so none is mixed into what the demo prints (issue 23, friction 7)
    assert [line for line in faulty.out.splitlines() if '"_aws"' in line] == []
    assert [line for line in faulty.err.splitlines() if '"_aws"' in line] == []


def test_demo_prints_the_planted_concerns(faulty):
    # The printed e-mail names each planted fault on its node (a wrapped line continues on the
    # next lines, indented: read them as one)
    lines: list[str] = []
    for line in faulty.out.splitlines():
        if line.startswith("   ") and lines:
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)

    def printed(check: str, *words: str) -> bool:
        return any(f"{check}: " in line and all(w in line for w in words) for line in lines)

    # each node by its host name (what Slurm and ssh take) beside its instance id (what AWS takes)
    host = {n["instance_id"]: n["hostname"] for n in faulty.report["nodes"]}
    assert all(host[NODE(k)].startswith("ip-10-") for k in range(1, 9))

    def named(k: int) -> str:
        return f"{host[NODE(k)]} ({NODE(k)})"

    assert printed("gpu.pcie_width", named(3), "x8 of x16")
    assert printed("gpu.xid", named(5), "Xid 79")
    assert printed("efa.port_state", named(6), "DOWN")
    assert f"- {named(5)}: gpu.xid" in faulty.out  # NODES WITH CONCERNS
    # the powersave governor (fix soon, host configuration) ranks last of the planted faults: the
    # 60-line e-mail may leave it to the report, where it follows node 5's act-now Xid 79
    report_md = (faulty.directory / "report.md").read_text()
    assert report_md.index("`gpu.xid`") < report_md.index("`host.cpu_governor`")
    assert "powersave" in report_md and named(2) in report_md
    assert printed("fs.throughput", "saturated")
    if METRICS:  # the slow-but-healthy node, named from its series, ranks above the AZ spread
        assert printed("metrics.gpu_clock", NODE(7), "below the fleet", "power-capped")
        assert "metrics tier: a real Prometheus at http://127.0.0.1:" in faulty.out
    else:
        assert printed("topology.az_spread", "2 Availability Zones")
        assert "metrics tier: skipped, prometheus not installed" in faulty.out
    # and it names what it wrote on stderr, as every command with --out DIR does
    assert faulty.err.splitlines()[-1] == (
        f"written to {faulty.directory}/: {', '.join(REPORT_FILES)}, raw/ (8 raw node snapshots)"
    )


def test_demo_report_holds_exactly_the_planted_concerns(faulty):
    report = faulty.report

    assert faulty.concerns() == PLANTED_NODE_CONCERNS | PLANTED_CLUSTER_CONCERNS | PLANTED_METRICS_CONCERNS
    if METRICS:
        assert sorted(report["metrics"]["suspects"]) == [NODE(5), NODE(6), NODE(7)]
        assert report["metrics"]["nodes_seen"] == 8
    saturated = next(f for f in report["findings"] if f["check"] == "fs.throughput")
    assert saturated["evidence"]["mean_utilization_pct"] == 97.0
    recovery = next(f for f in report["findings"] if f["check"] == "coverage.node_recovery")
    assert recovery["severity"] == "INFO"  # NodeRecovery None: advice, not a concern
    assert [n["instance_id"] for n in report["nodes"]] == [NODE(k) for k in range(1, 9)]


def test_demo_writes_reports_notifications_and_raw_snapshots(faulty):
    directory = faulty.directory

    # The report files and notification bodies
    assert sorted(p.name for p in directory.iterdir() if p.is_file()) == REPORT_FILES
    assert (directory / "report.html").read_text().lstrip().lower().startswith("<!doctype html")
    assert faulty.report["verdict"] in (directory / "report.md").read_text()
    email = (directory / "notification-email.txt").read_text()
    assert email.strip() in faulty.out  # the printed e-mail is the one written
    assert "aws s3 cp s3://" in email
    # and it reads as the recipient gets it: the SNS subject, a blank line, then the body
    subject, blank, first = email.splitlines()[:3]
    # (node 5's Xid 79 is the one act-now node: the subject and the first line lead with it)
    failing = "1 node is failing the job (gpu.xid +1)" if METRICS else "1 node is failing the job (gpu.xid)"
    assert subject.startswith(f"Subject: [hyperpod-perf] ml-cluster: ACT NOW 1/8 nodes - {failing}")
    assert len(subject.removeprefix("Subject: ")) <= 99
    assert (blank, first.startswith(f"⚠ ACT NOW: {failing}; ")) == ("", True)
    # and its commands are printed to paste, never run: drain by its Slurm name, then HyperPod's reboot
    assert "COMMANDS TO PASTE for the 1 act-now node (printed, never run)" in email
    assert "state=drain reason='hyperpod-perf: gpu.xid" in email
    assert f"aws sagemaker batch-reboot-cluster-nodes --cluster-name ml-cluster --node-ids {NODE(5)}" in email
    chatbot = json.loads((directory / "notification-chatbot.json").read_text())
    assert (chatbot["version"], chatbot["source"]) == ("1.0", "custom")
    assert (
        NODE(3) in chatbot["content"]["description"] or "gpu.pcie_width" in chatbot["content"]["description"]
    )

    # and one raw snapshot per node, each a complete collector container
    raw = sorted((directory / "raw").iterdir())
    assert [p.name for p in raw] == [f"{NODE(k)}.txt" for k in range(1, 9)]
    for path in raw:
        snapshot = parse_container(path.read_text(), str(path))
        assert list(snapshot.sections) == list(SECTION_ORDER) and snapshot.problems == []


def test_the_kept_raw_snapshots_evaluate_to_the_reported_node_concerns(faulty):
    # Given the raw snapshots the demo kept
    # When they are evaluated again with `hyperpod-perf evaluate`
    code, out, _ = run_cli("evaluate", faulty.directory / "raw", "--format", "json")

    # Then the node-level concerns are the planted ones, the same the pipeline reported
    node_concerns = {
        (f["node"], f["check"]) for f in json.loads(out)["findings"] if f["severity"] == "CONCERN"
    }
    assert code == 1
    assert node_concerns == PLANTED_NODE_CONCERNS
    reported = {c for c in faulty.concerns() if c[0] is not None and not c[1].startswith("metrics.")}
    assert reported == node_concerns  # the metrics stage's come from the series, not the snapshots


@pytest.mark.parametrize(
    ("fmt", "name"), [("md", "report.md"), ("html", "report.html"), ("json", "report.json")]
)
def test_report_render_of_the_stored_json_reproduces_the_written_report(faulty, fmt, name):
    code, out, _ = run_cli("report", "render", faulty.directory / "report.json", "--format", fmt)

    assert code == 0
    assert out == (faulty.directory / name).read_text()


def test_faulty_scenario_answers_the_fsx_alarm_with_the_saturation_it_found(faulty):
    email = (faulty.directory / "notification-email.txt").read_text()
    answer = email[email.index("ALARM hpd-ml-cluster-fsx-throughput") : email.index("TOP CONCERNS")]

    # The alarm's own 15 datapoints at >= 90 %, and the concern that explains them (by its number)
    assert "It saw: 15 datapoints of 60 s: 92.44 to 93.56; 15 of 15 >= 90" in answer
    assert "Answer: explained by 1 concern in the evidence" in answer
    assert f"- #{7 if METRICS else 4} fs.throughput: fs-" in answer and "is saturated" in answer
    assert faulty.report["run"]["alarm"]["threshold"] == 90.0


@pytest.fixture(scope="module")
def healthy(tmp_path_factory) -> DemoRun:
    return run_demo(tmp_path_factory.mktemp("demo") / "healthy", "--scenario", "healthy")


def test_healthy_scenario_answers_the_fsx_alarm_with_what_it_measured_and_ruled_out(healthy):
    # Given the healthy cluster, started (like the faulty one) by the FSx throughput alarm in ALARM
    run = healthy
    email = (run.directory / "notification-email.txt").read_text()
    lines: list[str] = []
    for line in email.splitlines():  # wrapped lines continue indented: read them as one
        if line.startswith("   ") and lines:
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    fs_id = run.report["filesystems"][0]["file_system_id"]

    # Then the e-mail says what the alarm measures and saw, what this run measured over the same
    # minutes and the window, and what it ruled out, each with its figures
    assert run.code == 0, run.err
    assert lines[
        lines.index("ALARM hpd-ml-cluster-fsx-throughput: what it measures, and the answer") + 1
    ] == (
        "Measures: Throughput % of provisioned = (r + w) / PERIOD(r) / 1200000000 * 100 of AWS/FSx "
        f"DataReadBytes, DataWriteBytes (Sum, 60 s) for FileSystemId={fs_id}; in ALARM when >= 90"
    )
    assert (
        f"Measured here: {fs_id} throughput of provisioned: the alarm's last 15 min mean 93% (peak 94%); "
        "the 180-min window mean 35%"
    ) in lines
    assert "Answer: no concern in the evidence explains it; ruled out:" in lines
    ruled_out = {
        line.split(":")[0].removeprefix("- ") for line in lines if line.startswith("- ") and ":" in line
    }
    assert {
        "fs.throughput",
        "fs.metadata",
        "fs.ost_hot",
        "fs.ost_full",
        "host.iowait, host.io_pressure",
    } <= ruled_out
    assert f"- fs.metadata: {fs_id} metadata has headroom: mean 1,798 ops/s" in email
    assert (
        "Next, if such peaks matter, scale it (a cost decision): `aws fsx update-file-system "
        f"--file-system-id {fs_id} --storage-capacity <GiB>`"
    ) in lines
    # and the e-mail keeps its length; Slack and the reports say the same
    assert email.count("\n") < 60
    chatbot = json.loads((run.directory / "notification-chatbot.json").read_text())
    assert (
        "*Alarm hpd-ml-cluster-fsx-throughput* measures Throughput % of provisioned"
        in chatbot["content"]["description"]
    )
    assert "## The alarm: hpd-ml-cluster-fsx-throughput" in (run.directory / "report.md").read_text()
    assert '<section id="alarm">' in (run.directory / "report.html").read_text()
    # The FSx checks beyond throughput ran OK on the simulated file system's per-OST statistics
    by_check = {
        f["check"]: f for f in run.report["findings"] if f["check"].startswith("fs.") and not f["node"]
    }
    assert {c: f["severity"] for c, f in by_check.items()} == {
        "fs.throughput": "OK",
        "fs.metadata": "OK",
        "fs.ost_hot": "OK",
        "fs.ost_full": "OK",
    }
    assert (
        by_check["fs.ost_hot"]["evidence"]["ost_count"],
        by_check["fs.metadata"]["evidence"]["metadata_iops"],
    ) == (
        4,
        6000,
    )


def test_healthy_scenario_has_no_node_level_concern(healthy):
    run = healthy

    assert run.code == 0, run.err
    assert {c for c in run.concerns() if c[0] is not None} == set()
    assert {f["check"] for f in run.report["findings"] if f["node"] and f["severity"] == "OK"} >= {
        "gpu.pcie_width",
        "gpu.xid",
        "efa.port_state",
        "host.cpu_governor",
    }
    assert len(list((run.directory / "raw").iterdir())) == 8


def test_nodes_16_scales_the_cluster(tmp_path):
    run = run_demo(tmp_path / "sixteen", "--nodes", "16")

    assert run.code == 0, run.err
    assert "execution SUCCEEDED" in run.out and "(16 nodes)" in run.out
    assert len(run.report["nodes"]) == 16
    assert len(list((tmp_path / "sixteen" / "raw").iterdir())) == 16
    # the planted faults stay on their nodes; the added nodes are clean
    assert {c for c in run.concerns() if c[0] is not None} == PLANTED_NODE_CONCERNS | PLANTED_METRICS_CONCERNS


@pytest.mark.parametrize(
    ("argv", "mention"),
    [
        (["--nodes", "0"], "--node-count must be between 1 and 4096"),  # --nodes: the old name, kept
        (["--node-count", "5"], "--node-count 6 or more"),
    ],
)
def test_demo_refuses_impossible_sizes_with_one_line(tmp_path, argv, mention):
    code, out, err = run_cli("demo", "--out", tmp_path / "x", *argv)

    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("hyperpod-perf: ") and mention in err
    assert not (tmp_path / "x").exists()


def test_demo_run_twice_names_the_node_that_failed_twice_a_repeat_offender(faulty, tmp_path):
    import shutil

    # Given the first run's history kept in its output directory (demo-out/history/)
    second = tmp_path / "demo-out"
    shutil.copytree(faulty.directory / "history", second / "history")
    tables = sorted(p.name for p in (second / "history").iterdir())
    assert tables == ["findings", "gpus", "nodes", "pairs"]
    # When the demo runs again into it
    run = run_demo(second)
    assert run.code == 0, run.err
    # Then node 5's Xid 79 is its second in 30 days, and the next step escalates to replacement
    (xid,) = [f for f in run.report["findings"] if f["check"] == "gpu.xid" and f["severity"] == "CONCERN"]
    assert xid["node"] == "i-0a1b2c3d4e5f60005"
    assert xid["evidence"]["repeat"]["runs"] == 2
    assert xid["next_step"].startswith("2nd Xid 79 in 30 days: replace, do not reboot again")
    assert "2nd Xid 79 in 30 days" in (second / "notification-email.txt").read_text()
    # And every named question answers on DuckDB over the files the two runs wrote, from the Parquet
    # copies in the cache as from the objects read directly
    cache = ("--cache", tmp_path / "cache")
    code, out, _ = run_cli(
        "history", "xid", "--dir", second / "history", "--cluster", "ml-cluster", "--format", "json", *cache
    )
    assert code == 1
    (row,) = json.loads(out)["rows"]
    assert (row["instance_id"], row["code"], row["runs"]) == ("i-0a1b2c3d4e5f60005", "79", 2)
    assert list((tmp_path / "cache" / "columnar").glob("*/findings/cluster=ml-cluster/run_date=*/*.parquet"))
    for command in ("stragglers", "serials", "bandwidth", "concerns"):
        answers = [
            run_cli("history", command, "--dir", second / "history", "--cluster", "ml-cluster", *option)
            for option in (cache, ("--no-cache",))
        ]
        assert answers[0] == answers[1] and answers[0][0] in (0, 1), answers[0][2]
    code, out, _ = run_cli(
        "history",
        "concerns",
        "--dir",
        second / "history",
        "--cluster",
        "ml-cluster",
        "--format",
        "json",
        *cache,
    )
    by_check = {r["check_id"]: r for r in json.loads(out)["rows"]}
    assert by_check["gpu.xid"]["runs"] == 2 and by_check["gpu.xid"]["nodes"] == 1


@pytest.mark.prometheus
def test_the_demo_runs_its_metrics_tier_where_prometheus_is_installed(faulty):
    # (skipped without prometheus, failed in CI: the other expectations above would pass either way)
    assert METRICS
    assert "metrics tier: a real Prometheus at http://127.0.0.1:" in faulty.out


def test_two_identical_demo_runs_have_the_same_ids_and_the_same_findings(faulty, tmp_path):
    # Given a second faulty demo run into a fresh directory (no shared history)
    again = run_demo(tmp_path / "demo-out")
    assert again.code == 0, again.err

    # Then every finding has the same node, check and evidence ids (the FSx id included)
    def keys(run: DemoRun) -> list[tuple]:
        return sorted(
            (f["node"] or "", f["check"], f["severity"], str(f["evidence"].get("file_system_id")))
            for f in run.report["findings"]
        )

    assert keys(again) == keys(faulty)
    fs_ids = {f["file_system_id"] for f in again.report["filesystems"]}
    assert fs_ids == {f["file_system_id"] for f in faulty.report["filesystems"]} and len(fs_ids) == 1
    # and `report diff` of the two shows nothing new and nothing resolved (exit 0)
    code, out, _ = run_cli(
        "report", "diff", faulty.directory / "report.json", again.directory / "report.json"
    )
    assert code == 0
    assert "New since last run: 0" in out and "Resolved since last run: 0" in out
