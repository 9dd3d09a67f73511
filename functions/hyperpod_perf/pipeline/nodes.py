"""CollectNode and RecordNodeFailure: one node's raw output to S3 first, then its evaluation.

Why raw first: nothing collected is ever lost to a parser or a later failure; a broken channel
keeps what arrived, and a failure becomes that node's collect.node finding."""

from __future__ import annotations

from typing import Any

from hyperpod_perf.aws.errors import Throttled
from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.cluster_models import ClusterNode
from hyperpod_perf.collect.runner import NodeFailure, NodeRunner, NodeTarget
from hyperpod_perf.collect.snapshot import RawSnapshot, parse_container
from hyperpod_perf.diagnose import (
    NodeEvaluation,
    evaluate_node,
    not_collected_summary,
    not_running_finding,
)
from hyperpod_perf.models import (
    Finding,
    Handoff,
    RunbookSection,
    Severity,
)
from hyperpod_perf.pipeline.layout import RunLayout
from hyperpod_perf.pipeline.targets import TargetItem
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds


def collect_node(
    target: TargetItem,
    run: RunLayout,
    *,
    runner: NodeRunner,
    store: ReportStore,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> dict[str, Any]:
    """Collect one node (raw output to S3 first), judge it, and store its evaluation."""
    node = target.cluster_node()
    if not node.running and target.status is not None:
        return _record_not_running(node, run, store=store)
    (outcome,) = runner.collect([NodeTarget(target.instance_id, target.group, target.hostname)])
    if isinstance(outcome, NodeFailure):
        if outcome.reason == "Throttled":
            raise Throttled(f"{target.instance_id}: {outcome.detail}", context="ssm:StartSession")
        if outcome.partial_text:
            return _record_partial(node, target, run, outcome, store=store, thresholds=thresholds)
        return record_failure(target, run, outcome.reason, outcome.detail, store=store)
    _, evaluation = _keep_and_evaluate(node, outcome.text, run, store=store, thresholds=thresholds)
    store.put_json(run.node_result(target.instance_id), evaluation.model_dump(mode="json"))
    concerns = sum(1 for f in evaluation.findings if f.severity is Severity.CONCERN)
    return {"node": target.instance_id, "status": "collected", "concerns": concerns}


def _keep_and_evaluate(
    node: ClusterNode, text: str, run: RunLayout, *, store: ReportStore, thresholds: Thresholds
) -> tuple[RawSnapshot, NodeEvaluation]:
    """The raw text to S3 first (nothing collected is lost to a parser), then the node judged."""
    raw_key = run.raw(node.instance_id)
    store.put_text(raw_key, text)
    snapshot = parse_container(text, f"{node.instance_id}.txt")
    return snapshot, evaluate_node(node, snapshot, thresholds, raw_key=raw_key)


def _record_not_running(node: ClusterNode, run: RunLayout, *, store: ReportStore) -> dict[str, Any]:
    finding = not_running_finding(node)
    evaluation = NodeEvaluation(
        node=node.instance_id,
        findings=[finding],
        summary=not_collected_summary(node, finding.summary, "not_collected"),
    )
    store.put_json(run.node_result(node.instance_id), evaluation.model_dump(mode="json"))
    return {"node": node.instance_id, "status": "not_collected", "reason": "NodeNotRunning"}


def _record_partial(
    node: ClusterNode,
    target: TargetItem,
    run: RunLayout,
    outcome: NodeFailure,
    *,
    store: ReportStore,
    thresholds: Thresholds,
) -> dict[str, Any]:
    """The channel broke mid-stream: keep every byte that arrived, judge the sections it holds,
    and say the node's collection is incomplete and why."""
    snapshot, evaluation = _keep_and_evaluate(
        node, outcome.partial_text or "", run, store=store, thresholds=thresholds
    )
    cut = [s.name for s in snapshot.sections.values() if not s.complete]
    kept = [  # the "cut off" note of the container is this finding's own subject: say it once
        f for f in evaluation.findings if not (f.check == "collect.node" and "cut off" in f.summary)
    ]
    incomplete = Finding(
        node=target.instance_id,
        check="collect.node",
        severity=Severity.CONCERN,
        section=RunbookSection.COLLECTION,
        summary=f"collection incomplete: {outcome.reason}: {outcome.detail}"[:500],
        evidence={
            "reason": outcome.reason,
            "detail": outcome.detail[:1000],
            "partial_bytes": len((outcome.partial_text or "").encode()),
            "sections_received": sorted(snapshot.sections),
            "cut_in_section": cut[0] if cut else None,
        },
        next_step="The sections that arrived were evaluated; re-run the diagnosis for the rest.",
        handoff=Handoff.SSM,
    )
    summary = evaluation.summary.model_copy(
        update={"collection": "failed", "collection_error": f"incomplete: {outcome.reason}"}
    )
    evaluation = evaluation.model_copy(update={"findings": [incomplete, *kept], "summary": summary})
    store.put_json(run.node_result(target.instance_id), evaluation.model_dump(mode="json"))
    return {"node": target.instance_id, "status": "partial", "reason": outcome.reason}


def record_failure(
    target: TargetItem, run: RunLayout, reason: str, detail: str, *, store: ReportStore
) -> dict[str, Any]:
    """A node that yielded nothing: a collect.node CONCERN with the reason, stored like any result."""
    finding = Finding(
        node=target.instance_id,
        check="collect.node",
        severity=Severity.CONCERN,
        section=RunbookSection.COLLECTION,
        summary=f"could not be collected: {reason}: {detail}"[:500],
        evidence={"reason": reason, "detail": detail[:1000]},
        next_step="Check the node's SSM agent (aws ssm describe-instance-information), then re-run.",
        handoff=Handoff.SSM,
    )
    node = target.cluster_node()
    evaluation = NodeEvaluation(
        node=target.instance_id,
        findings=[finding],
        summary=not_collected_summary(node, f"{reason}: {detail}"),
    )
    store.put_json(run.node_result(target.instance_id), evaluation.model_dump(mode="json"))
    return {"node": target.instance_id, "status": "failed", "reason": reason}


def load_evaluations(store: ReportStore, run: RunLayout) -> list[NodeEvaluation]:
    return [
        NodeEvaluation.model_validate(store.get_json(key))
        for key in store.list_keys(run.node_results_prefix)
        if key.endswith(".json")
    ]
