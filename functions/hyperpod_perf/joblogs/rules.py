"""Findings from a job-log scan: nccl.transport, nccl.env, nccl.memlock, nccl.timeout.

Pure functions of a `JobLogScan`. Each rule that raises a concern cites where the pattern it
judges is established (the `source` in the finding's evidence), so an operator can check the
reasoning rather than trust it.
"""

from __future__ import annotations

from typing import Any

from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.joblogs.culprit import MAX_LISTED, localise
from hyperpod_perf.joblogs.scan import JobLogScan, Process
from hyperpod_perf.rules.efa import efa_capability
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

SECTION = RunbookSection.NCCL

# --- where each pattern is established --------------------------------------------------------
SOURCE_OFI_PROVIDER = (
    "aws-ofi-nccl README: the plugin is meant to run on the efa provider; 'Selected provider is tcp;ofi_rxm' "
    "on an EFA instance means EFA was not used (NVIDIA/nccl#229)"
)
SOURCE_SOCKET_FALLBACK = (
    "NCCL env docs (NCCL_NET, NCCL_SOCKET_IFNAME); aws-samples/aws-do-eks#54: 'No eligible providers' -> "
    "'Initialized NET plugin Socket' is a TCP fallback"
)
SOURCE_GDR = "aws-ofi-nccl: 'GDR disabled on GDR-supported instance type' warning (aws/aws-ofi-nccl#889)"
SOURCE_IFNAME_MISSING = (
    "NVIDIA/nccl#1837: NCCL_SOCKET_IFNAME naming a missing interface fails with 'neither AF_INET(2) nor "
    "AF_INET6(10)' or 'Bootstrap : no socket interface found'"
)
SOURCE_LINK_LOCAL = (
    "aws-samples/aws-do-eks#54: the exclusion '^lo,docker,veth,eni' let NCCL pick pod-id-link0 "
    "(169.254.170.x, EKS Pod Identity, not routable) -> 'Connection refused' and a hung all-reduce"
)
SOURCE_PROTO = (
    'aws-ofi-nccl platform-aws: NCCL_OFI_WARN \'NCCL_PROTO was set to "LL/LL128", but the Libfabric endpoint '
    "does not support 128 byte in-order aligned stores. This endpoint may corrupt data'"
)
SOURCE_NCCL_NET = "NCCL env docs: NCCL_NET forces the named network (Socket/IB) and bypasses the net plugin"
SOURCE_P2P_DISABLE = (
    "NCCL env docs: NCCL_P2P_DISABLE=1 disables the peer-to-peer (NVLink/PCI) transport; intra-node traffic "
    "goes through shared memory or the network"
)
SOURCE_MEMREG = (
    "NVIDIA/nccl-tests#206 and NCCL troubleshooting docs: registration failing with 'Cannot allocate memory' "
    "when `ulimit -l` is limited (fixed by memlock unlimited); NVIDIA/nccl#563 (NET/OFI Unable to "
    "register memory)"
)
SOURCE_MEMREG_EINVAL = (
    "awslabs/awsome-distributed-ai#203: 'Unable to register memory … RC: -22' is a libfabric bug of EFA "
    "installers before 1.29.1 with NCCL 2.19+; workaround FI_EFA_SET_CUDA_SYNC_MEMOPS=0 or upgrade"
)

FALLBACK_KINDS = ("socket", "ofi-non-efa", "ofi-failed", "no-plugin")
#: Above this many hosts, per-host memory-registration findings become one finding listing them.
MAX_HOST_FINDINGS = 10


def _listing(items: list[str] | set[str], limit: int = MAX_LISTED) -> str:
    """`a, b, c (+N more)`; `?` (a line that named no host) reads as "an unnamed host"."""
    ordered = sorted("an unnamed host" if item == "?" else item for item in items)
    text = ", ".join(ordered[:limit])
    return text + (f" (+{len(ordered) - limit} more)" if len(ordered) > limit else "")


