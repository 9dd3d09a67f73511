"""Slow pairs explained by the network layers: a node (a star) or the fabric between two blocks. Pure.

EC2's instance topology gives every instance its network nodes, top layer first (EKS labels the
same as `topology.k8s.aws/network-node-layer-N`): two nodes that share the first k network nodes
meet at layer k. A degraded node makes every pair it is in slow — a star, which the localisation
names. A fault in the fabric between two groups of nodes (a spine link, an oversubscribed
aggregation layer, a placement split across two network blocks) makes the pairs that *cross* one
boundary slow while both sides are fast inside — a block in the pair matrix.

The boundary is named when, at one layer, the pairs between two groups of nodes (or one group
and the rest) hold at least `fabric_boundary_share` of all slow pairs and at least
`fabric_crossing_slow_share` of those crossing pairs are slow, with two or more nodes on each
side (one node alone on its side is a star, not a block). The shallowest layer that explains the
slowness wins: it is the widest boundary the evidence supports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hyperpod_perf.nccl.analysis.model import PairResult
from hyperpod_perf.rules.thresholds import Thresholds


@dataclass(frozen=True, slots=True)
class Boundary:
    """The layer boundary the slow pairs cross: the network nodes on each side, and the counts."""

    layer: int  # 1 = the top layer of the node set
    side_a: tuple[str, ...]  # network node(s) at `layer` on one side
    side_b: tuple[str, ...]  # ... and on the other ("*" alone: every other group)
    nodes_a: tuple[str, ...]
    nodes_b: tuple[str, ...]
    crossing_pairs: int
    slow_crossing: int
    slow_pairs: int

    @property
    def coverage(self) -> float:
        return self.slow_crossing / self.slow_pairs if self.slow_pairs else 0.0

    @property
    def precision(self) -> float:
        return self.slow_crossing / self.crossing_pairs if self.crossing_pairs else 0.0

    def describe(self) -> str:
        other = "every other network node" if self.side_b == ("*",) else " / ".join(self.side_b)
        return f"layer {self.layer}: {' / '.join(self.side_a)} | {other}"

    def to_dict(self) -> dict[str, object]:
        return {
            "layer": self.layer,
            "side_a": list(self.side_a),
            "side_b": list(self.side_b),
            "nodes_a": list(self.nodes_a),
            "nodes_b": list(self.nodes_b),
            "crossing_pairs": self.crossing_pairs,
            "slow_crossing": self.slow_crossing,
            "slow_pairs": self.slow_pairs,
        }


def layer_map(placement: Mapping[str, Sequence[str]], names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The analysis' node names (host names, often short) -> their network nodes, top first."""
    out: dict[str, tuple[str, ...]] = {}
    short = {k.split(".", 1)[0]: tuple(v) for k, v in placement.items() if v}
    for name in names:
        layers = placement.get(name) or short.get(name.split(".", 1)[0])
        if layers:
            out[name] = tuple(layers)
    return out


def _group(layers: tuple[str, ...], layer: int) -> tuple[str, ...] | None:
    return layers[:layer] if len(layers) >= layer else None


def explain(
    pairs: Sequence[PairResult], placement: Mapping[str, Sequence[str]], thresholds: Thresholds
) -> Boundary | None:
    """The one layer boundary the slow pairs cross, or None (no layers, or a star, or scattered)."""
    keyed = [p for p in pairs if p.a is not None and p.b is not None]
    layers = layer_map(placement, {n for p in keyed for n in (p.a, p.b) if n is not None})
    located = [p for p in keyed if p.a in layers and p.b in layers]
    slow = [p for p in located if p.slow]
    if len(slow) < 2:
        return None
    depth = max(len(v) for v in layers.values())
    best: Boundary | None = None
    for layer in range(1, depth + 1):
        groups = {node: _group(v, layer) for node, v in layers.items()}
        members: dict[tuple[str, ...], list[str]] = {}
        for node, group in groups.items():
            if group is not None:
                members.setdefault(group, []).append(node)
        if len(members) < 2:
            continue
        names = sorted(members)
        candidates = [(g, h) for i, g in enumerate(names) for h in names[i + 1 :]]
        if len(names) > 2:
            candidates += [(g, None) for g in names]
        for g, h in candidates:
            found = _boundary(located, slow, groups, members, layer, g, h)
            if found is None:
                continue
            if found.coverage < thresholds.fabric_boundary_share:
                continue
            if found.precision < thresholds.fabric_crossing_slow_share:
                continue
            if best is None or (found.coverage, found.precision) > (best.coverage, best.precision):
                best = found
        if best is not None:
            return best  # the shallowest layer that explains it
    return None


