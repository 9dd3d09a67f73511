"""`hyperpod-perf` as an operator runs it: every sub-command, its output formats and exit codes.

The commands run in-process through `hyperpod_perf.cli.main` (fast, and capsys sees both
streams); one test runs the installed console script in a subprocess to prove the entry point.
AWS-facing commands run against moto, seeded with the simulated account's helpers.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from hyperpod_moto import (
    REGION,
    GroupSeed,
    NodeSeed,
    extend_moto_hyperpod,
    put_lustre_throughput,
    seed_cluster,
    seed_lustre,
)
from moto import mock_aws

from hyperpod_perf.aws.logs import cluster_log_group
from hyperpod_perf.cli import main
from hyperpod_perf.collect.snapshot import SECTION_ORDER, parse_container
from hyperpod_perf.domain.cluster import MB
from hyperpod_perf.report.render import render_report
from hyperpod_perf_dev.sim.node import NodeFaults, simulate_cluster
from hyperpod_perf_dev.synthetic import synthetic_report

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "functions" / "hyperpod_perf_dev" / "sim" / "examples"
HEALTHY_ID, FAULTY_ID = "i-0a1b2c3d4e5f60001", "i-0a1b2c3d4e5f60003"
HEALTHY, FAULTY = EXAMPLES / f"{HEALTHY_ID}.txt", EXAMPLES / f"{FAULTY_ID}.txt"
#: How the outputs name the examples: the host name their `meta` section reports, then the id.
HEALTHY_LABEL, FAULTY_LABEL = f"ip-10-1-117-147 ({HEALTHY_ID})", f"ip-10-1-42-84 ({FAULTY_ID})"
FIXTURES = ROOT / "tests" / "fixtures"
NCCL_REAL = FIXTURES / "real" / "nccl-tests"
#: Real nccl-tests logs: 2x p5.48xlarge reaching ~487 GB/s, and 2x p4de.24xlarge topping at 78.33 GB/s.
P5_LOG = NCCL_REAL / "p5-2node_srun-label_allreduce-16G.txt"
P4DE_LOG = NCCL_REAL / "p4de-2node_srun-label_allreduce.txt"
HMA_RECORD = FIXTURES / "real" / "deep-health" / "hma_npd-event_xid71_pretty.json"
FINDING_FIELDS = [
    "node",
    "check",
    "severity",
    "section",
    "summary",
    "evidence",
    "threshold",
    "next_step",
    "handoff",
]


def has_finding_fields(finding: dict) -> bool:
    """The design's nine fields in order, then (schema 1.3) the tier and its reason on non-OK ones."""
    keys = list(finding)
    tiered = finding["severity"] != "OK"
    return keys == FINDING_FIELDS + (["tier", "tier_reason"] if tiered else [])


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    """main(argv) -> (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str, *mentions: str) -> None:
    """The exit-2 contract: exactly one line on stderr, naming what is wrong, no traceback."""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hyperpod-perf: ")
    for mention in mentions:
        assert mention in lines[0]


def concerns(findings: list[dict]) -> dict[tuple[str | None, str], dict]:
    return {(f["node"], f["check"]): f for f in findings if f["severity"] == "CONCERN"}


# --- evaluate ---------------------------------------------------------------------------------


def test_evaluate_faulty_example_yields_exactly_the_four_planted_concerns_with_handoffs(capsys):
    # Given the faulty example node (GPU 3 at PCIe x8, Xid 79, an EFA port DOWN, governor powersave)
    # When it is evaluated as JSON
    code, out, err = run(capsys, "evaluate", FAULTY, "--format", "json")

    # Then exit 1, and the concerns are exactly those four, with the design's hand-offs
    assert (code, err) == (1, "")
    payload = json.loads(out)
    assert list(payload) == ["findings", "not_checked"]
    # and, one snapshot being no fleet, the fleet checks are named as not checked, with why
    assert payload["not_checked"][0] == {
        "what": "fleet.instance_types, fleet.version_drift, fleet.outlier",
        "why": "the fleet comparison needs two or more snapshots (1 usable)",
    }
    found = concerns(payload["findings"])
    assert {check: f["handoff"] for (_node, check), f in found.items()} == {
        "gpu.pcie_width": "hyperpod-node-debugger § G",
        "gpu.xid": "hyperpod-node-debugger § G",
        "efa.port_state": "hyperpod-node-debugger § A",
        "host.cpu_governor": None,
    }
    # and each carries the measured evidence from the snapshot
    pcie = found[(FAULTY_ID, "gpu.pcie_width")]["evidence"]
    assert (pcie["gpu"], pcie["width_current"], pcie["width_max"]) == (3, 8, 16)
    xid = found[(FAULTY_ID, "gpu.xid")]["evidence"]
    assert (xid["code"], xid["pci"], xid["gpu"]) == (79, "0000:86:00", 3)
    assert found[(FAULTY_ID, "efa.port_state")]["evidence"]["not_active"] == {"rdmap113s0/1": "1: DOWN"}
    assert found[(FAULTY_ID, "host.cpu_governor")]["evidence"]["governors"] == {"powersave": 192}
    # and every finding has exactly the design's fields, names the node by its instance id,
    # and every concern says what to do next
    assert all(has_finding_fields(f) for f in payload["findings"])
    assert {f["node"] for f in payload["findings"]} == {FAULTY_ID}
    assert all(f["next_step"] and f["threshold"] for f in found.values())


def test_evaluate_healthy_example_has_no_concern_and_exits_0(capsys):
    code, out, err = run(capsys, "evaluate", HEALTHY, "--format", "json")

    assert (code, err) == (0, "")
    findings = json.loads(out)["findings"]
    assert concerns(findings) == {}
    assert {f["node"] for f in findings} == {HEALTHY_ID}
    # the report proves what was checked: OK findings for the GPU, EFA and host checks
    ok_checks = {f["check"] for f in findings if f["severity"] == "OK"}
    assert {
        "gpu.temperature",
        "gpu.pcie_width",
        "gpu.xid",
        "efa.port_state",
        "host.cpu_governor",
    } <= ok_checks


def test_evaluate_text_mirrors_the_runbook_grouped_per_node_with_summaries(capsys):
    # Given a directory holding the healthy and the faulty example
    # When it is evaluated as text, in full (-v)
    code, out, _ = run(capsys, "evaluate", EXAMPLES, "-v")

    # Then one block per node, the most urgent first (the faulty node's Xid 79 is act now; the
    # healthy node has only OK lines), tagged lines, concerns with their hand-off arrow
    assert code == 1
    lines = out.splitlines()
    assert [line for line in lines if line.startswith("== ")] == [
        f"== {FAULTY_LABEL} ==",
        "== cluster ==",  # the fleet comparison of the two
        f"== {HEALTHY_LABEL} ==",
    ]
    assert (
        "[CONCERN] (fix soon) gpu.pcie_width: GPU 3 PCIe link at x8 of x16 → hyperpod-node-debugger § G"
        in lines
    )
    assert any(
        line.startswith("[CONCERN] (act now) gpu.xid: Xid 79 ")
        and line.endswith("→ hyperpod-node-debugger § G")
        for line in lines
    )
    assert any(line.startswith("[OK] gpu.temperature: ") for line in lines)
    assert not any("host.fabric_manager" in line for line in lines)  # does not apply to p5: silent
    # and each node's summary line counts that node's tagged lines
    for node in (HEALTHY_LABEL, FAULTY_LABEL):
        block = lines[lines.index(f"== {node} ==") + 1 :]
        block = block[: next(i for i, line in enumerate(block) if line.startswith("-- "))]
        tally = {tag: sum(line.startswith(f"[{tag}]") for line in block) for tag in ("CONCERN", "INFO", "OK")}
        summary = f"-- {node}: {tally['CONCERN']} concern(s), {tally['INFO']} info, {tally['OK']} ok"
        assert summary in lines
    assert "-- " + HEALTHY_LABEL + ": 0 concern(s)," in out
    assert "-- " + FAULTY_LABEL + ": 4 concern(s)," in out
    assert lines[-1].startswith("Summary: 4 concern(s) on 1 of 3 node(s)/scope(s); ")


def test_evaluate_of_several_files_prints_one_line_per_node_with_its_concerns_by_default(capsys):
    # Given a directory holding the healthy and the faulty example
    # When it is evaluated as text without -v
    code, out, _ = run(capsys, "evaluate", EXAMPLES)

    # Then one line per node and one for the cluster scope, the most urgent first: the faulty node
    # with its tier, its Xid 79 (act now) before its PCIe width (fix soon), the rest named, its
    # hand-offs after the arrow
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"[CONCERN] {FAULTY_LABEL}    act now: 4 concern(s): gpu.xid: Xid 79 ")
    assert "; gpu.pcie_width: GPU 3 PCIe link at x8 of x16; " in lines[0]
    assert lines[0].endswith(
        "; +2 more: efa.port_state, host.cpu_governor"
        " → hyperpod-node-debugger § G, hyperpod-node-debugger § A"
    )
    assert lines[1].startswith("[INFO]    cluster ")
    assert lines[2] == f"[OK]      {HEALTHY_LABEL}  no concern (24 ok, 0 info)"
    # and the skipped cluster checks on one line, then the same summary line as the full listing
    assert lines[4].startswith("[NOT CHECKED] topology.az_spread, topology.ultraserver, fs.throughput")
    assert lines[-1].startswith("Summary: 4 concern(s) on 1 of 3 node(s)/scope(s); ")
    assert len(lines) == 7
    # and -v gives the full listing back (one block per node, every check)
    _, full, _ = run(capsys, "evaluate", EXAMPLES, "-v")
    assert f"== {FAULTY_LABEL} ==" in full and len(full.splitlines()) > 50


def test_evaluate_of_one_file_lists_every_check_without_v(capsys):
    _, out, _ = run(capsys, "evaluate", FAULTY)
    assert out.splitlines()[0] == f"== {FAULTY_LABEL} =="
    assert any(line.startswith("    next: ") for line in out.splitlines())


def test_evaluate_markdown_is_one_table_row_per_finding(capsys):
    _, as_json, _ = run(capsys, "evaluate", FAULTY, "--format", "json")
    code, md, _ = run(capsys, "evaluate", FAULTY, "--format", "md")

    payload = json.loads(as_json)
    findings = payload["findings"]
    table, _, after = md.partition("\n\n")
    rows = table.splitlines()
    assert code == 1
    assert rows[0] == "| node | check | severity | section | summary | threshold | next step | hand-off |"
    assert rows[1] == "|---|---|---|---|---|---|---|---|"
    assert len(rows) == 2 + len(findings)
    cells = [row.split(" | ")[:4] for row in rows[2:]]
    assert cells == [[f"| {FAULTY_LABEL}", f["check"], f["severity"], f["section"]] for f in findings]
    assert {f["node"] for f in findings} == {FAULTY_ID}  # JSON keeps the instance id
    # and after the table, what was not checked: one item per JSON not_checked row
    items = [line for line in after.splitlines() if line.startswith("- ")]
    assert after.startswith("**Not checked**")
    assert len(items) == len(payload["not_checked"])


def test_evaluate_o_writes_the_rendering_to_the_file(capsys, tmp_path):
    out_file = tmp_path / "findings.json"
    code, out, _ = run(capsys, "evaluate", HEALTHY, "--format", "json", "-o", out_file)

    assert (code, out) == (0, "")
    assert {f["node"] for f in json.loads(out_file.read_text())["findings"]} == {HEALTHY_ID}
    # and `-o -` is stdout
    code, out, _ = run(capsys, "evaluate", HEALTHY, "--format", "json", "--output", "-")
    assert code == 0 and json.loads(out)["findings"]


def test_evaluate_threshold_override_changes_the_outcome(capsys, tmp_path):
    # Given the healthy example, whose hottest GPU reads 66 C (below the runbook's 88 C)
    _, before, _ = run(capsys, "evaluate", HEALTHY, "--format", "json")
    (temperature,) = [f for f in json.loads(before)["findings"] if f["check"] == "gpu.temperature"]
    assert (temperature["severity"], temperature["evidence"]["max_temperature_c"]) == ("OK", 66.0)

    # When the temperature threshold is lowered to 60 C, from JSON and from TOML
    for name, body in (("t.json", '{"gpu_temperature_c": 60}'), ("t.toml", "gpu_temperature_c = 60\n")):
        (tmp_path / name).write_text(body)
        code, out, err = run(capsys, "evaluate", HEALTHY, "--format", "json", "--thresholds", tmp_path / name)

        # Then the same node now has a gpu.temperature concern quoting the new threshold, and exits 1
        assert (code, err) == (1, "")
        found = concerns(json.loads(out)["findings"])
        assert list(found) == [(HEALTHY_ID, "gpu.temperature")]
        assert "60" in found[(HEALTHY_ID, "gpu.temperature")]["threshold"]


@pytest.mark.parametrize(
    ("case", "mentions"),
    [
        ("missing-file", ["missing.txt", "no such file"]),
        ("empty-dir", ["empty", "no snapshot files"]),
        ("dir-without-snapshots", ["notes", "no snapshot files"]),
        ("bad-json-thresholds", ["bad.json", "cannot read thresholds"]),
        ("unknown-threshold", ["typo.json", "gpu_temprature_c"]),
        ("missing-thresholds", ["absent.toml", "cannot read thresholds"]),
        ("bad-toml-thresholds", ["bad.toml", "cannot read thresholds"]),
        ("out-in-missing-dir", ["no-such-dir", "No such file"]),
    ],
)
def test_evaluate_unusable_input_exits_2_with_one_line_naming_the_file(capsys, tmp_path, case, mentions):
    # Given one kind of unusable input
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.md").write_text("not a snapshot")
    (tmp_path / "bad.json").write_text("{gpu_temperature_c: 60")
    (tmp_path / "typo.json").write_text('{"gpu_temprature_c": 60}')
    (tmp_path / "bad.toml").write_text("gpu_temperature_c = \n")
    argv = {
        "missing-file": [tmp_path / "missing.txt"],
        "empty-dir": [tmp_path / "empty"],
        "dir-without-snapshots": [tmp_path / "notes"],
        "bad-json-thresholds": [HEALTHY, "--thresholds", tmp_path / "bad.json"],
        "unknown-threshold": [HEALTHY, "--thresholds", tmp_path / "typo.json"],
        "missing-thresholds": [HEALTHY, "--thresholds", tmp_path / "absent.toml"],
        "bad-toml-thresholds": [HEALTHY, "--thresholds", tmp_path / "bad.toml"],
        "out-in-missing-dir": [HEALTHY, "-o", tmp_path / "no-such-dir" / "x.txt"],
    }[case]

    # When evaluate runs
    code, out, err = run(capsys, "evaluate", *argv)

    # Then exit 2, nothing on stdout, one line on stderr naming the file and the reason
    assert (code, out) == (2, "")
    assert_one_line_error(err, *mentions)


def test_evaluate_bad_arguments_are_usage_errors(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", str(HEALTHY), "--format", "xml"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err


SSH_TIMEOUT = "ssh: connect to host ip-10-1-9-9 port 22: Connection timed out\n"


@pytest.mark.parametrize("kind", ["ssh-timeout", "binary", "notes"])
def test_evaluate_a_file_that_is_not_collector_output_is_its_nodes_concern_and_the_rest_is_judged(
    capsys, tmp_path, kind
):
    # Given the faulty snapshot and, next to it, a file without a single collector section: an ssh
    # timeout written where a node's snapshot should be, random bytes, or a notes.txt
    bad = tmp_path / ("i-0fffffffffffffff9.txt" if kind == "ssh-timeout" else f"{kind}.txt")
    if kind == "binary":
        bad.write_bytes(random.Random(3).randbytes(4096) + b"\x00\xff\xfe")
    elif kind == "notes":
        bad.write_text("node 3 looked slow on Tuesday\n=== not a marker ===\n")
    else:
        bad.write_text(SSH_TIMEOUT)
    shutil.copy(FAULTY, tmp_path / FAULTY.name)

    # When the directory is evaluated
    code, out, err = run(capsys, "evaluate", tmp_path, "--format", "json")

    # Then the faulty node is still judged (its four concerns), exit 1, nothing on stderr
    assert (code, err) == (1, "")
    found = concerns(json.loads(out)["findings"])
    assert {check for node, check in found if node == FAULTY_ID} == {
        "gpu.pcie_width",
        "gpu.xid",
        "efa.port_state",
        "host.cpu_governor",
    }
    # and the bad file is its node's collect.node CONCERN, naming the file and why
    node = bad.name.removesuffix(".txt")
    bad_file = found[(node, "collect.node")]
    assert bad_file["summary"].startswith(f"{bad}: not collector output")
    assert (bad_file["evidence"]["file"], bad_file["evidence"]["reason"]) == (str(bad), "NotCollectorOutput")
    assert bad_file["handoff"] == "hyperpod-ssm"
    if kind == "ssh-timeout":  # what the file holds instead tells the operator what went wrong
        assert bad_file["evidence"]["head"] == SSH_TIMEOUT.strip()
        assert "Connection timed out" in bad_file["summary"]


def test_evaluate_exits_2_only_when_no_file_is_a_snapshot(capsys, tmp_path):
    # Given a directory of two ssh timeouts and nothing else
    for name in ("i-0fffffffffffffff1.txt", "i-0fffffffffffffff2.txt"):
        (tmp_path / name).write_text(SSH_TIMEOUT)

    # When it is evaluated
    code, out, err = run(capsys, "evaluate", tmp_path, "--format", "json")

    # Then exit 2, nothing on stdout, one line naming both files
    assert (code, out) == (2, "")
    assert_one_line_error(
        err, "no usable snapshot in 2 files", "i-0fffffffffffffff1.txt", "i-0fffffffffffffff2.txt"
    )


def _with_version(text: str, key: str, value: str) -> str:
    """A snapshot with one `versions` line changed (a node left on another image)."""
    return "".join(
        f"{key}={value}\n" if line.startswith(f"{key}=") else line for line in text.splitlines(keepends=True)
    )


def test_evaluate_dir_compares_the_fleet_and_reports_version_drift_on_one_node(capsys, tmp_path):
    # Given four simulated p5 nodes, one of them left on NCCL 2.18.3
    sim = simulate_cluster(4)
    for i, node in enumerate(sim):
        text = _with_version(node.text, "nccl", "2.18.3") if i == 2 else node.text
        (tmp_path / f"{node.instance_id}.txt").write_text(text)

    # When the directory is evaluated
    code, out, _ = run(capsys, "evaluate", tmp_path, "--format", "json")

    # Then the drift is a cluster-level CONCERN naming the odd node, exit 1
    assert code == 1
    payload = json.loads(out)
    found = concerns(payload["findings"])
    drift = found[(None, "fleet.version_drift")]
    assert drift["evidence"]["drift"]["nccl"] == {
        "2.21.5": {"count": 3, "nodes": [sim[0].instance_id, sim[1].instance_id, sim[3].instance_id]},
        "2.18.3": {"count": 1, "nodes": [sim[2].instance_id]},
    }
    assert drift["handoff"] == "hyperpod-version-checker"
    # and the other fleet checks ran from the snapshots alone
    oks = {f["check"] for f in payload["findings"] if f["severity"] == "OK" and f["node"] is None}
    assert oks == {"fleet.instance_types", "fleet.outlier"}
    # and what needs the AWS account is named as not checked, topology first
    skipped = [row["what"] for row in payload["not_checked"]]
    assert skipped[0] == "topology.az_spread, topology.ultraserver"
    assert any(what.startswith("fs.throughput") for what in skipped)


def test_evaluate_text_says_which_cluster_checks_it_skipped(capsys):
    _, out, _ = run(capsys, "evaluate", EXAMPLES, "--verbose")

    lines = out.splitlines()
    assert any(
        line.startswith("[NOT CHECKED] topology.az_spread, topology.ultraserver: node placement")
        for line in lines
    )
    assert lines[-1].startswith("Summary: ")


def test_evaluate_truncated_snapshot_reports_the_cut_and_still_evaluates_the_rest(capsys, tmp_path):
    # Given the faulty snapshot cut in the middle of its cpu-governor section
    text = FAULTY.read_text()
    cut = text.index("=== hpd:begin cpu-governor nonce=") + 200
    (tmp_path / f"{FAULTY_ID}.txt").write_text(text[:cut])

    code, out, _ = run(capsys, "evaluate", tmp_path, "--format", "json")

    # Then the cut is a collect.node concern, and the sections before it were still judged
    found = concerns(json.loads(out)["findings"])
    assert code == 1
    assert {"gpu.pcie_width", "gpu.xid", "efa.port_state", "collect.node"} <= {check for _, check in found}
    assert "cut off" in found[(FAULTY_ID, "collect.node")]["summary"]


def _meta_snapshot(instance_id: str, hostname: str) -> str:
    """The healthy example with its meta instance_id / hostname replaced."""
    lines = []
    for line in HEALTHY.read_text().splitlines(keepends=True):
        if line.startswith("instance_id="):
            line = f"instance_id={instance_id}\n"
        elif line.startswith("hostname="):
            line = f"hostname={hostname}\n"
        lines.append(line)
    return "".join(lines)


@pytest.mark.parametrize(
    ("file_name", "instance_id", "hostname", "expected"),
    [
        ("i-0123456789abcdef0.txt", "", "ip-10-1-0-9", "i-0123456789abcdef0"),  # file name
        ("node7.txt", "i-0fedcba9876543210", "ip-10-1-0-9", "i-0fedcba9876543210"),  # meta key
        ("node7.txt", "", "ip-10-1-0-9", "ip-10-1-0-9"),  # hostname
        ("node7.txt", "", "", "node7"),  # file name, last resort
    ],
)
def test_evaluate_names_each_node_as_the_operator_knows_it(
    capsys, tmp_path, file_name, instance_id, hostname, expected
):
    (tmp_path / file_name).write_text(_meta_snapshot(instance_id, hostname))

    _, out, _ = run(capsys, "evaluate", tmp_path / file_name, "--format", "json")

    assert {f["node"] for f in json.loads(out)["findings"]} == {expected}


# --- snapshot --local -----------------------------------------------------------------------


@dataclass(frozen=True)
class LocalRun:
    code: int
    out: str
    err: str
    raw: Path


@pytest.fixture(scope="module")
def local_snapshot(tmp_path_factory) -> LocalRun:
    """`snapshot --local --out DIR --format json` on this machine, run once for the module
    (the collector takes seconds); its streams captured here because capsys is per test."""
    directory = tmp_path_factory.mktemp("local") / "snapshots"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["snapshot", "--local", "--out", str(directory), "--format", "json"])
    (raw,) = directory.iterdir()
    return LocalRun(code, out.getvalue(), err.getvalue(), raw)


def test_snapshot_local_runs_the_collector_and_keeps_the_raw_output(local_snapshot):
    # When snapshot --local ran on this machine with --out DIR
    local = local_snapshot

    # Then the exit code is a verdict (0/1), no traceback, and the raw snapshot, DIR/<node>.txt
    # (named as evaluate DIR and diagnose --snapshots DIR read it), holds every section in order
    assert local.code in (0, 1)
    assert local.err == f"written to {local.raw.parent}/: {local.raw.name}\n"
    snapshot = parse_container(local.raw.read_text(), str(local.raw))
    assert local.raw.name == f"{snapshot.node_name()}.txt"
    assert list(snapshot.sections) == list(SECTION_ORDER)
    assert snapshot.problems == []
    assert snapshot.meta["collector_version"] == "2"
    # and stdout is this node's findings JSON, the exit code matching its concerns
    findings = json.loads(local.out)["findings"]
    assert {f["node"] for f in findings} == {snapshot.node_name()}
    assert (local.code == 1) == any(f["severity"] == "CONCERN" for f in findings)


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has a GPU")
def test_snapshot_local_without_a_gpu_reports_gpu_checks_as_info_not_present(local_snapshot):
    # Given this machine has no GPU (nvidia-smi is not installed)
    findings = json.loads(local_snapshot.out)["findings"]

    # Then the printed GPU checks whose tool is absent are INFO "not present", never a CONCERN
    by_check = {f["check"]: f for f in findings if f["check"].startswith("gpu.") and f["check"] != "gpu.xid"}
    assert set(by_check) == {
        "gpu.temperature",
        "gpu.pcie_width",
        "gpu.thermal_throttle",
        "gpu.ecc_uncorrected",
        "gpu.remapped_rows",
        "gpu.count",
        "gpu.nvlink_inactive",
        "gpu.nvlink_errors",
        "gpu.topology",
        "gpu.pcie_replay",
    }
    assert all(f["severity"] == "INFO" and "not present" in f["summary"] for f in by_check.values())
    snapshot = parse_container(local_snapshot.raw.read_text(), str(local_snapshot.raw))
    assert snapshot.sections["gpu-query"].rc == 127  # the kept raw output shows why


def test_snapshot_local_has_no_collection_problem(local_snapshot):
    findings = json.loads(local_snapshot.out)["findings"]
    assert [f["summary"] for f in findings if f["check"] == "collect.node"] == []


# --- diagnose / document (moto) ---------------------------------------------------------------

CLUSTER = "hpclust00001"
NOW = datetime.now(UTC).replace(second=0, microsecond=0)
SLOW_NODE, XID_NODE, POWERSAVE_NODE = 3, 5, 6
LUSTRE_GIB, LUSTRE_PER_UNIT = 2400, 250


@pytest.fixture
def seeded(monkeypatch, tmp_path):
    """Two AZs, one node with an outlying SM clock, NodeRecovery None, Lustre at 95% of its
    provisioned throughput, one HMA Xid event; one powersave node; snapshots on disk."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        extend_moto_hyperpod(monkeypatch)
        sim = simulate_cluster(
            8, {SLOW_NODE: NodeFaults(sm_clock_mhz=1400), POWERSAVE_NODE: NodeFaults(governor="powersave")}
        )
        snapshots = tmp_path / "snapshots"
        snapshots.mkdir()
        for node in sim:
            (snapshots / f"{node.instance_id}.txt").write_text(node.text)
        seed_cluster(
            boto3.client("sagemaker", region_name=REGION),
            CLUSTER,
            [
                GroupSeed(
                    "workers",
                    "ml.p5.48xlarge",
                    [
                        NodeSeed(
                            n.instance_id,
                            *(("us-west-2a", "usw2-az1") if i < 6 else ("us-west-2b", "usw2-az2")),
                            hostname=n.hostname,  # DescribeClusterNode's PrivateDnsHostname
                        )
                        for i, n in enumerate(sim)
                    ],
                    ["InstanceStress", "InstanceConnectivity"],
                )
            ],
            node_recovery="None",
        )
        fs_id = seed_lustre(
            boto3.client("fsx", region_name=REGION),
            capacity_gib=LUSTRE_GIB,
            per_unit=LUSTRE_PER_UNIT,
            mount_name="oyuutbev",
        )
        rate = 0.95 * LUSTRE_GIB / 1000 * LUSTRE_PER_UNIT * MB
        put_lustre_throughput(
            boto3.client("cloudwatch", region_name=REGION),
            fs_id,
            NOW - timedelta(hours=3),
            180,
            rate / 2,
            rate / 2,
        )
        logs = boto3.client("logs", region_name=REGION)
        group = cluster_log_group(CLUSTER, CLUSTER)  # moto's cluster id is the cluster name
        stream = f"SagemakerHealthMonitoringAgent/workers/{sim[XID_NODE].instance_id}"
        logs.create_log_group(logGroupName=group)
        logs.create_log_stream(logGroupName=group, logStreamName=stream)
        logs.put_log_events(
            logGroupName=group,
            logStreamName=stream,
            logEvents=[
                {
                    "timestamp": int((NOW - timedelta(minutes=30)).timestamp() * 1000),
                    "message": json.dumps(json.loads(HMA_RECORD.read_text())),
                }
            ],
        )
        yield {"sim": sim, "snapshots": snapshots, "fs_id": fs_id}


