"""The verdict answers the alarm: what the alarm that started the run measures, what it saw, what in
the evidence explains it and, when nothing does, what was ruled out and the next step as a command.

Which evidence answers which alarm is decided by runbook section, not by check id: an FSx alarm is
answered by the file-system section (fs.*, host.iowait, host.io_pressure), a step-time, job-level,
GPU or node alarm by the NCCL, GPU and resource sections, and by the file system too (the runbook's
branch B: data loading and checkpoints stall steps). A check added later (metrics.*,
nccl.straggler) answers the alarms of its section's kind without a change here.

Pure: one `AlarmAnswer` built from the report; each rendering (e-mail, Slack, Markdown, HTML) asks
for its lines here and escapes them its own way. Commands are printed for the operator, never run.
"""

from __future__ import annotations

import re
import shlex
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from typing import Any

from hyperpod_perf.domain.alarm import AlarmContext, AlarmMetric
from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.domain.report import FileSystemSummary, MetricPoint, Report
from hyperpod_perf.report.verdict import FindingGroup, family_of, plural
from hyperpod_perf.report.view import ReportView, build_view
from hyperpod_perf.rules.catalog import CATALOG
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

STORAGE, COMPUTE = "storage", "compute"
_S = RunbookSection
#: The runbook sections whose findings can explain an alarm of each kind.
SECTIONS: dict[str, tuple[RunbookSection, ...]] = {
    STORAGE: (_S.FILE_SYSTEM,),
    COMPUTE: (_S.NCCL, _S.GPU, _S.RESOURCES, _S.FILE_SYSTEM),
}
#: Alarm metric names that mean storage even outside the AWS/FSx namespace (custom job metrics).
_STORAGE_WORDS = re.compile(
    r"fsx|lustre|openzfs|data_?loader|data_?loading|checkpoint|io_?wait", re.IGNORECASE
)
#: Characters of Slack's 3,000-character description the alarm's lines may take (chatbot.py).
CHAT_BUDGET = 1500
#: The span compared with the alarm when its event lists no datapoints (the FSx alarms' 15 minutes).
DEFAULT_SPAN_S = 15 * 60
#: How many suspects a printed `nccl plan` names before "+N more" (the report lists them all).
MAX_SUSPECTS = 16
#: Explaining groups and ruled-out lines shown before "+N more".
MAX_EXPLAINED = 3
MAX_RULED_OUT = 6
#: FSx metric -> the report's series of it and its limit (None: the series is a % already).
_FS_SERIES = {
    "DataReadBytes": ("throughput_mbps", "provisioned_mbps", "throughput of provisioned"),
    "DataWriteBytes": ("throughput_mbps", "provisioned_mbps", "throughput of provisioned"),
    "MetadataOperations": ("metadata_ops_per_s", "metadata_ops_ceiling", "metadata operations of supported"),
    "FileServerDiskIopsUtilization": ("iops_utilization_pct", None, "disk IOPS utilisation"),
}


@dataclass
class AlarmAnswer:
    alarm: AlarmContext
    kind: str  # STORAGE | COMPUTE
    measures: str
    saw: str | None
    measured_here: list[str]
    explained: list[tuple[int, FindingGroup]]  # (number in the report's concern list, group)
    ruled_out: list[str]
    not_seen: str | None
    commands: list[tuple[str, str]] = field(default_factory=list)  # (why, command)

    @property
    def answer(self) -> str:
        if self.explained:
            return f"explained by {plural(len(self.explained), 'concern')} in the evidence"
        return "no concern in the evidence explains it; ruled out:"


def alarm_kind(alarm: AlarmContext) -> str:
    """storage for an FSx alarm (namespace, FileSystemId, or a storage metric name), else compute."""
    for metric in alarm.metrics:
        if metric.namespace == "AWS/FSx" or "FileSystemId" in metric.dimensions:
            return STORAGE
        if _STORAGE_WORDS.search(" ".join(filter(None, (metric.name, metric.label)))):
            return STORAGE
    return STORAGE if _STORAGE_WORDS.search(alarm.name) and not alarm.metrics else COMPUTE


def _metric_text(metric: AlarmMetric) -> str:
    stat = ", ".join(x for x in (metric.stat, f"{metric.period_s} s" if metric.period_s else None) if x)
    return f"{metric.namespace or '?'} {metric.name}" + (f" ({stat})" if stat else "")


