"""Stage 4: the cluster-level view: topology, fleet comparison, FSx saturation against I/O-bound
nodes, coverage advice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hyperpod_perf.domain.cluster import ClusterInfo, ClusterNode, FileSystemData
from hyperpod_perf.domain.evaluation import NodeEvaluation
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.rules import coverage, fleet, fsx, fsx_lustre, topology
from hyperpod_perf.rules.fleet_signals import NodeSignals
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

#: Node-level checks whose CONCERN means "this node waits on I/O" (the FSx headroom branch).
IO_BOUND_CHECKS = ("host.iowait", "host.io_pressure")


def _io_bound(node_findings: Sequence[Finding]) -> dict[str, dict[str, Any]]:
    bound: dict[str, dict[str, Any]] = {}
    for finding in node_findings:
        if finding.check in IO_BOUND_CHECKS and finding.severity is Severity.CONCERN and finding.node:
            bound.setdefault(finding.node, {})[finding.check] = finding.evidence
    return bound


def fleet_findings(
    nodes: Sequence[ClusterNode], signals: Sequence[NodeSignals], thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> list[Finding]:
    """The fleet comparison: one instance type per group, no version drift, no outlying node.

    One function for the pipeline's Evaluate step, `diagnose` and the offline `evaluate DIR`, so a
    drift found in the account is found in the snapshots alone as well."""
    findings = fleet.instance_types(nodes)
    if signals:
        findings.extend(fleet.version_drift(signals))
        findings.extend(fleet.outliers(signals, thresholds))
    return findings


def cluster_findings(
    cluster: ClusterInfo,
    nodes: Sequence[ClusterNode],
    evaluations: Sequence[NodeEvaluation],
    fs_data: FileSystemData,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> list[Finding]:
    """Topology, fleet comparison, FSx saturation vs I/O pattern, coverage advice."""
    signals = [NodeSignals(**e.signals) for e in evaluations if e.signals]
    findings: list[Finding] = [*topology.evaluate(nodes), *fleet_findings(nodes, signals, thresholds)]
    if fs_data.systems:
        io_bound = _io_bound([f for e in evaluations for f in e.findings])
        by_fs = {
            fs.file_system_id: {
                n: ev
                for n, ev in io_bound.items()
                if fs.file_system_id not in fs_data.nodes_by_fs or n in fs_data.nodes_by_fs[fs.file_system_id]
            }
            for fs in fs_data.systems
        }
        findings.extend(fsx.evaluate(fs_data.systems, fs_data.series, by_fs, thresholds))
        findings.extend(fsx_lustre.evaluate(fs_data.systems, fs_data.series, by_fs, thresholds))
    findings.extend(coverage.evaluate(cluster))
    return findings
