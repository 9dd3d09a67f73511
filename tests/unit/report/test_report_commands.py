"""Commands to paste for the act-now nodes (report/commands.py), and where they appear.

Printed, never run: the plans are text. Expectations come from AWS's HyperPod documentation
(BatchRebootClusterNodes / BatchReplaceClusterNodes: at most 25 ids a request; EKS node names
`hyperpod-<instance id>`) and Slurm's scontrol / squeue.
"""

from __future__ import annotations

import json
import shlex

from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.domain.report import ClusterSummary, NodeSummary, Report, RunInfo
from hyperpod_perf.report.chatbot import render_chatbot
from hyperpod_perf.report.commands import (
    MAX_NODES_PER_REQUEST,
    batched_api_commands,
    command_lines,
    plans_for,
)
from hyperpod_perf.report.email import email_subject, render_email
from hyperpod_perf.report.html import render_html
from hyperpod_perf.report.markdown import render_markdown
from hyperpod_perf.rules.urgency import with_tiers

FALLEN = "i-0a1b2c3d4e5f60005"
SLOW = "i-0a1b2c3d4e5f60002"


def _finding(node: str, check: str, summary: str, **evidence: object) -> Finding:
    return Finding(
        node=node,
        check=check,
        severity=Severity.CONCERN,
        section=RunbookSection.GPU,
        summary=summary,
        evidence=dict(evidence),
    )


def _report(
    orchestrator: str = "Slurm", extra: list[Finding] | None = None, hostname: str = "ip-10-1-125-188"
) -> Report:
    findings = [
        _finding(SLOW, "host.cpu_governor", "192 of 192 CPU(s) not on the performance governor"),
        _finding(FALLEN, "gpu.xid", "Xid 79 on GPU 5", code=79, action="restart_node"),
        *(extra or []),
    ]
    return Report(
        cluster=ClusterSummary(name="ml-cluster", orchestrator=orchestrator, node_count=2),
        run=RunInfo(started="2026-12-03T07:54:17Z", reason="alarm"),
        findings=with_tiers(findings),
        nodes=[
            NodeSummary(node=FALLEN, instance_id=FALLEN, hostname=hostname),
            NodeSummary(node=SLOW, instance_id=SLOW, hostname="ip-10-1-0-2"),
        ],
    )


def test_a_slurm_node_is_drained_checked_then_rebooted_by_hyperpod() -> None:
    (plan,) = plans_for(_report())
    assert (plan.instance_id, plan.label, plan.action) == (FALLEN, f"ip-10-1-125-188 ({FALLEN})", "reboot")
    texts = [c.text for c in plan.commands]
    assert texts == [
        "scontrol update nodename=ip-10-1-125-188 state=drain reason='hyperpod-perf: gpu.xid'",
        "squeue -w ip-10-1-125-188",
        f"aws sagemaker batch-reboot-cluster-nodes --cluster-name ml-cluster --node-ids {FALLEN}",
        f"hyperpod-perf diagnose --cluster ml-cluster --node {FALLEN}",
    ]
    # only the HyperPod call is destructive, and its warning is printed before it
    assert [c.destructive for c in plan.commands] == [False, False, True, False]
    lines = command_lines(plan, indent="")
    warn = next(i for i, line in enumerate(lines) if line.startswith("# DESTRUCTIVE"))
    assert lines[warn + 1].startswith("aws sagemaker batch-reboot-cluster-nodes")


def test_an_eks_node_is_cordoned_its_pods_listed_then_drained() -> None:
    (plan,) = plans_for(_report("Eks"))
    node = f"hyperpod-{FALLEN}"
    assert [c.text for c in plan.commands][:3] == [
        f"kubectl cordon {node}",
        f"kubectl get pods -A -o wide --field-selector spec.nodeName={node}",
        f"kubectl drain {node} --ignore-daemonsets --delete-emptydir-data",
    ]
    assert plan.commands[2].destructive and not plan.commands[1].destructive


def test_a_fault_a_reboot_does_not_cure_asks_for_a_replacement_with_the_volume_warning() -> None:
    rows = _finding(FALLEN, "gpu.remapped_rows", "GPU 2 out of spare rows", pending=False, failure=True)
    (plan,) = plans_for(_report(extra=[rows]))
    assert plan.action == "replace"
    call = next(c for c in plan.commands if c.text.startswith("aws sagemaker"))
    assert call.text.startswith("aws sagemaker batch-replace-cluster-nodes --cluster-name ml-cluster")
    assert "root and secondary volumes" in call.note


def test_no_plan_without_an_act_now_finding() -> None:
    report = _report()
    calm = report.model_copy(update={"findings": [f for f in report.findings if f.check != "gpu.xid"]})
    assert plans_for(calm) == []


def test_a_hostile_host_name_is_quoted_for_the_shell() -> None:
    (plan,) = plans_for(_report(hostname="ip-1;rm -rf /"))
    drain = plan.commands[0].text
    assert shlex.split(drain)[2] == "nodename=ip-1;rm -rf /"  # one argument, never a second command
    assert "'nodename=ip-1;rm -rf /'" not in drain and "'ip-1;rm -rf /'" in drain


def test_hyperpod_calls_are_batched_25_ids_a_request() -> None:
    report = _report()
    (plan,) = plans_for(report)
    many = [plan.__class__(**{**plan.__dict__, "instance_id": f"i-{n:017x}"}) for n in range(60)]
    calls = batched_api_commands(many, "ml-cluster")
    assert [len(shlex.split(c)) - 6 for c in calls] == [25, 25, 10]
    assert MAX_NODES_PER_REQUEST == 25


def test_every_output_leads_with_act_now_and_carries_the_commands() -> None:
    report = _report()
    # the subject and the e-mail's first line lead with the tier
    assert email_subject(report).startswith(
        "[hyperpod-perf] ml-cluster: ACT NOW 1/2 nodes - 1 node is failing the job"
    )
    mail = render_email(report)
    assert mail.startswith("⚠ ACT NOW: 1 node is failing the job (gpu.xid)")
    # the Xid is listed before the governor, under their tiers
    assert (
        mail.index("ACT NOW - the node is failing the job")
        < mail.index("gpu.xid:")
        < mail.index("FIX SOON - degrades")
        < mail.index("host.cpu_governor:")
    )
    assert "COMMANDS TO PASTE for the 1 act-now node (printed, never run)" in mail
    assert "   scontrol update nodename=ip-10-1-125-188 state=drain reason='hyperpod-perf: gpu.xid'" in mail
    # Slack leads with the tier and names the first command
    chat = render_chatbot(report)
    assert chat["content"]["description"].startswith("*ACT NOW:* 1 node is failing the job (gpu.xid)")
    assert any("scontrol update nodename=ip-10-1-125-188" in s for s in chat["content"]["nextSteps"])
    assert chat["metadata"]["additionalContext"]["tier"] == "act now"
    # the report's HTML and Markdown show the commands block
    assert 'id="commands"' in render_html(report)
    assert "### Commands to paste for the act-now nodes (printed, never run)" in render_markdown(report)
    json.dumps(chat)  # serialisable as published
