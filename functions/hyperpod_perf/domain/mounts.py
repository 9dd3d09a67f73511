"""Which FSx file system a node's mount belongs to: pure matching, no AWS calls.

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

from hyperpod_perf.domain.cluster import FileSystemInfo

LUSTRE_DEVICE_RE = re.compile(r"^(?P<host>[^@\s]+)@[a-z0-9]+:/(?P<mount_name>[^/\s]+)")
NFS_DEVICE_RE = re.compile(r"^(?P<host>[^:\s/]+):(?P<path>/\S*)$")


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
