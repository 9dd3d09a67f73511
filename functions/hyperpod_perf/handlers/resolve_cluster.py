"""ResolveCluster: describe the cluster, list and place its nodes, choose the targets."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from hyperpod_perf.aws import clients
from hyperpod_perf.domain.cluster import ClusterInfo
from hyperpod_perf.domain.errors import AwsAdapterError
from hyperpod_perf.domain.steps import RunEvent
from hyperpod_perf.handlers.events import parsed_event
from hyperpod_perf.handlers.observability import logger, metrics, tracer
from hyperpod_perf.handlers.settings import ResolveSettings, SettingsError, load, load_clusters
from hyperpod_perf.pipeline.cluster import resolve_cluster, with_deployment_defaults
from hyperpod_perf.service.topology import TopologySources

clients.preload("sagemaker", "ec2", "s3")  # in Lambda, at init (aws/clients.py)


@logger.inject_lambda_context(correlation_id_path="run.execution", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@parsed_event(RunEvent)
def handler(event: RunEvent, context: LambdaContext) -> dict[str, Any]:
    settings = load(ResolveSettings)
    resolved = resolve_cluster(
        with_deployment_defaults(event.request, sample_size=settings.node_sample_size),
        event.run,
        clusters=clients.clusters(),
        store=clients.store(settings.report_bucket),
        distributed_threshold=settings.distributed_map_threshold,
        max_concurrency=settings.map_max_concurrency,
        session_rate_per_s=settings.session_rate_per_s,
        session_seconds=settings.session_seconds,
        topology=topology_sources(settings),
    )
    metrics.add_metric(name="NodesScanned", unit=MetricUnit.Count, value=resolved.target_count)
    return resolved.model_dump(mode="json", exclude_none=True)


class _NodeLabelsWhenAsked:
    """The EKS and STS clients are built only for a cluster that opted in."""

    def node_list(self, cluster_name: str) -> dict[str, Any]:
        return clients.eks_node_labels().node_list(cluster_name)


def topology_sources(settings: ResolveSettings) -> TopologySources:
    """EC2 always; the Kubernetes API only for a cluster whose configuration opts in."""

    def opted_in(cluster: ClusterInfo) -> bool:
        if not settings.clusters_parameter_path:
            return False
        try:
            configs = load_clusters(settings.clusters_parameter_path)
        except (AwsAdapterError, SettingsError) as exc:
            logger.warning(
                "cluster configuration unreadable: no Kubernetes topology", extra={"error": str(exc)}
            )
            return False
        return any(c.kubernetes_topology and c.name == cluster.name for c in configs)

    return TopologySources(
        instance_topology=clients.instance_topology(),
        node_labels=_NodeLabelsWhenAsked(),
        kubernetes_opt_in=opted_in,
    )
