"""Host rules on rendered snapshots: healthy -> six OKs; each planted fault -> exactly its CONCERN."""

from pathlib import Path

import pytest

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.rules import host
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.thresholds import Thresholds

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CHECKS = (
    "host.cpu_governor",
    "host.shm",
    "host.root_volume",
    "host.iowait",
    "host.io_pressure",
    "host.memlock",
)
GIB_KIB = 1024 * 1024  # KiB per GiB


def governors(performance: int = 96, powersave: int = 0) -> str:
    lines = [f"cpu{n} performance" for n in range(performance)]
    lines += [f"cpu{n} powersave" for n in range(performance, performance + powersave)]
    return "\n".join(lines) + "\n"


def df(root_used_pct: int = 40, shm_gib: float = 1000.0, shm: bool = True) -> str:
    """`df -kP` with a 100 GiB root volume at the given usage and a /dev/shm of the given size."""
    size = 100 * GIB_KIB
    used = size * root_used_pct // 100
    lines = [
        "Filesystem     1024-blocks      Used  Available Capacity Mounted on",
        f"/dev/nvme0n1p1 {size} {used} {size - used} {root_used_pct}% /",
    ]
    if shm:
        shm_kib = int(shm_gib * GIB_KIB)
        lines.append(f"tmpfs {shm_kib} 0 {shm_kib} 0% /dev/shm")
    lines.append(
        f"/dev/md0 {28 * 1024 * GIB_KIB} {GIB_KIB} {28 * 1024 * GIB_KIB - GIB_KIB} 1% /opt/dlami/nvme"
    )
    return "\n".join(lines) + "\n"


def cpu_stat(iowait_pct: int = 1) -> str:
    """Two /proc/stat samples 1000 jiffies apart with the given iowait share."""
    busy = 1000 - iowait_pct * 10 - 500
    return "cpu  500000 0 100000 9000000 20000 0 1000 0 0 0\n" + (
        f"cpu  {500000 + busy} 0 100000 {9000000 + 500} {20000 + iowait_pct * 10} 0 1000 0 0 0\n"
    )


def psi(some_avg10: float = 0.5) -> str:
    return (
        f"some avg10={some_avg10:.2f} avg60=1.00 avg300=0.50 total=123456\n"
        "full avg10=0.10 avg60=0.20 avg300=0.10 total=6543\n"
    )


HEALTHY = {
    "cpu-governor": (governors(), 0),
    "df": (df(), 0),
    "cpu-stat": (cpu_stat(), 0),
    "io-pressure": (psi(), 0),
    "memlock": ("unlimited\n", 0),
}


def context(**override: tuple[str, int]) -> NodeContext:
    sections = {**HEALTHY, **override}
    text = render_container(
        [("meta", "hostname=ip-10-1-2-3\ninstance_type=ml.p5.48xlarge\n", 0)]
        + [(name, body, rc) for name, (body, rc) in sections.items()]
    )
    return NodeContext(parse_container(text, "node.txt"), Thresholds())


def by_check(findings: list[Finding]) -> dict[str, Finding]:
    assert len({f.check for f in findings}) == len(findings), "one finding per check expected"
    return {f.check: f for f in findings}


def test_healthy_node_gives_six_ok_findings_with_evidence():
    # Given a node with performance governors, big /dev/shm, 40% root, 1% iowait, calm PSI, unlimited memlock
    ctx = context()
    found = by_check(host.evaluate(ctx))
    # Then each host check is OK and carries the values it checked
    assert {c: f.severity for c, f in found.items()} == dict.fromkeys(CHECKS, Severity.OK)
    assert found["host.cpu_governor"].evidence == {"cpus": 96, "governors": {"performance": 96}}
    assert found["host.shm"].evidence["size_gib"] == 1000.0
    assert found["host.root_volume"].evidence["used_pct"] == 40.0
    assert found["host.root_volume"].evidence["size_gib"] == 100.0
    assert found["host.iowait"].evidence == {"iowait_pct": 1.0, "interval_jiffies": 1000}
    assert found["host.io_pressure"].evidence["some_avg10"] == 0.5
    assert found["host.memlock"].evidence == {"memlock": "unlimited"}
    assert ctx.collection_findings == []