def _diagnose(capsys, seeded, *extra: object) -> tuple[int, str, str]:
    return run(
        capsys,
        "diagnose",
        "--cluster",
        CLUSTER,
        "--region",
        REGION,
        "--snapshots",
        seeded["snapshots"],
        *extra,
    )


def test_diagnose_from_snapshots_reports_the_seeded_concerns_as_report_json(capsys, seeded, tmp_path):
    sim = seeded["sim"]

    # When the seeded cluster is diagnosed from its snapshot directory, as JSON, with --out
    code, out, err = _diagnose(capsys, seeded, "--format", "json", "--out", tmp_path / "out")

    # Then exit 1, and the concerns are exactly the seeded cluster-level ones plus the powersave node
    assert code == 1
    assert "Traceback" not in err
    report = json.loads(out)
    assert {"schema_version", "cluster", "findings", "nodes"} <= set(report)
    assert set(concerns(report["findings"])) == {
        (None, "topology.az_spread"),
        (None, "fs.throughput"),
        (sim[SLOW_NODE].instance_id, "fleet.outlier"),
        (sim[XID_NODE].instance_id, "health.hma"),
        (sim[POWERSAVE_NODE].instance_id, "host.cpu_governor"),
    }
    # and the findings have the evaluate fields and the host name beside the node (report 1.3),
    # then their tier, node-level ones naming their instance
    assert all(
        has_finding_fields({k: v for k, v in f.items() if k != "hostname"}) for f in report["findings"]
    )
    assert all(list(f)[:2] == ["node", "hostname"] for f in report["findings"])
    hosts = {n.instance_id: n.hostname for n in sim}
    assert all(f["hostname"] == hosts[f["node"]] for f in report["findings"] if f["node"])
    node_level = [f for f in report["findings"] if f["check"].startswith(("gpu.", "efa.", "host."))]
    assert {f["node"] for f in node_level} == {n.instance_id for n in sim}
    saturated = concerns(report["findings"])[(None, "fs.throughput")]
    assert (saturated["evidence"]["file_system_id"], saturated["evidence"]["mean_utilization_pct"]) == (
        seeded["fs_id"],
        95.0,
    )
    recovery = next(f for f in report["findings"] if f["check"] == "coverage.node_recovery")
    assert recovery["severity"] == "INFO"
    # and --out holds the same report in three formats
    written = tmp_path / "out"
    assert sorted(p.name for p in written.iterdir()) == ["report.html", "report.json", "report.md"]
    assert json.loads((written / "report.json").read_text())["findings"] == report["findings"]
    assert (written / "report.html").read_text().lstrip().lower().startswith("<!doctype html")
    assert sim[POWERSAVE_NODE].instance_id in (written / "report.md").read_text()


