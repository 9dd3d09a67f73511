"""What one job-log message says, as operations on the scan state (pure, cacheable).

A message is a log record without its NCCL header (`host:pid:tid [dev] `) or glog time: what it
means does not depend on the rank that logged it, so `JobLogScan` caches `interpret` per message
and applies the operations with the record's host, process and rank. The wordings matched are
NCCL's, aws-ofi-nccl's (`NET/OFI …`), libfabric's and PyTorch ProcessGroupNCCL's, in the versions
the real fixtures under tests/fixtures/real/joblogs show.
"""

from __future__ import annotations

import re
from typing import Any

HEADER = re.compile(r"^(?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] ")
_USING_NETWORK = re.compile(
    r"(?:Using network|Initialized NET plugin) (?P<net>[A-Za-z][\w ]*?)\s*(?:$|[←(,]|\s{2})"
)
_VIA_NET = re.compile(r"via NET/(?P<net>[^/]+)/")
_PROVIDER = re.compile(
    r"NET/OFI Selected [Pp]rovider is (?P<provider>[\w;]+)"
    r"(?:, fabric is (?P<fabric>[\w-]+))?(?: \(found (?P<nics>\d+) nics\))?"
)
_OFI_SETTING = re.compile(
    r"NET/OFI Setting (?P<name>(?:NCCL|FI"
    r"|OFI_NCCL)_[A-Z0-9_]+) (?:environment variable )?to (?P<value>.+?)\s*$"
)
_PLATFORM_TOPO = re.compile(
    r"NET/OFI Running on (?P<platform>\S+) platform, "
    r"Setting (?P<name>NCCL_TOPO_FILE) environment variable to (?P<value>\S+)"
)
_PLATFORM_PROTOCOL = re.compile(r"NET/OFI Using transport protocol (?P<value>\w+) \(platform set\)")
_ENV_SET = re.compile(
    r"(?P<name>(?:NCCL|FI|OFI_NCCL|TORCH_NCCL)_[A-Z0-9_]+) set by environment to (?P<value>.*?)\.?\s*$"
)
_SOCKET_IFACES = re.compile(r"NET/Socket : Using (?P<list>(?:\[\d+\]\S+\s*)+)")
_BOOTSTRAP = re.compile(r"Bootstrap : Using (?:\[\d+\])?(?P<iface>[^\s:]+):(?P<addr>\S+?)<")
_IFACE_ITEM = re.compile(r"\[\d+\](?P<iface>[^\s:]+):(?P<addr>[^<\s]+)")
_GDR_DISABLED = re.compile(r"GDR disabled on GDR-supported instance type (?P<type>\S+)")

