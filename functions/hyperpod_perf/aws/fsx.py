"""FSx file systems a cluster uses, with the figures that bound their performance (read-only).

Which file system a node's mount belongs to is decided by the pure `domain.mounts.match_mounts`;
this adapter only describes and lists file systems.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.errors import translate_client_error
from hyperpod_perf.domain.cluster import FileSystemInfo, FileSystemType
from hyperpod_perf.domain.errors import AwsAdapterError, NotFound

FS_ID_RE = re.compile(r"^fs-[0-9a-f]{8,17}$")


class FsxFileSystems:
    def __init__(self, client: Any) -> None:
        self._client = client

    def describe(
        self, file_system_ids: Iterable[str]
    ) -> tuple[list[FileSystemInfo], dict[str, AwsAdapterError]]:
        """Each id on its own, so one file system in another account does not hide the rest."""
        found: list[FileSystemInfo] = []
        errors: dict[str, AwsAdapterError] = {}
        for fs_id in dict.fromkeys(file_system_ids):
            if not FS_ID_RE.match(fs_id):
                errors[fs_id] = NotFound(f"{fs_id!r} is not a file system id (fs-…)", context="fsx")
                continue
            try:
                systems = self._describe_pages(FileSystemIds=[fs_id])
            except AwsAdapterError as exc:
                errors[fs_id] = exc
                continue
            match = [fs for fs in systems if fs.file_system_id == fs_id]
            if match:
                found.append(match[0])
            else:
                errors[fs_id] = NotFound(
                    f"file system {fs_id} not found in this account and region",
                    code="FileSystemNotFound",
                    context="fsx:DescribeFileSystems",
                )
        return found, errors

    def list_all(self) -> list[FileSystemInfo]:
        return self._describe_pages()

    def _describe_pages(self, **kwargs: Any) -> list[FileSystemInfo]:
        systems: list[FileSystemInfo] = []
        token: str | None = None
        while True:
            call = dict(kwargs)
            if token:
                call["NextToken"] = token
            try:
                page = self._client.describe_file_systems(**call)
            except (ClientError, BotoCoreError) as exc:
                raise translate_client_error(exc, "fsx:DescribeFileSystems") from exc
            systems.extend(file_system_from_response(raw) for raw in page.get("FileSystems") or [])
            token = page.get("NextToken")
            if not token:
                return systems


def file_system_from_response(raw: dict[str, Any]) -> FileSystemInfo:
    fs_type = raw.get("FileSystemType") or ""
    lustre = raw.get("LustreConfiguration") or {}
    zfs = raw.get("OpenZFSConfiguration") or {}
    ontap = raw.get("OntapConfiguration") or {}
    windows = raw.get("WindowsConfiguration") or {}
    iops_config = zfs.get("DiskIopsConfiguration") or ontap.get("DiskIopsConfiguration") or {}
    metadata = lustre.get("MetadataConfiguration") or {}
    throughput = (
        zfs.get("ThroughputCapacity")
        or lustre.get("ThroughputCapacity")
        or ontap.get("ThroughputCapacity")
        or windows.get("ThroughputCapacity")
    )
    return FileSystemInfo(
        file_system_id=raw.get("FileSystemId") or "",
        type=fs_type,
        storage_capacity_gib=raw.get("StorageCapacity"),
        deployment_type=lustre.get("DeploymentType")
        or zfs.get("DeploymentType")
        or ontap.get("DeploymentType"),
        dns_name=raw.get("DNSName"),
        lustre_mount_name=lustre.get("MountName") if fs_type == FileSystemType.LUSTRE else None,
        per_unit_storage_throughput=lustre.get("PerUnitStorageThroughput"),
        throughput_capacity=throughput,
        iops_mode=iops_config.get("Mode"),
        iops=iops_config.get("Iops"),
        owner_id=raw.get("OwnerId"),
        endpoint_ip=zfs.get("EndpointIpAddress"),
        metadata_mode=metadata.get("Mode"),
        metadata_iops=metadata.get("Iops"),
    )
