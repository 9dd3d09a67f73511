"""Findings for what could not be checked or collected: every gap says what and why, and the rest
of the diagnosis still runs.
"""

from __future__ import annotations

from typing import Any

from hyperpod_perf.domain.errors import AwsAdapterError
from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity

MAX_LISTED = 20


def not_checked_finding(
    check: str, section: RunbookSection, what: str, error: AwsAdapterError | str, **evidence: Any
) -> Finding:
    reason = error.reason if isinstance(error, AwsAdapterError) else "Unavailable"
    detail = str(error)
    return Finding(
        check=check,
        severity=Severity.INFO,
        section=section,
        summary=f"{what}: not checked ({reason})",
        evidence={"reason": reason, "detail": detail[:500], **evidence},
        next_step=permission_hint(error),
    )


def permission_hint(error: AwsAdapterError | str) -> str | None:
    if isinstance(error, AwsAdapterError) and error.reason == "AccessDenied":
        return f"Grant the caller read access for {error.context or 'this call'} and re-run."
    return None


def collect_finding(node: str, severity: Severity, summary: str, **evidence: Any) -> Finding:
    return Finding(
        node=node,
        check="collect.node",
        severity=severity,
        section=RunbookSection.COLLECTION,
        summary=summary,
        evidence=evidence,
        next_step=(
            "Collect this node (SSM session runner, or put <instance-id>.txt in the --snapshots directory) "
            "and re-run."
            if severity is Severity.INFO
            else "Check the node's SSM agent and connectivity, then re-run the collection."
        ),
        handoff=Handoff.SSM if severity is Severity.CONCERN else None,
    )