def classify(process: Process) -> str | None:
    """efa | ib | socket | ofi-non-efa | ofi-failed | libfabric | no-plugin | None (nothing logged).

    `no-plugin` ("NET/Plugin : No plugin found", no network line): benign on InfiniBand, a fallback
    on an EFA instance (NCCL has no libfabric without the aws-ofi-nccl plugin)."""
    net = (process.final_network or "").lower()
    provider = (process.provider or "").lower()
    first_provider = provider.split(";")[0]
    if provider and first_provider != "efa":
        return "ofi-non-efa"
    if process.ofi_failure and ("socket" in net or not net or provider):
        return "ofi-failed"
    if "socket" in net:
        return "socket"
    if net == "ib" or net.startswith("ibext"):  # IBext: the HPC-X / sharp plugin's IB verbs
        return "ib"
    if first_provider == "efa" or "libfabric" in net or net == "ofi":
        return "efa" if first_provider == "efa" else "libfabric"
    if process.no_plugin and not net:
        return "no-plugin"
    return None


def _efa_expected(scan: JobLogScan, kinds: dict[str, list[Process]]) -> tuple[bool, str]:
    capable = efa_capability(scan.instance_type)
    if capable:
        return True, f"instance type {scan.instance_type} has EFA"
    platforms = sorted(p for p in scan.platforms if efa_capability(p.lower()) or "p4d" in p.lower())
    if platforms:
        return True, f"aws-ofi-nccl reports platform {platforms[0]}"
    if any(kinds.get(k) for k in ("efa", "libfabric", "ofi-non-efa", "ofi-failed")):
        return True, "the job loaded the aws-ofi-nccl plugin (it meant to use libfabric)"
    return False, "no sign of an EFA instance in the logs"


