"""Commands to paste for the 'act now' nodes: drain, check, then reboot or replace. Pure.

Printed for the operator, never run: this project changes nothing on a cluster. Each plan takes
the node out of scheduling first, shows how to confirm nothing of value still runs there, then
asks HyperPod to reboot or replace it, the destructive step marked as such. Sources:

- Slurm: `scontrol update nodename=... state=drain reason=...` lets running jobs finish and
  schedules nothing new; `squeue -w` lists what still runs there (Slurm's scontrol/squeue man pages).
- EKS: `kubectl cordon` / `kubectl drain --ignore-daemonsets --delete-emptydir-data`, on the node
  names HyperPod gives EKS nodes, `hyperpod-<instance id>` (AWS's HyperPod EKS guide,
  "Manually quarantine, replace, or reboot a node", and its GPU-partitioning cordon example).
- HyperPod, either orchestrator: `aws sagemaker batch-reboot-cluster-nodes` / `batch-replace-
  cluster-nodes --cluster-name ... --node-ids ...` (BatchRebootClusterNodes / BatchReplaceClusterNodes:
  at most 25 instance ids per request; a replacement destroys the instance's root and secondary
  volumes).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hyperpod_perf.domain.findings import Finding, Tier
from hyperpod_perf.domain.report import NodeSummary, Report
from hyperpod_perf.rules.urgency import urgency_of

#: BatchRebootClusterNodes / BatchReplaceClusterNodes: "You can specify between 1 and 25 instance IDs."
MAX_NODES_PER_REQUEST = 25


@dataclass(frozen=True)
class PasteCommand:
    text: str
    #: True where it interrupts work or destroys data: printed after the step that confirms it.
    destructive: bool = False
    note: str = ""


@dataclass(frozen=True)
class NodePlan:
    instance_id: str
    label: str  # how the operator knows the node: `ip-10-1-2-3 (i-0...)`
    action: str  # reboot | replace
    because: str  # the act-now findings, as check ids and a reason
    commands: list[PasteCommand] = field(default_factory=list)
    checks: tuple[str, ...] = ()  # the act-now check ids


def _replace_needed(f: Finding) -> bool:
    """Faults a reboot does not cure: out of spare rows, volatile DBE, a failed deep health check,
    a node that a repair did not fix."""
    ev = f.evidence
    if f.check == "gpu.remapped_rows":
        return bool(ev.get("failure"))
    if f.check == "gpu.ecc_uncorrected":
        return True
    if f.check == "health.deep_check" or f.check == "history.after_repair":
        return True
    return f.check == "health.hma" and "replace" in f.summary.lower()


def _node_label(summary: NodeSummary | None, instance_id: str) -> str:
    host = summary.hostname if summary else None
    return f"{host} ({instance_id})" if host and host != instance_id else instance_id


def _reason_text(findings: Sequence[Finding]) -> str:
    """`hyperpod-perf: gpu.xid, gpu.count`: what the drain reason records in Slurm."""
    checks = ", ".join(dict.fromkeys(f.check for f in findings))
    return f"hyperpod-perf: {checks}"


def node_plan(
    instance_id: str,
    findings: Sequence[Finding],
    *,
    cluster: str,
    orchestrator: str | None,
    summary: NodeSummary | None = None,
) -> NodePlan | None:
    """The plan for one node whose findings include an act-now one (None otherwise)."""
    urgent = [f for f in findings if (u := urgency_of(f)) is not None and u.tier is Tier.ACT_NOW]
    if not urgent or not instance_id.startswith("i-"):
        return None
    action = "replace" if any(_replace_needed(f) for f in urgent) else "reboot"
    reason = _reason_text(urgent)
    host = summary.hostname if summary else None
    q = shlex.quote
    commands: list[PasteCommand] = []
    if (orchestrator or "").lower() == "eks":
        node = f"hyperpod-{instance_id}"
        commands += [
            PasteCommand(f"kubectl cordon {q(node)}", note="no new pods on the node"),
            PasteCommand(
                f"kubectl get pods -A -o wide --field-selector spec.nodeName={q(node)}",
                note="confirm: which pods still run there (checkpoint the job first)",
            ),
            PasteCommand(
                f"kubectl drain {q(node)} --ignore-daemonsets --delete-emptydir-data",
                destructive=True,
                note="evicts the pods listed above",
            ),
        ]
    elif host:
        commands += [
            PasteCommand(
                f"scontrol update nodename={q(host)} state=drain reason={q(reason)}",
                note="running jobs finish, nothing new is scheduled",
            ),
            PasteCommand(
                f"squeue -w {q(host)}", note="confirm: no job left on the node (or requeue the one that is)"
            ),
        ]
    else:
        commands.append(
            PasteCommand("", note="Slurm node name not known: drain it by its host name first (scontrol)")
        )
    verb = "replace" if action == "replace" else "reboot"
    commands.append(
        PasteCommand(
            _hyperpod_call(verb, cluster, [instance_id]),
            destructive=True,
            note=(
                "destroys the instance's root and secondary volumes: keep what matters on FSx or S3"
                if action == "replace"
                else "reboots the instance (HyperPod BatchRebootClusterNodes)"
            ),
        )
    )
    commands.append(
        PasteCommand(
            f"hyperpod-perf diagnose --cluster {q(cluster)} --node {q(instance_id)}",
            note="when it is back: read it again (read-only)",
        )
    )
    return NodePlan(
        instance_id=instance_id,
        label=_node_label(summary, instance_id),
        action=action,
        because=f"{reason.removeprefix('hyperpod-perf: ')}: {urgency_of(urgent[0]).reason}",  # type: ignore[union-attr]
        commands=[c for c in commands if c.text or c.note],
        checks=tuple(dict.fromkeys(f.check for f in urgent)),
    )


def _hyperpod_call(action: str, cluster: str, instance_ids: Sequence[str]) -> str:
    ids = " ".join(shlex.quote(i) for i in instance_ids)
    return (
        f"aws sagemaker batch-{action}-cluster-nodes --cluster-name {shlex.quote(cluster)} --node-ids {ids}"
    )


def plans_for(report: Report) -> list[NodePlan]:
    """One plan per node with an act-now finding, in the fleet's order."""
    summaries = {s.node: s for s in report.nodes}
    by_id = {s.instance_id: s for s in report.nodes if s.instance_id}
    per_node: dict[str, list[Finding]] = {}
    for f in report.findings:
        if f.node:
            summary = summaries.get(f.node) or by_id.get(f.node)
            instance = (summary.instance_id if summary else None) or f.node
            per_node.setdefault(instance, []).append(f)
    plans = []
    for instance, findings in per_node.items():
        plan = node_plan(
            instance,
            findings,
            cluster=report.cluster.name,
            orchestrator=report.cluster.orchestrator,
            summary=by_id.get(instance) or summaries.get(instance),
        )
        if plan:
            plans.append(plan)
    return plans


def batched_api_commands(plans: Iterable[NodePlan], cluster: str) -> list[str]:
    """The HyperPod calls for every plan at once, 25 instance ids per request (the API's limit)."""
    out = []
    for action in ("reboot", "replace"):
        ids = [p.instance_id for p in plans if p.action == action]
        for start in range(0, len(ids), MAX_NODES_PER_REQUEST):
            out.append(_hyperpod_call(action, cluster, ids[start : start + MAX_NODES_PER_REQUEST]))
    return out


def command_lines(plan: NodePlan, indent: str = "   ") -> list[str]:
    """A plan as lines to paste, each command whole on one line. A note rides on its command as a
    trailing shell comment (pasting it is harmless); a destructive command's warning stands on
    its own line before it, so it is read before the command can be pasted."""
    lines = []
    for c in plan.commands:
        if not c.text:
            lines.append(f"{indent}# {c.note}")
        elif c.destructive:
            lines += [f"{indent}# DESTRUCTIVE - only after the check above: {c.note}", f"{indent}{c.text}"]
        else:
            lines.append(f"{indent}{c.text}" + (f"  # {c.note}" if c.note else ""))
    return lines
