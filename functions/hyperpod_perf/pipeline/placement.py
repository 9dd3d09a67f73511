"""NodePlacement: each target's Availability Zone and private IP, read beside the fan-out.

Why a step of its own: ListClusterNodes carries no placement, so placing a node takes one
DescribeClusterNode call; before the fan-out 1,024 of them held back the first StartSession by
seconds (bench/RESULTS.md, pipeline). Only Evaluate needs the placement (topology.az_spread, the
report's node rows), so it is read in a branch of Gather while the nodes are collected, and
Evaluate merges it into the nodes (`placed_nodes`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.domain.cluster import ClusterInfo, ClusterNode
from hyperpod_perf.domain.errors import NotFound
from hyperpod_perf.domain.findings import Finding
from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.domain.request import DiagnoseRequest
from hyperpod_perf.service.ports import ClustersPort
from hyperpod_perf.service.resolve import with_placement

if TYPE_CHECKING:  # Evaluate's rows; NodePlacement itself never builds a report
    from hyperpod_perf.domain.report import NodeSummary

#: What NodePlacement adds to a node; Evaluate takes exactly these from it.
PLACEMENT_FIELDS = ("az", "az_id", "private_ip")


def node_placement(
    request: DiagnoseRequest, run: RunLayout, *, clusters: ClustersPort, store: ReportStore
) -> dict[str, Any]:
    """Describe the run's targets (work/cluster) and write their placement to work/placement."""
    gathered = store.get_json(run.work("cluster"))
    cluster = ClusterInfo.model_validate(gathered["cluster"])
    nodes = [ClusterNode.model_validate(n) for n in gathered["nodes"]]
    placed, findings = with_placement(request.cluster, cluster, nodes, clusters)
    document = {
        "nodes": {n.instance_id: {f: getattr(n, f) for f in PLACEMENT_FIELDS} for n in placed},
        "findings": [f.model_dump(mode="json") for f in findings],
    }
    key = store.put_json(run.work("placement"), document)
    return {"key": key, "placed": sum(1 for n in placed if n.az or n.az_id), "findings": len(findings)}


def placed_nodes(
    store: ReportStore, run: RunLayout, nodes: Sequence[ClusterNode], findings: list[Finding]
) -> list[ClusterNode]:
    """The nodes with NodePlacement's fields; its findings into the run's. Without its document
    the nodes stay unplaced and topology.az_spread says so."""
    try:
        document = store.get_json(run.work("placement"))
    except NotFound:
        return list(nodes)
    findings.extend(Finding.model_validate(f) for f in document.get("findings", []))
    placement = document.get("nodes") or {}
    out = []
    for node in nodes:
        fields = placement.get(node.instance_id) or {}
        update = {f: fields[f] for f in PLACEMENT_FIELDS if fields.get(f) and not getattr(node, f)}
        out.append(node.model_copy(update=update) if update else node)
    return out


def with_zones(rows: list[NodeSummary], nodes: Sequence[ClusterNode]) -> list[NodeSummary]:
    """The report's node rows with the zone NodePlacement found (CollectNode judged its nodes
    before their placement was known)."""
    zones = {n.instance_id: n.az for n in nodes if n.az}
    return [
        row.model_copy(update={"availability_zone": zones[row.instance_id]})
        if not row.availability_zone and row.instance_id in zones
        else row
        for row in rows
    ]
