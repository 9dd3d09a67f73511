"""A stack deployed by the real CDK CLI into a local moto server, run the way AWS would run it.

Why a bridge: the CLI's deploy proves the template deploys, but moto does not run what it
deployed. Its CloudFormation puts the state machine in the non-executing Step Functions backend
and drops DefinitionSubstitutions, its EventBridge does not deliver to Lambda and its Lambda does
not run Python handlers without Docker. So the bridge reads back what was deployed — each
function's handler and environment, the state machine's definition and the template's
substitutions resolved against the deployed resources — registers that definition, under the
same name and ARN, in moto's executing backend, and runs each Lambda invocation in this process
with the handler and environment of the function invoked.
"""

from __future__ import annotations

import importlib
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from hyperpod_perf_dev.localrun.bridge import FakeLambdaContext, LambdaBridge, environment_overlay, installed

#: Template types moto's CloudFormation does not create (it records them without a type), each
#: with what that leaves unproven locally.
UNSUPPORTED_BY_MOTO: dict[str, str] = {
    "AWS::CDK::Metadata": "CDK's own analytics record, not an AWS resource",
    "AWS::CloudWatch::Alarm": "alarms (FSx saturation, failed executions, dead letters) are not created",
    "AWS::S3::BucketPolicy": "the TLS-only bucket policy is not enforced",
    "AWS::SNS::TopicPolicy": "the topic's TLS-only policy is not enforced",
    "AWS::SQS::QueuePolicy": "the dead-letter queue's policy is not enforced",
    "AWS::Chatbot::SlackChannelConfiguration": "the Slack channel (AWS Chatbot) is not created",
    "AWS::SNS::Subscription": "e-mail subscriptions are not created",
    # moto 5.2.5's CloudFormation has no model for Glue or Athena resources; `history_catalog`
    # bridges them: each is created through moto's Glue / Athena API from the template's properties.
    "AWS::Glue::Database": "created by the history bridge through moto's Glue API, not by CloudFormation",
    "AWS::Glue::Table": "created by the history bridge through moto's Glue API, not by CloudFormation",
    "AWS::Athena::WorkGroup": "created by the history bridge through moto's Athena API",
    "AWS::Athena::NamedQuery": "created by the history bridge through moto's Athena API",
}

#: Set on top of each deployed environment, and why: no X-Ray daemon or CloudWatch here.
LOCAL_ONLY_ENVIRONMENT = {
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
}


@dataclass(frozen=True)
class DeployedFunction:
    name: str
    arn: str
    handler: str  # "hyperpod_perf.handlers.validate.handler", as deployed
    environment: dict[str, str]


