"""bench/mutation.json keeps every module's latest measurement; MUTATION.md is rendered from it."""

from __future__ import annotations

from pathlib import Path

from bench import mutation_report
from bench.mutation import TARGET_PCT

RUN_1 = {"commit": "a" * 40, "date_utc": "2026-12-01 10:00", "load_average_1m_end": 3.0}
RUN_2 = {"commit": "b" * 40, "date_utc": "2026-12-02 10:00", "load_average_1m_end": 1.0}


def test_a_partial_run_replaces_only_the_modules_it_measured():
    # Given a record of two modules measured at commit a
    record = mutation_report.merge(
        {"modules": {}},
        {
            "hyperpod_perf/rules/host.py": {"killed": 90, "survived": 10},
            "hyperpod_perf/rules/efa.py": {"killed": 60, "survived": 40},
        },
        RUN_1,
    )
    # When efa alone is re-measured at commit b
    efa_again = {"hyperpod_perf/rules/efa.py": {"killed": 95, "survived": 5}}
    record = mutation_report.merge(record, efa_again, RUN_2)
    # Then host keeps commit a's figures and efa has commit b's
    assert record["modules"]["rules/host.py"]["killed"] == 90
    assert record["modules"]["rules/host.py"]["commit"] == "a" * 40
    assert record["modules"]["rules/efa.py"]["killed"] == 95
    assert record["modules"]["rules/efa.py"]["survived"] == 5
    assert record["modules"]["rules/efa.py"]["commit"] == "b" * 40
    assert list(record["modules"]) == ["rules/efa.py", "rules/host.py"]


def test_the_score_counts_timeouts_as_detected_and_untested_mutants_as_missed():
    counts = {"killed": 85, "timeout": 5, "survived": 6, "no_tests": 4}
    assert mutation_report.mutants(counts) == 100
    assert mutation_report.detected(counts) == 90
    assert mutation_report.score_pct(counts) == 90.0
    assert mutation_report.score_pct({}) is None


def test_the_table_totals_every_module_and_says_whether_the_target_is_met():
    # Given 180 of 200 mutants detected over two modules
    record = mutation_report.merge(
        {"modules": {}, "notes": ["equivalent: an unused argument"]},
        {
            "hyperpod_perf/rules/host.py": {"killed": 95, "survived": 5},
            "hyperpod_perf/rules/efa.py": {"killed": 84, "timeout": 1, "survived": 10, "no_tests": 5},
        },
        RUN_1,
    )
    text = mutation_report.render(record, target_pct=90.0)
    # Then each row and the total carry their counts, and 90.0 % meets a 90 % target
    assert "| rules/efa.py | 100 | 84 | 1 | 10 | 5 | 85.0 % | `aaaaaaaaaaaa` | 2026-12-01 10:00 |" in text
    assert "| rules/host.py | 100 | 95 | 0 | 5 | 0 | 95.0 % |" in text
    assert "| **total** | **200** | **179** | **1** | **15** | **5** | **90.0 %** |" in text
    assert "**Overall: 90.0 % of 200 mutants** (target ≥ 90 %: met)." in text
    assert "- equivalent: an unused argument" in text
    assert "not met" in mutation_report.render(record, target_pct=95.0)


def test_readme_and_mutation_md_quote_the_recorded_score():
    # Given the committed record of the last mutation runs
    root = Path(__file__).resolve().parents[3]
    record = mutation_report.load(root / "bench" / "mutation.json")
    total = mutation_report.totals(record)
    quoted = f"{mutation_report.score_pct(total):.1f} % of {mutation_report.mutants(total):,} mutants"
    # Then README quotes that figure, and MUTATION.md is the rendering of that record
    assert f"**{quoted}**" in (root / "README.md").read_text(encoding="utf-8")
    rendered = mutation_report.render(record, target_pct=TARGET_PCT)
    assert (root / "bench" / "MUTATION.md").read_text(encoding="utf-8") == rendered
