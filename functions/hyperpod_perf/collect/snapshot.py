"""The snapshot container: the text collector.sh prints, split back into sections.

Format (one section per command, raw output verbatim between the markers):

    === hpd:begin <name> nonce=<32 hex> ===
    <raw output>
    === hpd:end <name> rc=<exit code> nonce=<32 hex> ===

Parsing is tolerant by design: the container is produced on a possibly broken node and
carried over a lossy channel, so a missing end marker, garbage between sections, or a cut
stream must still yield every section that can be recovered, with the damage recorded in
``problems`` instead of raised.

Markers a tool's output cannot forge: since collector version 2 every marker carries the run's
random nonce (`=== hpd:begin <name> nonce=<32 hex> ===`, `... rc=<n> nonce=<32 hex> ===`),
printed before any tool runs and never given to one. The parser takes the nonce from the first
marker (the collector's own `meta` begin, always the first line), then accepts only markers
bearing it and in the collector's order; any other marker-like line is the section's text, and
counted as an imitation. A snapshot without a nonce (collector 1, saved files) is read as before,
with a note that its markers cannot be told from forged ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hyperpod_perf.domain.names import INSTANCE_ID_RE

_NONCE = r"(?: nonce=(?P<nonce>[0-9a-f]{32}))?"
BEGIN_RE = re.compile(rf"^=== hpd:begin (?P<name>[A-Za-z0-9_.-]+){_NONCE} ===\s*$")
#: rc is bounded to ASCII digits a shell can print: a longer or odd rc is not an end marker (Python
#: refuses int() of > 4300 digits, and a forged marker must not make the container parser raise).
END_RE = re.compile(rf"^=== hpd:end (?P<name>[A-Za-z0-9_.-]+) rc=(?P<rc>-?[0-9]{{1,10}}){_NONCE} ===\s*$")
NONCE_RE = re.compile(r"^[0-9a-f]{32}$")

MARKER_PREFIX = "=== hpd:"

#: The most of a saved snapshot file that is read: the collector prints at most ~1 MiB and the
#: session client keeps at most 4 MiB, so anything past 8 MiB is not one node's collector output.
SNAPSHOT_FILE_MAX_BYTES = 8 * 1024 * 1024


def oversized_file_problem(limit: int = SNAPSHOT_FILE_MAX_BYTES) -> str:
    """The collect.node reason of a snapshot file cut at the bound."""
    return (
        f"file larger than {limit // (1024 * 1024)} MiB (the collector prints at most ~1 MiB): only "
        "its first part was read and judged"
    )


#: rc values with a meaning of their own (as set by coreutils `timeout` and the shell).
RC_TIMEOUT = 124
RC_NOT_FOUND = 127

#: Sections in the order collector.sh prints them (the design's snapshot table).
SECTION_ORDER: tuple[str, ...] = (
    "meta",
    "gpu-query",
    "gpu-topo",
    "nvlink-status",
    "nvlink-errors",
    "xid",
    "efa-ports",
    "efa-counters",
    "fi-info",
    "versions",
    "cpu-governor",
    "fabric-manager",
    "mounts",
    "df",
    "lfs-df",
    "cpu-stat",
    "io-pressure",
    "memlock",
    "oom",
    "gpu-pcie",
    "pcie-aer",
    "slurm-topology",
)


@dataclass(frozen=True)
class RawSection:
    name: str
    text: str
    rc: int | None  # None when the end marker was never seen (stream cut)

    @property
    def complete(self) -> bool:
        return self.rc is not None


@dataclass
class RawSnapshot:
    """Sections of one node's collector output, keyed by section name."""

    source: str
    sections: dict[str, RawSection] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    #: problem text -> the section it is about (cut off, no end marker, duplicated), so the
    #: collect.node finding can name the section rather than only "container".
    problem_sections: dict[str, str] = field(default_factory=dict)
    #: The run's marker nonce; None for a snapshot of a collector before version 2 (no nonce).
    nonce: str | None = None
    #: Facts worth an INFO, not a collection problem (markers that cannot be verified).
    notes: list[str] = field(default_factory=list)

    def problem(self, text: str, section: str | None = None) -> None:
        self.problems.append(text)
        if section is not None:
            self.problem_sections[text] = section

    @property
    def meta(self) -> dict[str, str]:
        section = self.sections.get("meta")
        if section is None:
            return {}
        return parse_key_values(section.text)

    def node_name(self) -> str:
        """The name an operator knows the node by: instance id, else hostname, else the source."""
        meta = self.meta
        stem = Path(self.source).name.removesuffix(".txt")
        if INSTANCE_ID_RE.match(meta.get("instance_id", "")):
            return meta["instance_id"]
        if INSTANCE_ID_RE.match(stem):
            return stem
        return meta.get("hostname") or stem or self.source


KEY_VALUE_RE = re.compile(r"^\s*(?P<key>[A-Za-z0-9_.-]+)\s*=\s*(?P<value>.*?)\s*$")


