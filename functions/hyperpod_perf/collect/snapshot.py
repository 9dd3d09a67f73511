"""The snapshot container: the text collector.sh prints, split back into sections.

Format (one section per command, raw output verbatim between the markers):

    === hpd:begin <name> ===
    <raw output>
    === hpd:end <name> rc=<exit code> ===

Parsing is tolerant by design: the container is produced on a possibly broken node and
carried over a lossy channel, so a missing end marker, garbage between sections, or a cut
stream must still yield every section that can be recovered, with the damage recorded in
``problems`` instead of raised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

BEGIN_RE = re.compile(r"^=== hpd:begin (?P<name>[A-Za-z0-9_.-]+) ===\s*$")
#: rc is bounded to ASCII digits a shell can print: a longer or odd rc is not an end marker (Python
#: refuses int() of > 4300 digits, and a forged marker must not make the container parser raise).
END_RE = re.compile(r"^=== hpd:end (?P<name>[A-Za-z0-9_.-]+) rc=(?P<rc>-?[0-9]{1,10}) ===\s*$")

MARKER_PREFIX = "=== hpd:"

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


INSTANCE_ID_RE = re.compile(r"^i-[0-9a-f]{8,17}$")
KEY_VALUE_RE = re.compile(r"^\s*(?P<key>[A-Za-z0-9_.-]+)\s*=\s*(?P<value>.*?)\s*$")


def parse_key_values(text: str) -> dict[str, str]:
    """`key=value` lines (meta, versions); other lines are ignored."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        match = KEY_VALUE_RE.match(line)
        if match:
            values[match["key"]] = match["value"]
    return values


def parse_container(text: str, source: str = "<snapshot>") -> RawSnapshot:
    """Split collector output into sections; never raises on damaged input."""
    snapshot = RawSnapshot(source=source)
    if not text.strip():
        snapshot.problems.append("empty snapshot: the collector printed nothing")
        return snapshot
    current: str | None = None
    lines: list[str] = []
    stray = 0
    for line in text.splitlines():
        # Only marker lines start with "=== hpd:"; skip both regexes for the ~99% that do not.
        marker = line.startswith(MARKER_PREFIX)
        begin = BEGIN_RE.match(line) if marker else None
        end = END_RE.match(line) if marker and begin is None else None
        if begin:
            if current is not None:
                snapshot.problem(f"section {current!r} has no end marker", current)
                _store(snapshot, RawSection(current, _join(lines), None))
            current, lines = begin["name"], []
        elif end and current is not None and end["name"] == current:
            _store(snapshot, RawSection(current, _join(lines), int(end["rc"])))
            current, lines = None, []
        elif current is not None:
            lines.append(line)
        elif line.strip():
            stray += 1
    if current is not None:
        snapshot.problem(f"section {current!r} was cut off (no end marker): output truncated", current)
        _store(snapshot, RawSection(current, _join(lines), None))
    if stray:
        snapshot.problems.append(f"{stray} line(s) outside any section were ignored")
    if not snapshot.sections:
        snapshot.problems.append("no hpd sections found: not collector output")
    return snapshot


def _join(lines: list[str]) -> str:
    return "\n".join(lines) + ("\n" if lines else "")


def _store(snapshot: RawSnapshot, section: RawSection) -> None:
    if section.name in snapshot.sections:
        snapshot.problem(f"section {section.name!r} appears more than once; the first is kept", section.name)
        return
    snapshot.sections[section.name] = section


def render_container(sections: list[tuple[str, str, int]]) -> str:
    """The inverse of parse_container, for simulated nodes and tests."""
    parts: list[str] = []
    for name, text, rc in sections:
        body = text if text.endswith("\n") or not text else text + "\n"
        parts.append(f"=== hpd:begin {name} ===\n{body}=== hpd:end {name} rc={rc} ===\n")
    return "".join(parts)
