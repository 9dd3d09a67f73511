"""Parser for `lfs df` / `lfs df -h`: per-target (MDT/OST) usage, grouped by file system.

Shapes handled (all seen in real output): human-readable sizes (`4.5T`, `10.0M`, or a bare number
of bytes when below 1 KiB) under a `bytes` header, 1K-block counts under a `1K-blocks` header, the
`filesystem_summary:` line (older Lustre: `filesystem summary:`), several file systems one after
the other, shell prompts and log markers around the output, annotation arrows pasted after a row,
and targets that could not be queried. lfs prints those as `<uuid> : inactive device` (the OST is
deactivated on this client) or `<uuid> : <strerror>`, with no numbers and no mount point.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from hyperpod_perf.parse.procfs import PROMPT_RE, human_to_bytes

HEADER_RE = re.compile(r"^UUID\s+(?P<unit>bytes|1K-blocks|Inodes)\s+", re.I)
TARGET_UUID_RE = re.compile(r"^(?P<fsname>[A-Za-z0-9_.-]+?)-(?P<kind>MDT|OST)(?P<hex>[0-9a-fA-F]{4,})_UUID$")
ROW_RE = re.compile(
    r"^(?P<uuid>\S+_UUID)\s+(?P<size>\S+)\s+(?P<used>\S+)\s+(?P<avail>\S+)\s+(?P<pct>\d+|-)%\s+"
    r"(?P<mount>/\S*?)\[(?P<kind>MDT|OST):(?P<index>\d+)\](?P<rest>.*)$"
)
SUMMARY_RE = re.compile(
    r"^filesystem[_ ]summary:\s+(?P<size>\S+)\s+(?P<used>\S+)\s+(?P<avail>\S+)\s+(?P<pct>\d+|-)%\s+"
    r"(?P<mount>/\S*)(?P<rest>.*)$"
)
#: `<uuid> : inactive device` or `<uuid> : <error text>` (lfs prints the uuid padded to 20 columns).
#: The reason runs to its last non-blank (`.*\S`, or a lone blank when there is nothing else) rather
#: than `.+?\s*$`, which retried the trailing-blank check at every character (quadratic).
UNAVAILABLE_RE = re.compile(r"^(?P<uuid>\S+_UUID)\s*:\s*(?P<reason>.*\S|\s)\s*$")
#: Target state flags lfs may print after the mount (e.g. `D` degraded, `R` read-only).
STATE_FLAGS_RE = re.compile(r"^[A-Za-z]{1,6}$")


@dataclass(frozen=True)
class LustreTarget:
    uuid: str
    kind: str  # "MDT" or "OST"
    index: int
    fsname: str | None
    mount: str | None
    size_bytes: int | None = None
    used_bytes: int | None = None
    avail_bytes: int | None = None
    use_pct: int | None = None
    #: None when the row printed numbers; otherwise the reason lfs gave ("inactive device", an error).
    unavailable: str | None = None
    state_flags: str = ""

    @property
    def name(self) -> str:
        """`OST0003`-style name, as operators and FSx metrics refer to targets."""
        return f"{self.kind}{self.index:04x}"

    @property
    def inactive(self) -> bool:
        return self.unavailable is not None


@dataclass(frozen=True)
class LustreSummary:
    size_bytes: int
    used_bytes: int
    avail_bytes: int
    use_pct: int | None


@dataclass
class LustreFilesystem:
    mount: str | None
    unit: str  # "bytes" (-h) or "1K-blocks" or "Inodes"
    targets: list[LustreTarget] = field(default_factory=list)
    summary: LustreSummary | None = None

    @property
    def fsname(self) -> str | None:
        names = [t.fsname for t in self.targets if t.fsname]
        return names[0] if names else None

    @property
    def osts(self) -> list[LustreTarget]:
        return [t for t in self.targets if t.kind == "OST"]

    @property
    def mdts(self) -> list[LustreTarget]:
        return [t for t in self.targets if t.kind == "MDT"]


@dataclass(frozen=True)
class LfsDf:
    filesystems: tuple[LustreFilesystem, ...]

    def filesystem(self, mount: str) -> LustreFilesystem | None:
        return next((fs for fs in self.filesystems if fs.mount == mount), None)


def parse_lfs_df(text: str) -> LfsDf:
    """Every `UUID ...` block of `lfs df [-h]` output, one LustreFilesystem per block."""
    blocks: list[LustreFilesystem] = []
    current: LustreFilesystem | None = None
    unknown: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or PROMPT_RE.match(line) or stripped.startswith("---"):
            continue
        header = HEADER_RE.match(stripped)
        if header:
            current = LustreFilesystem(mount=None, unit=header["unit"])
            blocks.append(current)
            continue
        if current is None:
            unknown.append(stripped)
            continue
        if not _parse_line(current, stripped):
            unknown.append(stripped)
    filesystems = [_finish(block) for block in blocks if block.targets or block.summary]
    if not filesystems and (unknown or text.strip()):
        first = unknown[0][:80] if unknown else "<no target rows>"
        raise ValueError(f"no lfs df target row recognised (first line: {first!r})")
    return LfsDf(tuple(filesystems))


def _parse_line(block: LustreFilesystem, line: str) -> bool:
    block_bytes = 1024 if block.unit.upper() == "1K-BLOCKS" else None
    if block.unit.lower() == "inodes":
        block_bytes = 1  # counts, not sizes: keep the numbers as printed
    row = ROW_RE.match(line)
    if row:
        identity = TARGET_UUID_RE.match(row["uuid"])
        block.targets.append(
            LustreTarget(
                uuid=row["uuid"],
                kind=row["kind"],
                index=int(row["index"]),
                fsname=identity["fsname"] if identity else None,
                mount=row["mount"],
                size_bytes=_size(row["size"], block_bytes),
                used_bytes=_size(row["used"], block_bytes),
                avail_bytes=_size(row["avail"], block_bytes),
                use_pct=None if row["pct"] == "-" else int(row["pct"]),
                state_flags=_state_flags(row["rest"]),
            )
        )
        block.mount = block.mount or row["mount"]
        return True
    summary = SUMMARY_RE.match(line)
    if summary:
        block.summary = LustreSummary(
            _size(summary["size"], block_bytes),
            _size(summary["used"], block_bytes),
            _size(summary["avail"], block_bytes),
            None if summary["pct"] == "-" else int(summary["pct"]),
        )
        block.mount = block.mount or summary["mount"]
        return True
    unavailable = UNAVAILABLE_RE.match(line)
    if unavailable:
        identity = TARGET_UUID_RE.match(unavailable["uuid"])
        if identity is None:
            return False
        block.targets.append(
            LustreTarget(
                uuid=unavailable["uuid"],
                kind=identity["kind"],
                index=int(identity["hex"], 16),
                fsname=identity["fsname"],
                mount=None,
                unavailable=unavailable["reason"],
            )
        )
        return True
    return False


def _finish(block: LustreFilesystem) -> LustreFilesystem:
    """Give targets that printed no mount (inactive ones) the mount of their block."""
    if block.mount is not None:
        block.targets = [t if t.mount is not None else replace(t, mount=block.mount) for t in block.targets]
    return block


def _size(value: str, block_bytes: int | None) -> int:
    return human_to_bytes(value, block_bytes=block_bytes)


def _state_flags(rest: str) -> str:
    """Keep state flags printed after `[OST:n]`; drop annotations such as a pasted `<-----` arrow."""
    flags = [token for token in rest.split() if STATE_FLAGS_RE.match(token)]
    return "".join(flags)
