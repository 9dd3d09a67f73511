"""The diagnosis state machine, defined by statemachines/diagnose.asl.json.

Why the ASL file and not CDK's state classes: the same file runs in moto for the offline demo
and the state-machine tests, so what is tested is byte for byte what is deployed. CDK only fills
the `${...}` placeholders and grants what the definition uses.
"""

from __future__ import annotations

import re
from pathlib import Path

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from hyperpod_perf.domain.layout import MAP_RUNS_PREFIX
from hyperpod_perf.pipeline.tasks import TASK_FUNCTIONS
from infra import lambda_defaults as defaults
from infra.constructs import CHECKOV_LOG_GROUP_REASON, acknowledge, acknowledge_checkov
from infra.constructs.storage import REPORTS_PREFIX

PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")

#: What follows `execution:<state machine name>` in a child execution's ARN (see child_execution_arns).
CHILD_EXECUTION_SEPARATORS = ("/", ":")
#: Where the Distributed Map's ResultWriter puts each Map Run's results (its own folder each).
MAP_RESULTS_PREFIX = f"{MAP_RUNS_PREFIX}/"

#: ASL placeholder -> handler module whose function ARN fills it (the table the local run uses too).
FUNCTION_PLACEHOLDERS: dict[str, str] = TASK_FUNCTIONS


def placeholders(definition: str) -> set[str]:
    return set(PLACEHOLDER.findall(definition))


class DiagnoseWorkflow(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        definition_path: Path,
        functions: dict[str, lambda_.IFunction],
        bucket: s3.IBucket,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        definition = definition_path.read_text(encoding="utf-8")
        substitutions = {
            name: functions[module].function_arn for name, module in FUNCTION_PLACEHOLDERS.items()
        }
        substitutions["ReportBucketName"] = bucket.bucket_name
        missing = placeholders(definition) - substitutions.keys()
        unused = substitutions.keys() - placeholders(definition)
        if missing or unused:
            raise ValueError(
                f"ASL placeholders out of sync: missing {sorted(missing)}, unused {sorted(unused)}"
            )

        self.log_group = logs.LogGroup(
            self, "Logs", retention=defaults.LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
        )
        acknowledge_checkov(self.log_group, "CKV_AWS_158", CHECKOV_LOG_GROUP_REASON)
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_string(definition),
            definition_substitutions=substitutions,
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=self.log_group,
                level=sfn.LogLevel.ALL,
                # Inputs carry cluster and node names; keep them in S3 reports, not in logs.
                include_execution_data=False,
            ),
        )
        role = self.state_machine.role
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="InvokePipelineFunctions",
                actions=["lambda:InvokeFunction"],
                resources=sorted({fn.function_arn for fn in functions.values()}, key=str),
            )
        )
        # ItemReader of the Distributed Map: the batch list resolve_cluster wrote.
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ReadDistributedMapItems",
                actions=["s3:GetObject"],
                resources=[bucket.arn_for_objects(f"{REPORTS_PREFIX}*")],
            )
        )
        # ResultWriter of the Distributed Map: the Map Run's result files and manifest, under
        # reports/_map-runs/ (the actions AWS's "IAM policies for using Distributed Map states"
        # lists for writing child workflow results: multipart uploads, hence the Get/List/Abort).
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="WriteDistributedMapResults",
                actions=[
                    "s3:PutObject",
                    "s3:GetObject",
                    "s3:ListMultipartUploadParts",
                    "s3:AbortMultipartUpload",
                ],
                resources=[bucket.arn_for_objects(f"{MAP_RESULTS_PREFIX}*")],
            )
        )
        # The Distributed Map's child executions: a separate policy, because referencing the state
        # machine's own ARN from the policy the state machine depends on would be a cycle.
        child_policy = iam.Policy(
            self,
            "DistributedMapChildren",
            roles=[role],
            statements=[
                iam.PolicyStatement(
                    actions=["states:StartExecution"], resources=[self.state_machine.state_machine_arn]
                ),
                iam.PolicyStatement(
                    actions=["states:DescribeExecution", "states:StopExecution"],
                    resources=self.child_execution_arns(stack),
                ),
            ],
        )
        bucket_id = stack.get_logical_id(bucket.node.default_child)
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            "The Distributed Map reads its item list from keys created per run under the "
            "project bucket's reports/ prefix and writes its Map Run results, one folder per Map "
            f"Run, under {MAP_RESULTS_PREFIX}; X-Ray trace writes and CloudWatch Logs delivery "
            "(logs:*LogDelivery, logs:Describe*) have no resource-level permissions.",
            [
                f"Resource::<{bucket_id}.Arn>/{REPORTS_PREFIX}*",
                f"Resource::<{bucket_id}.Arn>/{MAP_RESULTS_PREFIX}*",
                "Resource::*",
            ],
        )
        machine_id = stack.get_logical_id(self.state_machine.node.default_child)
        acknowledge(
            child_policy,
            "AwsSolutions-IAM5",
            "Child executions of the Distributed Map are named by Step Functions at run time; "
            "the grant is limited to executions of this state machine.",
            [
                f"Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
                f"<{machine_id}.Name>{separator}*"
                for separator in CHILD_EXECUTION_SEPARATORS
            ],
        )

    def child_execution_arns(self, stack: Stack) -> list[str]:
        """Both forms AWS gives a Distributed Map child execution's ARN.

        A child of a Map Run is `execution:<state machine>/<Map Run label or id>:<execution id>`
        (the form AWS's redrive policy example grants); AWS's "IAM policies for using Distributed
        Map states" grants DescribeExecution on `execution:<state machine>:*`. Granting one form
        only is what fails at run time, so both are granted, each limited to this state machine.
        """
        return [
            stack.format_arn(
                service="states",
                resource="execution",
                resource_name=f"{self.state_machine.state_machine_name}{separator}*",
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            for separator in CHILD_EXECUTION_SEPARATORS
        ]