def measures(alarm: AlarmContext) -> str:
    """`<label> = <expression> of <inputs> for <dimensions>; in ALARM when >= 90`."""
    result = alarm.result
    inputs = alarm.measured
    if result is not None and result.expression:
        head = f"{result.label} = {result.expression}" if result.label else result.expression
        grouped: dict[tuple[str | None, str | None, int | None], list[str]] = defaultdict(list)
        for m in inputs:
            grouped[(m.namespace, m.stat, m.period_s)].append(m.name or "?")
        parts = [
            f"{ns or '?'} {', '.join(names)}" + (f" ({stat}, {period} s)" if stat and period else "")
            for (ns, stat, period), names in grouped.items()
        ]
        text = f"{head} of {'; '.join(parts)}" if parts else head
    elif result is not None and result.name:
        text = _metric_text(result)
    else:
        text = alarm.description or "a metric the event does not describe"
    dims = {k: v for m in alarm.metrics for k, v in m.dimensions.items()}
    if dims:
        text += " for " + ", ".join(f"{k}={v}" for k, v in dims.items())
    if alarm.threshold is not None:
        text += f"; in {alarm.state} when {alarm.comparison or 'beyond'} {alarm.threshold:g}"
    return text


def _saw(alarm: AlarmContext) -> str | None:
    points = alarm.recent_datapoints
    if not points:
        return None
    span = f"{min(points):.4g} to {max(points):.4g}" if len(points) > 1 else f"{points[0]:.4g}"
    text = f"{plural(len(points), 'datapoint')} of {alarm.period_s or '?'} s: {span}"
    if alarm.threshold is not None and alarm.comparison:
        crossing = sum(1 for p in points if _compare(p, alarm.comparison, alarm.threshold))
        text += f"; {crossing} of {len(points)} {alarm.comparison} {alarm.threshold:g}"
    return text + (f" (state {alarm.state} at {alarm.state_time})" if alarm.state_time else "")


def _compare(value: float, comparison: str, threshold: float) -> bool:
    return {
        ">=": value >= threshold,
        ">": value > threshold,
        "<=": value <= threshold,
        "<": value < threshold,
    }[comparison]


def _share(points: list[MetricPoint], limit: float | None) -> list[float]:
    if limit is None:
        return [p.value for p in points]
    return [100.0 * p.value / limit for p in points] if limit else []


def _measured_here(alarm: AlarmContext, report: Report) -> list[str]:
    """The report's own series of what the alarm measures, over the alarm's span and the window."""
    span_s = len(alarm.recent_datapoints) * (alarm.period_s or 60) or DEFAULT_SPAN_S
    out = []
    for fs_id in alarm.dimension_values("FileSystemId"):
        fs = next((f for f in report.filesystems if f.file_system_id == fs_id), None)
        if fs is None:
            out.append(f"{fs_id}: not among the file systems this run read")
            continue
        seen: set[str] = set()
        for metric in alarm.measured:
            entry = _FS_SERIES.get(metric.name or "")
            if entry is None or entry[0] in seen:
                continue
            seen.add(entry[0])
            out.extend(_series_sentence(fs, *entry, span_s, report.run.window_minutes))
    return out


def _period_s(points: list[MetricPoint]) -> float:
    """The series' period, from its last two timestamps (60 s when it cannot tell)."""
    try:
        last, before = (datetime.fromisoformat(p.timestamp.replace("Z", "+00:00")) for p in points[-1:-3:-1])
    except ValueError:
        return 60.0
    return (last - before).total_seconds() or 60.0


def _series_sentence(
    fs: FileSystemSummary, series: str, limit_field: str | None, what: str, span_s: int, window: int
) -> list[str]:
    limit = getattr(fs, limit_field) if limit_field else None
    if limit_field and not limit:
        return []
    points: list[MetricPoint] = getattr(fs, series)
    values = _share(points, limit)
    if not values:
        return [f"{fs.file_system_id}: no {what} datapoints in the window"]
    tail = values[-max(1, round(span_s / _period_s(points))) :] if len(points) > 1 else values
    return [
        f"{fs.file_system_id} {what}: the alarm's last {span_s // 60} min mean {statistics.fmean(tail):.0f}% "
        f"(peak {max(tail):.0f}%); the {window}-min window mean {statistics.fmean(values):.0f}%"
    ]


def _ruled_out(findings: list[Finding], sections: tuple[RunbookSection, ...], nodes: int) -> list[str]:
    """OK checks of those sections: cluster-level ones with their figures, node-level ones counted
    per family (a check with any non-OK finding is not ruled out)."""
    order = {check: i for i, check in enumerate(CATALOG)}
    concerned = {f.check for f in findings if f.severity is not Severity.OK}
    cluster: dict[str, str] = {}
    series: dict[str, Finding] = {}
    per_node: dict[str, set[str]] = defaultdict(set)
    family: dict[str, str] = {}
    for f in findings:
        if f.severity is not Severity.OK or f.section not in sections or f.check in concerned:
            continue
        if f.node is None and f.check.startswith("metrics."):
            series.setdefault(f.check, f)
        elif f.node is None:
            cluster.setdefault(f.check, f.summary)
        else:
            per_node[f.check].add(f.node)
            family[f.check] = family_of(f)
    lines = [f"{c}: {summary}" for c, summary in sorted(cluster.items(), key=lambda c: order.get(c[0], 999))]
    if series:  # the metrics stage's rules that had series and flagged nothing: one line, the window's
        checks = sorted(series, key=lambda c: order.get(c, 999))
        seen = max(int(f.evidence.get("nodes_with_series") or 0) for f in series.values())
        of = max(int(f.evidence.get("of") or 0) for f in series.values())
        lines.append(f"{', '.join(checks)}: nothing flagged over the window's series ({seen} of {of} nodes)")
    by_family: dict[str, list[str]] = defaultdict(list)
    for check in sorted(per_node, key=lambda c: order.get(c, 999)):
        by_family[family[check]].append(check)
    for checks in by_family.values():
        counted = max(len(per_node[c]) for c in checks)
        where = f"all {nodes} nodes" if counted == nodes else f"{counted} of {nodes} nodes"
        lines.append(f"{', '.join(checks)}: OK on {where}")
    return lines


def _suspects(
    answer_groups: list[tuple[int, FindingGroup]], alarm: AlarmContext, report: Report
) -> list[str]:
    nccl = report.nccl or {}
    named = [
        *alarm.dimension_values("InstanceId"),
        *(n for _, g in answer_groups for n in g.nodes),
        *(str(s.get("node")) for s in nccl.get("suspects") or [] if isinstance(s, dict) and s.get("node")),
    ]
    return list(dict.fromkeys(named))


def _commands(answer: AlarmAnswer, report: Report, suspects: list[str]) -> list[tuple[str, str]]:
    alarm = answer.alarm
    commands: list[tuple[str, str]] = []
    if answer.kind == COMPUTE:
        shown = suspects[:MAX_SUSPECTS]
        plan = f"hyperpod-perf nccl plan --cluster {shlex.quote(report.cluster.name)} --mode quick"
        plan += "".join(f" --suspect {shlex.quote(n)}" for n in shown)
        why = (
            f"pairwise NCCL for exactly the suspect set ({len(suspects)} node(s)"
            + (f", the first {MAX_SUSPECTS} here" if len(suspects) > MAX_SUSPECTS else "")
            + ")"
            if suspects
            else "pairwise NCCL over every node (ring pairs; nothing here names a suspect)"
        )
        commands.append((why, plan))
    if not answer.explained:
        commands.append(
            (
                "how often the alarm fires, and on what",
                f"aws cloudwatch describe-alarm-history --alarm-name {shlex.quote(alarm.name)} "
                "--history-item-type StateUpdate --max-items 10",
            )
        )
        for fs_id in alarm.dimension_values("FileSystemId"):
            fs = next((f for f in report.filesystems if f.file_system_id == fs_id), None)
            if fs is not None and fs.type == "LUSTRE":
                commands.append(
                    (
                        "if such peaks matter, scale it (a cost decision)",
                        f"aws fsx update-file-system --file-system-id {fs_id} --storage-capacity <GiB>",
                    )
                )
            elif fs is not None and fs.type == "OPENZFS":
                commands.append(
                    (
                        "if such peaks matter, scale it (a cost decision)",
                        f"aws fsx update-file-system --file-system-id {fs_id} "
                        "--open-zfs-configuration ThroughputCapacity=<MB/s>",
                    )
                )
    return commands


def build_answer(
    report: Report, thresholds: Thresholds = DEFAULT_THRESHOLDS, view: ReportView | None = None
) -> AlarmAnswer | None:
    """The answer to the run's alarm; None when no alarm started the run."""
    alarm = report.run.alarm
    if alarm is None:
        return None
    view = view or build_view(report, thresholds)
    kind = alarm_kind(alarm)
    sections = SECTIONS[kind]
    alarm_nodes = set(alarm.dimension_values("InstanceId"))
    numbered = [(i, g) for i, g in enumerate(view.notable_groups, 1) if g.severity is Severity.CONCERN]
    explained = [(i, g) for i, g in numbered if g.section in sections]
    explained.sort(key=lambda item: (not alarm_nodes & set(item[1].nodes), item[0]))
    nodes = len(view.rows)
    missing = [r.node for r in view.rows if r.summary is not None and r.summary.collection != "collected"]
    answer = AlarmAnswer(
        alarm=alarm,
        kind=kind,
        measures=measures(alarm),
        saw=_saw(alarm),
        measured_here=_measured_here(alarm, report),
        explained=explained,
        ruled_out=[] if explained else _ruled_out(report.findings, sections, nodes),
        not_seen=f"{plural(len(missing), 'node')} not collected: nothing there is ruled out"
        if missing
        else None,
    )
    answer.commands = _commands(answer, report, _suspects(explained, alarm, report))
    return answer


