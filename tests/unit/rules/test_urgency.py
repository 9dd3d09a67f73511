"""Urgency tiers (rules/urgency.py): act now, fix soon, watch — and the age of an Xid.

The Xid lines are real (tests/fixtures/real/xid, sources in SOURCES.md): Xid 79 as the demo's
node prints it, Xid 120 + 154 from a public GPU node's `dmesg -T` (the driver asks for a GPU
reset), and facebookresearch/gcm's 2022 Xid 31/48 fixture standing for an event long past.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.domain.findings import Finding, Severity, Tier
from hyperpod_perf.parse.dmesg import Timestamp, parse_gpu_kernel_log
from hyperpod_perf.report.verdict import group_findings
from hyperpod_perf.rules.catalog import CATALOG
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.gpu import GREP_RC, kernel_log
from hyperpod_perf.rules.thresholds import Thresholds
from hyperpod_perf.rules.urgency import CONCERN_TIERS, urgency_of, with_tiers

REAL = Path(__file__).parents[2] / "fixtures" / "real" / "xid"
XID79 = "[Mon Jun  2 08:37:58 2025] NVRM: Xid (PCI:0000:86:00): 79, GPU has fallen off the bus."


def concern(check: str, node: str = "i-0a", **evidence: object) -> Finding:
    return Finding(
        node=node,
        check=check,
        severity=Severity.CONCERN,
        section=CATALOG[check].section,
        summary=f"{check} on {node}",
        evidence=dict(evidence),
    )


def xid_findings(body: str, date_utc: str, uptime_s: str = "625429") -> list[Finding]:
    meta = f"hostname=gpu-7\ninstance_type=ml.p5.48xlarge\nuptime_s={uptime_s}\ndate_utc={date_utc}\n"
    ctx = NodeContext(parse_container(render_container([("meta", meta, 0), ("xid", body, 0)]), "n.txt"))
    return kernel_log.check_xid(ctx, ctx.section("xid", parse_gpu_kernel_log, accept_rc=GREP_RC), {})


def test_every_catalog_check_has_a_tier_and_a_reason_and_no_row_is_stale() -> None:
    assert set(CONCERN_TIERS) == set(CATALOG)
    assert all(reason.strip() for _, reason in CONCERN_TIERS.values())


def test_ok_has_no_tier_info_is_watch() -> None:
    base = concern("host.cpu_governor")
    assert urgency_of(base.model_copy(update={"severity": Severity.OK})) is None
    assert urgency_of(base.model_copy(update={"severity": Severity.INFO})).tier is Tier.WATCH  # type: ignore[union-attr]


def test_a_recent_xid79_is_act_now_with_its_age_in_minutes() -> None:
    # Given the Xid 79 line 37 minutes before the collection (date_utc 09:15:04)
    (finding,) = xid_findings(XID79, "2025-06-02T09:15:04Z")
    # Then its age is in the evidence and the summary, and it is act now
    assert finding.evidence["last_seen_days_ago"] == pytest.approx(37 / 1440, abs=0.001)
    assert ", last seen 37 min ago:" in finding.summary
    found = urgency_of(finding)
    assert found is not None and found.tier is Tier.ACT_NOW and "failing the job" in found.reason


def test_an_xid_from_years_before_the_run_is_watch_and_says_how_old() -> None:
    # Given gcm's 2022 Xid 31 / 48 lines in a node collected on 2026-12-02
    body = (REAL / "gcm-testfixture_dmesg-T_xid31-48.txt").read_text(encoding="utf-8")
    findings = xid_findings(body, "2026-12-02T09:00:00Z")
    # Then each is aged (Oct 2022 -> about 1,510 days), said in the summary, and ranked watch
    assert {round(f.evidence["last_seen_days_ago"]) for f in findings} == {1510}
    assert all("last seen 1510 days ago" in f.summary for f in findings)
    assert {urgency_of(f).tier for f in findings} == {Tier.WATCH}  # type: ignore[union-attr]
    assert "1510 days before this run" in urgency_of(findings[0]).reason  # type: ignore[union-attr]
    # and a larger threshold keeps it where its action puts it
    lenient = urgency_of(findings[0], Thresholds(event_stale_days=2000))
    assert lenient is not None and lenient.tier is not Tier.WATCH


def test_the_drivers_gpu_reset_required_is_act_now_and_an_application_xid_fix_soon() -> None:
    body = (REAL / "gpu-node-01_dmesg-T_xid120-154_gsp.txt").read_text(encoding="utf-8")
    by_code = {f.evidence["code"]: f for f in xid_findings(body, "2026-07-11T06:00:00Z")}
    assert urgency_of(by_code[154]).tier is Tier.ACT_NOW  # type: ignore[union-attr]
    # an Xid the catalogue answers with "restart the application" is the job's, not the node's
    app = concern("gpu.xid", code=13, action="restart_app")
    assert urgency_of(app).tier is Tier.FIX_SOON  # type: ignore[union-attr]
    assert urgency_of(concern("gpu.xid", code=63, action="ignore_watch")).tier is Tier.WATCH  # type: ignore[union-attr]
    # metrics.xid carries one action per code: any that resets the GPU makes it act now
    assert urgency_of(concern("metrics.xid", action=["restart_app", "restart_node"])).tier is Tier.ACT_NOW  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("finding", "tier"),
    [
        (concern("efa.port_state", active=31, total=32), Tier.FIX_SOON),
        (concern("efa.port_state", active=0, total=32), Tier.ACT_NOW),
        (concern("gpu.remapped_rows", pending=True, failure=False), Tier.FIX_SOON),
        (concern("gpu.remapped_rows", pending=False, failure=True), Tier.ACT_NOW),
        (concern("gpu.ecc_uncorrected", uncorrected_volatile=0, uncorrected_aggregate=3), Tier.FIX_SOON),
        (concern("gpu.ecc_uncorrected", uncorrected_volatile=2, uncorrected_aggregate=2), Tier.ACT_NOW),
        (concern("metrics.gpu_idle", node=None), Tier.ACT_NOW),  # the whole job idle: a hang
        (concern("metrics.gpu_idle"), Tier.FIX_SOON),
        (concern("coverage.node_recovery", node=None), Tier.WATCH),
    ],
)
def test_evidence_moves_a_concern_between_tiers(finding: Finding, tier: Tier) -> None:
    assert urgency_of(finding).tier is tier  # type: ignore[union-attr]


def test_the_powersave_governor_comes_after_xid79_and_pcie_width_after_a_missing_gpu() -> None:
    # Given the two inversions, listed in the order the rules emit them
    findings = [
        concern("host.cpu_governor", node="i-0b"),
        concern("gpu.pcie_width", node="i-0c"),
        concern("gpu.count", node="i-0d"),
        concern("gpu.xid", node="i-0e", code=79, action="restart_node"),
    ]
    # When grouped as every rendering groups them
    order = [g.check for g in group_findings(findings)]
    # Then the failing nodes come first
    assert order[:2] == ["gpu.count", "gpu.xid"] or order[:2] == ["gpu.xid", "gpu.count"]
    assert order.index("gpu.count") < order.index("gpu.pcie_width")
    assert order.index("gpu.xid") < order.index("host.cpu_governor")


def test_an_old_xid_is_not_grouped_with_a_new_one_and_ranks_by_age() -> None:
    new = concern("gpu.xid", node="i-0a", action="restart_node", last_seen_days_ago=0.1)
    old = concern("gpu.xid", node="i-0b", action="restart_node", last_seen_days_ago=547.0)
    groups = group_findings([old, new])
    assert [(g.tier, g.nodes) for g in groups] == [(Tier.ACT_NOW, ["i-0a"]), (Tier.WATCH, ["i-0b"])]


def test_with_tiers_stores_the_tier_and_serialises_it_only_when_set() -> None:
    (tiered,) = with_tiers([concern("gpu.count")])
    assert (tiered.tier, tiered.tier_reason) == (Tier.ACT_NOW, CONCERN_TIERS["gpu.count"][1])
    assert tiered.model_dump(mode="json")["tier"] == "act now"
    assert "tier" not in concern("gpu.count").model_dump(mode="json")  # step payloads unchanged
    assert Finding.model_validate(tiered.model_dump(mode="json")) == tiered


@pytest.mark.parametrize(
    ("stamp", "fmt", "expected"),
    [
        ("Mon Jun  2 08:37:58 2025", "dmesg-T", "2025-06-02T08:37:58+00:00"),
        ("2025-06-02T08:37:58,123456+00:00", "iso", "2025-06-02T08:37:58.123456+00:00"),
        ("Dec 31 23:59:00", "syslog", "2025-12-31T23:59:00+00:00"),  # collected in January: last year
        ("1000.5", "monotonic", "2026-01-01T00:00:00.500000+00:00"),  # booted 1,000 s before 00:00:00
    ],
)
def test_timestamps_are_placed_in_time(stamp: str, fmt: str, expected: str) -> None:
    from datetime import UTC, datetime

    collected = datetime(2026, 1, 1, 0, 16, 40, tzinfo=UTC)  # uptime 2,000 s
    moment = Timestamp(stamp, fmt).moment(collected, uptime_s=2000)
    assert moment is not None and moment.isoformat() == expected


def test_an_unplaceable_timestamp_gives_no_age() -> None:
    assert Timestamp("1000.5", "monotonic").moment(None) is None
    assert Timestamp("Feb 30 10:00:00", "syslog").moment(None) is None
    f = xid_findings(XID79.replace("[Mon Jun  2 08:37:58 2025]", "[  812.5]"), "garbled", uptime_s="")[0]
    assert "last_seen_days_ago" not in f.evidence and "last seen" not in f.summary
