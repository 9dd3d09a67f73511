"""host.fabric_manager: NVL72 nodes need nvidia-fabricmanager active for their NVLink domain."""

from __future__ import annotations

from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.gpu.common import (
    GPU,
    HANDOFF_G,
    NEXT_FABRIC_MANAGER,
    NVL72_TYPE_RE,
    SYSTEMCTL_RC,
    SYSTEMD_STATES,
    _unavailable,
)

# --------------------------------------------------------------------------------------------
# host.fabric_manager and host.oom
# --------------------------------------------------------------------------------------------


def parse_systemctl_is_active(text: str) -> str:
    """`systemctl is-active <unit>` prints one state word (`active`, `inactive`, `failed`, ...)."""
    words = [line.strip().lower() for line in text.splitlines() if line.strip()]
    if not words or words[0] not in SYSTEMD_STATES:
        raise ValueError(f"not a systemctl is-active state: {text.strip()[:80]!r}")
    return words[0]


def check_fabric_manager(ctx: NodeContext) -> list[Finding]:
    """Only NVL72 nodes need the fabric manager, so only there is its section read at all:
    elsewhere `systemctl` may not even run (containers, no systemd) and that is no finding.

    On a known non-NVL72 type the check does not apply and says nothing: a "not applicable"
    line on every p5 node is noise in every node's card. Only an unknown type is an INFO."""
    check = "host.fabric_manager"
    instance_type = ctx.instance_type
    threshold = "NVL72 instance (p6e-gb200 / gb300) and nvidia-fabricmanager not active -> CONCERN"
    if instance_type is not None and not NVL72_TYPE_RE.search(instance_type):
        return []
    if instance_type is None:
        reason = "instance type unknown"
        return [
            ctx.finding(
                check,
                Severity.INFO,
                GPU,
                f"fabric manager check not applicable ({reason})",
                evidence={"instance_type": instance_type},
                threshold=threshold,
            )
        ]
    data = ctx.section("fabric-manager", parse_systemctl_is_active, accept_rc=SYSTEMCTL_RC)
    state = data.value
    if (missing := _unavailable(ctx, check, data, "fabric manager state")) is not None:
        return missing
    if state == "active":
        return [
            ctx.finding(
                check,
                Severity.OK,
                GPU,
                f"nvidia-fabricmanager active on {instance_type}",
                evidence={"instance_type": instance_type, "fabric_manager": state, "rc": data.rc},
                threshold=threshold,
                handoff=HANDOFF_G,
            )
        ]
    return [
        ctx.finding(
            check,
            Severity.CONCERN,
            GPU,
            f"nvidia-fabricmanager is {state} on NVL72 instance {instance_type}",
            evidence={"instance_type": instance_type, "fabric_manager": state, "rc": data.rc},
            threshold=threshold,
            next_step=NEXT_FABRIC_MANAGER,
            handoff=HANDOFF_G,
        )
    ]