# --- renderings ---------------------------------------------------------------------------------


def _capped(lines: list[str], limit: int, what: str) -> list[str]:
    return lines[:limit] + (
        [f"+{len(lines) - limit} more {what} in the report"] if len(lines) > limit else []
    )


def text_lines(answer: AlarmAnswer) -> list[tuple[str, str | None]]:
    """(prose, command or None) in reading order; each rendering escapes and lays them out."""
    out: list[tuple[str, str | None]] = [(f"Measures: {answer.measures}", None)]
    if answer.saw:
        out.append((f"It saw: {answer.saw}", None))
    out += [(f"Measured here: {line}", None) for line in answer.measured_here]
    out.append((f"Answer: {answer.answer}", None))
    explained = [f"#{n} {g.check}: {g.title}" for n, g in answer.explained]
    out += [(f"- {line}", None) for line in _capped(explained, MAX_EXPLAINED, "concern(s)")]
    out += [(f"- {line}", None) for line in _capped(answer.ruled_out, MAX_RULED_OUT, "check(s)")]
    if answer.not_seen:
        out.append((f"- {answer.not_seen}", None))
    out += [(f"Next, {why}", command) for why, command in answer.commands]
    return out


def email_lines(
    report: Report, wrap: Any, whole: Any, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> list[str]:
    """The e-mail's ALARM section: prose through `wrap`, each command whole on its line (`whole`)."""
    answer = build_answer(report, thresholds)
    if answer is None:
        return []
    lines = [f"ALARM {answer.alarm.name}: what it measures, and the answer"]
    for prose, command in text_lines(answer):
        lines += [whole(f"{prose}: `{command}`")] if command else wrap(prose)
    return lines


def chat_lines(report: Report, chat_escape: Any, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[str]:
    """The Slack description's alarm lines, escaped (its commands are `chat_steps`)."""
    answer = build_answer(report, thresholds)
    if answer is None:
        return []
    lines = [f"*Alarm {chat_escape(answer.alarm.name)}* measures {chat_escape(answer.measures)}"]
    lines += [chat_escape(prose) for prose, command in text_lines(answer)[1:] if command is None]
    kept: list[str] = []
    for line in lines:  # whole lines within the budget; the report has the rest
        if len("\n".join([*kept, line])) > CHAT_BUDGET:
            kept.append("+ the rest of the alarm's answer in the report")
            break
        kept.append(line)
    return kept


def chat_steps(report: Report, chat_escape: Any, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[str]:
    """The alarm's next steps for Slack's nextSteps, first in the list."""
    answer = build_answer(report, thresholds)
    if answer is None:
        return []
    return [f"{chat_escape(why)}: `{chat_escape(command)}`" for why, command in answer.commands]


def markdown_lines(
    report: Report, md: Any, code: Any, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> list[str]:
    """The Markdown report's "The alarm" section (`md` escapes prose, `code` makes a code span)."""
    answer = build_answer(report, thresholds)
    if answer is None:
        return []
    out = ["", f"## The alarm: {md(answer.alarm.name)}", ""]
    for prose, command in text_lines(answer):
        indent = "  " if prose.startswith("- ") else ""
        text = md(prose.removeprefix("- ")) + (f": {code(command)}" if command else "")
        out.append(f"{indent}- {text}")
    if answer.alarm.state_reason:
        out.append(f"- State reason: {md(answer.alarm.state_reason)}")
    return out


def html_section(report: Report, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> str:
    """The HTML report's alarm section (every text escaped; commands in <code>)."""
    answer = build_answer(report, thresholds)
    if answer is None:
        return ""
    items = "".join(
        f"<li>{escape(prose.removeprefix('- '))}"
        + (f": <code>{escape(command)}</code>" if command else "")
        + "</li>"
        for prose, command in text_lines(answer)
    )
    reason = answer.alarm.state_reason
    note = f'<p class="note">State reason: {escape(reason)}</p>' if reason else ""
    return (
        f'<section id="alarm"><h2>The alarm: {escape(answer.alarm.name)}</h2><ul>{items}</ul>{note}</section>'
    )