@pytest.mark.parametrize(
    ("override", "check", "evidence", "handoff", "section"),
    [
        (
            {"cpu-governor": (governors(92, 4), 0)},
            "host.cpu_governor",
            {
                "governors": {"performance": 92, "powersave": 4},
                "cpus_not_performance": ["cpu92", "cpu93", "cpu94", "cpu95"],
            },
            None,
            RunbookSection.NCCL,
        ),
        ({"df": (df(shm_gib=8), 0)}, "host.shm", {"size_gib": 8.0}, Handoff.NODE_I, RunbookSection.RESOURCES),
        (
            {"df": (df(root_used_pct=95), 0)},
            "host.root_volume",
            {"used_pct": 95.0},
            Handoff.NODE_I,
            RunbookSection.RESOURCES,
        ),
        (
            {"cpu-stat": (cpu_stat(35), 0)},
            "host.iowait",
            {"iowait_pct": 35.0},
            None,
            RunbookSection.FILE_SYSTEM,
        ),
        (
            {"io-pressure": (psi(40), 0)},
            "host.io_pressure",
            {"some_avg10": 40.0},
            None,
            RunbookSection.FILE_SYSTEM,
        ),
        ({"memlock": ("64\n", 0)}, "host.memlock", {"memlock_kib": 64}, Handoff.NCCL, RunbookSection.NCCL),
    ],
)
def test_each_planted_fault_is_exactly_its_concern(override, check, evidence, handoff, section):
    # Given a healthy node with one fault planted
    findings = host.evaluate(context(**override))
    # Then exactly that check is a CONCERN, with the measured value, hand-off and runbook section
    (concern,) = [f for f in findings if f.severity is Severity.CONCERN]
    assert concern.check == check
    assert {k: concern.evidence[k] for k in evidence} == evidence
    assert concern.handoff == handoff
    assert concern.section is section
    assert concern.threshold and concern.next_step


def test_all_faults_at_once():
    ctx = context(
        **{
            "cpu-governor": (governors(0, 8), 0),
            "df": (df(root_used_pct=95, shm_gib=8), 0),
            "cpu-stat": (cpu_stat(35), 0),
            "io-pressure": (psi(40), 0),
            "memlock": ("64\n", 0),
        }
    )
    found = by_check(host.evaluate(ctx))
    assert {c: f.severity for c, f in found.items()} == dict.fromkeys(CHECKS, Severity.CONCERN)
    assert found["host.cpu_governor"].summary.startswith("8 of 8 CPU(s) not on the performance governor")


def test_boundaries_follow_the_catalog():
    # root >= 90% is a concern; iowait and PSI must exceed their limits
    found = by_check(host.evaluate(context(df=(df(root_used_pct=90), 0), **{"cpu-stat": (cpu_stat(20), 0)})))
    assert found["host.root_volume"].severity is Severity.CONCERN
    assert (
        found["host.iowait"].severity is Severity.OK and found["host.iowait"].evidence["iowait_pct"] == 20.0
    )


def test_shm_not_mounted():
    found = by_check(host.evaluate(context(df=(df(shm=False), 0))))
    assert found["host.shm"].severity is Severity.CONCERN
    assert found["host.shm"].summary == "/dev/shm is not mounted"
    assert found["host.shm"].evidence["mountpoints"] == ["/", "/opt/dlami/nvme"]


def test_real_eks_pod_df_has_a_64_mib_shm():
    # Given the real `df` of a HyperPod EKS pod (/dev/shm is the container default 64 MiB), prompts included
    text = (REAL / "iostat-proc/df_1k-blocks_hyperpod-eks-pod_emptydir-nvme_with-prompt.txt").read_text()
    found = by_check(host.evaluate(context(df=(text, 0))))
    assert found["host.shm"].severity is Severity.CONCERN
    assert found["host.shm"].evidence["size_gib"] == 0.06
    assert (
        found["host.root_volume"].severity is Severity.OK
        and found["host.root_volume"].evidence["used_pct"] == 2.0
    )


def test_real_head_node_df_h():
    text = (REAL / "iostat-proc/df-h_hyperpod-slurm-headnode_fsx-lustre_opt-sagemaker.txt").read_text()
    found = by_check(host.evaluate(context(df=(text, 0))))
    assert found["host.shm"].severity is Severity.CONCERN and found["host.shm"].evidence["size_gib"] == 3.8
    assert found["host.root_volume"].evidence == {
        "used_pct": 41.0,
        "size_gib": 146.0,
        "avail_gib": 87.0,
        "filesystem": "/dev/root",
    }


