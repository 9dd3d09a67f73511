"""The kernel-log findings field by field (reviewed): gpu.xid per (kind, code, PCI) group — Xid with
and without a GPU index, Xid 154's recovery action, the bare "fallen off the bus" message alone and
joined to its Xid 79, NVSwitch SXid, lines in an unknown format — and host.oom (victims, the cgroup
flag, the OOM killer without a victim), plus the Xid action catalog's own rules.

The Xid / fallen-off-the-bus lines are the real ones of tests/fixtures/real/xid (sources in SOURCES.md);
the SXid line is the driver's documented format (no real SXid sample in the corpus, as in
tests/unit/parse/test_dmesg.py); the OOM lines are the kernel's printk formats.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.parse.dmesg import EventKind, GpuKernelEvent, parse_gpu_kernel_log, parse_oom
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.gpu import GREP_RC, XID_CATALOG, common, kernel_log

REAL = Path(__file__).parents[2] / "fixtures" / "real"
G = "hyperpod-node-debugger § G"
I = "hyperpod-node-debugger § I"  # noqa: E741 - the runbook section's name
XID_THRESHOLD = "any Xid / SXid / fallen-off-the-bus line -> CONCERN"
OOM_THRESHOLD = "any OOM kill in the kernel log -> CONCERN"

XID120 = (
    "[Sat Jul 11 05:52:47 2026] NVRM: Xid (PCI:0000:2a:00): 120, GSP kernel exception: load access page "
    "fault (cause:0xd) @ pc:0xffffffff9300188a, partition:4#0"
)
XID120_LATER = XID120.replace("05:52:47", "05:53:00")
XID154 = (
    "[Sat Jul 11 05:52:47 2026] NVRM: Xid (PCI:0000:2a:00): 154, GPU recovery action changed from 0x0 "
    "(None) to 0x1 (GPU Reset Required)"
)
SXID = "[ 8123.456789] nvidia-nvswitch3: SXid (PCI:0000:c5:00.0): 24007, Fatal, Link 45 sourcetrack timeout"
GARBLED = "[Mon Jan  1 00:00:00 2024] NVRM: Xid (PCI:0000:53:00): garbled"


def real(path: str) -> str:
    return (REAL / path).read_text(encoding="utf-8")


def run_xid(body: str | None, rc: int = 0, gpu_by_bus: dict[str, int] | None = None) -> list[dict]:
    sections = [("meta", "hostname=gpu-7\ninstance_type=ml.p5.48xlarge\n", 0)]
    if body is not None:
        sections.append(("xid", body, rc))
    ctx = NodeContext(parse_container(render_container(sections), "n.txt"))
    data = ctx.section("xid", parse_gpu_kernel_log, accept_rc=GREP_RC)
    return [f.model_dump(mode="json") for f in kernel_log.check_xid(ctx, data, gpu_by_bus or {})]


def run_oom(body: str | None, rc: int = 0) -> list[dict]:
    sections = [("meta", "hostname=gpu-7\n", 0)]
    if body is not None:
        sections.append(("oom", body, rc))
    ctx = NodeContext(parse_container(render_container(sections), "n.txt"))
    return [
        f.model_dump(mode="json")
        for f in kernel_log.check_oom(ctx, ctx.section("oom", parse_oom, accept_rc=GREP_RC))
    ]


def concern(summary: str, evidence: dict, next_step: str, *, check="gpu.xid", section="G", handoff=G) -> dict:
    return {
        "node": "gpu-7",
        "check": check,
        "severity": "CONCERN",
        "section": section,
        "summary": summary,
        "evidence": evidence,
        "threshold": XID_THRESHOLD if check == "gpu.xid" else OOM_THRESHOLD,
        "next_step": next_step,
        "handoff": handoff,
    }


def action(key: str) -> tuple[str, str]:
    entry = XID_CATALOG._actions[key]
    return entry["summary"], entry["next_step"]


# ------------------------------------------------------------------------------ gpu.xid


def test_xid_groups_with_gpu_index_recovery_action_sxid_and_unknown_lines() -> None:
    # Given Xid 120 twice and Xid 154 once on GPU 1 (PCI 0000:2a:00), an NVSwitch SXid, a garbled Xid
    # line, grep exiting 0
    body = "\n".join([XID120, XID154, XID120_LATER, SXID, GARBLED]) + "\n"
    reset_summary, reset_next = action("reset_gpu")
    recovery_summary, recovery_next = action("follow_recovery_action")
    sxid_summary, sxid_next = action("lookup_sxid")
    common_fields = {"pids": [], "processes": []}
    assert run_xid(body, gpu_by_bus={"0000:2a:00": 1}) == [
        concern(
            "Xid 120 (GSP error) on GPU 1 (PCI 0000:2a:00) x2: reset the GPU",
            {
                "kind": "xid",
                "code": 120,
                "title": "GSP error",
                "pci": "0000:2a:00",
                "gpu": 1,
                "count": 2,
                "first_line": XID120,
                "last_line": XID120_LATER,
                "first_time": "Sat Jul 11 05:52:47 2026",
                "last_time": "Sat Jul 11 05:53:00 2026",
                **common_fields,
                "action": "reset_gpu",
                "action_summary": reset_summary,
            },
            reset_next,
        ),
        concern(
            "Xid 154 (GPU recovery action changed) on GPU 1 (PCI 0000:2a:00) x1: "
            "driver asks for 0x1 (GPU Reset Required)",
            {
                "kind": "xid",
                "code": 154,
                "title": "GPU recovery action changed",
                "pci": "0000:2a:00",
                "gpu": 1,
                "count": 1,
                "first_line": XID154,
                "last_line": XID154,
                "first_time": "Sat Jul 11 05:52:47 2026",
                "last_time": "Sat Jul 11 05:52:47 2026",
                **common_fields,
                "action": "follow_recovery_action",
                "action_summary": recovery_summary,
                "recovery_action": ["0x1 (GPU Reset Required)"],
            },
            f"The driver asks for: 0x1 (GPU Reset Required). {recovery_next}",
        ),
        concern(
            f"SXid 24007 on PCI 0000:c5:00 x1: {sxid_summary}",
            {
                "kind": "sxid",
                "code": 24007,
                "title": None,
                "pci": "0000:c5:00",
                "gpu": None,
                "count": 1,
                "first_line": SXID,
                "last_line": SXID,
                "first_time": "8123.456789",
                "last_time": "8123.456789",
                **common_fields,
                "action": "lookup_sxid",
                "action_summary": sxid_summary,
                "severity": ["Fatal"],
                "switch": ["nvidia-nvswitch3"],
            },
            sxid_next,
        ),
        concern(
            "1 Xid/SXid line(s) in an unknown format",
            {"count": 1, "lines": [GARBLED]},
            common.NEXT_XID_UNPARSED,
        ),
    ]


def test_bare_fallen_off_the_bus_message_is_its_own_concern_with_the_device_id() -> None:
    # Given the NVSentinel#155 dmesg: "The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) ... has fallen
    # off the bus" with no Xid at all, on a GPU the query does not list (it vanished)
    line = (
        "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has "
        "fallen off the bus and is not responding to commands."
    )
    summary, next_step = action("restart_node")
    assert run_xid(real("xid/nvsentinel155_dmesg-raw_fallen-off-bus_no-xid_570.158.01.txt"), rc=0) == [
        concern(
            f"GPU fallen off the bus (no Xid) (GPU has fallen off the bus) on PCI 0000:b3:00 x1: {summary}",
            {
                "kind": "fallen_off_bus",
                "code": None,
                "title": "GPU has fallen off the bus",
                "pci": "0000:b3:00",
                "gpu": None,
                "count": 1,
                "first_line": line,
                "last_line": line,
                "first_time": "1843.308145",
                "last_time": "1843.308145",
                "pids": [],
                "processes": [],
                "action": "restart_node",
                "action_summary": summary,
                "device_id": ["10de:26b5"],
            },
            next_step,
        )
    ]


def test_fallen_off_the_bus_line_joins_the_xid79_of_its_gpu_whichever_comes_first() -> None:
    # Given the real Xid 79 + bare message + Xid 154 lines, and the same with the bare message first
    text = real("xid/no-prefix_xid79-154-os-reboot_610.43.02.txt")
    lines = text.splitlines()
    reordered = "\n".join([lines[1], lines[0], *lines[2:]]) + "\n"
    summary, next_step = action("restart_node")
    expected = concern(
        f"Xid 79 (GPU has fallen off the bus) on GPU 0 (PCI 0000:01:00) x1: {summary}",
        {
            "kind": "xid",
            "code": 79,
            "title": "GPU has fallen off the bus",
            "pci": "0000:01:00",
            "gpu": 0,
            "count": 1,
            "first_line": "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.",
            "last_line": "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.",
            "first_time": None,
            "last_time": None,
            "pids": [],
            "processes": [],
            "action": "restart_node",
            "action_summary": summary,
            "fallen_off_bus_lines": 1,
        },
        next_step,
    )
    for body in (text, reordered):
        xid79, xid154 = run_xid(body, gpu_by_bus={"0000:01:00": 0})
        assert xid79 == expected
        assert (xid154["evidence"]["code"], xid154["evidence"]["recovery_action"]) == (
            154,
            ["0x2 (OS Reboot)"],
        )


def test_xid79_alone_with_its_bare_bus_messages_counts_them() -> None:
    # Given the real Xid 79 and bare message of one GPU (no other Xid on that PCI), the bare message twice
    lines = real("xid/no-prefix_xid79-154-os-reboot_610.43.02.txt").splitlines()
    (result,) = run_xid("\n".join([lines[0], lines[1], lines[1]]) + "\n")
    assert (
        result["evidence"]["code"],
        result["evidence"]["count"],
        result["evidence"]["fallen_off_bus_lines"],
    ) == (
        79,
        1,
        2,
    )


def test_bare_bus_message_joins_only_an_xid79_not_another_xid_of_that_gpu() -> None:
    # Given Xid 43 and a bare "fallen off the bus" message on the same PCI, no Xid 79
    body = (
        "NVRM: Xid (PCI:0000:02:00): 43, pid=1, name=python, Ch 00000008\n"
        "NVRM: GPU 0000:02:00.0: GPU has fallen off the bus.\n"
    )
    findings = run_xid(body)
    assert [(f["evidence"]["kind"], f["evidence"]["code"], f["evidence"]["count"]) for f in findings] == [
        ("xid", 43, 1),
        ("fallen_off_bus", None, 1),
    ]
    assert ["fallen_off_bus_lines" in f["evidence"] for f in findings] == [False, False]


def test_fallen_off_line_of_another_gpu_is_not_joined_to_an_xid79() -> None:
    body = (
        "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n"
        "NVRM: GPU 0000:02:00.0: GPU has fallen off the bus.\n"
    )
    findings = run_xid(body)
    assert [(f["evidence"]["kind"], f["evidence"]["pci"]) for f in findings] == [
        ("xid", "0000:01:00"),
        ("fallen_off_bus", "0000:02:00"),
    ]
    assert "fallen_off_bus_lines" not in findings[0]["evidence"]


def test_pids_and_processes_are_distinct_in_order() -> None:
    # Given the akash dmesg -T: Xid 43 twice on 00:05 from two pids of pt_main_thread
    first, *_ = run_xid(real("xid/akash_dmesg-T_xid43-31-94_535.183.01.txt"))
    assert (first["evidence"]["pids"], first["evidence"]["processes"], first["evidence"]["count"]) == (
        [1045242, 1084984],
        ["pt_main_thread"],
        2,
    )
    assert "recovery_action" not in first["evidence"] and "device_id" not in first["evidence"]
    assert "severity" not in first["evidence"] and "switch" not in first["evidence"]


def test_unknown_xid_code_gets_the_lookup_action() -> None:
    line = "[Sat Jul 11 05:52:47 2026] NVRM: Xid (PCI:0000:2a:00): 999, something new"
    summary, next_step = action("lookup")
    (result,) = run_xid(line + "\n")
    assert (
        result["summary"],
        result["evidence"]["title"],
        result["evidence"]["action"],
        result["next_step"],
    ) == (
        f"Xid 999 on PCI 0000:2a:00 x1: {summary}",
        None,
        "lookup",
        next_step,
    )


def test_only_unknown_format_lines_are_listed_up_to_five() -> None:
    lines = [GARBLED.replace("53", f"5{i}") for i in range(7)]
    assert run_xid("\n".join(lines) + "\n") == [
        concern(
            "7 Xid/SXid line(s) in an unknown format",
            {"count": 7, "lines": lines[:5]},
            common.NEXT_XID_UNPARSED,
        )
    ]


def test_no_xid_lines_is_ok_and_absent_or_timed_out_is_info() -> None:
    ok = {
        "node": "gpu-7",
        "check": "gpu.xid",
        "severity": "OK",
        "section": "G",
        "summary": "no Xid / SXid lines in the kernel log",
        "evidence": {"events": 0},
        "threshold": XID_THRESHOLD,
        "next_step": None,
        "handoff": G,
    }
    assert run_xid("", rc=1) == [ok]  # grep found nothing
    assert run_xid("", rc=2) == [{**ok, "evidence": {"events": 0, "section_rc": 2}}]
    (absent,) = run_xid(None)
    assert (absent["severity"], absent["summary"]) == (
        "INFO",
        "Xid / SXid kernel log lines: not present (section not in snapshot)",
    )
    (timeout,) = run_xid("", rc=124)
    assert (timeout["summary"], timeout["next_step"]) == (
        "Xid / SXid kernel log lines: not evaluated, the command timed out (rc=124)",
        common.NEXT_TIMEOUT,
    )


# ------------------------------------------------------------------------------ the Xid action catalog


def _event(kind: EventKind, code: int | None) -> GpuKernelEvent:
    return GpuKernelEvent(kind, code, None, None, None, None, None, "", None, "")


def test_catalog_maps_kinds_and_codes_to_actions_with_titles() -> None:
    assert XID_CATALOG.for_event(_event(EventKind.XID, 63)) == kernel_log.XidAction(
        "reset_to_activate_remap",
        *action("reset_to_activate_remap"),
        "ECC page retirement or row remapping recording event",
    )
    assert XID_CATALOG.for_event(_event(EventKind.XID, 7)) == kernel_log.XidAction(
        "lookup", *action("lookup")
    )
    assert XID_CATALOG.for_event(_event(EventKind.SXID, 63)) == kernel_log.XidAction(
        "lookup_sxid", *action("lookup_sxid")
    )
    assert XID_CATALOG.for_event(_event(EventKind.FALLEN_OFF_BUS, None)) == kernel_log.XidAction(
        "restart_node", *action("restart_node"), "GPU has fallen off the bus"
    )


def _catalog_data(**override: object) -> dict:
    data = {
        "actions": {"a": {"summary": "s", "next_step": "n"}},
        "codes": {"1": {"action": "a"}},
        "unknown_xid": "a",
        "sxid": "a",
        "fallen_off_bus": "a",
    }
    return {**data, **override}


@pytest.mark.parametrize(
    ("override", "missing"),
    [
        ({"codes": {"1": {"action": "b"}}}, "b"),
        ({"unknown_xid": "c"}, "c"),
        ({"sxid": "d"}, "d"),
        ({"fallen_off_bus": "e"}, "e"),
    ],
)
def test_catalog_refuses_an_action_used_but_not_defined(override: dict, missing: str) -> None:
    with pytest.raises(ValueError, match=f"xid_actions.json: action '{missing}' is used but not defined"):
        kernel_log.XidCatalog(_catalog_data(**override))


def test_a_valid_catalog_without_titles_answers_with_none() -> None:
    catalog = kernel_log.XidCatalog(_catalog_data())
    assert catalog.codes == {"1": "a"}
    assert catalog.for_event(_event(EventKind.XID, 1)) == kernel_log.XidAction("a", "s", "n", None)
    assert kernel_log.load_xid_catalog().codes == XID_CATALOG.codes


# ------------------------------------------------------------------------------ host.oom

KILLED_HOST = (
    "[Tue Mar  5 10:00:00 2024] Out of memory: Killed process 2481 (python3) total-vm:812044kB, "
    "anon-rss:518420kB, file-rss:1240kB, shmem-rss:0kB, UID:0 pgtables:1300kB oom_score_adj:0"
)
SUMMARY_2481 = (
    "[Tue Mar  5 10:00:00 2024] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
    "mems_allowed=0-1,global_oom,task_memcg=/,task=python3,pid=2481,uid=0"
)
KILLED_CGROUP = (
    "[Tue Mar  5 10:05:00 2024] Memory cgroup out of memory: Killed process 4182 (worker) "
    "total-vm:812044kB, anon-rss:518420kB, file-rss:1240kB, shmem-rss:0kB"
)
INVOKED = (
    "[Tue Mar  5 10:04:59 2024] worker invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), "
    "order=0, oom_score_adj=0"
)


def test_oom_kills_are_one_concern_naming_each_victim_once() -> None:
    # Given the host-wide kill of python3 (summary + killed line: one victim) and a cgroup kill of
    # worker announced by its "invoked oom-killer" line, grep exiting 0
    body = "\n".join([SUMMARY_2481, KILLED_HOST, INVOKED, KILLED_CGROUP]) + "\n"
    assert run_oom(body) == [
        concern(
            "2 process(es) OOM-killed: python3 (pid 2481), worker (pid 4182)",
            {
                "kills": 2,
                "victims": [
                    {"pid": 2481, "process": "python3", "cgroup": False},
                    {"pid": 4182, "process": "worker", "cgroup": True},
                ],
                "oom_lines": 4,
                "first_line": SUMMARY_2481,
                "last_line": KILLED_CGROUP,
                "first_time": "Tue Mar  5 10:00:00 2024",
                "last_time": "Tue Mar  5 10:05:00 2024",
            },
            common.NEXT_OOM,
            check="host.oom",
            section="I",
            handoff=I,
        )
    ]


def test_a_cgroup_kill_stays_a_cgroup_kill_whichever_line_says_so_first() -> None:
    # Given one victim told by a line that reads as host-wide and one that names the memory cgroup
    killed = KILLED_HOST.replace("Out of memory:", "Memory cgroup out of memory:")
    for body in (f"{SUMMARY_2481}\n{killed}\n", f"{killed}\n{SUMMARY_2481}\n"):
        (result,) = run_oom(body)
        assert result["evidence"]["victims"] == [{"pid": 2481, "process": "python3", "cgroup": True}], body


def test_more_than_five_victims_are_all_counted_and_five_named() -> None:
    body = "".join(KILLED_HOST.replace("2481", str(100 + n)) + "\n" for n in range(6))
    (result,) = run_oom(body)
    assert result["summary"] == "6 process(es) OOM-killed: " + ", ".join(
        f"python3 (pid {100 + n})" for n in range(5)
    )
    assert result["evidence"]["kills"] == 6


def test_oom_killer_without_a_victim_line_is_still_a_concern() -> None:
    (result,) = run_oom(INVOKED + "\n", rc=0)
    assert (result["severity"], result["summary"]) == (
        "CONCERN",
        "OOM killer ran (1 line(s)), victim not in the collected lines",
    )
    assert (result["evidence"]["kills"], result["evidence"]["victims"]) == (0, [])


def test_no_oom_lines_is_ok_and_absent_is_info_in_section_i() -> None:
    assert run_oom("", rc=1) == [
        {
            "node": "gpu-7",
            "check": "host.oom",
            "severity": "OK",
            "section": "I",
            "summary": "no OOM kills in the kernel log",
            "evidence": {"oom_lines": 0},
            "threshold": OOM_THRESHOLD,
            "next_step": None,
            "handoff": I,
        }
    ]
    assert run_oom(None) == [
        {
            "node": "gpu-7",
            "check": "host.oom",
            "severity": "INFO",
            "section": "I",
            "summary": "OOM-killer lines: not present (section not in snapshot)",
            "evidence": {"section": "oom", "state": "absent", "rc": None},
            "threshold": None,
            "next_step": None,
            "handoff": None,
        }
    ]
    (timeout,) = run_oom("", rc=124)
    assert (timeout["section"], timeout["summary"]) == (
        "I",
        "OOM-killer lines: not evaluated, the command timed out (rc=124)",
    )


def test_a_bus_message_without_a_pci_id_is_reported_on_pci_unknown() -> None:
    # Given the driver's message with its bdf cut off (constructed from the real line
    # "NVRM: GPU 0000:01:00.0: GPU has fallen off the bus."), no timestamp
    (result,) = run_xid("NVRM: GPU has fallen off the bus.\n", gpu_by_bus={"0000:01:00": 0})
    assert result["summary"].startswith(
        "GPU fallen off the bus (no Xid) (GPU has fallen off the bus) on PCI unknown x1"
    )
    assert (result["evidence"]["pci"], result["evidence"]["gpu"], result["evidence"]["first_time"]) == (
        None,
        None,
        None,
    )


def test_oom_lines_without_timestamps_have_no_times() -> None:
    # Given journal-less `dmesg` lines (no timestamp prefix): the times are None, not invented
    body = (
        KILLED_HOST.removeprefix("[Tue Mar  5 10:00:00 2024] ")
        + "\n"
        + INVOKED.removeprefix("[Tue Mar  5 10:04:59 2024] ")
    )
    (result,) = run_oom(body + "\n")
    assert (
        result["evidence"]["first_time"],
        result["evidence"]["last_time"],
        result["evidence"]["oom_lines"],
    ) == (
        None,
        None,
        2,
    )
    # And with the timestamps kept, each end has its own time
    (timed,) = run_oom(f"{KILLED_HOST}\n{INVOKED}\n")
    assert (timed["evidence"]["first_time"], timed["evidence"]["last_time"]) == (
        "Tue Mar  5 10:00:00 2024",
        "Tue Mar  5 10:04:59 2024",
    )


def test_every_distinct_recovery_action_of_a_group_is_named() -> None:
    # Given the real Xid 154 line, then the same GPU's next one asking for a node reboot (0x2), then a
    # repeat of the first: two distinct actions, in order
    later = XID154.replace(
        "0x0 (None) to 0x1 (GPU Reset Required)", "0x1 (GPU Reset Required) to 0x2 (Node Reboot)"
    )
    (result,) = run_xid("\n".join([XID154, later, XID154]) + "\n")
    asks = "0x1 (GPU Reset Required), 0x2 (Node Reboot)"
    assert (
        result["summary"]
        == f"Xid 154 (GPU recovery action changed) on PCI 0000:2a:00 x3: driver asks for {asks}"
    )
    assert result["evidence"]["recovery_action"] == ["0x1 (GPU Reset Required)", "0x2 (Node Reboot)"]
    assert result["next_step"] == f"The driver asks for: {asks}. " + action("follow_recovery_action")[1]