@dataclass
class DeployedStack:
    """What CloudFormation (moto) holds for the stack, read through the AWS APIs."""

    stack_name: str
    client: Callable[[str], Any]
    template: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    #: logical id -> (type moto reports, status, physical id)
    resources: dict[str, tuple[str, str, str]] = field(default_factory=dict)

    def read(self) -> DeployedStack:
        cloudformation = self.client("cloudformation")
        body = cloudformation.get_template(StackName=self.stack_name)["TemplateBody"]
        self.template = body if isinstance(body, dict) else json.loads(body)
        (stack,) = cloudformation.describe_stacks(StackName=self.stack_name)["Stacks"]
        self.outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
        pages = cloudformation.get_paginator("list_stack_resources").paginate(StackName=self.stack_name)
        self.resources = {
            r["LogicalResourceId"]: (r["ResourceType"], r["ResourceStatus"], r.get("PhysicalResourceId", ""))
            for page in pages
            for r in page["StackResourceSummaries"]
        }
        return self

    def stale_unsupported(self) -> list[str]:
        """Types listed as unsupported that moto did create (the list would be out of date)."""
        return sorted(
            {
                cfn_type
                for logical_id, r in self.template["Resources"].items()
                if (cfn_type := r["Type"]) in UNSUPPORTED_BY_MOTO
                and self.resources.get(logical_id, ("", "", ""))[:2] == (cfn_type, "CREATE_COMPLETE")
            }
        )

    def missing_resources(self) -> dict[str, str]:
        """logical id -> type, of template resources neither created nor of an unsupported type."""
        missing = {}
        for logical_id, resource in self.template["Resources"].items():
            cfn_type = resource["Type"]
            reported, status, _ = self.resources.get(logical_id, ("", "", ""))
            created = reported == cfn_type and status == "CREATE_COMPLETE"
            if not created and cfn_type not in UNSUPPORTED_BY_MOTO:
                missing[logical_id] = cfn_type
        return missing

    def physical_id(self, logical_id: str) -> str:
        return self.resources[logical_id][2]

    def functions(self) -> dict[str, DeployedFunction]:
        """Every deployed function's handler and environment, by function name."""
        lambda_ = self.client("lambda")
        functions = {}
        for logical_id, resource in self.template["Resources"].items():
            if resource["Type"] != "AWS::Lambda::Function":
                continue
            config = lambda_.get_function_configuration(FunctionName=self.physical_id(logical_id))
            functions[config["FunctionName"]] = DeployedFunction(
                name=config["FunctionName"],
                arn=config["FunctionArn"],
                handler=config["Handler"],
                environment=dict(config.get("Environment", {}).get("Variables", {})),
            )
        return functions

    def state_machine(self) -> tuple[str, dict[str, Any]]:
        """(logical id, properties) of the one state machine."""
        (item,) = [
            (lid, r["Properties"])
            for lid, r in self.template["Resources"].items()
            if r["Type"] == "AWS::StepFunctions::StateMachine"
        ]
        return item

    def resolve(self, value: Any) -> str:
        """A template value (literal, Ref, GetAtt Arn of a function or role, Join) as deployed."""
        if isinstance(value, str):
            return value
        if "Ref" in value:
            return self.physical_id(value["Ref"])
        if "Fn::GetAtt" in value:
            logical_id, attribute = value["Fn::GetAtt"]
            cfn_type = self.template["Resources"][logical_id]["Type"]
            if attribute == "Arn" and cfn_type == "AWS::Lambda::Function":
                name = self.physical_id(logical_id)
                return self.client("lambda").get_function_configuration(FunctionName=name)["FunctionArn"]
            if attribute == "Arn" and cfn_type == "AWS::IAM::Role":
                return self.client("iam").get_role(RoleName=self.physical_id(logical_id))["Role"]["Arn"]
            if attribute == "Arn" and cfn_type == "AWS::S3::Bucket":
                return f"arn:aws:s3:::{self.physical_id(logical_id)}"
            raise ValueError(f"no local resolution for GetAtt {logical_id}.{attribute} ({cfn_type})")
        if "Fn::Join" in value:
            separator, parts = value["Fn::Join"]
            return separator.join(self.resolve(p) for p in parts)
        raise ValueError(f"no local resolution for {value!r}")

    def definition(self) -> str:
        """The state machine's definition with the template's DefinitionSubstitutions filled in."""
        _, properties = self.state_machine()
        definition = self.resolve(properties["DefinitionString"])
        for key, value in properties.get("DefinitionSubstitutions", {}).items():
            definition = definition.replace("${" + key + "}", self.resolve(value))
        return definition


