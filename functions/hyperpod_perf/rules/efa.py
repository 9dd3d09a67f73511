"""EFA rules (runbook § A): devices present, ports ACTIVE, libfabric sees the provider, error counters.

A node whose EFA is missing or degraded makes every collective it joins slow (NCCL falls back to
TCP or retransmits), which is the "some node sets are slow" pattern of problem family A.
"""

from __future__ import annotations

from typing import Any

from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.parse.efa import (
    EfaCounters,
    EfaPorts,
    FiInfo,
    parse_efa_counters,
    parse_efa_ports,
    parse_fi_info,
)
from hyperpod_perf.rules.context import NodeContext, Section, SectionState

SECTION = RunbookSection.NCCL

#: Accelerated instance families with EFA, and the sizes that have it (None: every size).
#: Source: the EC2 instance-type data (`EfaInfo` / EfaSupported), as tabulated in eksctl's
#: instance_types.go, plus the NVL72 UltraServer types (p6e-gb200/gb300), which require EFA.
EFA_CAPABLE: dict[str, frozenset[str] | None] = {
    "p3dn": frozenset({"24xlarge"}),
    "p4d": None,
    "p4de": None,
    "p5": None,
    "p5e": None,
    "p5en": None,
    "p6-b200": None,
    "p6-b300": None,
    "p6e-gb200": None,
    "p6e-gb300": None,
    "g4dn": frozenset({"8xlarge", "12xlarge", "16xlarge", "metal"}),
    "g5": frozenset({"8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"}),
    "g6": frozenset({"8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"}),
    "g6e": frozenset({"8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"}),
    "gr6": frozenset({"8xlarge"}),
    "trn1": frozenset({"32xlarge"}),
    "trn1n": None,
    "trn2": None,
    "trn2u": None,
    "inf1": frozenset({"24xlarge"}),
    "dl2q": None,
}

#: EFA devices the instance type provides, where it is published and certain (used to flag a node
#: that lost some of its devices). p4d 4 and p5 32 are also what the real fixtures show.
EXPECTED_EFA_DEVICES: dict[str, int] = {
    "p4d.24xlarge": 4,
    "p4de.24xlarge": 4,
    "p5.48xlarge": 32,
    "p5e.48xlarge": 32,
    "p5en.48xlarge": 16,
}


def efa_capability(instance_type: str | None) -> bool | None:
    """True: the type has EFA; False: a known family whose size has none; None: unknown type."""
    if not instance_type:
        return None
    family, _, size = instance_type.removeprefix("ml.").partition(".")
    if family not in EFA_CAPABLE:
        return None
    sizes = EFA_CAPABLE[family]
    return sizes is None or size in sizes


def evaluate(ctx: NodeContext) -> list[Finding]:
    ports_data = ctx.section("efa-ports", parse_efa_ports, accept_rc=(0, 1, 2))
    ports: EfaPorts | None = ports_data.value
    return [
        *_devices(ctx, ports_data, ports),
        *_port_state(ctx, ports_data, ports),
        *_provider(ctx, ports),
        *_counters(ctx),
    ]


def _devices(ctx: NodeContext, data: Section, ports: EfaPorts | None) -> list[Finding]:
    if ports is None:
        return (
            []
            if data.state is SectionState.FAILED
            else [ctx.not_present("efa.devices", SECTION, "EFA devices", data)]
        )
    instance_type = ctx.instance_type
    capable = efa_capability(instance_type)
    devices = list(ports.devices)
    expected = EXPECTED_EFA_DEVICES.get(instance_type or "")
    evidence: dict[str, Any] = {"instance_type": instance_type, "devices": len(devices), "names": devices}
    if expected is not None:
        evidence["expected"] = expected
    if ports.missing_notes:
        evidence["read_errors"] = list(ports.missing_notes[:3])
    if devices and expected is not None and len(devices) < expected:
        return [
            ctx.finding(
                "efa.devices",
                Severity.CONCERN,
                SECTION,
                f"only {len(devices)} of the {expected} EFA devices of {instance_type} are present",
                evidence=evidence,
                threshold=f"devices >= {expected} ({instance_type})",
                next_step=_missing_device_step(),
                handoff=Handoff.NODE_A,
            )
        ]
    if devices:
        return [
            ctx.finding(
                "efa.devices",
                Severity.OK,
                SECTION,
                f"{len(devices)} EFA device(s) present",
                evidence=evidence,
            )
        ]
    if capable:
        return [
            ctx.finding(
                "efa.devices",
                Severity.CONCERN,
                SECTION,
                f"no EFA device on {instance_type}, an EFA-capable instance type",
                evidence=evidence,
                threshold="at least one EFA device on an EFA-capable instance type",
                next_step=_missing_device_step(),
                handoff=Handoff.NODE_A,
            )
        ]
    if capable is False:
        reason = f"{instance_type} has no EFA"
    elif instance_type:
        reason = f"instance type {instance_type} not in the EFA table"
    else:
        reason = "instance type unknown"
    return [
        ctx.finding("efa.devices", Severity.INFO, SECTION, f"no EFA device ({reason})", evidence=evidence)
    ]


