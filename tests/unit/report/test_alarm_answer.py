"""The verdict answers the alarm: what it measures and saw, what explains it, what was ruled out and
the next step as a command; in the e-mail, Slack, Markdown and HTML, escaped for each.

Alarms are the real captures (tests/fixtures/real/events) read by the trigger, or the deployed FSx
alarm's shape (infra/constructs/triggers.py) as the demo delivers it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_builders import finding, node, report

from hyperpod_perf.domain.alarm import AlarmContext, AlarmMetric
from hyperpod_perf.domain.findings import RunbookSection, Severity
from hyperpod_perf.domain.report import FileSystemSummary, MetricPoint, RunInfo
from hyperpod_perf.pipeline.triggers import alarm_context
from hyperpod_perf.report import alarm_answer
from hyperpod_perf.report.chatbot import render_chatbot
from hyperpod_perf.report.email import MAX_LINES, render_email
from hyperpod_perf.report.html import render_html
from hyperpod_perf.report.markdown import render_markdown
from hyperpod_perf_dev.synthetic import synthetic_report

EVENTS = Path(__file__).parents[2] / "fixtures" / "real" / "events"
FS = "fs-0123456789abcdef0"
B, G, A = RunbookSection.FILE_SYSTEM, RunbookSection.GPU, RunbookSection.NCCL
OK, CONCERN = Severity.OK, Severity.CONCERN


def real_alarm(name: str) -> AlarmContext:
    return alarm_context(json.loads((EVENTS / name).read_text())["detail"])


def fsx_alarm() -> AlarmContext:
    """The deployed FSx alarm (metric math over r and w), 15 datapoints at 93 %."""

    def read_write(metric_id: str, name: str) -> AlarmMetric:
        return AlarmMetric(
            id=metric_id,
            namespace="AWS/FSx",
            name=name,
            dimensions={"FileSystemId": FS},
            stat="Sum",
            period_s=60,
            return_data=False,
        )

    return AlarmContext(
        name="hyperpod-perf-stack-fsx-c1-" + FS,
        state_reason="Threshold Crossed: 15 out of the last 15 datapoints [...] were greater than or equal "
        "to the threshold (90.0)",
        state_time="2026-12-02T14:45:00.000+0000",
        threshold=90.0,
        comparison=">=",
        period_s=60,
        recent_datapoints=(93.0,) * 14 + (93.5,),
        metrics=(
            AlarmMetric(
                id="expr_1",
                expression="(r + w) / PERIOD(r) / 600000000 * 100",
                label="Throughput % of provisioned",
            ),
            read_write("r", "DataReadBytes"),
            read_write("w", "DataWriteBytes"),
        ),
    )


def lustre(mbps: list[float]) -> FileSystemSummary:
    points = [
        MetricPoint(timestamp=f"2026-12-02T{12 + i // 60:02d}:{i % 60:02d}:00+00:00", value=v)
        for i, v in enumerate(mbps)
    ]
    return FileSystemSummary(file_system_id=FS, type="LUSTRE", provisioned_mbps=600.0, throughput_mbps=points)


NODES = [node(f"i-0a1b2c3d4e5f6000{k}") for k in range(1, 5)]
HEADROOM = [
    finding(None, "fs.throughput", OK, f"{FS} has headroom: mean 35.0%, peak 93.6% of provisioned", B),
    finding(None, "fs.metadata", OK, f"{FS} metadata has headroom: peak 16.5%", B),
    *(finding(n.node, "host.iowait", OK, "iowait 1%", B) for n in NODES),
    *(finding(n.node, "gpu.xid", OK, "no Xid", G) for n in NODES),
]


def with_alarm(findings, alarm: AlarmContext, **kw):
    r = report(findings, NODES, **kw)
    return r.model_copy(
        update={"run": RunInfo(location="s3://bucket-a/c1/run1/", reason="alarm", alarm=alarm)}
    )


# ------------------------------------------------------------------------------------------ the kind


@pytest.mark.parametrize(
    ("alarm", "kind"),
    [
        (fsx_alarm(), "storage"),  # AWS/FSx
        (real_alarm("cw-alarm-state-change_single-metric.json"), "compute"),  # AWS/EC2 CPUUtilization
        (real_alarm("cw-alarm-state-change_metric-math.json"), "compute"),  # EC2 network, metric math
        (AlarmContext(name="a", metrics=(AlarmMetric(namespace="Training", name="StepTimeMs"),)), "compute"),
        (
            AlarmContext(name="a", metrics=(AlarmMetric(namespace="Training", name="DataLoaderWaitMs"),)),
            "storage",
        ),
        (
            AlarmContext(
                name="a",
                metrics=(AlarmMetric(namespace="CWAgent", name="x", dimensions={"FileSystemId": FS}),),
            ),
            "storage",
        ),
    ],
)
def test_an_alarm_is_storage_or_compute_by_what_it_measures(alarm, kind):
    assert alarm_answer.alarm_kind(alarm) == kind


def test_what_an_alarm_measures_in_one_line():
    assert alarm_answer.measures(fsx_alarm()) == (
        "Throughput % of provisioned = (r + w) / PERIOD(r) / 600000000 * 100 of AWS/FSx DataReadBytes, "
        f"DataWriteBytes (Sum, 60 s) for FileSystemId={FS}; in ALARM when >= 90"
    )
    assert alarm_answer.measures(real_alarm("cw-alarm-state-change_single-metric.json")) == (
        "AWS/EC2 CPUUtilization (Average, 300 s) for InstanceId=i-12345678901234567; in ALARM when > 50"
    )


# ---------------------------------------------------------------------------------------- the answer


def test_an_fsx_alarm_nothing_explains_lists_what_was_ruled_out_and_prints_the_commands():
    # Given the FSx alarm and a window with headroom whose last 15 minutes ran at 93 %
    r = with_alarm(HEADROOM, fsx_alarm(), filesystems=[lustre([210.0] * 165 + [558.0] * 15)])

    answer = alarm_answer.build_answer(r)

    assert answer.kind == "storage" and answer.explained == []
    assert (
        answer.saw
        == "15 datapoints of 60 s: 93 to 93.5; 15 of 15 >= 90 (state ALARM at 2026-12-02T14:45:00.000+0000)"
    )
    assert answer.measured_here == [
        f"{FS} throughput of provisioned: the alarm's last 15 min mean 93% (peak 93%); "
        "the 180-min window mean 40%"
    ]
    # only the storage section is ruled out (the GPU checks do not answer an FSx alarm)
    assert answer.ruled_out == [
        f"fs.throughput: {FS} has headroom: mean 35.0%, peak 93.6% of provisioned",
        f"fs.metadata: {FS} metadata has headroom: peak 16.5%",
        "host.iowait: OK on all 4 nodes",
    ]
    assert answer.commands == [
        (
            "how often the alarm fires, and on what",
            "aws cloudwatch describe-alarm-history --alarm-name "
            "hyperpod-perf-stack-fsx-c1-fs-0123456789abcdef0 --history-item-type StateUpdate --max-items 10",
        ),
        (
            "if such peaks matter, scale it (a cost decision)",
            f"aws fsx update-file-system --file-system-id {FS} --storage-capacity <GiB>",
        ),
    ]


def test_an_fsx_alarm_a_concern_explains_names_it_by_its_number():
    saturated = finding(None, "fs.throughput", CONCERN, f"{FS} is saturated", B, next_step="Scale it.")
    r = with_alarm([finding(NODES[0].node, "gpu.xid", CONCERN, "Xid 79", G), saturated], fsx_alarm())

    answer = alarm_answer.build_answer(r)

    assert [(n, g.check) for n, g in answer.explained] == [(2, "fs.throughput")]  # #1 is the Xid
    assert answer.ruled_out == [] and answer.commands == []  # its next step is the concern's own
    assert answer.answer == "explained by 1 concern in the evidence"


def test_a_compute_alarm_is_answered_by_node_findings_and_plans_nccl_for_exactly_the_suspects():
    # Given the real EC2 alarm on i-12345678901234567 and an Xid on another node
    alarm = real_alarm("cw-alarm-state-change_single-metric.json")
    xid = finding(NODES[1].node, "gpu.xid", CONCERN, "Xid 79", G)
    r = with_alarm([xid, *HEADROOM[:2]], alarm)

    answer = alarm_answer.build_answer(r)

    assert [g.check for _, g in answer.explained] == ["gpu.xid"]
    assert answer.commands == [
        (
            "pairwise NCCL for exactly the suspect set (2 node(s))",
            "hyperpod-perf nccl plan --cluster c1 --mode quick --suspect i-12345678901234567 "
            "--suspect i-0a1b2c3d4e5f60002",
        )
    ]


def test_a_check_added_later_answers_by_its_section_with_no_change_here():
    # Given a finding of a check this module has never heard of (metrics.*, nccl.straggler ...)
    straggler = finding(NODES[2].node, "nccl.straggler", CONCERN, "rank 17 is 40 % slower", A)
    clocks = finding(NODES[3].node, "metrics.sm_clock", OK, "clocks at the fleet median", G)
    alarm = AlarmContext(name="StepTimeHigh", metrics=(AlarmMetric(namespace="Training", name="StepTimeMs"),))

    explained = alarm_answer.build_answer(with_alarm([straggler, clocks], alarm))
    ruled_out = alarm_answer.build_answer(with_alarm([clocks], alarm))

    assert [g.check for _, g in explained.explained] == ["nccl.straggler"]
    assert explained.commands[0][1].endswith("--suspect i-0a1b2c3d4e5f60003")
    assert ruled_out.ruled_out == ["metrics.sm_clock: OK on 1 of 4 nodes"]
    assert ruled_out.commands[0] == (
        "pairwise NCCL over every node (ring pairs; nothing here names a suspect)",
        "hyperpod-perf nccl plan --cluster c1 --mode quick",
    )


def test_nodes_not_collected_are_said_not_ruled_out_and_no_alarm_means_no_answer():
    lost = [*NODES[:3], node("i-0a1b2c3d4e5f60004", collection="failed")]
    r = report(HEADROOM, lost).model_copy(update={"run": RunInfo(alarm=fsx_alarm())})
    assert alarm_answer.build_answer(r).not_seen == "1 node not collected: nothing there is ruled out"
    plain = report(HEADROOM, NODES)
    assert alarm_answer.build_answer(plain) is None
    assert "ALARM" not in render_email(plain) and 'id="alarm"' not in render_html(plain)


# ------------------------------------------------------------------------------------- the renderings


def test_every_rendering_carries_the_answer():
    r = with_alarm(HEADROOM, fsx_alarm(), filesystems=[lustre([210.0] * 165 + [558.0] * 15)])

    email = render_email(r)
    chat = render_chatbot(r)
    md = render_markdown(r)
    html = render_html(r)

    assert "ALARM hyperpod-perf-stack-fsx-c1-fs-0123456789abcdef0: what it measures, and the answer" in email
    assert "Answer: no concern in the evidence explains it; ruled out:" in email
    # a command is one whole line, however long (copy and paste)
    assert (
        "Next, if such peaks matter, scale it (a cost decision): "
        f"`aws fsx update-file-system --file-system-id {FS} --storage-capacity <GiB>`"
    ) in email.splitlines()
    assert (
        "*Alarm hyperpod-perf-stack-fsx-c1-fs-0123456789abcdef0* measures Throughput"
        in chat["content"]["description"]
    )
    assert chat["content"]["nextSteps"][0].startswith(
        "how often the alarm fires, and on what: `aws cloudwatch"
    )
    assert "## The alarm: hyperpod-perf-stack-fsx-c1-fs-0123456789abcdef0" in md
    assert f"  - fs.throughput: {FS} has headroom" in md
    assert (
        f"<code>aws fsx update-file-system --file-system-id {FS} --storage-capacity &lt;GiB&gt;</code>"
        in html
    )
    assert html.index('id="alarm"') < html.index('id="overview"')  # the answer before the picture


def test_hostile_alarm_text_is_escaped_in_every_medium():
    hostile = AlarmContext(
        name="<!channel>&<script>",
        description="x",
        metrics=(AlarmMetric(namespace="AWS/FSx", name="<b>", dimensions={"FileSystemId": FS}),),
        state_reason="reason <img src=x>",
    )
    r = with_alarm(HEADROOM, hostile)

    assert "<!channel>" not in render_chatbot(r)["content"]["description"]
    html = render_html(r)
    section = html[html.index('<section id="alarm">') : html.index("</section>", html.index('id="alarm"'))]
    assert "<script>" not in section and "&lt;!channel&gt;&amp;&lt;script&gt;" in section
    assert "<img" not in render_markdown(r) and "reason &lt;img src=x&gt;" in render_markdown(r)
    commands = alarm_answer.build_answer(r).commands
    assert commands[0][1] == (
        "aws cloudwatch describe-alarm-history --alarm-name '<!channel>&<script>' "
        "--history-item-type StateUpdate --max-items 10"
    )  # shell-quoted


def test_the_email_stays_within_its_length_at_1024_nodes_with_an_alarm():
    big = synthetic_report(1024)
    alarm = real_alarm("cw-alarm-state-change_single-metric.json")
    r = big.model_copy(update={"run": big.run.model_copy(update={"alarm": alarm})})

    email = render_email(r)

    assert email.count("\n") <= MAX_LINES
    assert "ALARM ServerCpuTooHigh: what it measures, and the answer" in email
    assert "Next, pairwise NCCL for exactly the suspect set" in email


def test_the_alarms_span_is_read_from_a_coarser_series_by_its_period():
    # Given the window's series at 5-minute periods (a window older than CloudWatch's 15 days of
    # 1-minute data): the alarm's 15 one-minute datapoints are its last 3 points
    points = [
        MetricPoint(timestamp=f"2026-12-02T{9 + (5 * i) // 60:02d}:{(5 * i) % 60:02d}:00Z", value=v)
        for i, v in enumerate([120.0] * 9 + [540.0] * 3)
    ]
    fs = FileSystemSummary(file_system_id=FS, type="LUSTRE", provisioned_mbps=600.0, throughput_mbps=points)
    answer = alarm_answer.build_answer(with_alarm(HEADROOM, fsx_alarm(), filesystems=[fs]))
    assert answer.measured_here == [
        f"{FS} throughput of provisioned: the alarm's last 15 min mean 90% (peak 90%); "
        "the 180-min window mean 38%"
    ]


def test_a_huge_alarm_keeps_the_slack_description_within_its_limit():
    huge = fsx_alarm().model_copy(
        update={
            "metrics": (
                AlarmMetric(id="e1", expression="x" * 1024, label="y" * 1024),
                *fsx_alarm().metrics[1:],
            )
        }
    )
    description = render_chatbot(with_alarm(HEADROOM, huge))["content"]["description"]
    assert len(description) <= 3000 and "+ the rest of the alarm's answer in the report" in description
