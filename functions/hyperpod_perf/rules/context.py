"""What a node rule sees: the raw snapshot, parse-on-demand sections, and a finding factory.

Parsing is done here, once per section, behind one try/except: a garbled section becomes a
single `collect.node` finding naming the section and the reason, and every rule that needed
it sees `None` and stays silent, while every other section is still evaluated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from hyperpod_perf.collect.snapshot import RC_NOT_FOUND, RC_TIMEOUT, RawSection, RawSnapshot
from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

T = TypeVar("T")


class SectionState(StrEnum):
    OK = "ok"
    ABSENT = "absent"  # section missing, or its tool is not installed (rc=127)
    TIMEOUT = "timeout"  # the command hung and `timeout` killed it (rc=124)
    FAILED = "failed"  # the command ran and failed (rc != 0) or output could not be parsed


@dataclass
class Section:
    """A section's parse outcome: `value` is set only when state is OK."""

    name: str
    state: SectionState
    value: Any = None
    rc: int | None = None
    reason: str = ""


@dataclass
class NodeContext:
    snapshot: RawSnapshot
    thresholds: Thresholds = DEFAULT_THRESHOLDS
    node: str = ""
    collection_findings: list[Finding] = field(default_factory=list)
    _cache: dict[str, Section] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.node:
            self.node = self.snapshot.node_name()

    @property
    def instance_type(self) -> str | None:
        """`ml.p5.48xlarge` and `p5.48xlarge` both normalise to `p5.48xlarge`."""
        value = self.snapshot.meta.get("instance_type", "").strip()
        return value.removeprefix("ml.") or None

    @property
    def uptime_s(self) -> float | None:
        """The node's uptime when collected (meta `uptime_s`); None when absent, zero or not finite."""
        try:
            seconds = float(self.snapshot.meta.get("uptime_s", "").strip())
        except ValueError:
            return None
        # `inf` (or a count too large for a float) is no uptime: it would call any count healthy.
        return seconds if seconds > 0 and math.isfinite(seconds) else None

    @property
    def collected_at(self) -> datetime | None:
        """When the collector ran on the node (meta `date_utc`, the node's clock), for event ages."""
        text = self.snapshot.meta.get("date_utc", "").strip()
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)

    def raw(self, name: str) -> RawSection | None:
        return self.snapshot.sections.get(name)

    def section(self, name: str, parser: Callable[[str], T], *, accept_rc: tuple[int, ...] = (0,)) -> Section:
        """Parse a section once; failures become a collect.node finding, never an exception."""
        if name in self._cache:
            return self._cache[name]
        raw = self.raw(name)
        if raw is None:
            result = Section(name, SectionState.ABSENT, reason="section not in snapshot")
        elif raw.rc == RC_NOT_FOUND:
            result = Section(name, SectionState.ABSENT, rc=raw.rc, reason="tool not installed (rc=127)")
        elif raw.rc == RC_TIMEOUT:
            result = Section(name, SectionState.TIMEOUT, rc=raw.rc, reason="command timed out (rc=124)")
        elif not raw.complete:
            # Cut off in transit: half a section proves nothing (a half-arrived governor list would
            # read "all performance"). Not judged; the container's cut-off finding already names it.
            result = Section(name, SectionState.FAILED, rc=None, reason="section cut off in transit")
        else:
            result = self._parse(raw, parser, accept_rc)
        self._cache[name] = result
        return result

    def _parse(self, raw: RawSection, parser: Callable[[str], Any], accept_rc: tuple[int, ...]) -> Section:
        try:
            value = parser(raw.text)
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"[:300]
            self.collection_problem(raw.name, f"output could not be parsed ({reason})")
            return Section(raw.name, SectionState.FAILED, rc=raw.rc, reason=reason)
        if raw.rc is not None and raw.rc not in accept_rc:
            return Section(raw.name, SectionState.FAILED, value=value, rc=raw.rc, reason=f"rc={raw.rc}")
        return Section(raw.name, SectionState.OK, value=value, rc=raw.rc)

    def collection_problem(self, section: str, reason: str) -> None:
        # A container problem about one section (cut off, duplicated) is reported under that section.
        section = self.snapshot.problem_sections.get(reason, section)
        self.collection_findings.append(
            self._collection_finding(
                Severity.CONCERN,
                section,
                reason,
                summary=f"section {section}: {reason}",
                next_step="Re-run the collection on this node; the raw output is kept next to the report.",
                handoff="hyperpod-ssm",
            )
        )

    def collection_note(self, note: str) -> None:
        """A fact about the collection worth knowing, not a fault (markers that cannot be verified)."""
        self.collection_findings.append(
            self._collection_finding(Severity.INFO, "container", note, summary=note)
        )

    def _collection_finding(self, severity: Severity, section: str, reason: str, **fields: Any) -> Finding:
        return Finding(
            node=self.node,
            check="collect.node",
            severity=severity,
            section=RunbookSection.COLLECTION,
            evidence={"section": section, "reason": reason},
            **fields,
        )

    def finding(
        self,
        check: str,
        severity: Severity,
        section: RunbookSection,
        summary: str,
        *,
        evidence: dict[str, Any] | None = None,
        threshold: str | None = None,
        next_step: str | None = None,
        handoff: str | None = None,
    ) -> Finding:
        return Finding(
            node=self.node,
            check=check,
            severity=severity,
            section=section,
            summary=summary,
            evidence=evidence or {},
            threshold=threshold,
            next_step=next_step,
            handoff=handoff,
        )

    def not_present(self, check: str, section: RunbookSection, what: str, data: Section) -> Finding:
        """INFO for a check whose data this node does not have (never a false CONCERN)."""
        return self.finding(
            check,
            Severity.INFO,
            section,
            f"{what}: not present ({data.reason})",
            evidence={"section": data.name, "state": data.state.value, "rc": data.rc},
        )