def test_real_governor_outputs_drive_the_rule():
    mixed = (
        REAL / "cpu-governor/scaling_governor_grep_performance-then-ondemand_s18_excerpt.txt"
    ).read_text()
    found = by_check(host.evaluate(context(**{"cpu-governor": (mixed, 0)})))
    assert found["host.cpu_governor"].severity is Severity.CONCERN
    assert found["host.cpu_governor"].evidence["governors"] == {"ondemand": 1, "performance": 5}
    assert found["host.cpu_governor"].evidence["cpus_not_performance"] == ["cpu0"]
    pcc = (
        REAL / "cpu-governor/cpupower-frequency-info_pcc-cpufreq_performance_boost_insights-doc.txt"
    ).read_text()
    found = by_check(host.evaluate(context(**{"cpu-governor": (pcc, 0)})))
    assert found["host.cpu_governor"].severity is Severity.OK
    assert found["host.cpu_governor"].evidence["driver"] == "pcc-cpufreq"


def test_vm_without_cpufreq_or_psi_is_info():
    no_cpufreq = "cat: '/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor': No such file or directory\n"
    no_psi = "cat: /proc/pressure/io: Operation not supported\n"
    found = by_check(host.evaluate(context(**{"cpu-governor": (no_cpufreq, 1), "io-pressure": (no_psi, 1)})))
    assert found["host.cpu_governor"].severity is Severity.INFO
    assert "not present" in found["host.cpu_governor"].summary
    assert found["host.io_pressure"].severity is Severity.INFO
    assert found["host.io_pressure"].evidence["message"] == no_psi.strip()


def test_absent_sections_are_info_not_present():
    ctx = NodeContext(parse_container(render_container([("meta", "hostname=h\n", 0)]), "h.txt"))
    found = by_check(host.evaluate(ctx))
    assert {c: f.severity for c, f in found.items()} == dict.fromkeys(CHECKS, Severity.INFO)
    assert all("not present" in f.summary for f in found.values())


def test_unparseable_cpu_stat_is_a_collection_finding_only():
    ctx = context(**{"cpu-stat": ("cpu  1 2 3 4 5\n", 0)})
    found = by_check(host.evaluate(ctx))
    assert "host.iowait" not in found
    (problem,) = ctx.collection_findings
    assert problem.evidence["section"] == "cpu-stat" and "two" in problem.evidence["reason"]


def test_thresholds_are_read_from_the_context():
    ctx = context(df=(df(shm_gib=8), 0))
    ctx.thresholds = Thresholds(shm_min_gib=4)
    assert by_check(host.evaluate(ctx))["host.shm"].severity is Severity.OK


# ------------------------------------------------------------------------------- the finding contract

