"""Stage 2b: judge one node's snapshot: its findings, comparable signals, mounts and fleet-table row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict

from hyperpod_perf.collect.snapshot import RawSnapshot
from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.domain.evaluation import NodeEvaluation
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.domain.mounts import Mount
from hyperpod_perf.domain.report import GpuFigure, NodeSummary
from hyperpod_perf.parse.efa import parse_efa_ports
from hyperpod_perf.parse.nvidia_smi import parse_gpu_query
from hyperpod_perf.parse.procfs import parse_mounts
from hyperpod_perf.rules.engine import evaluate_snapshot
from hyperpod_perf.rules.fleet_signals import NodeSignals, extract
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds
from hyperpod_perf.service.report import not_collected_summary


def node_mounts(snapshots: Mapping[str, RawSnapshot]) -> list[Mount]:
    mounts: list[Mount] = []
    for node_id, snapshot in snapshots.items():
        section = snapshot.sections.get("mounts")
        if section is None:
            continue
        try:
            parsed = parse_mounts(section.text)
        # bandit B112: the node evaluation reports an unreadable mounts section
        except Exception:  # nosec B112
            continue
        mounts.extend(Mount(m.device, m.mountpoint, m.fstype, node_id) for m in parsed)
    return mounts


def evaluate_node(
    node: ClusterNode,
    snapshot: RawSnapshot,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    raw_key: str | None = None,
) -> NodeEvaluation:
    """Node-level findings (named by instance id), fleet signals, mounts and the fleet-table row."""
    name = snapshot.node_name()
    findings = []
    for finding in evaluate_snapshot(snapshot, thresholds):
        if finding.node in (None, name) and finding.node != node.instance_id:
            finding = finding.model_copy(update={"node": node.instance_id})
        findings.append(finding)
    signals = extract(
        snapshot,
        node=node.instance_id,
        instance_type=node.instance_type,
        group=node.group,
        thresholds=thresholds,
    )
    mounts = [asdict(m) for m in node_mounts({node.instance_id: snapshot})]
    return NodeEvaluation(
        node=node.instance_id,
        findings=findings,
        signals=asdict(signals),
        mounts=mounts,
        summary=_node_summary(node, snapshot, signals, raw_key),
    )


def _node_summary(
    node: ClusterNode, snapshot: RawSnapshot, signals: NodeSignals, raw_key: str | None
) -> NodeSummary:
    gpus: list[GpuFigure] = []
    section = snapshot.sections.get("gpu-query")
    if section is not None and section.rc == 0:
        try:
            rows = parse_gpu_query(section.text).rows
        except ValueError:
            rows = []
        gpus = [
            GpuFigure(
                index=row.index if row.index is not None else i,
                temperature_c=row.temperature_c,
                sm_clock_mhz=row.sm_clock_mhz,
                max_sm_clock_mhz=row.max_sm_clock_mhz,
                serial=row.serial,
                uuid=row.uuid,
            )
            for i, row in enumerate(rows)
        ]
    meta = snapshot.meta
    return NodeSummary(
        node=node.instance_id,
        instance_id=node.instance_id,
        hostname=meta.get("hostname") or node.hostname,
        instance_group=node.group or meta.get("instance_group") or None,
        instance_type=node.instance_type or meta.get("instance_type") or None,
        availability_zone=node.az,
        ultraserver_id=node.ultraserver_id,
        network_nodes=list(node.network_nodes),
        efa_devices=_efa_devices(snapshot),
        gpus=gpus,
        figures=dict(signals.values),
        raw_key=raw_key,
    )


def _efa_devices(snapshot: RawSnapshot) -> list[str]:
    """The EFA devices the node listed (history keeps them per run); none when unreadable."""
    section = snapshot.sections.get("efa-ports")
    if section is None or section.rc != 0:
        return []
    try:
        return list(parse_efa_ports(section.text).devices)
    except ValueError:
        return []


def node_summaries(
    nodes: Sequence[ClusterNode], evaluations: Sequence[NodeEvaluation], collection: Sequence[Finding]
) -> list[NodeSummary]:
    """One fleet-table row per target node: its summary, or why it has none."""
    by_node = {e.node: e.summary for e in evaluations}
    problems = {f.node: f for f in collection if f.node and f.check == "collect.node"}
    rows = []
    for node in nodes:
        if node.instance_id in by_node:
            rows.append(by_node[node.instance_id])
            continue
        problem = problems.get(node.instance_id)
        failed = problem is not None and problem.severity is Severity.CONCERN
        reason = problem.summary if problem else "not collected"
        rows.append(not_collected_summary(node, reason, "failed" if failed else "not_collected"))
    return rows
