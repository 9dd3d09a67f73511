"""The Map's items and what ResolveCluster hands to the state machine (kept small: a
2,000-node run passes 2,000 of them)."""

from __future__ import annotations

from pydantic import BaseModel

from hyperpod_perf.cluster_models import ClusterNode


class TargetItem(BaseModel):
    """One Map item: the node to collect (kept small: up to 2,000 of them per run)."""

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


class ResolvedCluster(BaseModel):
    """What ResolveCluster returns to the state machine (targets inline only when few)."""

    mode: str  # inline | distributed
    target_count: int
    max_concurrency: int
    targets: list[TargetItem] | None = None
    targets_key: str | None = None
    cluster_id: str
