"""`hyperpod-perf logs analyze`: exit codes, formats, directories and gzip (real excerpts as input)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from hyperpod_perf.cli import main

REAL = Path(__file__).parents[2] / "fixtures" / "real" / "joblogs"


def test_concern_exits_1_and_json_has_the_finding_shape(capsys):
    code = main(["logs", "analyze", str(REAL / "nccl-229-ofi-tcp-rxm.log"), "--format", "json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 1
    # (most urgent first: sockets instead of EFA is act now, the settings are for information)
    assert [(f["check"], f.get("tier")) for f in payload["findings"]] == [
        ("nccl.transport", "act now"),
        ("nccl.env", "watch"),
        ("nccl.memlock", None),
        ("nccl.timeout", None),
    ]
    assert set(payload["findings"][0]) == {
        "node",
        "check",
        "severity",
        "section",
        "summary",
        "evidence",
        "threshold",
        "next_step",
        "handoff",
        "tier",
        "tier_reason",
    }
    assert payload["findings"][0]["tier"] == "act now"


def test_healthy_log_exits_0_and_markdown_renders(capsys):
    assert main(["logs", "analyze", str(REAL / "ofi-889-cloudwatch-efa-p4d.log"), "--format", "md"]) == 0
    assert "| cluster | nccl.transport | OK |" in capsys.readouterr().out


def test_directory_recursion_and_gzip(tmp_path, capsys):
    (tmp_path / "a" / "b").mkdir(parents=True)
    shutil.copy(REAL / "nccl-526-pdsh-efa.log", tmp_path / "a" / "efa.log")
    with gzip.open(tmp_path / "a" / "b" / "mem.log.gz", "wb") as out:
        out.write((REAL / "nccl-563-register-memory-pdsh.log").read_bytes())
    (tmp_path / ".hidden").write_text("h:1:1 [0] NCCL INFO Using network Socket\n")
    code = main(["logs", "analyze", str(tmp_path), "--format", "json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert code == 1
    assert [f["node"] for f in findings if f["check"] == "nccl.memlock"] == ["ip-10-0-87-143"]
    assert next(f for f in findings if f["check"] == "nccl.transport")["severity"] == "OK"


def test_missing_path_and_no_input_exit_2_with_one_line(tmp_path, capsys):
    assert main(["logs", "analyze", str(tmp_path / "nope")]) == 2
    assert main(["logs", "analyze"]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["logs", "analyze", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("hyperpod-perf: ") for line in err)


def test_corrupt_gzip_is_a_finding_and_the_other_logs_are_still_judged(tmp_path, capsys):
    # Given a corrupt .gz beside a real log that shows a memory-registration failure
    (tmp_path / "bad.log.gz").write_bytes(b"not gzip at all")
    (tmp_path / "rank0.log").write_bytes((REAL / "nccl-563-register-memory-pdsh.log").read_bytes())
    # When both are analysed
    code = main(["logs", "analyze", str(tmp_path), "--format", "json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    # Then the good log is judged (its concern sets the exit code) and the bad one is named, with why
    assert code == 1
    assert [f["node"] for f in findings if f["check"] == "nccl.memlock"] == ["ip-10-0-87-143"]
    (coverage,) = [f for f in findings if f["check"] == "nccl.joblog_coverage"]
    assert coverage["severity"] == "INFO"
    assert coverage["evidence"]["cuts"] == [
        [
            str(tmp_path / "bad.log.gz"),
            "not a readable gzip stream after 0 bytes (Error -3 while decompressing data: incorrect header "
            "check)",
        ]
    ]


def test_parallel_parts_give_the_same_findings_as_one_pass(tmp_path, monkeypatch, capsys):
    # Given every real excerpt in one file, cut into ~4 KiB newline-aligned parts read by 2 processes
    import hyperpod_perf.cli.logs as cli_logs

    big = tmp_path / "all.log"
    big.write_bytes(b"".join(p.read_bytes() + b"\n" for p in sorted(REAL.glob("*.log"))))
    assert main(["logs", "analyze", str(big), "--format", "json", "--jobs", "1"]) == 1
    one_pass = json.loads(capsys.readouterr().out)["findings"]
    monkeypatch.setattr(cli_logs, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(cli_logs, "PART_BYTES", 4096)
    assert len(cli_logs._parts([big])) > 4
    assert main(["logs", "analyze", str(big), "--format", "json", "--jobs", "2"]) == 1
    parallel = json.loads(capsys.readouterr().out)["findings"]

    # Then the checks, severities and summaries agree (only line references may name a part)
    def strip(findings):
        return [(f["check"], f["severity"], f["summary"]) for f in findings]

    assert strip(parallel) == strip(one_pass)


def test_small_logs_are_bundled_into_parts_of_about_the_part_size(tmp_path, monkeypatch):
    # Given 40 logs of 1 KiB and one of 10 KiB, parts of 4 KiB
    import hyperpod_perf.cli.logs as cli_logs

    for n in range(40):
        (tmp_path / f"rank{n:02d}.log").write_bytes(b"x" * 1023 + b"\n")
    line = b"ip-10-1-0-10:4000:4000 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read"
    (tmp_path / "big.log").write_bytes((line + b" " * (1023 - len(line)) + b"\n") * 10)
    monkeypatch.setattr(cli_logs, "PART_BYTES", 4096)
    parts = cli_logs._parts(sorted(tmp_path.iterdir()))
    # Then the small ones go 4 to a part (10 parts, not 40 scans to merge), the big one is cut,
    # and every log is in exactly one part, the logs of a part sharing one record of what was cut
    small = [part for part in parts if all("rank" in name for name, _ in part)]
    assert [len(part) for part in small] == [4] * 10
    assert sum(1 for part in parts for name, _ in part if "big.log" in name) == 3
    names = [name for part in parts for name, _ in part if "rank" in name]
    assert len(names) == len(set(names)) == 40
    assert all(len({id(lines.bounds) for _, lines in part}) == 1 for part in parts)


def test_log_group_without_a_region_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    assert main(["logs", "analyze", "--log-group", "/aws/jobs/train"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hyperpod-perf: no AWS region: pass --region") and "\n" not in err


def test_nothing_recognisable_is_an_error_not_an_all_clear(tmp_path, capsys):
    # Given an empty log and one of random bytes (issue 23: both printed "[OK] ... in 0 record(s)")
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    noise = tmp_path / "noise.log"
    noise.write_bytes(bytes(range(256)) * 16)
    for path in (empty, noise):
        # When it is analysed
        code = main(["logs", "analyze", str(path)])
        captured = capsys.readouterr()
        # Then it exits 2, prints no verdict, and says what it expected to find
        assert code == 2
        assert "[OK]" not in captured.out
        assert "recognised no record" in captured.err
        assert "NCCL_DEBUG=INFO" in captured.err


def test_instance_type_typo_exits_2_with_a_suggestion(capsys):
    log = str(REAL / "nccl-229-ofi-tcp-rxm.log")
    with pytest.raises(SystemExit) as refused:  # argparse's own exit for a bad argument
        main(["logs", "analyze", log, "--instance-type", "ml.p5.48xlarg"])
    assert refused.value.code == 2
    assert "did you mean ml.p5.48xlarge" in capsys.readouterr().err
    assert main(["logs", "analyze", log, "--instance-type", "ml.p5.48xlarge"]) == 1
