"""What one node contributes to a run, as the pipeline stores it in S3 between Lambda functions."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from hyperpod_perf.domain.findings import Finding
from hyperpod_perf.domain.report import NodeSummary


class NodeEvaluation(BaseModel):
    """Everything one node contributes: its findings, its comparable signals, its mounts, its row."""

    node: str
    findings: list[Finding] = Field(default_factory=list)
    signals: dict[str, Any] | None = None
    mounts: list[dict[str, Any]] = Field(default_factory=list)
    summary: NodeSummary
    #: Where the node's `scontrol show topology` output was kept for the run (one object per content).
    slurm_topology_key: str | None = None
