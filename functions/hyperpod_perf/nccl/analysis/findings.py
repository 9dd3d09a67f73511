"""The NCCL findings of one pair analysis: unusable logs, slow pairs, suspects, the published
baseline, wrong results and coverage.
"""

from __future__ import annotations

from typing import Any

from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.nccl.analysis.model import (
    MAX_PAIR_FINDINGS,
    SECTION,
    LogReport,
    PairAnalysis,
    PairMeasurement,
    PairResult,
)
from hyperpod_perf.nccl.baselines import published_curve
from hyperpod_perf.rules.thresholds import Thresholds

# --------------------------------------------------------------------------- findings


def _finding(
    check: str,
    severity: Severity,
    summary: str,
    *,
    node: str | None = None,
    evidence: dict[str, Any] | None = None,
    threshold: str | None = None,
    next_step: str | None = None,
    handoff: str | None = None,
) -> Finding:
    return Finding(
        node=node,
        check=check,
        severity=severity,
        section=SECTION,
        summary=summary,
        evidence=evidence or {},
        threshold=threshold,
        next_step=next_step,
        handoff=handoff,
    )


def _pair_name(p: PairResult) -> str:
    if p.a is None and p.b is None:
        return p.sources[0]
    return f"{p.a}–{p.b or '?'}"


def _pct_below(value: float, reference: float) -> float:
    return round(100 * (1 - value / reference), 1) if reference else 0.0


def _findings(
    analysis: PairAnalysis,
    measurements: list[PairMeasurement],
    thresholds: Thresholds,
) -> list[Finding]:
    findings = _log_findings(analysis.logs)
    if analysis.mixed_sizes:
        findings.append(
            _finding(
                "nccl.log",
                Severity.INFO,
                "the logs share no message size: each pair's figure is taken at its own largest sizes, so "
                "pairs measured to different sizes are not comparable",
                evidence={"compared_at_bytes": None},
                next_step="Re-run every pair with the same -b/-e/-f sweep.",
            )
        )
    if analysis.mean is None:
        return findings
    findings += _slow_pair_findings(analysis, thresholds)
    if analysis.boundary is None or analysis.suspects:  # a named boundary is the explanation
        findings += _suspect_findings(analysis, thresholds)
    findings += fabric_findings(analysis, thresholds)
    findings += [_baseline_finding(analysis, thresholds, measurements)]
    findings += _correctness_findings(measurements)
    findings += [_coverage_finding(analysis)]
    return findings


def _log_findings(logs: list[LogReport]) -> list[Finding]:
    findings = []
    for log in logs:
        if not log.usable:
            findings.append(
                _finding(
                    "nccl.log",
                    Severity.CONCERN,
                    f"{log.source}: no bandwidth could be read ({'; '.join(log.problems) or 'empty'})",
                    evidence={"source": log.source, "problems": log.problems},
                    next_step="Re-run this pair; check the job's stderr for NCCL errors or a timeout.",
                )
            )
        elif log.not_ranked:
            findings.append(
                _finding(
                    "nccl.log",
                    Severity.INFO,
                    f"{log.source}: not ranked ({log.not_ranked})",
                    evidence={"source": log.source, "problems": log.problems, "not_ranked": log.not_ranked},
                    next_step="Re-run this pair to the same maximum size (-e) as the others.",
                )
            )
        elif log.truncated:
            findings.append(
                _finding(
                    "nccl.log",
                    Severity.INFO,
                    f"{log.source}: no summary line; its rows are compared at the size every log reached",
                    evidence={"source": log.source, "problems": log.problems},
                    next_step="Re-run this pair if its figure matters: the job may have been cut short.",
                )
            )
    return findings


