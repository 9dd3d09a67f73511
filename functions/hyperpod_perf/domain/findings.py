"""Findings: what every check emits, shared by every layer.

The finding shape is the contract with operators (CLI json, reports, notifications): its
field names are the ones the design lists and must not change without a schema bump.

Every model here is `defer_build=True`: pydantic builds its validator and serializer on first use,
not at import. Every handler imports this module (through `domain.steps`), and most never build a
finding (cold start: docs/ARCHITECTURE.md; bench/RESULTS.md).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer


class Severity(StrEnum):
    OK = "OK"
    INFO = "INFO"
    CONCERN = "CONCERN"

    @property
    def rank(self) -> int:
        """Order used to pick the worst severity of a group (CONCERN > INFO > OK)."""
        return {"OK": 0, "INFO": 1, "CONCERN": 2}[self.value]


class Tier(StrEnum):
    """How soon an operator must act on a finding: one order for every output.

    The severity says whether a signal is a problem; the tier says what it costs the job now.
    A powersave governor and an Xid 79 are both CONCERNs, but only one is failing the job.
    """

    ACT_NOW = "act now"  # the node is failing the job: drain, reboot or replace it
    FIX_SOON = "fix soon"  # degrades the job's performance, or leaves a node unchecked
    WATCH = "watch"  # informational, old, or a recommendation: no slowdown now

    @property
    def rank(self) -> int:
        """Sort position: act now first."""
        return {"act now": 0, "fix soon": 1, "watch": 2}[self.value]


#: What each tier asks of the operator (the legend of every output that shows tiers).
TIER_MEANINGS: dict[Tier, str] = {
    Tier.ACT_NOW: "the node is failing the job: drain it, then reboot or replace it",
    Tier.FIX_SOON: "degrades the job's performance (or left a node unchecked): fix it this shift",
    Tier.WATCH: "informational, an old event or a recommendation: no slowdown now",
}


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


#: What each section letter stands for (the runbook's sections; C and X are this tool's own).
#: Printed as the legend of `hyperpod-perf checks` and docs/CHECKS.md: an operator reading "G"
#: or "X" next to a check should not need the runbook open to know where it belongs.
SECTION_MEANINGS: dict[RunbookSection, str] = {
    RunbookSection.NCCL: "NCCL performance uneven across nodes: placement (AZ, network layer, "
    "UltraServer), EFA, fleet outliers and version drift, pairwise NCCL tests",
    RunbookSection.FILE_SYSTEM: "file-system performance: FSx throughput, IOPS and metadata near "
    "provisioned, OSTs hot or full, nodes waiting on I/O",
    RunbookSection.GPU: "GPU hardware: Xid, ECC, remapped rows, NVLink, PCIe, temperature and clocks "
    "(the runbook hands these to the node debugger)",
    RunbookSection.RESOURCES: "resource exhaustion: OOM kills, root volume full, /dev/shm too small",
    RunbookSection.COVERAGE: "continuous health coverage: the HyperPod features (automatic node "
    "recovery, deep health checks) that would have caught it",
    RunbookSection.COLLECTION: "collection: a node that could not be reached, or output that could "
    "not be read (what was therefore not checked)",
}

#: Who takes a hand-off next, and for what: the runbook routes each concern it does not own to a
#: skill (or a section of one). Printed next to every `→` legend.
HANDOFF_MEANINGS: dict[Handoff, str] = {
    Handoff.NODE_A: "node debugger, § A EFA and security groups on one node: ports, devices, the "
    "self-referencing security-group rule",
    Handoff.NODE_F: "node debugger, § F hardware and automatic repair: deep-health-check failures, "
    "reboot or replace the node",
    Handoff.NODE_G: "node debugger, § G GPU: its Xid/ECC/NVLink catalog and verdict, then drain, "
    "reset or replace the node",
    Handoff.NODE_I: "node debugger, § I resource exhaustion: memory (fork: Cannot allocate memory, "
    "OOM), root volume, /dev/shm",
    Handoff.CLUSTER_A: "cluster debugger, § A EFA health check across the cluster (the security-group "
    "rule missing cluster-wide)",
    Handoff.CLUSTER_B: "cluster debugger, § B capacity and AZ: re-provision instance groups to place "
    "the job's nodes in one AZ / UltraServer",
    Handoff.NCCL: "NCCL skill: timeouts, hangs, stalled AllReduce, EFA falling back to TCP, RDMA "
    "memlock, NCCL environment",
    Handoff.VERSIONS: "version checker: driver/CUDA/NCCL/EFA/OFI versions compared across nodes and "
    "between the container and the host",
    Handoff.SSM: "SSM skill: shell access to the node (session, agent, connectivity) to collect it "
    "again or look by hand",
}


class Finding(BaseModel):
    """One judged signal: what was measured, against what, and what to do next."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    node: str | None = None
    check: str
    severity: Severity
    section: RunbookSection
    summary: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    threshold: str | None = None
    next_step: str | None = None
    handoff: str | None = None
    #: Set once, where the report is assembled (rules.urgency.with_tiers); None on a finding
    #: straight from a rule. Renderers read it through rules.urgency.urgency_of.
    tier: Tier | None = None
    tier_reason: str | None = None

    @model_serializer(mode="wrap")
    def _without_unset_tier(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A finding without a tier serialises as before tiers existed: step payloads (bounded by
        Step Functions' 256 KiB) and report schema 1.2 readers see no new keys."""
        data = handler(self)
        if self.tier is None:
            data.pop("tier", None)
            data.pop("tier_reason", None)
        return data


def worst(findings: list[Finding]) -> Severity:
    """The most severe severity among findings (OK when there are none)."""
    return max((f.severity for f in findings), key=lambda s: s.rank, default=Severity.OK)


def has_concern(findings: list[Finding]) -> bool:
    return any(f.severity is Severity.CONCERN for f in findings)
