"""The real-world corpus, judged by the project's own engine (see corpus_runner.py).

Every case must come out as its source says. The cases listed in pending_fixes.toml are known
misses (a gap of issue 14 being fixed, or a finding reported to the lead): they must still
miss — strictly — so that the entry is removed the day its fix lands, and never silently kept.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_report import CORPUS_DOC, render_static, split_doc
from corpus_runner import (
    CASES_DIR,
    EXPECTATIONS,
    NCCL_SECTION,
    Case,
    load_cases,
    load_pending,
    run_all,
    run_case,
    score,
)

from hyperpod_perf.collect.snapshot import parse_container

CASES = load_cases()
BY_ID = {case.id: case for case in CASES}
PENDING = load_pending()


@pytest.mark.parametrize("case", [c for c in CASES if c.id not in PENDING], ids=lambda c: c.id)
def test_case_is_diagnosed_as_its_source_says(case: Case) -> None:
    # Given a real output and the diagnosis its source implies
    # When the engine judges it as a node snapshot (or nccl analyze reads the log)
    result = run_case(case, BY_ID)
    # Then every expected check comes out as expected, and nothing failed to parse
    assert result.right, result.explain()


@pytest.mark.parametrize("case_id", sorted(PENDING), ids=str)
def test_pending_case_still_misses(case_id: str) -> None:
    # Given a case listed as pending a fix
    assert case_id in BY_ID, f"pending_fixes.toml names {case_id}, which is not a case"
    # When it is judged today
    result = run_case(BY_ID[case_id], BY_ID)
    # Then it still misses; once it comes out right, drop it from pending_fixes.toml
    assert not result.right, f"{case_id} is now right ({PENDING[case_id]}): remove it from pending_fixes.toml"


def test_corpus_is_big_enough_and_every_case_has_its_output() -> None:
    # Given the corpus
    # Then it holds at least 80 real outputs, each file present and non-empty
    assert len(CASES) >= 80
    for case in CASES:
        assert case.path.is_file(), f"{case.id}: {case.path} missing"
        assert case.raw().strip(), f"{case.id}: empty output"
    # And every file under cases/ belongs to a case (no orphan output without a source)
    listed = {c.path.resolve() for c in CASES}
    orphans = [p for p in CASES_DIR.rglob("*.txt") if p.resolve() not in listed]
    assert not orphans, f"outputs without a case entry: {orphans}"


def test_every_case_names_its_source_and_expectation() -> None:
    for case in CASES:
        assert case.source.strip() and case.context.strip() and case.cut.strip(), case.id
        assert case.expected and set(case.expected.values()) <= EXPECTATIONS, case.id
        for other in case.with_logs:
            assert other in BY_ID and BY_ID[other].section == NCCL_SECTION, case.id


def test_wrapped_snapshot_is_what_the_collector_prints() -> None:
    # Given a node-section case wrapped for the engine
    from corpus_runner import snapshot_text

    case = next(c for c in CASES if c.section == "xid")
    snapshot = parse_container(snapshot_text(case), "corpus")
    # Then the container parses without problems into the meta section and the case's section
    assert snapshot.problems == []
    assert list(snapshot.sections) == ["meta", "xid"]
    assert snapshot.sections["xid"].text.rstrip("\n") == case.raw().rstrip("\n")
    assert snapshot.sections["xid"].rc == case.rc


def test_pending_entries_name_their_gap() -> None:
    for case_id, gap in PENDING.items():
        assert gap.strip(), case_id


def test_committed_table_is_in_step_with_the_cases() -> None:
    # Given docs/CORPUS.md as committed
    static, results = split_doc(Path(CORPUS_DOC).read_text(encoding="utf-8"))
    # Then its coverage and case list are what the cases give today (`make corpus` regenerates)
    assert static == render_static(CASES, PENDING), "docs/CORPUS.md is stale: run `make corpus`"
    # And its results part lists every case once
    for case in CASES:
        assert results.count(f"| `{case.id}` |") == 1, f"{case.id} missing from the results table"


def test_score_counts_false_concerns_on_healthy_outputs_only() -> None:
    # Given the corpus results
    results = run_all(CASES)
    measured = score(results)
    # Then the score adds up: every case is counted once, and false concerns only on healthy ones
    assert measured.total == len(CASES)
    assert measured.right == sum(r.right for r in results)
    assert measured.false_concerns <= measured.healthy
    assert measured.right == len(CASES) - len(PENDING)
    assert measured.trivial == sum(r.right and all(o.got == "absent" for o in r.outcomes) for r in results)
    assert measured.trivial <= measured.right
