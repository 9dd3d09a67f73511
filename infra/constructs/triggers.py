"""What starts a diagnosis: CloudWatch alarms and HyperPod events, through one trigger function.

Why a trigger function between EventBridge and Step Functions: an alarm storm must start one
execution per cluster and time window. The function derives an idempotent execution name
(cluster + reason + time bucket), which a direct EventBridge -> Step Functions target cannot do.

The FSx alarms the runbook implies live here too: they exist to start a diagnosis, and the rule
matches them by their (generated) names.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import ClusterConfig, DeployConfig, FsxType
from infra.constructs import acknowledge, acknowledge_checkov
from infra.constructs.cluster_config import ClusterParameters, ConfigurationTooLarge
from infra.constructs.functions import FunctionFactory, suppress_unscoped

MB = 1_000_000  # FSx quotes throughput in decimal MB/s

#: The runbook's saturation thresholds, sustained for 15 one-minute periods.
LUSTRE_THROUGHPUT_PERCENT = 90
OPENZFS_IOPS_PERCENT = 80
SUSTAINED_MINUTES = 15

HYPERPOD_SOURCE = "aws.sagemaker"
NODE_HEALTH_EVENT = "SageMaker HyperPod Cluster Node Health Event"
CLUSTER_EVENT = "SageMaker HyperPod Cluster Event"
CLUSTER_STATE_CHANGE = "SageMaker HyperPod Cluster State Change"
ALARM_STATE_CHANGE = "CloudWatch Alarm State Change"
#: EventBridge: "Event pattern size: 2,048 characters" per rule by default (adjustable).
EVENT_PATTERN_LIMIT = 2048


class FsxAlarms(Construct):
    """Lustre throughput >= 90 % of provisioned and OpenZFS disk IOPS >= 80 %, for 15 minutes."""

    def __init__(self, scope: Construct, construct_id: str, *, clusters: tuple[ClusterConfig, ...]) -> None:
        super().__init__(scope, construct_id)
        self.alarms: list[cloudwatch.Alarm] = []
        self.alarm_names_by_cluster: dict[str, list[str]] = {c.name: [] for c in clusters}
        self.skipped: list[str] = []
        #: Every FSx alarm's name starts with it, so one EventBridge prefix matches them all.
        self.name_prefix = f"hyperpod-perf-{Stack.of(self).stack_name}-fsx-"
        period = Duration.minutes(1)
        for cluster in clusters:
            for fs in cluster.fsx:
                alarm_id = f"{cluster.name}-{fs.id}"
                dimensions = {"FileSystemId": fs.id}
                if fs.type is FsxType.LUSTRE:
                    if fs.provisioned_mbps is None:
                        self.skipped.append(f"{cluster.name}/{fs.id}: provisionedMBps not configured")
                        continue
                    provisioned_bytes_per_s = fs.provisioned_mbps * MB

                    def fsx(metric: str, dims: dict[str, str] = dimensions) -> cloudwatch.Metric:
                        return cloudwatch.Metric(
                            namespace="AWS/FSx",
                            metric_name=metric,
                            dimensions_map=dims,
                            statistic="Sum",
                            period=period,
                        )

                    # Sum over a period is the file-system total; / PERIOD gives bytes per second.
                    metric: cloudwatch.IMetric = cloudwatch.MathExpression(
                        expression=f"(r + w) / PERIOD(r) / {provisioned_bytes_per_s:.0f} * 100",
                        using_metrics={"r": fsx("DataReadBytes"), "w": fsx("DataWriteBytes")},
                        period=period,
                        label="Throughput % of provisioned",
                    )
                    threshold = LUSTRE_THROUGHPUT_PERCENT
                    what = f"Lustre {fs.id} read+write >= {threshold}% of {fs.provisioned_mbps:g} MB/s"
                else:
                    metric = cloudwatch.Metric(
                        namespace="AWS/FSx",
                        metric_name="FileServerDiskIopsUtilization",
                        dimensions_map=dimensions,
                        statistic="Average",
                        period=period,
                    )
                    threshold = OPENZFS_IOPS_PERCENT
                    what = f"OpenZFS {fs.id} FileServerDiskIopsUtilization >= {threshold}%"
                alarm_name = f"{self.name_prefix}{cluster.name}-{fs.id}"
                alarm = cloudwatch.Alarm(
                    self,
                    alarm_id,
                    alarm_name=alarm_name,
                    metric=metric,
                    threshold=threshold,
                    comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                    evaluation_periods=SUSTAINED_MINUTES,
                    datapoints_to_alarm=SUSTAINED_MINUTES,
                    treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                    alarm_description=(
                        f"hyperpod-perf: {what} for {SUSTAINED_MINUTES} min on cluster {cluster.name}; "
                        "starts a diagnosis (runbook section B)."
                    ),
                )
                self.alarms.append(alarm)
                self.alarm_names_by_cluster[cluster.name].append(alarm_name)


class Triggers(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        factory: FunctionFactory,
        config: DeployConfig,
        state_machine: sfn.IStateMachine,
        fsx_alarm_names: dict[str, list[str]],
        fsx_alarm_prefix: str,
        cluster_parameters: ClusterParameters,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
            removal_policy=RemovalPolicy.DESTROY,
        )
        acknowledge_checkov(
            self.dead_letter_queue,
            "CKV_AWS_27",
            "Encrypted with SQS managed server-side encryption (SqsManagedSseEnabled: true); the "
            "check recognises a KMS key only.",
        )
        acknowledge(
            self.dead_letter_queue,
            "AwsSolutions-SQS3",
            "This queue is itself the dead-letter queue of the trigger rules and of the "
            "trigger function's asynchronous invocations; its depth is alarmed on.",
        )
        self.function, self.role = factory.create(
            self,
            "trigger",
            extra_environment={
                "STATE_MACHINE_ARN": state_machine.state_machine_arn,
                "CLUSTERS_PARAMETER_PATH": cluster_parameters.path,
            },
            dead_letter_queue=self.dead_letter_queue,
        )
        # Which alarms and file systems belong to which cluster: read once per cold start.
        cluster_parameters.grant_read(self.role)
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["states:StartExecution"], resources=[state_machine.state_machine_arn]
            )
        )
        # Whether the window's execution already runs (an alarm storm joins it instead of counting
        # as a new start): DescribeExecution on this state machine's executions only.
        stack = Stack.of(self)
        executions = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{state_machine.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        self.role.add_to_policy(
            iam.PolicyStatement(actions=["states:DescribeExecution"], resources=[executions])
        )
        suppress_unscoped(self.role)
        acknowledge(
            self.role,
            "AwsSolutions-IAM5",
            "Executions are named per cluster and time window at run time; DescribeExecution is "
            "limited to executions of this state machine.",
            [
                "Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
                f"<{stack.get_logical_id(state_machine.node.default_child)}.Name>:*"
            ],
        )

        target = targets.LambdaFunction(
            self.function,
            dead_letter_queue=self.dead_letter_queue,
            retry_attempts=8,
            max_event_age=Duration.hours(2),
        )
        self.rules: dict[str, events.Rule] = {}

        names: list[str] = []
        prefixes: list[str] = []
        for cluster in config.clusters:
            names += list(cluster.alarm_names)
            prefixes += list(cluster.alarm_prefixes)
        if any(fsx_alarm_names.values()):
            prefixes.append(fsx_alarm_prefix)
        alarm_matches: list[Any] = [*names, *({"prefix": p} for p in prefixes)]

        def alarm_pattern(matches: list[Any]) -> dict[str, Any]:
            return {
                "source": ["aws.cloudwatch"],
                "detail-type": [ALARM_STATE_CHANGE],
                "detail": {"state": {"value": ["ALARM"]}, "alarmName": matches},
            }

        for index, matches in enumerate(split_to_fit(alarm_matches, alarm_pattern)):
            self.rules[f"alarm{index or ''}"] = self._rule(
                f"AlarmRule{index or ''}",
                "hyperpod-perf: a configured CloudWatch alarm entered ALARM",
                alarm_pattern(matches),
                target,
            )

        # HyperPod events are matched for the configured clusters only: with none configured the
        # deployment is on-demand (start-execution) and never reacts to other teams' clusters.
        cluster_names = [c.name for c in config.clusters]
        hyperpod_rules: dict[str, tuple[str, Callable[[list[Any]], dict[str, Any]]]] = {
            "node_health": (NODE_HEALTH_EVENT, lambda names: {"ClusterName": names}),
            "cluster_event": (
                CLUSTER_EVENT,
                lambda names: {"EventDetails": {"ClusterName": names, "EventLevel": ["Error"]}},
            ),
            "cluster_state": (CLUSTER_STATE_CHANGE, lambda names: {"ClusterName": names}),
        }
        for key, (detail_type, detail) in hyperpod_rules.items():

            def pattern(
                names: list[Any], detail_type: str = detail_type, detail: Any = detail
            ) -> dict[str, Any]:
                return {"source": [HYPERPOD_SOURCE], "detail-type": [detail_type], "detail": detail(names)}

            for index, group in enumerate(split_to_fit(cluster_names, pattern)):
                construct_id = "".join(part.title() for part in key.split("_")) + f"Rule{index or ''}"
                self.rules[f"{key}{index or ''}"] = self._rule(
                    construct_id, f"hyperpod-perf: {detail_type}", pattern(group), target
                )

    def _rule(
        self, construct_id: str, description: str, pattern: dict[str, Any], target: targets.LambdaFunction
    ) -> events.Rule:
        return events.Rule(
            self,
            construct_id,
            description=description,
            event_pattern=events.EventPattern(
                source=pattern["source"], detail_type=pattern["detail-type"], detail=pattern["detail"]
            ),
            targets=[target],
        )


def pattern_size(pattern: dict[str, Any]) -> int:
    """Characters of the pattern as JSON (spaced separators: at least what EventBridge counts)."""
    return len(json.dumps(pattern))


def split_to_fit(
    values: list[Any], pattern: Callable[[list[Any]], dict[str, Any]], limit: int = EVENT_PATTERN_LIMIT
) -> list[list[Any]]:
    """The values in consecutive groups, each group's pattern within `limit` characters.

    Why: EventBridge caps an event pattern at 2,048 characters by default; fifty clusters' alarm
    names do not fit one rule, so they are spread over as many rules as needed.
    """
    groups: list[list[Any]] = []
    for value in values:
        if groups and pattern_size(pattern([*groups[-1], value])) <= limit:
            groups[-1].append(value)
            continue
        if pattern_size(pattern([value])) > limit:
            raise ConfigurationTooLarge(
                f"the event pattern for {value!r} alone exceeds EventBridge's {limit}-character limit"
            )
        groups.append([value])
    return groups
