"""Host rules: CPU governor (§ A), /dev/shm and root volume (§ I), iowait and I/O pressure (§ B),
memlock (RDMA, hand-off to hyperpod-nccl).

These are the host-side signals the runbook samples on one node; here every node is judged, so a
single node with a powersave governor or a full root volume stands out as the straggler it is.
"""

from __future__ import annotations

from typing import Any

from hyperpod_perf.collect.snapshot import RC_NOT_FOUND
from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.parse.procfs import (
    CpuGovernors,
    CpuStat,
    DfRow,
    IoPressure,
    Memlock,
    parse_cpu_governor,
    parse_cpu_stat,
    parse_df,
    parse_io_pressure,
    parse_memlock,
)
from hyperpod_perf.rules.context import NodeContext, Section, SectionState

GIB = 1024**3
#: How many CPU names to list in evidence; a 192-vCPU node would otherwise flood the report.
MAX_LISTED_CPUS = 16


def evaluate(ctx: NodeContext) -> list[Finding]:
    df = ctx.section("df", parse_df, accept_rc=(0, 1))
    return [
        *_cpu_governor(ctx),
        *_shm(ctx, df),
        *_root_volume(ctx, df),
        *_iowait(ctx),
        *_io_pressure(ctx),
        *_memlock(ctx),
    ]


def _missing(
    ctx: NodeContext, check: str, section: RunbookSection, what: str, data: Section
) -> list[Finding]:
    """INFO for absent data; nothing when parsing failed (that is already a collect.node finding)."""
    if data.state is SectionState.FAILED and data.value is None:
        return []
    return [ctx.not_present(check, section, what, data)]


def _verdict(
    ctx: NodeContext,
    check: str,
    section: RunbookSection,
    *,
    exceeded: bool,
    concern: str,
    ok: str,
    evidence: dict[str, Any],
    threshold: str,
    next_step: str,
    handoff: Handoff | None = None,
) -> list[Finding]:
    """One measured value against one threshold: CONCERN (with the fix) when it is past the
    threshold, OK otherwise; the evidence and the threshold are the same either way."""
    if exceeded:
        return [
            ctx.finding(
                check,
                Severity.CONCERN,
                section,
                concern,
                evidence=evidence,
                threshold=threshold,
                next_step=next_step,
                handoff=handoff,
            )
        ]
    return [ctx.finding(check, Severity.OK, section, ok, evidence=evidence, threshold=threshold)]


def _cpu_governor(ctx: NodeContext) -> list[Finding]:
    check, section = "host.cpu_governor", RunbookSection.NCCL
    data = ctx.section("cpu-governor", parse_cpu_governor, accept_rc=(0, 1, 2))
    governors: CpuGovernors | None = data.value
    if governors is None:
        return _missing(ctx, check, section, "CPU frequency governor", data)
    if not governors.by_cpu:
        return [
            ctx.finding(
                check,
                Severity.INFO,
                section,
                "CPU frequency governor: not present (no cpufreq on this node; typical of VMs, where the "
                "hypervisor controls the frequency)",
                evidence={"section": data.name, "message": governors.unavailable},
            )
        ]
    counts = governors.counts()
    slow = sorted((cpu for cpu, gov in governors.by_cpu.items() if gov != "performance"), key=_cpu_number)
    evidence: dict[str, Any] = {"cpus": len(governors.by_cpu), "governors": counts}
    if governors.driver:
        evidence["driver"] = governors.driver
    if slow:
        evidence["cpus_not_performance"] = slow[:MAX_LISTED_CPUS]
    others = ", ".join(f"{gov} x{n}" for gov, n in counts.items() if gov != "performance")
    return _verdict(
        ctx,
        check,
        section,
        exceeded=bool(slow),
        concern=f"{len(slow)} of {len(governors.by_cpu)} CPU(s) not on the performance governor ({others})",
        ok=f"all {len(governors.by_cpu)} CPU(s) on the performance governor",
        evidence=evidence,
        threshold="every CPU on the `performance` governor",
        next_step=(
            "Frequency scaling makes this node's data loading and kernel launches slower than its "
            "peers'. Operator, on the node: `sudo cpupower frequency-set -g performance` (persist it "
            "in the lifecycle script)."
        ),
    )


def _cpu_number(cpu: str) -> int:
    digits = cpu.removeprefix("cpu")
    return int(digits) if digits.isdigit() else -1


def _row(rows: list[DfRow], mountpoint: str) -> DfRow | None:
    """The last df row for a mount point (a later mount hides an earlier one)."""
    matches = [row for row in rows if row.mountpoint == mountpoint]
    return matches[-1] if matches else None


