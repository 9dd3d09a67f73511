"""Kernel-log parsers: Xid / SXid / fallen-off-the-bus against real lines (tests/fixtures/real/xid), OOM."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_perf.parse.dmesg import EventKind, OomKind, parse_gpu_kernel_log, parse_oom

REAL = Path(__file__).parents[2] / "fixtures" / "real"


def real(path: str) -> str:
    return (REAL / path).read_text(encoding="utf-8")


def test_every_xid_fixture_yields_events() -> None:
    # Given every real kernel-log capture
    files = sorted((REAL / "xid").iterdir())
    assert len(files) == 12
    for file in files:
        # When parsed
        log = parse_gpu_kernel_log(file.read_text(encoding="utf-8"))
        # Then each has at least one GPU event with a PCI id and nothing left undecoded
        assert log.events, file.name
        assert all(e.pci for e in log.events), file.name
        assert log.unparsed == (), file.name


def test_dmesg_t_with_prompt_padded_day_and_pid_variants() -> None:
    log = parse_gpu_kernel_log(real("xid/akash_dmesg-T_xid43-31-94_535.183.01.txt"))
    assert [(e.code, e.pci, e.pid, e.process) for e in log.events] == [
        (43, "0000:00:05", 1045242, "pt_main_thread"),
        (43, "0000:00:05", 1084984, "pt_main_thread"),
        (31, "0000:00:07", 2512125, "python3.10"),
        (94, "0000:00:08", None, None),
    ]
    assert log.events[3].pid_raw == "'<unknown>'"
    assert log.events[3].message == "Contained: SM (0x1). RST: No, D-RST: No"
    assert log.events[2].timestamp is not None
    assert log.events[2].timestamp.text == "Mon Aug  5 03:54:13 2024"
    assert log.events[2].timestamp.format == "dmesg-T"
    assert log.events[2].message.startswith("Ch 00000008, intr 00000000. MMU Fault")


def test_dmesg_iso_decode_format() -> None:
    log = parse_gpu_kernel_log(real("xid/gpud_dmesg-iso_xid13-43.txt"))
    codes = [e.code for e in log.events]
    assert codes == [13] * 16 + [43]
    assert {e.pci for e in log.events} == {"0000:38:00"}
    assert log.events[0].timestamp is not None
    assert (log.events[0].timestamp.text, log.events[0].timestamp.format) == (
        "2025-01-21T04:41:44,283302+00:00",
        "iso",
    )
    assert log.events[0].pid is None
    assert (
        log.events[0].message == "Graphics SM Global Exception on (GPC 8, TPC 5, SM 1): Multiple Warp Errors"
    )
    assert (log.events[-1].pid, log.events[-1].process) == (2924364, "pt_main_thread")


def test_xid119_among_stack_traces_and_rpc_history() -> None:
    log = parse_gpu_kernel_log(real("xid/gpud_dmesg-T_xid119-gsp-timeout_xe9680.txt"))
    assert [e.code for e in log.events] == [119] * 5
    assert [e.pid for e in log.events] == [2024380, 2024380, 2024380, 1263500, 1240590]
    assert [e.process for e in log.events][-2:] == ["cache_mgr_main", "gpud"]
    assert log.events[-1].timestamp is not None
    assert log.events[-1].timestamp.text == "Sun Feb 23 16:30:13 2025"


def test_same_events_from_dmesg_t_and_journalctl() -> None:
    dmesg = parse_gpu_kernel_log(real("xid/gpu-node-01_dmesg-T_xid120-154_gsp.txt")).events
    journal = parse_gpu_kernel_log(real("xid/gpu-node-01_journalctl-k_xid120-154_gsp.txt")).events
    assert [(e.code, e.pci, e.message) for e in dmesg] == [(e.code, e.pci, e.message) for e in journal]
    assert [e.code for e in dmesg] == [120, 154]
    assert journal[0].timestamp is not None
    assert (journal[0].timestamp.text, journal[0].timestamp.format) == ("Jul 11 05:51:26", "syslog")
    assert dmesg[1].recovery_action == "0x1 (GPU Reset Required)"
    assert dmesg[0].pid is None and dmesg[0].pid_raw is None  # this Xid carries no pid


def test_journal_kernel_prefix_without_timestamp() -> None:
    log = parse_gpu_kernel_log(
        real("xid/journal-kernel-prefix_xid45-caused-by-149-145_590.48.01_excerpt.txt")
    )
    assert [e.code for e in log.events] == [45] * 7
    assert [e.pci for e in log.events][:4] == ["0000:dc:00", "0000:ed:00", "0000:ba:00", "0000:97:00"]
    assert log.events[0].pid == 1818990
    assert log.events[0].message == "Ch 00000001 caused by previous Xid 149"
    assert log.events[0].timestamp is None


def test_bare_kmsg_nvlink_xids_with_pci_domains() -> None:
    log = parse_gpu_kernel_log(real("xid/kmsg-lines_xid149-145_nvlink-netir_gb200-style.txt"))
    assert [(e.code, e.pci) for e in log.events] == [
        (149, "0019:01:00"),
        (149, "0000:00:00"),
        (145, "0018:01:00"),
    ]
    assert log.events[2].message.startswith("RLW_RXPIPE Nonfatal XC0 i0 Link 13")


def test_xid79_then_fallen_off_line_then_recovery_os_reboot() -> None:
    log = parse_gpu_kernel_log(real("xid/no-prefix_xid79-154-os-reboot_610.43.02.txt"))
    assert [(e.kind, e.code, e.pci) for e in log.events] == [
        (EventKind.XID, 79, "0000:01:00"),
        (EventKind.FALLEN_OFF_BUS, None, "0000:01:00"),
        (EventKind.XID, 154, "0000:01:00"),
    ]
    assert log.events[2].recovery_action == "0x2 (OS Reboot)"


def test_fallen_off_the_bus_without_xid_spanning_continuation_lines() -> None:
    log = parse_gpu_kernel_log(real("xid/nvsentinel155_dmesg-raw_fallen-off-bus_no-xid_570.158.01.txt"))
    (event,) = log.events
    assert event.kind is EventKind.FALLEN_OFF_BUS
    assert event.code is None
    assert (event.pci, event.pci_raw, event.device_id) == ("0000:b3:00", "0000:b3:00.0", "10de:26b5")
    assert event.timestamp is not None
    assert (event.timestamp.text, event.timestamp.format) == ("1843.308145", "monotonic")
    assert "fallen off the bus and is not responding to commands." in event.message


def test_test_fixture_lines_pid_without_name() -> None:
    log = parse_gpu_kernel_log(real("xid/gcm-testfixture_dmesg-T_xid31-48.txt"))
    assert [(e.code, e.pci, e.pid, e.process) for e in log.events] == [
        (31, "000d:00:00", 3234, None),
        (48, "000d:00:00", 3234, None),
    ]


def test_pid_na_and_unquoted_unknown_variants() -> None:
    # Given the pid spellings the design lists (constructed lines; no real `pid='N/A'` sample exists)
    text = (
        "NVRM: Xid (PCI:0000:53:00): 109, pid='N/A', name=N/A, Ch 00000010, errorString CTX SWITCH TIMEOUT\n"
        "NVRM: Xid (PCI:0000:53:00): 13, pid=<unknown>, name=<unknown>, Graphics Exception\n"
    )
    first, second = parse_gpu_kernel_log(text).events
    assert (first.pid, first.pid_raw, first.process) == (None, "'N/A'", None)
    assert first.message == "Ch 00000010, errorString CTX SWITCH TIMEOUT"
    assert (second.pid, second.pid_raw) == (None, "<unknown>")


def test_sxid_line() -> None:
    # Given an NVSwitch SXid line in the driver's documented format (no real SXid sample in the corpus)
    text = (
        "[ 8123.456789] nvidia-nvswitch3: SXid (PCI:0000:c5:00.0): 24007, Fatal, "
        "Link 45 sourcetrack timeout\n"
    )
    (event,) = parse_gpu_kernel_log(text).events
    assert (event.kind, event.code, event.pci, event.severity, event.switch) == (
        EventKind.SXID,
        24007,
        "0000:c5:00",
        "Fatal",
        "nvidia-nvswitch3",
    )
    assert event.message == "Link 45 sourcetrack timeout"


def test_undecodable_xid_line_is_kept_not_dropped() -> None:
    log = parse_gpu_kernel_log("[Mon Jan  1 00:00:00 2024] NVRM: Xid (PCI:0000:53:00): garbled\n")
    assert log.events == ()
    assert log.unparsed == ("[Mon Jan  1 00:00:00 2024] NVRM: Xid (PCI:0000:53:00): garbled",)


def test_empty_log_has_no_events() -> None:
    assert parse_gpu_kernel_log("").events == ()


def test_dmesg_failure_raises() -> None:
    with pytest.raises(ValueError, match="kernel log could not be read"):
        parse_gpu_kernel_log("dmesg: read kernel buffer failed: Operation not permitted\n")


# ------------------------------------------------------------------------------------------ OOM
# Kernel OOM-killer lines in the printk formats of mm/oom_kill.c (constructed: no real capture in the corpus).
OOM_TEXT = """\
[Tue Mar  5 10:00:00 2024] pt_main_thread invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0
[Tue Mar  5 10:00:00 2024] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/kubepods/pod1,task=python3,pid=2481,uid=0
[Tue Mar  5 10:00:00 2024] Out of memory: Killed process 2481 (python3) total-vm:812044kB, anon-rss:518420kB, file-rss:1240kB, shmem-rss:0kB, UID:0 pgtables:1300kB oom_score_adj:0
[Tue Mar  5 10:05:00 2024] Memory cgroup out of memory: Killed process 4182 (order-worker) total-vm:812044kB, anon-rss:518420kB, file-rss:1240kB, shmem-rss:0kB
"""  # noqa: E501


def test_oom_lines_are_classified() -> None:
    events = parse_oom(OOM_TEXT)
    assert [(e.kind, e.pid, e.process, e.cgroup) for e in events] == [
        (OomKind.INVOKED, None, "pt_main_thread", False),
        (OomKind.SUMMARY, 2481, "python3", False),
        (OomKind.KILLED, 2481, "python3", False),
        (OomKind.KILLED, 4182, "order-worker", True),
    ]
    assert events[3].timestamp is not None
    assert events[3].timestamp.text == "Tue Mar  5 10:05:00 2024"


def test_no_oom_lines() -> None:
    assert parse_oom("") == ()


def test_invoked_oom_killer_names_the_whole_word_before_it() -> None:
    # Given the trigger line after a syslog prefix, and a word ending in the trigger's name
    events = parse_oom(
        "Mar  5 10:00:00 node kernel: pt_main_thread invoked oom-killer: gfp_mask=0x0\n"
        "kernel:python3 invoked oom-killer: order=0\n"
    )
    # Then the process is the whole word (as the kernel printed it), not a tail of it
    assert [(e.kind, e.process) for e in events] == [
        (OomKind.INVOKED, "pt_main_thread"),
        (OomKind.INVOKED, "kernel:python3"),
    ]
    assert events[0].timestamp is not None and events[0].timestamp.format == "syslog"


def test_continuation_lines_join_their_record_and_trailing_blanks_leave_the_message() -> None:
    # Given an Xid whose message is padded and continued on indented lines
    log = parse_gpu_kernel_log(
        "NVRM: Xid (PCI:0000:2a:00): 79, pid=1234, name=python3, GPU has fallen off the bus.   \n"
        "    NVRM: GPU at PCI:0000:2a:00: GPU-abc\n"
        "    more detail\n"
    )
    # Then one event carries the whole message, without the padding
    (event,) = log.events
    assert (event.code, event.pid, event.process) == (79, 1234, "python3")
    assert event.message == "GPU has fallen off the bus. GPU at PCI:0000:2a:00: GPU-abc more detail"


def test_fallen_off_the_bus_in_the_gpu_at_bdf_form_reads_its_pci_address() -> None:
    # Given the older driver's line `NVRM: GPU at 0000:01:00.0 has fallen off the bus.` (no `PCI:`)
    log = parse_gpu_kernel_log(real("xid/debian-blog_fallen-off-bus_gpu-at-bdf_no-xid.txt"))
    # Then both lines are fallen-off-the-bus events on 0000:01:00, the other NVRM lines ignored
    assert [(e.kind, e.code, e.pci, e.pci_raw) for e in log.events] == [
        (EventKind.FALLEN_OFF_BUS, None, "0000:01:00", "0000:01:00.0"),
        (EventKind.FALLEN_OFF_BUS, None, "0000:01:00", "0000:01:00.0"),
    ]
    assert log.events[0].timestamp is not None and log.events[0].timestamp.text == "36.508494"
    assert log.unparsed == ()


def test_xid63_row_remapper_line() -> None:
    (event,) = parse_gpu_kernel_log(real("xid/a100-sxm4_xid63_row-remapper-pending_stas00.txt")).events
    assert (event.code, event.pci, event.pid, event.process) == (63, "0000:10:1c", 1896, None)
    assert event.message == "Row Remapper: New row marked for remapping, reset gpu to activate."


def test_rhel_style_oom_victim_line_with_uid_names_the_victim() -> None:
    # Given `Out of memory: Killed process 123, UID 48, (httpd)` (with and without the final period)
    events = parse_oom(real("oom/rhel-style_killed-process-uid_gpud-testdata.txt"))
    # Then both are kills of httpd, pid 123, global (not cgroup), with their iso timestamps
    assert [(e.kind, e.pid, e.process, e.cgroup) for e in events] == [
        (OomKind.KILLED, 123, "httpd", False),
        (OomKind.KILLED, 123, "httpd", False),
    ]
    assert [e.timestamp.text for e in events if e.timestamp] == [
        "2025-01-21T08:43:30,287197+00:00",
        "2025-01-21T08:45:30,287197+00:00",
    ]
