"""Bad node output everywhere it enters the engine: it becomes a finding, never an exception.

The input is a snapshot container a broken (or hostile) node printed, carried as bytes and
decoded the way every collector path decodes it (UTF-8, undecodable bytes replaced). The base
is a simulated p5 node with planted faults, so "still evaluated" means real CONCERNs survive.

What is proven, each against the measured outcome:
- random bytes, binary garbage, UTF-16/latin-1 text, stray lines, duplicated, unknown and
  forged-marker sections, and a cut at every section boundary and inside every section never
  raise; a damaged section yields a `collect.node` finding whose evidence names it; every
  section before the damage is judged exactly as in the undamaged snapshot;
- every parser raises nothing but ValueError (the engine's contract), and the parsers designed
  to be total never raise; the inputs that once broke this are kept as regression cases;
- a 10 MB line in any section is judged within 5 s (in a child process, so a regression
  cannot hang the suite).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import random
import time
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hyperpod_perf.collect.snapshot import SECTION_ORDER, parse_container, parse_key_values
from hyperpod_perf.collect.snapshot import render_container as _render_container
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.parse import dmesg, efa, lustre, nccl_tests, nvidia_smi, procfs
from hyperpod_perf.rules import fleet_signals
from hyperpod_perf.rules.engine import evaluate_text
from hyperpod_perf.rules.gpu import parse_systemctl_is_active
from hyperpod_perf.service.evaluate import node_mounts
from hyperpod_perf_dev.sim.node import NodeFaults, simulate_node

FUZZ = settings(settings.get_profile("hpd-fuzz"))

#: A p5 node with faults in early, middle and late sections, so a cut or garbage elsewhere must
#: leave these CONCERNs in place.
FAULTS = NodeFaults(pcie_width_gpu=3, xid79=True, efa_port_down="rdmap96s0", governor="powersave")
NODE = simulate_node(0, faults=FAULTS)
SECTIONS: dict[str, str] = {name: text for name, text, _ in NODE.sections}
TEXT = NODE.text
#: The run's marker nonce (collector 2): every marker this suite writes carries it, as the
#: collector's do; forged markers without it are the subject of their own tests.
TAG = f" nonce={NODE.nonce}"


def render_container(sections):
    return _render_container(sections, NODE.nonce)


SOURCE = f"{NODE.instance_id}.txt"

#: Every parser the node rules call, by section (what `NodeContext.section` runs).
PARSERS: dict[str, Callable[[str], Any]] = {
    "gpu-query": nvidia_smi.parse_gpu_query,
    "gpu-topo": nvidia_smi.parse_gpu_topology,
    "nvlink-status": nvidia_smi.parse_nvlink_status,
    "nvlink-errors": nvidia_smi.parse_nvlink_errors,
    "xid": dmesg.parse_gpu_kernel_log,
    "efa-ports": efa.parse_efa_ports,
    "efa-counters": efa.parse_efa_counters,
    "fi-info": efa.parse_fi_info,
    "versions": procfs.parse_versions,
    "cpu-governor": procfs.parse_cpu_governor,
    "fabric-manager": parse_systemctl_is_active,
    "mounts": procfs.parse_mounts,
    "df": procfs.parse_df,
    "lfs-df": lustre.parse_lfs_df,
    "cpu-stat": procfs.parse_cpu_stat,
    "io-pressure": procfs.parse_io_pressure,
    "memlock": procfs.parse_memlock,
    "oom": dmesg.parse_oom,
}

#: Parsers that are total by design (documented so in their modules): they must never raise.
TOTAL_PARSERS: dict[str, Callable[[str], Any]] = {
    "meta/versions key=value": parse_key_values,
    "snapshot container": parse_container,
    "nccl-tests log": nccl_tests.parse_nccl_tests,
}

#: Sections whose garbage is not a collection problem, by design: key=value lists ignore other
#: lines, xid/oom are grep outputs whose non-matching lines are skipped, and no node rule reads
#: gpu-topo. fabric-manager is read on NVL72 nodes only, and the base node is a p5. Every other
#: section's parser refuses text in which it recognises nothing.
#: slurm-topology is no node check's input: Evaluate reads it for the run's layers, and lines that are
#: no topology record are skipped there (service.topology.slurm_placement).
GARBAGE_TOLERANT = frozenset({"meta", "versions", "xid", "oom", "fabric-manager", "slurm-topology"})


# --- helpers -----------------------------------------------------------------------------------


def received(data: bytes) -> str:
    """Bytes as every collector path turns them into text (aws/session.py, collect/local.py, the CLI)."""
    return data.decode("utf-8", errors="replace")


def judged(findings: list[Finding]) -> dict[str, tuple[str, str]]:
    """check -> (severity, summary) for the node checks (collection findings left out)."""
    return {f.check: (f.severity.value, f.summary) for f in findings if f.check != "collect.node"}


def collection(findings: list[Finding]) -> list[tuple[str, str]]:
    return [(f.evidence["section"], f.evidence["reason"]) for f in findings if f.check == "collect.node"]


def with_sections(replace: dict[str, str] | None = None, rc: dict[str, int] | None = None) -> str:
    replace, rc = replace or {}, rc or {}
    return render_container(
        [(name, replace.get(name, text), rc.get(name, 0)) for name, text in SECTIONS.items()]
    )


@cache
def baseline() -> dict[str, tuple[str, str]]:
    return judged(evaluate_text(TEXT, SOURCE))


@cache
def depends_on() -> dict[str, frozenset[str]]:
    """section -> the checks whose result changes when that section is missing (measured)."""
    result = {}
    for name in SECTIONS:
        without = render_container([(n, t, 0) for n, t in SECTIONS.items() if n != name])
        after = judged(evaluate_text(without, SOURCE))
        result[name] = frozenset(c for c in baseline() if after.get(c) != baseline()[c])
    return result


def checks_fed_by(sections: set[str]) -> frozenset[str]:
    return frozenset().union(*(depends_on()[s] for s in sections)) if sections else frozenset()


def assert_unchanged_except(findings: list[Finding], damaged: set[str]) -> None:
    """Every check not fed by a damaged section is judged exactly as in the intact snapshot."""
    now = judged(findings)
    untouched = set(baseline()) - checks_fed_by(damaged)
    # (a cut right after `meta` leaves nothing to judge: no check reads `meta` alone since
    # host.fabric_manager stays silent on a non-NVL72 type; the equality below then holds trivially
    # and the collection findings asserted by the callers carry the test)
    assert {c: now.get(c) for c in untouched} == {c: baseline()[c] for c in untouched}


def assert_serialisable(findings: list[Finding]) -> None:
    """Reports and notifications serialise findings as JSON: damaged input must not break that."""
    json.loads(json.dumps([f.model_dump(mode="json") for f in findings]))


# --- the base snapshot -------------------------------------------------------------------------


def test_base_snapshot_carries_the_planted_faults_in_early_middle_and_late_sections():
    # Given the intact simulated node
    # Then its planted faults are CONCERNs, nothing is a collection problem, and every section
    # that feeds a check is known (so the damage tests below compare against real judgements)
    assert baseline()["gpu.pcie_width"][0] == "CONCERN"
    assert baseline()["gpu.xid"][0] == "CONCERN"
    assert baseline()["efa.port_state"][0] == "CONCERN"
    assert baseline()["host.cpu_governor"][0] == "CONCERN"
    assert collection(evaluate_text(TEXT, SOURCE)) == []
    assert "gpu.temperature" in depends_on()["gpu-query"]
    assert "fs.lustre_df" in depends_on()["lfs-df"]


def test_every_collected_section_is_judged_by_some_check():
    # Given the collector's sections (issue 14: "every collected section judged")
    # When each one is left out of the intact p5 snapshot in turn
    # Then a node check's result changes, except for the three judged elsewhere (asserted below)
    assert set(SECTIONS) == set(SECTION_ORDER)
    unjudged = sorted(name for name in SECTION_ORDER if not depends_on()[name])
    assert unjudged == ["fabric-manager", "mounts", "slurm-topology", "versions"]


def test_the_sections_no_node_check_reads_on_a_p5_are_judged_elsewhere():
    # mounts: the FSx step finds the cluster's file systems from the nodes' Lustre mounts
    without_mounts = render_container([(n, t, 0) for n, t in SECTIONS.items() if n != "mounts"])
    found = node_mounts({"n": parse_container(TEXT, SOURCE)})
    assert [m.mountpoint for m in found if m.fstype == "lustre"] == ["/fsx"]
    assert node_mounts({"n": parse_container(without_mounts, SOURCE)}) == []
    # versions: the fleet rules compare them across nodes (driver / kernel / EFA drift)
    intact = fleet_signals.extract(parse_container(TEXT, SOURCE))
    without_versions = render_container([(n, t, 0) for n, t in SECTIONS.items() if n != "versions"])
    assert intact.versions and not fleet_signals.extract(parse_container(without_versions, SOURCE)).versions
    # fabric-manager: judged on the NVL72 types, where NVLink needs the fabric manager
    nvl72 = render_container(
        [
            ("meta", "hostname=gb-1\ninstance_type=ml.p6e-gb200.36xlarge\n", 0),
            ("fabric-manager", "failed\n", 3),
        ]
    )
    (fabric,) = [f for f in evaluate_text(nvl72, "gb-1.txt") if f.check == "host.fabric_manager"]
    assert fabric.severity is Severity.CONCERN
    # slurm-topology: the run's network layers for the pair analysis (service.topology.slurm_placement)
    from hyperpod_perf.service.topology import slurm_placement

    tree = "SwitchName=s0 Level=0 LinkSpeed=1 Nodes=gb-[1-2]\n"
    assert slurm_placement([tree]).layers == {"gb-1": ("s0",), "gb-2": ("s0",)}
    assert slurm_placement([SECTIONS["slurm-topology"]]).layers == {}


# --- truncation --------------------------------------------------------------------------------


def _cut_points() -> list[tuple[str, str, int]]:
    """(label, section, offset): before each begin marker, mid-body, mid end marker, after it."""
    points = []
    for name in SECTIONS:
        begin = TEXT.index(f"=== hpd:begin {name}{TAG} ===\n")
        end = TEXT.index(f"=== hpd:end {name} rc=", begin)
        body_start = begin + len(f"=== hpd:begin {name}{TAG} ===\n")
        after = TEXT.index("\n", end) + 1
        points.append(("at its begin marker", name, begin))
        if end > body_start:
            points.append(("mid-body", name, body_start + (end - body_start) // 2))
        points.append(("inside its end marker", name, end + 12))
        points.append(("right after its end marker", name, after))
    return points


@pytest.mark.parametrize(("where", "section", "offset"), _cut_points(), ids=lambda v: str(v))
def test_a_cut_at_every_section_boundary_and_inside_every_section(where, section, offset, outcome):
    # Given the snapshot cut at this point (a session dropped, output capped)
    index = list(SECTIONS).index(section)
    complete = set(list(SECTIONS)[: index + (where == "right after its end marker")])

    # When it is evaluated
    findings = evaluate_text(TEXT[:offset], SOURCE)

    # Then nothing raises; a section cut open is a collect.node finding naming it
    problems = collection(findings)
    if offset == 0:
        assert problems == [("container", "empty snapshot: the collector printed nothing")]
        assert judged(findings) == {}
        return
    if where in ("mid-body", "inside its end marker"):
        # (the partial body may also fail to parse: that finding names the same section)
        assert (section, f"section {section!r} was cut off (no end marker): output truncated") in problems
        assert {s for s, _ in problems} == {section}
    else:
        # a cut exactly between sections is indistinguishable from sections not printed
        assert problems == []
    # ... every section before the cut is judged as if nothing happened
    if complete:
        assert_unchanged_except(findings, set(SECTIONS) - complete)
    # ... and a check whose section never arrived is never claimed OK
    missing = set(SECTIONS) - complete - {section}
    now = judged(findings)
    for check in checks_fed_by(missing) - checks_fed_by(complete | {section}):
        assert now[check][0] == "INFO" and "not present" in now[check][1], check
    assert_serialisable(findings)
    outcome(
        f"snapshot cut {where} of `{section}`",
        "collect.node naming the section" if where in ("mid-body", "inside its end marker") else "no error",
    )


def test_a_cut_inside_lfs_df_still_yields_the_gpu_findings_from_gpu_query(outcome):
    # Given a snapshot cut inside the lfs-df section (late in the output)
    begin = f"=== hpd:begin lfs-df{TAG} ===\n"
    cut = TEXT.index(begin) + len(begin) + 20

    # When evaluated
    findings = evaluate_text(TEXT[:cut], SOURCE)

    # Then the gpu-query judgements (GPU 3 trained at x8) are all there, unchanged
    now = judged(findings)
    for check in (
        "gpu.temperature",
        "gpu.pcie_width",
        "gpu.thermal_throttle",
        "gpu.ecc_uncorrected",
        "gpu.xid",
    ):
        assert now[check] == baseline()[check]
    assert now["gpu.pcie_width"][0] == "CONCERN" and "GPU 3" in now["gpu.pcie_width"][1]
    # ... the cut is reported under lfs-df, and the sections after it are "not present"
    assert {s for s, _ in collection(findings)} == {"lfs-df"}
    assert now["host.memlock"][0] == "INFO" and now["host.oom"][0] == "INFO"
    outcome("snapshot cut inside `lfs-df`", "gpu.* from gpu-query unchanged; collect.node names lfs-df")


@FUZZ
@given(cut=st.integers(min_value=0, max_value=len(TEXT)))
def test_a_cut_anywhere_never_raises_and_keeps_every_complete_section(cut):
    # Given the snapshot cut at an arbitrary character
    text = TEXT[:cut]
    complete = {name for name, raw in parse_container(text).sections.items() if raw.complete}

    # When evaluated
    findings = evaluate_text(text, SOURCE)

    # Then the sections whose end marker arrived are judged as in the intact snapshot, and a
    # collection problem names a real section (or the container when nothing arrived)
    if complete:
        assert_unchanged_except(findings, set(SECTIONS) - complete)
    assert {section for section, _ in collection(findings)} <= {*SECTIONS, "container"}


# --- garbage and encodings ---------------------------------------------------------------------

_RNG = random.Random(8)
GARBAGE: dict[str, str] = {
    "random bytes": received(_RNG.randbytes(4096)),
    "binary with NULs and escapes": received(bytes(range(256)) * 8),
    "UTF-16 text with BOM": received("GPU 0: overheated\nrdmap0 4: ACTIVE\n".encode("utf-16")),
    "latin-1 text": received("Température élevée: 95 °C; contrôle\n".encode("latin-1")),
}


@pytest.mark.parametrize("kind", list(GARBAGE))
@pytest.mark.parametrize("section", list(SECTIONS))
def test_garbage_in_one_section_is_reported_under_that_section_and_spares_the_rest(section, kind, outcome):
    # Given one section's output replaced by garbage
    text = with_sections({section: GARBAGE[kind]})

    # When evaluated
    findings = evaluate_text(text, SOURCE)

    # Then the garbled section is a collect.node finding naming it (unless garbage there is
    # ignored by design), no rule family crashed, and every other section is judged as before
    problems = collection(findings)
    if section in GARBAGE_TOLERANT:
        assert problems == []
    else:
        assert [s for s, _ in problems] == [section]
        assert "could not be parsed" in problems[0][1]
        # ... and no check fed by it pretends to have judged the garbage as healthy (the checks
        # that needed it stay silent: the collect.node finding says what was not judged)
        now = judged(findings)
        assert all(now.get(c, ("silent",))[0] != "OK" for c in depends_on()[section]), now
    assert not any("rule family failed" in reason for _, reason in problems)
    assert_unchanged_except(findings, {section})
    assert_serialisable(findings)
    outcome(
        f"{kind} in section `{section}`",
        "ignored by design (lines not recognised)"
        if section in GARBAGE_TOLERANT
        else "collect.node naming it",
    )


@pytest.mark.parametrize("size", [0, 1, 64, 4096, 65536])
def test_random_bytes_as_the_whole_snapshot_are_one_collection_finding(size, outcome):
    # Given a node that printed random bytes instead of the container
    text = received(random.Random(size).randbytes(size))

    # When evaluated
    findings = evaluate_text(text, "garbled")

    # Then the only findings are container problems: nothing is judged, nothing raises
    assert findings and all(f.check == "collect.node" and f.severity is Severity.CONCERN for f in findings)
    reasons = [f.evidence["reason"] for f in findings]
    expected = "empty snapshot" if not text.strip() else "no hpd sections found"
    assert any(expected in r for r in reasons)
    assert all(f.evidence["section"] == "container" for f in findings)
    assert_serialisable(findings)
    outcome(f"{size} random bytes as the whole snapshot", "collect.node: not collector output")


def test_a_utf16_snapshot_is_not_mistaken_for_collector_output(outcome):
    # Given the intact snapshot re-encoded as UTF-16 with a BOM (a tool or shell that re-encodes)
    findings = evaluate_text(received(TEXT.encode("utf-16")), SOURCE)

    # Then no marker is recognised (every character carries a NUL), and nothing is judged
    assert judged(findings) == {}
    assert any("no hpd sections found" in reason for _, reason in collection(findings))
    outcome("whole snapshot in UTF-16 with BOM", "collect.node: no sections found; nothing judged")


def test_a_latin1_snapshot_is_judged_with_the_odd_bytes_replaced(outcome):
    # Given the snapshot with non-ASCII text in meta and in a GPU name, encoded as latin-1
    text = TEXT.replace("NVIDIA H100 80GB HBM3", "NVIDIA H100 Édition spéciale")
    assert text != TEXT

    # When received (decoded as UTF-8 with replacement)
    findings = evaluate_text(received(text.encode("latin-1")), SOURCE)

    # Then every check is judged exactly as in the UTF-8 original (names are not measurements)
    assert judged(findings) == baseline()
    assert collection(findings) == []
    outcome("whole snapshot in latin-1 with non-ASCII names", "judged as the UTF-8 original")


@FUZZ
@given(data=st.binary(max_size=8192))
def test_binary_input_is_never_an_exception(data):
    # Given arbitrary bytes as a node's output
    findings = evaluate_text(received(data), "binary")

    # Then findings are produced (collection problems), serialisable, and nothing is judged
    assert findings and all(f.check == "collect.node" for f in findings)
    assert_serialisable(findings)


@FUZZ
@given(text=st.text(max_size=4096))
def test_any_text_is_never_an_exception(text):
    findings = evaluate_text(text, "text")
    assert findings
    assert_serialisable(findings)


def test_stray_binary_lines_between_sections_are_counted_and_ignored(outcome):
    # Given a garbage line before every section
    junk = received(b"\x00\xff\xfe garbage \x1b[31m\n")
    text = "".join(junk + render_container([section]) for section in NODE.sections)

    # When evaluated
    findings = evaluate_text(text, SOURCE)

    # Then every check is judged as before and the stray lines are one container finding
    assert judged(findings) == baseline()
    assert collection(findings) == [
        ("container", f"{len(SECTIONS)} line(s) outside any section were ignored")
    ]
    outcome("garbage lines between sections", "one collect.node (stray lines counted); all checks judged")


# --- forged structure --------------------------------------------------------------------------


def test_a_section_printed_again_out_of_order_is_ignored_and_named(outcome):
    # Given a second gpu-query section full of garbage after the real one (same nonce)
    extra = render_container([("gpu-query", GARBAGE["random bytes"], 0)])
    text = TEXT + extra

    # When evaluated
    findings = evaluate_text(text, SOURCE)

    # Then the real copy is judged (GPU 3 at x8 still found); the second, out of the collector's
    # order, is no section: named, and its lines counted as outside any section
    assert judged(findings) == baseline()
    assert collection(findings) == [
        ("container", "a begin marker of section 'gpu-query' out of the collector's order was ignored"),
        (
            "container",
            f"{sum(1 for x in extra.splitlines() if x.strip())} line(s) outside any section were ignored",
        ),
    ]
    outcome(
        "a section printed twice (second copy garbage)",
        "second copy ignored (out of the collector's order); collect.node names it",
    )


def test_an_unknown_section_is_ignored(outcome):
    # Given an extra section no rule knows, full of garbage and a fake shell command
    text = TEXT + render_container([("evil-section", "$(reboot); `rm -rf /`\n" + GARBAGE["random bytes"], 0)])

    # When evaluated, then nothing changes: unknown sections are never parsed or executed
    findings = evaluate_text(text, SOURCE)
    assert judged(findings) == baseline()
    assert collection(findings) == []
    outcome("an unknown section carrying shell syntax", "ignored; all checks judged as before")


@pytest.mark.parametrize(
    "marker",
    [
        f"=== hpd:end gpu-query rc=abc{TAG} ===",
        f"=== hpd:end gpu-query rc={TAG} ===",
        f"=== hpd:end gpu-query rc=1.5{TAG} ===",
        f"=== hpd:end gpu-query rc=0x0{TAG} ===",
        "=== hpd:end gpu-query rc=" + "9" * 5000 + f"{TAG} ===",
        f"=== hpd:end gpu-query rc=٠{TAG} ===",
        f"=== hpd:end gpu-topo rc=0{TAG} ===",
        f"=== hpd:end gpu-query{TAG} ===",
    ],
    ids=["letters", "empty", "decimal", "hex", "5000-digits", "arabic-indic-zero", "other-name", "no-rc"],
)
def test_an_end_marker_with_a_wrong_rc_or_name_leaves_the_section_open(marker, outcome):
    # Given gpu-query's end marker replaced by a malformed one
    text = TEXT.replace(f"=== hpd:end gpu-query rc=0{TAG} ===", marker)

    # When evaluated
    findings = evaluate_text(text, SOURCE)

    # Then the section runs on to the next begin marker and is reported, by name and once, as
    # unclosed; an unclosed section is not judged (half a section proves nothing); the other
    # sections are judged as before
    problems = collection(findings)
    assert problems == [("gpu-query", "section 'gpu-query' has no end marker")]
    assert all(f.severity.value != "OK" for f in findings if f.check in depends_on()["gpu-query"])
    assert_unchanged_except(findings, {"gpu-query"})
    shown = marker.replace(TAG, "")[:40]
    outcome(f"end marker `{shown}`", "collect.node naming gpu-query, not judged; rest judged")


@pytest.mark.parametrize("rc", [1, 2, 124, 127, 255, -1, 2**31])
def test_odd_exit_codes_on_every_section_never_raise(rc, outcome):
    # Given every section reporting the same non-zero rc over its intact output
    findings = evaluate_text(with_sections(rc=dict.fromkeys(SECTIONS, rc)), SOURCE)
    now = judged(findings)

    if rc in (124, 127):
        # Then a command that hung or is missing is never judged: no check claims OK
        assert now and {c for c, (severity, _) in now.items() if severity == "OK"} == set()
        result = "nothing claimed OK; each check says why"
    else:
        # Then output that did arrive is still evidence: no planted fault is hidden by the rc
        concerns = {c for c, (severity, _) in baseline().items() if severity == "CONCERN"}
        assert concerns <= {c for c, (severity, _) in now.items() if severity == "CONCERN"}
        result = "output still judged; every planted fault still a CONCERN"
    assert_serialisable(findings)
    outcome(f"every section rc={rc}", result)


# --- parsers: the ValueError contract ----------------------------------------------------------


@st.composite
def section_like(draw: st.DrawFn, section: str) -> str:
    """Text shaped like the section: its real lines, some dropped, cut, shuffled or corrupted."""
    lines = SECTIONS[section].splitlines() or [""]
    picked = draw(st.lists(st.sampled_from(lines), max_size=min(len(lines), 12)))
    noise = st.one_of(
        st.text(max_size=40),
        st.sampled_from(["", " ", "\t", "\x00", "9" * 400, "-1", "1e999", "²", "٣", "nan", "[N/A]", "%"]),
    )
    out = []
    for line in picked:
        tokens = line.split(" ")
        if tokens and draw(st.booleans()):
            tokens[draw(st.integers(0, len(tokens) - 1))] = draw(noise)
        if draw(st.booleans()):
            tokens = tokens[: draw(st.integers(0, len(tokens)))]
        out.append(" ".join(tokens))
    if draw(st.booleans()):
        out.insert(draw(st.integers(0, len(out))), draw(st.text(max_size=80)))
    return "\n".join(out) + "\n"


def _value_error_only(parser: Callable[[str], Any], text: str) -> None:
    with contextlib.suppress(ValueError):  # the contract: ValueError, or a value
        parser(text)


@pytest.mark.parametrize("section", list(PARSERS))
@FUZZ
@given(data=st.data())
def test_every_parser_raises_nothing_but_value_error_on_any_text(section, data):
    # Given arbitrary text, then the parser returns or raises ValueError (anything else escapes
    # the engine's contract and is only caught by its last-resort handler)
    _value_error_only(PARSERS[section], data.draw(st.text(max_size=2000)))


# (the search once found parse_df raising IndexError on a bare `Filesystem` line; fixed)
@pytest.mark.parametrize("section", list(PARSERS))
@FUZZ
@given(data=st.data())
def test_every_parser_raises_nothing_but_value_error_on_damaged_real_output(section, data):
    _value_error_only(PARSERS[section], data.draw(section_like(section)))


@pytest.mark.parametrize("name", list(TOTAL_PARSERS))
@FUZZ
@given(text=st.text(max_size=3000))
def test_the_total_parsers_never_raise(name, text):
    TOTAL_PARSERS[name](text)


def test_the_strict_nccl_parser_fails_with_a_value_error_naming_the_problem(outcome):
    # Given text with no measurement, then the strict variant raises its ValueError subclass
    with pytest.raises(ValueError, match=r"\w"):
        nccl_tests.parse_nccl_tests_strict(GARBAGE["random bytes"])
    outcome("random bytes as an nccl-tests log (strict parser)", "NcclTestsParseError (a ValueError)")


#: Inputs on which a parser once raised something other than ValueError (the id names the old
#: exception). Fixed; kept so the contract, and the engine's finding for them, stay proven.
FORMER_CONTRACT_BREAKS = [
    pytest.param(
        procfs.parse_cpu_stat,
        "cpu 1 2 3 4\ncpu 2 3 4 5\n",
        id="cpu-stat-without-iowait-column-KeyError",
    ),
    pytest.param(procfs.parse_df, "Filesystem\n/dev/root 10 5 5 50% /\n", id="df-bare-header-IndexError"),
    pytest.param(
        procfs.parse_df,
        "Filesystem Size Used Avail Use% Mounted on\n/dev/root " + "9" * 400 + "G 1G 1G 5% /\n",
        id="df-size-overflow-OverflowError",
    ),
    pytest.param(
        lustre.parse_lfs_df,
        "UUID bytes Used Available Use% Mounted on\nfs-OST0000_UUID "
        + "9" * 400
        + "T 1T 1T 5% /fsx[OST:0]\n",
        id="lfs-df-size-overflow-OverflowError",
    ),
    pytest.param(
        efa.parse_efa_counters,
        'node_amazonefa_rx_drops{device="rdmap0",port="1"} 1e999\n',
        id="efa-counters-prometheus-inf-OverflowError",
    ),
    pytest.param(
        nvidia_smi.parse_gpu_query,
        "index, name\n0, " + "x" * 200_000 + "\n",
        id="gpu-query-field-over-csv-limit-csv.Error",
    ),
]


@pytest.mark.parametrize(("parser", "text"), FORMER_CONTRACT_BREAKS)
def test_inputs_that_broke_the_value_error_contract_now_raise_only_value_error(parser, text, outcome):
    outcome(f"{parser.__name__}: {text[:50]!r}", "ValueError (the parser contract)")
    _value_error_only(parser, text)


@pytest.mark.parametrize(("parser", "text"), FORMER_CONTRACT_BREAKS)
def test_the_engine_still_turns_those_breaks_into_a_finding_naming_the_section(parser, text):
    # Given the breaking text in its section
    section = next(name for name, p in PARSERS.items() if p is parser)

    # When evaluated, then the engine's last-resort handler reports it under the section
    findings = evaluate_text(with_sections({section: text}), SOURCE)
    assert [s for s, _ in collection(findings)] == [section]
    assert_unchanged_except(findings, {section})


# --- whole-container fuzzing -------------------------------------------------------------------


@st.composite
def containers(draw: st.DrawFn) -> str:
    names = st.sampled_from([*SECTIONS, "evil", "meta"])
    sections = draw(
        st.lists(
            st.tuples(
                names,
                st.one_of(st.just(""), st.text(max_size=200)),
                st.sampled_from([0, 0, 0, 1, 2, 124, 127, -1, 255]),
            ),
            max_size=8,
        )
    )
    bodies = [
        (n, draw(section_like(n)) if n in SECTIONS and draw(st.booleans()) else b, rc)
        for n, b, rc in sections
    ]
    text = render_container(bodies)
    if text and draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    return text


@FUZZ
@given(text=containers())
def test_any_damaged_container_yields_findings_naming_real_sections_and_no_rule_crash(text):
    # Given a container with random sections, damaged bodies, odd rcs and maybe a cut
    findings = evaluate_text(text, "fuzz")

    # Then collection problems name a section of the snapshot (or the container itself), no
    # rule family ever crashed on what a parser returned, and the findings serialise
    present = set(parse_container(text).sections)
    for section, reason in collection(findings):
        assert section in present | {"container"}, (section, reason)
        assert "rule family failed" not in reason, reason
    assert_serialisable(findings)


# --- 10 MB lines: bounded time -----------------------------------------------------------------

TEN_MB = 10 * 1024 * 1024
#: One 10 MB line: a word, a long run of blanks, a long run of non-blanks — what backtracking
#: regular expressions (`\s+.*`, `\S+ literal`) take quadratic time on.
HUGE_LINE = "k" + " " * (TEN_MB // 2) + "z" * (TEN_MB // 2)
TIME_LIMIT_S = 5.0

# (efa-ports' UNREADABLE_STATE_RE and parse_oom's OOM_INVOKED_RE once took quadratic time here:
# 80 KB took ~290 s and ~40 s. Both are linear now; tests/unit/parse guards every parser's time.)


def _evaluate_in_child(section: str, connection: Any) -> None:
    text = with_sections({section: HUGE_LINE + "\n"})
    started = time.monotonic()
    findings = evaluate_text(text, SOURCE)
    connection.send((time.monotonic() - started, collection(findings), judged(findings)))


def _evaluate_with_deadline(section: str, seconds: float) -> tuple[float, list, dict] | None:
    """Run the evaluation in a forked child; None when it did not finish within the deadline."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_evaluate_in_child, args=(section, sender), daemon=True)
    child.start()
    try:
        # building the 10 MB container in the child takes well under a second: allow for it
        return receiver.recv() if receiver.poll(seconds + 2.0) else None
    finally:
        child.kill()
        child.join()


@pytest.mark.parametrize("section", list(SECTIONS))
def test_a_10mb_line_in_any_section_is_judged_within_5_seconds(section, outcome):
    # Given one section carrying a single 10 MB line
    # When evaluated (in a child process with a hard deadline)
    result = _evaluate_with_deadline(section, TIME_LIMIT_S)

    # Then it finishes in time, and the line is either a finding naming the section or ignored
    outcome(
        f"a 10 MB line in section `{section}`",
        "judged in < 5 s",
    )
    assert result is not None, f"{section}: not judged within {TIME_LIMIT_S} s"
    elapsed, problems, now = result
    assert elapsed < TIME_LIMIT_S
    assert {s for s, _ in problems} <= {section}
    untouched = set(baseline()) - depends_on()[section]
    assert {c: now.get(c) for c in untouched} == {c: baseline()[c] for c in untouched}