def _slow_pair_findings(analysis: PairAnalysis, thresholds: Thresholds) -> list[Finding]:
    # bandit B101: type narrowing of an invariant the caller established
    assert analysis.mean is not None and analysis.slow_threshold_gbps is not None  # nosec B101
    threshold = f"busbw < {thresholds.nccl_pair_slow_pct:g}% below the run mean"
    base = {
        "pairs": len(analysis.pairs),
        "mean_gbps": round(analysis.mean, 3),
        "median_gbps": round(analysis.median or 0.0, 3),
        "slow_threshold_gbps": round(analysis.slow_threshold_gbps, 3),
        "drain_level_gbps": round(analysis.drain_level_gbps or 0.0, 3),
        "compared_at_bytes": analysis.compared_at_bytes,
    }
    if not analysis.slow_pairs:
        return [
            _finding(
                "nccl.pair_slow",
                Severity.OK,
                f"all {len(analysis.pairs)} pairs within {thresholds.nccl_pair_slow_pct:g}% of the run mean "
                f"({analysis.mean:.1f} GB/s)",
                evidence=base,
                threshold=threshold,
            )
        ]
    suspects = analysis.suspect_nodes
    explained = [p for p in analysis.slow_pairs if p.a in suspects or p.b in suspects]
    unexplained = [p for p in analysis.slow_pairs if not (p.a in suspects or p.b in suspects)]
    below_drain = sum(p.below_drain for p in analysis.slow_pairs)
    summary = (
        f"{len(analysis.slow_pairs)} of {len(analysis.pairs)} pairs more than "
        f"{thresholds.nccl_pair_slow_pct:g}% below the run mean ({analysis.mean:.1f} GB/s)"
    )
    if explained:
        summary += f"; {len(explained)} involve a suspect node"
    findings = [
        _finding(
            "nccl.pair_slow",
            Severity.CONCERN,
            summary,
            evidence={
                **base,
                "slow_pairs": len(analysis.slow_pairs),
                "explained_by_suspects": len(explained),
                "below_drain_level": below_drain,
                "slowest": [
                    {"a": p.a, "b": p.b, "busbw_gbps": round(p.busbw_gbps, 3), "sources": p.sources[:3]}
                    for p in analysis.slow_pairs[:20]
                ],
            },
            threshold=threshold,
            next_step="See nccl.node_suspect for the node(s) behind these pairs; re-test the others.",
        )
    ]
    for p in unexplained[:MAX_PAIR_FINDINGS]:
        findings.append(
            _finding(
                "nccl.pair_slow",
                Severity.CONCERN,
                f"pair {_pair_name(p)}: {p.busbw_gbps:.1f} GB/s, {_pct_below(p.busbw_gbps, analysis.mean)}% "
                "below the run mean" + (" (below the drain level)" if p.below_drain else ""),
                evidence={
                    "a": p.a,
                    "b": p.b,
                    "busbw_gbps": round(p.busbw_gbps, 3),
                    "runs": p.runs,
                    "sources": p.sources,
                    "mean_gbps": round(analysis.mean, 3),
                },
                threshold=threshold,
                next_step="Re-run this pair; if it stays slow, test each node against a known-good node "
                "(hyperpod-perf nccl plan --mode quick --suspect ...).",
            )
        )
    if len(unexplained) > MAX_PAIR_FINDINGS:
        findings.append(
            _finding(
                "nccl.pair_slow",
                Severity.INFO,
                f"{len(unexplained) - MAX_PAIR_FINDINGS} more slow pairs not listed one by one "
                "(see the json pairs)",
                evidence={"not_listed": len(unexplained) - MAX_PAIR_FINDINGS},
            )
        )
    return findings


def _suspect_findings(analysis: PairAnalysis, thresholds: Thresholds) -> list[Finding]:
    threshold = (
        f">= {thresholds.nccl_suspect_share:.0%} of the node's pairs slow and its median busbw more than "
        f"{thresholds.nccl_pair_slow_pct:g}% below the other pairs' median; drain candidate when more than "
        f"{thresholds.nccl_drain_pct:g}% below the run median"
    )
    if analysis.suspects:
        findings = []
        for s in analysis.suspects:
            drain = (
                f"; drain candidate (> {thresholds.nccl_drain_pct:g}% below the run median)"
                if s.drain_candidate
                else ""
            )
            next_step = (
                f"Snapshot {s.node} (EFA ports and counters, GPU PCIe/thermal, CPU governor) and re-test it "
                f"against two known-good nodes (hyperpod-perf nccl plan --mode quick --suspect {s.node})."
            )
            if s.drain_candidate:
                next_step += " If confirmed, drain and replace it (hyperpod-node-debugger § F)."
            findings.append(
                _finding(
                    "nccl.node_suspect",
                    Severity.CONCERN,
                    f"{s.node} is in {s.slow_pairs} of its {s.pairs} pairs that are slow; its median "
                    f"{s.median_gbps:.1f} GB/s vs {s.others_median_gbps:.1f} GB/s for the other pairs "
                    f"({_pct_below(s.median_gbps, s.others_median_gbps)}% lower){drain}",
                    node=s.node,
                    evidence=s.to_dict(),
                    threshold=threshold,
                    next_step=next_step,
                )
            )
        return findings
    if analysis.slow_pairs:
        share = len(analysis.slow_pairs) / len(analysis.pairs)
        widespread = share > 0.5
        summary = (
            f"slow pairs are widespread ({share:.0%} of pairs): no single node explains them"
            if widespread
            else f"the {len(analysis.slow_pairs)} slow pairs share no common node"
        )
        return [
            _finding(
                "nccl.node_suspect",
                Severity.INFO,
                summary,
                evidence={
                    "slow_pairs": len(analysis.slow_pairs),
                    "pairs": len(analysis.pairs),
                    "widespread": widespread,
                },
                threshold=threshold,
                next_step="Look at the heatmap for a block pattern (topology: AZ, network node layer, "
                "UltraServer) and re-test the slow pairs.",
            )
        ]
    return [
        _finding("nccl.node_suspect", Severity.OK, "no node is common to slow pairs", threshold=threshold)
    ]


