"""One construct per concern; the stack only wires them together."""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import Acknowledgment, CfnResource, Validations
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


def acknowledge_checkov(construct: IConstruct, check: str, reason: str) -> None:
    """Acknowledge a checkov finding on the construct's CloudFormation resource, with its reason.

    checkov reads `Metadata.checkov.skip` (`[{id, comment}]`) per resource of the synthesized
    template (its documented CloudFormation suppression), so each accepted finding is recorded
    where the resource is defined, like a cdk-nag acknowledgment; docs/SECURITY.md lists them all."""
    if len(reason.strip()) < 20:
        raise ValueError(f"an acknowledgment of {check} needs a specific reason, got {reason!r}")
    resource = construct if isinstance(construct, CfnResource) else construct.node.default_child
    if not isinstance(resource, CfnResource):
        raise TypeError(f"{construct.node.path}: no CloudFormation resource to acknowledge {check} on")
    existing = resource.get_metadata("checkov") or {"skip": []}
    skips = [s for s in existing["skip"] if s["id"] != check] + [{"id": check, "comment": reason}]
    resource.add_metadata("checkov", {"skip": skips})


#: checkov findings every Lambda function of the stack carries, and why each is accepted.
CHECKOV_FUNCTION_REASONS = {
    "CKV_AWS_117": "Calls only AWS public service endpoints (SageMaker, SSM and its data channel, S3, "
    "SNS, CloudWatch, FSx, Step Functions); there is no VPC resource to reach, so a VPC would add "
    "NAT or endpoints and no isolation.",
    "CKV_AWS_115": "Concurrency is bounded by the state machine (the Map's MaxConcurrency, paced to the "
    "StartSession rate) and by the trigger's idempotent execution names; reserving it would take "
    "capacity from the account's pool for a tool that runs rarely.",
    "CKV_AWS_173": "The environment holds resource names and ARNs only, no secret (tests/infra "
    "asserts it); Lambda encrypts it at rest with an AWS managed key.",
}
#: ... and the pipeline's functions, invoked by Step Functions, not asynchronously.
CHECKOV_SYNC_FUNCTION_REASONS = {
    "CKV_AWS_116": "Invoked synchronously by Step Functions (lambda:invoke): a failure returns to the "
    "state machine's Retry/Catch and ReportProblem; a dead-letter queue applies to asynchronous "
    "invocations only (the EventBridge trigger has one).",
}
CHECKOV_LOG_GROUP_REASON = (
    "CloudWatch Logs encrypts every log group at rest; these hold the functions' and the state "
    "machine's own structured logs (no node output, no secret), expired by retention, so a "
    "customer managed key would add a key policy and no confidentiality."
)
