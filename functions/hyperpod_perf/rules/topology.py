"""Topology rules (runbook § A): where the job's nodes sit.

Why only accelerated nodes: collectives run between the GPU/Trainium workers; a controller or
login node in another AZ costs nothing. When no accelerated node is known, all nodes count.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from hyperpod_perf.domain.cluster import ClusterNode, is_accelerated, is_nvl72, normalise_instance_type
from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity

MAX_LISTED_NODES = 20
AZ_SPREAD_THRESHOLD = "nodes in > 1 AZ"
ULTRASERVER_THRESHOLD = "NVL72 job nodes on > 1 UltraServer"


def job_nodes(nodes: Sequence[ClusterNode]) -> list[ClusterNode]:
    accelerated = [n for n in nodes if is_accelerated(n.instance_type)]
    return accelerated or list(nodes)


def az_spread(nodes: Sequence[ClusterNode]) -> list[Finding]:
    """topology.az_spread: the job's nodes in more than one Availability Zone -> CONCERN."""
    considered = job_nodes(nodes)
    if not considered:
        return []
    placed = [n for n in considered if n.az or n.az_id]
    unplaced = [n.instance_id for n in considered if not (n.az or n.az_id)]
    if not placed:
        return [
            Finding(
                check="topology.az_spread",
                severity=Severity.INFO,
                section=RunbookSection.NCCL,
                summary=f"placement not known for any of {len(considered)} node(s): AZ spread not checked",
                evidence={"nodes_without_placement": len(unplaced)},
            )
        ]
    by_az: dict[str, list[str]] = defaultdict(list)
    for node in placed:
        by_az[_az_label(node)].append(node.instance_id)
    counts = {az: len(ids) for az, ids in sorted(by_az.items())}
    evidence: dict[str, object] = {"nodes_per_az": counts, "nodes_considered": len(considered)}
    if unplaced:
        evidence["nodes_without_placement"] = unplaced[:MAX_LISTED_NODES]
    if len(by_az) == 1:
        (az,) = by_az
        return [
            Finding(
                check="topology.az_spread",
                severity=Severity.OK,
                section=RunbookSection.NCCL,
                summary=f"all {len(placed)} placed node(s) are in one Availability Zone ({az})",
                evidence=evidence,
                threshold=AZ_SPREAD_THRESHOLD,
            )
        ]
    majority = max(counts, key=lambda az: (counts[az], az))
    tied = [az for az, n in counts.items() if n == counts[majority]]
    minority = {az: ids[:MAX_LISTED_NODES] for az, ids in sorted(by_az.items()) if az != majority}
    evidence["nodes_outside_majority_az"] = minority
    spread = ", ".join(f"{az}: {n}" for az, n in counts.items())
    return [
        Finding(
            check="topology.az_spread",
            severity=Severity.CONCERN,
            section=RunbookSection.NCCL,
            summary=f"job nodes span {len(by_az)} Availability Zones ({spread}): cross-AZ traffic slows NCCL",
            evidence=evidence,
            threshold=AZ_SPREAD_THRESHOLD,
            next_step=(
                f"Run tightly coupled jobs on nodes of one AZ ({_where_most_are(tied, counts)}); if the "
                "instance groups themselves span AZs, re-provision them in one subnet/AZ."
            ),
            handoff=Handoff.CLUSTER_B,
        )
    ]


def _where_most_are(tied: list[str], counts: dict[str, int]) -> str:
    """`most are in X` only when X holds more nodes than any other AZ; an even split says so."""
    if len(tied) == 1:
        return f"most are in {tied[0]}"
    return f"no AZ holds most of them: {' and '.join(sorted(tied))} hold {counts[tied[0]]} each"


def _az_label(node: ClusterNode) -> str:
    if node.az and node.az_id:
        return f"{node.az} ({node.az_id})"
    return node.az or node.az_id or "?"


def ultraserver(nodes: Sequence[ClusterNode]) -> list[Finding]:
    """topology.ultraserver: NVL72 nodes on more than one UltraServer -> CONCERN (per instance type)."""
    nvl72 = [n for n in nodes if is_nvl72(n.instance_type)]
    if not nvl72:
        return []
    findings: list[Finding] = []
    by_type: dict[str, list[ClusterNode]] = defaultdict(list)
    for node in nvl72:
        by_type[normalise_instance_type(node.instance_type) or "?"].append(node)
    for instance_type, members in sorted(by_type.items()):
        unknown = [n.instance_id for n in members if not n.ultraserver_id]
        servers = Counter(n.ultraserver_id for n in members if n.ultraserver_id)
        evidence: dict[str, object] = {"instance_type": instance_type, "nodes_per_ultraserver": dict(servers)}
        if unknown:
            evidence["nodes_without_ultraserver_id"] = unknown[:MAX_LISTED_NODES]
        if not servers:
            findings.append(
                Finding(
                    check="topology.ultraserver",
                    severity=Severity.INFO,
                    section=RunbookSection.NCCL,
                    summary=(
                        f"{len(members)} {instance_type} node(s) report no UltraServer id: "
                        "placement not checked"
                    ),
                    evidence=evidence,
                )
            )
        elif len(servers) == 1:
            (server,) = servers
            findings.append(
                Finding(
                    check="topology.ultraserver",
                    severity=Severity.OK,
                    section=RunbookSection.NCCL,
                    summary=f"all {servers[server]} {instance_type} node(s) share UltraServer {server}",
                    evidence=evidence,
                    threshold=ULTRASERVER_THRESHOLD,
                )
            )
        else:
            findings.append(
                Finding(
                    check="topology.ultraserver",
                    severity=Severity.CONCERN,
                    section=RunbookSection.NCCL,
                    summary=(
                        f"{len(members)} {instance_type} node(s) span {len(servers)} UltraServers: "
                        "traffic between them leaves the NVLink domain"
                    ),
                    evidence=evidence,
                    threshold=ULTRASERVER_THRESHOLD,
                    next_step=(
                        "Place each tightly coupled NVL72 job within one UltraServer (EKS label "
                        "topology.k8s.aws/ultraserver-id, Slurm topology block); capacity changes go to "
                        "the cluster debugger."
                    ),
                    handoff=Handoff.CLUSTER_B,
                )
            )
    return findings


def evaluate(nodes: Sequence[ClusterNode]) -> list[Finding]:
    return az_spread(nodes) + ultraserver(nodes)
