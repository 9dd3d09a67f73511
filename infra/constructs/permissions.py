"""Named IAM grants for the pipeline's functions: each one capability, its statements, its reasons.

Why small named builders: the table in `infra/constructs/functions.py` reads as "which function may
do what" (`bucket(put=True)`, `start_collector_session`, `publish_to_topic`), while the statement
details and the cdk-nag acknowledgement of each unavoidable wildcard stay beside the grant that
needs them. A grant returns the prefixes of the project's own bucket it opened with a key wildcard,
so the caller acknowledges them once per role.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aws_cdk import Annotations, ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct

from hyperpod_perf.domain.layout import HISTORY_PREFIX
from infra.config import DeployConfig
from infra.constructs import acknowledge
from infra.constructs.storage import NCCL_PREFIX, REPORTS_PREFIX

CLUSTER_WILDCARD = "Resource::arn:<AWS::Partition>:sagemaker:<AWS::Region>:<AWS::AccountId>:cluster/*"
#: The tag Session Manager puts on every session: the aws:userid of the principal that started it
#: (AWS Systems Manager User Guide, "Allow users to end only sessions they started", method 2).
OWN_SESSION_TAG = "ssm:resourceTag/aws:ssmmessages:session-id"


@dataclass(frozen=True)
class GrantContext:
    """What the grants refer to: the stack's configuration and the resources the functions use."""

    scope: Construct
    config: DeployConfig
    bucket: s3.IBucket
    topic: sns.ITopic
    topic_key: kms.IKey
    document_arn: str

    @property
    def stack(self) -> Stack:
        return Stack.of(self.scope)

    @property
    def cluster_arns(self) -> list[str]:
        return [self.stack.format_arn(service="sagemaker", resource="cluster", resource_name="*")]

    @property
    def session_cluster_arns(self) -> list[str]:
        """The clusters StartSession may reach: the configured ones when each has its `id`, else
        (ids unknown, or no cluster configured) every cluster of the account, with a synth warning."""
        clusters = self.config.clusters
        if clusters and all(c.id for c in clusters):
            return [
                self.stack.format_arn(service="sagemaker", resource="cluster", resource_name=str(c.id))
                for c in clusters
            ]
        return self.cluster_arns


#: A grant adds its statements to a role and returns the own-bucket prefixes it opened.
Grant = Callable[[iam.Role, GrantContext], list[str]]


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


def own_bucket(*, get: bool = False, put: bool = False, list_: bool = False) -> Grant:
    """Objects of the run under `reports/` in the project's bucket (list: which ones exist)."""

    def grant(role: iam.Role, ctx: GrantContext) -> list[str]:
        _add(role, s3_statements(ctx.bucket, get=get, put=put, list_=list_))
        return [REPORTS_PREFIX]

    return grant


def write_history(role: iam.Role, ctx: GrantContext) -> list[str]:
    """Evaluate: PutObject of the run's history rows, under `history/` only (no read, no list)."""
    _add(role, s3_statements(ctx.bucket, put=True, prefix=HISTORY_PREFIX))
    return [HISTORY_PREFIX]


def read_history(role: iam.Role, ctx: GrantContext) -> list[str]:
    """Publish: the look-back of the run history (repeat offenders, the before/after), read only."""
    _add(role, s3_statements(ctx.bucket, get=True, list_=True, prefix=HISTORY_PREFIX))
    return [HISTORY_PREFIX]


def read_clusters(role: iam.Role, ctx: GrantContext) -> list[str]:
    """ResolveCluster: describe the cluster and list its nodes, on the account's HyperPod clusters."""
    return _on_clusters(role, ctx, "sagemaker:DescribeCluster", "sagemaker:ListClusterNodes")


def describe_cluster_nodes(role: iam.Role, ctx: GrantContext) -> list[str]:
    """NodePlacement: describe each node (its placement and address), nothing else."""
    return _on_clusters(role, ctx, "sagemaker:DescribeClusterNode")


