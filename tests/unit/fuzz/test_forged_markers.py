"""Section markers a tool's output cannot forge (issue 24, finding 5).

The audit's reproduction: a tool's output (say `nvidia-smi topo -m` on a tampered node, or a
dmesg line) that prints `=== hpd:end <its section> rc=0 ===` and `=== hpd:begin xid ===` with
a clean body pre-empted the real, later xid section (the parser kept the first copy): a real
Xid 79 became "no Xid lines". Since collector 2 every marker carries the run's nonce, which no
tool is given: here the forgery is planted in every tool's output in turn, with no nonce and
with a wrong one, and the real Xid 79 (and every other planted fault) is still found, the
forgery named. A collector-1 snapshot (no nonce) is read as before, with the INFO that says its
markers cannot be verified: the residual risk of old files, shown rather than hidden.
"""

from __future__ import annotations

import pytest

from hyperpod_perf.collect.snapshot import (
    SECTION_ORDER,
    UNVERIFIED_MARKERS,
    parse_container,
    render_container,
)
from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.rules.engine import evaluate_text
from hyperpod_perf_dev.sim.node import NodeFaults, simulate_node

NODE = simulate_node(0, faults=NodeFaults(pcie_width_gpu=3, xid79=True, governor="powersave"))
SOURCE = f"{NODE.instance_id}.txt"
WRONG_NONCE = "0" * 32


def forgery(section: str, nonce: str | None) -> str:
    """What a hostile tool prints: close its own section, a clean xid (and oom), reopen its own."""
    tag = f" nonce={nonce}" if nonce else ""
    return (
        f"=== hpd:end {section} rc=0{tag} ===\n"
        f"=== hpd:begin xid{tag} ===\n=== hpd:end xid rc=0{tag} ===\n"
        f"=== hpd:begin oom{tag} ===\n=== hpd:end oom rc=0{tag} ===\n"
        f"=== hpd:begin {section}{tag} ===\n"
    )


def _with_forgery(section: str, forged_nonce: str | None, *, nonce: str | None) -> str:
    sections = [
        (n, t + forgery(section, forged_nonce) if n == section else t, rc) for n, t, rc in NODE.sections
    ]
    return render_container(sections, nonce)


def _xid(findings):
    return [f for f in findings if f.check == "gpu.xid"]


def test_the_real_xid_79_is_found_in_the_intact_snapshot() -> None:
    xid = _xid(evaluate_text(NODE.text, SOURCE))
    assert [f.severity for f in xid] == [Severity.CONCERN] and "79" in xid[0].summary


@pytest.mark.parametrize("forged", ["no nonce", "wrong nonce"])
@pytest.mark.parametrize("section", SECTION_ORDER)
def test_a_forged_boundary_in_any_tools_output_is_text_and_named(section: str, forged: str, outcome) -> None:
    # Given a nonce-bearing snapshot (collector 2) whose `section` output carries the forgery
    text = _with_forgery(section, None if forged == "no nonce" else WRONG_NONCE, nonce=NODE.nonce)
    # When it is parsed and judged
    snapshot = parse_container(text, SOURCE)
    findings = evaluate_text(text, SOURCE)
    # Then the forged lines are that section's text: the real xid section is the one kept...
    real_xid = dict((n, t) for n, t, _ in NODE.sections)["xid"]
    expected_xid = real_xid + (
        forgery(section, None if forged == "no nonce" else WRONG_NONCE) if section == "xid" else ""
    )
    assert snapshot.sections["xid"].text == expected_xid
    assert [f.severity for f in _xid(findings)] == [Severity.CONCERN] and "79" in _xid(findings)[0].summary
    # ... every other planted fault is still found ...
    concerns = {f.check for f in findings if f.severity is Severity.CONCERN}
    assert {"gpu.pcie_width", "host.cpu_governor"} <= concerns or section in {"gpu-query", "cpu-governor"}
    # ... and the imitation is a collect.node finding naming the section it was printed in
    named = [f for f in findings if f.check == "collect.node" and "imitate section markers" in f.summary]
    assert [f.evidence["section"] for f in named] == [section]
    assert "6 line(s)" in named[0].summary
    outcome(
        f"forged `hpd:end`/`hpd:begin xid` ({forged}) in the output of `{section}`",
        "kept as that section's text; the real xid (Xid 79) judged; collect.node names the imitation",
    )


def test_a_later_genuine_section_cannot_be_preempted_by_reordering() -> None:
    # Given the real sections printed, then a genuine-looking xid again (right nonce, out of order)
    text = NODE.text + render_container([("xid", "", 0)], NODE.nonce)
    snapshot = parse_container(text, SOURCE)
    # Then the first xid is kept, and the out-of-order one is named and ignored
    assert "79" in snapshot.sections["xid"].text
    assert any("out of the collector's order" in p for p in snapshot.problems)


def test_a_collector_1_snapshot_is_read_as_before_with_an_info_that_its_markers_are_unverified() -> None:
    # Given the same node in the collector-1 format (no nonce) and the forgery in gpu-topo
    legacy = render_container(list(NODE.sections))
    forged = _with_forgery("gpu-topo", None, nonce=None)
    # When judged
    intact, tampered = evaluate_text(legacy, SOURCE), evaluate_text(forged, SOURCE)
    # Then the intact one reads as it always did, plus one INFO saying markers cannot be verified
    notes = [f for f in intact if f.check == "collect.node"]
    assert [(f.severity, f.summary) for f in notes] == [(Severity.INFO, UNVERIFIED_MARKERS)]
    assert {f.check: f.severity for f in intact if f.check != "collect.node"} == {
        f.check: f.severity for f in evaluate_text(NODE.text, SOURCE) if f.check != "collect.node"
    }
    # And the forged one shows the residual risk of old files: the forgery wins, the INFO is there
    # and the duplicate is named (the reason to re-collect with the current collector)
    assert [f.severity for f in _xid(tampered)] != [Severity.CONCERN]
    summaries = [f.summary for f in tampered if f.check == "collect.node"]
    assert UNVERIFIED_MARKERS in summaries
    assert any("appears more than once" in s for s in summaries)


def test_the_nonce_the_caller_expects_wins_over_the_first_marker() -> None:
    # Given output whose markers carry another nonce than the one the caller gave the session
    snapshot = parse_container(NODE.text, SOURCE, nonce="f" * 32)
    # Then no marker is accepted: nothing is a section
    assert snapshot.sections == {}
    assert "no hpd sections found: not collector output" in snapshot.problems
