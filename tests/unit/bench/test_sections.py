"""`make bench` keeps every section: it re-measures only the sections whose inputs changed, and
RESULTS.md is rendered from all the kept records, measured now or earlier, by make bench or by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import __main__ as bench_main
from bench import sections
from bench.common import BenchResult, Figure
from bench.results_md import render_results
from bench.sections import Context, Section


@pytest.fixture()
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root with two files a section depends on."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "bench_toy.py").write_text("def run(progress): ...\n")
    (tmp_path / "functions" / "hyperpod_perf" / "rules").mkdir(parents=True)
    (tmp_path / "functions" / "hyperpod_perf" / "rules" / "host.py").write_text("LIMIT = 1\n")
    monkeypatch.setattr(sections, "project_root", lambda: tmp_path)
    return tmp_path


def toy_section(**changes) -> Section:
    def run(context: Context) -> BenchResult:
        result = BenchResult("toy", "Toy section")
        result.figures.append(Figure("toy time", "s", [1.0, 1.2, 1.1], limit=2.0, source="issue 0"))
        return result

    fields = {
        "name": "toy",
        "kind": "measured",
        "kind_text": "measured on this machine",
        "inputs": ("bench/bench_toy.py", "functions/hyperpod_perf/rules/*.py"),
        "run": run,
        **changes,
    }
    return Section(**fields)


def test_the_inputs_hash_follows_the_files_a_section_depends_on(tree: Path, monkeypatch):
    section = toy_section()
    monkeypatch.setitem(sections.BY_NAME, "toy", section)
    before = sections.inputs_hash(section)
    assert sections.inputs_hash(section) == before  # stable
    (tree / "functions" / "hyperpod_perf" / "rules" / "host.py").write_text("LIMIT = 2\n")
    changed = sections.inputs_hash(section)
    assert changed != before
    (tree / "functions" / "hyperpod_perf" / "rules" / "new.py").write_text("")
    assert sections.inputs_hash(section) not in (before, changed)  # a new file counts
    (tree / "README.md").write_text("not an input")
    assert sections.inputs_hash(section) == sections.inputs_hash(section)


def test_a_section_is_re_measured_only_when_its_inputs_changed(tree: Path, monkeypatch):
    section = toy_section()
    monkeypatch.setitem(sections.BY_NAME, "toy", section)
    record = {"name": "toy", "commit": "a" * 40, "inputs_hash": sections.inputs_hash(section)}
    assert bench_main.rerun_reason(section, record, [], False) == ""
    assert bench_main.rerun_reason(section, None, [], False) == "no record yet"
    assert "predates" in bench_main.rerun_reason(section, {**record, "inputs_hash": None}, [], False)
    (tree / "bench" / "bench_toy.py").write_text("def run(progress): return 2\n")
    assert "changed since it was measured at aaaaaaaaaaaa" in bench_main.rerun_reason(
        section, record, [], False
    )
    assert bench_main.rerun_reason(section, record, ["toy"], False) == "asked for (--only)"
    assert bench_main.rerun_reason(section, record, ["other"], False) == ""  # --only names others
    assert bench_main.rerun_reason(section, record, [], True) == "asked for (--force)"


def test_a_measured_record_carries_its_provenance_kind_and_load(tree: Path, monkeypatch):
    section = toy_section()
    monkeypatch.setitem(sections.BY_NAME, "toy", section)
    host = {"date_utc": "2026-12-02 12:00 UTC", "cpu": "AMD EPYC", "cores": 2, "python": "3.11.7"}
    record = bench_main.measure(section, Context(print, {}), "b" * 40, host)
    assert record["commit"] == "b" * 40 and record["date_utc"] == host["date_utc"]
    assert record["inputs_hash"] == sections.inputs_hash(section)
    assert record["kind"] == "measured" and record["how"] == "make bench"
    (figure,) = record["figures"]
    assert figure["kind"] == "measured" and figure["median"] == pytest.approx(1.1)
    assert "load_average_1m" in figure and set(record["load_average_1m"]) == {"min", "max"}


def test_results_md_renders_every_kept_section_with_what_each_figure_is(tree: Path, monkeypatch):
    # Given a record measured by make bench earlier and one measured by hand
    fresh = toy_section()
    by_hand = toy_section(name="toyhand", in_make_bench=False, how="by hand: `python bench/bench_toy.py`")
    monkeypatch.setitem(sections.BY_NAME, "toy", fresh)
    monkeypatch.setitem(sections.BY_NAME, "toyhand", by_hand)
    host = {"date_utc": "2026-12-02 12:00 UTC", "cpu": "AMD EPYC", "cores": 2, "python": "3.11.7"}
    kept = bench_main.measure(fresh, Context(print, {}), "c" * 40, host)
    manual = {
        **bench_main.measure(by_hand, Context(print, {}), "d" * 40, host),
        "name": "toyhand",
        "title": "Toy by hand",
        "inputs_hash": None,
        "how": by_hand.how,
    }
    document = {
        "machine": {
            **host,
            "memory_gib": 23.5,
            "os": "Linux",
            "arch": "x86_64",
            "load_average_1m": 1.0,
            "load_average_1m_end": 1.2,
        },
        "commit": "e" * 40,
        "total_seconds": 0,
        "budget_seconds": 600,
        "command": "python -m bench",
        "benchmarks": [kept, manual],
    }
    # When RESULTS.md is rendered from them (nothing re-run)
    text = render_results(json.loads(json.dumps(document)))
    # Then both sections are there in full, each figure with its kind and load average, and the
    # hand-measured one says how to measure it again since its inputs are not known to be current
    assert "## Toy section" in text and "## Toy by hand" in text
    assert (
        "| toy time | 1.10 s | 1.00 s – 1.20 s (3 runs) | < 2.00 s (issue 0) | 0.55× limit, met | measured |"
        in text
    )
    assert "by hand: `python bench/bench_toy.py`" in text
    assert "**changed since**: re-measure with by hand: `python bench/bench_toy.py`" in text
    assert "`cccccccccccc`" in text and "unchanged since" in text
    assert "## Mutation testing" in text


def test_every_section_names_inputs_that_exist_and_a_kind():
    for section in sections.SECTIONS:
        assert section.kind in sections.KINDS, section.name
        assert sections.input_files(section), f"{section.name}: no input file matches"
        for need in section.needs:
            assert need in sections.BY_NAME and [s.name for s in sections.SECTIONS].index(need) < [
                s.name for s in sections.SECTIONS
            ].index(section.name)


def test_the_kept_record_holds_every_section_including_the_job_log_measurement():
    record = json.loads((Path(__file__).parents[3] / "bench" / "results.json").read_text())
    names = [b["name"] for b in record["benchmarks"]]
    assert names == [s.name for s in sections.SECTIONS if s.name in names]  # every record a section, in order
    assert {"pipeline", "cost", "engine", "joblogs", "coldstart"} <= set(names)
    joblogs = next(b for b in record["benchmarks"] if b["name"] == "joblogs")
    assert joblogs["how"].startswith("by hand") or joblogs["how"] == "make bench"
    # the worst case and the realistic mix (named as bench_joblogs.run names them, or as the hand
    # record of issue 17 did)
    names = [f["name"] for f in joblogs["figures"]]
    assert any(n.startswith("worst case") or " worst:" in n for n in names)
    assert any(n.startswith("realistic mix") or " mix:" in n for n in names)