def transport_findings(scan: JobLogScan) -> list[Finding]:
    kinds: dict[str, list[Process]] = {}
    for process in scan.processes.values():
        kind = classify(process)
        if kind:
            kinds.setdefault(kind, []).append(process)
    classified = sum(len(v) for v in kinds.values())
    findings: list[Finding] = []
    no_efa = [e for e in scan.events.values() if e.kind == "libfabric_no_efa"]
    if not classified and no_efa:
        hosts = {e.host or "?" for e in no_efa}
        return [
            Finding(
                check="nccl.transport",
                severity=Severity.CONCERN,
                section=SECTION,
                summary=(
                    f"libfabric found no usable efa provider on {_listing(hosts)}: {no_efa[0].text[:160]}"
                ),
                evidence={
                    "hosts": sorted(hosts)[:100],
                    "examples": [f"{e.text[:240]} ({e.where})" for e in no_efa[:3]],
                    "source": "libfabric fi_getinfo; aws/aws-ofi-nccl#889 (the plugin then fails to "
                    "initialise)",
                },
                next_step=(
                    "Check the EFA devices are passed into the container and "
                    "`fi_info -p efa` lists them there."
                ),
                handoff=Handoff.NCCL,
            )
        ]
    if not classified:
        return [
            Finding(
                check="nccl.transport",
                severity=Severity.INFO,
                section=SECTION,
                summary=(
                    "the logs show no NCCL network selection (no 'Using network' / 'Selected provider' lines)"
                ),
                evidence={"records": scan.records},
                next_step=(
                    "Run the job with NCCL_DEBUG=INFO "
                    "(NCCL_DEBUG_SUBSYS=INIT,NET,ENV) to log the network chosen."
                ),
            )
        ]
    expected, why = _efa_expected(scan, kinds)
    fallback = [p for k in FALLBACK_KINDS for p in kinds.get(k, [])]
    evidence: dict[str, Any] = {
        "processes": classified,
        "by_transport": {k: len(v) for k, v in sorted(kinds.items())},
        "efa_expected": expected,
        "efa_expected_because": why,
    }
    if fallback and expected:
        hosts = {p.host for p in fallback}
        ranks = sorted({r for p in fallback for r in p.ranks})
        reasons = sorted({_fallback_reason(p) for p in fallback})
        evidence.update(
            fallback_hosts=sorted(hosts)[:100],
            fallback_ranks=ranks[:200],
            reasons=reasons,
            examples=[f"{p.host} pid {p.pid}: {_fallback_reason(p)} ({p.where})" for p in fallback[:5]],
            source=SOURCE_OFI_PROVIDER if kinds.get("ofi-non-efa") else SOURCE_SOCKET_FALLBACK,
        )
        rank_text = f" (ranks {_listing([str(r) for r in ranks])})" if ranks else ""
        findings.append(
            Finding(
                check="nccl.transport",
                severity=Severity.CONCERN,
                section=SECTION,
                summary=(
                    f"{len(fallback)} of {classified} NCCL process(es) did not use EFA "
                    f"({'; '.join(reasons)}) "
                    f"on {_listing(hosts)}{rank_text} — {why}"
                ),
                evidence=evidence,
                threshold="every rank of a job on an EFA instance ends on the efa provider",
                next_step=(
                    "Check the EFA stack inside the training container on those hosts: `fi_info -p efa`, the "
                    "aws-ofi-nccl plugin on LD_LIBRARY_PATH, FI_PROVIDER unset or efa, the EFA "
                    "devices passed to "
                    "the container; compare with a host that used efa."
                ),
                handoff=Handoff.NCCL,
            )
        )
    elif fallback:
        hosts = {p.host for p in fallback}
        findings.append(
            Finding(
                check="nccl.transport",
                severity=Severity.INFO,
                section=SECTION,
                summary=(
                    "NCCL did not use libfabric "
                    f"({'; '.join(sorted({_fallback_reason(p) for p in fallback}))}) "
                    f"on {_listing(hosts)}; {why}, so this is not judged a fallback"
                ),
                evidence=evidence,
                next_step="Pass --instance-type (e.g. ml.p5.48xlarge) to judge whether EFA was expected.",
            )
        )
    else:
        efa = kinds.get("efa", []) + kinds.get("libfabric", [])
        providers = sorted({p.provider for p in efa if p.provider})
        fabrics = sorted({p.fabric for p in efa if p.fabric})
        nics = sorted({p.nics for p in efa if p.nics})
        hosts = {p.host for p in efa} | {p.host for p in kinds.get("ib", [])}
        detail = "provider " + "/".join(providers) if providers else "libfabric (provider not logged)"
        if fabrics:
            detail += f", fabric {'/'.join(fabrics)}"
        if nics:
            detail += f", {'/'.join(map(str, nics))} NICs"
        name = "InfiniBand" if kinds.get("ib") and not efa else f"EFA ({detail})"
        evidence.update(providers=providers, fabrics=fabrics, hosts=sorted(hosts)[:100])
        findings.append(
            Finding(
                check="nccl.transport",
                severity=Severity.OK,
                section=SECTION,
                summary=f"{classified} NCCL process(es) on {len(hosts)} host(s) used {name}",
                evidence=evidence,
            )
        )
    gdr = [p for p in scan.processes.values() if p.gdr_disabled]
    if gdr:
        findings.append(
            Finding(
                check="nccl.transport",
                severity=Severity.CONCERN,
                section=SECTION,
                summary=(
                    f"GPUDirect RDMA disabled on {gdr[0].gdr_disabled} (GDR-capable) on "
                    f"{_listing({p.host for p in gdr})}: "
                    "traffic is staged through host memory"
                ),
                evidence={
                    "hosts": sorted({p.host for p in gdr})[:100],
                    "source": SOURCE_GDR,
                    "example": gdr[0].where,
                },
                threshold="GDR on for GDR-capable instance types",
                next_step=(
                    "Check FI_EFA_USE_DEVICE_RDMA is not 0 and the libfabric/EFA installer supports this GPU."
                ),
                handoff=Handoff.NCCL,
            )
        )
    return findings


def _fallback_reason(process: Process) -> str:
    kind = classify(process)
    if kind == "ofi-non-efa":
        return f"libfabric provider {process.provider}"
    if kind == "ofi-failed":
        return process.ofi_failure or "aws-ofi-nccl failed"
    if kind == "no-plugin":
        return "no net plugin loaded (aws-ofi-nccl missing)"
    return f"network {process.final_network}"


def _env_problem(kind: str, scan: JobLogScan) -> list[Any]:
    return [e for e in scan.events.values() if e.kind == kind]