def _on_clusters(role: iam.Role, ctx: GrantContext, *actions: str) -> list[str]:
    role.add_to_policy(iam.PolicyStatement(actions=list(actions), resources=ctx.cluster_arns))
    acknowledge(
        role,
        "AwsSolutions-IAM5",
        "Read-only Describe/List on the account's HyperPod clusters: which cluster to diagnose "
        "arrives at run time (an alarm, an event or an operator's request).",
        [CLUSTER_WILDCARD],
    )
    return []


def collector_session(role: iam.Role, ctx: GrantContext) -> list[str]:
    """StartSession only with this project's document, on HyperPod targets; end it; its data channel."""
    config = ctx.config
    document_check = {"BoolIfExists": {"ssm:SessionDocumentAccessCheck": "true"}}
    if config.any_session_target:
        # `"*"` of AWS's HyperPod guide, for targets only: a plain Resource * would also allow
        # every Session document (an interactive shell among them). Two statements instead:
        # StartSession on anything that is not a Session document, and on this document.
        role.add_to_policy(
            iam.PolicyStatement(
                sid="StartCollectorSessionOnly",
                actions=["ssm:StartSession"],
                resources=[ctx.document_arn],
                conditions=document_check,
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="StartSessionOnAnyTarget",
                actions=["ssm:StartSession"],
                not_resources=any_session_document_arns(ctx.stack),
                conditions=document_check,
            )
        )
        Annotations.of(role).add_warning_v2(
            "hyperpod-perf:any-session-target",
            'sessionTargetResourceArns ["*"]: StartSession may reach every SSM target of every '
            "account and region with this project's Session document (weaker than the default; "
            "see docs/SECURITY.md)",
        )
    else:
        session_targets = list(config.session_target_resource_arns) or ctx.session_cluster_arns
        if session_targets == ctx.cluster_arns:
            Annotations.of(role).add_warning_v2(
                "hyperpod-perf:session-targets-account-wide",
                "StartSession may reach the nodes of every HyperPod cluster of the account: give "
                "each configured cluster its `id` to limit it to those clusters",
            )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="StartCollectorSessionOnly",
                actions=["ssm:StartSession"],
                resources=[ctx.document_arn, *session_targets],
                conditions=document_check,
            )
        )
    # Session Manager tags every session with `aws:ssmmessages:session-id` = the starter's
    # aws:userid (`role-id:role-session-name`): this role ends the sessions it started, no other.
    role.add_to_policy(
        iam.PolicyStatement(
            sid="TerminateOwnSessionsOnly",
            actions=["ssm:TerminateSession"],
            resources=[ctx.stack.format_arn(service="ssm", resource="session", resource_name="*")],
            conditions={"StringLike": {OWN_SESSION_TAG: ["${aws:userid}"]}},
        )
    )
    role.add_to_policy(iam.PolicyStatement(actions=["ssmmessages:OpenDataChannel"], resources=["*"]))
    session_wildcards = [
        "Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:session/*",
    ]
    if not config.any_session_target and ctx.session_cluster_arns == ctx.cluster_arns:
        session_wildcards.insert(0, CLUSTER_WILDCARD)
    configured_wildcards = [
        f"Resource::{a}"
        for a in config.session_target_resource_arns
        if "*" in a and not config.any_session_target
    ]
    acknowledge(
        role,
        "AwsSolutions-IAM5",
        "HyperPod nodes are created and replaced by the service, so StartSession targets any "
        "node of the configured clusters (of the account's clusters when their ids are not "
        "configured; the document is pinned by ARN and ssm:SessionDocumentAccessCheck); "
        "TerminateSession acts only on sessions tagged with this role's own aws:userid, whose "
        "ids are only known at run time.",
        [*session_wildcards, *configured_wildcards],
    )
    return []


def read_fsx_metrics(role: iam.Role, ctx: GrantContext) -> list[str]:
    """Describe the file systems and read their CloudWatch metrics (neither can be scoped)."""
    role.add_to_policy(
        iam.PolicyStatement(actions=["fsx:DescribeFileSystems", "cloudwatch:GetMetricData"], resources=["*"])
    )
    return []


