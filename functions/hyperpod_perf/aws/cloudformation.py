"""Finding the deployed stack's outputs (the CLI's `start` needs the state machine ARN)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.errors import translate_client_error


def stack_outputs(client: Any, stack_name: str) -> dict[str, str]:
    try:
        stacks = client.describe_stacks(StackName=stack_name)["Stacks"]
    except (ClientError, BotoCoreError) as exc:
        raise translate_client_error(exc, f"cloudformation:DescribeStacks {stack_name}") from exc
    outputs = stacks[0].get("Outputs", []) if stacks else []
    return {o["OutputKey"]: o["OutputValue"] for o in outputs}
