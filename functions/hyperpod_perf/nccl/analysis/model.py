"""The pair-matrix analysis's data: one run's figure per pair, what each log gave, the merged pairs,
the named suspects and the whole `PairAnalysis` the reports read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hyperpod_perf.domain.findings import Finding, RunbookSection
from hyperpod_perf.rules.urgency import with_tiers

SECTION = RunbookSection.NCCL
MAX_PAIR_FINDINGS = 50
MAX_LISTED = 100

PairKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class PairMeasurement:
    """One run's figure for one pair; `a`/`b` are None when the hosts could not be told."""

    busbw_gbps: float
    source: str
    a: str | None = None
    b: str | None = None
    wrong: int | None = None
    out_of_bounds_failed: bool = False
    avg_busbw_gbps: float | None = None
    collective: str | None = None
    #: (size bytes, mean busbw) of the run's largest sizes, ascending; empty when not known
    sizes: tuple[tuple[int, float], ...] = ()
    #: True: the run reached its maxBytes or printed its summary; False: cut short; None: cannot tell
    complete: bool | None = None

    @property
    def largest_size(self) -> int | None:
        return self.sizes[-1][0] if self.sizes else None

    @property
    def key(self) -> PairKey | None:
        if self.a is None or self.b is None or self.a == self.b:
            return None
        return (self.a, self.b) if self.a < self.b else (self.b, self.a)


@dataclass(slots=True)
class LogReport:
    """What one log gave: its measurements and anything odd about it."""

    source: str
    measured_runs: int
    problems: list[str] = field(default_factory=list)
    truncated: bool = False
    elided: bool = False
    not_ranked: str | None = None  # why its figures were left out of the ranking

    @property
    def usable(self) -> bool:
        return self.measured_runs > 0


@dataclass(slots=True)
class PairResult:
    a: str | None
    b: str | None
    busbw_gbps: float
    runs: int
    sources: list[str]
    slow: bool = False
    below_drain: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "busbw_gbps": round(self.busbw_gbps, 3),
            "runs": self.runs,
            "sources": self.sources,
        }


@dataclass(frozen=True, slots=True)
class Suspect:
    node: str
    slow_pairs: int
    pairs: int
    median_gbps: float
    others_median_gbps: float
    drain_candidate: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "slow_pairs": self.slow_pairs,
            "pairs": self.pairs,
            "median_gbps": round(self.median_gbps, 3),
            "others_median_gbps": round(self.others_median_gbps, 3),
            "drain_candidate": self.drain_candidate,
        }


@dataclass(slots=True)
class PairAnalysis:
    pairs: list[PairResult]
    nodes: list[str]
    mean: float | None
    median: float | None
    slow_threshold_gbps: float | None
    drain_level_gbps: float | None
    slow_pairs: list[PairResult]
    suspects: list[Suspect]
    missing_pairs: list[PairKey]
    missing_count: int
    logs: list[LogReport]
    findings: list[Finding]
    instance_type: str | None = None
    expected_gbps: float | None = None
    compared_at_bytes: int | None = None  # the message size every ranked log reached
    mixed_sizes: bool = False  # the ranked logs share no message size: figures at their own largest sizes
    expected_at_bytes: int | None = None  # the published point's size (<= compared_at_bytes)
    #: The network-layer boundary the slow pairs cross (placement.Boundary), when layers were known.
    boundary: Any = None

    @property
    def suspect_nodes(self) -> set[str]:
        return {s.node for s in self.suspects}

    def to_dict(self) -> dict[str, Any]:
        def num(value: float | None) -> float | None:
            return None if value is None else round(value, 3)

        return {
            "pairs": [p.to_dict() for p in self.pairs],
            "mean": num(self.mean),
            "median": num(self.median),
            "slow_threshold_gbps": num(self.slow_threshold_gbps),
            "drain_level_gbps": num(self.drain_level_gbps),
            "slow_pairs": [
                {"a": p.a, "b": p.b, "busbw_gbps": round(p.busbw_gbps, 3), "below_drain_level": p.below_drain}
                for p in self.slow_pairs
            ],
            "suspects": [s.to_dict() for s in self.suspects],
            "nodes": self.nodes,
            "missing_pairs": {"count": self.missing_count, "listed": [list(k) for k in self.missing_pairs]},
            "unusable_logs": [
                {"source": log.source, "problems": log.problems} for log in self.logs if not log.usable
            ],
            "instance_type": self.instance_type,
            "expected_busbw_gbps": self.expected_gbps,
            "compared_at_bytes": self.compared_at_bytes,
            "findings": [f.model_dump(mode="json") for f in with_tiers(self.findings)],
        } | ({"fabric_boundary": self.boundary.to_dict()} if self.boundary is not None else {})
