"""Speed without a changed answer: cached line and section readings, the marker-only container split.

Three rewrites made a node's evaluation cheaper (bench/RESULTS.md, engine section):
- the parsers' per-line readings are cached by the line's text (`parse.lines.per_line`): a reading
  is a pure function of its line, the cache is bounded, and a line that fails is never kept;
- the sections a healthy fleet prints alike on every node are read once per distinct text
  (`parse.lines.per_section`): the reading is shared between nodes, so no rule may change it;
- `parse_container` visits only the marker lines and slices what lies between them. Its previous
  line-by-line loop is kept below as the specification, and both are run on generated containers
  (good, cut, duplicated, forged markers, stray lines, every line break str.splitlines knows).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hyperpod_perf.collect.snapshot import (
    BEGIN_RE,
    END_RE,
    MARKER_PREFIX,
    SECTION_ORDER,
    UNVERIFIED_MARKERS,
    RawSection,
    RawSnapshot,
    parse_container,
)
from hyperpod_perf.parse import efa, nvidia_smi, pcie, procfs
from hyperpod_perf.parse.lines import (
    CACHED_LINES,
    MAX_CACHED_CHARS,
    MAX_CACHED_SECTION_CHARS,
    per_line,
    per_section,
)
from hyperpod_perf.rules.engine import evaluate_snapshot
from hyperpod_perf.rules.fleet_signals import extract

EXAMPLES = Path(__file__).parents[3] / "functions" / "hyperpod_perf_dev" / "sim" / "examples"


# --- per_line -----------------------------------------------------------------------------------


def test_a_repeated_line_is_read_once():
    calls: list[str] = []

    @per_line
    def reader(line: str) -> tuple[str, int]:
        calls.append(line)
        return line.upper(), len(line)

    # When the same short line is read three times among others
    readings = [reader(x) for x in ("Link 0: CRC Errors: 0", "RxErr 0", "Link 0: CRC Errors: 0") * 2]
    # Then each distinct line was read once, and every reading is the reader's own
    assert calls == ["Link 0: CRC Errors: 0", "RxErr 0"]
    assert readings[0] == readings[2] == ("LINK 0: CRC ERRORS: 0", 21)


def test_a_long_line_is_read_every_time_and_never_kept():
    calls: list[int] = []

    @per_line
    def reader(line: str) -> int:
        calls.append(len(line))
        return len(line)

    long_line = "7" * (MAX_CACHED_CHARS + 1)
    # When a line just over the bound is read twice, and one at the bound twice
    reader(long_line), reader(long_line), reader(long_line[:-1]), reader(long_line[:-1])
    # Then the long one was read both times, the one at the bound once
    assert calls == [MAX_CACHED_CHARS + 1, MAX_CACHED_CHARS + 1, MAX_CACHED_CHARS]


def test_a_line_that_fails_fails_every_time():
    calls: list[str] = []

    @per_line
    def reader(line: str) -> int:
        calls.append(line)
        raise ValueError(f"unexpected line {line!r}")

    for _ in range(2):
        with pytest.raises(ValueError, match="unexpected line"):
            reader("Link 0: Replay Errors: N/A?")
    assert len(calls) == 2


def test_the_cache_holds_a_bounded_number_of_lines():
    @per_line
    def reader(line: str) -> str:
        return line

    # When more distinct lines are read than the cache holds
    for number in range(CACHED_LINES + 500):
        reader(f"line {number}")
    # Then it holds CACHED_LINES of them, the most recent: the first ones were read again
    info = reader.cache_info()  # type: ignore[attr-defined]
    assert info.currsize == info.maxsize == CACHED_LINES
    reader("line 0")
    assert reader.cache_info().misses == CACHED_LINES + 501  # type: ignore[attr-defined]


def test_cached_readings_give_the_parsers_the_same_results_cold_and_warm():
    # Given the example snapshots' big sections
    texts = [parse_container(p.read_text(), p.name) for p in sorted(EXAMPLES.glob("*.txt"))]
    parsers = {
        "nvlink-status": nvidia_smi.parse_nvlink_status,
        "nvlink-errors": nvidia_smi.parse_nvlink_errors,
        "efa-counters": efa.parse_efa_counters,
        "fi-info": efa.parse_fi_info,
        "pcie-aer": pcie.parse_pcie_aer,
        "gpu-query": nvidia_smi.parse_gpu_query,
    }
    readers = [
        nvidia_smi._block_line,
        nvidia_smi._link_status,
        nvidia_smi._link_counter,
        nvidia_smi.canonical_field,
        nvidia_smi._leading_number,
        efa._triple,
        efa._fi_line,
        pcie._aer_line,
    ]
    # When each is parsed with every cache empty, then again with every line cached
    for reader in readers:
        reader.cache_clear()  # type: ignore[attr-defined]
    cold = {(s.source, n): repr(p(s.sections[n].text)) for s in texts for n, p in parsers.items()}
    warm = {(s.source, n): repr(p(s.sections[n].text)) for s in texts for n, p in parsers.items()}
    # Then the results are the same
    assert cold == warm
    assert any("Replay Errors" in v for v in cold.values())


# --- per_section --------------------------------------------------------------------------------

#: Every parser whose reading is shared between nodes, with the section it reads.
SHARED_READINGS = {
    "fi-info": efa.parse_fi_info,
    "efa-ports": efa.parse_efa_ports,
    "pcie-aer": pcie.parse_pcie_aer,
    "gpu-pcie": pcie.parse_gpu_pcie,
    "gpu-topo": nvidia_smi.parse_gpu_topology,
    "cpu-governor": procfs.parse_cpu_governor,
}


def test_a_repeated_section_is_parsed_once_and_a_long_one_every_time():
    calls: list[int] = []

    @per_section
    def parser(text: str) -> int:
        calls.append(len(text))
        return text.count("\n")

    short, long = "a 0\nb 0\n", "x" * (MAX_CACHED_SECTION_CHARS + 1)
    at_bound = long[:-1]
    # When a short section is read three times, one just over the bound twice and one at it twice
    readings = [parser(short), parser(short), parser(long), parser(long), parser(short)]
    readings += [parser(at_bound), parser(at_bound)]
    # Then the short one was parsed once, the long one both times, the one at the bound once
    assert calls == [len(short), len(long), len(long), MAX_CACHED_SECTION_CHARS]
    assert readings == [2, 2, 0, 0, 2, 0, 0]


def test_a_section_that_fails_to_parse_fails_every_time():
    # Given a pcie-aer section that is not the format (no device line)
    garbled = "cat: /sys/bus/pci/devices: Permission denied\n"
    kept_before = pcie.parse_pcie_aer.cache_info().currsize  # type: ignore[attr-defined]
    # When it is read twice, Then both reads raise: a failure is never kept
    for _ in range(2):
        with pytest.raises(ValueError, match="not the pcie-aer format"):
            pcie.parse_pcie_aer(garbled)
    assert pcie.parse_pcie_aer.cache_info().currsize == kept_before  # type: ignore[attr-defined]


def test_a_shared_reading_is_never_changed_by_the_rules():
    import copy

    # Given the example snapshots, and each shared section's reading taken before any rule ran
    snapshots = [parse_container(p.read_text(), p.name) for p in sorted(EXAMPLES.glob("*.txt"))]
    for parser in SHARED_READINGS.values():
        parser.cache_clear()  # type: ignore[attr-defined]
    cold = [evaluate_snapshot(s) for s in snapshots]
    before = {
        (s.source, name): (parser(s.sections[name].text), copy.deepcopy(parser(s.sections[name].text)))
        for s in snapshots
        for name, parser in SHARED_READINGS.items()
    }
    # When every rule and the fleet signals run on them twice more, reading the shared readings
    warm = [evaluate_snapshot(s) for s in snapshots]
    for s in snapshots:
        extract(s, group=None)
    again = [evaluate_snapshot(s) for s in snapshots]
    # Then each reading is the very object served before, equal to its copy taken before the rules
    for (source, name), (shared, kept) in before.items():
        served = SHARED_READINGS[name](
            snapshots[[s.source for s in snapshots].index(source)].sections[name].text
        )
        assert served is shared, (source, name)
        assert shared == kept, (source, name)
    # And the findings are those of the cold run (and of the parsers uncached)
    assert cold == warm == again
    uncached = {
        (s.source, name): parser.uncached(s.sections[name].text)  # type: ignore[attr-defined]
        for s in snapshots
        for name, parser in SHARED_READINGS.items()
    }
    assert uncached == {key: shared for key, (shared, _) in before.items()}
    assert any(f.check == "efa.provider" for f in cold[0])


def test_two_nodes_that_differ_get_their_own_readings():
    # Given one node's AER section, and the same with a correctable error counted on a device
    snapshot = parse_container(sorted(EXAMPLES.glob("*.txt"))[0].read_text(), "node")
    healthy = snapshot.sections["pcie-aer"].text
    first_counter = next(line for line in healthy.splitlines() if line.startswith("RxErr "))
    faulty = healthy.replace(first_counter, "RxErr 7", 1)
    # When both are read (the healthy one twice)
    a, b, c = pcie.parse_pcie_aer(healthy), pcie.parse_pcie_aer(faulty), pcie.parse_pcie_aer(healthy)
    # Then the faulty text has its own reading with the count, and the healthy one is shared
    assert a is c and b is not a

    def errors(report: pcie.PcieAerReport) -> list[dict[str, int]]:
        return [d.counts["correctable"].nonzero for d in report.devices if "correctable" in d.counts]

    assert [e for e in errors(b) if e] == [{"RxErr": 7}]
    assert not any(errors(a)) and len(errors(a)) == len(errors(b)) > 1


# --- parse_container ----------------------------------------------------------------------------


def reference_parse_container(text: str, source: str = "<snapshot>", nonce: str | None = None) -> RawSnapshot:
    """The line-by-line loop parse_container replaced (the specification), nonce checks included."""
    order = {name: index for index, name in enumerate(SECTION_ORDER)}
    snapshot = RawSnapshot(source=source)
    if not text.strip():
        snapshot.problems.append("empty snapshot: the collector printed nothing")
        return snapshot
    first = next(
        (m for line in text.splitlines() if line.startswith(MARKER_PREFIX) and (m := BEGIN_RE.match(line))),
        None,
    )
    expected = nonce if nonce is not None else (first["nonce"] if first else None)
    snapshot.nonce = expected
    if expected is None and first is not None:
        snapshot.notes.append(UNVERIFIED_MARKERS)
    current: str | None = None
    lines: list[str] = []
    stray = 0
    imitations: dict[str, int] = {}
    out_of_order: list[str] = []
    last_index = -1

    def store(section: RawSection) -> None:
        if section.name in snapshot.sections:
            problem = f"section {section.name!r} appears more than once; the first is kept"
            snapshot.problem(problem, section.name)
            return
        snapshot.sections[section.name] = section

    def join(kept: list[str]) -> str:
        return "\n".join(kept) + ("\n" if kept else "")

    for line in text.splitlines():
        marker = line.startswith(MARKER_PREFIX)
        begin = BEGIN_RE.match(line) if marker else None
        end = END_RE.match(line) if marker and begin is None else None
        if expected is not None and marker:
            if (begin or end) is None or (begin or end)["nonce"] != expected:
                begin = end = None
                if current is not None and expected not in line:
                    imitations[current] = imitations.get(current, 0) + 1
            elif begin is not None and begin["name"] in order:
                if order[begin["name"]] <= last_index:
                    out_of_order.append(begin["name"])
                    begin = None
                else:
                    last_index = order[begin["name"]]
        if begin:
            if current is not None:
                snapshot.problem(f"section {current!r} has no end marker", current)
                store(RawSection(current, join(lines), None))
            current, lines = begin["name"], []
        elif end and current is not None and end["name"] == current:
            store(RawSection(current, join(lines), int(end["rc"])))
            current, lines = None, []
        elif current is not None:
            lines.append(line)
        elif line.strip():
            stray += 1
    if current is not None:
        snapshot.problem(f"section {current!r} was cut off (no end marker): output truncated", current)
        store(RawSection(current, join(lines), None))
    for name, count in imitations.items():
        snapshot.problem(
            f"{count} line(s) in section {name!r} imitate section markers without this run's nonce: "
            "kept as the section's text, not as section boundaries",
            name,
        )
    for name in dict.fromkeys(out_of_order):
        snapshot.problem(f"a begin marker of section {name!r} out of the collector's order was ignored")
    if stray:
        snapshot.problems.append(f"{stray} line(s) outside any section were ignored")
    if not snapshot.sections:
        snapshot.problems.append("no hpd sections found: not collector output")
    return snapshot


NAMES = st.sampled_from(["meta", "gpu-query", "efa-counters", "x.y-z_1"])
NONCE = "0123456789abcdef0123456789abcdef"
NONCES = st.sampled_from(["", f" nonce={NONCE}", f" nonce={NONCE[::-1]}"])  # none, this run's, forged
LINES = st.one_of(
    st.tuples(NAMES, NONCES).map(lambda t: f"=== hpd:begin {t[0]}{t[1]} ==="),
    st.tuples(NAMES, st.integers(-3, 130), NONCES).map(lambda t: f"=== hpd:end {t[0]} rc={t[1]}{t[2]} ==="),
    NAMES.map(lambda n: f"=== hpd:begin {n} ===  "),  # trailing blanks still a marker
    st.sampled_from(
        [
            "=== hpd:end meta rc=x ===",  # forged / damaged markers: content or stray lines
            "=== hpd:begin bad name ===",
            "=== hpd:",
            " === hpd:begin meta ===",
            "",
            "   ",
            "\t",
            "index, name",
            "rdmap113s0 rx_drops 0",
            "é ü 0",
        ]
    ),
)
BREAKS = st.sampled_from(["\n", "\n", "\n", "\r\n", "\r", "\x0b", "\x1c", "\x85", "\u2028"])


@st.composite
def containers(draw: st.DrawFn) -> str:
    lines = draw(st.lists(LINES, max_size=14))
    breaks = draw(st.lists(BREAKS, min_size=len(lines), max_size=len(lines)))
    text = "".join(line + brk for line, brk in zip(lines, breaks, strict=True))
    return text[: len(text) - draw(st.integers(0, 3))]  # sometimes cut mid-line or mid-break


def _as_data(snapshot: RawSnapshot) -> tuple:
    return snapshot.sections, snapshot.problems, snapshot.problem_sections, snapshot.nonce, snapshot.notes


@settings(max_examples=400, deadline=None)
@given(containers(), st.sampled_from([None, NONCE]))
def test_the_container_split_matches_the_line_loop(text: str, nonce: str | None):
    ours = parse_container(text, "n.txt", nonce=nonce)
    assert _as_data(ours) == _as_data(reference_parse_container(text, "n.txt", nonce=nonce))


def test_the_container_split_matches_on_the_examples():
    for path in sorted(EXAMPLES.glob("*.txt")):
        text = path.read_text()
        for variant in (text, text.rstrip("\n"), text.replace("\n", "\r\n"), "junk\n" + text + "tail"):
            assert _as_data(parse_container(variant, path.name)) == _as_data(
                reference_parse_container(variant, path.name)
            )
