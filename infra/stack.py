"""The hyperpod-perf stack: a thin composition of one construct per concern.

Order matters only where values flow: the FSx alarms exist before the clusters' SSM parameters
(their names go into them), the functions before the state machine (their ARNs fill the ASL), the
state machine before the trigger (it starts executions of it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aws_cdk import Annotations, CfnOutput, Stack
from constructs import Construct

from infra import lambda_defaults as defaults
from infra.config import DeployConfig
from infra.constructs.cluster_config import ClusterParameters
from infra.constructs.collector_document import CollectorDocument
from infra.constructs.dashboard import Dashboard
from infra.constructs.functions import FunctionFactory, PipelineFunctions
from infra.constructs.history import HistoryCatalog
from infra.constructs.monitoring import Monitoring
from infra.constructs.notifications import Notifications
from infra.constructs.permissions import readable_s3_prefixes
from infra.constructs.storage import ReportStorage
from infra.constructs.triggers import FsxAlarms, Triggers
from infra.constructs.workflow import DiagnoseWorkflow

REPO_ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS_DIR = REPO_ROOT / "functions"
ASL_PATH = REPO_ROOT / "statemachines" / "diagnose.asl.json"


def default_session_document() -> dict[str, Any]:
    """The collector's Session document, built by the package that owns collector.sh."""
    from hyperpod_perf.collect.session_document import build_session_document

    return build_session_document()


class HyperPodPerfStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        session_document: Callable[[], dict[str, Any]] = default_session_document,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("description", "hyperpod-perf: read-only HyperPod diagnosis")
        super().__init__(scope, construct_id, **kwargs)

        storage = ReportStorage(self, "Storage", retention_days=config.report_retention_days)
        document = CollectorDocument(self, "CollectorDocument", content=session_document())
        notifications = Notifications(
            self, "Notifications", emails=config.notification_emails, slack=config.slack
        )
        fsx_alarms = FsxAlarms(self, "FsxAlarms", clusters=config.clusters)
        for skipped in fsx_alarms.skipped:
            Annotations.of(fsx_alarms).add_warning_v2(
                "hyperpod-perf:fsx-alarm-skipped", f"No Lustre throughput alarm for {skipped}"
            )

        cluster_parameters = ClusterParameters(
            self,
            "ClusterConfig",
            clusters=config.clusters,
            fsx_alarm_names=fsx_alarms.alarm_names_by_cluster,
        )
        factory = FunctionFactory(
            scope=self,
            functions_dir=FUNCTIONS_DIR,
            environment={
                "REPORT_BUCKET": storage.bucket.bucket_name,
                "TOPIC_ARN": notifications.topic.topic_arn,
                "SESSION_DOCUMENT_NAME": document.document_name,
                "NOTIFY_POLICY": config.notify_policy.value,
                "DISTRIBUTED_MAP_THRESHOLD": str(config.distributed_map_threshold),
                "MAP_MAX_CONCURRENCY": str(config.map_max_concurrency),
                "NODE_SAMPLE_SIZE": str(config.node_sample_size),
                "SESSION_RATE_PER_S": f"{config.session_rate_per_second:g}",
                "POWERTOOLS_SERVICE_NAME": defaults.POWERTOOLS_SERVICE_NAME,
                "POWERTOOLS_METRICS_NAMESPACE": defaults.POWERTOOLS_METRICS_NAMESPACE,
                "POWERTOOLS_LOG_LEVEL": defaults.POWERTOOLS_LOG_LEVEL,
                "READABLE_S3_PREFIXES": json.dumps(readable_s3_prefixes(config, storage.bucket)),
                # Powertools' Tracer loads the X-Ray SDK only where this says false (observability.py)
                "POWERTOOLS_TRACE_DISABLED": "false" if config.xray_sdk_tracing else "true",
            },
        )
        functions = PipelineFunctions(
            self,
            "Functions",
            factory=factory,
            config=config,
            bucket=storage.bucket,
            topic=notifications.topic,
            topic_key=notifications.key,
            document_arn=document.document_arn,
        )
        workflow = DiagnoseWorkflow(
            self, "Workflow", definition_path=ASL_PATH, functions=functions.functions, bucket=storage.bucket
        )
        triggers = Triggers(
            self,
            "Triggers",
            factory=factory,
            config=config,
            state_machine=workflow.state_machine,
            fsx_alarm_names=fsx_alarms.alarm_names_by_cluster,
            fsx_alarm_prefix=fsx_alarms.name_prefix,
            cluster_parameters=cluster_parameters,
        )
        Monitoring(
            self,
            "Monitoring",
            state_machine=workflow.state_machine,
            dead_letter_queue=triggers.dead_letter_queue,
            topic=notifications.topic,
        )

        dashboard = Dashboard(
            self,
            "Dashboard",
            state_machine=workflow.state_machine,
            clusters=config.clusters,
            report_functions=[functions.functions["evaluate"]],
        )

        history = HistoryCatalog(
            self, "History", bucket=storage.bucket, retention_days=config.report_retention_days
        )

        self.storage = storage
        self.history = history
        self.document = document
        self.notifications = notifications
        self.functions = {**functions.functions, "trigger": triggers.function}
        self.workflow = workflow
        self.triggers = triggers
        self.cluster_parameters = cluster_parameters

        CfnOutput(self, "StateMachineArn", value=workflow.state_machine.state_machine_arn)
        CfnOutput(self, "ReportBucketName", value=storage.bucket.bucket_name)
        CfnOutput(self, "TopicArn", value=notifications.topic.topic_arn)
        CfnOutput(self, "SessionDocumentName", value=document.document_name)
        CfnOutput(self, "DashboardUrl", value=dashboard.url)
        CfnOutput(self, "HistoryWorkGroup", value=history.workgroup.ref)
        CfnOutput(self, "HistoryDatabase", value=history.database.ref)
