"""The Map's items and what ResolveCluster hands to the state machine.

Why batches of targets: one CollectNode invocation collects a batch of nodes concurrently under
one token bucket (pipeline/pacing.py), so the Map's items are batches, built here rather than by
the Map's ItemBatcher: ItemBatcher exists only in Distributed mode, and the offline interpreter
the tests run the ASL in does not parse it; a batch built by ResolveCluster runs the same in both
Map modes and in both places."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from hyperpod_perf.domain.cluster import ClusterNode


class TargetItem(BaseModel):
    """One node to collect (kept small: a batch carries up to 200 of them)."""

    model_config = ConfigDict(strict=True)

    instance_id: str
    cluster_id: str
    group: str = ""
    hostname: str | None = None
    instance_type: str | None = None
    az: str | None = None
    status: str | None = None

    def cluster_node(self) -> ClusterNode:
        return ClusterNode(
            instance_id=self.instance_id,
            group=self.group,
            hostname=self.hostname,
            instance_type=self.instance_type,
            az=self.az,
            status=self.status,
        )


class TargetBatch(BaseModel):
    """One Map item: the nodes one CollectNode invocation collects, and when it may start."""

    model_config = ConfigDict(strict=True)

    index: int
    start_after_s: float = 0.0  # staggers the first StartSession of a wave's batches
    targets: list[TargetItem] = Field(min_length=1)

    @property
    def cluster_id(self) -> str:
        return self.targets[0].cluster_id


class ResolvedCluster(BaseModel):
    """What ResolveCluster returns to the state machine (batches inline only when few targets)."""

    mode: str  # inline | distributed
    target_count: int
    batch_count: int
    max_concurrency: int  # the Map's MaxConcurrencyPath
    invocation_rate_per_s: float  # each CollectNode's share of the StartSession rate
    batches: list[TargetBatch] | None = None
    batches_key: str | None = None  # the Distributed Map's ItemReader key
    cluster_id: str
