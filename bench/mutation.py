"""Mutation testing of the rules and the NCCL analysis (`make mutation`), with mutmut 3.

Why a staging copy: mutmut 3 derives module names from the path it mutates and only puts `.`,
`src/` or `source/` of its `mutants/` copy on `sys.path`; this project keeps its package under
`functions/`. So the package is copied to `<build>/src/hyperpod_perf` next to a copy of the tests
and a `[tool.mutmut]` section naming the modules to mutate and the unit tests that guard them,
and mutmut runs there. Nothing in the working tree is changed.

Usage: python -m bench.mutation [module ...]   (default: every module of rules/ and nccl/analysis/)
       e.g. python -m bench.mutation rules/thresholds.py rules/host.py
       MUTATION_BUILD=<dir> (default build/mutation) and MUTATION_CHILDREN=<n> (default 2)
Prints the killed / survived / timeout / no-tests counts per module and the overall score
(killed + timeout) / (all mutants), and writes score.json in the build directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "functions" / "hyperpod_perf"
BUILD = Path(os.environ.get("MUTATION_BUILD", ROOT / "build" / "mutation")).resolve()
DEFAULT_MODULES = (
    *sorted(
        p.relative_to(PACKAGE).as_posix()
        for p in (PACKAGE / "rules").rglob("*.py")
        if p != PACKAGE / "rules" / "__init__.py"
    ),
    *sorted(p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / "nccl" / "analysis").glob("*.py")),
)
#: The unit tests that guard these modules (fast; no moto, no CLI subprocesses). The timing tests
#: (parsers within a second, 512 nodes within 2 s) are left out: mutmut's tracing slows them. So are
#: the two catalog tests that read the repository's own files by path (functions/, docs/CHECKS.md),
#: which the staging copy does not have: they fail before any mutant is run.
TESTS = ("tests/unit/rules", "tests/unit/nccl/test_nccl_analysis.py", "tests/unit/core/test_thresholds.py")
DESELECT = (
    "not 512 and not test_every_check_id_written_in_the_code_is_in_the_catalog"
    " and not test_docs_checks_md_is_generated_from_the_catalog"
)
#: Test helpers the rules tests import by module name (their directories go on the path).
HELPER_DIRS = ("tests/unit/rules", "tests/unit/nccl")


def stage(modules: list[str]) -> None:
    if BUILD.exists():
        shutil.rmtree(BUILD)
    (BUILD / "src").mkdir(parents=True)
    shutil.copytree(PACKAGE, BUILD / "src" / "hyperpod_perf", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", BUILD / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    only = ", ".join(f'"src/hyperpod_perf/{m}"' for m in modules)
    tests = ", ".join(f'"{t}"' for t in TESTS)
    (BUILD / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\n"
        'testpaths = ["tests"]\n'
        "[tool.mutmut]\n"
        'source_paths = ["src/hyperpod_perf"]\n'
        f"only_mutate = [{only}]\n"
        f"pytest_add_cli_args_test_selection = [{tests}]\n"
        f'pytest_add_cli_args = ["-p", "no:randomly", "-p", "no:cacheprovider", "-q", "-k", "{DESELECT}"]\n'
        "use_git_change_detection = false\n",
        encoding="utf-8",
    )


def run(max_children: int) -> int:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(str(BUILD / d) for d in HELPER_DIRS)
    mutmut = Path(sys.executable).with_name("mutmut")
    return subprocess.call([str(mutmut), "run", "--max-children", str(max_children)], cwd=BUILD, env=env)


def score() -> dict[str, object]:
    """Per-module outcome counts from mutmut's `.meta` files (exit code per mutant)."""
    by_module: dict[str, Counter[str]] = {}
    for meta in (BUILD / "mutants" / "src").rglob("*.meta"):
        data = json.loads(meta.read_text(encoding="utf-8"))
        module = str(meta.relative_to(BUILD / "mutants" / "src")).removesuffix(".meta")
        counts = by_module.setdefault(module, Counter())
        for exit_code in data.get("exit_code_by_key", {}).values():
            counts[_outcome(exit_code)] += 1
    total = Counter()
    for counts in by_module.values():
        total.update(counts)
    judged = sum(total.values())
    detected = total["killed"] + total["timeout"]
    return {
        "modules": {m: dict(c) for m, c in sorted(by_module.items())},
        "total": dict(total),
        "mutants": judged,
        "score_pct": round(100 * detected / judged, 1) if judged else None,
    }


def _outcome(exit_code: int | None) -> str:
    # mutmut 3: 1 = a test failed (killed), 0 = all passed (survived), 33 = no tests, 36/24/152 = timeout
    if exit_code is None:
        return "not_checked"
    if exit_code in (1, 3):
        return "killed"
    if exit_code == 0:
        return "survived"
    if exit_code == 33:
        return "no_tests"
    if exit_code in (24, 36, 152, -24):
        return "timeout"
    return "suspicious"


def main(argv: list[str]) -> int:
    modules = argv or list(DEFAULT_MODULES)
    stage(modules)
    code = run(max_children=int(os.environ.get("MUTATION_CHILDREN", "2")))
    result = {"modules_requested": modules, **score()}
    (BUILD / "score.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for module, counts in result["modules"].items():  # type: ignore[union-attr]
        print(f"{module}: {counts}")
    print(f"total: {result['total']} -> score {result['score_pct']} % of {result['mutants']} mutants")
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
