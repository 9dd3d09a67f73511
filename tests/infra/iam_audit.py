"""Reads every IAM statement of a synthesized template and judges it against the read-only policy.

Kept apart from the tests so the rules read as a specification: what the pipeline may do, and
why each `Resource: *` is there.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

READ_VERBS = ("Describe", "List", "Get", "Filter")

#: Actions AWS offers no resource-level scoping for, each with its justification.
UNSCOPED_ALLOWED: dict[str, str] = {
    "xray:PutTraceSegments": "X-Ray ingestion has no resource-level permissions (function tracing)",
    "xray:PutTelemetryRecords": "X-Ray ingestion has no resource-level permissions (function tracing)",
    "xray:GetSamplingRules": "X-Ray sampling reads are account-wide (state machine tracing)",
    "xray:GetSamplingTargets": "X-Ray sampling reads are account-wide (state machine tracing)",
    "cloudwatch:GetMetricData": "GetMetricData supports no resource-level permissions",
    "fsx:DescribeFileSystems": "FSx Describe* supports no resource-level scoping",
    "ec2:DescribeInstanceTopology": "EC2 DescribeInstanceTopology supports no resource-level permissions",
    "ssmmessages:OpenDataChannel": "the Session Manager data channel has no resource-level scoping",
    # Logs Insights: StartQuery is scoped to the job's log groups; GetQueryResults takes only the
    # query id (API reference: request `{"queryId"}`) and AWS gives it no resource type.
    "logs:GetQueryResults": "Logs Insights results are fetched by query id, no resource-level scoping",
    # Step Functions' delivery of its execution log to its own log group: AWS documents these
    # as requiring Resource * (vended logs).
    "logs:CreateLogDelivery": "Step Functions vended-log delivery requires Resource *",
    "logs:GetLogDelivery": "Step Functions vended-log delivery requires Resource *",
    "logs:UpdateLogDelivery": "Step Functions vended-log delivery requires Resource *",
    "logs:DeleteLogDelivery": "Step Functions vended-log delivery requires Resource *",
    "logs:ListLogDeliveries": "Step Functions vended-log delivery requires Resource *",
    "logs:PutResourcePolicy": "Step Functions vended-log delivery requires Resource *",
    "logs:DescribeResourcePolicies": "Step Functions vended-log delivery requires Resource *",
    "logs:DescribeLogGroups": "Step Functions vended-log delivery requires Resource *",
}

#: What a StartSession-on-any-target grant must leave out: every Session document (own and AWS's).
ANY_SESSION_DOCUMENT = {
    "arn:<AWS::Partition>:ssm:*:*:document/*",
    "arn:<AWS::Partition>:ssm:*::document/*",
}

#: The session's own tag, AWS's condition for "end only the sessions you started".
OWN_SESSIONS_CONDITION = {"StringLike": {"ssm:resourceTag/aws:ssmmessages:session-id": ["${aws:userid}"]}}
OWN_SESSIONS_RESOURCE = "arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:session/*"

TRUSTED_SERVICES = {"lambda.amazonaws.com", "states.amazonaws.com", "chatbot.amazonaws.com"}

_REF = re.compile(r"<([A-Za-z0-9]+)(?:\.[A-Za-z]+)?>")


def render(value: Any) -> str:
    """A CloudFormation value as text: `{"Ref": X}` -> `<X>`, GetAtt -> `<X.Attr>`, Join joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Ref" in value:
        return f"<{value['Ref']}>"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        return f"<{logical_id}.{attribute}>"
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(render(p) for p in parts)
    return repr(value)


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


@dataclass(frozen=True)
class Statement:
    where: str  # "<logical id> (<type>)"
    kind: str  # identity | bucket | topic | queue | key | lambda-permission | trust
    effect: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    principal: Any
    condition: dict[str, Any]
    #: NotResource: the statement applies to everything except these.
    not_resources: tuple[str, ...] = ()


