"""One construct per concern; the stack only wires them together."""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


def acknowledge(construct: IConstruct, rule: str, reason: str, applies_to: Iterable[str] = ()) -> None:
    """Acknowledge a cdk-nag finding on a construct (and its children), always with a reason.

    cdk-nag 3 acknowledges through CDK's `Validations`; a finding with evidence (IAM5's wildcard)
    is acknowledged per evidence item, `AwsSolutions-IAM5[Resource::*]`, never wholesale.
    """
    if len(reason.strip()) < 20:
        raise ValueError(f"an acknowledgment of {rule} needs a specific reason, got {reason!r}")
    items = list(applies_to)
    ids = [f"{rule}[{item}]" for item in items] if items else [rule]
    Validations.of(construct).acknowledge(*(Acknowledgment(id=i, reason=reason) for i in ids))
