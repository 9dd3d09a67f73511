"""The check catalog holds every check the code can emit, each one hop from its rule."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
from pathlib import Path

import pytest

from hyperpod_perf.cli import main
from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.report.catalog_format import render_catalog
from hyperpod_perf.rules.catalog import CATALOG, UnknownCheckError, ensure_catalogued, lookup
from hyperpod_perf.rules.fleet_signals import SIGNALS
from hyperpod_perf.rules.thresholds import Thresholds

PACKAGE = Path(__file__).resolve().parents[3] / "functions" / "hyperpod_perf"
DOC = Path(__file__).resolve().parents[3] / "docs" / "CHECKS.md"
CHECK_ID = re.compile(
    r"^(gpu|efa|host|fs|nccl|topology|fleet|health|coverage|collect|history|metrics)\.[a-z][a-z0-9_]*$"
)


def _id_literals_in_product_code() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and CHECK_ID.match(node.value):
                found.setdefault(node.value, set()).add(str(path.relative_to(PACKAGE)))
    return found


def test_every_check_id_written_in_the_code_is_in_the_catalog() -> None:
    literals = _id_literals_in_product_code()
    assert literals, "the scan found no check ids at all"
    signal_names = {s.name for s in SIGNALS}  # fleet signals (`gpu.temperature_max_c`) are not checks
    missing = {
        cid: sorted(files)
        for cid, files in literals.items()
        if cid not in CATALOG and cid not in signal_names
    }
    assert missing == {}


@pytest.mark.parametrize("check", CATALOG.values(), ids=lambda c: c.id)
def test_each_rule_is_importable_and_its_module_names_the_id(check) -> None:
    module_name, function_name = check.rule.split(":")
    module = importlib.import_module(f"hyperpod_perf.{module_name}")
    rule = module
    for part in function_name.split("."):  # `Class.method` for a rule that is a method
        rule = getattr(rule, part)
    assert callable(rule)
    assert f'"{check.id}"' in inspect.getsource(module)


@pytest.mark.parametrize("check", CATALOG.values(), ids=lambda c: c.id)
def test_each_threshold_named_exists(check) -> None:
    assert set(check.thresholds) <= set(Thresholds.model_fields)


def test_ids_are_unique_and_well_formed() -> None:
    assert all(CHECK_ID.match(cid) for cid in CATALOG)
    assert lookup("gpu.xid").family == "gpu"


def test_a_finding_with_an_undeclared_id_is_refused() -> None:
    typo = Finding(check="gpu.temprature", severity=Severity.CONCERN, section=RunbookSection.GPU, summary="x")
    ok = Finding(check="gpu.temperature", severity=Severity.OK, section=RunbookSection.GPU, summary="x")
    ensure_catalogued([ok])  # declared: accepted
    with pytest.raises(UnknownCheckError, match=r"gpu\.temprature"):
        ensure_catalogued([ok, typo])


def test_json_lists_objects_with_id_section_handoff_and_rule(capsys) -> None:
    assert main(["checks", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == list(CATALOG)
    xid = next(r for r in rows if r["id"] == "gpu.xid")
    assert xid["section"] == "G"
    assert xid["handoff"] == "hyperpod-node-debugger § G"
    assert xid["rule"] == "hyperpod_perf.rules.gpu.kernel_log:check_xid"
    assert {"id", "section", "handoff", "rule", "meaning", "thresholds"} <= set(xid)


def test_docs_checks_md_is_generated_from_the_catalog() -> None:
    assert DOC.read_text(encoding="utf-8") == render_catalog("md"), (
        "docs/CHECKS.md is stale: run `hyperpod-perf checks --format md -o docs/CHECKS.md`"
    )


def test_every_section_letter_and_every_handoff_has_a_legend_line() -> None:
    from hyperpod_perf.domain.findings import HANDOFF_MEANINGS, SECTION_MEANINGS, Handoff

    assert set(SECTION_MEANINGS) == set(RunbookSection)
    assert set(HANDOFF_MEANINGS) == set(Handoff)
    assert all(len(text) > 30 for text in [*SECTION_MEANINGS.values(), *HANDOFF_MEANINGS.values()])


def test_checks_text_ends_with_the_legend_of_letters_and_handoffs(capsys) -> None:
    # When every check is listed
    assert main(["checks"]) == 0
    out = capsys.readouterr().out.splitlines()
    # Then after the list, each section letter and each hand-off on a line of its own
    legend = out[out.index("Sections:") :]
    assert "  X  collection: a node that could not be reached, or output that could not be read" in "\n".join(
        legend
    )
    handoffs = legend[legend.index("Hand-offs (→ who takes the concern next):") + 1 :]
    assert [line.split("  ")[1].strip() for line in handoffs] == [
        "hyperpod-node-debugger § A",
        "hyperpod-node-debugger § F",
        "hyperpod-node-debugger § G",
        "hyperpod-node-debugger § I",
        "hyperpod-cluster-debugger § A",
        "hyperpod-cluster-debugger § B",
        "hyperpod-nccl",
        "hyperpod-version-checker",
        "hyperpod-ssm",
    ]
    ssm = next(line for line in handoffs if "hyperpod-ssm" in line)
    assert "shell access to the node" in ssm


def test_checks_id_shows_that_one_check_with_its_section_and_handoff_spelled_out(capsys) -> None:
    assert main(["checks", "gpu.xid"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "gpu.xid"
    assert lines[1] == (
        "  meaning:    an NVIDIA Xid in the kernel log, with the catalog's action for its code and its age"
    )
    assert lines[2].startswith("  section:    G: GPU hardware: Xid, ECC")
    assert lines[3] == "  thresholds: event_stale_days (override with --thresholds FILE)"
    assert lines[4].startswith("  urgency:    act now when a CONCERN: an Xid whose catalogued action")
    assert lines[5] == "  rule:       hyperpod_perf.rules.gpu.kernel_log:check_xid"
    assert lines[6].startswith("  hand-off:   hyperpod-node-debugger § G: node debugger, § G GPU")
    # and as JSON, that check's object, its tier with it
    assert main(["checks", "gpu.xid", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert (row["rule"], row["tier"]) == ("hyperpod_perf.rules.gpu.kernel_log:check_xid", "act now")


def test_checks_family_lists_that_familys_checks_and_their_legend_only(capsys) -> None:
    assert main(["checks", "fleet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[: out.index("")]] == [
        "fleet.instance_types",
        "fleet.version_drift",
        "fleet.outlier",
    ]
    assert out[out.index("Sections:") + 1].startswith("  A  NCCL performance uneven")


@pytest.mark.parametrize(
    ("typed", "suggested"), [("gpu.xdi", "gpu.xid"), ("version_drift", "fleet.version_drift")]
)
def test_checks_unknown_id_exits_2_suggesting_the_closest_ids(capsys, typed, suggested) -> None:
    assert main(["checks", typed]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"hyperpod-perf: checks: no check '{typed}'; did you mean ")
    assert suggested in line
