"""Findings: what every check emits, shared by every layer.

The finding shape is the contract with operators (CLI json, reports, notifications): its
field names are the ones the design lists and must not change without a schema bump.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Severity(StrEnum):
    OK = "OK"
    INFO = "INFO"
    CONCERN = "CONCERN"

    @property
    def rank(self) -> int:
        """Order used to pick the worst severity of a group (CONCERN > INFO > OK)."""
        return {"OK": 0, "INFO": 1, "CONCERN": 2}[self.value]


class RunbookSection(StrEnum):
    """The runbook section a finding belongs to."""

    NCCL = "A"
    FILE_SYSTEM = "B"
    GPU = "G"
    RESOURCES = "I"
    COVERAGE = "C"
    COLLECTION = "X"


class Handoff(StrEnum):
    """Where the runbook routes a concern it does not own."""

    NODE_A = "hyperpod-node-debugger § A"
    NODE_F = "hyperpod-node-debugger § F"
    NODE_G = "hyperpod-node-debugger § G"
    NODE_I = "hyperpod-node-debugger § I"
    CLUSTER_A = "hyperpod-cluster-debugger § A"
    CLUSTER_B = "hyperpod-cluster-debugger § B"
    NCCL = "hyperpod-nccl"
    VERSIONS = "hyperpod-version-checker"
    SSM = "hyperpod-ssm"


class Finding(BaseModel):
    """One judged signal: what was measured, against what, and what to do next."""

    model_config = ConfigDict(frozen=True)

    node: str | None = None
    check: str
    severity: Severity
    section: RunbookSection
    summary: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    threshold: str | None = None
    next_step: str | None = None
    handoff: str | None = None


def worst(findings: list[Finding]) -> Severity:
    """The most severe severity among findings (OK when there are none)."""
    return max((f.severity for f in findings), key=lambda s: s.rank, default=Severity.OK)


def has_concern(findings: list[Finding]) -> bool:
    return any(f.severity is Severity.CONCERN for f in findings)