def read_terminal(master: int) -> str:
    """What a pseudo-terminal's program side wrote, once its end is closed."""
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other end is closed and everything was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return b"".join(chunks).decode()


def test_diagnose_draws_progress_on_a_terminal_and_nothing_in_a_pipe_or_with_quiet(
    seeded, monkeypatch, tmp_path
) -> None:
    from hyperpod_perf.cli.progress import ERASE_LINE

    argv = ["diagnose", "--cluster", CLUSTER, "--region", REGION, "--snapshots", str(seeded["snapshots"])]
    monkeypatch.setenv("TERM", "xterm-256color")

    def on_terminal(*extra: str) -> tuple[int, str]:
        master, slave = os.openpty()
        terminal = os.fdopen(slave, "w", encoding="utf-8", buffering=1)
        with monkeypatch.context() as patch:
            patch.setattr(sys, "stderr", terminal)
            code = main([*argv, *extra])
        terminal.close()
        return code, read_terminal(master)

    # When diagnose runs with a terminal as stderr (stdout to a file)
    code, drawn = on_terminal("-o", str(tmp_path / "findings.txt"))

    # Then stderr was one line rewritten in place: each stage, each of the 8 nodes, then erased
    assert code == 1
    assert f"{ERASE_LINE}describing cluster {CLUSTER} and its nodes" in drawn
    assert f"{ERASE_LINE}collecting 8/8: i-" in drawn and " collected" in drawn
    assert drawn.endswith(ERASE_LINE) and "\n" not in drawn
    assert "[CONCERN]" in (tmp_path / "findings.txt").read_text()
    # and -q draws nothing, even on a terminal
    assert on_terminal("-q") == (1, "")

    # When stderr is a pipe
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    assert main([*argv, "-o", str(tmp_path / "again.txt")]) == 1
    # Then it gets no progress at all
    assert pipe.getvalue() == ""


