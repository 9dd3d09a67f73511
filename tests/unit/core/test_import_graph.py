"""The layers hold by construction: no import cycle between the project's packages, the pure
layers (parse/, rules/, domain/) reach no AWS adapter, and the adapters reach no service or
pipeline code.

Read from the source (AST), not by importing: every `import` and `from ... import` counts,
including the ones inside functions (a lazy import still ties the two packages together).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import hyperpod_perf

PACKAGE_ROOT = Path(hyperpod_perf.__file__).parent

#: Packages that must import nothing from aws/ (they are pure: no I/O, no boto3).
PURE = ("parse", "rules", "domain")
#: What aws/ must not import: the adapters sit below the service and the pipeline.
ABOVE_AWS = ("service", "pipeline")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[str]:
    """Every hyperpod_perf module this file imports (from-imports resolved to the module or name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "hyperpod_perf":
                yield from (f"hyperpod_perf.{alias.name}" for alias in node.names)
            else:
                yield node.module


def _package(module: str) -> str | None:
    """`hyperpod_perf.rules.fleet` -> `rules`; a root module is its own package; others None."""
    parts = module.split(".")
    if parts[0] != "hyperpod_perf" or len(parts) < 2:
        return None
    name = parts[1]
    is_module = (PACKAGE_ROOT / name).is_dir() or (PACKAGE_ROOT / f"{name}.py").is_file()
    return name if is_module else None  # `from hyperpod_perf import __version__` is no package


def import_graph() -> dict[str, set[str]]:
    """Package -> the project's other packages it imports."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        source = _package(_module_name(path))
        if source is None:
            continue
        edges = graph.setdefault(source, set())
        for target in map(_package, _imports(path)):
            if target is not None and target != source:
                edges.add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path `[a, b, ..., a]`, or None (depth-first search, three colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if state.get(nxt) is None and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if state.get(node) is None and (cycle := visit(node)):
            return cycle
    return None


def test_the_cycle_finder_finds_a_cycle_and_accepts_a_tree():
    # Given a graph with a three-package cycle and one without
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_reads_the_real_tree():
    # Then the graph holds the packages and an edge every reader knows (the CLI uses the service)
    graph = import_graph()
    assert {"aws", "cli", "domain", "parse", "rules", "service", "pipeline"} <= set(graph)
    assert "service" in graph["cli"] and "domain" in graph["rules"]


def test_no_import_cycle_between_packages():
    assert find_cycle(import_graph()) is None


def test_pure_layers_import_no_aws_adapter():
    graph = import_graph()
    offenders = {pkg: sorted(graph[pkg] & {"aws"}) for pkg in PURE if "aws" in graph.get(pkg, set())}
    assert offenders == {}


def test_aws_adapters_import_no_service_or_pipeline():
    assert sorted(import_graph()["aws"] & set(ABOVE_AWS)) == []
