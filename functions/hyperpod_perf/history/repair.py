"""Before/after a repair: is a node that HyperPod rebooted or replaced fixed? Pure.

The "before" is the node's last run in the history: the same instance after a reboot; after a
replacement (a new instance id), the latest node row of the same instance group that carried the
repair (`repair_action`, recorded from the node health event that announced it). The "after" is
this run, whose sample of the fleet (the focus node plus others) is the reference.

Verdict: not fixed — a concern of the before run is back; still below the fleet — the repaired
concerns are gone but the node lags the fleet (a fleet outlier, or its SM clock under load or its
pair bandwidth below the fleet median by `repair_below_fleet_pct`); fixed — none of that.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.domain.report import NodeSummary, Report

CHECK = "history.after_repair"
FLEET_FIGURES = ("gpu.sm_clock_under_load_mhz",)


def _key(check: str, code: Any) -> str:
    return f"{check}:{code}" if check == "gpu.xid" and code not in (None, "") else check


def before_run(
    instance: str, group: str | None, node_rows: Iterable[Mapping[str, Any]], current_run: str
) -> Mapping[str, Any] | None:
    """The node's row of the run to compare with (see the module docstring), or None."""
    rows = [r for r in node_rows if r.get("run_id") != current_run]
    same = [r for r in rows if r.get("instance_id") == instance]
    if same:
        return max(same, key=lambda r: str(r.get("run_time")))
    replaced = [
        r for r in rows if r.get("repair_action") == "Replace" and group and r.get("instance_group") == group
    ]
    return max(replaced, key=lambda r: str(r.get("run_time"))) if replaced else None


def _below_fleet(node: NodeSummary, fleet: Sequence[NodeSummary], pct: float) -> list[str]:
    lagging = []
    for figure in FLEET_FIGURES:
        others = [n.figures[figure] for n in fleet if n.node != node.node and figure in n.figures]
        if figure in node.figures and others:
            median = statistics.median(others)
            if median > 0 and node.figures[figure] < median * (1 - pct / 100):
                lagging.append(f"{figure} {node.figures[figure]:g} vs fleet median {median:g}")
    return lagging


def verdict(
    report: Report,
    instance: str,
    node_rows: Iterable[Mapping[str, Any]],
    finding_rows: Iterable[Mapping[str, Any]],
    current_run: str,
    *,
    below_fleet_pct: float,
) -> Finding:
    """One `history.after_repair` finding for the node back in service."""
    node = next((n for n in report.nodes if instance in (n.node, n.instance_id)), None)
    if node is None or node.collection != "collected":
        return _finding(instance, Severity.CONCERN, "not reached after the repair: cannot tell yet", {})
    before = before_run(instance, node.instance_group, node_rows, current_run)
    if before is None:
        return _finding(
            instance, Severity.INFO, "no earlier run of this node (or of a replaced one) in the history", {}
        )
    before_concerns = {
        _key(str(r.get("check_id")), r.get("code"))
        for r in finding_rows
        if r.get("run_id") == before.get("run_id")
        and r.get("instance_id") == before.get("instance_id")
        and r.get("severity") == Severity.CONCERN.value
    }
    now = [f for f in report.findings if f.node in (node.node, node.instance_id, node.hostname)]
    now_concerns = {
        _key(f.check, (f.evidence or {}).get("code")) for f in now if f.severity is Severity.CONCERN
    }
    back = sorted(before_concerns & now_concerns)
    fleet = [n for n in report.nodes if n.collection == "collected"]
    lagging = _below_fleet(node, fleet, below_fleet_pct)
    if "fleet.outlier" in now_concerns:
        lagging.append("a fleet outlier")
    evidence = {
        "before_run": before.get("run_id"),
        "before_instance": before.get("instance_id"),
        "repair": before.get("repair_action"),
        "before_concerns": sorted(before_concerns),
        "after_concerns": sorted(now_concerns),
        "back": back,
        "below_fleet": lagging,
    }
    replaced = before.get("instance_id") != instance
    what = f"replaced {before.get('instance_id')}" if replaced else "the same instance"
    if back:
        return _finding(instance, Severity.CONCERN, f"not fixed ({what}): {', '.join(back)} again", evidence)
    if lagging:
        return _finding(
            instance, Severity.CONCERN, f"still below the fleet ({what}): {'; '.join(lagging)}", evidence
        )
    gone = f"{len(before_concerns)} concern(s) of {str(before.get('run_time'))[:10]} gone"
    return _finding(instance, Severity.OK, f"fixed ({what}): {gone}, in line with the fleet", evidence)


def _finding(instance: str, severity: Severity, text: str, evidence: dict[str, Any]) -> Finding:
    next_step = {
        Severity.CONCERN: "Replace the node (a reboot did not hold) or, if it was replaced, check the "
        "instance group's placement and the fabric it lands on; the report lists what is back.",
        Severity.INFO: "Nothing to compare: the next repair of this node will be judged against this run.",
    }.get(severity)
    return Finding(
        node=instance,
        check=CHECK,
        severity=severity,
        section=RunbookSection.GPU,
        summary=f"after the repair: {text}",
        evidence=evidence,
        next_step=next_step,
    )


def notification(report: Report, verdicts: Sequence[Finding]) -> tuple[str, str]:
    """(subject, body): the short before/after message."""
    first = verdicts[0]
    word = first.summary.removeprefix("after the repair: ").split(" (", 1)[0]
    subject = f"hyperpod-perf: {report.cluster.name} {first.node} after repair: {word}"[:99]
    lines = [f"{v.node}: {v.summary}" for v in verdicts]
    if report.run.location:
        lines.append(f"Report: {report.run.location}report.html")
    return subject, "\n".join(lines) + "\n"
