"""FSx file systems a cluster uses, with the figures that bound their performance (read-only).

Why discovery from mounts: operators rarely know which `fs-…` backs `/fsx`. A node's
`/proc/mounts` names a Lustre file system by its mount name (`10.1.71.197@tcp:/oyuutbev`), which
is `LustreConfiguration.MountName` in DescribeFileSystems; an OpenZFS NFS mount names the file
system's DNS name (or its endpoint IP). A mount that matches nothing in this account and region
is reported, not guessed (it may belong to another account).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.errors import AwsAdapterError, NotFound, translate_client_error
from hyperpod_perf.cluster_models import FileSystemInfo, FileSystemType

LUSTRE_DEVICE_RE = re.compile(r"^(?P<host>[^@\s]+)@[a-z0-9]+:/(?P<mount_name>[^/\s]+)")
NFS_DEVICE_RE = re.compile(r"^(?P<host>[^:\s/]+):(?P<path>/\S*)$")
FS_ID_RE = re.compile(r"^fs-[0-9a-f]{8,17}$")


@dataclass(frozen=True)
class Mount:
    """One line of a node's `mounts` section, as plain data."""

    device: str
    mountpoint: str
    fstype: str
    node: str | None = None


@dataclass
class Discovery:
    file_systems: list[FileSystemInfo] = field(default_factory=list)
    #: mountpoint -> file system id, for mounts that were matched
    matched: dict[str, str] = field(default_factory=dict)
    #: FSx-looking mounts that match no file system visible to this account and region
    unmatched: list[Mount] = field(default_factory=list)
    #: file system id -> nodes that mount it
    nodes_by_fs: dict[str, set[str]] = field(default_factory=dict)


def lustre_mount_name(device: str) -> str | None:
    """`10.1.71.197@tcp:/oyuutbev/sub` -> `oyuutbev`."""
    match = LUSTRE_DEVICE_RE.match(device.strip())
    return match["mount_name"] if match else None


def nfs_server(device: str) -> str | None:
    """`fs-0123.fsx.us-east-1.amazonaws.com:/fsx/vol1` -> the host part."""
    match = NFS_DEVICE_RE.match(device.strip())
    return match["host"].lower() if match else None


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

    def discover(self, mounts: Iterable[Mount]) -> Discovery:
        """Match node mounts to the account's file systems (one paginated listing)."""
        fsx_mounts = [m for m in mounts if looks_like_fsx(m)]
        if not fsx_mounts:
            return Discovery()
        return match_mounts(self.list_all(), fsx_mounts)

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


def looks_like_fsx(mount: Mount) -> bool:
    if mount.fstype == "lustre":
        return lustre_mount_name(mount.device) is not None
    return mount.fstype in {"nfs", "nfs4"} and nfs_server(mount.device) is not None


def match_mounts(systems: Iterable[FileSystemInfo], mounts: Iterable[Mount]) -> Discovery:
    """Pure: which file system each FSx-looking mount belongs to (Lustre MountName, NFS DNS name or IP)."""
    systems = list(systems)
    by_mount_name = {fs.lustre_mount_name: fs for fs in systems if fs.lustre_mount_name}
    by_host: dict[str, FileSystemInfo] = {}
    for fs in systems:
        for host in (fs.dns_name, fs.endpoint_ip):
            if host:
                by_host[host.lower()] = fs
    discovery = Discovery()
    chosen: dict[str, FileSystemInfo] = {}
    for mount in mounts:
        if not looks_like_fsx(mount):
            continue
        if mount.fstype == "lustre":
            fs = by_mount_name.get(lustre_mount_name(mount.device) or "")
        else:
            fs = by_host.get(nfs_server(mount.device) or "")
        if fs is None:
            if all(m.device != mount.device for m in discovery.unmatched):
                discovery.unmatched.append(mount)
            continue
        chosen[fs.file_system_id] = fs
        discovery.matched[mount.mountpoint] = fs.file_system_id
        if mount.node:
            discovery.nodes_by_fs.setdefault(fs.file_system_id, set()).add(mount.node)
    discovery.file_systems = list(chosen.values())
    return discovery


def file_system_from_response(raw: dict[str, Any]) -> FileSystemInfo:
    fs_type = raw.get("FileSystemType") or ""
    lustre = raw.get("LustreConfiguration") or {}
    zfs = raw.get("OpenZFSConfiguration") or {}
    ontap = raw.get("OntapConfiguration") or {}
    windows = raw.get("WindowsConfiguration") or {}
    iops_config = zfs.get("DiskIopsConfiguration") or ontap.get("DiskIopsConfiguration") or {}
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
    )
