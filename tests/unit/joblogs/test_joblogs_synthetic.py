"""Edge cases of the job-log normaliser and checks. Every input here is SYNTHETIC: written for the
test from the real wordings (see tests/fixtures/real/joblogs/SOURCES.md), never presented as a log."""

from __future__ import annotations

from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.joblogs import analyze_logs, scan_logs
from hyperpod_perf.joblogs.normalize import normalize_line, records
from hyperpod_perf.joblogs.scan import MAX_EVENTS_PER_KIND


def run(text: str, instance_type: str | None = None) -> list[Finding]:
    return analyze_logs([("synthetic.log", text.encode().splitlines(keepends=True))], instance_type)


def only(findings: list[Finding], check: str) -> list[Finding]:
    return [f for f in findings if f.check == check]


def test_prefixes_ansi_and_repeat_counts_are_stripped():
    (record,) = normalize_line(
        "\x1b[36m(RayTrainWorker pid=123, ip=10.0.0.7)\x1b[0m 0: h1:5:5 [0] NCCL INFO Using network Socket "
        "[repeated 15x across cluster]"
    )
    assert record.text == "h1:5:5 [0] NCCL INFO Using network Socket"
    assert (record.host, record.rank, record.repeat) == ("10.0.0.7", 0, 15)


def test_torchrun_and_openmpi_prefixes_give_the_global_rank():
    (a,) = normalize_line("[rank12]:[E1224 13:23:05.48 ProcessGroupNCCL.cpp:542] [Rank 3] x")
    (b,) = normalize_line("[1,31]<stderr>:ip-1:8:9 [7] NCCL INFO Using network AWS Libfabric")
    assert (a.rank, b.rank) == (12, 31)
    assert a.text.startswith("[E1224")


def test_error_words_are_not_taken_for_pdsh_hosts():
    (record,) = normalize_line("RuntimeError: NCCL error: remote process exited or there was a network error")
    assert record.host is None and record.text.startswith("RuntimeError")


def test_two_nccl_lines_glued_together_are_split():
    pieces = normalize_line(
        "h1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>h2:2:2 [1] NCCL INFO Using network Socket"
    )
    assert [p.text for p in pieces] == [
        "h1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "h2:2:2 [1] NCCL INFO Using network Socket",
    ]


def test_hard_wrap_continuation_stops_at_the_next_record():
    head = b"[E101 00:00:01.0 ProcessGroupNCCL.cpp:607]"
    work = (
        b"WorkNCCL(SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=600000) "
        b"ran for 600001 milliseconds before timing out."
    )
    lines = [
        b"[rank2]:" + head + b" [Rank 2] Watchdog caught collective operation time\n",
        b"out: " + work + b"\n",
        b"[rank3]:" + head + b" [Rank 3] Watchdog caught collective operation timeout: " + work + b"\n",
    ]
    got = list(records(lines, "s"))
    assert len(got) == 2
    assert "timeout: WorkNCCL(SeqNum=7" in got[0].text and got[0].rank == 2


def test_red_herrings_raise_nothing():
    text = "\n".join(
        [
            "h1:1:1 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 16, falling back to simple order",
            "h1:1:1 [0] NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v8 symbol.",
            "h1:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal "
            "implementation",
            "h1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>",
            "h1:1:1 [0] NCCL INFO Using network IB",
            "h1:1:1 [0] transport/net_ib.cc:123 NCCL WARN gdr_open failed: GDRCOPY unavailable",
            "h1:1:9 [0] NCCL WARN socketProgress: Connection closed by remote peer h2<4242>",
        ]
    )
    findings = run(text)
    assert [f.severity for f in findings] == [Severity.OK, Severity.INFO, Severity.OK, Severity.OK]
    assert "InfiniBand" in only(findings, "nccl.transport")[0].summary


def test_one_rank_on_sockets_among_efa_ranks_is_named():
    lines = [
        f"node{i}:1{i}:1{i} [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct "
        "(found 32 nics)"
        for i in range(4)
    ]
    lines += [f"node{i}:1{i}:1{i} [0] NCCL INFO Using network Libfabric" for i in range(3)]
    lines += ["[1,3]<stdout>:node3:13:13 [0] NCCL INFO Using network Socket"]
    lines[3] = "node3:13:13 [0] NCCL INFO NET/OFI aws-ofi-nccl initialization failed"
    (transport,) = only(run("\n".join(lines)), "nccl.transport")
    assert transport.severity is Severity.CONCERN
    assert transport.evidence["fallback_hosts"] == ["node3"]
    assert transport.evidence["fallback_ranks"] == [3]
    assert transport.evidence["by_transport"] == {"efa": 3, "ofi-failed": 1}


def test_all_efa_direct_is_ok_naming_the_fabric():
    lines = [
        f"node{i}:1:1 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 16 nics)\n"
        f"node{i}:1:1 [0] NCCL INFO Using network Libfabric"
        for i in range(2)
    ]
    (transport,) = only(run("\n".join(lines)), "nccl.transport")
    assert transport.severity is Severity.OK
    assert "fabric efa-direct, 16 NICs" in transport.summary


