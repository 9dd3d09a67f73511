"""The run history: rows from a report, repeat offenders, the before/after verdict, and the named
questions — parsed in both dialects by sqlglot and answered by DuckDB over files the writer wrote."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.domain.report import ClusterSummary, GpuFigure, NodeSummary, Report, RunInfo
from hyperpod_perf.history.encoding import decode_rows, encode_rows
from hyperpod_perf.history.offenders import escalate, ordinal
from hyperpod_perf.history.queries import BY_NAME, QUESTIONS, window
from hyperpod_perf.history.repair import verdict
from hyperpod_perf.history.rows import TABLES, history_rows, tier_of
from hyperpod_perf.rules.urgency import with_tiers

CLUSTER = "ml-cluster"


def _xid(node: str, code: int = 79) -> Finding:
    return Finding(
        node=node,
        check="gpu.xid",
        severity=Severity.CONCERN,
        section=RunbookSection.GPU,
        summary=f"GPU 3 Xid {code}",
        evidence={"code": code, "gpu": 3, "pci": "0000:86:00", "action": "restart_node"},
        next_step="Drain and reboot the node.",
    )


def _report(started: str, findings: list[Finding], serial_of: dict[str, str] | None = None) -> Report:
    serial_of = serial_of or {}
    nodes = [
        NodeSummary(
            node=i,
            instance_id=i,
            hostname=f"ip-10-1-0-{n}",
            instance_group="workers",
            network_nodes=["nn-top", f"nn-spine{n % 2}", f"nn-brick{n}"],
            efa_devices=["rdmap79s0"],
            gpus=[GpuFigure(index=0, serial=serial_of.get(i, f"16549220{n:05d}"), uuid=f"GPU-{n}")],
            figures={"gpu.sm_clock_under_load_mhz": 1980.0},
        )
        for n, i in enumerate(("i-0a1b2c3d4e5f60001", "i-0a1b2c3d4e5f60002"))
    ]
    return Report(
        cluster=ClusterSummary(name=CLUSTER, node_count=2),
        run=RunInfo(started=started, reason="test"),
        findings=findings,
        nodes=nodes,
        nccl={
            "pairs": [{"a": "ip-10-1-0-0", "b": "ip-10-1-0-1", "busbw_gbps": 300.0}],
            "slow_pairs": [{"a": "ip-10-1-0-0", "b": "ip-10-1-0-1", "busbw_gbps": 300.0}],
        },
    )


def test_rows_carry_every_column_the_tables_declare_and_map_hosts_to_instances() -> None:
    report = _report("2026-05-09T21:46:15+00:00", [_xid("i-0a1b2c3d4e5f60001")])
    rows = history_rows(report, "20260509T214615Z-run1", repairs={"i-0a1b2c3d4e5f60002": "Reboot"})
    node = rows["nodes"][0]
    assert set(node) == {c for c, _ in TABLES["nodes"]}
    assert (node["run_time"], node["network_node_2"], node["efa_device_count"]) == (
        "2026-05-09T21:46:15Z",
        "nn-spine0",
        1,
    )
    assert node["pair_mean_gbps"] == 300.0 and node["slow_pairs"] == 1 and node["concerns"] == 1
    assert rows["nodes"][1]["repair_action"] == "Reboot"
    (finding,) = rows["findings"]
    assert (finding["check_id"], finding["code"], finding["gpu"], finding["device"]) == (
        "gpu.xid",
        "79",
        "3",
        "0000:86:00",
    )
    assert finding["tier"] is None  # not through build_report: no tier stored (see below)
    (pair,) = rows["pairs"]
    assert (pair["instance_a"], pair["slow"], pair["shared_layers"]) == ("i-0a1b2c3d4e5f60001", True, 1)
    assert [g["serial"] for g in rows["gpus"]] == ["1654922000000", "1654922000001"]
    # the encoding keeps the columns in order, and round-trips
    assert decode_rows(encode_rows("findings", rows["findings"])) == rows["findings"]


def test_the_tier_column_is_the_tier_the_report_stored() -> None:
    tiered = with_tiers([_xid("i-1"), _xid("i-1").model_copy(update={"severity": Severity.INFO})])
    ok = _xid("i-1").model_copy(update={"severity": Severity.OK})
    assert [tier_of(f) for f in (*tiered, ok)] == ["act now", "watch", None]
    assert tier_of(_xid("i-1")) is None  # a report before schema 1.3 stored none


@pytest.mark.parametrize(
    ("n", "word"), [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (22, "22nd")]
)
def test_ordinals(n: int, word: str) -> None:
    assert ordinal(n) == word


def _past(runs: int, node: str = "i-0a1b2c3d4e5f60001", code: str = "79") -> list[dict]:
    return [
        {
            "run_id": f"r{k}",
            "run_time": f"2026-05-0{k + 1}T00:00:00Z",
            "instance_id": node,
            "check_id": "gpu.xid",
            "code": code,
            "severity": "CONCERN",
        }
        for k in range(runs)
    ]


def test_the_fourth_xid_79_in_30_days_escalates_to_replace() -> None:
    report = _report("2026-05-09T00:00:00Z", [_xid("i-0a1b2c3d4e5f60001")])
    escalated, offenders = escalate(report, _past(3), "now", min_runs=2, window_days=30)
    (finding,) = escalated.findings
    assert [(o.instance_id, o.runs, o.label) for o in offenders] == [("i-0a1b2c3d4e5f60001", 4, "Xid 79")]
    assert finding.next_step.startswith("4th Xid 79 in 30 days: replace, do not reboot again")
    assert (
        "batch-replace-cluster-nodes --cluster-name ml-cluster --node-ids i-0a1b2c3d4e5f60001"
        in finding.next_step
    )
    assert finding.summary.endswith("4th Xid 79 in 30 days (first 2026-05-01)")
    assert finding.evidence["repeat"]["previous_next_step"] == "Drain and reboot the node."


def test_a_first_xid_another_code_or_another_node_does_not_escalate() -> None:
    report = _report("2026-05-09T00:00:00Z", [_xid("i-0a1b2c3d4e5f60001")])
    for past in ([], _past(3, code="48"), _past(3, node="i-0a1b2c3d4e5f60002")):
        escalated, offenders = escalate(report, past, "now", min_runs=2, window_days=30)
        assert offenders == [] and escalated.findings == report.findings
    # at the threshold: the second run with it escalates
    _, offenders = escalate(report, _past(1), "now", min_runs=2, window_days=30)
    assert [o.runs for o in offenders] == [2]
    _, offenders = escalate(report, _past(1), "now", min_runs=3, window_days=30)
    assert offenders == []


def _write(root: Path, report: Report, run: str) -> None:
    rows = history_rows(report, run)
    day = report.run.started[:10]
    for table in TABLES:
        target = root / table / f"cluster={CLUSTER}" / f"run_date={day}" / f"{run}.jsonl.gz"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(encode_rows(table, rows[table]))


@pytest.mark.parametrize("question", QUESTIONS, ids=lambda q: q.name)
def test_each_question_is_one_text_with_the_same_meaning_in_trino_and_duckdb(question) -> None:
    trees = {
        d: sqlglot.parse_one(question.sql, read=d, error_level=ErrorLevel.RAISE) for d in ("trino", "duckdb")
    }
    for dialect in ("trino", "duckdb"):
        # the same text parses to the same query in both dialects (e.g. no integer division in one only)
        assert trees["trino"].sql(dialect) == trees["duckdb"].sql(dialect)
        # and calls no function either dialect does not know
        assert not list(trees[dialect].find_all(exp.Anonymous))
    assert len(list(trees["trino"].find_all(exp.Placeholder))) == len(question.parameters)
    tables = {t.name for t in trees["trino"].find_all(exp.Table)}
    assert tables <= {f"history_{t}" for t in TABLES} | {
        "runs",
        "recent",
        "flagged",
        "seen",
        "moved",
        "per_run",
        "trend",
    }


def test_duckdb_answers_every_question_over_written_history(tmp_path: Path) -> None:
    from hyperpod_perf.history.duck import HistoryDb

    # Given three runs: Xid 79 twice on node 1, a GPU serial moving from node 1 to node 2
    for k, day in enumerate(("2026-05-01", "2026-05-02", "2026-05-03")):
        findings = [_xid("i-0a1b2c3d4e5f60001")] if k < 2 else []
        serials = (
            {"i-0a1b2c3d4e5f60002": "1654922000000"} if k == 2 else {"i-0a1b2c3d4e5f60001": "1654922000000"}
        )
        _write(
            tmp_path, _report(f"{day}T10:00:00Z", findings, serials), f"{day.replace('-', '')}T100000Z-r{k}"
        )
    values = {
        "cluster": CLUSTER,
        **window(datetime(2026, 5, 4, tzinfo=UTC), 30),
        "code": "79",
        "last_runs": 3,
        "min_flagged": 1,
        "min_runs": 2,
        "min_drop": 0.05,
    }
    with HistoryDb(tmp_path) as db:
        columns, rows = db.ask(BY_NAME["xid_nodes"], values)
        assert dict(zip(columns, rows[0], strict=True)) == {
            "instance_id": "i-0a1b2c3d4e5f60001",
            "hostname": "ip-10-1-0-0",
            "code": "79",
            "runs": 2,
            "first_seen": "2026-05-01T10:00:00Z",
            "last_seen": "2026-05-02T10:00:00Z",
        }
        _, moves = db.ask(BY_NAME["gpu_serial_moves"], values)
        assert [(r[0], r[1]) for r in moves] == [
            ("1654922000000", "i-0a1b2c3d4e5f60001"),
            ("1654922000000", "i-0a1b2c3d4e5f60002"),
        ]
        _, concerns = db.ask(BY_NAME["concerns_by_check"], values)
        assert concerns == [("2026-05-01", "gpu.xid", 1, 1, 1), ("2026-05-02", "gpu.xid", 1, 1, 1)]
        assert db.ask(BY_NAME["chronic_stragglers"], values)[1] == []
        assert db.ask(BY_NAME["pair_bandwidth_trend"], values)[1] == []  # the pair figure did not move
        # another code, or a look-back that starts after the Xids, finds nothing
        assert db.ask(BY_NAME["xid_nodes"], {**values, "code": "48"})[1] == []
        later = {**values, **window(datetime(2026, 6, 10, tzinfo=UTC), 30)}
        assert db.ask(BY_NAME["xid_nodes"], later)[1] == []


def _three_runs(root: Path) -> dict:
    for k, day in enumerate(("2026-05-01", "2026-05-02", "2026-05-03")):
        findings = [_xid("i-0a1b2c3d4e5f60001")] if k < 2 else []
        serials = (
            {"i-0a1b2c3d4e5f60002": "1654922000000"} if k == 2 else {"i-0a1b2c3d4e5f60001": "1654922000000"}
        )
        _write(root, _report(f"{day}T10:00:00Z", findings, serials), f"{day.replace('-', '')}T100000Z-r{k}")
    return {
        "cluster": CLUSTER,
        **window(datetime(2026, 5, 4, tzinfo=UTC), 30),
        "code": "",
        "last_runs": 3,
        "min_flagged": 1,
        "min_runs": 2,
        "min_drop": 0.05,
    }


def test_the_parquet_copies_answer_every_question_as_the_json_lines_do(tmp_path: Path) -> None:
    from hyperpod_perf.history.duck import HistoryDb

    # Given three days of history
    history, cache = tmp_path / "history", tmp_path / "cache"
    values = _three_runs(history)
    # When every question is asked of the files directly and of their Parquet copies
    with HistoryDb(history) as direct, HistoryDb(history, cache=cache) as columnar:
        answers = [(direct.ask(q, values), columnar.ask(q, values)) for q in QUESTIONS]
        copied = columnar.copied
    # Then the answers are the same, the xid and serial answers not empty, and each day of each
    # table was copied once (a run writes every table, an empty object where it has no rows)
    assert all(a == b for a, b in answers)
    assert answers[0][1][1] and answers[2][1][1]
    assert copied == len(list(cache.glob("*/cluster=*/run_date=*/*.parquet"))) == len(TABLES) * 3
    assert not list(cache.rglob("*.tmp"))


def test_a_day_is_copied_again_only_when_it_gets_a_new_run(tmp_path: Path) -> None:
    from hyperpod_perf.history.duck import HistoryDb

    history, cache = tmp_path / "history", tmp_path / "cache"
    values = _three_runs(history)
    with HistoryDb(history, cache=cache) as first:
        assert first.copied == len(TABLES) * 3
    # Given the cache filled: a second reader copies nothing
    with HistoryDb(history, cache=cache) as again:
        assert again.copied == 0
        assert again.ask(BY_NAME["xid_nodes"], values)[1][0][3] == 2
    # When the last day gets a second run with an Xid
    _write(history, _report("2026-05-03T16:00:00Z", [_xid("i-0a1b2c3d4e5f60001")]), "20260503T160000Z-r3")
    with HistoryDb(history, cache=cache) as after:
        # Then that day's tables alone are copied again, the day's older copies removed, and the new
        # run is in the answer
        assert after.copied == len(TABLES)
        assert after.ask(BY_NAME["xid_nodes"], values)[1][0][3] == 3
    day = sorted(cache.glob("nodes/cluster=*/run_date=2026-05-03/*.parquet"))
    assert len(day) == 1


@pytest.mark.parametrize(
    ("printed", "kept"),
    [
        ("1654922000000", "1654922000000"),
        (" 1320221012345 ", "1320221012345"),
        ("0000000000000", None),  # anonymised or unprogrammed: not a board
        ("0", None),
        ("[N/A]", None),
        ("N/A", None),
        ("", None),
        (None, None),
    ],
)
def test_only_a_serial_that_names_a_board_is_kept(printed, kept) -> None:
    from hyperpod_perf.history.rows import board_serial

    assert board_serial(printed) == kept


def test_all_zero_serials_on_every_node_are_not_one_board_moving(tmp_path: Path) -> None:
    from hyperpod_perf.history.duck import HistoryDb

    # Given two runs where both nodes' boards print the all-zero serial
    zeros = {"i-0a1b2c3d4e5f60001": "0000000000000", "i-0a1b2c3d4e5f60002": "0000000000000"}
    for k, day in enumerate(("2026-05-01", "2026-05-02")):
        _write(tmp_path, _report(f"{day}T10:00:00Z", [], zeros), f"{day.replace('-', '')}T100000Z-r{k}")
    values = {"cluster": CLUSTER, **window(datetime(2026, 5, 4, tzinfo=UTC), 30)}
    # When the serial question is asked; Then no board moved, and the rows kept the GPUs, serial null
    with HistoryDb(tmp_path) as db:
        assert db.ask(BY_NAME["gpu_serial_moves"], values)[1] == []
        rows = db.connection.execute("SELECT count(*), count(serial) FROM history_gpus").fetchone()
    assert rows == (4, 0)


def test_after_a_reboot_the_same_concern_back_is_not_fixed_and_gone_is_fixed() -> None:
    node = "i-0a1b2c3d4e5f60001"
    node_rows = [
        {
            "run_id": "before",
            "run_time": "2026-05-01T00:00:00Z",
            "instance_id": node,
            "instance_group": "workers",
        }
    ]
    finding_rows = _past(1)
    finding_rows[0]["run_id"] = "before"
    again = verdict(
        _report("2026-05-02T00:00:00Z", [_xid(node)]), node, node_rows, finding_rows, "now", below_fleet_pct=5
    )
    assert (again.severity, again.summary) == (
        Severity.CONCERN,
        "after the repair: not fixed (the same instance): gpu.xid:79 again",
    )
    fixed = verdict(
        _report("2026-05-02T00:00:00Z", []), node, node_rows, finding_rows, "now", below_fleet_pct=5
    )
    assert fixed.severity is Severity.OK and fixed.summary.startswith(
        "after the repair: fixed (the same instance)"
    )
    none = verdict(_report("2026-05-02T00:00:00Z", []), node, [], [], "now", below_fleet_pct=5)
    assert none.severity is Severity.INFO


def test_after_a_replacement_the_group_s_replaced_node_is_the_before_and_the_fleet_the_bar() -> None:
    new = "i-0a1b2c3d4e5f60001"
    node_rows = [
        {
            "run_id": "before",
            "run_time": "2026-05-01T00:00:00Z",
            "instance_id": "i-0dead0000000000aa",
            "instance_group": "workers",
            "repair_action": "Replace",
        }
    ]
    report = _report("2026-05-02T00:00:00Z", [])
    slow = report.nodes[0].model_copy(update={"figures": {"gpu.sm_clock_under_load_mhz": 1500.0}})
    report = report.model_copy(update={"nodes": [slow, report.nodes[1]]})
    result = verdict(report, new, node_rows, [], "now", below_fleet_pct=5)
    assert result.severity is Severity.CONCERN
    assert result.summary.startswith("after the repair: still below the fleet (replaced i-0dead0000000000aa)")
    assert result.evidence["below_fleet"] == ["gpu.sm_clock_under_load_mhz 1500 vs fleet median 1980"]
