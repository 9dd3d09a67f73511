"""The clusters' configuration as SSM parameters, and the Lambda environment's size limit.

Why not the environment: AWS caps all of a function's environment variables at 4 KB together;
fifty clusters shaped like infra/example-context.json need ~20 KB, and CreateFunction fails at
about eleven. Each cluster gets one String parameter under one path (a standard parameter holds
4 KB, an advanced one 8 KB); the trigger reads the path once per cold start, and IAM grants
GetParametersByPath on that path only (it is authorized against the path, not the parameters).

Sizes are checked at synth time. Values CloudFormation fills in at deploy time (a generated
alarm name, a bucket name, an ARN) are counted at their upper bound, so a template that passes
here cannot exceed the limit when deployed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from aws_cdk import Annotations, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra.config import ClusterConfig, ConfigError

#: AWS Lambda: "the total size of all environment variables doesn't exceed 4 KB".
LAMBDA_ENVIRONMENT_LIMIT_BYTES = 4 * 1024
#: SSM Parameter Store: standard parameters hold up to 4 KB, advanced ones up to 8 KB.
STANDARD_PARAMETER_LIMIT_BYTES = 4 * 1024
ADVANCED_PARAMETER_LIMIT_BYTES = 8 * 1024
#: CloudWatch alarm names are at most 255 characters (a generated name is counted at that).
ALARM_NAME_MAX = 255
#: Any other deploy-time value (a bucket or document name, a topic or state machine ARN) counted
#: at this bound: ARNs of the names CloudFormation generates here stay well under it.
DEPLOY_TIME_VALUE_MAX = 320

_TOKEN = re.compile(r"\$\{Token\[[^\]]+\]\}")


class ConfigurationTooLarge(ConfigError):
    """A piece of configuration cannot fit the AWS limit that applies to it."""


def bounded_size(text: str, token_bound: int = DEPLOY_TIME_VALUE_MAX) -> int:
    """UTF-8 bytes of `text`, each deploy-time token counted at `token_bound` characters."""
    literal = _TOKEN.sub("", text)
    return len(literal.encode()) + token_bound * len(_TOKEN.findall(text))


def environment_size(environment: dict[str, str]) -> int:
    """Lambda's count: the bytes of every key and value together (deploy-time values at their bound)."""
    return sum(len(key.encode()) + bounded_size(value) for key, value in environment.items())


def check_environment(function: str, environment: dict[str, str]) -> int:
    """The environment's bounded size, or ConfigurationTooLarge naming the 4 KB limit."""
    size = environment_size(environment)
    if size > LAMBDA_ENVIRONMENT_LIMIT_BYTES:
        raise ConfigurationTooLarge(
            f"the environment of function {function} may reach {size} bytes; AWS Lambda allows "
            f"{LAMBDA_ENVIRONMENT_LIMIT_BYTES} bytes (4 KB) for all variables together"
        )
    return size


def cluster_document(cluster: ClusterConfig, alarm_names: list[str]) -> dict[str, Any]:
    """What the trigger reads for one cluster (hyperpod_perf.pipeline.triggers.ClusterTriggerConfig)."""
    document: dict[str, Any] = {
        "name": cluster.name,
        "alarmNames": [*cluster.alarm_names, *alarm_names],
        "alarmPrefixes": list(cluster.alarm_prefixes),
        "fsxIds": [fs.id for fs in cluster.fsx],
    }
    if cluster.kubernetes_topology is not None:  # ResolveCluster reads the EKS nodes' layer labels
        document["kubernetesTopology"] = True
    if cluster.prometheus_workspace_id:  # the metrics stage reads the cluster's AMP workspace
        document["prometheusWorkspaceId"] = cluster.prometheus_workspace_id
        document["deepCollect"] = cluster.deep_collect
    return document


def parameters_path(stack: Stack) -> str:
    """Where the clusters' parameters live (the trigger and ResolveCluster read them)."""
    return f"/hyperpod-perf/{stack.stack_name}/clusters"


def document_size(document: dict[str, Any]) -> int:
    """Bytes of the compact JSON, each generated alarm name counted at the 255-character maximum."""
    text = json.dumps(document, separators=(",", ":"))
    return bounded_size(text, ALARM_NAME_MAX)


class ClusterParameters(Construct):
    """One SSM String parameter per cluster under `/hyperpod-perf/<stack name>/clusters`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        clusters: tuple[ClusterConfig, ...],
        fsx_alarm_names: dict[str, list[str]],
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.path = parameters_path(stack)
        self.parameters: dict[str, ssm.StringParameter] = {}
        self.sizes: dict[str, int] = {}
        for cluster in clusters:
            document = cluster_document(cluster, fsx_alarm_names.get(cluster.name, []))
            size = document_size(document)
            if size > ADVANCED_PARAMETER_LIMIT_BYTES:
                raise ConfigurationTooLarge(
                    f"the configuration of cluster {cluster.name} may reach {size} bytes; an SSM "
                    f"parameter holds at most {ADVANCED_PARAMETER_LIMIT_BYTES} bytes (8 KB, advanced tier)"
                    " — split its alarms over alarmPrefixes"
                )
            advanced = size > STANDARD_PARAMETER_LIMIT_BYTES
            if advanced:
                Annotations.of(self).add_warning_v2(
                    "hyperpod-perf:advanced-parameter",
                    f"cluster {cluster.name}: configuration up to {size} bytes needs an advanced SSM "
                    "parameter (charged per parameter and month)",
                )
            self.sizes[cluster.name] = size
            self.parameters[cluster.name] = ssm.StringParameter(
                self,
                f"Cluster-{cluster.name}",
                parameter_name=f"{self.path}/{cluster.name}",
                string_value=stack.to_json_string(document),
                tier=ssm.ParameterTier.ADVANCED if advanced else ssm.ParameterTier.STANDARD,
                description=f"hyperpod-perf: alarms and file systems of cluster {cluster.name}",
            )

    def grant_read(self, role: iam.IRole) -> None:
        """GetParametersByPath on the path itself: what AWS authorizes that call against."""
        stack = Stack.of(self)
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["ssm:GetParametersByPath"],
                resources=[
                    stack.format_arn(service="ssm", resource="parameter", resource_name=self.path[1:])
                ],
            )
        )
