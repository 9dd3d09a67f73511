"""Stage 2: collect each target node through the injected node runner."""

from __future__ import annotations

from collections.abc import Sequence

from hyperpod_perf.collect.runner import NodeFailure, NodeRunner, NodeTarget
from hyperpod_perf.collect.snapshot import RawSnapshot, oversized_file_problem, parse_container
from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.service.gaps import collect_finding


def not_running_finding(node: ClusterNode) -> Finding:
    """A node HyperPod does not report as Running is not collected (an SSM session would fail)."""
    return collect_finding(
        node.instance_id,
        Severity.INFO,
        f"not collected: node status is {node.status}",
        reason="NodeNotRunning",
        status=node.status,
        status_message=node.status_message,
    )


def _collect(
    nodes: Sequence[ClusterNode], runner: NodeRunner | None, findings: list[Finding]
) -> dict[str, RawSnapshot]:
    """Snapshots by instance id; every node not collected gets a collect.node finding."""
    if runner is None:
        for node in nodes:
            findings.append(
                collect_finding(
                    node.instance_id,
                    Severity.INFO,
                    "not collected: no node runner (pass --snapshots DIR or use the SSM session runner)",
                    reason="NoRunner",
                )
            )
        return {}
    running = []
    for node in nodes:
        if node.status is None or node.running:
            running.append(node)
        else:
            findings.append(not_running_finding(node))
    targets = [NodeTarget(n.instance_id, n.group, (n.hostname or "").split(".")[0] or None) for n in running]
    snapshots: dict[str, RawSnapshot] = {}
    for outcome in runner.collect(targets) if targets else []:
        node_id = outcome.node.instance_id
        if isinstance(outcome, NodeFailure):
            missing = outcome.reason == "SnapshotMissing"
            findings.append(
                collect_finding(
                    node_id,
                    Severity.INFO if missing else Severity.CONCERN,
                    f"not collected: {outcome.detail}"
                    if missing
                    else f"could not be reached: {outcome.detail}",
                    reason=outcome.reason,
                    attempts=outcome.attempts,
                )
            )
            continue
        snapshots[node_id] = parse_container(outcome.text, outcome.source)
        if outcome.truncated and not outcome.source.startswith("ssm-"):  # a saved file cut at the bound
            snapshots[node_id].problem(oversized_file_problem())
    return snapshots


def collect_nodes(
    nodes: Sequence[ClusterNode], runner: NodeRunner | None
) -> tuple[dict[str, RawSnapshot], list[Finding]]:
    findings: list[Finding] = []
    return _collect(nodes, runner, findings), findings