@pytest.mark.prometheus
def test_diagnose_with_a_prometheus_source_adds_the_metrics_verdict(capsys, seeded, tmp_path):
    from hyperpod_perf_dev.prometheus_local import serve_openmetrics
    from hyperpod_perf_dev.sim.metrics import Fault, FleetHistory, SimNode

    # Given the seeded cluster's nodes' exporter history, node 2 power-capped for the last 40 minutes
    sim = seeded["sim"]
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    capped = sim[1]
    FleetHistory(
        [SimNode(n.instance_id, n.hostname) for n in sim],
        now - timedelta(hours=7),
        now + timedelta(minutes=10),
        faults=[
            Fault("power_cap", now - timedelta(minutes=40), now + timedelta(minutes=10), node=capped.hostname)
        ],
    ).write(str(tmp_path / "history.om"))
    with serve_openmetrics(tmp_path / "history.om", workdir=tmp_path) as url:
        # When diagnose runs with that source
        code, out, err = _diagnose(capsys, seeded, "--format", "json", "--prometheus", url)
    # Then the report holds the metrics finding on that node's instance id, and its metrics section
    assert code == 1, err
    report = json.loads(out)
    assert (capped.instance_id, "metrics.gpu_clock") in concerns(report["findings"])
    assert report["metrics"]["suspects"] == [capped.instance_id]
    assert report["metrics"]["nodes_seen"] == len(sim)