_PG_RANK = re.compile(r"\[PG (?:ID )?(?P<pg>\d+)[^\]]*? Rank (?P<rank>\d+)\]")
_WATCHDOG = re.compile(
    r"\[Rank (?P<rank>\d+)\] Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), "
    r"OpType=(?P<op>\w+).*?\) ran for (?P<ran>\d+) milliseconds"
)
#: PyTorch <= 2.6 `… detected by watchdog at work: N, last enqueued NCCL work: E, last completed NCCL
#: work: C` / `Timeout at NCCL work: …`; 2.7+ `failure detected by watchdog at work sequence id: N PG
#: status: last enqueued work: E, last completed work: C` (ProcessGroupNCCL.cpp).
_PROGRESS = re.compile(
    r"(?:detected by watchdog at work(?: sequence id)?|Timeout at NCCL work): (?P<work>\d+),? "
    r"(?:PG status: )?last enqueued (?:NCCL )?work: (?P<enqueued>\d+), last completed (?:NCCL )?work: "
    r"(?P<completed>\d+)"
)
_ASYNC = re.compile(
    r"\[Rank (?P<rank>\d+)\] Collective WorkNCCL\(SeqNum=(?P<seq>\d+), "
    r"OpType=(?P<op>\w+).*?\) raised the following "
    r"async exception: (?P<what>.*)"
)
_NCCL_ERROR = re.compile(
    r"\b(?P<code>nccl(?:Internal|System|Remote|InvalidUsage|InvalidArgument|Unhandled\w*)Error)\b"
)
_LAGGING = re.compile(r"ranks \[(?P<ranks>[\d, ]+)\] are the lagging ranks")
_NOT_FINISHED = re.compile(r"\[(?P<ranks>[\d, ]+)\] joined but didn't finish collective #(?P<seq>\d+)")
_MISMATCH = re.compile(
    r"Rank (?P<a>\d+) is running collective: "
    r"CollectiveFingerPrint\((?:SequenceNumber=(?P<sa>\d+),? ?)?OpType=(?P<oa>\w+)"
    r".*?Rank (?P<b>\d+) is running collective: "
    r"CollectiveFingerPrint\((?:SequenceNumber=(?P<sb>\d+),? ?)?OpType=(?P<ob>\w+)"
)
_FR_HEADER = re.compile(r"Not all ranks joining collective,? (?:sequence number: )?(?P<what>.*)")
_FR_MISSING = re.compile(r"[Mm]issing ranks(?: are|:) \{(?P<ranks>[\d, ]+)\}")
_FR_GROUP = re.compile(r"group info: (?P<group>\S+)")
_RAY_WORKER_DIED = re.compile(r"A worker died or was killed.*?Worker IP address: (?P<ip>[\d.]+)")
_CONNECT_REFUSED = re.compile(r"connect to (?P<addr>[\d.]+)<[^>]*> returned Connection refused")
_MEM_REG = re.compile(
    r"Unable to register memory|fi_mr_reg\w* failed|ibv_reg_mr\w* failed|Call to ibv_reg_mr\w* failed"
    r"|register\w* .*Cannot allocate memory|RLIMIT_MEMLOCK|memlock"
    # libfabric / EFA resources (queues, receive buffers) that could not be allocated: the same pinned
    # memory budget (libfabric's `Libfabric error: (-12) Cannot allocate memory`, prov/efa's
    # `err: Cannot allocate memory (-12)`, `Unable to create extended CQ: Cannot allocate memory`)
    r"|(?:[Ll]ibfabric|::efa:|prov/efa|EFA |NET/OFI).*Cannot allocate memory|Cannot allocate memory.*prov/efa"
)
#: NCCL's own socket failures (misc/socket.cc, proxy.cc): a peer that cannot be reached or stopped
#: answering mid-operation. Not `socketProgress: Connection closed by remote peer` alone: ranks
#: leaving at different moments print it at a normal teardown.
_SOCKET_ERROR = re.compile(
    r"NCCL WARN (?:socket\w*Connect\w*|Call to recv|Net : Call to recv)"
    r"|Socket recv failed while polling|Connection reset by peer|\[Proxy Service \d+\] Failed to execute"
)
#: The host of a line written in a job's own `[host:pid=N] NCCL WARN` format (NVIDIA/nccl#1618).
_BRACKET_HOST = re.compile(r"\[(?P<host>[A-Za-z0-9][\w.-]*):pid=\d+\] NCCL (?:WARN|INFO)")

#: NCCL's communicator line (src/init.cc): `… comm 0x… rank 3 nranks 16 cudaDev 3 … - Init COMPLETE`
#: (and `comm 0x… rank 3 nRanks 16 nNodes 2 localRanks 8 …`): the process's rank in a communicator.
_COMM_RANK = re.compile(r"\bcomm 0x[0-9a-fA-F]+ rank (?P<rank>\d+) n[Rr]anks (?P<nranks>\d+)\b")

#: Words a trainer timing line has (straggler/trainer.py reads it).
_TRAINER_TOKENS = ("elapsed time per iteration", "MxRtt/Rnk", "STRAGGLER", "Score=", "performance:")

#: aws-ofi-nccl warnings that stop communication (not the informational ones).
_OFI_ERROR = re.compile(r"RC: -?\d+|failed|Couldn't|Unable to")


def _ranks(text: str) -> list[int]:
    return [int(r) for r in re.findall(r"\d+", text)][:64]


RECORD_RANK = object()  # an event's rank is the record's (from its launcher prefix)
PROCESS_OPS = frozenset({"net", "via", "provider", "ofi_fail", "no_plugin", "gdr", "ifaces", "comm_rank"})
MAX_CACHED_MESSAGES = 50_000
GLOG_HEAD = re.compile(r"\[[EWIF]\d{4} [\d:.]+ [\w.]+:\d+\] ")


