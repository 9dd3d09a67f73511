"""Stage 3: the FSx file systems the nodes mount (or that were named) and their CloudWatch series."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from hyperpod_perf.domain.cluster import FileSystemData, FileSystemInfo, MetricSeries
from hyperpod_perf.domain.errors import AwsAdapterError
from hyperpod_perf.domain.findings import Finding, RunbookSection
from hyperpod_perf.domain.mounts import Mount, match_mounts
from hyperpod_perf.domain.request import DiagnoseRequest
from hyperpod_perf.service.gaps import not_checked_finding
from hyperpod_perf.service.ports import FsxPort, MetricsPort


def _file_systems(
    request: DiagnoseRequest, fsx_port: FsxPort, mounts: Sequence[Mount], findings: list[Finding]
) -> tuple[list[FileSystemInfo], Any]:
    if request.fsx_ids:
        systems, errors = fsx_port.describe(request.fsx_ids)
        for fs_id, error in errors.items():
            findings.append(
                not_checked_finding(
                    "fs.throughput",
                    RunbookSection.FILE_SYSTEM,
                    f"file system {fs_id} could not be described (another account or region?)",
                    error,
                    file_system_id=fs_id,
                )
            )
        return systems, match_mounts(systems, mounts)
    fsx_mounts = [m for m in mounts if m.fstype in {"lustre", "nfs", "nfs4"}]
    if not fsx_mounts:
        findings.append(
            not_checked_finding(
                "fs.throughput",
                RunbookSection.FILE_SYSTEM,
                "no FSx file system given (--fsx) and none found in the collected nodes' mounts",
                "no file system to check",
            )
        )
        return [], match_mounts([], [])
    try:
        discovery = match_mounts(fsx_port.list_all(), fsx_mounts)
    except AwsAdapterError as exc:
        findings.append(
            not_checked_finding(
                "fs.throughput", RunbookSection.FILE_SYSTEM, "FSx file systems could not be listed", exc
            )
        )
        return [], match_mounts([], [])
    for mount in discovery.unmatched:
        findings.append(
            not_checked_finding(
                "fs.throughput",
                RunbookSection.FILE_SYSTEM,
                f"{mount.fstype} mount {mount.device} on {mount.mountpoint} matches no FSx file system "
                "in this account and region (another account?)",
                "no matching file system",
                device=mount.device,
                mountpoint=mount.mountpoint,
            )
        )
    return discovery.file_systems, discovery


def file_system_data(
    request: DiagnoseRequest,
    fsx_port: FsxPort,
    metrics_port: MetricsPort,
    mounts: Sequence[Mount],
    window: tuple[datetime, datetime],
) -> FileSystemData:
    findings: list[Finding] = []
    systems, discovery = _file_systems(request, fsx_port, mounts, findings)
    series: list[MetricSeries] = []
    if systems:
        start, end = window
        try:
            series = metrics_port.fetch(systems, start, end, now=end)
        except AwsAdapterError as exc:
            findings.extend(
                not_checked_finding(
                    "fs.throughput",
                    RunbookSection.FILE_SYSTEM,
                    f"CloudWatch metrics of {fs.file_system_id} could not be read",
                    exc,
                    file_system_id=fs.file_system_id,
                )
                for fs in systems
            )
    return FileSystemData(
        systems=list(systems),
        series=series,
        nodes_by_fs={fs_id: sorted(nodes) for fs_id, nodes in discovery.nodes_by_fs.items()},
        findings=findings,
    )
