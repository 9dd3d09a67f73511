"""The nodes' results as CollectNode and RecordNodeFailure stored them: one object per node.

Why its own module: Evaluate and FsxMetrics read every node's result, and neither needs the node
engine that writes them (pipeline/nodes.py), so importing this costs their cold start nothing of
it. The objects are read concurrently (`ReportStore.get_many`), never one GET after another, and
parsed by pydantic straight from the JSON bytes.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.domain.evaluation import NodeEvaluation
from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.domain.mounts import Mount


class _MountsOnly(BaseModel):
    """A node result read for its mounts only (FsxMetrics): the findings are not validated."""

    model_config = ConfigDict(extra="ignore")
    mounts: list[dict[str, Any]] = Field(default_factory=list)


def _result_bodies(store: ReportStore, run: RunLayout) -> list[bytes]:
    keys = [key for key in store.list_keys(run.node_results_prefix) if key.endswith(".json")]
    return store.get_many(keys)


def load_evaluations(store: ReportStore, run: RunLayout) -> list[NodeEvaluation]:
    """Every node's stored evaluation, in key order."""
    return [NodeEvaluation.model_validate_json(body) for body in _result_bodies(store, run)]


def load_mounts(store: ReportStore, run: RunLayout) -> list[Mount]:
    """Every mount every node reported, with the node it is on."""
    return [
        Mount(**mount)
        for body in _result_bodies(store, run)
        for mount in _MountsOnly.model_validate_json(body).mounts
    ]