def _boundary(
    located: Sequence[PairResult],
    slow: Sequence[PairResult],
    groups: Mapping[str, tuple[str, ...] | None],
    members: Mapping[tuple[str, ...], list[str]],
    layer: int,
    g: tuple[str, ...],
    h: tuple[str, ...] | None,
) -> Boundary | None:
    def crosses(p: PairResult) -> bool:
        ga, gb = groups.get(p.a or ""), groups.get(p.b or "")
        if ga is None or gb is None or ga == gb:
            return False
        if h is None:
            return g in (ga, gb)
        return {ga, gb} == {g, h}

    side_a = members[g]
    side_b = members[h] if h is not None else [n for k, v in members.items() if k != g for n in v]
    if len(side_a) < 2 or len(side_b) < 2:
        return None  # one node alone on a side: that is a star around the node, not a block
    crossing = [p for p in located if crosses(p)]
    if not crossing:
        return None
    return Boundary(
        layer=layer,
        side_a=(g[-1],),
        side_b=(h[-1],) if h is not None else ("*",),
        nodes_a=tuple(sorted(side_a)),
        nodes_b=tuple(sorted(side_b)),
        crossing_pairs=len(crossing),
        slow_crossing=sum(1 for p in crossing if p.slow),
        slow_pairs=len(slow),
    )


def reclassify(
    payload: Mapping[str, Any], placement: Mapping[str, Sequence[str]], thresholds: Thresholds
) -> dict[str, Any] | None:
    """A stored NcclResults payload judged again once layers are known (Slurm's topology arrives
    with the nodes' collection, after the pairs were analysed): the payload with the boundary and
    its `nccl.fabric` finding, the suspects on its sides set aside as `analyze` would have; None
    when the layers explain nothing (the payload stands as it is)."""
    from hyperpod_perf.nccl.analysis.findings import fabric_finding

    analysis = dict(payload.get("analysis") or {})
    if not analysis or analysis.get("fabric_boundary"):
        return None
    slow = {(p.get("a"), p.get("b")) for p in analysis.get("slow_pairs") or []}
    pairs = [
        PairResult(
            p.get("a"),
            p.get("b"),
            float(p.get("busbw_gbps") or 0.0),
            int(p.get("runs") or 1),
            list(p.get("sources") or []),
            slow=(p.get("a"), p.get("b")) in slow,
        )
        for p in analysis.get("pairs") or []
    ]
    boundary = explain(pairs, placement, thresholds)
    if boundary is None:
        return None
    sides = {*boundary.nodes_a, *boundary.nodes_b}
    suspects = [s for s in analysis.get("suspects") or [] if s.get("node") not in sides]
    findings = [
        f
        for f in payload.get("findings") or []
        if f.get("check") != "nccl.node_suspect" or (f.get("node") is not None and f.get("node") not in sides)
    ]
    if not suspects:  # the boundary is the explanation: no "no common node" note beside it
        findings = [f for f in findings if f.get("check") != "nccl.node_suspect"]
    findings.append(fabric_finding(boundary, thresholds).model_dump(mode="json"))
    analysis.update(suspects=suspects, fabric_boundary=boundary.to_dict())
    return {**payload, "analysis": analysis, "findings": findings}