def _baseline_finding(
    analysis: PairAnalysis, thresholds: Thresholds, measurements: list[PairMeasurement]
) -> Finding:
    # bandit B101: type narrowing of an invariant the caller established
    assert analysis.median is not None  # nosec B101
    collectives = {m.collective for m in measurements if m.collective}
    evidence: dict[str, Any] = {
        "median_gbps": round(analysis.median, 3),
        "instance_type": analysis.instance_type,
    }
    if collectives - {"all_reduce_perf", "all_reduce_perf_mpi"}:
        return _finding(
            "nccl.below_baseline",
            Severity.INFO,
            f"published expectations are for all_reduce; these logs ran {', '.join(sorted(collectives))}",
            evidence={**evidence, "collectives": sorted(collectives)},
        )
    if analysis.instance_type is None:
        return _finding(
            "nccl.below_baseline",
            Severity.INFO,
            "instance type not given: the median cannot be compared with a published expectation",
            evidence=evidence,
            next_step="Pass --instance-type (e.g. ml.p5.48xlarge) to compare with the published busbw.",
        )
    curve = published_curve(analysis.instance_type)
    if curve is None:
        return _finding(
            "nccl.below_baseline",
            Severity.INFO,
            f"no published 2-node busbw for {analysis.instance_type}; median {analysis.median:.1f} GB/s",
            evidence=evidence,
            next_step="Benchmark a known-good pair of this type and compare by hand.",
        )
    evidence |= {"compared_at_bytes": analysis.compared_at_bytes, "source": curve.source}
    if analysis.expected_gbps is None or analysis.expected_at_bytes is None:
        smallest = curve.points[0][0]
        at = analysis.compared_at_bytes
        return _finding(
            "nccl.below_baseline",
            Severity.INFO,
            f"the published {analysis.instance_type} figures start at {_size(smallest)}; "
            + (
                f"these logs were compared at {_size(at)}"
                if at is not None
                else "these figures carry no message size"
            ),
            evidence={**evidence, "published_from_bytes": smallest},
            next_step=f"Run the pairs up to at least {_size(smallest)} (-e) to compare with the published "
            "busbw.",
        )
    floor = analysis.expected_gbps * thresholds.nccl_baseline_ratio
    where = f"at {_size(analysis.expected_at_bytes)}"
    evidence |= {
        "expected_gbps": analysis.expected_gbps,
        "expected_at_bytes": analysis.expected_at_bytes,
        "floor_gbps": round(floor, 3),
    }
    threshold = f"median busbw < {thresholds.nccl_baseline_ratio:g} x published ({floor:.1f} GB/s {where})"
    if analysis.median < floor:
        return _finding(
            "nccl.below_baseline",
            Severity.CONCERN,
            f"median busbw {analysis.median:.1f} GB/s is below "
            f"{thresholds.nccl_baseline_ratio:g} x the published "
            f"{analysis.expected_gbps:.1f} GB/s {where} for {analysis.instance_type}",
            evidence=evidence,
            threshold=threshold,
            next_step="Check that NCCL uses EFA (NCCL_DEBUG=INFO shows 'NET/OFI', not 'NET/Socket'), the "
            "aws-ofi-nccl version, and the test's largest size (-e 16G or more).",
            handoff="hyperpod-nccl",
        )
    return _finding(
        "nccl.below_baseline",
        Severity.OK,
        f"median busbw {analysis.median:.1f} GB/s meets the published {analysis.expected_gbps:.1f} GB/s "
        f"{where} for {analysis.instance_type}",
        evidence=evidence,
        threshold=threshold,
    )