#: What a range query needs on an AMP workspace (the AMP User Guide's query policy lists these four;
#: query_range is authorized as aps:QueryMetrics).
AMP_QUERY_ACTIONS = ("aps:QueryMetrics", "aps:GetLabels", "aps:GetSeries", "aps:GetMetricMetadata")


def query_metrics(role: iam.Role, ctx: GrantContext) -> list[str]:
    """Query the configured clusters' AMP workspaces, each by its ARN; none configured: no grant."""
    workspaces = sorted({c.prometheus_workspace_id for c in ctx.config.clusters if c.prometheus_workspace_id})
    if workspaces:
        role.add_to_policy(
            iam.PolicyStatement(
                actions=list(AMP_QUERY_ACTIONS),
                resources=[
                    ctx.stack.format_arn(service="aps", resource="workspace", resource_name=w)
                    for w in workspaces
                ],
            )
        )
    return []


def read_cluster_logs(role: iam.Role, ctx: GrantContext) -> list[str]:
    """Deep health check and HMA records of the clusters' log groups."""
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["logs:FilterLogEvents"],
            resources=[
                ctx.stack.format_arn(
                    service="logs",
                    resource="log-group",
                    resource_name="/aws/sagemaker/Clusters/*",
                    arn_format=ArnFormat.COLON_RESOURCE_NAME,
                )
            ],
        )
    )
    acknowledge(
        role,
        "AwsSolutions-IAM5",
        "HyperPod names each cluster's log group /aws/sagemaker/Clusters/<name>/<id>; the "
        "id is only known at run time, so the grant is the HyperPod log-group prefix (read only).",
        [
            "Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:"
            "/aws/sagemaker/Clusters/*"
        ],
    )
    return []


def readable_s3_prefixes(config: DeployConfig, bucket: s3.IBucket) -> list[str]:
    """`bucket/` or `bucket/prefix/` entries the NCCL step may read: ValidateRequest refuses an
    s3:// prefix outside them (READABLE_S3_PREFIXES), read_nccl_logs grants exactly them."""
    if not config.nccl_result_buckets:
        return [f"{bucket.bucket_name}/{NCCL_PREFIX}"]
    return [f"{name}/{prefix}" for name, prefix in _nccl_buckets(config)]


def _nccl_buckets(config: DeployConfig) -> list[tuple[str, str]]:
    """(bucket, key prefix ending in `/` or empty) for each ncclResultBuckets entry."""
    pairs = []
    for entry in config.nccl_result_buckets:
        name, _, prefix = entry.partition("/")
        pairs.append((name, prefix.rstrip("/") + "/" if prefix.strip("/") else ""))
    return pairs


def _uploaded_logs(role: iam.Role, ctx: GrantContext, *, get: bool, list_: bool) -> list[str]:
    """Objects under the operator's ncclResultBuckets prefixes (or `nccl/` of the own bucket),
    where nccl-tests logs and the training job's own logs are uploaded: GetObject and/or
    ListBucket, nothing else."""
    config, stack = ctx.config, ctx.stack
    if not config.nccl_result_buckets:
        _add(role, s3_statements(ctx.bucket, get=get, list_=list_, prefix=NCCL_PREFIX))
        return [NCCL_PREFIX] if get else []
    nccl_wildcards: list[str] = []
    for name, prefix in _nccl_buckets(config):
        if get:
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["s3:GetObject"],
                    resources=[f"arn:{stack.partition}:s3:::{name}/{prefix}*"],
                )
            )
            nccl_wildcards.append(f"Resource::arn:<AWS::Partition>:s3:::{name}/{prefix}*")
        if list_:
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["s3:ListBucket"],
                    resources=[f"arn:{stack.partition}:s3:::{name}"],
                    conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
                )
            )
    if nccl_wildcards:
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            "Read-only access to the operator-configured ncclResultBuckets prefixes, "
            "where nccl-tests logs are uploaded under names chosen at upload time.",
            nccl_wildcards,
        )
    return []


def read_nccl_logs(role: iam.Role, ctx: GrantContext) -> list[str]:
    """Uploaded nccl-tests (and job) logs: the operator's ncclResultBuckets, or `nccl/` of the own bucket."""
    return _uploaded_logs(role, ctx, get=True, list_=True)