def test_harmful_user_overrides_on_efa():
    text = "\n".join(
        [
            "h1:1:1 [0] NCCL INFO NET/OFI Selected provider is efa (found 4 nics)",
            "h1:1:1 [0] NCCL INFO NCCL_NET set by environment to Socket",
            "h1:1:1 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1.",
            'h1:1:1 [0] nccl_net_ofi_init:1 NCCL WARN NET/OFI NCCL_PROTO was set to "LL/LL128", '
            "but the Libfabric endpoint does not support 128 byte in-order aligned stores. "
            "This endpoint may corrupt data during communication",
            "h1:1:1 [0] NCCL INFO NCCL_DEBUG set by environment to INFO",
        ]
    )
    env = only(run(text), "nccl.env")
    concerns = [f for f in env if f.severity is Severity.CONCERN]
    assert [c.summary.split(" ")[0] for c in concerns] == [
        "NCCL_PROTO",
        "NCCL_NET=Socket",
        "NCCL_P2P_DISABLE=1",
    ]
    (info,) = [f for f in env if f.severity is Severity.INFO]
    assert {s["name"] for s in info.evidence["settings"]} == {"NCCL_NET", "NCCL_P2P_DISABLE", "NCCL_DEBUG"}


def test_desync_report_names_the_lagging_rank_and_wins_over_sequence_lag():
    text = "\n".join(
        [
            "[rank0]:[E101 00:00:01.0 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
            "operation "
            "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600001 "
            "milliseconds before "
            "timing out.",
            "[rank1]:[E101 00:00:01.0 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective "
            "operation "
            "timeout: WorkNCCL(SeqNum=8, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600001 "
            "milliseconds before "
            "timing out.",
            "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
            "\t   - [47] joined but didn't finish collective #41207 (count from 1)",
        ]
    )
    (timeout,) = only(run(text), "nccl.timeout")
    assert timeout.evidence["culprit"]["ranks"] == [47]
    assert timeout.evidence["culprit"]["method"].startswith("desync report")
    # the sequence lag is still reported as reasoning
    assert any("rank 1 never reached" in note for note in timeout.evidence["reasoning"])


def test_mismatch_report_with_sequence_numbers_names_the_rank_behind():
    text = (
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 7 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=18, OpType=ALLREDUCE) but Rank 0 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=30, OpType=ALLREDUCE)"
    )
    (timeout,) = only(run(text), "nccl.timeout")
    assert timeout.evidence["culprit"]["ranks"] == [7]


def test_first_failure_in_time_needs_one_second_of_lead():
    def at(second: str) -> str:
        return "\n".join(
            [
                f"| 2025-01-01T00:00:{second}Z | hostA:1:1 [0] NCCL WARN NET/OFI Request completed "
                "with error. RC: 21",
                "| 2025-01-01T00:00:10.000Z | hostB:1:1 [0] NCCL WARN NET/OFI Request completed "
                "with error. RC: 21",
            ]
        )

    (lead,) = only(run(at("09.000")), "nccl.timeout")
    assert lead.evidence["culprit"]["hosts"] == ["hostA"]
    assert lead.evidence["culprit"]["method"] == "first to fail in time"
    (tie,) = only(run(at("09.500")), "nccl.timeout")
    assert tie.evidence["culprit"] is None


def test_events_past_the_bound_are_counted_not_kept():
    text = "\n".join(
        f"host{i}:1:1 [0] misc/ibvwrap.cc:1 NCCL WARN Call to ibv_reg_mr failed with error Cannot "
        "allocate memory"
        for i in range(MAX_EVENTS_PER_KIND + 5)
    )
    scan = scan_logs([("s", text.encode().splitlines())])
    assert len([e for e in scan.events.values() if e.kind == "memreg"]) == MAX_EVENTS_PER_KIND
    assert scan.dropped == {"events:memreg": 5}


def test_nothing_logged_is_info_not_ok_for_transport():
    findings = run("epoch 1 loss 2.3\nepoch 2 loss 2.1\n")
    assert [(f.check, f.severity) for f in findings] == [
        ("nccl.transport", Severity.INFO),
        ("nccl.env", Severity.INFO),
        ("nccl.memlock", Severity.OK),
        ("nccl.timeout", Severity.OK),
    ]


def test_fi_getinfo_empty_efa_list_alone_is_a_transport_concern():
    text = (
        "libfabric:85:1747438790::core:core:fi_getinfo_():1392<warn> "
        "fi_getinfo: provider efa output empty list"
    )
    (transport,) = only(run(text), "nccl.transport")
    assert transport.severity is Severity.CONCERN
    assert "libfabric found no usable efa provider" in transport.summary


def test_missing_plugin_is_a_fallback_only_on_an_efa_instance():
    text = "h1:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation"
    (alone,) = only(run(text), "nccl.transport")
    assert alone.severity is Severity.INFO and "no net plugin loaded" in alone.summary
    (on_p5,) = only(run(text, "ml.p5.48xlarge"), "nccl.transport")
    assert on_p5.severity is Severity.CONCERN and on_p5.evidence["fallback_hosts"] == ["h1"]


def test_registration_failures_on_many_hosts_become_one_finding():
    hosts = [f"node{i}" for i in range(11)]
    text = "\n".join(
        f"{h}:1:1 [0] misc/ibvwrap.cc:1 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory"
        for h in hosts
    )
    (memlock,) = only(run(text), "nccl.memlock")
    assert memlock.severity is Severity.CONCERN
    assert memlock.evidence["hosts"] == sorted(hosts)
    ten = "\n".join(text.splitlines()[:10])
    assert len(only(run(ten), "nccl.memlock")) == 10
