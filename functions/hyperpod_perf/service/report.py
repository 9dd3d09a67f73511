"""Stage 5: the report: file-system series, the 'not checked' list, the verdict."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hyperpod_perf.domain.cluster import (
    ClusterInfo,
    ClusterNode,
    FileSystemData,
    FileSystemInfo,
    FileSystemType,
)
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.domain.report import (
    ClusterSummary,
    FileSystemSummary,
    MetricPoint,
    NodeSummary,
    NotChecked,
    Report,
    RunInfo,
)
from hyperpod_perf.rules import fsx, fsx_lustre


def file_system_summaries(fs_data: FileSystemData) -> list[FileSystemSummary]:
    """The series the report draws: Lustre MB/s against provisioned; OpenZFS IOPS utilisation."""
    summaries = []
    for fs in fs_data.systems:
        throughput = (
            [
                MetricPoint(timestamp=moment.isoformat(), value=round(mbps, 3))
                for moment, mbps, _pct in fsx.lustre_utilization(fs, fs_data.series)
            ]
            if fs.type == FileSystemType.LUSTRE
            else []
        )
        iops = next(
            (
                s
                for s in fs_data.series
                if s.file_system_id == fs.file_system_id
                and s.metric == "FileServerDiskIopsUtilization"
                and s.stat == "Average"
            ),
            None,
        )
        summaries.append(
            FileSystemSummary(
                file_system_id=fs.file_system_id,
                type=str(fs.type),
                provisioned_mbps=fs.provisioned_throughput_mbps,
                storage_capacity_gib=fs.storage_capacity_gib,
                throughput_mbps=throughput,
                iops_utilization_pct=[
                    MetricPoint(timestamp=t.isoformat(), value=v)
                    for t, v in zip(iops.timestamps, iops.values, strict=True)
                ]
                if iops
                else [],
                mount_names=[fs.lustre_mount_name] if fs.lustre_mount_name else [],
                **(_lustre_figures(fs, fs_data) if fs.type == FileSystemType.LUSTRE else {}),
            )
        )
    return summaries


def _lustre_figures(fs: FileSystemInfo, fs_data: FileSystemData) -> dict[str, Any]:
    """What fs.metadata, fs.ost_hot and fs.ost_full judge, for the report's figure."""

    def points(rows: Sequence[tuple[Any, float]]) -> list[MetricPoint]:
        return [MetricPoint(timestamp=t.isoformat(), value=round(v, 3)) for t, v in rows]

    fullest = [f.evidence.get("fullest_ost_used_pct") for f in fsx_lustre.ost_full(fs, fs_data.series)]
    return {
        "metadata_ops_per_s": points(fsx_lustre.metadata_rates(fs, fs_data.series)),
        "metadata_ops_ceiling": fsx_lustre.metadata_ceiling(fs),
        "hottest_ost_pct": points(fsx_lustre.hottest_ost_share(fs, fs_data.series)),
        "ost_count": fsx_lustre.ost_count(fs, fs_data.series),
        "fullest_ost_used_pct": next((v for v in fullest if v is not None), None),
    }


def not_collected_summary(node: ClusterNode, reason: str, collection: str = "failed") -> NodeSummary:
    """The fleet-table row of a node that left no evaluation: its placement and why."""
    return NodeSummary(
        node=node.instance_id,
        instance_id=node.instance_id,
        hostname=node.hostname,
        instance_group=node.group or None,
        instance_type=node.instance_type,
        availability_zone=node.az,
        ultraserver_id=node.ultraserver_id,
        network_nodes=list(node.network_nodes),
        collection=collection,
        collection_error=reason[:300],
    )


def not_checked_of(findings: Sequence[Finding]) -> list[NotChecked]:
    """The report's 'not checked' list: checks that could not run, and every node (or section of
    a node) whose collection failed, each with why."""
    rows = []
    for f in findings:
        if f.check == "collect.node" and f.node:
            section = f.evidence.get("section")
            rows.append(
                NotChecked(what=f"node {f.node}" + (f" section {section}" if section else ""), why=f.summary)
            )
        elif (f.severity is Severity.INFO and "not checked" in f.summary) or f.evidence.get(
            "reason"
        ) in _GAP_REASONS:
            rows.append(NotChecked(what=f"{f.check}" + (f" on {f.node}" if f.node else ""), why=f.summary))
    return rows


_GAP_REASONS = frozenset({"NoRunner", "NodeNotRunning", "SnapshotMissing"})


def build_report(
    cluster: ClusterInfo,
    findings: Sequence[Finding],
    summaries: Sequence[NodeSummary],
    fs_data: FileSystemData,
    run: RunInfo,
    nccl: dict[str, Any] | None = None,
    metrics: dict[str, Any] | None = None,
) -> Report:
    from hyperpod_perf.report.verdict import compute_verdict
    from hyperpod_perf.rules.catalog import ensure_catalogued
    from hyperpod_perf.rules.urgency import with_tiers

    ensure_catalogued(findings)
    findings = with_tiers(findings)
    report = Report(
        cluster=ClusterSummary(
            name=cluster.name,
            arn=cluster.arn,
            status=cluster.status,
            orchestrator=str(cluster.orchestrator),
            node_recovery=cluster.node_recovery,
            node_count=len(summaries),
        ),
        run=run,
        findings=list(findings),
        nodes=list(summaries),
        filesystems=file_system_summaries(fs_data),
        nccl=nccl,
        metrics=metrics,
        not_checked=not_checked_of(findings),
    )
    return report.model_copy(update={"verdict": compute_verdict(report)})