def interpret(body: str) -> tuple[tuple[Any, ...], ...]:
    """What one message says, as operations on the scan state (no host, rank or time in them)."""
    ops: list[tuple[Any, ...]] = []
    if "Init COMPLETE" in body or "localRanks" in body:
        if match := _COMM_RANK.search(body):
            ops.append(("comm_rank", int(match.group("rank")), int(match.group("nranks"))))
        return tuple(ops)
    if any(token in body for token in _TRAINER_TOKENS):
        from hyperpod_perf.straggler.trainer import interpret as trainer_ops

        if found := trainer_ops(body):
            return tuple(found)
    if "NET" in body or "network" in body or "Bootstrap" in body or "GDR" in body:
        _transport_ops(body, ops)
    if "set by environment" in body or "NET/OFI" in body:
        _setting_ops(body, ops)
    if "fi_getinfo" in body:
        _libfabric_ops(body, ops)
    if _MEM_REG.search(body):
        ops.append(("event", "memreg", RECORD_RANK, None))
    elif "WARN NET/OFI" in body and _OFI_ERROR.search(body):
        ops.append(("event", "ofi_error", RECORD_RANK, None))
    _failure_ops(body, ops)
    return tuple(ops)


def _transport_ops(body: str, ops: list[tuple[Any, ...]]) -> None:
    if "Using network" in body or "Initialized NET plugin" in body:
        if match := _USING_NETWORK.search(body):
            ops.append(("net", match.group("net").strip()))
        return
    if "via NET/" in body:
        if match := _VIA_NET.search(body):
            ops.append(("via", match.group("net")))
        return
    if "elected" in body and (match := _PROVIDER.search(body)):
        nics = int(match.group("nics")) if match.group("nics") else None
        ops.append(("provider", match.group("provider"), match.group("fabric"), nics))
        return
    failure = None
    if "initialization failed" in body and "NET/OFI" in body:
        failure = "aws-ofi-nccl initialization failed"
    elif "optimal provider" in body and "NET/OFI" in body:  # aws-ofi-nccl found no usable provider
        failure = "aws-ofi-nccl found no optimal libfabric provider"
    elif "No eligible providers" in body:
        failure = "no eligible libfabric provider"
    elif "Failed to initialize NET plugin" in body and "IB" not in body:
        failure = body.strip()[:200]
    if failure:
        ops.append(("ofi_fail", failure))
        return
    if "No plugin found" in body:
        ops.append(("no_plugin",))
        return
    if "GDR disabled" in body and (match := _GDR_DISABLED.search(body)):
        ops.append(("gdr", match.group("type")))
        ops.append(("platform", match.group("type")))
        return
    if "NET/Socket : Using" in body and (match := _SOCKET_IFACES.search(body)):
        items = _IFACE_ITEM.findall(match.group("list"))
        ops.append(("ifaces", tuple(f"{i}:{a}" for i, a in items)[:8]))
        if any(_link_local(iface, addr) for iface, addr in items):
            ops.append(("event", "link_local_iface", RECORD_RANK, None))
        return
    if "Bootstrap : Using" in body and (match := _BOOTSTRAP.search(body)):
        if _link_local(match.group("iface"), match.group("addr")):
            ops.append(("event", "link_local_iface", RECORD_RANK, None))
        return
    if "socket interface found" in body or "neither AF_INET" in body:
        ops.append(("event", "socket_ifname_missing", RECORD_RANK, None))


def _libfabric_ops(body: str, ops: list[tuple[Any, ...]]) -> None:
    """libfabric's own `fi_getinfo: provider efa output empty list` (no EFA device usable)."""
    if "fi_getinfo" in body and "efa" in body and ("empty list" in body or "No data available" in body):
        ops.append(("event", "libfabric_no_efa", RECORD_RANK, None))


def _setting_ops(body: str, ops: list[tuple[Any, ...]]) -> None:
    if "set by environment" in body and (match := _ENV_SET.search(body)):
        ops.append(("setting", match.group("name"), match.group("value").strip()[:300], "environment"))
    elif "NET/OFI Running on" in body and (match := _PLATFORM_TOPO.search(body)):
        ops.append(("platform", match.group("platform")))
        ops.append(
            ("setting", match.group("name"), match.group("value")[:300], "aws-ofi-nccl platform defaults")
        )
    elif "platform set" in body and (match := _PLATFORM_PROTOCOL.search(body)):
        ops.append(("setting", "OFI_NCCL_PROTOCOL", match.group("value"), "aws-ofi-nccl platform defaults"))
    elif "NET/OFI Setting" in body and (match := _OFI_SETTING.search(body)):
        ops.append(
            ("setting", match.group("name"), match.group("value").strip().strip('"')[:300], "aws-ofi-nccl")
        )
    elif "NCCL_PROTO was set to" in body and "corrupt data" in body:
        ops.append(("event", "proto_ll_on_efa", None, None))