def parse_key_values(text: str) -> dict[str, str]:
    """`key=value` lines (meta, versions); other lines are ignored."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        match = KEY_VALUE_RE.match(line)
        if match:
            values[match["key"]] = match["value"]
    return values


#: The note of a snapshot whose markers carry no nonce.
UNVERIFIED_MARKERS = (
    "section markers carry no nonce (a collector before version 2): a tool's output could have "
    "imitated them; re-collect with the current collector.sh for markers that cannot be forged"
)


def parse_container(text: str, source: str = "<snapshot>", nonce: str | None = None) -> RawSnapshot:
    """Split collector output into sections; never raises on damaged input.

    `nonce` is the run's marker nonce when the caller knows it; otherwise the first marker's is
    taken (the collector prints its own `meta` begin marker before any tool runs)."""
    snapshot = RawSnapshot(source=source)
    if not text.strip():
        snapshot.problems.append("empty snapshot: the collector printed nothing")
        return snapshot
    markers, between = _marker_lines(text)
    first = _first_begin(markers)
    expected = nonce if nonce is not None else (first["nonce"] if first else None)
    snapshot.nonce = expected
    if expected is None and first is not None:
        snapshot.notes.append(UNVERIFIED_MARKERS)
    current: str | None = None
    start = 0  # where the current section's content, or the text outside a section, starts
    stray = 0
    imitations: dict[str, int] = {}
    out_of_order: list[str] = []
    last_index = -1
    for line, at, after in markers:
        begin = BEGIN_RE.match(line)
        end = END_RE.match(line) if begin is None else None
        if expected is not None:
            if (begin or end) is None or (begin or end)["nonce"] != expected:
                begin = end = None  # not the collector's: text of the section it appears in
                if current is not None and expected not in line:  # else: a damaged marker of ours
                    imitations[current] = imitations.get(current, 0) + 1
            elif begin is not None and begin["name"] in _ORDER:
                if _ORDER[begin["name"]] <= last_index:
                    out_of_order.append(begin["name"])
                    begin = None
                else:
                    last_index = _ORDER[begin["name"]]
        if begin:
            if current is not None:
                snapshot.problem(f"section {current!r} has no end marker", current)
                _store(snapshot, RawSection(current, between(start, at), None))
            else:
                stray += _non_blank(between(start, at))
            current, start = begin["name"], after
        elif end and current is not None and end["name"] == current:
            _store(snapshot, RawSection(current, between(start, at), int(end["rc"])))
            current, start = None, after
        # any other marker-like line is content (inside a section) or stray (outside), like any line
    if current is not None:
        snapshot.problem(f"section {current!r} was cut off (no end marker): output truncated", current)
        _store(snapshot, RawSection(current, between(start, None), None))
    else:
        stray += _non_blank(between(start, None))
    for name, count in imitations.items():
        snapshot.problem(
            f"{count} line(s) in section {name!r} imitate section markers without this run's nonce: "
            "kept as the section's text, not as section boundaries",
            name,
        )
    for name in dict.fromkeys(out_of_order):
        # about the container: the section it names is the one the parser did *not* keep
        snapshot.problem(f"a begin marker of section {name!r} out of the collector's order was ignored")
    if stray:
        snapshot.problems.append(f"{stray} line(s) outside any section were ignored")
    if not snapshot.sections:
        snapshot.problems.append("no hpd sections found: not collector output")
    return snapshot


_ORDER = {name: index for index, name in enumerate(SECTION_ORDER)}
#: Line breaks str.splitlines splits on besides LF; collector output has none of them.
_OTHER_LINE_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
Between = Callable[[int, int | None], str]


def _first_begin(markers: list[tuple[str, int, int]]) -> re.Match[str] | None:
    """The first begin marker: the collector's own `meta` one, printed before any tool ran."""
    for line, _, _ in markers:
        begin = BEGIN_RE.match(line)
        if begin is not None:
            return begin
    return None


def _marker_lines(text: str) -> tuple[list[tuple[str, int, int]], Between]:
    """The lines that start with MARKER_PREFIX as (line, where it starts, where the next line
    starts), and `between(a, b)`: the lines from a to b, each ending in LF (as `_join` makes them).

    Why not a loop over every line: the markers are ~2 % of a snapshot's lines, and a Python step
    per line was a tenth of a node's whole evaluation. Text with only LF breaks is searched for
    `\n=== hpd:` and sliced; any other text is split with str.splitlines, as it always was."""
    if any(separator in text for separator in _OTHER_LINE_BREAKS):
        lines = text.splitlines()
        found = [(line, i, i + 1) for i, line in enumerate(lines) if line.startswith(MARKER_PREFIX)]
        return found, lambda a, b: _join(lines[a:b])
    markers: list[tuple[str, int, int]] = []
    needle = "\n" + MARKER_PREFIX
    at: int | None = 0 if text.startswith(MARKER_PREFIX) else _after(text.find(needle))
    while at is not None:
        stop = text.find("\n", at)
        stop = len(text) if stop == -1 else stop
        markers.append((text[at:stop], at, stop + 1))
        at = _after(text.find(needle, stop))

    def between(a: int, b: int | None) -> str:
        chunk = text[a:b]
        return chunk if not chunk or chunk.endswith("\n") else chunk + "\n"

    return markers, between


def _after(newline: int) -> int | None:
    """Where the line after the LF found at `newline` starts (None: str.find found none)."""
    return None if newline == -1 else newline + 1


def _non_blank(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


def _join(lines: list[str]) -> str:
    return "\n".join(lines) + ("\n" if lines else "")


def _store(snapshot: RawSnapshot, section: RawSection) -> None:
    if section.name in snapshot.sections:
        snapshot.problem(f"section {section.name!r} appears more than once; the first is kept", section.name)
        return
    snapshot.sections[section.name] = section


def render_container(sections: list[tuple[str, str, int]], nonce: str | None = None) -> str:
    """The inverse of parse_container, for simulated nodes and tests: collector-2 markers with
    `nonce`, collector-1 markers (no nonce) without."""
    if nonce is not None and not NONCE_RE.match(nonce):
        raise ValueError("a marker nonce is 32 lowercase hex digits")
    tag = f" nonce={nonce}" if nonce else ""
    parts: list[str] = []
    for name, text, rc in sections:
        body = text if text.endswith("\n") or not text else text + "\n"
        parts.append(f"=== hpd:begin {name}{tag} ===\n{body}=== hpd:end {name} rc={rc}{tag} ===\n")
    return "".join(parts)