#: What each host finding says, reviewed field by field: (check, severity, section, summary,
#: evidence, threshold, handoff) for a clean node and for one with every host fault planted.
CONTRACT_HEALTHY = [
    (
        "host.cpu_governor",
        "OK",
        "A",
        "all 96 CPU(s) on the performance governor",
        {"cpus": 96, "governors": {"performance": 96}},
        "every CPU on the `performance` governor",
        None,
    ),
    (
        "host.shm",
        "OK",
        "I",
        "/dev/shm is 1000 GiB",
        {"size_gib": 1000.0, "used_pct": 0.0, "filesystem": "tmpfs"},
        "/dev/shm mounted and >= 16 GiB",
        None,
    ),
    (
        "host.root_volume",
        "OK",
        "I",
        "root volume 40% used",
        {"used_pct": 40.0, "size_gib": 100.0, "avail_gib": 60.0, "filesystem": "/dev/nvme0n1p1"},
        "/ used < 90%",
        None,
    ),
    (
        "host.iowait",
        "OK",
        "B",
        "iowait 1%",
        {"iowait_pct": 1.0, "interval_jiffies": 1000},
        "iowait <= 20%",
        None,
    ),
    (
        "host.io_pressure",
        "OK",
        "B",
        "PSI io some avg10 0.5",
        {"some_avg10": 0.5, "some_avg60": 1.0, "some_avg300": 0.5, "full_avg10": 0.1},
        "PSI io some avg10 <= 20",
        None,
    ),
    (
        "host.memlock",
        "OK",
        "A",
        "locked-memory limit unlimited",
        {"memlock": "unlimited"},
        "ulimit -l unlimited",
        None,
    ),
]
CONTRACT_FAULTY = [
    (
        "host.cpu_governor",
        "CONCERN",
        "A",
        "2 of 96 CPU(s) not on the performance governor (powersave x2)",
        {
            "cpus": 96,
            "governors": {"performance": 94, "powersave": 2},
            "cpus_not_performance": ["cpu94", "cpu95"],
        },
        "every CPU on the `performance` governor",
        None,
    ),
    (
        "host.shm",
        "CONCERN",
        "I",
        "/dev/shm is 8 GiB, below 16 GiB",
        {"size_gib": 8.0, "used_pct": 0.0, "filesystem": "tmpfs"},
        "/dev/shm mounted and >= 16 GiB",
        "hyperpod-node-debugger § I",
    ),
    (
        "host.root_volume",
        "CONCERN",
        "I",
        "root volume 95% used (5 GiB free)",
        {"used_pct": 95.0, "size_gib": 100.0, "avail_gib": 5.0, "filesystem": "/dev/nvme0n1p1"},
        "/ used < 90%",
        "hyperpod-node-debugger § I",
    ),
    (
        "host.iowait",
        "CONCERN",
        "B",
        "iowait 30% over the sampled interval",
        {"iowait_pct": 30.0, "interval_jiffies": 1000},
        "iowait <= 20%",
        None,
    ),
    (
        "host.io_pressure",
        "CONCERN",
        "B",
        "tasks stalled on I/O 35.5% of the last 10 s (PSI io some avg10)",
        {"some_avg10": 35.5, "some_avg60": 1.0, "some_avg300": 0.5, "full_avg10": 0.1},
        "PSI io some avg10 <= 20",
        None,
    ),
    (
        "host.memlock",
        "CONCERN",
        "A",
        "locked-memory limit is 65536 KiB, not unlimited: RDMA memory registration can fail",
        {"memlock_kib": 65536},
        "ulimit -l unlimited",
        "hyperpod-nccl",
    ),
]
FAULTS = {
    "df": (df(root_used_pct=95, shm_gib=8), 0),
    "cpu-stat": (cpu_stat(30), 0),
    "io-pressure": (psi(35.5), 0),
    "memlock": ("65536\n", 0),
    "cpu-governor": (governors(94, 2), 0),
}


def _contract(findings: list[Finding]) -> list[tuple]:
    return [
        (f.check, f.severity.value, f.section.value, f.summary, f.evidence, f.threshold, f.handoff)
        for f in findings
    ]


def test_healthy_host_findings_say_exactly_what_was_checked():
    findings = host.evaluate(context())
    assert _contract(findings) == CONTRACT_HEALTHY
    assert all(f.next_step is None for f in findings)


def test_every_host_fault_says_what_it_found_and_what_to_do():
    findings = host.evaluate(context(**FAULTS))
    assert _contract(findings) == CONTRACT_FAULTY
    first_words = [f.next_step.split()[0] for f in findings]
    assert first_words == ["Frequency", "NCCL", "The", "CPUs", "Something", "This"]


def test_missing_host_sections_are_info_naming_what_is_missing():
    # Given a node whose snapshot has none of the host sections
    text = render_container([("meta", "hostname=ip-10-1-2-3\n", 0)])
    findings = host.evaluate(NodeContext(parse_container(text, "node.txt"), Thresholds()))
    assert [(f.check, f.severity, f.summary) for f in findings] == [
        ("host.cpu_governor", Severity.INFO, "CPU frequency governor: not present (section not in snapshot)"),
        ("host.shm", Severity.INFO, "/dev/shm size: not present (section not in snapshot)"),
        ("host.root_volume", Severity.INFO, "root volume usage: not present (section not in snapshot)"),
        ("host.iowait", Severity.INFO, "iowait (/proc/stat): not present (section not in snapshot)"),
        ("host.io_pressure", Severity.INFO, "I/O pressure (PSI): not present (section not in snapshot)"),
        (
            "host.memlock",
            Severity.INFO,
            "locked-memory limit (ulimit -l): not present (section not in snapshot)",
        ),
    ]