def statements(template: dict[str, Any]) -> Iterator[Statement]:
    """Every IAM statement in the template: identity policies, resource policies, trust policies."""
    for logical_id, resource in template["Resources"].items():
        cfn_type, props = resource["Type"], resource.get("Properties", {})
        where = f"{logical_id} ({cfn_type})"
        documents: list[tuple[str, dict[str, Any]]] = []
        if cfn_type in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            documents.append(("identity", props["PolicyDocument"]))
        elif cfn_type == "AWS::IAM::Role":
            documents.append(("trust", props["AssumeRolePolicyDocument"]))
            documents += [("identity", p["PolicyDocument"]) for p in props.get("Policies", [])]
        elif cfn_type == "AWS::S3::BucketPolicy":
            documents.append(("bucket", props["PolicyDocument"]))
        elif cfn_type == "AWS::SNS::TopicPolicy":
            documents.append(("topic", props["PolicyDocument"]))
        elif cfn_type == "AWS::SQS::QueuePolicy":
            documents.append(("queue", props["PolicyDocument"]))
        elif cfn_type == "AWS::KMS::Key":
            documents.append(("key", props["KeyPolicy"]))
        elif cfn_type == "AWS::Lambda::Permission":
            yield Statement(
                where,
                "lambda-permission",
                "Allow",
                (props["Action"],),
                (render(props["FunctionName"]),),
                props["Principal"],
                {"SourceArn": render(props.get("SourceArn", ""))},
            )
        for kind, document in documents:
            for raw in document["Statement"]:
                yield Statement(
                    where,
                    kind,
                    raw["Effect"],
                    tuple(as_list(raw.get("Action", []))),
                    tuple(render(r) for r in as_list(raw.get("Resource", []))),
                    raw.get("Principal"),
                    raw.get("Condition", {}),
                    tuple(render(r) for r in as_list(raw.get("NotResource", []))),
                )