def test_diagnose_html_with_out_dir_writes_the_report_and_does_not_print_the_page(capsys, seeded, tmp_path):
    # When the HTML report is asked for with --out DIR
    code, out, err = _diagnose(capsys, seeded, "--format", "html", "--out", tmp_path / "out")

    # Then the page is in DIR, named on stderr, and not printed
    assert code == 1
    assert out == ""
    assert err.splitlines()[-1] == f"written to {tmp_path / 'out'}/: report.json, report.md, report.html"
    assert (tmp_path / "out" / "report.html").read_text().lstrip().lower().startswith("<!doctype html")


def test_diagnose_text_lists_the_concerns_per_node(capsys, seeded):
    code, out, _ = _diagnose(capsys, seeded)

    assert code == 1
    powersave = seeded["sim"][POWERSAVE_NODE]
    assert f"== {powersave.hostname} ({powersave.instance_id}) ==" in out
    assert any(line.startswith("[CONCERN] (fix soon) topology.az_spread: ") for line in out.splitlines())
    assert out.splitlines()[-1].startswith("Summary: 5 concern(s)")


@pytest.mark.parametrize(
    ("argv", "mentions"),
    [
        (["--cluster", "no-such-cluster"], ["no-such-cluster"]),
        (["--cluster", CLUSTER, "--since", "3 hours"], ["--since", "3 hours"]),
        (["--cluster", CLUSTER, "--since", "30d"], ["--since", "15d"]),
        (["--cluster", "bad name!"], ["cluster"]),
        (["--cluster", CLUSTER, "--node", "node 1;rm"], ["node 1;rm", "instance id, host name"]),
        (["--cluster", CLUSTER, "--snapshots", "/nonexistent-dir"], ["/nonexistent-dir", "not a directory"]),
    ],
)
def test_diagnose_bad_requests_exit_2_with_one_line(capsys, monkeypatch, argv, mentions):
    # Given an account (moto) without that cluster, or a request that fails validation
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        code, out, err = run(capsys, "diagnose", "--region", REGION, *argv)

    # Then exit 2 with one line naming what is wrong; nothing on stdout
    assert (code, out) == (2, "")
    assert_one_line_error(err, *mentions)


