"""The bridge `make deploy-local` runs a deployed stack through (the full run is `make deploy-local`).

Why unit tests beside the make target: the deploy takes minutes and is not part of `make test`;
the bridge's decisions — how a substitution resolves, which resources count as missing, which
environment a handler sees — are checked here in milliseconds against fake AWS clients.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from hyperpod_perf_dev.localrun.bridge import FakeLambdaContext
from hyperpod_perf_dev.localrun.deployed import (
    LOCAL_ONLY_ENVIRONMENT,
    UNSUPPORTED_BY_MOTO,
    DeployedEnvironments,
    DeployedFunction,
    DeployedStack,
)

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:  # infra/ (the deploy-local driver) lives beside the package
    sys.path.insert(0, str(REPO))

from infra.deploy_local import start_execution_command  # noqa: E402

FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:HyperPodPerf-Validate-ABC"


class FakeLambda:
    def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:
        assert FunctionName == "HyperPodPerf-Validate-ABC"
        return {"FunctionName": FunctionName, "FunctionArn": FUNCTION_ARN}


def _stack(resources: dict[str, tuple[str, str, str]]) -> DeployedStack:
    template = {
        "Resources": {
            "Validate": {"Type": "AWS::Lambda::Function"},
            "Reports": {"Type": "AWS::S3::Bucket"},
            "Alarm": {"Type": "AWS::CloudWatch::Alarm"},
            "Machine": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {
                    "DefinitionString": {"Fn::Join": ["", ['{"F":"${ValidateArn}",', '"B":"${Bucket}"}']]},
                    "DefinitionSubstitutions": {
                        "ValidateArn": {"Fn::GetAtt": ["Validate", "Arn"]},
                        "Bucket": {"Ref": "Reports"},
                    },
                    "RoleArn": "arn:aws:iam::123456789012:role/r",
                },
            },
        }
    }
    stack = DeployedStack("HyperPodPerf", lambda service: FakeLambda(), template=template)
    stack.resources = resources
    return stack


CREATED = {
    "Validate": ("AWS::Lambda::Function", "CREATE_COMPLETE", "HyperPodPerf-Validate-ABC"),
    "Reports": ("AWS::S3::Bucket", "CREATE_COMPLETE", "hyperpodperf-reports-xyz"),
    "Machine": ("AWS::StepFunctions::StateMachine", "CREATE_COMPLETE", "arn:aws:states:…:m"),
    "Alarm": ("", "CREATE_COMPLETE", ""),  # how moto records a type it does not create
}


def test_the_definition_gets_the_deployed_arns_and_names() -> None:
    # Given a template whose substitutions refer to a function's Arn and a bucket's Ref
    definition = _stack(CREATED).definition()
    # Then each is replaced by what was deployed, and no ${ is left
    assert definition == f'{{"F":"{FUNCTION_ARN}","B":"hyperpodperf-reports-xyz"}}'
    assert "${" not in definition


def test_an_unsupported_type_is_tolerated_and_anything_else_missing_is_named() -> None:
    assert "AWS::CloudWatch::Alarm" in UNSUPPORTED_BY_MOTO
    assert _stack(CREATED).missing_resources() == {}
    # Given the bucket was not created
    without_bucket = {**CREATED, "Reports": ("AWS::S3::Bucket", "CREATE_FAILED", "")}
    # Then it is named, with its type
    assert _stack(without_bucket).missing_resources() == {"Reports": "AWS::S3::Bucket"}


def test_a_listed_type_that_moto_created_makes_the_list_stale() -> None:
    created_alarm = {**CREATED, "Alarm": ("AWS::CloudWatch::Alarm", "CREATE_COMPLETE", "a")}
    assert _stack(CREATED).stale_unsupported() == []
    assert _stack(created_alarm).stale_unsupported() == ["AWS::CloudWatch::Alarm"]


def test_each_handler_runs_with_its_own_functions_deployed_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given two deployed functions with different environments, run through one handler module
    seen: list[dict[str, str | None]] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        keys = ("STATE_MACHINE_ARN", "REPORT_BUCKET", "POWERTOOLS_TRACE_DISABLED")
        seen.append({k: os.environ.get(k) for k in keys} | {"arn": context.invoked_function_arn})
        return {}

    import types

    module = types.ModuleType("hpd_fake_handlers")
    module.handler = handler  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "hpd_fake_handlers", module)
    monkeypatch.delenv("STATE_MACHINE_ARN", raising=False)
    trigger = DeployedFunction("t", "arn:t", "hpd_fake_handlers.handler", {"STATE_MACHINE_ARN": "arn:sm"})
    publish = DeployedFunction("p", "arn:p", "hpd_fake_handlers.handler", {"REPORT_BUCKET": "b"})
    bridge = DeployedEnvironments({"t": trigger, "p": publish}).bridge()
    # When each is invoked
    bridge.handlers["t"]({}, FakeLambdaContext("t"))
    bridge.handlers["p"]({}, FakeLambdaContext("p"))
    # Then each saw its own variables only, with the local-only switches, and its own ARN
    trace = LOCAL_ONLY_ENVIRONMENT["POWERTOOLS_TRACE_DISABLED"]
    assert seen == [
        {
            "STATE_MACHINE_ARN": "arn:sm",
            "REPORT_BUCKET": os.environ.get("REPORT_BUCKET"),
            "POWERTOOLS_TRACE_DISABLED": trace,
            "arn": "arn:t",
        },
        {"STATE_MACHINE_ARN": None, "REPORT_BUCKET": "b", "POWERTOOLS_TRACE_DISABLED": trace, "arn": "arn:p"},
    ]
    # And nothing of theirs stays in the process environment afterwards
    assert "STATE_MACHINE_ARN" not in os.environ


def test_the_command_run_is_deploy_md_s_block_as_written() -> None:
    command = start_execution_command(REPO / "docs" / "DEPLOY.md")
    assert command.startswith("aws stepfunctions start-execution \\\n")
    assert "OutputKey=='StateMachineArn'" in command
    assert command.rstrip().endswith("""--input '{"cluster": "ml-cluster-p5"}'""")
    assert command in (REPO / "docs" / "DEPLOY.md").read_text()
