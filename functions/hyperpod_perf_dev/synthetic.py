"""A deterministic, demo-like Report of any size, for the benchmark, the browser test and docs.

Why in the package: `bench/`, the e2e screenshot test and the report tests all need the same
realistic fleet (a hot GPU, EFA drops, one NCCL straggler, a saturated FSx for Lustre, history)
at 8 and at 1,000 nodes, and the real simulator covers single nodes, not report-sized fleets.
Nothing in the pipeline imports this module.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.domain.report import (
    ClusterSummary,
    FileSystemSummary,
    GpuFigure,
    MetricPoint,
    NodeSummary,
    NotChecked,
    Report,
    RunInfo,
)

_START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
_LUSTRE = "fs-0123456789abcdef0"
_OPENZFS = "fs-0fedcba9876543210"
_BUCKET = "s3://hyperpod-perf-reports-111122223333"
_GOVERNOR_FIX = "echo performance | sudo tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"


def _f(
    node: str | None, check: str, sev: Severity, section: RunbookSection, summary: str, **kw: object
) -> Finding:
    return Finding(node=node, check=check, severity=sev, section=section, summary=summary, **kw)  # type: ignore[arg-type]


def synthetic_report(nodes: int = 8, *, seed: int = 7, previous: bool = False) -> Report:
    """`previous=True` gives the run before: no EFA drops yet, one governor concern since fixed."""
    # bandit B311: simulated values
    rng = random.Random(seed)  # nosec B311
    names = [f"i-0{rng.getrandbits(64):016x}" for _ in range(nodes)]
    hosts = [f"ip-10-1-{k // 250}-{k % 250 + 4}" for k in range(nodes)]
    hot = {1} | {k for k in range(nodes) if k % 83 == 41}  # ~1.2 % of a large fleet
    efa_bad = set() if previous else {min(2, nodes - 1)}
    governor_bad = {min(4, nodes - 1)} if previous else set()
    straggler = min(5, nodes - 1)
    summaries: list[NodeSummary] = []
    findings: list[Finding] = []
    for k, (node, host) in enumerate(zip(names, hosts, strict=True)):
        gpus = []
        for g in range(8):
            temp = float(rng.randint(58, 74))
            clock = float(rng.choice((1980, 1980, 1965, 1950)))
            if k in hot and g == 3:
                temp, clock = 91.0, 900.0
            gpus.append(GpuFigure(index=g, temperature_c=temp, sm_clock_mhz=clock, max_sm_clock_mhz=1980.0))
        figures = {
            "busbw_gbps": round(
                rng.uniform(355, 372) if k != straggler else 298.0 if not previous else 368.0, 1
            ),
            "efa_rx_drops": 1842.0 if k in efa_bad else 0.0,
        }
        summaries.append(
            NodeSummary(
                node=node,
                instance_id=node,
                hostname=host,
                instance_group="worker",
                instance_type="ml.p5.48xlarge",
                availability_zone="us-west-2a",
                gpus=gpus,
                figures=figures,
                raw_key=f"raw/{node}.txt",
            )
        )
        hottest = max(gpus, key=lambda x: x.temperature_c or 0)
        if k in hot:
            findings.append(
                _f(
                    node,
                    "gpu.temperature",
                    Severity.CONCERN,
                    RunbookSection.GPU,
                    f"GPU {hottest.index} at {hottest.temperature_c:g} °C",
                    evidence={"gpu": hottest.index, "temperature_c": hottest.temperature_c},
                    threshold="temperature.gpu >= 88 C",
                    next_step="Check cooling and workload on this node; hand off to the node debugger.",
                    handoff="hyperpod-node-debugger § G",
                )
            )
        else:
            findings.append(
                _f(
                    node,
                    "gpu.temperature",
                    Severity.OK,
                    RunbookSection.GPU,
                    f"hottest GPU {hottest.temperature_c:g} °C",
                    threshold="temperature.gpu >= 88 C",
                )
            )
        if k in efa_bad:
            findings.append(
                _f(
                    node,
                    "efa.counters",
                    Severity.CONCERN,
                    RunbookSection.NCCL,
                    "rdmap16s27 rx_drops = 1842",
                    evidence={"device": "rdmap16s27", "counter": "rx_drops", "value": 1842},
                    threshold="rx_drops > 0",
                    next_step="Compare with the other nodes; if it keeps rising, replace the node.",
                )
            )
        else:
            findings.append(
                _f(node, "efa.counters", Severity.OK, RunbookSection.NCCL, "no EFA error counters")
            )
        if k in governor_bad:
            findings.append(
                _f(
                    node,
                    "host.cpu_governor",
                    Severity.CONCERN,
                    RunbookSection.NCCL,
                    "192 CPUs on powersave",
                    evidence={"governor": "powersave", "cpus": 192},
                    threshold="any CPU not performance",
                    next_step=_GOVERNOR_FIX,
                )
            )
        else:
            findings.append(
                _f(node, "host.cpu_governor", Severity.OK, RunbookSection.NCCL, "all CPUs on performance")
            )
        for check, section, text in (
            ("gpu.pcie_width", RunbookSection.GPU, "all GPUs at x16"),
            ("gpu.ecc_uncorrected", RunbookSection.GPU, "no uncorrected ECC errors"),
            ("efa.port_state", RunbookSection.NCCL, "32 of 32 EFA ports ACTIVE"),
            ("host.shm", RunbookSection.RESOURCES, "/dev/shm 1008 GiB"),
            ("fs.lustre_df", RunbookSection.FILE_SYSTEM, "all OSTs below 90 %"),
        ):
            findings.append(_f(node, check, Severity.OK, section, text))
    nccl = _nccl(hosts, straggler, rng, previous)
    if nccl["suspects"] and not previous:
        s = nccl["suspects"][0]
        findings.append(
            _f(
                s["node"],
                "nccl.node_suspect",
                Severity.CONCERN,
                RunbookSection.NCCL,
                f"{s['node']} is in {s['slow_pairs']} of its {s['pairs']} pairs that are slow",
                evidence=s,
                threshold=">= 50% of the node's pairs slow",
                next_step=f"Re-test {s['node']} against two known-good nodes.",
            )
        )
        findings.append(
            _f(
                None,
                "nccl.pair_slow",
                Severity.CONCERN,
                RunbookSection.NCCL,
                f"{len(nccl['slow_pairs'])} of {len(nccl['pairs'])} pairs more than 5% below the run mean",
                evidence={"slow_pairs": len(nccl["slow_pairs"]), "pairs": len(nccl["pairs"])},
                threshold="busbw < 5% below the run mean",
                next_step="See nccl.node_suspect for the node(s) behind these pairs.",
            )
        )
    times = [(_START + timedelta(minutes=5 * i)).strftime("%Y-%m-%dT%H:%M:%SZ") for i in range(36)]
    lustre = [
        MetricPoint(timestamp=t, value=round(min(1195.0, 900 + i * 60 + rng.uniform(-20, 20)), 1))
        for i, t in enumerate(times)
    ]
    zfs = [
        MetricPoint(timestamp=t, value=round(40 + 30 * ((i % 12) / 11) + rng.uniform(-3, 1), 1))
        for i, t in enumerate(times)
    ]
    peak = max(p.value for p in lustre)
    share = sum(p.value >= 0.9 * 1200 for p in lustre) / len(lustre)
    zfs_peak = max(p.value for p in zfs)
    findings.append(
        _f(
            None,
            "fs.throughput",
            Severity.CONCERN,
            RunbookSection.FILE_SYSTEM,
            f"{_LUSTRE} saturated: at or above 90% of provisioned 1200 MB/s for {share:.0%} of the window",
            evidence={"file_system_id": _LUSTRE, "peak_mbps": peak, "provisioned_mbps": 1200.0},
            threshold="throughput / provisioned >= 90% sustained",
            next_step=f"Scale the file system: aws fsx update-file-system --file-system-id {_LUSTRE} ...",
        )
    )
    findings.append(
        _f(
            None,
            "fs.openzfs_iops",
            Severity.OK,
            RunbookSection.FILE_SYSTEM,
            f"{_OPENZFS} disk IOPS utilisation peak {zfs_peak:.0f}%",
            evidence={"file_system_id": _OPENZFS},
        )
    )
    findings.append(
        _f(
            None,
            "coverage.node_recovery",
            Severity.INFO,
            RunbookSection.COVERAGE,
            "NodeRecovery is None",
            next_step="aws sagemaker update-cluster --cluster-name demo --node-recovery Automatic",
        )
    )
    return Report(
        cluster=ClusterSummary(
            name="demo-cluster",
            arn="arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef123456",
            status="InService",
            orchestrator="Slurm",
            node_recovery="None",
            node_count=nodes,
        ),
        run=RunInfo(
            execution="exec-prev" if previous else "exec-0001",
            started=(_START + timedelta(hours=3)).isoformat().replace("+00:00", "Z"),
            finished=(_START + timedelta(hours=3, minutes=2)).isoformat().replace("+00:00", "Z"),
            reason="alarm: TrainingThroughputLow",
            window_minutes=180,
            region="us-west-2",
            location=f"{_BUCKET}/demo-cluster/{'exec-prev' if previous else 'exec-0001'}/",
        ),
        findings=findings,
        nodes=summaries,
        filesystems=[
            FileSystemSummary(
                file_system_id=_LUSTRE,
                type="LUSTRE",
                provisioned_mbps=1200.0,
                storage_capacity_gib=9600.0,
                throughput_mbps=lustre,
                mount_names=["/fsx"],
            ),
            FileSystemSummary(
                file_system_id=_OPENZFS, type="OPENZFS", iops_utilization_pct=zfs, mount_names=["/home"]
            ),
        ],
        nccl=nccl,
        not_checked=[
            NotChecked(what="health.deep_check", why="no DeepHealthCheckResults streams in the window"),
            NotChecked(what="topology.ultraserver", why="no NVL72 instance types in this cluster"),
        ],
    )


def _nccl(hosts: list[str], straggler: int, rng: random.Random, previous: bool) -> dict[str, object]:
    """All pairs up to 16 nodes, then each node with its next two neighbours (a ring plan)."""
    n = len(hosts)
    if n < 2:
        return {"pairs": [], "mean": None, "median": None, "slow_pairs": [], "suspects": [], "nodes": hosts}
    if n <= 16:
        keys = [(i, j) for i in range(n) for j in range(i + 1, n)]
    else:
        keys = sorted({tuple(sorted((i, (i + d) % n))) for i in range(n) for d in (1, 2)})
    pairs = []
    for i, j in keys:
        bw = rng.uniform(360, 372)
        if straggler in (i, j) and not previous:
            bw = rng.uniform(290, 305)
        pairs.append({"a": hosts[i], "b": hosts[j], "busbw_gbps": round(bw, 3), "runs": 1, "sources": []})
    values = sorted(p["busbw_gbps"] for p in pairs)
    mean = sum(values) / len(values)
    median = values[len(values) // 2]
    slow = [
        {
            "a": p["a"],
            "b": p["b"],
            "busbw_gbps": p["busbw_gbps"],
            "below_drain_level": p["busbw_gbps"] < median * 0.8,
        }
        for p in pairs
        if p["busbw_gbps"] < mean * 0.95
    ]
    suspects = []
    if slow:
        mine = [p for p in pairs if hosts[straggler] in (p["a"], p["b"])]
        suspects.append(
            {
                "node": hosts[straggler],
                "slow_pairs": len(mine),
                "pairs": len(mine),
                "median_gbps": round(sorted(p["busbw_gbps"] for p in mine)[len(mine) // 2], 3),
                "others_median_gbps": round(median, 3),
                "drain_candidate": False,
            }
        )
    return {
        "pairs": pairs,
        "mean": round(mean, 3),
        "median": round(median, 3),
        "slow_threshold_gbps": round(mean * 0.95, 3),
        "drain_level_gbps": round(median * 0.8, 3),
        "slow_pairs": slow,
        "suspects": suspects,
        "nodes": hosts,
    }


def synthetic_report_with_history(nodes: int = 8, *, seed: int = 7) -> Report:
    """The current run with its history block computed against the previous synthetic run."""
    from hyperpod_perf.report.history import diff_reports

    current = synthetic_report(nodes, seed=seed)
    previous = synthetic_report(nodes, seed=seed, previous=True)
    return current.model_copy(update={"history": diff_reports(previous, current)})