def _missing_device_step() -> str:
    return (
        "On the node: `ls /sys/class/infiniband` and `lsmod | grep efa` (driver loaded?), and check that the "
        "instance's network interfaces were attached as EFA. A node missing EFA devices slows every "
        "collective it joins: replace or reboot it (hyperpod-node-debugger § A)."
    )


def _port_state(ctx: NodeContext, data: Section, ports: EfaPorts | None) -> list[Finding]:
    if ports is None:
        return (
            []
            if data.state is SectionState.FAILED
            else [ctx.not_present("efa.port_state", SECTION, "EFA port states", data)]
        )
    if not ports.ports:
        return [
            ctx.finding(
                "efa.port_state",
                Severity.INFO,
                SECTION,
                "EFA port states: not present (no EFA device)",
                evidence={"section": data.name, "ports": 0},
            )
        ]
    total = len(ports.ports)
    down = {
        f"{p.device}/{p.port}": f"{p.state_code}: {p.state}" if p.state_code >= 0 else p.state
        for p in ports.down
    }
    active = total - len(down)
    evidence: dict[str, Any] = {"active": active, "total": total}
    if down:
        evidence["not_active"] = down
        listed = ", ".join(f"{port} ({state})" for port, state in down.items())
        return [
            ctx.finding(
                "efa.port_state",
                Severity.CONCERN,
                SECTION,
                f"{len(down)} of {total} EFA port(s) not ACTIVE: {listed}",
                evidence=evidence,
                threshold="every EFA port ACTIVE",
                next_step=(
                    "Read `/sys/class/infiniband/<dev>/ports/1/state` again and check dmesg for efa errors; "
                    "a port that stays down needs the node replaced or rebooted (hyperpod-node-debugger § A)."
                ),
                handoff=Handoff.NODE_A,
            )
        ]
    return [
        ctx.finding(
            "efa.port_state", Severity.OK, SECTION, f"all {total} EFA port(s) ACTIVE", evidence=evidence
        )
    ]


