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

    def start(self, name: str, request: dict[str, Any]) -> StartedExecution:
        """ExecutionAlreadyExists is success: the storm's first event already started the run."""
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