def _size(size_bytes: int) -> str:
    """`2147483648` -> `2 GiB`; sizes that are not a whole MiB/GiB stay in bytes."""
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB")):
        if size_bytes >= unit and size_bytes % unit == 0:
            return f"{size_bytes // unit} {name}"
    return f"{size_bytes} B"


def _correctness_findings(measurements: list[PairMeasurement]) -> list[Finding]:
    failed = [m for m in measurements if m.wrong or m.out_of_bounds_failed]
    findings = [
        _finding(
            "nccl.correctness",
            Severity.CONCERN,
            f"{m.source}: nccl-tests reported wrong results"
            + (f" (#wrong total {m.wrong})" if m.wrong else " (out-of-bounds values FAILED)"),
            evidence={"source": m.source, "a": m.a, "b": m.b, "wrong": m.wrong},
            threshold="#wrong > 0 or Out of bounds values FAILED",
            next_step="Wrong results are a correctness problem, not a speed one: run the GPU checks "
            "(DCGM diagnostics) on both nodes before trusting any bandwidth from them.",
            handoff="hyperpod-node-debugger § G",
        )
        for m in failed
    ]
    if not failed:
        unvalidated = sum(1 for m in measurements if m.wrong is None)
        findings.append(
            _finding(
                "nccl.correctness",
                Severity.OK,
                f"no wrong results in {len(measurements)} runs"
                + (f" ({unvalidated} without validation)" if unvalidated else ""),
                evidence={"runs": len(measurements), "without_validation": unvalidated},
            )
        )
    return findings


def _coverage_finding(analysis: PairAnalysis) -> Finding:
    unnamed = sum(1 for p in analysis.pairs if p.a is None or p.b is None)
    total = len(analysis.nodes) * (len(analysis.nodes) - 1) // 2
    evidence = {
        "nodes": len(analysis.nodes),
        "pairs_expected": total,
        "pairs_measured": total - analysis.missing_count,
        "missing": analysis.missing_count,
        "missing_listed": [list(k) for k in analysis.missing_pairs],
        "logs_without_hosts": unnamed,
    }
    if analysis.missing_count or unnamed:
        parts = []
        if analysis.missing_count:
            parts.append(f"{analysis.missing_count} of {total} node pairs not measured")
        if unnamed:
            parts.append(
                f"{unnamed} logs name no host pair (neither rank lines nor <hostA>__<hostB> file name)"
            )
        return _finding(
            "nccl.coverage",
            Severity.INFO,
            "; ".join(parts),
            evidence=evidence,
            next_step="Run the missing pairs (hyperpod-perf nccl plan) and name logs <hostA>__<hostB>.log.",
        )
    return _finding(
        "nccl.coverage",
        Severity.OK,
        f"all {total} pairs of {len(analysis.nodes)} nodes measured",
        evidence=evidence,
    )


def fabric_findings(analysis: PairAnalysis, thresholds: Thresholds) -> list[Finding]:
    """`nccl.fabric`: the slow pairs follow one network-layer boundary (placement.explain)."""
    return [] if analysis.boundary is None else [fabric_finding(analysis.boundary, thresholds)]


def fabric_finding(b: Any, thresholds: Thresholds) -> Finding:
    """The one `nccl.fabric` concern for a boundary (placement.Boundary)."""
    return _finding(
        "nccl.fabric",
        Severity.CONCERN,
        f"{b.slow_crossing} of {b.slow_pairs} slow pairs cross one network boundary ({b.describe()}); "
        f"{len(b.nodes_a)} and {len(b.nodes_b)} nodes on its sides are fast among themselves: "
        "the fabric or the placement between them, not a node",
        evidence=b.to_dict(),
        threshold=(
            f">= {thresholds.fabric_boundary_share:.0%} of slow pairs cross the boundary and >= "
            f"{thresholds.fabric_crossing_slow_share:.0%} of its crossing pairs are slow"
        ),
        next_step=(
            "Confirm with pairs within and across that boundary (`hyperpod-perf nccl plan --mode layers "
            "--topology FILE`); keep the job on one side (EKS: a podset topology on "
            f"topology.k8s.aws/network-node-layer-{b.layer}; Slurm: topology.conf and --switches) and "
            "open an AWS Support case quoting the network node ids on both sides."
        ),
        handoff="hyperpod-cluster-debugger § B",
    )
