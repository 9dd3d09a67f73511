"""`run_analyze` end to end over files, directories and an injected S3 reader."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from itertools import combinations

import pytest
from nccl_synth import REAL, synthetic_log

from hyperpod_perf.nccl.commands import EXIT_CONCERN, EXIT_ERROR, EXIT_OK, run_analyze
from hyperpod_perf.nccl.io import load_logs


def _write_cluster(directory, n=6, bad=None, value=400.0):
    nodes = [f"node-{i}" for i in range(n)]
    for a, b in combinations(nodes, 2):
        busbw = value * (0.5 if bad in (a, b) else 1.0)
        (directory / f"{a}__{b}.log").write_text(synthetic_log(busbw), encoding="utf-8")
    return nodes


def test_json_output_has_the_documented_shape_and_names_the_suspect(tmp_path):
    _write_cluster(tmp_path, bad="node-4")
    text, code = run_analyze([str(tmp_path)], "json", None, instance_type="ml.p5.48xlarge")
    data = json.loads(text)
    assert code == EXIT_CONCERN
    assert len(data["pairs"]) == 15 and set(data["pairs"][0]) >= {"a", "b", "busbw_gbps", "runs"}
    assert data["median"] == 400.0 and data["mean"] == pytest.approx((10 * 400 + 5 * 200) / 15, abs=1e-3)
    assert {(p["a"], p["b"]) for p in data["slow_pairs"]} == {
        tuple(sorted(("node-4", o))) for o in ("node-0", "node-1", "node-2", "node-3", "node-5")
    }
    assert data["suspects"][0]["node"] == "node-4"
    assert (data["suspects"][0]["slow_pairs"], data["suspects"][0]["pairs"]) == (5, 5)
    assert {f["check"] for f in data["findings"]} >= {
        "nccl.pair_slow",
        "nccl.node_suspect",
        "nccl.below_baseline",
    }


def test_healthy_cluster_exits_zero_and_text_says_so(tmp_path):
    _write_cluster(tmp_path)
    text, code = run_analyze([str(tmp_path)], "text", None, instance_type="p5.48xlarge")
    assert code == EXIT_OK
    assert "suspects: none" in text and "[OK] nccl.pair_slow: all 15 pairs within 5%" in text


def test_out_dir_gets_json_markdown_html_and_the_svg(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    _write_cluster(logs, bad="node-1")
    out = tmp_path / "report"
    text, code = run_analyze([str(logs)], "html", out)
    assert code == EXIT_CONCERN
    assert sorted(p.name for p in out.iterdir()) == [
        "nccl-heatmap.svg",
        "nccl-pairs.html",
        "nccl-pairs.json",
        "nccl-pairs.md",
    ]
    assert "<svg" in text and "▲ node-1 (suspect)" in text and "<script" not in text
    ET.fromstring((out / "nccl-heatmap.svg").read_text(encoding="utf-8"))
    assert "| node-1 | 5 of 5 |" in (out / "nccl-pairs.md").read_text(encoding="utf-8")


def test_real_fixtures_analyse_with_null_hosts_and_the_unusable_header_only_log(tmp_path):
    for f in REAL.iterdir():
        shutil.copy(f, tmp_path / f.name)
    text, code = run_analyze([str(tmp_path)], "json", None)
    data = json.loads(text)
    figures = sorted(p["busbw_gbps"] for p in data["pairs"])
    assert figures == [2.455, 41.415, 78.33, 437.84, 487.175]
    assert all(p["a"] is None and p["b"] is None for p in data["pairs"])
    assert [u["source"].rsplit("/", 1)[-1] for u in data["unusable_logs"]] == [
        "h100-2node-16rank_header-only_busbw0-issue_excerpt.txt"
    ]
    assert code == EXIT_CONCERN


def test_s3_paths_use_the_injected_reader(tmp_path):
    calls = []

    def reader(uri):
        calls.append(uri)
        return [(f"{uri}/a__b.log", synthetic_log(400.0)), (f"{uri}/a__c.log", synthetic_log(400.0))]

    text, code = run_analyze(["s3://bucket/nccl/2025-01-01"], "json", None, s3_reader=reader)
    assert code == EXIT_OK
    assert calls == ["s3://bucket/nccl/2025-01-01"]
    assert {(p["a"], p["b"]) for p in json.loads(text)["pairs"]} == {("a", "b"), ("a", "c")}


def test_s3_without_a_reader_and_missing_paths_are_errors(tmp_path):
    text, code = run_analyze(["s3://bucket/x", str(tmp_path / "nope")], "text", None)
    assert code == EXIT_ERROR
    assert "S3 paths need AWS credentials" in text and "no such file or directory" in text


def test_unknown_format_and_no_bandwidth_are_errors(tmp_path):
    assert run_analyze([str(tmp_path)], "yaml", None)[1] == EXIT_ERROR
    (tmp_path / "x__y.log").write_text("srun: error: Unable to allocate resources\n")
    text, code = run_analyze([str(tmp_path)], "text", None)
    assert code == EXIT_ERROR and "no log yielded a bandwidth" in text


def test_load_logs_reads_only_log_like_files_sorted(tmp_path):
    (tmp_path / "b__c.log").write_text("b")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a__b.txt").write_text("a")
    (tmp_path / "notes.md").write_text("ignored")
    loaded = load_logs([str(tmp_path)])
    assert [name.rsplit("/", 1)[-1] for name, _ in loaded.logs] == ["b__c.log", "a__b.txt"]
    assert loaded.errors == []


def test_json_output_lists_the_inputs_that_could_not_be_read(tmp_path):
    # Given one readable log directory and one path that does not exist
    missing = str(tmp_path / "nope")
    text, code = run_analyze([str(REAL), missing], "json")
    # Then the JSON document still carries the analysis, names the unreadable input, and exits 1
    document = json.loads(text)
    assert document["input_errors"] == [f"{missing}: no such file or directory"]
    assert len(document["pairs"]) == 5 and code == EXIT_CONCERN
