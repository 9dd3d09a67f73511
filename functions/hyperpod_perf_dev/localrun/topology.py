"""The simulated clusters' answer to EC2 DescribeInstanceTopology (moto does not implement it).

By default it answers as HyperPod is expected to (its instances run in the service account, so EC2
does not know them: InvalidInstanceID.NotFound, unverified against a live cluster). A cluster plan
with `network_layers` answers those layers instead, in the documented response shape, so a run
can carry real layers from ResolveCluster through the pair analysis to the history rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hyperpod_perf.domain.errors import NotFound

if TYPE_CHECKING:
    from hyperpod_perf_dev.localrun.driver import LocalPipeline


class SimulatedInstanceTopology:
    """The InstanceTopology port over the simulated nodes of a local pipeline."""

    def __init__(self, run: LocalPipeline) -> None:
        self._run = run
        self.calls: list[list[str]] = []

    def describe(self, instance_ids: Sequence[str]) -> dict[str, Any]:
        ids = list(instance_ids)
        self.calls.append(ids)
        instances = []
        for instance_id in ids:
            node = self._run.node(instance_id)
            layers = self._run.layers_of(instance_id) if node is not None else ()
            if layers:
                instances.append(
                    {
                        "InstanceId": instance_id,
                        "InstanceType": node.instance_type.removeprefix("ml."),
                        "NetworkNodes": list(layers),
                    }
                )
        if not instances:
            raise NotFound(
                f"The instance IDs '{', '.join(ids[:3])}' do not exist",
                code="InvalidInstanceID.NotFound",
                context="ec2:DescribeInstanceTopology",
            )
        return {"Instances": instances}