def _shm(ctx: NodeContext, df: Section) -> list[Finding]:
    check, section = "host.shm", RunbookSection.RESOURCES
    rows: list[DfRow] | None = df.value
    if rows is None:
        return _missing(ctx, check, section, "/dev/shm size", df)
    minimum = ctx.thresholds.shm_min_gib
    threshold = f"/dev/shm mounted and >= {minimum:g} GiB"
    next_step = (
        "NCCL and DataLoader workers use /dev/shm; a small one fails or slows them. Mount a larger tmpfs "
        "(for pods: an emptyDir with medium Memory on /dev/shm)."
    )
    row = _row(rows, "/dev/shm")
    if row is not None and not _gpu_node(ctx):
        return _shm_without_gpus(ctx, rows, row)
    if row is None:
        return [
            ctx.finding(
                check,
                Severity.CONCERN,
                section,
                "/dev/shm is not mounted",
                evidence={"mountpoints": [r.mountpoint for r in rows]},
                threshold=threshold,
                next_step=next_step,
                handoff=Handoff.NODE_I,
            )
        ]
    size_gib = round(row.size_bytes / GIB, 2)
    evidence = {"size_gib": size_gib, "used_pct": row.used_pct, "filesystem": row.filesystem}
    return _verdict(
        ctx,
        check,
        section,
        exceeded=size_gib < minimum,
        concern=f"/dev/shm is {size_gib:g} GiB, below {minimum:g} GiB",
        ok=f"/dev/shm is {size_gib:g} GiB",
        evidence=evidence,
        threshold=threshold,
        next_step=next_step,
        handoff=Handoff.NODE_I,
    )


#: EC2 families whose names start so carry GPUs or other accelerators (p2..p6, g4dn..g6e, gr6,
#: trn1/trn2, inf1/inf2, dl1/dl2q); every other family (m, c, r, t, ...) has none.
ACCELERATOR_FAMILY_PREFIXES = ("p", "g", "trn", "inf", "dl")


def _gpu_node(ctx: NodeContext) -> bool:
    """Whether the 16 GiB /dev/shm floor applies: a GPU or accelerator node.

    From the instance type when it is known; otherwise a node is taken as GPU-less only when
    nvidia-smi is not there at all (no gpu-query section, or rc 127). A GPU node whose nvidia-smi
    fails (driver down) keeps the floor.
    """
    if ctx.instance_type:
        # The prefixes hold no `.`, so the type starts with one exactly when its family does.
        return ctx.instance_type.lower().startswith(ACCELERATOR_FAMILY_PREFIXES)
    raw = ctx.raw("gpu-query")
    return raw is not None and raw.rc != RC_NOT_FOUND


def _shm_without_gpus(ctx: NodeContext, rows: list[DfRow], shm: DfRow) -> list[Finding]:
    """/dev/shm on a node without GPUs (a HyperPod controller or login node), against its RAM.

    The 16 GiB floor is sized for NCCL and DataLoader workers on GPU nodes; a small controller whose
    /dev/shm is the tmpfs default (half its RAM) is healthy. What is still wrong there is a /dev/shm
    shrunk well below that default (e.g. a container's 64 MiB). RAM is not collected, so it is read
    from devtmpfs, which the kernel sizes like any tmpfs: half the RAM (Documentation/filesystems/
    tmpfs.rst, "size: ... The default is half of your physical RAM without swap").
    """
    check, section = "host.shm", RunbookSection.RESOURCES
    size_gib = round(shm.size_bytes / GIB, 2)
    evidence: dict[str, Any] = {
        "size_gib": size_gib,
        "used_pct": shm.used_pct,
        "filesystem": shm.filesystem,
        "gpu_node": False,
        "instance_type": ctx.instance_type,
    }
    devtmpfs = next((row for row in rows if row.filesystem == "devtmpfs"), None)
    if devtmpfs is None or devtmpfs.size_bytes <= 0:
        return [
            ctx.finding(
                check,
                Severity.INFO,
                section,
                f"/dev/shm is {size_gib:g} GiB on a node without GPUs; RAM not readable from df (no "
                "devtmpfs), not judged",
                evidence=evidence,
            )
        ]
    fraction = ctx.thresholds.shm_min_ram_fraction_no_gpu
    ram_gib = round(2 * devtmpfs.size_bytes / GIB, 2)
    share = shm.size_bytes / (2 * devtmpfs.size_bytes)
    evidence |= {"ram_gib_estimated": ram_gib, "share_of_ram": round(share, 3)}
    return _verdict(
        ctx,
        check,
        section,
        exceeded=share < fraction,
        concern=f"/dev/shm is {size_gib:g} GiB, {share:.0%} of ~{ram_gib:g} GiB RAM on a node without GPUs "
        f"(below {fraction:.0%})",
        ok=f"/dev/shm is {size_gib:g} GiB, {share:.0%} of ~{ram_gib:g} GiB RAM (node without GPUs)",
        evidence=evidence,
        threshold=f"node without GPUs: /dev/shm >= {fraction:g} x RAM (RAM = 2 x devtmpfs)",
        next_step="Something shrank /dev/shm below the tmpfs default (half the RAM): remount it with its "
        "default size (`mount -o remount,size=50% /dev/shm`, as root) or fix the mount option that set it.",
        handoff=Handoff.NODE_I,
    )


