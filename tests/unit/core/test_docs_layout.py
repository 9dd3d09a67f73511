"""docs/ARCHITECTURE.md and README's Layout section name every package of the tree, and no other.

Why: a newcomer reads the package list before the code; a package added, renamed or removed
without its line makes the map wrong from that day on.
"""

from __future__ import annotations

import re
from pathlib import Path

import hyperpod_perf

PACKAGE_ROOT = Path(hyperpod_perf.__file__).parent
REPO_ROOT = PACKAGE_ROOT.parents[1]


def _packages() -> set[str]:
    return {p.parent.name for p in PACKAGE_ROOT.glob("*/__init__.py")}


def _architecture_table() -> set[str]:
    text = (REPO_ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    return set(re.findall(r"^\| `([a-z_]+)/` \|", text, flags=re.M))


def _readme_layout() -> set[str]:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    start = block.index("functions/hyperpod_perf/ ")
    end = block.index("functions/hyperpod_perf_dev/")
    return set(re.findall(r"^  ([a-z_]+)/ ", block[start:end], flags=re.M))


def test_the_tree_has_the_layer_packages():
    assert {"aws", "cli", "domain", "handlers", "pipeline", "service"} <= _packages()


def test_architecture_names_every_package_with_its_job():
    assert _architecture_table() == _packages()


def test_readme_layout_names_every_package():
    assert _readme_layout() == _packages()