#: CloudFormation pseudo parameters as the local deployment has them.
_PSEUDO = {"AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}


def _deep_resolve(stack: DeployedStack, value: Any, pseudo: dict[str, str]) -> Any:
    if isinstance(value, list):
        return [_deep_resolve(stack, v, pseudo) for v in value]
    if isinstance(value, dict):
        if set(value) == {"Ref"} and value["Ref"] in pseudo:
            return pseudo[value["Ref"]]
        if set(value) == {"Ref"} and value["Ref"] in stack.template["Resources"]:
            target = stack.template["Resources"][value["Ref"]]
            if target["Type"] == "AWS::Athena::WorkGroup":  # Ref is the workgroup's name
                return target["Properties"]["Name"]
            if target["Type"] == "AWS::Glue::Database":  # Ref is the database's name
                return target["Properties"]["DatabaseInput"]["Name"]
        if len(value) == 1 and next(iter(value)).startswith(("Ref", "Fn::")):
            if "Fn::Join" in value:
                separator, parts = value["Fn::Join"]
                return separator.join(str(_deep_resolve(stack, p, pseudo)) for p in parts)
            return stack.resolve(value)
        return {k: _deep_resolve(stack, v, pseudo) for k, v in value.items()}
    return value


def history_catalog(stack: DeployedStack, account: str, region: str) -> dict[str, int]:
    """The Glue database and tables, the Athena workgroup and named queries of the template,
    created through moto's Glue and Athena APIs with the template's own (resolved) properties."""
    pseudo = {**_PSEUDO, "AWS::AccountId": account, "AWS::Region": region}
    glue, athena = stack.client("glue"), stack.client("athena")
    created = {"databases": 0, "tables": 0, "workgroups": 0, "named_queries": 0}
    by_type: dict[str, list[dict[str, Any]]] = {}
    for resource in stack.template["Resources"].values():
        if not resource["Type"].startswith(("AWS::Glue::", "AWS::Athena::")):
            continue
        by_type.setdefault(resource["Type"], []).append(
            _deep_resolve(stack, resource.get("Properties", {}), pseudo)
        )
    for props in by_type.get("AWS::Glue::Database", []):
        glue.create_database(CatalogId=props["CatalogId"], DatabaseInput=props["DatabaseInput"])
        created["databases"] += 1
    for props in by_type.get("AWS::Glue::Table", []):
        glue.create_table(
            CatalogId=props["CatalogId"], DatabaseName=props["DatabaseName"], TableInput=props["TableInput"]
        )
        created["tables"] += 1
    for props in by_type.get("AWS::Athena::WorkGroup", []):
        configuration = props.get("WorkGroupConfiguration", {})
        athena.create_work_group(
            Name=props["Name"], Description=props.get("Description", ""), Configuration=configuration
        )
        created["workgroups"] += 1
    for props in by_type.get("AWS::Athena::NamedQuery", []):
        athena.create_named_query(
            Name=props["Name"],
            Description=props.get("Description", ""),
            Database=props["Database"],
            QueryString=props["QueryString"],
            WorkGroup=props["WorkGroup"],
        )
        created["named_queries"] += 1
    return created


def executing_state_machine(
    deployed: DeployedStack, set_moto_config: Callable[[dict[str, Any]], None]
) -> str:
    """Register the deployed definition, same name and role, in moto's executing backend."""
    logical_id, properties = deployed.state_machine()
    arn = deployed.physical_id(logical_id)
    definition = deployed.definition()
    if "${" in definition:
        raise RuntimeError(f"unresolved substitution left in the deployed definition: {definition[:200]}")
    set_moto_config({"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}})
    sfn = deployed.client("stepfunctions")
    created = sfn.create_state_machine(
        name=arn.rsplit(":", 1)[-1], definition=definition, roleArn=deployed.resolve(properties["RoleArn"])
    )["stateMachineArn"]
    if created != arn:
        raise RuntimeError(f"the executing state machine is {created}, the deployed one {arn}")
    return definition


class DeployedEnvironments:
    """Runs each handler with its own function's deployed environment (one invocation at a time).

    Why one at a time: the environment is the process's; the lock keeps one function's variables
    from leaking into another's invocation.
    """

    def __init__(self, functions: dict[str, DeployedFunction]) -> None:
        self.functions = functions
        self._lock = threading.Lock()

    def handler_for(self, function: DeployedFunction) -> Callable[[dict[str, Any], Any], Any]:
        module_name, _, attribute = function.handler.rpartition(".")
        target = getattr(importlib.import_module(module_name), attribute)

        def run(event: dict[str, Any], context: FakeLambdaContext) -> Any:
            from hyperpod_perf.handlers import settings

            with self._lock, environment_overlay({**function.environment, **LOCAL_ONLY_ENVIRONMENT}):
                settings.reset_cache()
                context.invoked_function_arn = function.arn
                return target(event, context)

        return run

    def bridge(self) -> LambdaBridge:
        return LambdaBridge({name: self.handler_for(f) for name, f in self.functions.items()})


@contextmanager
def aws_execution_names() -> Iterator[None]:
    """StartExecution without a name gets a UUID, as in AWS (moto's executing backend leaves None).

    DEPLOY.md's command passes no `--name`; the handlers rightly reject a null execution name.
    """
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original = StepFunctionsParserBackend.start_execution

    def start_execution(
        self: Any, state_machine_arn: str, name: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        return original(self, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs)

    StepFunctionsParserBackend.start_execution = start_execution
    try:
        yield
    finally:
        StepFunctionsParserBackend.start_execution = original


@contextmanager
def running_deployed_handlers(functions: dict[str, DeployedFunction]) -> Iterator[LambdaBridge]:
    with installed(DeployedEnvironments(functions).bridge()) as bridge:
        yield bridge
