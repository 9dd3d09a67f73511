"""CollectNode and RecordNodeFailure: a batch of nodes; each node's raw output to S3 first, then
its evaluation.

Why raw first: nothing collected is ever lost to a parser or a later failure; a broken channel
keeps what arrived, and a failure becomes that node's collect.node finding.

Why per node inside a batch: one CollectNode invocation collects a whole batch (one token bucket
for its sessions, see pipeline/pacing.py), so every node's outcome is written by the handler
itself, node by node. Only what a retry may fix is handed back to the state machine: nodes whose
StartSession stayed throttled, whose result could not be stored, or that were never started
before the invocation's deadline. Their batch then fails with a retryable error; the retry
collects only the nodes that still have no result, and if the retries run out, RecordNodeFailure
writes a collect.node finding for each of those nodes and no other."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.collect.runner import NOT_STARTED, NodeCollection, NodeFailure, NodeRunner, NodeTarget
from hyperpod_perf.collect.snapshot import RawSnapshot, parse_container
from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.domain.errors import AwsAdapterError, Throttled, TransientError
from hyperpod_perf.domain.evaluation import NodeEvaluation
from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.domain.targets import TargetBatch, TargetItem
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds
from hyperpod_perf.service.collect import not_running_finding
from hyperpod_perf.service.evaluate import evaluate_node, not_collected_summary

log = logging.getLogger(__name__)


def collect_batch(
    batch: TargetBatch,
    run: RunLayout,
    *,
    runner: NodeRunner,
    store: ReportStore,
    retry: bool = False,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> dict[str, Any]:
    """Collect a batch's nodes (their sessions concurrently, paced by the runner), record each
    node's outcome, and raise a retryable error naming the nodes a retry may still get.

    On a retry (`retry`), nodes that already have a result are skipped, never collected twice.
    Returns counts only: the Map collects every batch's output, so it stays a few bytes."""
    targets = _without_result(batch.targets, run, store) if retry else list(batch.targets)
    statuses: list[str] = []
    not_running = [t for t in targets if t.status is not None and not t.cluster_node().running]
    for target in not_running:
        statuses.append(_record_not_running(target.cluster_node(), run, store=store)["status"])
    to_collect = [t for t in targets if t not in not_running]
    pending: dict[str, list[str]] = {}  # retryable reason -> nodes
    lock = threading.Lock()

    def collect_and_record(target: TargetItem) -> None:
        """One node, recorded as soon as its session ends (only the sessions in flight are held
        in memory, and evaluating overlaps the other sessions); the runner's bucket paces all."""
        (outcome,) = runner.collect([NodeTarget(target.instance_id, target.group, target.hostname)])
        status, reason = _record_or_leave(target, run, outcome, store=store, thresholds=thresholds)
        with lock:
            if reason is None:
                statuses.append(status)
            else:
                pending.setdefault(reason, []).append(target.instance_id)

    width = max(1, min(len(to_collect), getattr(runner, "concurrency", 1)))
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix="hpd-batch") as pool:
        list(pool.map(collect_and_record, to_collect))
    if pending:
        left = sum(len(nodes) for nodes in pending.values())
        detail = "; ".join(f"{reason}: {', '.join(nodes[:5])}" for reason, nodes in pending.items())
        message = f"batch {batch.index}: {left} of {len(batch.targets)} nodes left for a retry ({detail})"
        if set(pending) == {"Throttled"}:
            raise Throttled(message, context="ssm:StartSession")
        raise TransientError(message)
    return _counts(statuses, skipped=len(batch.targets) - len(targets))


