"""`scontrol show topology` as node -> network layers, top first. Pure.

The format is what Slurm's topology plugins print, one record per line (SchedMD/slurm
src/plugins/topology/tree/topology_tree.c and topology/block/topology_block.c, `_print_topo_record`):

    SwitchName=<name> Level=<n> LinkSpeed=<n>[ Nodes=<hostlist>][ Switches=<hostlist>]
    BlockName=<name> BlockIndex=<n>[ Nodes=<hostlist>] BlockSize=<n>
    AggregatedBlock=<hostlist of blocks> BlockIndex=<n>[ Nodes=<hostlist>] BlockSize=<n>

A tree gives each node the switches above it: its leaf switch (the lowest level whose Nodes hold
it) and that switch's parents through `Switches=`, so the layers read like EC2's network nodes,
top first. A block topology gives the aggregated blocks (largest first) and then the base block.
With no topology plugin (`topology/flat`) scontrol prints "No topology information available" and
nothing else: the map is empty, which means "not known", never "one switch".

Host lists are Slurm's syntax (`tux[0-3,12,18-20]`, zero-padded ranges keep their width, several
bracket groups expand as a product), expanded here: the one well-kept Python implementation
(python-hostlist) is GPL-2.0, which this Apache-2.0 project cannot ship in its Lambda asset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: An expansion larger than this is refused (a forged `n[0-999999999]` must not exhaust memory).
MAX_HOSTS = 200_000
_RANGE = re.compile(r"^(?P<lo>[0-9]+)(?:-(?P<hi>[0-9]+))?$")


class HostlistError(ValueError):
    """Not a Slurm host list (unbalanced brackets, a bad range, or too many hosts)."""


def _split_top_level(expr: str) -> list[str]:
    """`a[1-2],b,c[3,5]` -> ['a[1-2]', 'b', 'c[3,5]']: commas inside brackets belong to the range."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(expr):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"nested '[' in {expr[:80]!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in {expr[:80]!r}")
        elif ch == "," and depth == 0:
            parts.append(expr[start:i])
            start = i + 1
    if depth:
        raise HostlistError(f"unbalanced '[' in {expr[:80]!r}")
    parts.append(expr[start:])
    return [p.strip() for p in parts if p.strip()]


def _ranges(body: str) -> list[str]:
    values: list[str] = []
    for piece in body.split(","):
        match = _RANGE.match(piece.strip())
        if not match:
            raise HostlistError(f"bad range {piece!r}")
        lo, hi = match["lo"], match["hi"] or match["lo"]
        if int(hi) < int(lo):
            raise HostlistError(f"descending range {piece!r}")
        if int(hi) - int(lo) >= MAX_HOSTS:
            raise HostlistError(f"range {piece!r} holds more than {MAX_HOSTS} hosts")
        width = len(lo)
        values.extend(str(n).zfill(width) for n in range(int(lo), int(hi) + 1))
    return values


def expand_hostlist(expr: str) -> list[str]:
    """Every host a Slurm host list names, in order, duplicates dropped."""
    hosts: list[str] = []
    for part in _split_top_level(expr or ""):
        expansions = [""]
        for literal, body in re.findall(r"([^\[]*)(?:\[([^\]]*)\])?", part):
            expansions = [e + literal for e in expansions]
            if body:
                expansions = [e + value for e in expansions for value in _ranges(body)]
            if len(hosts) + len(expansions) > MAX_HOSTS:
                raise HostlistError(f"{expr[:80]!r} names more than {MAX_HOSTS} hosts")
        hosts.extend(expansions)
    return list(dict.fromkeys(hosts))


@dataclass
class _Record:
    name: str
    kind: str  # switch | block | aggregate
    level: int = 0
    nodes: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)


def _records(text: str) -> tuple[list[_Record], list[str]]:
    records, problems = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
        kind = next((k for k in ("SwitchName", "BlockName", "AggregatedBlock") if k in fields), None)
        if kind is None:
            continue
        try:
            record = _Record(
                name=fields[kind],
                kind={"SwitchName": "switch", "BlockName": "block", "AggregatedBlock": "aggregate"}[kind],
                level=int(fields.get("Level", "0")),
                nodes=expand_hostlist(fields.get("Nodes", "")),
                children=expand_hostlist(fields.get("Switches", "")),
            )
        except (HostlistError, ValueError) as exc:
            problems.append(f"line {number}: {exc}")
            continue
        records.append(record)
    return records, problems


def _tree_layers(switches: list[_Record]) -> dict[str, tuple[str, ...]]:
    parent = {child: s.name for s in switches for child in s.children}
    containing: dict[str, list[_Record]] = {}
    for switch in switches:
        for node in switch.nodes:
            containing.setdefault(node, []).append(switch)
    out: dict[str, tuple[str, ...]] = {}
    for node, holders in containing.items():
        leaf = min(holders, key=lambda s: s.level)
        path = [leaf.name]
        up = parent.get(leaf.name)
        while up is not None and up not in path:
            path.append(up)
            up = parent.get(up)
        if len(path) == 1 and len(holders) > 1:  # parents that list the nodes but name no children
            path = [s.name for s in sorted(holders, key=lambda s: s.level)]
        out[node] = tuple(reversed(path))
    return out


def _block_layers(blocks: list[_Record]) -> dict[str, tuple[str, ...]]:
    base = [b for b in blocks if b.kind == "block"]
    aggregates = sorted((b for b in blocks if b.kind == "aggregate"), key=lambda b: -len(b.nodes))
    out: dict[str, tuple[str, ...]] = {}
    for block in base:
        for node in block.nodes:
            above = tuple(a.name for a in aggregates if node in a.nodes)
            out.setdefault(node, (*above, block.name))
    return out


@dataclass(frozen=True)
class SlurmTopology:
    """The node -> layers map, and what could not be read (bad lines are skipped, never raised)."""

    layers: dict[str, tuple[str, ...]]
    plugin: str | None  # "tree" | "block" | None (nothing printed)
    problems: tuple[str, ...] = ()


def parse_scontrol_topology(text: str) -> SlurmTopology:
    """Parse `scontrol show topology`; an empty map when the cluster has no topology plugin."""
    records, problems = _records(text or "")
    switches = [r for r in records if r.kind == "switch"]
    blocks = [r for r in records if r.kind != "switch"]
    if switches:
        return SlurmTopology(_tree_layers(switches), "tree", tuple(problems))
    if blocks:
        return SlurmTopology(_block_layers(blocks), "block", tuple(problems))
    return SlurmTopology({}, None, tuple(problems))


def looks_like_scontrol_topology(text: str) -> bool:
    return bool(re.search(r"^\s*(SwitchName|BlockName|AggregatedBlock)=", text or "", re.MULTILINE))
