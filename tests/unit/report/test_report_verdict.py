"""The verdict line and the grouping of identical findings across nodes."""

from __future__ import annotations

from report_builders import finding, hot_gpu, node, report

from hyperpod_perf.domain.findings import RunbookSection, Severity
from hyperpod_perf.report.verdict import compute_verdict, family_of, group_findings, verdict_of


def test_verdict_names_families_with_node_counts_and_the_saturated_file_system() -> None:
    # Given two NCCL suspects (named by host), a hot GPU, and a saturated FSx for Lustre
    nodes = [node(f"i-{k:08x}", hostname=f"ip-10-0-0-{k}") for k in range(8)]
    findings = [
        finding("ip-10-0-0-1", "nccl.node_suspect", section=RunbookSection.NCCL),
        finding("ip-10-0-0-2", "nccl.node_suspect", section=RunbookSection.NCCL),
        finding(None, "nccl.pair_slow", section=RunbookSection.NCCL, evidence={"slow_pairs": 9, "pairs": 28}),
        hot_gpu("i-00000003", 91),
        finding(
            None,
            "fs.throughput",
            summary="fs-0abc12345678 saturated: 96% of provisioned",
            section=RunbookSection.FILE_SYSTEM,
            evidence={"file_system_id": "fs-0abc12345678"},
        ),
    ]
    # When the verdict is computed
    verdict = compute_verdict(report(findings, nodes))
    # Then it follows the impact order: the GPU fault (one slow rank), then NCCL (the suspects
    # explain the slow pairs: one clause), then the saturated FSx
    assert verdict == "1 node has GPU faults; 2 nodes degrade NCCL; FSx fs-0abc12345678 saturated"


def test_verdict_without_concerns_counts_nodes_and_info() -> None:
    # Given 8 healthy nodes and 3 INFO findings
    nodes = [node(f"i-{k:08x}") for k in range(8)]
    findings = [finding(n.node, "gpu.temperature", Severity.OK) for n in nodes]
    findings += [finding(None, "coverage.node_recovery", Severity.INFO, section=RunbookSection.COVERAGE)] * 3
    # When / Then
    assert compute_verdict(report(findings, nodes)) == "No concerns on 8 nodes; 3 info"


def test_pair_slow_alone_is_reported_as_pairs() -> None:
    # Given slow pairs but no single suspect node
    findings = [
        finding(None, "nccl.pair_slow", section=RunbookSection.NCCL, evidence={"slow_pairs": 4, "pairs": 28})
    ]
    # Then the verdict says how many pairs
    assert compute_verdict(report(findings, [node("a"), node("b")])) == "4 of 28 NCCL pairs slow"


def test_stored_verdict_wins_over_computed() -> None:
    r = report([hot_gpu("a", 90)], [node("a")], verdict="set by the pipeline")
    assert verdict_of(r) == "set by the pipeline"


def test_identical_findings_group_across_nodes_with_a_short_node_list() -> None:
    # Given 12 hot nodes with different temperatures (same check and threshold)
    findings = [hot_gpu(f"i-{k:02d}", 88 + k % 4) for k in range(12)]
    # When grouped
    (group,) = group_findings(findings)
    # Then one group names the check, threshold, count and two nodes "+10 more"
    assert group.nodes == [f"i-{k:02d}" for k in range(12)]
    assert group.title == "gpu.temperature (temperature.gpu >= 88 C) on 12 nodes: i-00, i-01 +10 more"
    assert group.next_step == "Check cooling."
    assert group.handoff == "hyperpod-node-debugger § G"


def test_identical_summaries_keep_the_summary_as_title() -> None:
    findings = [
        finding(f"n{k}", "host.memlock", summary="ulimit -l is 64", section=RunbookSection.NCCL)
        for k in (1, 2, 3)
    ]
    (group,) = group_findings(findings)
    assert group.title == "ulimit -l is 64 on 3 nodes: n1, n2 +1 more"


def test_groups_are_ordered_concern_first_and_ok_is_left_out() -> None:
    findings = [
        finding(None, "coverage.node_recovery", Severity.INFO, section=RunbookSection.COVERAGE),
        finding("a", "gpu.temperature", Severity.OK),
        hot_gpu("b", 90),
    ]
    groups = group_findings(findings)
    assert [(g.check, g.severity) for g in groups] == [
        ("gpu.temperature", Severity.CONCERN),
        ("coverage.node_recovery", Severity.INFO),
    ]


def test_family_of_uses_prefix_then_runbook_section() -> None:
    assert family_of(finding("a", "efa.counters")) == "efa"
    assert family_of(finding(None, "topology.az_spread", section=RunbookSection.NCCL)) == "nccl"
    assert family_of(finding("a", "fleet.outlier", section=RunbookSection.GPU)) == "gpu"
    assert family_of(finding("a", "collect.node", section=RunbookSection.COLLECTION)) == "collect"
