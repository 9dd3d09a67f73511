"""Repeat offenders: a node's history beside its findings, and the next step escalated with it. Pure.

A concern that is back on the same node after the runbook's first remedy (reboot, reset, a fix by
hand) is not a new incident: "4th Xid 79 in 30 days" means the reboot NVIDIA's catalog prescribes
for Xid 79 has been tried three times. The second occurrence inside the window
(`repeat_offender_runs`, `repeat_offender_window_days`) escalates: hardware faults to replacement,
a configuration that keeps coming back to where the node is built, a chronic straggler to draining
and replacement. Commands are printed for the operator; nothing here acts on the cluster.

Counting is per node (instance id), check and, for Xids, the code: runs, not findings, so one run
that logged an Xid twice counts once. A replaced node has a new instance id and a clean record.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.domain.report import Report

#: Hardware: a fault that survives a reboot is the board, the link or the device.
HARDWARE_CHECKS = frozenset(
    {
        "gpu.xid",
        "gpu.ecc_uncorrected",
        "gpu.remapped_rows",
        "gpu.pcie_width",
        "gpu.pcie_replay",
        "gpu.count",
        "gpu.nvlink_inactive",
        "gpu.nvlink_errors",
        "gpu.thermal_throttle",
        "gpu.temperature",
        "host.pcie_aer",
        "efa.devices",
        "efa.port_state",
        "efa.counters",
        "health.deep_check",
        "health.hma",
    }
)
#: Stragglers: flagged slow against the fleet or behind the slow pairs, run after run.
STRAGGLER_CHECKS = frozenset({"fleet.outlier", "nccl.node_suspect"})
#: Configuration that a fix by hand does not keep: it comes from how the node is built.
CONFIGURATION_CHECKS = frozenset(
    {"host.cpu_governor", "host.memlock", "host.shm", "host.root_volume", "efa.provider"}
)


@dataclass(frozen=True)
class Recurrence:
    """One node's concern across the look-back window, the current run included."""

    instance_id: str
    check: str
    code: str | None
    runs: int
    first_seen: str

    @property
    def label(self) -> str:
        return f"Xid {self.code}" if self.check == "gpu.xid" and self.code else self.check


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _key(instance: str | None, check: str, code: Any) -> tuple[str, str, str | None]:
    return (instance or "", check, str(code) if check == "gpu.xid" and code is not None else None)


def _instance_names(report: Report) -> dict[str, str]:
    names: dict[str, str] = {}
    for n in report.nodes:
        instance = n.instance_id or n.node
        for name in (n.node, n.instance_id, n.hostname):
            if name:
                names[name] = instance
    return names


def recurrences(
    report: Report, past_rows: Iterable[Mapping[str, Any]], current_run: str
) -> dict[tuple[str, str, str | None], Recurrence]:
    """Per (instance, check, Xid code) of the report's node concerns: runs with it, first seen."""
    runs: dict[tuple[str, str, str | None], set[str]] = defaultdict(set)
    first: dict[tuple[str, str, str | None], str] = {}
    for row in past_rows:
        if row.get("severity") != Severity.CONCERN.value or not row.get("instance_id"):
            continue
        key = _key(row["instance_id"], str(row.get("check_id")), row.get("code"))
        runs[key].add(str(row.get("run_id")))
        seen = str(row.get("run_time") or "")
        if seen and (key not in first or seen < first[key]):
            first[key] = seen
    names = _instance_names(report)
    current_time = report.run.started or ""
    out: dict[tuple[str, str, str | None], Recurrence] = {}
    for finding in report.findings:
        if finding.severity is not Severity.CONCERN or not finding.node:
            continue
        instance = names.get(finding.node, finding.node)
        key = _key(instance, finding.check, (finding.evidence or {}).get("code"))
        seen_runs = runs.get(key, set()) | {current_run}
        out[key] = Recurrence(instance, finding.check, key[2], len(seen_runs), first.get(key) or current_time)
    return out


def escalated_next_step(recurrence: Recurrence, cluster: str, days: int) -> str:
    """The next step once a concern keeps coming back (printed commands, never run)."""
    replace = (
        f"aws sagemaker batch-replace-cluster-nodes --cluster-name {cluster} "
        f"--node-ids {recurrence.instance_id}"
    )
    count = f"{ordinal(recurrence.runs)} {recurrence.label} in {days} days"
    if recurrence.check in HARDWARE_CHECKS:
        return (
            f"{count}: replace, do not reboot again — the fault came back after the reboot: `{replace}` "
            "(destroys the node's local volumes; back up first)."
        )
    if recurrence.check in STRAGGLER_CHECKS:
        return (
            f"{count}: a chronic straggler — drain it from jobs and replace it: `{replace}`; every "
            "collective waits for it until then."
        )
    if recurrence.check in CONFIGURATION_CHECKS:
        return (
            f"{count}: the setting comes back after each fix — correct it where the node is built "
            "(the instance group's lifecycle scripts or AMI), not by hand on the node."
        )
    return f"{count}: recurring on this node — compare its reports since {recurrence.first_seen[:10]}."


def escalate(
    report: Report,
    past_rows: Iterable[Mapping[str, Any]],
    current_run: str,
    *,
    min_runs: int,
    window_days: int,
) -> tuple[Report, list[Recurrence]]:
    """The report with each repeat offender's concerns escalated, and the offenders found."""
    found = recurrences(report, past_rows, current_run)
    names = _instance_names(report)
    offenders: dict[tuple[str, str, str | None], Recurrence] = {
        k: r for k, r in found.items() if r.runs >= min_runs
    }
    if not offenders:
        return report, []
    findings: list[Finding] = []
    for finding in report.findings:
        key = _key(
            names.get(finding.node or "", finding.node), finding.check, (finding.evidence or {}).get("code")
        )
        recurrence = offenders.get(key) if finding.severity is Severity.CONCERN else None
        if recurrence is None or "repeat" in (finding.evidence or {}):
            findings.append(finding)
            continue
        step = escalated_next_step(recurrence, report.cluster.name, window_days)
        findings.append(
            finding.model_copy(
                update={
                    "summary": f"{finding.summary} — {ordinal(recurrence.runs)} {recurrence.label} in "
                    f"{window_days} days (first {recurrence.first_seen[:10]})",
                    "next_step": step,
                    "evidence": {
                        **finding.evidence,
                        "repeat": {
                            "runs": recurrence.runs,
                            "window_days": window_days,
                            "first_seen": recurrence.first_seen,
                            "previous_next_step": finding.next_step,
                        },
                    },
                }
            )
        )
    return report.model_copy(update={"findings": findings}), sorted(
        offenders.values(), key=lambda r: (-r.runs, r.instance_id, r.check)
    )
