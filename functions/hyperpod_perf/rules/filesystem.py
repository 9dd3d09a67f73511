"""File-system rules seen from a node (runbook § B): `lfs df` per Lustre mount.

A hung `lfs df` (killed by `timeout`, rc=124) means the client cannot reach some Lustre server: I/O
to that mount blocks, which looks like a training stall. An inactive OST or one that is nearly full
makes writes striped onto it fail or crawl even while the file system as a whole has room.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.parse.lustre import LfsDf, LustreFilesystem, parse_lfs_df
from hyperpod_perf.parse.procfs import Mount, parse_mounts
from hyperpod_perf.rules.context import NodeContext, SectionState

CHECK = "fs.lustre_df"
SECTION = RunbookSection.FILE_SYSTEM

_V = TypeVar("_V")


def evaluate(ctx: NodeContext) -> list[Finding]:
    return _lustre_df(ctx)


def _lustre_mounts(ctx: NodeContext) -> list[Mount] | None:
    """Lustre mounts from /proc/mounts; None when the mounts section is not usable."""
    data = ctx.section("mounts", parse_mounts)
    mounts: list[Mount] | None = data.value
    if mounts is None:
        return None
    return [m for m in mounts if m.is_lustre]


def _lustre_df(ctx: NodeContext) -> list[Finding]:
    lustre_mounts = _lustre_mounts(ctx)
    mount_evidence = [{"mountpoint": m.mountpoint, "device": m.device} for m in lustre_mounts or []]
    data = ctx.section("lfs-df", parse_lfs_df)
    if data.state is SectionState.TIMEOUT:
        return [
            ctx.finding(
                CHECK,
                Severity.CONCERN,
                SECTION,
                "`lfs df` timed out (rc=124): a hung Lustre mount",
                evidence={"rc": data.rc, "lustre_mounts": mount_evidence},
                threshold="lfs df completes within the collector's timeout",
                next_step=(
                    "I/O to this mount blocks. On the node: `lfs check servers`, `lctl dl | grep -v UP`, "
                    "and `dmesg | grep -i lustre` for evictions/timeouts; check the file system's health in "
                    "the FSx console and that the security group allows Lustre traffic (TCP 988, 1018-1023)."
                ),
            )
        ]
    report: LfsDf | None = data.value
    if report is None:
        if data.state is SectionState.FAILED:
            return []  # unparseable output: already reported as collect.node
        if lustre_mounts == []:
            return [_no_lustre(ctx)]
        return [ctx.not_present(CHECK, SECTION, "Lustre target usage (lfs df)", data)]
    if not report.filesystems:
        if lustre_mounts:
            return [
                ctx.finding(
                    CHECK,
                    Severity.INFO,
                    SECTION,
                    "`lfs df` printed no target although Lustre is mounted",
                    evidence={"rc": data.rc, "lustre_mounts": mount_evidence},
                )
            ]
        return [_no_lustre(ctx)]
    return _judge(ctx, report, data.rc)


def _no_lustre(ctx: NodeContext) -> Finding:
    return ctx.finding(
        CHECK,
        Severity.INFO,
        SECTION,
        "Lustre target usage: not present (no Lustre mount)",
        evidence={"lustre_mounts": []},
    )


def _judge(ctx: NodeContext, report: LfsDf, rc: int | None) -> list[Finding]:
    limit = ctx.thresholds.lustre_ost_used_pct
    unavailable: dict[str, dict[str, str]] = {}
    full: dict[str, dict[str, int]] = {}
    for fs in report.filesystems:
        mount = fs.mount or fs.fsname or "?"
        for target in fs.targets:
            if target.unavailable is not None:
                unavailable.setdefault(mount, {})[target.name] = target.unavailable
            elif target.kind == "OST" and target.use_pct is not None and target.use_pct >= limit:
                full.setdefault(mount, {})[target.name] = target.use_pct
    findings: list[Finding] = []
    if unavailable:
        listed = _per_mount(unavailable, lambda name, reason: f"{name} ({reason})")
        findings.append(
            ctx.finding(
                CHECK,
                Severity.CONCERN,
                SECTION,
                f"Lustre target(s) unavailable: {listed}",
                evidence={"unavailable": unavailable, "rc": rc},
                threshold="every MDT/OST reachable (no `inactive device`)",
                next_step=(
                    "Files striped on that target hang or fail. On the node: `lctl dl` and `lfs check osts`;"
                    " check the file system's status in the FSx console; open a support case if it persists."
                ),
            )
        )
    if full:
        listed = _per_mount(full, lambda name, pct: f"{name} {pct}%")
        findings.append(
            ctx.finding(
                CHECK,
                Severity.CONCERN,
                SECTION,
                f"Lustre OST(s) at or above {limit:g}% used: {listed}",
                evidence={"full_osts": full, "filesystems": [_summary(fs) for fs in report.filesystems]},
                threshold=f"every OST < {limit:g}% used",
                next_step=(
                    "Writes striped onto a full OST fail with ENOSPC or slow down even while the file system "
                    "has room: rebalance hot files (`lfs_migrate`), widen striping for large files, or grow "
                    "the file system's storage capacity."
                ),
            )
        )
    if findings:
        return findings
    return [
        ctx.finding(
            CHECK,
            Severity.OK,
            SECTION,
            f"{len(report.filesystems)} Lustre file system(s): all targets reachable, OSTs below {limit:g}%",
            evidence={"filesystems": [_summary(fs) for fs in report.filesystems]},
            threshold=f"every target reachable, every OST < {limit:g}% used",
        )
    ]


def _per_mount(targets_by_mount: dict[str, dict[str, _V]], describe: Callable[[str, _V], str]) -> str:
    """`/fsx OST0001 ..., OST0003 ...; /scratch ...`: the targets named in a summary, by mount."""
    return "; ".join(
        f"{mount} " + ", ".join(describe(name, value) for name, value in targets.items())
        for mount, targets in targets_by_mount.items()
    )


def _summary(fs: LustreFilesystem) -> dict[str, Any]:
    used = [t.use_pct for t in fs.osts if t.use_pct is not None]
    return {
        "mount": fs.mount,
        "fsname": fs.fsname,
        "mdts": len(fs.mdts),
        "osts": len(fs.osts),
        "max_ost_used_pct": max(used) if used else None,
        "used_pct": fs.summary.use_pct if fs.summary else None,
    }