def env_findings(scan: JobLogScan, efa_expected: bool) -> list[Finding]:
    findings: list[Finding] = []

    def concern(summary: str, events: list[Any], source: str, next_step: str, **extra: Any) -> None:
        hosts = sorted({e.host for e in events if getattr(e, "host", None)})
        findings.append(
            Finding(
                check="nccl.env",
                severity=Severity.CONCERN,
                section=SECTION,
                summary=summary + (f" on {_listing(hosts)}" if hosts else ""),
                evidence={
                    "hosts": hosts[:100],
                    "examples": [f"{e.text[:240]} ({e.where})" for e in events[:3]],
                    "source": source,
                    **extra,
                },
                next_step=next_step,
                handoff=Handoff.NCCL,
            )
        )

    settings = sorted(scan.settings.values(), key=lambda s: (s.name, s.source, s.value))
    user = {s.name: s for s in settings if s.source == "environment"}
    ifname = user.get("NCCL_SOCKET_IFNAME")
    if events := _env_problem("socket_ifname_missing", scan):
        concern(
            "NCCL found no usable socket interface"
            + (f": NCCL_SOCKET_IFNAME={ifname.value} names none that exists" if ifname else ""),
            events,
            SOURCE_IFNAME_MISSING,
            "Set NCCL_SOCKET_IFNAME to an interface that exists on every host (`ip -br addr` inside the "
            "container), or a prefix list such as `^lo,docker`.",
            setting=ifname.value if ifname else None,
        )
    if events := _env_problem("link_local_iface", scan):
        concern(
            "NCCL may use a link-local interface (169.254.x.x / pod-id-link*) for sockets"
            + (f" (NCCL_SOCKET_IFNAME={ifname.value})" if ifname else ""),
            events,
            SOURCE_LINK_LOCAL,
            "Exclude it: NCCL_SOCKET_IFNAME=^lo,docker,veth,eni,pod-id-link0 (or name the primary "
            "VPC interface).",
        )
    if events := _env_problem("proto_ll_on_efa", scan):
        concern(
            "NCCL_PROTO allows LL/LL128 on an EFA endpoint that the OFI plugin says may corrupt data",
            events,
            SOURCE_PROTO,
            "Unset NCCL_PROTO (the plugin sets `simple` where needed) or set NCCL_PROTO=simple.",
        )
    net = user.get("NCCL_NET")
    if net and net.value.strip().lower() in {"socket", "ib"} and efa_expected:
        findings.append(
            _setting_concern(net, SOURCE_NCCL_NET, "forces NCCL off the aws-ofi-nccl plugin (EFA)")
        )
    p2p = user.get("NCCL_P2P_DISABLE")
    if p2p and p2p.value.strip() == "1":
        findings.append(
            _setting_concern(p2p, SOURCE_P2P_DISABLE, "disables NVLink/PCI peer-to-peer inside a node")
        )
    if settings:
        by_source: dict[str, list[str]] = {}
        for s in settings:
            by_source.setdefault(s.source, []).append(f"{s.name}={s.value}")
        findings.append(
            Finding(
                check="nccl.env",
                severity=Severity.INFO,
                section=SECTION,
                summary="; ".join(
                    f"set by {source}: {', '.join(dict.fromkeys(items))}"
                    for source, items in by_source.items()
                )[:900],
                evidence={
                    "settings": [
                        {
                            "name": s.name,
                            "value": s.value,
                            "set_by": s.source,
                            "hosts": sorted(s.hosts),
                            "lines": s.count,
                        }
                        for s in settings[:300]
                    ],
                    "note": "'environment' is whatever the process inherited: the user, the job script, the "
                    "container image or the platform — NCCL's log does not tell them apart",
                },
            )
        )
    elif not findings:
        findings.append(
            Finding(
                check="nccl.env",
                severity=Severity.INFO,
                section=SECTION,
                summary=(
                    "the logs show no NCCL_* / FI_* setting (NCCL logs them with "
                    "NCCL_DEBUG=INFO, subsystem ENV)"
                ),
            )
        )
    return findings


def _setting_concern(setting: Any, source: str, what: str) -> Finding:
    return Finding(
        check="nccl.env",
        severity=Severity.CONCERN,
        section=SECTION,
        summary=f"{setting.name}={setting.value} set by the environment {what}"
        + (f" on {_listing(setting.hosts)}" if setting.hosts else ""),
        evidence={
            "name": setting.name,
            "value": setting.value,
            "hosts": sorted(setting.hosts),
            "source": source,
            "example": setting.where,
        },
        next_step=f"Remove {setting.name} from the job environment unless it is a deliberate experiment.",
        handoff=Handoff.NCCL,
    )


