"""The pipeline's Lambda functions: one per handler, each with its own least-privilege role.

Why one role per function: the IAM audit (tests/infra) proves the pipeline is read-only by
reading each role; a shared role would give the trigger the collector's StartSession and the
collector the publisher's sns:Publish. Grants follow the pipeline contract, handler by handler.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import (
    ArnFormat,
    AssetHashType,
    BundlingOptions,
    ILocalBundling,
    RemovalPolicy,
    Stack,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import lambda_defaults as defaults
from infra.config import DeployConfig
from infra.constructs import acknowledge
from infra.constructs.cluster_config import check_environment
from infra.constructs.storage import NCCL_PREFIX, REPORTS_PREFIX

#: Why `Resource: *` is unavoidable for these actions (the IAM audit reads the same list).
UNSCOPED_ACTION_REASONS: dict[str, str] = {
    "xray:PutTraceSegments": "X-Ray trace ingestion has no resource-level permissions",
    "xray:PutTelemetryRecords": "X-Ray telemetry ingestion has no resource-level permissions",
    "cloudwatch:GetMetricData": "GetMetricData supports no resource-level permissions",
    "fsx:DescribeFileSystems": "FSx Describe* actions support no resource-level scoping",
    "ssmmessages:OpenDataChannel": "ssmmessages data-channel actions support no resource-level scoping",
}


CLUSTER_WILDCARD = "Resource::arn:<AWS::Partition>:sagemaker:<AWS::Region>:<AWS::AccountId>:cluster/*"

#: Roles that need more than the X-Ray writes on `Resource: *`.
UNSCOPED_EXTRA: dict[str, tuple[str, ...]] = {
    "collect_node": ("ssmmessages:OpenDataChannel",),
    "fsx_metrics": ("fsx:DescribeFileSystems", "cloudwatch:GetMetricData"),
}


@jsii.implements(ILocalBundling)
class PipTargetBundler:
    """Builds the dependencies layer with the local pip (no Docker): wheels for Lambda arm64/3.12."""

    def __init__(
        self,
        requirements: tuple[str, ...],
        runner: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
    ) -> None:
        self._requirements = requirements
        self._run = runner

    def command(self, output_dir: str) -> list[str]:
        """`pip install --target <out>/python` for the Lambda platform, wheels only (no compiling)."""
        return [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-compile",
            "--target",
            str(Path(output_dir) / "python"),
            "--platform",
            defaults.LAYER_PIP_PLATFORM,
            "--implementation",
            "cp",
            "--python-version",
            defaults.LAYER_PYTHON_VERSION,
            "--only-binary=:all:",
            *self._requirements,
        ]

    def try_bundle(self, output_dir: str, options: Any = None) -> bool:
        command = self.command(output_dir)
        result = self._run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(
                f"building the dependencies layer failed: {' '.join(command)}\n{result.stderr}"
            )
        return True


def dependencies_layer(scope: Construct) -> lambda_.LayerVersion:
    requirements = defaults.LAYER_REQUIREMENTS
    return lambda_.LayerVersion(
        scope,
        "DependenciesLayer",
        description="hyperpod-perf runtime dependencies the Powertools layer lacks: "
        + ", ".join(requirements),
        compatible_runtimes=[defaults.RUNTIME],
        compatible_architectures=[defaults.ARCHITECTURE],
        code=lambda_.Code.from_asset(
            str(Path(__file__).parent),
            asset_hash_type=AssetHashType.CUSTOM,
            asset_hash="|".join(
                (*requirements, defaults.LAYER_PIP_PLATFORM, defaults.LAYER_PYTHON_VERSION, "v1")
            ),
            bundling=BundlingOptions(
                image=defaults.RUNTIME.bundling_image,
                local=PipTargetBundler(requirements),
                # Only used where local bundling is impossible and a Docker daemon exists.
                command=[
                    "bash",
                    "-c",
                    "pip install --no-compile --target /asset-output/python " + " ".join(requirements),
                ],
            ),
        ),
        removal_policy=RemovalPolicy.DESTROY,
    )


@dataclass
class FunctionFactory:
    """Creates functions that share the code asset, the layers and the common settings."""

    scope: Construct
    functions_dir: Path
    environment: dict[str, str]
    _code: lambda_.Code | None = None
    _layers: list[lambda_.ILayerVersion] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._code = lambda_.Code.from_asset(
            str(self.functions_dir), exclude=list(defaults.CODE_ASSET_EXCLUDES)
        )
        powertools = lambda_.LayerVersion.from_layer_version_arn(
            self.scope, "PowertoolsLayer", defaults.powertools_layer_arn(Stack.of(self.scope).region)
        )
        self._layers = [powertools, dependencies_layer(self.scope)]

    def create(
        self,
        scope: Construct,
        module: str,
        extra_environment: dict[str, str] | None = None,
        dead_letter_queue: sqs.IQueue | None = None,
    ) -> tuple[lambda_.Function, iam.Role]:
        sizing = defaults.FUNCTION_SIZING[module]
        construct_id = "".join(part.title() for part in module.split("_"))
        role = iam.Role(
            scope,
            f"{construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"hyperpod-perf {module}: least privilege, read-only against the cluster",
        )
        log_group = logs.LogGroup(
            scope,
            f"{construct_id}Logs",
            retention=defaults.LOG_RETENTION,
            removal_policy=RemovalPolicy.DESTROY,
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="OwnLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[log_group.log_group_arn],
            )
        )
        environment = {**self.environment, **(extra_environment or {})}
        check_environment(module, environment)
        function = lambda_.Function(
            scope,
            construct_id,
            description=f"hyperpod-perf {module}",
            runtime=defaults.RUNTIME,
            architecture=defaults.ARCHITECTURE,
            handler=defaults.handler_entry(module),
            code=self._code,
            layers=self._layers,
            memory_size=sizing.memory_mb,
            timeout=sizing.timeout,
            role=role,
            log_group=log_group,
            logging_format=defaults.LOGGING_FORMAT,
            application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
            system_log_level_v2=lambda_.SystemLogLevel.WARN,
            tracing=defaults.TRACING,
            environment=environment,
            dead_letter_queue=dead_letter_queue,
        )
        acknowledge(
            function,
            "AwsSolutions-L1",
            "Pinned to Python 3.12 on purpose: the AWS-managed Powertools v3 layer "
            "(python312-arm64) and the dependencies layer are built for exactly this runtime.",
        )
        return function, role


def suppress_unscoped(role: iam.Role, extra_actions: tuple[str, ...] = ()) -> None:
    """Acknowledge `Resource: *` on a role, naming the actions and why AWS cannot scope them.

    Active tracing gives every role the two X-Ray writes; some roles add their own unscoped reads.
    """
    actions = ["xray:PutTraceSegments", "xray:PutTelemetryRecords", *extra_actions]
    reasons = "; ".join(f"{a}: {UNSCOPED_ACTION_REASONS[a]}" for a in actions)
    acknowledge(
        role,
        "AwsSolutions-IAM5",
        f"Resource * only for actions AWS does not scope ({reasons}).",
        ["Resource::*"],
    )


def s3_statements(
    bucket: s3.IBucket,
    *,
    get: bool = False,
    put: bool = False,
    list_: bool = False,
    prefix: str = REPORTS_PREFIX,
) -> list[iam.PolicyStatement]:
    statements: list[iam.PolicyStatement] = []
    object_actions = [a for a, on in (("s3:GetObject", get), ("s3:PutObject", put)) if on]
    if object_actions:
        statements.append(
            iam.PolicyStatement(actions=object_actions, resources=[bucket.arn_for_objects(f"{prefix}*")])
        )
    if list_:
        statements.append(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
            )
        )
    return statements


def suppress_prefix_wildcard(role: iam.Role, bucket: s3.IBucket, prefixes: list[str]) -> None:
    acknowledge(
        role,
        "AwsSolutions-IAM5",
        "Object keys are created per run (reports/<cluster>/<time>-<execution>/...), so "
        "access is scoped to the project's own bucket and key prefix, not to fixed keys.",
        [
            f"Resource::<{Stack.of(role).get_logical_id(bucket.node.default_child)}.Arn>/{p}*"
            for p in prefixes
        ],
    )


class PipelineFunctions(Construct):
    """The ten functions the state machine invokes (the trigger lives with the triggers)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        factory: FunctionFactory,
        config: DeployConfig,
        bucket: s3.Bucket,
        topic: sns.Topic,
        topic_key: kms.Key,
        document_arn: str,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.functions: dict[str, lambda_.Function] = {}
        self.roles: dict[str, iam.Role] = {}
        for module in defaults.HANDLER_MODULES:
            if module == "trigger":
                continue
            self.functions[module], self.roles[module] = factory.create(self, module)
        roles = self.roles
        cluster_arns = [stack.format_arn(service="sagemaker", resource="cluster", resource_name="*")]

        # validate: logs only.

        # resolve_cluster: read the cluster and its nodes; write the target list for the Map.
        roles["resolve_cluster"].add_to_policy(
            iam.PolicyStatement(
                actions=[
                    "sagemaker:DescribeCluster",
                    "sagemaker:ListClusterNodes",
                    "sagemaker:DescribeClusterNode",
                ],
                resources=cluster_arns,
            )
        )
        _add(roles["resolve_cluster"], s3_statements(bucket, put=True))
        acknowledge(
            roles["resolve_cluster"],
            "AwsSolutions-IAM5",
            "Read-only Describe/List on the account's HyperPod clusters: which cluster to diagnose "
            "arrives at run time (an alarm, an event or an operator's request).",
            [CLUSTER_WILDCARD],
        )

        # collect_node: StartSession only with this project's document, on HyperPod targets.
        document_check = {"BoolIfExists": {"ssm:SessionDocumentAccessCheck": "true"}}
        if config.any_session_target:
            # `"*"` of AWS's HyperPod guide, for targets only: a plain Resource * would also allow
            # every Session document (an interactive shell among them). Two statements instead:
            # StartSession on anything that is not a Session document, and on this document.
            roles["collect_node"].add_to_policy(
                iam.PolicyStatement(
                    sid="StartCollectorSessionOnly",
                    actions=["ssm:StartSession"],
                    resources=[document_arn],
                    conditions=document_check,
                )
            )
            roles["collect_node"].add_to_policy(
                iam.PolicyStatement(
                    sid="StartSessionOnAnyTarget",
                    actions=["ssm:StartSession"],
                    not_resources=any_session_document_arns(stack),
                    conditions=document_check,
                )
            )
        else:
            session_targets = list(config.session_target_resource_arns) or cluster_arns
            roles["collect_node"].add_to_policy(
                iam.PolicyStatement(
                    sid="StartCollectorSessionOnly",
                    actions=["ssm:StartSession"],
                    resources=[document_arn, *session_targets],
                    conditions=document_check,
                )
            )
        roles["collect_node"].add_to_policy(
            iam.PolicyStatement(
                actions=["ssm:TerminateSession"],
                resources=[stack.format_arn(service="ssm", resource="session", resource_name="*")],
            )
        )
        roles["collect_node"].add_to_policy(
            iam.PolicyStatement(actions=["ssmmessages:OpenDataChannel"], resources=["*"])
        )
        # list: a retried batch skips the nodes that already have a result
        _add(roles["collect_node"], s3_statements(bucket, get=True, put=True, list_=True))
        session_wildcards = [
            CLUSTER_WILDCARD,
            "Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:session/*",
        ]
        configured_wildcards = [
            f"Resource::{a}"
            for a in config.session_target_resource_arns
            if "*" in a and not config.any_session_target
        ]
        acknowledge(
            roles["collect_node"],
            "AwsSolutions-IAM5",
            "HyperPod nodes are created and replaced by the service, so StartSession targets "
            "any node of the account's clusters (the document is pinned by ARN and "
            "ssm:SessionDocumentAccessCheck); TerminateSession acts on the sessions the function "
            "itself started, whose ids are only known at run time.",
            [*session_wildcards, *configured_wildcards],
        )

        # record_node_failure: write the collect.node finding of each node of a failed batch that
        # has no result yet (list: which ones).
        _add(roles["record_node_failure"], s3_statements(bucket, put=True, list_=True))

        # fsx_metrics: describe file systems, read their metrics, read/write the run's files.
        roles["fsx_metrics"].add_to_policy(
            iam.PolicyStatement(
                actions=["fsx:DescribeFileSystems", "cloudwatch:GetMetricData"], resources=["*"]
            )
        )
        _add(roles["fsx_metrics"], s3_statements(bucket, get=True, put=True, list_=True))

        # cluster_logs: deep health check and HMA records of the clusters' log groups.
        roles["cluster_logs"].add_to_policy(
            iam.PolicyStatement(
                actions=["logs:FilterLogEvents"],
                resources=[
                    stack.format_arn(
                        service="logs",
                        resource="log-group",
                        resource_name="/aws/sagemaker/Clusters/*",
                        arn_format=ArnFormat.COLON_RESOURCE_NAME,
                    )
                ],
            )
        )
        _add(roles["cluster_logs"], s3_statements(bucket, put=True))
        acknowledge(
            roles["cluster_logs"],
            "AwsSolutions-IAM5",
            "HyperPod names each cluster's log group /aws/sagemaker/Clusters/<name>/<id>; the "
            "id is only known at run time, so the grant is the HyperPod log-group prefix (read only).",
            [
                "Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:"
                "/aws/sagemaker/Clusters/*"
            ],
        )

        # nccl_results: read uploaded nccl-tests logs; write the parsed pairs.
        nccl = roles["nccl_results"]
        _add(nccl, s3_statements(bucket, put=True))
        if config.nccl_result_buckets:
            nccl_wildcards: list[str] = []
            for entry in config.nccl_result_buckets:
                name, _, prefix = entry.partition("/")
                prefix = prefix.rstrip("/") + "/" if prefix else ""
                nccl.add_to_policy(
                    iam.PolicyStatement(
                        actions=["s3:GetObject"],
                        resources=[f"arn:{stack.partition}:s3:::{name}/{prefix}*"],
                    )
                )
                nccl.add_to_policy(
                    iam.PolicyStatement(
                        actions=["s3:ListBucket"],
                        resources=[f"arn:{stack.partition}:s3:::{name}"],
                        conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
                    )
                )
                nccl_wildcards.append(f"Resource::arn:<AWS::Partition>:s3:::{name}/{prefix}*")
            acknowledge(
                nccl,
                "AwsSolutions-IAM5",
                "Read-only access to the operator-configured ncclResultBuckets prefixes, "
                "where nccl-tests logs are uploaded under names chosen at upload time.",
                nccl_wildcards,
            )
        else:
            _add(nccl, s3_statements(bucket, get=True, list_=True, prefix=NCCL_PREFIX))
        # ... and the training job's own logs in the operator-listed CloudWatch Logs groups (read only).
        if config.job_log_groups:
            nccl.add_to_policy(
                iam.PolicyStatement(
                    actions=["logs:FilterLogEvents"],
                    resources=[
                        stack.format_arn(
                            service="logs",
                            resource="log-group",
                            resource_name=group,
                            arn_format=ArnFormat.COLON_RESOURCE_NAME,
                        )
                        for group in config.job_log_groups
                    ],
                )
            )
            group_wildcards = [
                f"Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:{group}"
                for group in config.job_log_groups
                if "*" in group
            ]
            if group_wildcards:
                acknowledge(
                    nccl,
                    "AwsSolutions-IAM5",
                    "Read-only FilterLogEvents on the operator-configured jobLogGroups prefixes, where the "
                    "training jobs' output streams are created by the job under names chosen at run time.",
                    group_wildcards,
                )

        # evaluate: read the run's snapshots and findings, write the report model.
        _add(roles["evaluate"], s3_statements(bucket, get=True, put=True, list_=True))

        # publish and report_problem: write the report, publish one message to the own topic.
        _add(roles["publish"], s3_statements(bucket, get=True, put=True, list_=True))
        _add(roles["report_problem"], s3_statements(bucket, put=True))
        for module in ("publish", "report_problem"):
            roles[module].add_to_policy(
                iam.PolicyStatement(actions=["sns:Publish"], resources=[topic.topic_arn])
            )
            roles[module].add_to_policy(
                iam.PolicyStatement(
                    actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=[topic_key.key_arn]
                )
            )

        prefixes = {
            "resolve_cluster": [REPORTS_PREFIX],
            "collect_node": [REPORTS_PREFIX],
            "record_node_failure": [REPORTS_PREFIX],
            "fsx_metrics": [REPORTS_PREFIX],
            "cluster_logs": [REPORTS_PREFIX],
            "nccl_results": [REPORTS_PREFIX] + ([] if config.nccl_result_buckets else [NCCL_PREFIX]),
            "evaluate": [REPORTS_PREFIX],
            "publish": [REPORTS_PREFIX],
            "report_problem": [REPORTS_PREFIX],
        }
        for module, role in roles.items():
            if module in prefixes:
                suppress_prefix_wildcard(role, bucket, prefixes[module])
            suppress_unscoped(role, UNSCOPED_EXTRA.get(module, ()))


def any_session_document_arns(stack: Stack) -> list[str]:
    """Every Session document: the account's own (`…:<account>:document/…`) and AWS's (no account)."""
    return [
        f"arn:{stack.partition}:ssm:*:*:document/*",
        f"arn:{stack.partition}:ssm:*::document/*",
    ]


def _add(role: iam.Role, statements: list[iam.PolicyStatement]) -> None:
    for statement in statements:
        role.add_to_policy(statement)