@pytest.mark.parametrize("spelling", ["host", "fqdn", "ip", "upper"])
def test_diagnose_node_accepts_the_host_name_in_any_spelling(capsys, seeded, spelling):
    # Given the powersave node, named as an operator would from Slurm or ssh
    node = seeded["sim"][POWERSAVE_NODE]
    ip = node.hostname.removeprefix("ip-").replace("-", ".")
    typed = {
        "host": node.hostname,
        "fqdn": f"{node.hostname}.us-west-2.compute.internal",
        "ip": ip,
        "upper": node.hostname.upper(),
    }[spelling]

    # When diagnose is limited to it by that name
    code, out, err = _diagnose(capsys, seeded, "--node", typed, "--format", "json")

    # Then exactly that node is collected and judged, under its instance id, with its host name
    assert code == 1, err
    report = json.loads(out)
    assert [(n["instance_id"], n["hostname"]) for n in report["nodes"]] == [(node.instance_id, node.hostname)]
    assert (node.instance_id, "host.cpu_governor") in concerns(report["findings"])


def test_diagnose_node_by_host_name_and_by_id_name_the_same_nodes_in_text(capsys, seeded):
    sim = seeded["sim"]
    # When two nodes are named, one by host name and one by instance id
    code, out, _ = _diagnose(
        capsys, seeded, "--node", sim[POWERSAVE_NODE].hostname, "--node", sim[SLOW_NODE].instance_id
    )
    assert code == 1

    # Then both are reported, each headed by both its names
    blocks = [line for line in out.splitlines() if line.startswith("== ") and line != "== cluster =="]
    assert sorted(blocks) == sorted(
        f"== {n.hostname} ({n.instance_id}) ==" for n in (sim[POWERSAVE_NODE], sim[SLOW_NODE])
    )


def test_diagnose_node_with_an_unknown_name_exits_2_naming_the_closest_nodes(capsys, seeded):
    node = seeded["sim"][POWERSAVE_NODE]
    typo = node.hostname[:-1]  # one digit short

    code, out, err = _diagnose(capsys, seeded, "--node", typo)

    assert (code, out) == (2, "")
    assert_one_line_error(err, repr(typo), f"cluster {CLUSTER}", "closest: ")
    assert f"{node.hostname} ({node.instance_id})" in err.split("closest: ", 1)[1]


def test_diagnose_offline_node_by_host_name_judges_that_snapshot_only(capsys, seeded, tmp_path):
    node = seeded["sim"][POWERSAVE_NODE]

    code, out, err = _diagnose(capsys, seeded, "--offline", "--node", node.hostname, "--format", "json")

    assert code == 1, err
    report = json.loads(out)
    assert {f["node"] for f in report["findings"] if f["node"]} == {node.instance_id}


def test_document_prints_the_non_interactive_session_document(capsys):
    code, out, _ = run(capsys, "document")

    document = json.loads(out)
    assert code == 0
    assert (document["schemaVersion"], document["sessionType"]) == ("1.0", "NonInteractiveCommands")
    linux = document["properties"]["linux"]
    assert linux["separateOutputStream"] is True
    # the command embeds the packaged collector.sh
    assert "hpd:begin" in linux["commands"] and linux["commands"].startswith("env HPD_TIMEOUT=")


# --- nccl analyze / plan --------------------------------------------------------------------


