"""The layers hold by construction: no import cycle between the project's packages, each package
reaches (directly or through another package) none of the layers above it, only aws/ imports the
AWS SDK, and the Lambda asset never imports the development package.

Read from the source (AST), not by importing: every `import` and `from ... import` counts,
including the ones inside functions (a lazy import still ties the two packages together).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import hyperpod_perf

PACKAGE_ROOT = Path(hyperpod_perf.__file__).parent

#: Package -> the packages it must not reach, even through another package. The layers from the
#: top: cli / handlers -> pipeline -> service -> report, nccl, joblogs -> rules -> parse -> collect
#: -> domain; aws/ is an adapter beside them that only domain/ sits under.
ENTRY = {"cli", "handlers"}
FORBIDDEN: dict[str, set[str]] = {
    "domain": {
        "aws",
        "collect",
        "history",
        "joblogs",
        "nccl",
        "parse",
        "pipeline",
        "report",
        "rules",
        "service",
        "straggler",
    }
    | ENTRY,
    "parse": {"aws", "service", "pipeline", "report", "nccl", "joblogs", "straggler"} | ENTRY,
    "rules": {"aws", "service", "pipeline", "report", "nccl", "joblogs", "straggler"} | ENTRY,
    "collect": {"aws", "service", "pipeline"} | ENTRY,
    "report": {"aws", "service", "pipeline"} | ENTRY,
    "nccl": {"aws", "service", "pipeline"} | ENTRY,
    "joblogs": {"aws", "service", "pipeline"} | ENTRY,
    "straggler": {"aws", "service", "pipeline", "joblogs", "report", "nccl"} | ENTRY,
    "history": {"aws", "service", "pipeline", "collect", "parse", "nccl", "joblogs"} | ENTRY,
    "service": {"aws", "pipeline"} | ENTRY,
    "aws": {"service", "pipeline", "collect", "rules", "parse", "report"} | ENTRY,
    "pipeline": ENTRY,
}
#: Third-party modules only the adapter layer may import.
AWS_SDK = ("boto3", "botocore")
#: The only module of the Lambda asset allowed to reach the development package (lazily, for `demo`).
DEV_PACKAGE_IMPORTERS = {"hyperpod_perf.cli.pipeline"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[str]:
    """Every module this file imports (from-imports of the project resolved to the module or name)."""
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


def _sources() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        yield _module_name(path), path


def import_graph() -> dict[str, set[str]]:
    """Package -> the project's other packages it imports."""
    graph: dict[str, set[str]] = {}
    for module, path in _sources():
        source = _package(module)
        if source is None:
            continue
        edges = graph.setdefault(source, set())
        for target in map(_package, _imports(path)):
            if target is not None and target != source:
                edges.add(target)
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every package `start` imports directly or through other packages (not itself)."""
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        package = todo.pop()
        if package not in seen:
            seen.add(package)
            todo.extend(graph.get(package, ()))
    return seen - {start}


def layer_violations(graph: dict[str, set[str]], forbidden: dict[str, set[str]]) -> dict[str, list[str]]:
    """Package -> the forbidden packages it reaches (only packages that break a rule)."""
    found = {package: sorted(reachable(graph, package) & banned) for package, banned in forbidden.items()}
    return {package: names for package, names in found.items() if names}


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


def _importers_of(roots: tuple[str, ...]) -> set[str]:
    """Modules of the package that import any module under `roots` (top-level names)."""
    return {
        module for module, path in _sources() if any(name.split(".")[0] in roots for name in _imports(path))
    }


# -- the checkers themselves, on small graphs --------------------------------------------------


def test_the_cycle_finder_finds_a_cycle_and_accepts_a_tree():
    # Given a graph with a three-package cycle and one without
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_a_forbidden_package_reached_through_another_is_a_violation():
    # Given rules -> collect -> aws (rules never names aws itself)
    graph = {"rules": {"collect"}, "collect": {"aws"}, "aws": {"domain"}, "domain": set()}
    # Then the rule "rules must not reach aws" is broken, and "domain must not reach aws" holds
    assert layer_violations(graph, {"rules": {"aws"}, "domain": {"aws"}}) == {"rules": ["aws"]}
    assert layer_violations(graph, {"domain": {"aws", "rules"}}) == {}


# -- the real tree ----------------------------------------------------------------------------


def test_the_graph_reads_the_real_tree():
    # Then the graph holds the packages and edges every reader knows
    graph = import_graph()
    assert {"aws", "cli", "domain", "parse", "rules", "service", "pipeline", "handlers"} <= set(graph)
    assert "service" in graph["cli"] and "domain" in graph["rules"] and "pipeline" in graph["handlers"]
    assert set(FORBIDDEN) <= set(graph)  # a rule about a package that is gone would hold vacuously


def test_every_module_lives_in_a_package():
    # Then the package root holds no module besides __init__.py (the layers are packages)
    assert sorted(p.name for p in PACKAGE_ROOT.glob("*.py")) == ["__init__.py"]


def test_no_import_cycle_between_packages():
    assert find_cycle(import_graph()) is None


def test_no_package_reaches_a_layer_above_it():
    # Then domain/ reaches no other package, parse/ and rules/ reach neither aws/ nor the service,
    # the service reaches no adapter (only domain's errors and its ports), aws/ reaches no caller
    assert layer_violations(import_graph(), FORBIDDEN) == {}


def test_only_the_aws_package_imports_the_aws_sdk():
    outside = sorted(m for m in _importers_of(AWS_SDK) if not m.startswith("hyperpod_perf.aws"))
    assert outside == []
    assert "hyperpod_perf.aws.clients" in _importers_of(AWS_SDK)  # the walk does see boto3


def test_only_the_demo_command_reaches_the_development_package():
    assert _importers_of(("hyperpod_perf_dev", "moto")) == DEV_PACKAGE_IMPORTERS