def memlock_findings(scan: JobLogScan) -> list[Finding]:
    events = _env_problem("memreg", scan)
    if not events:
        return [
            Finding(
                check="nccl.memlock",
                severity=Severity.OK,
                section=SECTION,
                summary=f"no memory-registration failure in {scan.records} NCCL/PyTorch record(s) read",
            )
        ]
    findings: list[Finding] = []
    by_host: dict[str, list[Any]] = {}
    for event in events:
        by_host.setdefault(event.host or "unknown host", []).append(event)
    if len(by_host) > MAX_HOST_FINDINGS:
        return [
            Finding(
                check="nccl.memlock",
                severity=Severity.CONCERN,
                section=SECTION,
                summary=f"memory registration failed on {len(by_host)} hosts: {_listing(set(by_host))}",
                evidence={
                    "hosts": sorted(by_host)[:500],
                    "examples": [f"{e.text[:240]} ({e.where})" for e in events[:3]],
                    "source": SOURCE_MEMREG,
                },
                threshold="no failed fi_mr_reg / ibv_reg_mr",
                next_step="A failure on many hosts at once points at the job's container limits: check "
                "`ulimit -l` is unlimited inside it (docker --ulimit memlock=-1, Slurm "
                "PropagateResourceLimits).",
                handoff=Handoff.NCCL,
            )
        ]
    for host, host_events in sorted(by_host.items()):
        einval = any("RC: -22" in e.text or "Invalid argument" in e.text for e in host_events)
        findings.append(
            Finding(
                node=None if host == "unknown host" else host,
                check="nccl.memlock",
                severity=Severity.CONCERN,
                section=SECTION,
                summary=(
                    f"memory registration failed on {host} ({sum(e.count for e in host_events)} line(s)): "
                    f"{host_events[0].text[:160]}"
                ),
                evidence={
                    "host": host,
                    "ranks": sorted({e.rank for e in host_events if e.rank is not None}),
                    "examples": [f"{e.text[:240]} ({e.where})" for e in host_events[:3]],
                    "source": SOURCE_MEMREG_EINVAL if einval else SOURCE_MEMREG,
                },
                threshold="no failed fi_mr_reg / ibv_reg_mr",
                next_step=(
                    "Upgrade the EFA installer to >= 1.29.1 or set FI_EFA_SET_CUDA_SYNC_MEMOPS=0."
                    if einval
                    else "Check `ulimit -l` inside the container on this node is "
                    "unlimited (docker --ulimit memlock=-1, "
                    "Slurm PropagateResourceLimits, /etc/security/limits.conf); compare with the "
                    "node's host.memlock."
                ),
                handoff=Handoff.NCCL,
            )
        )
    return findings