def test_nccl_analyze_real_fixtures_reports_each_log_with_its_busbw(capsys, tmp_path):
    # When the real nccl-tests outputs are analysed as JSON, with --out
    code, out, _ = run(capsys, "nccl", "analyze", NCCL_REAL, "--format", "json", "--out", tmp_path)

    # Then the keys are the issue's, and each log with measurements is a pair entry; these logs
    # name no host pair (no rank lines, no <a>__<b> file name), so a and b are null
    result = json.loads(out)
    assert {"pairs", "mean", "median", "slow_pairs", "suspects", "findings"} <= set(result)
    assert code == 1
    by_source = {Path(p["sources"][0]).name: p for p in result["pairs"]}
    assert by_source[P5_LOG.name]["busbw_gbps"] == pytest.approx(487.175)  # 16 GB row: (487.09 + 487.26) / 2
    assert by_source[P4DE_LOG.name]["busbw_gbps"] == pytest.approx(78.33)  # 2 GB row, both halves
    assert all({"a", "b", "busbw_gbps", "runs"} <= set(p) and p["a"] is None for p in result["pairs"])
    assert result["median"] == pytest.approx(78.33)
    # the log with no measurement rows is a finding, not a pair
    unreadable = [f for f in result["findings"] if f["check"] == "nccl.log" and f["severity"] == "CONCERN"]
    assert ["h100-2node-16rank_header-only_busbw0-issue_excerpt.txt" in f["summary"] for f in unreadable] == [
        True
    ]
    assert all(has_finding_fields(f) for f in result["findings"])
    assert (tmp_path / "nccl-heatmap.svg").read_text().lstrip().startswith(("<svg", "<?xml"))


def test_nccl_analyze_draws_its_reading_on_a_terminal_only(monkeypatch, tmp_path):
    from hyperpod_perf.cli.progress import ERASE_LINE

    monkeypatch.setenv("TERM", "xterm-256color")
    logs = sorted(p for p in NCCL_REAL.iterdir() if p.is_file())
    # When the real logs are analysed with a terminal as stderr
    master, slave = os.openpty()
    terminal = os.fdopen(slave, "w", encoding="utf-8", buffering=1)
    with monkeypatch.context() as patch:
        patch.setattr(sys, "stderr", terminal)
        code = main(["nccl", "analyze", str(NCCL_REAL), "-o", str(tmp_path / "pairs.txt")])
    terminal.close()
    drawn = read_terminal(master)
    # Then the line counted the files it read, said it was analysing, and was erased at the end
    assert code == 1
    assert f"{ERASE_LINE}reading nccl-tests logs 1: " in drawn
    assert f"{ERASE_LINE}analysing " in drawn and drawn.endswith(ERASE_LINE)
    assert len(logs) >= 2 and "\n" not in drawn
    # and in a pipe nothing is drawn
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    assert main(["nccl", "analyze", str(NCCL_REAL), "-o", str(tmp_path / "again.txt")]) == 1
    assert pipe.getvalue() == ""


def test_nccl_analyze_html_with_out_dir_writes_the_page_and_does_not_print_it(capsys, tmp_path):
    # When the page is asked for with --out DIR
    out_dir = tmp_path / "pairs"
    code, out, err = run(capsys, "nccl", "analyze", NCCL_REAL, "--format", "html", "--out", out_dir)

    # Then DIR holds the four documents, stderr names them, and stdout stays empty
    assert code == 1
    assert out == ""
    names = ["nccl-pairs.json", "nccl-pairs.md", "nccl-pairs.html", "nccl-heatmap.svg"]
    assert err.splitlines()[-1] == f"written to {out_dir}/: {', '.join(names)}"
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(names)
    assert (out_dir / "nccl-pairs.html").read_text().lstrip().lower().startswith("<!doctype html")
    # and -o FILE still gets the page when asked for
    code, out, _ = run(
        capsys, "nccl", "analyze", NCCL_REAL, "--format", "html", "--out", out_dir, "-o", tmp_path / "p.html"
    )
    assert out == "" and (tmp_path / "p.html").read_text() == (out_dir / "nccl-pairs.html").read_text()