def _provider(ctx: NodeContext, ports: EfaPorts | None) -> list[Finding]:
    data = ctx.section("fi-info", parse_fi_info)
    info: FiInfo | None = data.value
    if info is None:
        return (
            []
            if data.state is SectionState.FAILED
            else [
                ctx.not_present(
                    "efa.provider",
                    SECTION,
                    "libfabric EFA provider (fi_info; the training container may carry its own libfabric)",
                    data,
                )
            ]
        )
    devices = list(ports.devices) if ports is not None else []
    failing = data.rc not in (0, None) or not info.ok
    evidence: dict[str, Any] = {
        "rc": data.rc,
        "efa_providers": len(info.efa_providers),
        "provider_versions": list(info.versions),
        "domains": list(info.domains),
        "endpoint_types": list(info.endpoint_types),
    }
    if info.error:
        evidence["error"] = info.error
    if failing and devices:
        return [
            ctx.finding(
                "efa.provider",
                Severity.CONCERN,
                SECTION,
                f"`fi_info -p efa` finds no EFA provider while {len(devices)} EFA device(s) exist: "
                "NCCL would fall back to TCP",
                evidence={**evidence, "devices": len(devices)},
                threshold="fi_info -p efa lists the efa provider when EFA devices exist",
                next_step=(
                    "Check the EFA installer / libfabric on the node (`fi_info -p efa -t FI_EP_RDM`, "
                    "`/opt/amazon/efa/bin/fi_info`), and in the job log look for `NET/OFI` vs `NET/Socket`."
                ),
                handoff=Handoff.NCCL,
            )
        ]
    if failing and ports is None and efa_capability(ctx.instance_type):
        # No device list came with it, but the instance type is built with EFA: `fi_getinfo: -61`
        # (FI_ENODATA) there is the failure the p4d guides tell you to look for. (A device list that
        # came back empty is efa.devices' CONCERN; the provider failing follows from it: INFO.)
        return [
            ctx.finding(
                "efa.provider",
                Severity.CONCERN,
                SECTION,
                f"`fi_info -p efa` finds no EFA provider on {ctx.instance_type}, an EFA instance type: "
                "NCCL would fall back to TCP",
                evidence={**evidence, "instance_type": ctx.instance_type, "devices": len(devices)},
                threshold="fi_info -p efa lists the efa provider on an EFA-capable instance type",
                next_step=(
                    "Check that the EFA devices are attached (`ls /sys/class/infiniband`), then the EFA "
                    "installer / libfabric (`/opt/amazon/efa/bin/fi_info -p efa -t FI_EP_RDM`), and in the "
                    "job log look for `NET/OFI` vs `NET/Socket`."
                ),
                handoff=Handoff.NCCL,
            )
        ]
    if failing:
        return [
            ctx.finding(
                "efa.provider",
                Severity.INFO,
                SECTION,
                "no libfabric EFA provider (and no EFA device seen)",
                evidence={**evidence, "instance_type": ctx.instance_type},
            )
        ]
    listed = set(info.devices)  # a property that rebuilds its tuple: read it once
    missing = [d for d in devices if d not in listed]
    if missing:
        evidence["devices_not_listed_by_fi_info"] = missing
    return [
        ctx.finding(
            "efa.provider",
            Severity.OK,
            SECTION,
            f"libfabric lists {len(info.efa_providers)} EFA endpoint(s) "
            f"(provider version {', '.join(info.versions) or 'unknown'})",
            evidence=evidence,
        )
    ]


def _counters(ctx: NodeContext) -> list[Finding]:
    data = ctx.section("efa-counters", parse_efa_counters, accept_rc=(0, 1, 2))
    counters: EfaCounters | None = data.value
    if counters is None:
        return (
            []
            if data.state is SectionState.FAILED
            else [ctx.not_present("efa.counters", SECTION, "EFA error counters", data)]
        )
    watched = ctx.thresholds.efa_error_counters
    if not counters.devices:
        return [
            ctx.finding(
                "efa.counters",
                Severity.INFO,
                SECTION,
                "EFA error counters: not present (no EFA device)",
                evidence={"section": data.name, "devices": 0},
            )
        ]
    nonzero: dict[str, dict[str, int]] = {}
    for device, values in counters.devices.items():
        bad = {name: values[name] for name in watched if values.get(name, 0) > 0}
        if bad:
            nonzero[device] = bad
    present = sorted({name for values in counters.devices.values() for name in values if name in watched})
    evidence: dict[str, Any] = {
        "devices_checked": len(counters.devices),
        "counters_checked": present,
        "counters_not_exposed": [name for name in watched if name not in present],
    }
    if counters.unreadable:
        evidence["unreadable"] = list(counters.unreadable[:10])
    threshold = f"{', '.join(watched)} > 0"
    if nonzero:
        listed = "; ".join(
            f"{device}: " + ", ".join(f"{name}={value}" for name, value in values.items())
            for device, values in nonzero.items()
        )
        return [
            ctx.finding(
                "efa.counters",
                Severity.CONCERN,
                SECTION,
                f"EFA error counters non-zero on {len(nonzero)} device(s): {listed}",
                evidence={**evidence, "nonzero": nonzero},
                threshold=threshold,
                next_step=(
                    "The counters are cumulative since the driver loaded: read them again after a run to see "
                    "whether they grow, and compare with other nodes; growing retransmit/unresponsive-remote "
                    "counters point at a peer or the path to it, rx_drops at this node."
                ),
            )
        ]
    return [
        ctx.finding(
            "efa.counters",
            Severity.OK,
            SECTION,
            f"EFA error counters zero on {len(counters.devices)} device(s)",
            evidence=evidence,
            threshold=threshold,
        )
    ]
