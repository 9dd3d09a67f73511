"""What of the job's logs was not read, as one finding: `nccl.joblog_coverage`.

The job-log findings judge what was read; this one says what was not, so a clean verdict over
half a prefix is never mistaken for a clean job: sources that could not be read at all (a log
group the role may not read), objects a bound stopped (a gzip bomb, a corrupt or cut gzip, the
per-object size, an object that broke while being read), objects skipped past the object or byte
budget, events past the event budget, and lines cut at the line-length bound. INFO: a reading
limit, not a fault of the cluster; the evidence lists each object with its reason. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

from hyperpod_perf.domain.bounded_stream import MAX_LINE_BYTES, ReadBounds
from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity

CHECK = "nccl.joblog_coverage"
MAX_LISTED = 5


def coverage_findings(
    bounds: ReadBounds,
    unread: Iterable[tuple[str, str, str]] = (),
    *,
    logs_read: int = 0,
    problems: Iterable[tuple[str, str, bool]] = (),
) -> list[Finding]:
    """One INFO finding per source not read at all ((where, reason, detail) of `unread`), one per
    timing file refused as unsafe (a CONCERN: a pickle that would run code is not a dump PyTorch
    wrote), one for the other timing files not read, and one summing up what the read bounds cut
    or skipped; nothing when everything was read."""
    problems = list(problems)
    findings = [
        Finding(
            check=CHECK,
            severity=Severity.INFO,
            section=RunbookSection.NCCL,
            summary=f"job logs: {where}: not read ({reason})",
            evidence={"where": where, "reason": reason, **({"detail": detail} if detail else {})},
        )
        for where, reason, detail in unread
    ]
    for source, why, _refused in (p for p in problems if p[2]):
        findings.append(
            Finding(
                check=CHECK,
                severity=Severity.CONCERN,
                section=RunbookSection.NCCL,
                summary=f"job logs: {source}: {why} — PyTorch's flight recorder writes only plain data, so "
                "this file came from somewhere else; nothing in it was run",
                evidence={"where": source, "reason": why, "refused": True},
                next_step="Find out who wrote this file into the job's log location (S3 access logs / "
                "CloudTrail data events) before anyone opens it with plain pickle.",
            )
        )
    other = [p for p in problems if not p[2]]
    if other:
        findings.append(
            Finding(
                check=CHECK,
                severity=Severity.INFO,
                section=RunbookSection.NCCL,
                summary=f"job logs: {len(other)} timing file(s) not read as such — "
                + "; ".join(f"{source}: {why}" for source, why, _ in other[:MAX_LISTED])
                + (f" (+{len(other) - MAX_LISTED} more)" if len(other) > MAX_LISTED else ""),
                evidence={"files": [{"where": s, "reason": w} for s, w, _ in other[:100]]},
            )
        )
    if not bounds.reached:
        return findings
    parts: list[str] = []
    if bounds.objects_cut:
        shown = "; ".join(f"{source}: {why}" for source, why in bounds.cuts[:MAX_LISTED])
        more = f" (+{bounds.objects_cut - MAX_LISTED} more)" if bounds.objects_cut > MAX_LISTED else ""
        parts.append(f"{bounds.objects_cut} object(s) not read to the end — {shown}{more}")
    if bounds.objects_skipped:
        parts.append(f"{bounds.objects_skipped} object(s) skipped past the object or byte budget")
    if bounds.bytes_cut and not bounds.objects_skipped:
        parts.append("the last object read was cut at the byte budget")
    if bounds.events_cut:
        parts.append("log events past the event budget were not read")
    if bounds.lines_cut:
        parts.append(f"{bounds.lines_cut} line(s) longer than {MAX_LINE_BYTES // 1024} KiB cut there")
    findings.append(
        Finding(
            check=CHECK,
            severity=Severity.INFO,
            section=RunbookSection.NCCL,
            summary=(
                "job logs: read bounds reached: " + "; ".join(parts) + "; the findings cover what was read"
            )[:1000],
            evidence={**bounds.to_dict(), "logs_read": logs_read, "max_line_bytes": MAX_LINE_BYTES},
            next_step="Read the objects named here by hand (`zcat -l`, `head -c`) if they matter; a "
            "gzip far above 200:1 is not a text log.",
        )
    )
    return findings
