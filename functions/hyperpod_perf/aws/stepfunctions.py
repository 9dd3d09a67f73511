"""Starting diagnoses: idempotent StartExecution, and following one to its end (CLI `start`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.errors import translate_client_error


@dataclass(frozen=True)
class StartedExecution:
    name: str
    execution_arn: str | None
    already_running: bool  # True when the name was taken: this event joined an existing run


class DiagnosisStarter:
    def __init__(self, client: Any, state_machine_arn: str) -> None:
        self._sfn = client
        self.state_machine_arn = state_machine_arn

    def execution_arn(self, name: str) -> str:
        """`arn:…:stateMachine:<machine>` -> `arn:…:execution:<machine>:<name>`."""
        prefix, _, machine = self.state_machine_arn.partition(":stateMachine:")
        return f"{prefix}:execution:{machine}:{name}"

    def start(self, name: str, request: dict[str, Any]) -> StartedExecution:
        """Start the run named `name`, or join it when it already exists.

        Joining is success: the storm's first event started the run. A repeated StartExecution
        with the same name and input is accepted by Step Functions as idempotent, so look first,
        or every event of a storm would count as a new start; ExecutionAlreadyExists (same name,
        other input) also means joined.
        """
        arn = self.execution_arn(name)
        try:
            self._sfn.describe_execution(executionArn=arn)
            return StartedExecution(name, arn, already_running=True)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ExecutionDoesNotExist":
                raise translate_client_error(exc, "states:DescribeExecution") from exc
        except BotoCoreError as exc:
            raise translate_client_error(exc, "states:DescribeExecution") from exc
        try:
            response = self._sfn.start_execution(
                stateMachineArn=self.state_machine_arn, name=name, input=json.dumps(request)
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ExecutionAlreadyExists":
                return StartedExecution(name, None, already_running=True)
            raise translate_client_error(exc, "states:StartExecution") from exc
        except BotoCoreError as exc:
            raise translate_client_error(exc, "states:StartExecution") from exc
        return StartedExecution(name, response["executionArn"], already_running=False)

    def describe(self, execution_arn: str) -> dict[str, Any]:
        try:
            return self._sfn.describe_execution(executionArn=execution_arn)
        except (ClientError, BotoCoreError) as exc:
            raise translate_client_error(exc, "states:DescribeExecution") from exc

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        try:
            paginator = self._sfn.get_paginator("get_execution_history")
            for page in paginator.paginate(executionArn=execution_arn):
                events.extend(page["events"])
        except (ClientError, BotoCoreError) as exc:
            raise translate_client_error(exc, "states:GetExecutionHistory") from exc
        return events