def timeout_findings(scan: JobLogScan, rank_hosts: dict[int, str]) -> list[Finding]:
    failures = [
        e
        for e in scan.events.values()
        if e.kind
        not in {"memreg", "link_local_iface", "socket_ifname_missing", "proto_ll_on_efa", "libfabric_no_efa"}
    ]
    if not failures and not scan.watches and not scan.named:
        return [
            Finding(
                check="nccl.timeout",
                severity=Severity.OK,
                section=SECTION,
                summary=f"no watchdog timeout, NCCL error or desync report in {scan.records} record(s) read",
            )
        ]
    kinds: dict[str, int] = {}
    for event in failures:
        kinds[event.kind] = kinds.get(event.kind, 0) + event.count
    timed_out = sorted({rank for _pg, rank in scan.watches})
    where = localise(scan)
    hosts = list(where.hosts) or sorted({rank_hosts[r] for r in where.ranks if r in rank_hosts})
    what = ", ".join(f"{k.replace('_', ' ')} x{v}" for k, v in sorted(kinds.items())) or "desync report"
    if where.found:
        who = []
        if where.ranks:
            who.append(f"rank {_listing([str(r) for r in where.ranks])}")
        if hosts:
            who.append(f"host {_listing(hosts)}")
        culprit = f"culprit: {' on '.join(who)} — {where.method}: {where.detail[:200]}"
    else:
        reason = "; ".join(where.notes) or (
            f"all {len(timed_out)} rank(s) reporting timed out at the same collective"
            if timed_out
            else "the errors name no rank ahead of the others"
        )
        culprit = f"the logs do not tell which rank stalled first ({reason})"
    return [
        Finding(
            check="nccl.timeout",
            severity=Severity.CONCERN,
            section=SECTION,
            summary=f"{what}; {culprit}"[:1000],
            evidence={
                "events": kinds,
                "ranks_timed_out": timed_out[:500],
                "culprit": {
                    "ranks": where.ranks,
                    "hosts": hosts,
                    "method": where.method,
                    "detail": where.detail,
                }
                if where.found
                else None,
                "reasoning": where.notes[:20],
                "sequence": [
                    {
                        "pg": w.pg,
                        "rank": w.rank,
                        "seqs": {str(k): v for k, v in w.seqs.items()},
                        "work": w.work,
                        "last_enqueued": w.last_enqueued,
                        "last_completed": w.last_completed,
                        "host": w.host,
                        "line": w.where,
                    }
                    for w in list(scan.watches.values())[:50]
                ],
                "examples": [f"{e.text[:240]} ({e.where})" for e in failures[:5]],
                "source": "PyTorch ProcessGroupNCCL watchdog / TraceUtils.h desync report / torchfrtrace",
            },
            next_step=(
                "Run the node checks on the culprit's host first (GPU Xid/ECC, EFA counters) and read "
                "that rank's own stack (py-spy dump) at the hang."
                if where.found
                else "Rerun with TORCH_NCCL_DESYNC_DEBUG=1 and the flight recorder "
                "(TORCH_NCCL_TRACE_BUFFER_SIZE, TORCH_NCCL_DUMP_ON_TIMEOUT=1) so the next hang names "
                "the rank; check the nodes' GPU and EFA findings meanwhile."
            ),
            handoff=Handoff.NCCL,
        )
    ]


def process_ranks(scan: JobLogScan) -> dict[tuple[str, str], int]:
    """(host, pid) -> global rank: the process's rank in the largest communicator NCCL logged for
    it (`comm … rank R nranks N … Init COMPLETE`; the world communicator is the largest)."""
    found: dict[tuple[str, str], int] = {}
    for (host, pid), process in scan.processes.items():
        if process.comm_ranks:
            found[(host, pid)] = max(process.comm_ranks, key=lambda rank_size: (rank_size[1], -rank_size[0]))[
                0
            ]
    return found


def world_size(scan: JobLogScan) -> int | None:
    """The job's rank count: its largest communicator, as NCCL logged it."""
    sizes = [size for process in scan.processes.values() for _rank, size in process.comm_ranks]
    return max(sizes) if sizes else None


def rank_hosts(scan: JobLogScan) -> dict[int, str]:
    mapping: dict[int, str] = {}
    for (host, _pid), rank in process_ranks(scan).items():
        if host != "?":
            mapping.setdefault(rank, host)
    for process in scan.processes.values():
        for rank in process.ranks:
            mapping.setdefault(rank, process.host)
    for (_, rank), watch in scan.watches.items():
        if watch.host:
            mapping.setdefault(rank, watch.host)
    for event in scan.events.values():
        if event.rank is not None and event.host:
            mapping.setdefault(event.rank, event.host)
    return mapping


def evaluate(scan: JobLogScan, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[Finding]:
    """Every job-log finding, in catalog order (what the read bounds cut last)."""
    from hyperpod_perf.joblogs.coverage import coverage_findings
    from hyperpod_perf.straggler import straggler_findings

    transport = transport_findings(scan)
    efa_expected = any(f.evidence.get("efa_expected") for f in transport)
    hosts = rank_hosts(scan)
    findings = [
        *transport,
        *env_findings(scan, efa_expected),
        *memlock_findings(scan),
        *timeout_findings(scan, hosts),
        *straggler_findings(
            scan.timings, hosts, process_ranks(scan), scan.instance_type, thresholds, world_size(scan)
        ),
    ]
    if scan.dropped:
        findings.append(
            Finding(
                check="nccl.timeout",
                severity=Severity.INFO,
                section=SECTION,
                summary="some log detail passed the analysis bounds and was counted, not kept: "
                + ", ".join(f"{k} {v}" for k, v in sorted(scan.dropped.items())),
                evidence={"dropped": dict(scan.dropped)},
            )
        )
    findings.extend(coverage_findings(scan.bounds, logs_read=scan.logs, problems=scan.timings.problems))
    return findings