def test_nccl_analyze_out_naming_a_json_file_is_refused_and_makes_no_directory(capsys, tmp_path):
    # The report: `--format json --out result.json` made a directory called result.json
    with pytest.raises(SystemExit) as exit_info:
        main(["nccl", "analyze", str(NCCL_REAL), "--format", "json", "--out", str(tmp_path / "result.json")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert f"for one document use -o {tmp_path / 'result.json'}" in err.splitlines()[-1]
    assert not (tmp_path / "result.json").exists()


@pytest.fixture
def pair_logs(tmp_path) -> tuple[Path, list[str], str]:
    """Six nodes, every pair measured; pairs with node 4 ran at p4de speed (a real 78 GB/s log),
    the others at p5 speed (a real 487 GB/s log). Hosts come from `<hostA>__<hostB>.log` names."""
    nodes = [f"ip-10-1-0-{k}" for k in range(1, 7)]
    bad = nodes[3]
    directory = tmp_path / "pairs"
    directory.mkdir()
    for i, a in enumerate(nodes):
        for b in nodes[i + 1 :]:
            source = P4DE_LOG if bad in (a, b) else P5_LOG
            shutil.copyfile(source, directory / f"{a}__{b}.log")
    return directory, nodes, bad


def test_nccl_analyze_names_the_node_behind_the_slow_pairs(capsys, pair_logs, tmp_path):
    directory, nodes, bad = pair_logs

    # When the pair directory is analysed
    code, out, _ = run(capsys, "nccl", "analyze", directory, "--format", "json", "--out", tmp_path / "out")

    # Then all 15 pairs are read with their hosts, the 5 pairs of the bad node are slow, and it
    # is the only suspect
    result = json.loads(out)
    assert code == 1
    assert len(result["pairs"]) == 15
    assert {(p["a"], p["b"]) for p in result["pairs"]} == {
        (a, b) for i, a in enumerate(nodes) for b in nodes[i + 1 :]
    }
    # (compared at 2 GiB, the largest size every log measured: the p5 log reads 442.89 there)
    assert result["compared_at_bytes"] == 2 << 30
    assert result["mean"] == pytest.approx((10 * 442.89 + 5 * 78.33) / 15, abs=0.01)
    assert {(p["a"], p["b"]) for p in result["slow_pairs"]} == {
        (a, b) for i, a in enumerate(nodes) for b in nodes[i + 1 :] if bad in (a, b)
    }
    assert all(p["busbw_gbps"] == pytest.approx(78.33) for p in result["slow_pairs"])
    assert [(s["node"], s["slow_pairs"], s["pairs"]) for s in result["suspects"]] == [(bad, 5, 5)]
    suspect_findings = [f for f in result["findings"] if f["check"] == "nccl.node_suspect"]
    assert [(f["node"], f["severity"]) for f in suspect_findings] == [(bad, "CONCERN")]
    # and the heatmap is written, naming the suspect
    svg = (tmp_path / "out" / "nccl-heatmap.svg").read_text()
    assert "<svg" in svg and bad in svg and "<script" not in svg


def test_nccl_analyze_text_and_missing_input(capsys, pair_logs, tmp_path):
    directory, _, bad = pair_logs
    code, out, _ = run(capsys, "nccl", "analyze", directory)
    assert code == 1
    assert out.splitlines()[0].startswith("NCCL pairwise analysis: 15 pairs over 6 nodes")
    assert f"suspects: {bad}" in out.splitlines()[0]

    code, out, err = run(capsys, "nccl", "analyze", tmp_path / "nowhere")
    assert (code, out) == (2, "")
    assert_one_line_error(err, "nowhere")


@pytest.mark.parametrize("n", [2, 4, 8])
def test_nccl_plan_prints_n_minus_1_rounds_covering_every_pair_once(capsys, tmp_path, n):
    # Given a node list file (with a comment and a blank line)
    nodes = [f"ip-10-1-0-{k}" for k in range(1, n + 1)]
    (tmp_path / "nodes.txt").write_text("# job nodes\n" + "\n".join(nodes) + "\n\n")

    # When the plan is printed
    code, out, _ = run(capsys, "nccl", "plan", "--nodes", tmp_path / "nodes.txt")

    # Then N-1 rounds of N/2 disjoint sbatch lines, together covering every pair exactly once
    assert code == 0
    rounds: list[list[tuple[str, str]]] = []
    for line in out.splitlines():
        if line.startswith("# round "):
            rounds.append([])
        elif line.startswith("sbatch "):
            hosts = line.split(" -w ", 1)[1].split()[0].split(",")
            assert " -N 2 " in line and f"nccl-pairs/{hosts[0]}__{hosts[1]}.log" in line
            rounds[-1].append(tuple(hosts))
    assert len(rounds) == n - 1
    for pairs in rounds:
        assert len(pairs) == n // 2
        assert len({h for pair in pairs for h in pair}) == n  # disjoint
    every = [frozenset(p) for pairs in rounds for p in pairs]
    assert len(every) == len(set(every)) == n * (n - 1) // 2


def test_nccl_plan_needs_a_readable_list_of_two_nodes(capsys, tmp_path):
    code, _, err = run(capsys, "nccl", "plan", "--nodes", tmp_path / "absent.txt")
    assert code == 2
    assert_one_line_error(err, "absent.txt")
    (tmp_path / "one.txt").write_text("ip-10-1-0-1\n")
    code, _, err = run(capsys, "nccl", "plan", "--nodes", tmp_path / "one.txt")
    assert code == 2
    assert_one_line_error(err, "at least two nodes")


# --- report render / diff -------------------------------------------------------------------


@pytest.fixture
def stored_reports(tmp_path) -> tuple[Path, Path]:
    """Two runs of the demo-like synthetic fleet: the newer one has new EFA drops."""
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(render_report(synthetic_report(previous=True), "json"))
    new.write_text(render_report(synthetic_report(), "json"))
    return old, new


@pytest.mark.parametrize("fmt", ["html", "md", "json", "text"])
def test_report_render_each_format_equals_the_library_rendering(capsys, stored_reports, tmp_path, fmt):
    _, new = stored_reports

    code, out, err = run(capsys, "report", "render", new, "--format", fmt)

    assert (code, err) == (0, "")
    assert out == render_report(synthetic_report(), fmt)
    # and -o writes the same text to a file
    code, to_stdout, _ = run(capsys, "report", "render", new, "--format", fmt, "-o", tmp_path / f"r.{fmt}")
    assert (code, to_stdout) == (0, "")
    assert (tmp_path / f"r.{fmt}").read_text() == out


def test_report_render_content(capsys, stored_reports):
    _, new = stored_reports
    report = json.loads(new.read_text())
    _, html, _ = run(capsys, "report", "render", new, "--format", "html")
    _, md, _ = run(capsys, "report", "render", new, "--format", "md")
    assert report["verdict"] in html.replace("&#x27;", "'").replace("&amp;", "&")
    assert "<svg" in html and "<script src" not in html
    assert md.startswith("# ")
    assert json.loads(run(capsys, "report", "render", new, "--format", "json")[1]) == report


def test_report_diff_exits_1_when_a_new_concern_appears(capsys, stored_reports):
    old, new = stored_reports

    # When the newer run is compared with the older
    code, out, _ = run(capsys, "report", "diff", old, new, "--format", "json")

    # Then the concerns only the newer run has (EFA drops, the NCCL straggler) are new, the
    # governor concern is resolved, and the exit code is 1
    delta = json.loads(out)
    before, after = (set(concerns(json.loads(p.read_text())["findings"])) for p in (old, new))
    assert code == 1
    new_concerns = {(f["node"], f["check"]) for f in delta["new"] if f["severity"] == "CONCERN"}
    assert new_concerns == after - before
    assert {check for _, check in new_concerns} == {"efa.counters", "nccl.pair_slow", "nccl.node_suspect"}
    assert {
        (f["node"], f["check"]) for f in delta["resolved"] if f["severity"] == "CONCERN"
    } == before - after
    assert {check for _, check in before - after} == {"host.cpu_governor"}
    # and a report compared with itself changed nothing: exit 0
    code, out, _ = run(capsys, "report", "diff", new, new)
    assert code == 0
    assert "New since last run: 0" in out


def test_report_unreadable_input_exits_2_with_one_line(capsys, stored_reports, tmp_path):
    old, _ = stored_reports
    (tmp_path / "not-json.json").write_text("<html>")
    for argv, mention in (
        (["render", tmp_path / "absent.json"], "absent.json"),
        (["render", tmp_path / "not-json.json"], "not JSON"),
        (["diff", old, tmp_path / "absent.json"], "absent.json"),
    ):
        code, out, err = run(capsys, "report", *argv)
        assert (code, out) == (2, "")
        assert_one_line_error(err, mention)


# --- the installed console script -----------------------------------------------------------


def test_console_script_is_installed_and_keeps_the_exit_code_contract(tmp_path):
    script = Path(sys.executable).with_name("hyperpod-perf")
    if not script.exists():
        pytest.skip(f"console script not installed next to {sys.executable}")
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}

    faulty = subprocess.run([script, "evaluate", FAULTY], capture_output=True, text=True, env=env, timeout=60)
    missing = subprocess.run(
        [script, "evaluate", tmp_path / "missing.txt"], capture_output=True, text=True, env=env, timeout=60
    )

    assert faulty.returncode == 1
    assert f"== {FAULTY_LABEL} ==" in faulty.stdout
    assert (
        "[CONCERN] (fix soon) gpu.pcie_width: GPU 3 PCIe link at x8 of x16 → hyperpod-node-debugger § G"
        in faulty.stdout
    )
    assert (missing.returncode, missing.stdout) == (2, "")
    assert_one_line_error(missing.stderr, "missing.txt")
