"""The pipeline's Lambda functions: one per handler, each with its own least-privilege role.

Why one role per function: the IAM audit (tests/infra) proves the pipeline is read-only by
reading each role; a shared role would give the trigger the collector's StartSession and the
collector the publisher's sns:Publish. Grants follow the pipeline contract, handler by handler.
"""

from __future__ import annotations

# bandit B404: local bundling runs pip, fixed argv
import subprocess  # nosec B404
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import (
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

from infra import code_asset
from infra import lambda_defaults as defaults
from infra.config import DeployConfig
from infra.constructs import (
    CHECKOV_FUNCTION_REASONS,
    CHECKOV_LOG_GROUP_REASON,
    CHECKOV_SYNC_FUNCTION_REASONS,
    acknowledge,
    acknowledge_checkov,
)
from infra.constructs.cluster_config import check_environment
from infra.constructs.permissions import (
    Grant,
    GrantContext,
    collector_session,
    describe_cluster_nodes,
    get_job_log_objects,
    list_job_log_objects,
    own_bucket,
    publish_to_topic,
    query_metrics,
    read_cluster_logs,
    read_clusters,
    read_fsx_metrics,
    read_history,
    read_instance_topology,
    read_job_logs,
    read_kubernetes_topology,
    read_nccl_logs,
    write_history,
)

#: Why `Resource: *` is unavoidable for these actions (the IAM audit reads the same list).
UNSCOPED_ACTION_REASONS: dict[str, str] = {
    "xray:PutTraceSegments": "X-Ray trace ingestion has no resource-level permissions",
    "xray:PutTelemetryRecords": "X-Ray telemetry ingestion has no resource-level permissions",
    "cloudwatch:GetMetricData": "GetMetricData supports no resource-level permissions",
    "fsx:DescribeFileSystems": "FSx Describe* actions support no resource-level scoping",
    "ssmmessages:OpenDataChannel": "ssmmessages data-channel actions support no resource-level scoping",
    "logs:GetQueryResults": "GetQueryResults takes only a query id: no resource-level permissions",
    "ec2:DescribeInstanceTopology": "ec2:DescribeInstanceTopology (like EC2 Describe*) supports no "
    "resource-level permissions: the Service Authorization Reference lists no resource type for it",
}

#: Roles that need more than the X-Ray writes on `Resource: *`.
UNSCOPED_EXTRA: dict[str, tuple[str, ...]] = {
    "collect_node": ("ssmmessages:OpenDataChannel",),
    "fsx_metrics": ("fsx:DescribeFileSystems", "cloudwatch:GetMetricData"),
    "resolve_cluster": ("ec2:DescribeInstanceTopology",),
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


@jsii.implements(ILocalBundling)
class CodeAssetBundler:
    """Builds the functions' code asset locally (no Docker): the package minus CODE_ASSET_EXCLUDES,
    with bytecode compiled by a Python of the runtime's version where one is installed
    (infra/code_asset.py says why)."""

    def __init__(
        self,
        source: Path,
        find_python: Callable[[str], str | None] = code_asset.runtime_python,
        runner: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
    ) -> None:
        self._source = source
        self._find_python = find_python
        self._run = runner

    def try_bundle(self, output_dir: str, options: Any = None) -> bool:
        python = self._find_python(defaults.LAYER_PYTHON_VERSION)
        compiled = code_asset.build_code_asset(
            self._source, Path(output_dir), defaults.CODE_ASSET_EXCLUDES, python, run=self._run
        )
        if not compiled:
            print(
                f"note: no Python {defaults.LAYER_PYTHON_VERSION} found: the code asset ships without "
                "bytecode (each cold start compiles the modules it imports)",
                file=sys.stderr,
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
            str(self.functions_dir),
            exclude=list(defaults.CODE_ASSET_EXCLUDES),
            bundling=BundlingOptions(
                image=defaults.RUNTIME.bundling_image,
                local=CodeAssetBundler(self.functions_dir),
                # Never used: the local bundler always builds the asset (source only at worst).
                command=["bash", "-c", "cp -r /asset-input/. /asset-output/"],
            ),
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
        for check, reason in CHECKOV_FUNCTION_REASONS.items():
            acknowledge_checkov(function, check, reason)
        acknowledge_checkov(log_group, "CKV_AWS_158", CHECKOV_LOG_GROUP_REASON)
        if dead_letter_queue is None:
            for check, reason in CHECKOV_SYNC_FUNCTION_REASONS.items():
                acknowledge_checkov(function, check, reason)
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


@dataclass(frozen=True)
class FunctionSpec:
    """One function the state machine invokes and what its role may do, grant by grant."""

    module: str
    grants: tuple[Grant, ...] = ()


#: The functions the state machine invokes (the trigger lives with the triggers), in the order of
#: `lambda_defaults.HANDLER_MODULES`, each with its grants: the pipeline contract, handler by handler.
PIPELINE_FUNCTIONS: tuple[FunctionSpec, ...] = (
    FunctionSpec("validate"),  # logs only
    # read the cluster and list its nodes; write the target list for the Map
    FunctionSpec(
        "resolve_cluster",
        (read_clusters, own_bucket(put=True), read_instance_topology, read_kubernetes_topology),
    ),
    # list: a retried batch skips the nodes that already have a result
    FunctionSpec("collect_node", (collector_session, own_bucket(get=True, put=True, list_=True))),
    # the collect.node finding of each node of a failed batch that has no result yet (list: which)
    FunctionSpec("record_node_failure", (own_bucket(put=True, list_=True),)),
    FunctionSpec("fsx_metrics", (read_fsx_metrics, own_bucket(get=True, put=True, list_=True))),
    # read the cluster file, write the verdict; query the configured AMP workspaces only
    FunctionSpec("cluster_metrics", (own_bucket(get=True, put=True), query_metrics)),
    FunctionSpec("cluster_logs", (read_cluster_logs, own_bucket(put=True))),
    # read the cluster file, describe each target's placement, write it
    FunctionSpec("node_placement", (describe_cluster_nodes, own_bucket(get=True, put=True))),
    # list the job-log prefix (ListBucket only) and write the job-log map's batches
    FunctionSpec("plan_job_logs", (own_bucket(put=True), list_job_log_objects)),
    # read one batch's job-log objects (GetObject only); read the cluster file, write its part
    FunctionSpec("scan_job_logs", (own_bucket(get=True, put=True), get_job_log_objects)),
    # write the parsed pairs; read the uploaded nccl-tests logs, the job-log map's parts and the
    # training job's own log groups
    FunctionSpec("nccl_results", (own_bucket(get=True, put=True, list_=True), read_nccl_logs, read_job_logs)),
    # read the run's snapshots and findings, write the report model
    FunctionSpec("evaluate", (own_bucket(get=True, put=True, list_=True), write_history)),
    # the repeat offenders and the before/after read the run history
    FunctionSpec("publish", (own_bucket(get=True, put=True, list_=True), read_history, publish_to_topic)),
    FunctionSpec("report_problem", (own_bucket(put=True), publish_to_topic)),
)


def topology_environment(scope: Construct, module: str, config: DeployConfig) -> dict[str, str] | None:
    """ResolveCluster learns which clusters opt in to the Kubernetes topology read from the
    clusters' parameters (only when one does; see permissions.read_kubernetes_topology)."""
    from infra.constructs.cluster_config import parameters_path

    if module != "resolve_cluster" or not any(c.kubernetes_topology for c in config.clusters):
        return None
    return {"CLUSTERS_PARAMETER_PATH": parameters_path(Stack.of(scope))}


class PipelineFunctions(Construct):
    """The functions of `PIPELINE_FUNCTIONS`, each with its own role and exactly its grants."""

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
        context = GrantContext(self, config, bucket, topic, topic_key, document_arn)
        self.functions: dict[str, lambda_.Function] = {}
        self.roles: dict[str, iam.Role] = {}
        for spec in PIPELINE_FUNCTIONS:
            extra = topology_environment(self, spec.module, config)
            function, role = factory.create(self, spec.module, extra)
            self.functions[spec.module], self.roles[spec.module] = function, role
            prefixes = [prefix for grant in spec.grants for prefix in grant(role, context)]
            if prefixes:
                suppress_prefix_wildcard(role, bucket, prefixes)
            extra = UNSCOPED_EXTRA.get(spec.module, ())
            if spec.module == "nccl_results" and config.job_log_groups:  # Logs Insights results
                extra = (*extra, "logs:GetQueryResults")
            suppress_unscoped(role, extra)