def _record_or_leave(
    target: TargetItem, run: RunLayout, outcome: NodeCollection, *, store: ReportStore, thresholds: Thresholds
) -> tuple[str, str | None]:
    """(status, None) once the node's outcome is stored, or ("", reason) to leave it for a retry."""
    reason = _retryable(outcome)
    if reason is not None:
        return "", reason
    try:
        return _record_outcome(target, run, outcome, store=store, thresholds=thresholds), None
    except AwsAdapterError as exc:
        if not getattr(exc, "retryable", False):
            raise
        log.warning("%s: result not stored (%s); left for a retry", target.instance_id, exc)
        return "", type(exc).__name__
    except Exception as exc:  # one node's bad output must not cost the batch its other nodes
        log.exception("%s: outcome could not be evaluated", target.instance_id)
        return record_failure(target, run, type(exc).__name__, str(exc), store=store)["status"], None


def _retryable(outcome: NodeCollection) -> str | None:
    """The reason a retry of the batch may still collect this node, or None if its outcome is final."""
    if isinstance(outcome, NodeFailure) and outcome.reason in ("Throttled", NOT_STARTED):
        return outcome.reason
    return None


def _record_outcome(
    target: TargetItem, run: RunLayout, outcome: NodeCollection, *, store: ReportStore, thresholds: Thresholds
) -> str:
    """One node's outcome stored as its evaluation; returns its status."""
    node = target.cluster_node()
    if isinstance(outcome, NodeFailure):
        if outcome.partial_text:
            return _record_partial(node, target, run, outcome, store=store, thresholds=thresholds)["status"]
        return record_failure(target, run, outcome.reason, outcome.detail, store=store)["status"]
    _, evaluation = _keep_and_evaluate(node, outcome.text, run, store=store, thresholds=thresholds)
    store.put_json(run.node_result(target.instance_id), evaluation.model_dump(mode="json"))
    return "collected"


def _counts(statuses: list[str], *, skipped: int = 0) -> dict[str, int]:
    """What a batch's task returns: counts (the nodes' outcomes are in S3, one file each)."""
    collected = statuses.count("collected")
    return {"collected": collected, "failed": len(statuses) - collected, "skipped": skipped}


def _without_result(targets: list[TargetItem], run: RunLayout, store: ReportStore) -> list[TargetItem]:
    """The targets that have no stored outcome yet (one listing of the run's node results)."""
    done = set(store.list_keys(run.node_results_prefix))
    return [t for t in targets if run.node_result(t.instance_id) not in done]


def record_batch_failure(
    batch: TargetBatch, run: RunLayout, reason: str, detail: str, *, store: ReportStore
) -> dict[str, int]:
    """The batch failed for good: every node of it without a stored outcome gets its collect.node
    finding; nodes the batch did record keep theirs."""
    statuses = [
        record_failure(target, run, reason, detail, store=store)["status"]
        for target in _without_result(batch.targets, run, store)
    ]
    return _counts(statuses, skipped=len(batch.targets) - len(statuses))


def _keep_and_evaluate(
    node: ClusterNode, text: str, run: RunLayout, *, store: ReportStore, thresholds: Thresholds
) -> tuple[RawSnapshot, NodeEvaluation]:
    """The raw text to S3 first (nothing collected is lost to a parser), then the node judged."""
    raw_key = run.raw(node.instance_id)
    store.put_text(raw_key, text)
    snapshot = parse_container(text, f"{node.instance_id}.txt")
    evaluation = evaluate_node(node, snapshot, thresholds, raw_key=raw_key)
    return snapshot, _with_slurm_topology(evaluation, snapshot, run, store)


def _with_slurm_topology(
    evaluation: NodeEvaluation, snapshot: RawSnapshot, run: RunLayout, store: ReportStore
) -> NodeEvaluation:
    from hyperpod_perf.pipeline.topology import keep_slurm_topology

    try:
        key = keep_slurm_topology(snapshot, run, store)
    except AwsAdapterError:  # the layers are a help for the pair analysis, never the node's outcome
        log.warning("%s: Slurm topology not kept", evaluation.node, exc_info=True)
        return evaluation
    return evaluation.model_copy(update={"slurm_topology_key": key}) if key else evaluation


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