def _root_volume(ctx: NodeContext, df: Section) -> list[Finding]:
    check, section = "host.root_volume", RunbookSection.RESOURCES
    rows: list[DfRow] | None = df.value
    if rows is None:
        return _missing(ctx, check, section, "root volume usage", df)
    limit = ctx.thresholds.root_volume_used_pct
    threshold = f"/ used < {limit:g}%"
    row = _row(rows, "/")
    if row is None:
        return [
            ctx.finding(
                check,
                Severity.INFO,
                section,
                "root volume usage: not present (/ not in the df output)",
                evidence={"mountpoints": [r.mountpoint for r in rows]},
            )
        ]
    evidence = {
        "used_pct": row.used_pct,
        "size_gib": round(row.size_bytes / GIB, 1),
        "avail_gib": round(row.avail_bytes / GIB, 1),
        "filesystem": row.filesystem,
    }
    return _verdict(
        ctx,
        check,
        section,
        exceeded=row.used_pct >= limit,
        concern=f"root volume {row.used_pct:g}% used ({evidence['avail_gib']:g} GiB free)",
        ok=f"root volume {row.used_pct:g}% used",
        evidence=evidence,
        threshold=threshold,
        next_step=(
            "The root volume is a fixed 100 GiB: move containers, caches and checkpoints to "
            "/opt/dlami/nvme or /fsx (`sudo du -xh / --max-depth=2 | sort -h | tail`)."
        ),
        handoff=Handoff.NODE_I,
    )


def _iowait(ctx: NodeContext) -> list[Finding]:
    check, section = "host.iowait", RunbookSection.FILE_SYSTEM
    data = ctx.section("cpu-stat", parse_cpu_stat)
    stat: CpuStat | None = data.value
    if stat is None:
        return _missing(ctx, check, section, "iowait (/proc/stat)", data)
    limit = ctx.thresholds.iowait_pct
    threshold = f"iowait <= {limit:g}%"
    evidence = {"iowait_pct": stat.iowait_pct, "interval_jiffies": stat.interval_jiffies}
    return _verdict(
        ctx,
        check,
        section,
        exceeded=stat.iowait_pct > limit,
        concern=f"iowait {stat.iowait_pct:g}% over the sampled interval",
        ok=f"iowait {stat.iowait_pct:g}%",
        evidence=evidence,
        threshold=threshold,
        next_step=(
            "CPUs are waiting on storage: compare with the file system's throughput against its "
            "provisioned level (fs.throughput) — saturated means scale it, headroom means the I/O "
            "pattern is inefficient. `iostat -x 1 5` names the busy device."
        ),
    )


def _io_pressure(ctx: NodeContext) -> list[Finding]:
    check, section = "host.io_pressure", RunbookSection.FILE_SYSTEM
    data = ctx.section("io-pressure", parse_io_pressure, accept_rc=(0, 1))
    pressure: IoPressure | None = data.value
    if pressure is None:
        return _missing(ctx, check, section, "I/O pressure (PSI)", data)
    if pressure.some is None:
        return [
            ctx.finding(
                check,
                Severity.INFO,
                section,
                "I/O pressure (PSI): not present (kernel without /proc/pressure/io)",
                evidence={"section": data.name, "message": pressure.unavailable},
            )
        ]
    limit = ctx.thresholds.io_pressure_some_avg10
    threshold = f"PSI io some avg10 <= {limit:g}"
    evidence: dict[str, Any] = {
        "some_avg10": pressure.some.avg10,
        "some_avg60": pressure.some.avg60,
        "some_avg300": pressure.some.avg300,
    }
    if pressure.full is not None:
        evidence["full_avg10"] = pressure.full.avg10
    return _verdict(
        ctx,
        check,
        section,
        exceeded=pressure.some.avg10 > limit,
        concern=f"tasks stalled on I/O {pressure.some.avg10:g}% of the last 10 s (PSI io some avg10)",
        ok=f"PSI io some avg10 {pressure.some.avg10:g}",
        evidence=evidence,
        threshold=threshold,
        next_step=(
            "Something on this node waits on storage: check the file system's throughput against "
            "its provisioned level (fs.throughput) and the local disks with `iostat -x 1 5`."
        ),
    )


def _memlock(ctx: NodeContext) -> list[Finding]:
    check, section = "host.memlock", RunbookSection.NCCL
    data = ctx.section("memlock", parse_memlock)
    memlock: Memlock | None = data.value
    if memlock is None:
        return _missing(ctx, check, section, "locked-memory limit (ulimit -l)", data)
    threshold = "ulimit -l unlimited"
    if memlock.unlimited:
        return [
            ctx.finding(
                check,
                Severity.OK,
                section,
                "locked-memory limit unlimited",
                evidence={"memlock": "unlimited"},
                threshold=threshold,
            )
        ]
    return [
        ctx.finding(
            check,
            Severity.CONCERN,
            section,
            f"locked-memory limit is {memlock.kib} KiB, not unlimited: RDMA memory registration can fail",
            evidence={"memlock_kib": memlock.kib},
            threshold=threshold,
            next_step=(
                "This is the limit of the collector's root shell; check the training processes too "
                "(`grep 'locked memory' /proc/<pid>/limits`) and set it unlimited (LimitMEMLOCK=infinity for "
                "slurmd, `--ulimit memlock=-1` for containers)."
            ),
            handoff=Handoff.NCCL,
        )
    ]