def list_job_log_objects(role: iam.Role, ctx: GrantContext) -> list[str]:
    """PlanJobLogs: which job-log objects exist (ListBucket on the upload prefixes only)."""
    return _uploaded_logs(role, ctx, get=False, list_=True)


def get_job_log_objects(role: iam.Role, ctx: GrantContext) -> list[str]:
    """ScanJobLogs: read the objects of its batch (GetObject on the upload prefixes only)."""
    return _uploaded_logs(role, ctx, get=True, list_=False)


def read_job_logs(role: iam.Role, ctx: GrantContext) -> list[str]:
    """The training job's own logs in the operator-listed CloudWatch Logs groups (read only):
    FilterLogEvents, or a Logs Insights query (StartQuery on the same groups; GetQueryResults
    takes only the query id and AWS scopes it to no resource, so it is granted on `*`)."""
    groups = ctx.config.job_log_groups
    if not groups:
        return []
    role.add_to_policy(iam.PolicyStatement(actions=["logs:GetQueryResults"], resources=["*"]))
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["logs:FilterLogEvents", "logs:StartQuery"],
            resources=[
                ctx.stack.format_arn(
                    service="logs",
                    resource="log-group",
                    resource_name=group,
                    arn_format=ArnFormat.COLON_RESOURCE_NAME,
                )
                for group in groups
            ],
        )
    )
    group_wildcards = [
        f"Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:{group}"
        for group in groups
        if "*" in group
    ]
    if group_wildcards:
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            "Read-only FilterLogEvents / StartQuery on the operator-configured jobLogGroups prefixes, "
            "where the training jobs' output streams are created by the job under names chosen at run "
            "time.",
            group_wildcards,
        )
    return []


def publish_to_topic(role: iam.Role, ctx: GrantContext) -> list[str]:
    """One message to the project's own (KMS-encrypted) topic."""
    role.add_to_policy(iam.PolicyStatement(actions=["sns:Publish"], resources=[ctx.topic.topic_arn]))
    role.add_to_policy(
        iam.PolicyStatement(actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=[ctx.topic_key.key_arn])
    )
    return []


def any_session_document_arns(stack: Stack) -> list[str]:
    """Every Session document: the account's own (`…:<account>:document/…`) and AWS's (no account)."""
    return [
        f"arn:{stack.partition}:ssm:*:*:document/*",
        f"arn:{stack.partition}:ssm:*::document/*",
    ]


def _add(role: iam.Role, statements: list[iam.PolicyStatement]) -> None:
    for statement in statements:
        role.add_to_policy(statement)


# --- the nodes' network layers (ResolveCluster) --------------------------------------------------


def read_instance_topology(role: iam.Role, ctx: GrantContext) -> list[str]:
    """EC2 DescribeInstanceTopology: the network nodes above each instance, read-only."""
    # Resource * is acknowledged with the role's other unscoped actions (functions.UNSCOPED_EXTRA)
    role.add_to_policy(iam.PolicyStatement(actions=["ec2:DescribeInstanceTopology"], resources=["*"]))
    return []


def read_kubernetes_topology(role: iam.Role, ctx: GrantContext) -> list[str]:
    """The clusters that opt in (`kubernetesTopology`): eks:DescribeCluster on their EKS cluster
    (the API endpoint and CA; Kubernetes itself decides who may list nodes), and the clusters'
    configuration path, where ResolveCluster reads which clusters opted in."""
    from infra.constructs.cluster_config import parameters_path

    names = [c.kubernetes_topology.eks_cluster_name for c in ctx.config.clusters if c.kubernetes_topology]
    if not names:
        return []
    stack = ctx.stack
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["eks:DescribeCluster"],
            resources=[stack.format_arn(service="eks", resource="cluster", resource_name=n) for n in names],
        )
    )
    path = parameters_path(stack)
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["ssm:GetParametersByPath"],
            resources=[stack.format_arn(service="ssm", resource="parameter", resource_name=path[1:])],
        )
    )
    return []
