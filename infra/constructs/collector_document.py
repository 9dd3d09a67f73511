"""The SSM Session document that runs the read-only node collector.

Why a Session document of our own (type Session, NonInteractiveCommands): HyperPod nodes accept
StartSession but reportedly not SendCommand, and a document we own lets IAM pin
`ssm:StartSession` to exactly this script — no free-form command can be passed.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_ssm as ssm
from constructs import Construct


class CollectorDocument(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, content: dict[str, Any]) -> None:
        super().__init__(scope, construct_id)
        if content.get("sessionType") != "NonInteractiveCommands":
            raise ValueError("the collector document must be a NonInteractiveCommands Session document")
        free_form = [
            name for name, spec in content.get("parameters", {}).items() if "allowedPattern" not in spec
        ]
        if free_form:
            raise ValueError(
                f"every Session document parameter needs an allowedPattern; missing: {free_form}"
            )

        # No `name`: CloudFormation generates one, so two stacks never collide and a replacement
        # never fails on a taken name.
        self.document = ssm.CfnDocument(
            self,
            "Document",
            document_type="Session",
            document_format="JSON",
            content=content,
            update_method="NewVersion",
        )
        self.document_name: str = self.document.ref
        self.document_arn: str = Stack.of(self).format_arn(
            service="ssm",
            resource="document",
            resource_name=self.document_name,
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )
