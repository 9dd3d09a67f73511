"""host.cpu_governor and host.root_volume details the other host tests leave open (reviewed): the CPUs
not on `performance` listed in numeric order (cpu2 before cpu10, whatever order the kernel's files were
read in), every other governor named in the summary, and the root volume's sizes rounded to 0.1 GiB.

Inputs are SYNTHETIC `cpuN governor` lines and `df -kP` rows in the collector's formats.
"""

from __future__ import annotations

from test_host_rules import by_check, context

from hyperpod_perf.rules import host

GIB_KIB = 1024 * 1024


def test_cpus_not_on_performance_are_listed_in_numeric_order_and_each_governor_named() -> None:
    # Given cpu10 (powersave) read before cpu2 (ondemand), and cpu0/cpu1 on performance
    lines = "cpu10 powersave\ncpu0 performance\ncpu2 ondemand\ncpu1 performance\n"
    found = by_check(host.evaluate(context(**{"cpu-governor": (lines, 0)})))["host.cpu_governor"]
    # Then the list is in CPU-number order, and both other governors are named with their counts (by name)
    assert found.evidence["cpus_not_performance"] == ["cpu2", "cpu10"]
    assert found.summary == "2 of 4 CPU(s) not on the performance governor (ondemand x1, powersave x1)"


def test_root_volume_sizes_are_rounded_to_a_tenth_of_a_gib() -> None:
    # Given a root volume of 100.26 GiB with 60.15 GiB used (40.11 GiB free, 60 %)
    size, used = int(100.26 * GIB_KIB), int(60.15 * GIB_KIB)
    df = (
        "Filesystem     1024-blocks      Used  Available Capacity Mounted on\n"
        f"/dev/nvme0n1p1 {size} {used} {size - used} 60% /\n"
        f"tmpfs {1000 * GIB_KIB} 0 {1000 * GIB_KIB} 0% /dev/shm\n"
    )
    found = by_check(host.evaluate(context(df=(df, 0))))["host.root_volume"]
    assert (found.evidence["size_gib"], found.evidence["avail_gib"]) == (100.3, 40.1)
