"""Every rendering names a node by its host name beside its instance id (issue 23, friction 1).

An on-call engineer types the Slurm / Kubernetes name (`scontrol`, `kubectl`) and AWS takes the
instance id (BatchRebootClusterNodes): the e-mail, its subject, Slack, both reports and the JSON
give both wherever a node is named.
"""

from __future__ import annotations

import json

from report_builders import finding, hot_gpu, node, report

from hyperpod_perf.domain.findings import RunbookSection, Severity
from hyperpod_perf.domain.report import SNS_SUBJECT_MAX_CHARS
from hyperpod_perf.report.chatbot import render_chatbot
from hyperpod_perf.report.email import email_subject, render_email
from hyperpod_perf.report.html import render_html
from hyperpod_perf.report.json_report import load_report, render_json
from hyperpod_perf.report.markdown import render_markdown

XID, EFA = "i-0a1b2c3d4e5f60005", "i-0a1b2c3d4e5f60006"
XID_HOST, EFA_HOST = "ip-10-1-125-188", "ip-10-1-42-84"
XID_LABEL = f"{XID_HOST} ({XID})"
EFA_LABEL = f"{EFA_HOST} ({EFA})"
PORT_DOWN = "1 of 32 EFA ports not ACTIVE"


def _two_bad_nodes():
    return report(
        [
            hot_gpu(XID, 95),
            finding(
                EFA, "efa.port_state", section=RunbookSection.NCCL, summary="1 of 32 EFA ports not ACTIVE"
            ),
            finding(None, "fs.throughput", section=RunbookSection.FILE_SYSTEM, summary="fs-1 saturated"),
        ],
        [
            node(XID, instance_id=XID, hostname=f"{XID_HOST}.us-west-2.compute.internal"),
            node(EFA, instance_id=EFA, hostname=EFA_HOST),
            node("i-0a1b2c3d4e5f60001", instance_id="i-0a1b2c3d4e5f60001", hostname="ip-10-1-1-1"),
        ],
    )


def test_email_names_each_node_by_host_name_and_instance_id() -> None:
    email = render_email(_two_bad_nodes())

    # the grouped concerns and the node list both carry the host name next to the id
    assert f"gpu.temperature: {XID_LABEL}: GPU 3 at 95 °C" in email
    nodes = email[email.index("NODES WITH CONCERNS") :].splitlines()
    assert nodes[1:3] == [f"- {XID_LABEL}: gpu.temperature", f"- {EFA_LABEL}: efa.port_state"]


def test_the_subject_names_a_lone_affected_node_with_both_names_within_the_sns_limit() -> None:
    one = report(
        [hot_gpu(XID, 95)],
        [node(XID, instance_id=XID, hostname=XID_HOST), node(EFA, instance_id=EFA, hostname=EFA_HOST)],
    )

    subject = email_subject(one)

    assert subject == f"[hyperpod-perf] c1: FIX SOON - {XID_LABEL} has GPU faults"
    assert len(subject) <= SNS_SUBJECT_MAX_CHARS and subject.isascii()


def test_the_subject_counts_instead_when_the_names_do_not_fit() -> None:
    # Given the longest cluster name HyperPod allows and one affected node
    one = report([hot_gpu(XID, 95)], [node(XID, instance_id=XID, hostname=XID_HOST)])
    one = one.model_copy(update={"cluster": one.cluster.model_copy(update={"name": "c" * 63})})

    subject = email_subject(one)

    assert len(subject) <= SNS_SUBJECT_MAX_CHARS
    assert subject.endswith("FIX SOON 1/1 node - 1 node has GPU faults")


def test_the_subject_counts_several_affected_nodes() -> None:
    subject = email_subject(_two_bad_nodes())

    assert subject.startswith("[hyperpod-perf] c1: FIX SOON 2/3 nodes - 1 node has GPU faults")
    assert len(subject) <= SNS_SUBJECT_MAX_CHARS


def test_slack_names_each_node_by_host_name_and_instance_id() -> None:
    message = render_chatbot(_two_bad_nodes())

    description = message["content"]["description"]
    assert f"`gpu.temperature` {XID_LABEL}: GPU 3 at 95 °C" in description
    assert f"`efa.port_state` {EFA_LABEL}: 1 of 32 EFA ports not ACTIVE" in description
    assert message["metadata"]["summary"].startswith(f"c1: {XID_LABEL} has GPU faults; {EFA_LABEL} has EFA")


def test_both_reports_name_each_node_by_host_name_and_instance_id() -> None:
    r = _two_bad_nodes()

    markdown = render_markdown(r)
    html = render_html(r)

    assert f"| {XID_LABEL} | " in markdown  # fleet table
    assert f"### ⚠ concern {XID_LABEL}\n" in markdown  # per-node heading
    first_screen = html[html.index('id="bad-nodes"') :]
    assert f">{XID_LABEL}</a>" in first_screen[: first_screen.index("</ul>")]
    assert f"{XID_LABEL}</a></th>" in html  # fleet table row header
    assert "ip-10-1-1-1 (i-0a1b2c3d4e5f60001)" in html  # the healthy list too


def test_report_json_keeps_the_instance_id_and_adds_the_host_name() -> None:
    r = _two_bad_nodes()

    doc = json.loads(render_json(r))

    hot = next(f for f in doc["findings"] if f["check"] == "gpu.temperature")
    assert (hot["node"], hot["hostname"]) == (XID, f"{XID_HOST}.us-west-2.compute.internal")
    cluster_level = next(f for f in doc["findings"] if f["check"] == "fs.throughput")
    assert (cluster_level["node"], cluster_level["hostname"]) == (None, None)
    group = next(g for g in doc["summary"]["groups"] if g["check"] == "gpu.temperature")
    assert (group["nodes"], group["node_labels"]) == ([XID], [XID_LABEL])
    # and the stored report reads back unchanged (the derived field is not part of the model)
    assert load_report(render_json(r)).findings == r.findings


def test_a_node_without_a_known_host_name_is_named_by_its_id_alone() -> None:
    r = report([hot_gpu(XID, 95, gpu=1)], [node(XID, instance_id=XID)])

    email = render_email(r)

    assert f"- {XID}: gpu.temperature" in email
    assert f"({XID})" not in email
    assert render_chatbot(r)["content"]["description"].count(XID) == 1
    assert [f.severity for f in r.findings] == [Severity.CONCERN]
