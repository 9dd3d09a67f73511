"""Job-log findings joined to the cluster's nodes and to what the node checks found there.

A job log names hosts the way the job saw them: the EC2 host name (`ip-10-1-2-3`), a private IP
(Ray, pdsh), or an instance id. When a culprit, a fallback or a registration failure names one of
the diagnosed nodes, the finding gains that node's id and its own concerns (an Xid, an EFA port
down, a small memlock), because the two together usually are the explanation. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.domain.findings import Finding, Severity

_EC2_HOSTNAME = re.compile(r"^ip-(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,3})(?:\.|$)")
MAX_NODE_CONCERNS = 8


def _keys(node: ClusterNode) -> set[str]:
    keys = {node.instance_id}
    if node.hostname:
        keys.add(node.hostname.lower())
        keys.add(node.hostname.lower().split(".")[0])
        # EC2's IP name `ip-a-b-c-d` is the private IPv4 a.b.c.d: a log naming the IP (Ray, pdsh)
        # finds the node before NodePlacement has read its PrivatePrimaryIp (the job-log scan runs
        # beside it).
        if match := _EC2_HOSTNAME.match(node.hostname.lower()):
            keys.add(".".join(match.groups()))
    if node.private_ip:
        keys.add(node.private_ip)
    return keys


def resolve(host: str, index: dict[str, ClusterNode]) -> ClusterNode | None:
    """The node a host name from a log stands for: its name, short name, IP or the EC2 name's IP."""
    name = host.strip().lower()
    found = index.get(name) or index.get(name.split(".")[0])
    if found is None and (match := _EC2_HOSTNAME.match(name)):
        found = index.get(".".join(match.groups()))
    return found


def _named_hosts(finding: Finding) -> list[str]:
    evidence = finding.evidence
    hosts: list[str] = []
    culprit = evidence.get("culprit")
    if isinstance(culprit, dict):
        hosts.extend(culprit.get("hosts") or [])
    hosts.extend(evidence.get("fallback_hosts") or [])
    if finding.check == "nccl.memlock" and evidence.get("host"):
        hosts.append(evidence["host"])
    if finding.check == "nccl.env" and finding.severity is Severity.CONCERN:
        hosts.extend(evidence.get("hosts") or [])
    return [h for h in dict.fromkeys(hosts) if isinstance(h, str)]


def cross_reference(
    job_findings: Iterable[Finding], nodes: Iterable[ClusterNode], node_findings: Iterable[Finding]
) -> list[Finding]:
    """Job-log findings with `evidence.nodes`: the diagnosed nodes they name and those nodes' concerns."""
    index: dict[str, ClusterNode] = {}
    for node in nodes:
        for key in _keys(node):
            index.setdefault(key, node)
    concerns: dict[str, list[Finding]] = {}
    for finding in node_findings:
        if finding.node and finding.severity is Severity.CONCERN:
            concerns.setdefault(finding.node, []).append(finding)
    out: list[Finding] = []
    for finding in job_findings:
        matched: list[dict[str, Any]] = []
        for host in _named_hosts(finding):
            node = resolve(host, index)
            if node is None:
                continue
            own = concerns.get(node.instance_id, [])
            matched.append(
                {
                    "host": host,
                    "node": node.instance_id,
                    "node_concerns": [f"{f.check}: {f.summary}"[:300] for f in own[:MAX_NODE_CONCERNS]],
                }
            )
        if not matched:
            out.append(finding)
            continue
        update: dict[str, Any] = {"evidence": {**finding.evidence, "nodes": matched}}
        if finding.check == "nccl.memlock" and len(matched) == 1:
            update["node"] = matched[0]["node"]
        with_concerns = [m for m in matched if m["node_concerns"]]
        if with_concerns:
            first = with_concerns[0]
            update["summary"] = (
                f"{finding.summary} [node {first['node']} also: {first['node_concerns'][0][:160]}]"
            )[:1200]
        out.append(finding.model_copy(update=update))
    return out