class Auditor:
    """Judges statements against the allowlist; `violations` lists everything else, readable."""

    def __init__(
        self,
        template: dict[str, Any],
        extra_read_buckets: tuple[str, ...] = (),
        any_session_target: bool = False,
        session_cluster_ids: tuple[str, ...] = (),
    ) -> None:
        self.types = {lid: r["Type"] for lid, r in template["Resources"].items()}
        self.extra_read_buckets = extra_read_buckets
        #: `sessionTargetResourceArns: ["*"]` was configured: StartSession on any target is expected.
        self.any_session_target = any_session_target
        #: The configured clusters' ids: StartSession must then name exactly their ARNs.
        self.session_cluster_ids = session_cluster_ids
        self.violations: list[str] = []
        self.allowed: list[tuple[str, str, str]] = []  # (where, action, reason)

    def _own(self, resources: tuple[str, ...], cfn_type: str) -> bool:
        """Every resource refers to a resource of that type defined in this template."""
        return bool(resources) and all(
            any(self.types.get(ref) == cfn_type for ref in _REF.findall(r)) for r in resources
        )

    def judge(self, st: Statement) -> None:
        if st.effect == "Deny":
            return  # a Deny only takes away; the TLS denies are checked by their own test
        for action in st.actions:
            reason = self._reason(st, action)
            if reason is None:
                self.violations.append(f"{st.where} [{st.kind}]: {action} on {list(st.resources)}")
            else:
                self.allowed.append((st.where, action, reason))

    def _reason(self, st: Statement, action: str) -> str | None:
        if "*" in action:
            return None
        service, _, name = action.partition(":")
        if st.kind == "trust":
            services = set(as_list((st.principal or {}).get("Service", [])))
            ok = action == "sts:AssumeRole" and services and services <= TRUSTED_SERVICES
            return "service role trust" if ok else None
        if st.kind == "key":
            return "key policy of the project's own key (Resource * = this key)" if service == "kms" else None
        if st.kind == "lambda-permission":
            ok = (
                action == "lambda:InvokeFunction"
                and st.principal == "events.amazonaws.com"
                and self._own(st.resources, "AWS::Lambda::Function")
                and self._own((st.condition["SourceArn"],), "AWS::Events::Rule")
            )
            return "own rule invokes own function" if ok else None
        if st.not_resources:
            ok = (
                action == "ssm:StartSession"
                and self.any_session_target
                and not st.resources
                and set(st.not_resources) == ANY_SESSION_DOCUMENT
                and st.condition == {"BoolIfExists": {"ssm:SessionDocumentAccessCheck": "true"}}
            )
            return (
                'sessionTargetResourceArns ["*"]: any target, never another Session document' if ok else None
            )
        if "*" in st.resources:
            return UNSCOPED_ALLOWED.get(action)
        if name.startswith(READ_VERBS) and not (service == "s3" and name == "GetObject"):
            return "read-only"
        match action:
            case "ssm:StartSession":
                documents = [r for r in st.resources if ":document/" in r]
                others = [r for r in st.resources if r not in documents]
                clusters = {
                    f"arn:<AWS::Partition>:sagemaker:<AWS::Region>:<AWS::AccountId>:cluster/{cid}"
                    for cid in self.session_cluster_ids
                }
                ok = (
                    len(documents) == 1
                    and self._own(tuple(documents), "AWS::SSM::Document")
                    and all(re.search(r":sagemaker:.*:cluster/", r) for r in others)
                    and (not clusters or set(others) == clusters)
                )
                return "the project's Session document on HyperPod targets" if ok else None
            case "ssm:TerminateSession":
                own = st.resources == (OWN_SESSIONS_RESOURCE,) and st.condition == OWN_SESSIONS_CONDITION
                return "end only the sessions this role started" if own else None
            case "sns:Publish":
                return "publish to own topic" if self._own(st.resources, "AWS::SNS::Topic") else None
            case "s3:ListMultipartUploadParts" | "s3:AbortMultipartUpload":
                return (
                    "own bucket (ResultWriter's multipart uploads)"
                    if self._own(st.resources, "AWS::S3::Bucket")
                    else None
                )
            case "s3:GetObject" | "s3:PutObject" | "s3:ListBucket":
                if self._own(st.resources, "AWS::S3::Bucket"):
                    return "own bucket"
                external = action != "s3:PutObject" and all(
                    any(r.startswith(f"arn:<AWS::Partition>:s3:::{b}") for b in self.extra_read_buckets)
                    for r in st.resources
                )
                return "read configured NCCL results" if external else None
            case "aps:QueryMetrics":
                # a PromQL read (AMP's query API): allowed on named workspaces only, never workspace/*
                named = all(
                    re.search(r":aps:.*:workspace/[0-9A-Za-z][-.0-9A-Z_a-z]*$", r) for r in st.resources
                )
                return "PromQL reads of the configured AMP workspaces" if named and st.resources else None
            case "logs:StartQuery":
                groups = all(":log-group:" in r and not r.endswith(":log-group:*") for r in st.resources)
                return "Logs Insights query of configured job log groups (read only)" if groups else None
            case "logs:CreateLogStream" | "logs:PutLogEvents":
                return "own log group" if self._own(st.resources, "AWS::Logs::LogGroup") else None
            case "states:StartExecution":
                own = self._own(st.resources, "AWS::StepFunctions::StateMachine")
                return "start own state machine" if own else None
            case "states:StopExecution":
                own = self._own(st.resources, "AWS::StepFunctions::StateMachine")
                return "stop own Distributed Map children" if own else None
            case "sqs:SendMessage":
                return "own dead-letter queue" if self._own(st.resources, "AWS::SQS::Queue") else None
            case "lambda:InvokeFunction":
                return "invoke own functions" if self._own(st.resources, "AWS::Lambda::Function") else None
        if service == "kms":
            return "use own key" if self._own(st.resources, "AWS::KMS::Key") else None
        return None
