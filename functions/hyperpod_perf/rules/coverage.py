"""Continuous health coverage (the runbook's closing advice): what HyperPod could catch by itself.

Both checks only print the command that enables the feature; this project never runs it
(principle 1: read-only, provably). The deep-health command repeats the group's current
settings because UpdateCluster takes a full instance-group specification.
"""

from __future__ import annotations

import json
import shlex

from hyperpod_perf.domain.cluster import ClusterInfo, InstanceGroup, is_accelerated
from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity

REQUIRED_DEEP_HEALTH_CHECKS: tuple[str, ...] = ("InstanceStress", "InstanceConnectivity")
DEEP_HEALTH_THRESHOLD = (
    "GPU instance group without OnStartDeepHealthChecks [InstanceStress, InstanceConnectivity]"
)
NODE_RECOVERY_THRESHOLD = "NodeRecovery != Automatic"
NOT_RUN = "(not run by this tool)"


def node_recovery_command(cluster: ClusterInfo) -> str:
    region = f" --region {cluster.region}" if cluster.region else ""
    name = shlex.quote(cluster.name)
    return f"aws sagemaker update-cluster --cluster-name {name} --node-recovery Automatic{region}"


def deep_health_command(cluster: ClusterInfo, group: InstanceGroup) -> str:
    spec: dict[str, object] = {"InstanceGroupName": group.name}
    if group.instance_type:
        spec["InstanceType"] = group.instance_type
    count = group.target_count if group.target_count is not None else group.current_count
    if count is not None:
        spec["InstanceCount"] = count
    if group.life_cycle_config:
        spec["LifeCycleConfig"] = group.life_cycle_config
    if group.execution_role:
        spec["ExecutionRole"] = group.execution_role
    if group.threads_per_core is not None:
        spec["ThreadsPerCore"] = group.threads_per_core
    checks = list(dict.fromkeys([*group.on_start_deep_health_checks, *REQUIRED_DEEP_HEALTH_CHECKS]))
    spec["OnStartDeepHealthChecks"] = checks
    region = f" --region {cluster.region}" if cluster.region else ""
    payload = json.dumps([spec], separators=(",", ":"))
    return (
        f"aws sagemaker update-cluster --cluster-name {shlex.quote(cluster.name)} "
        f"--instance-groups {shlex.quote(payload)}{region}"
    )


def node_recovery(cluster: ClusterInfo) -> list[Finding]:
    """coverage.node_recovery: NodeRecovery != Automatic -> INFO with the command to enable it."""
    mode = cluster.node_recovery
    if mode == "Automatic":
        return [
            Finding(
                check="coverage.node_recovery",
                severity=Severity.OK,
                section=RunbookSection.COVERAGE,
                summary="NodeRecovery is Automatic: HyperPod reboots or replaces nodes HMA marks unhealthy",
                evidence={"node_recovery": mode},
                threshold=NODE_RECOVERY_THRESHOLD,
            )
        ]
    command = node_recovery_command(cluster)
    return [
        Finding(
            check="coverage.node_recovery",
            severity=Severity.INFO,
            section=RunbookSection.COVERAGE,
            summary=(
                f"NodeRecovery is {mode or 'not set'}: faulty nodes found by the Health Monitoring Agent "
                "wait for an operator"
            ),
            evidence={"node_recovery": mode, "command": command},
            threshold=NODE_RECOVERY_THRESHOLD,
            next_step=f"To let HyperPod reboot or replace unhealthy nodes itself, run {NOT_RUN}: {command}",
        )
    ]


def deep_health_checks(cluster: ClusterInfo) -> list[Finding]:
    """coverage.deep_health_checks: a GPU group without both on-start checks -> INFO with the command."""
    findings: list[Finding] = []
    covered: list[str] = []
    for group in cluster.instance_groups:
        if not is_accelerated(group.instance_type):
            continue
        missing = [c for c in REQUIRED_DEEP_HEALTH_CHECKS if c not in group.on_start_deep_health_checks]
        if not missing:
            covered.append(group.name)
            continue
        command = deep_health_command(cluster, group)
        findings.append(
            Finding(
                check="coverage.deep_health_checks",
                severity=Severity.INFO,
                section=RunbookSection.COVERAGE,
                summary=(
                    f"instance group {group.name} ({group.instance_type}) lacks on-start deep health "
                    f"check(s) {' / '.join(missing)}: new or replaced nodes join without that baseline"
                ),
                evidence={
                    "group": group.name,
                    "instance_type": group.instance_type,
                    "configured": list(group.on_start_deep_health_checks),
                    "missing": missing,
                    "command": command,
                },
                threshold=DEEP_HEALTH_THRESHOLD,
                next_step=(
                    "InstanceStress (stress-ng, GPU/PCI counts, DCGM level 4, EFA loopback) and "
                    "InstanceConnectivity (multi-node NCCL all-reduce) gate every new node. Review that the "
                    f"specification matches the group's current settings, then run {NOT_RUN}: {command}"
                ),
            )
        )
    if covered:
        findings.insert(
            0,
            Finding(
                check="coverage.deep_health_checks",
                severity=Severity.OK,
                section=RunbookSection.COVERAGE,
                summary=f"on-start deep health checks enabled on GPU instance group(s) {', '.join(covered)}",
                evidence={"groups": covered},
                threshold=DEEP_HEALTH_THRESHOLD,
            ),
        )
    return findings


def evaluate(cluster: ClusterInfo) -> list[Finding]:
    return node_recovery(cluster) + deep_health_checks(cluster)
