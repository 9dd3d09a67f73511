"""collector.sh's oom section keeps the memory-cgroup OOM lines, whatever their case.

Why: the kernel writes a cgroup kill as `Memory cgroup out of memory: Kill(ed) process N (name)`
(lower-case "out of memory"); a case-sensitive `Out of memory` grep dropped exactly the line that
names the victim. The two captures are whole kernel OOM reports from the kernel mailing lists
(SOURCES.md): Tejun Heo's 4.18 cgroup2 dump (no `oom-kill:` summary line, so the victim is only
in the lower-case line) and Michal Hocko's 5.2 memcg report.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_collector import REAL, _collect, fake_node  # noqa: F401  (fake_node is a fixture)

from hyperpod_perf.parse.dmesg import parse_oom
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.gpu.kernel_log import check_oom

CGROUP2_418 = "oom/linux-mm-2018-08-06_memcg-cgroup2-oom-dump_stress_4.18.txt"
MEMCG_52 = "oom/lkml-2019-08-02_memcg-oom-report_leaker_5.2.txt"


@pytest.mark.parametrize(
    ("capture", "victim"),
    [
        (CGROUP2_418, {"pid": 1990, "process": "stress", "cgroup": True}),
        (MEMCG_52, {"pid": 23793, "process": "leaker", "cgroup": True}),
    ],
)
def test_oom_section_keeps_the_cgroup_kill_line_and_names_the_victim(
    fake_node: dict[str, Path],  # noqa: F811  (the fixture imported above)
    capture: str,
    victim: dict,
) -> None:
    # Given a node whose dmesg holds a real memory-cgroup OOM report
    _, snapshot = _collect(fake_node, FAKE_DMESG_FILE=capture)
    kept = snapshot.sections["oom"].text.splitlines()
    # Then the oom section is exactly the report's lines matching "out of memory" / "oom-kill" in any case
    report = (REAL / capture).read_text(encoding="utf-8").splitlines()
    assert kept == [line for line in report if re.search(r"out of memory|oom-kill", line, re.IGNORECASE)]
    assert any("Memory cgroup out of memory: Kill" in line for line in kept)
    # And the rule names the cgroup victim from those lines
    ctx = NodeContext(snapshot)
    section = ctx.section("oom", parse_oom)
    (finding,) = check_oom(ctx, section)
    assert finding.evidence["victims"] == [victim]


def test_a_case_sensitive_grep_would_have_lost_the_4_18_victim() -> None:
    # Given the 4.18 report filtered the old way (`Out of memory|oom-kill`, case-sensitive)
    report = (REAL / CGROUP2_418).read_text(encoding="utf-8").splitlines()
    old = [line for line in report if re.search(r"Out of memory|oom-kill", line)]
    # Then only the `invoked oom-killer` line was left: no victim to name
    assert len(old) == 1 and "invoked oom-killer" in old[0]
    assert [e.pid for e in parse_oom("\n".join(old))] == [None]