NEXT_STEPS = {
    "host.cpu_governor": (
        "Frequency scaling makes this node's data loading and kernel launches slower than its peers'. "
        "Operator, on the node: `sudo cpupower frequency-set -g performance` (persist it in the lifecycle "
        "script)."
    ),
    "host.shm": (
        "NCCL and DataLoader workers use /dev/shm; a small one fails or slows them. Mount a larger "
        "tmpfs (for pods: an emptyDir with medium Memory on /dev/shm)."
    ),
    "host.root_volume": (
        "The root volume is a fixed 100 GiB: move containers, caches and checkpoints to "
        "/opt/dlami/nvme or /fsx (`sudo du -xh / --max-depth=2 | sort -h | tail`)."
    ),
    "host.iowait": (
        "CPUs are waiting on storage: compare with the file system's throughput against its "
        "provisioned level (fs.throughput) — saturated means scale it, headroom means the I/O pattern is "
        "inefficient. `iostat -x 1 5` names the busy device."
    ),
    "host.io_pressure": (
        "Something on this node waits on storage: check the file system's throughput against its "
        "provisioned level (fs.throughput) and the local disks with `iostat -x 1 5`."
    ),
    "host.memlock": (
        "This is the limit of the collector's root shell; check the training processes too "
        "(`grep 'locked memory' /proc/<pid>/limits`) and set it unlimited (LimitMEMLOCK=infinity for slurmd, "
        "`--ulimit memlock=-1` for containers)."
    ),
}


def test_every_host_fault_carries_its_whole_next_step():
    findings = host.evaluate(context(**FAULTS))
    assert {f.check: f.next_step for f in findings} == NEXT_STEPS


def test_vm_shapes_and_a_df_without_root_or_shm_say_so_exactly():
    no_cpufreq = "cat: '/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor': No such file or directory\n"
    no_psi = "cat: /proc/pressure/io: Operation not supported\n"
    only_nvme = (
        "Filesystem     1024-blocks      Used  Available Capacity Mounted on\n"
        "/dev/md0 100 1 99 1% /opt/dlami/nvme\n"
    )
    found = {
        f.check: f
        for f in host.evaluate(
            context(**{"cpu-governor": (no_cpufreq, 1), "io-pressure": (no_psi, 1), "df": (only_nvme, 0)})
        )
    }
    governor, shm, root, psi_ = (
        found[c] for c in ("host.cpu_governor", "host.shm", "host.root_volume", "host.io_pressure")
    )
    assert (governor.severity, governor.summary, governor.evidence) == (
        Severity.INFO,
        "CPU frequency governor: not present (no cpufreq on this node; typical of VMs, where the hypervisor "
        "controls the frequency)",
        {"section": "cpu-governor", "message": no_cpufreq.strip()},
    )
    assert (shm.severity, shm.summary, shm.evidence, shm.threshold, shm.next_step, shm.handoff) == (
        Severity.CONCERN,
        "/dev/shm is not mounted",
        {"mountpoints": ["/opt/dlami/nvme"]},
        "/dev/shm mounted and >= 16 GiB",
        NEXT_STEPS["host.shm"],
        Handoff.NODE_I.value,
    )
    assert (root.check, root.severity, root.section, root.summary, root.evidence) == (
        "host.root_volume",
        Severity.INFO,
        RunbookSection.RESOURCES,
        "root volume usage: not present (/ not in the df output)",
        {"mountpoints": ["/opt/dlami/nvme"]},
    )
    assert (psi_.severity, psi_.summary, psi_.evidence) == (
        Severity.INFO,
        "I/O pressure (PSI): not present (kernel without /proc/pressure/io)",
        {"section": "io-pressure", "message": no_psi.strip()},
    )


def test_slow_cpus_are_listed_in_numeric_order():
    # Given cpu2, cpu10 and cpu11 on powersave (glob order would put cpu10 before cpu2)
    text = "".join(f"cpu{n} {'powersave' if n in (2, 10, 11) else 'performance'}\n" for n in range(12))
    (finding, *_) = host.evaluate(context(**{"cpu-governor": (text, 0)}))
    assert finding.evidence["cpus_not_performance"] == ["cpu2", "cpu10", "cpu11"]
    assert finding.summary == "3 of 12 CPU(s) not on the performance governor (powersave x3)"
