"""The nodes' network layers across the pipeline's steps.

ResolveCluster writes what EC2 or the Kubernetes API answered to work/topology (pipeline/cluster.py
`place_nodes`). Slurm's `scontrol show topology` arrives later, in each node's collector output:
CollectNode keeps that text once per distinct content (work/slurm-topology-<digest>, each node's
evaluation names the key), and Evaluate reads the first. NcclResults runs beside the collection,
so when only Slurm knew the layers, Evaluate judges the stored pair analysis again with them
(`nccl.analysis.placement.reclassify`).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.collect.snapshot import RawSnapshot
from hyperpod_perf.domain.cluster import ClusterNode, Orchestrator
from hyperpod_perf.domain.errors import AwsAdapterError, NotFound
from hyperpod_perf.domain.evaluation import NodeEvaluation
from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds
from hyperpod_perf.service.topology import SLURM, Placement, slurm_placement, with_layers

SECTION = "slurm-topology"
_KEPT: set[str] = set()  # keys this container already wrote (a batch's nodes print the same text)
_KEPT_LOCK = threading.Lock()
_KEPT_MAX = 4096


def keep_slurm_topology(snapshot: RawSnapshot, run: RunLayout, store: ReportStore) -> str | None:
    """The run's key of this node's `scontrol show topology` output, written once per content."""
    section = snapshot.sections.get(SECTION)
    if section is None or section.rc != 0 or not section.text.strip():
        return None
    digest = hashlib.sha256(section.text.encode()).hexdigest()[:16]
    key = run.work(f"{SECTION}-{digest}")
    with _KEPT_LOCK:
        if key in _KEPT:
            return key
        if len(_KEPT) >= _KEPT_MAX:
            _KEPT.clear()
        _KEPT.add(key)
    store.put_text(key, section.text)
    return key


def stored_layers(store: ReportStore, run: RunLayout) -> Placement:
    """What ResolveCluster found (EC2 / Kubernetes), or an empty placement."""
    try:
        document = store.get_json(run.work("topology"))
    except NotFound:
        return Placement()
    layers = {k: tuple(v) for k, v in (document.get("layers") or {}).items() if v}
    return Placement(layers, document.get("source"))


def pair_placement(store: ReportStore, run: RunLayout, nodes: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """NcclResults' layers: the stored placement, then each target's own network nodes."""
    placement: dict[str, Any] = dict(stored_layers(store, run).layers)
    for n in nodes:
        if not n.get("network_nodes"):
            continue
        for name in (n.get("hostname"), n.get("instance_id"), (n.get("hostname") or "").split(".", 1)[0]):
            if name:
                placement.setdefault(name, n["network_nodes"])
    return placement


def run_placement(
    store: ReportStore,
    run: RunLayout,
    orchestrator: Orchestrator,
    nodes: Sequence[ClusterNode],
    evaluations: Iterable[NodeEvaluation],
) -> Placement:
    """Evaluate's layers: ResolveCluster's, else the first Slurm topology a node printed."""
    placement = stored_layers(store, run)
    if placement.layers or orchestrator is not Orchestrator.SLURM:
        return placement
    keys = list(dict.fromkeys(e.slurm_topology_key for e in evaluations if e.slurm_topology_key))
    texts = []
    for key in keys[:3]:  # the same cluster-wide output; a few tries if one object is unreadable
        try:
            texts.append(store.get_text(key))
        except AwsAdapterError:
            continue
    if not texts:
        return Placement()  # no node printed a topology: a cluster without scontrol (or none collected)
    return slurm_placement(texts, nodes)


def nccl_with_layers(
    nccl: dict[str, Any] | None,
    placement: Placement,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> dict[str, Any] | None:
    """The stored pair analysis, judged again when only Slurm's topology (known now) places it."""
    if not nccl or placement.source != SLURM or not placement.layers:
        return nccl
    from hyperpod_perf.nccl.analysis.placement import reclassify

    return reclassify(nccl, placement.layers, thresholds) or nccl


__all__ = ["keep_slurm_topology", "nccl_with_layers", "pair_placement", "run_placement", "with_layers"]