def _failure_ops(body: str, ops: list[tuple[Any, ...]]) -> None:
    if "Watchdog caught" in body and (match := _WATCHDOG.search(body)):
        pg_match = _PG_RANK.search(body, 0, match.start() + 1)
        rank = int(match.group("rank"))
        ops.append(
            (
                "seq",
                pg_match.group("pg") if pg_match else "?",
                rank,
                int(match.group("seq")),
                match.group("op"),
            )
        )
        ops.append(("event", "watchdog_timeout", rank, None))
        return
    if "last enqueued" in body and (match := _PROGRESS.search(body)):
        if pg_match := _PG_RANK.search(body):
            ops.append(
                (
                    "progress",
                    pg_match.group("pg"),
                    int(pg_match.group("rank")),
                    int(match.group("work")),
                    int(match.group("enqueued")),
                    int(match.group("completed")),
                )
            )
        return
    if "async exception" in body and (match := _ASYNC.search(body)):
        kind = "remote_exit" if "remote process exited" in match.group("what") else "nccl_error"
        ops.append(("event", kind, int(match.group("rank")), None))
        return
    if "remote process exited" in body:
        ops.append(("event", "remote_exit", RECORD_RANK, None))
        return
    if "watchdog got stuck" in body:
        ops.append(("event", "watchdog_stuck", _pg_rank(body, RECORD_RANK), None))
        return
    if "A worker died" in body and (match := _RAY_WORKER_DIED.search(body)):
        ops.append(("event", "worker_died", RECORD_RANK, match.group("ip")))
        return
    if "Connection refused" in body and _CONNECT_REFUSED.search(body):
        ops.append(("event", "connect_refused", RECORD_RANK, None))
        return
    if ("socket" in body or "Socket" in body or "Connection" in body or "Proxy" in body) and (
        _SOCKET_ERROR.search(body)
    ):
        host = _BRACKET_HOST.search(body)
        ops.append(("event", "socket_error", RECORD_RANK, host.group("host") if host else None))
        return
    if "lagging ranks" in body and (match := _LAGGING.search(body)):
        ops.append(("named", "desync report (never joined)", tuple(_ranks(match.group("ranks"))), None))
        return
    if "didn't finish collective" in body and (match := _NOT_FINISHED.search(body)):
        method = f"desync report (joined collective #{match.group('seq')} but did not finish)"
        ops.append(("named", method, tuple(_ranks(match.group("ranks"))), None))
        return
    if "mismatch between collectives" in body and (match := _MISMATCH.search(body)):
        ops.append(_mismatch_op(match))
        return
    if "joining collective" in body and (match := _FR_HEADER.search(body)):
        ops.append(("fr_context", match.group("what").strip()[:200]))
        return
    if "group info:" in body and (match := _FR_GROUP.search(body)):
        ops.append(("fr_group", match.group("group")))
        return
    if "issing ranks" in body and (match := _FR_MISSING.search(body)):
        ops.append(("fr_missing", tuple(_ranks(match.group("ranks")))))
        return
    if ("nccl" in body and _NCCL_ERROR.search(body)) or "unhandled system error" in body:
        ops.append(("event", "nccl_error", _pg_rank(body, RECORD_RANK), None))


def _mismatch_op(match: re.Match[str]) -> tuple[Any, ...]:
    a, b = int(match.group("a")), int(match.group("b"))
    sa, sb = match.group("sa"), match.group("sb")
    if sa is not None and sb is not None and int(sa) != int(sb):
        lagging = a if int(sa) < int(sb) else b
        low, high = sorted((int(sa), int(sb)))
        method = f"collective mismatch report (rank {lagging} is behind in sequence: {low} vs {high})"
        return ("named", method, (lagging,), None)
    method = (
        f"collective mismatch report (rank {a} runs {match.group('oa')}, rank {b} runs {match.group('ob')}; "
        "the report does not say which side is wrong)"
    )
    return ("named", method, (a, b), None)


def _pg_rank(body: str, fallback: Any) -> Any:
    match = _PG_RANK.search(body) or re.search(r"\[Rank (\d+)\]", body)
    if match:
        return int(match.group("rank") if "rank" in match.groupdict() else match.group(1))
    return fallback


def _link_local(iface: str, addr: str) -> bool:
    """169.254.0.0/16 (IPv4 link-local) or an interface named like the EKS Pod Identity link."""
    return addr.startswith("169.254.") or iface.startswith("pod-id-link") or addr.lower().startswith("fe80:")
