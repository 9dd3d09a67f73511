"""The node diagnosis engine: one snapshot in, findings out. Pure: no I/O, no boto3."""

from __future__ import annotations

from collections.abc import Callable

from hyperpod_perf.collect.snapshot import RawSnapshot, parse_container
from hyperpod_perf.domain.findings import Finding
from hyperpod_perf.rules import efa, filesystem, gpu, host
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

RuleFamily = Callable[[NodeContext], list[Finding]]

#: Node-level rule families, in report order (runbook: G, A, host, B).
NODE_RULE_FAMILIES: tuple[tuple[str, RuleFamily], ...] = (
    ("gpu", gpu.evaluate),
    ("efa", efa.evaluate),
    ("host", host.evaluate),
    ("filesystem", filesystem.evaluate),
)


def evaluate_snapshot(snapshot: RawSnapshot, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[Finding]:
    """Every node-level finding for one snapshot; damage becomes collect.node findings."""
    ctx = NodeContext(snapshot=snapshot, thresholds=thresholds)
    for problem in snapshot.problems:
        ctx.collection_problem("container", problem)
    for note in snapshot.notes:
        ctx.collection_note(note)
    if not snapshot.sections:
        return ctx.collection_findings
    findings: list[Finding] = []
    for family_name, family in NODE_RULE_FAMILIES:
        try:
            findings.extend(family(ctx))
        except Exception as exc:
            ctx.collection_problem(family_name, f"rule family failed ({type(exc).__name__}: {exc})")
    return ctx.collection_findings + findings


def evaluate_text(text: str, source: str, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[Finding]:
    return evaluate_snapshot(parse_container(text, source), thresholds)
