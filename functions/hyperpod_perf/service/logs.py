"""Stage 3b: HyperPod deep health checks and Health Monitoring Agent events from CloudWatch Logs."""

from __future__ import annotations

from datetime import datetime

from hyperpod_perf.domain.cluster import ClusterInfo, LogRecord
from hyperpod_perf.domain.errors import AwsAdapterError
from hyperpod_perf.domain.findings import Finding, RunbookSection
from hyperpod_perf.rules import health
from hyperpod_perf.service.gaps import not_checked_finding
from hyperpod_perf.service.ports import LogsPort

#: Health-log events read per run (bounded: a noisy cluster must not stall the diagnosis).
MAX_LOG_EVENTS = 2000


def _health_findings(
    cluster: ClusterInfo,
    logs_port: LogsPort,
    window: tuple[datetime, datetime],
    selected: set[str] | None,
    max_events: int,
    findings: list[Finding],
) -> None:
    start, end = window
    try:
        fetched = logs_port.fetch(cluster.name, cluster.cluster_id, start, end, max_events=max_events)
    except AwsAdapterError as exc:
        for check, what in (
            ("health.deep_check", "deep health check results"),
            ("health.hma", "Health Monitoring Agent events"),
        ):
            findings.append(not_checked_finding(check, RunbookSection.GPU, f"{what} in CloudWatch Logs", exc))
        return
    if fetched.group_missing:
        for check in ("health.deep_check", "health.hma"):
            findings.append(
                not_checked_finding(
                    check,
                    RunbookSection.GPU,
                    f"log group {fetched.log_group} does not exist",
                    "log group missing",
                    log_group=fetched.log_group,
                )
            )
        return
    records: list[LogRecord] = list(fetched.records)
    if selected is not None:
        records = [r for r in records if (node := _record_node(r)) is None or node in selected]
    results = health.evaluate(records)
    if fetched.truncated:
        note = {"log_group": fetched.log_group, "truncated_at_events": max_events}
        results = [f.model_copy(update={"evidence": {**f.evidence, **note}}) for f in results]
    findings.extend(results)


def _record_node(record: LogRecord) -> str | None:
    match = health.INSTANCE_ID_RE.search(record.stream.rsplit("/", 1)[-1])
    return match.group(0) if match else None


def health_findings(
    cluster: ClusterInfo,
    logs_port: LogsPort,
    window: tuple[datetime, datetime],
    selected: set[str] | None = None,
    max_events: int = MAX_LOG_EVENTS,
) -> list[Finding]:
    findings: list[Finding] = []
    _health_findings(cluster, logs_port, window, selected, max_events, findings)
    return findings
