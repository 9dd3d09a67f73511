"""Proof that the deployed pipeline is read-only and locked down, read from the synthesized template."""

from __future__ import annotations

import json
import re

import pytest
from iam_audit import UNSCOPED_ALLOWED, Auditor, render, statements
from infra_synth import Synth


def test_template_synthesizes_offline_with_every_part(synth: Synth) -> None:
    # Given the example configuration (1 cluster, Lustre + OpenZFS, an e-mail, Slack ids)
    # When the stack was synthesized with bundling skipped and no AWS credentials
    # Then the template holds the whole pipeline
    counts = {t: len(synth.of_type(t)) for t in {r["Type"] for r in synth.resources.values()}}
    assert (
        counts["AWS::Lambda::Function"] == 15
    )  # ClusterMetrics (issue 21) and NodePlacement (issue 26) included
    assert counts["AWS::StepFunctions::StateMachine"] == 1
    assert counts["AWS::SSM::Document"] == 1
    assert counts["AWS::Events::Rule"] == 4
    assert counts["AWS::Chatbot::SlackChannelConfiguration"] == 1
    assert counts["AWS::SNS::Subscription"] == 1
    assert set(synth.template["Outputs"]) == {
        "StateMachineArn",
        "ReportBucketName",
        "TopicArn",
        "SessionDocumentName",
        "DashboardUrl",
        "HistoryWorkGroup",
        "HistoryDatabase",
    }
    assert counts["AWS::CloudWatch::Dashboard"] == 1
    assert (counts["AWS::Glue::Database"], counts["AWS::Glue::Table"]) == (1, 4)
    assert (counts["AWS::Athena::WorkGroup"], counts["AWS::Athena::NamedQuery"]) == (1, 5)


def test_every_iam_action_is_read_only_or_scoped_to_own_resources(synth: Synth) -> None:
    # Given every IAM statement: identity policies, trust policies, bucket/topic/queue/key policies
    auditor = Auditor(
        synth.template,
        extra_read_buckets=tuple(synth.context.get("ncclResultBuckets", [])),
        session_cluster_ids=tuple(c["id"] for c in synth.context.get("clusters", []) if c.get("id")),
    )
    all_statements = list(statements(synth.template))
    # When each Allow is judged against the read-only allowlist
    for statement in all_statements:
        auditor.judge(statement)
    # Then nothing else is granted (the message lists any other action)
    assert not auditor.violations, "actions outside the read-only allowlist:\n" + "\n".join(
        auditor.violations
    )
    granted = {action for _, action, _ in auditor.allowed}
    # and the audit really saw the pipeline's grants (it is not vacuously empty)
    assert {
        "ssm:StartSession",
        "ssm:TerminateSession",
        "ssmmessages:OpenDataChannel",
        "sns:Publish",
        "s3:PutObject",
        "s3:GetObject",
        "states:StartExecution",
        "sagemaker:DescribeCluster",
        "logs:FilterLogEvents",
        "fsx:DescribeFileSystems",
        "cloudwatch:GetMetricData",
        "kms:GenerateDataKey",
    } <= granted
    assert len(all_statements) > 50


def test_no_wildcard_action_and_resource_star_only_where_aws_cannot_scope(synth: Synth) -> None:
    # Given every Allow statement outside key policies
    wildcard_actions, unscoped = [], []
    for st in statements(synth.template):
        if st.effect != "Allow":
            continue
        wildcard_actions += [f"{st.where}: {a}" for a in st.actions if "*" in a]
        if "*" in st.resources and st.kind != "key":
            unscoped += [f"{st.where}: {a}" for a in st.actions if a not in UNSCOPED_ALLOWED]
    # Then no action is a wildcard, and Resource * carries only the justified actions
    assert wildcard_actions == []
    assert unscoped == []


def test_deny_statements_with_wildcard_actions_are_only_the_tls_denies(synth: Synth) -> None:
    # Given the Deny statements (CDK's enforceSSL uses s3:* / sqs:* in a Deny)
    denies = [st for st in statements(synth.template) if st.effect == "Deny"]
    # Then each one is the deny-non-TLS statement
    assert denies
    for st in denies:
        assert st.condition == {"Bool": {"aws:SecureTransport": "false"}}, st.where


@pytest.mark.parametrize(
    "cfn_type", ["AWS::S3::BucketPolicy", "AWS::SNS::TopicPolicy", "AWS::SQS::QueuePolicy"]
)
def test_bucket_topic_and_queue_policies_deny_non_tls(synth: Synth, cfn_type: str) -> None:
    # Given each resource policy of this type
    policies = synth.of_type(cfn_type)
    assert policies
    for logical_id, policy in policies.items():
        # Then it denies any request made without TLS
        denies = [
            s
            for s in policy["Properties"]["PolicyDocument"]["Statement"]
            if s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
        ]
        assert denies, f"{logical_id} has no deny-non-TLS statement"


def test_every_bucket_topic_and_queue_has_a_tls_policy(synth: Synth) -> None:
    # Given the buckets, topics and queues, and the resources the TLS policies protect
    protected = {
        ref
        for t in ("AWS::S3::BucketPolicy", "AWS::SNS::TopicPolicy", "AWS::SQS::QueuePolicy")
        for policy in synth.of_type(t).values()
        for ref in re.findall(r"<([A-Za-z0-9]+)", json.dumps([render(v) for v in _targets(policy)]))
    }
    # Then none is left without one
    for t in ("AWS::S3::Bucket", "AWS::SNS::Topic", "AWS::SQS::Queue"):
        assert set(synth.of_type(t)) <= protected, t


def _targets(policy: dict) -> list:
    props = policy["Properties"]
    return (props.get("Bucket") and [props["Bucket"]]) or props.get("Topics") or props.get("Queues") or []


def test_roles_have_no_managed_policies_and_each_function_its_own_role(synth: Synth) -> None:
    # Given the roles and functions
    roles = synth.of_type("AWS::IAM::Role")
    functions = synth.of_type("AWS::Lambda::Function")
    # Then no role leans on a managed policy the audit could not read
    assert all("ManagedPolicyArns" not in r["Properties"] for r in roles.values())
    # and no two functions share a role
    function_roles = [f["Properties"]["Role"]["Fn::GetAtt"][0] for f in functions.values()]
    assert len(set(function_roles)) == len(functions) == 15


def test_slack_channel_runs_nothing(synth: Synth) -> None:
    # Given the Chatbot channel configuration
    (config,) = synth.of_type("AWS::Chatbot::SlackChannelConfiguration").values()
    props = config["Properties"]
    role = synth.resources[props["IamRoleArn"]["Fn::GetAtt"][0]]
    # Then it uses the configured ids, is capped at read-only, and its role has no permissions
    assert (props["SlackWorkspaceId"], props["SlackChannelId"]) == ("T0123ABCDEF", "C0123ABCDEF")
    assert [render(p) for p in props["GuardrailPolicies"]] == [
        "arn:<AWS::Partition>:iam::aws:policy/ReadOnlyAccess"
    ]
    assert "Policies" not in role["Properties"]
    attached = [
        p
        for p in synth.of_type("AWS::IAM::Policy").values()
        if {"Ref": _id(role, synth)} in p["Properties"]["Roles"]
    ]
    assert attached == []


def _id(resource: dict, synth: Synth) -> str:
    return next(k for k, v in synth.resources.items() if v is resource)


KEY_LIKE = [
    re.compile(r"(AKIA|ASIA)[0-9A-Z]{16}"),
    re.compile(r"(?i)(secret|password|passwd|token|api[_-]?key)"),
    re.compile(r"^[A-Za-z0-9/+=]{40}$"),  # the shape of a secret access key
    re.compile(r"xox[abprs]-"),  # Slack tokens
]


def test_lambda_environments_hold_no_key_like_strings(synth: Synth) -> None:
    # Given every function's environment, names and (rendered) values
    findings = []
    for logical_id, function in synth.of_type("AWS::Lambda::Function").items():
        variables = function["Properties"]["Environment"]["Variables"]
        for name, value in variables.items():
            for pattern in KEY_LIKE:
                for text in (name, render(value)):
                    if pattern.search(text):
                        findings.append(f"{logical_id}: {name}={text[:60]}")
    # Then none looks like a credential
    assert findings == []


def test_session_document_is_non_interactive_with_no_free_form_parameter(synth: Synth) -> None:
    from hyperpod_perf.collect.session_document import build_session_document

    # Given the deployed Session document
    (document,) = synth.of_type("AWS::SSM::Document").values()
    props = document["Properties"]
    content = props["Content"]
    # Then it is a NonInteractiveCommands Session document, exactly the one the package builds
    assert props["DocumentType"] == "Session"
    assert content["sessionType"] == "NonInteractiveCommands"
    assert content == build_session_document()
    # and every parameter is held to a pattern (no free-form command can be passed)
    assert content.get("parameters"), "expected the collector's constrained parameter"
    for name, spec in content["parameters"].items():
        assert spec.get("allowedPattern", "").startswith("^"), name
        assert spec["allowedPattern"].endswith("$"), name
    # and StartSession is granted on this document only
    starts = [st for st in statements(synth.template) if "ssm:StartSession" in st.actions]
    assert len(starts) == 1
    documents = [r for r in starts[0].resources if ":document/" in r]
    assert documents == [
        f"arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:document/<{_id(document, synth)}>"
    ]
    assert starts[0].condition == {"BoolIfExists": {"ssm:SessionDocumentAccessCheck": "true"}}


def test_the_audit_catches_writes_wildcards_and_foreign_resources() -> None:
    # Given a template that grants what the pipeline must never have
    def policy(*statements: dict) -> dict:
        return {"Type": "AWS::IAM::Policy", "Properties": {"PolicyDocument": {"Statement": list(statements)}}}

    template = {
        "Resources": {
            "Topic": {"Type": "AWS::SNS::Topic", "Properties": {}},
            "Bad": policy(
                {"Effect": "Allow", "Action": "sagemaker:DeleteCluster", "Resource": "arn:aws:sagemaker:x"},
                {"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::b/*"},
                {"Effect": "Allow", "Action": "sns:Publish", "Resource": "*"},
                {"Effect": "Allow", "Action": "sns:Publish", "Resource": "arn:aws:sns:r:1:someone-else"},
                {"Effect": "Allow", "Action": "ssm:StartSession", "Resource": "arn:aws:ec2:r:1:instance/*"},
                {"Effect": "Allow", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::other-bucket/*"},
                {"Effect": "Allow", "Action": "sns:Publish", "Resource": {"Ref": "Topic"}},
                {"Effect": "Allow", "Action": "sagemaker:DescribeCluster", "Resource": "arn:aws:sagemaker:x"},
            ),
        }
    }
    auditor = Auditor(template)
    # When it is audited
    for statement in statements(template):
        auditor.judge(statement)
    # Then each forbidden grant is listed by action, and the two legitimate ones pass
    listed = [v.split(": ", 1)[1].split(" on ")[0] for v in auditor.violations]
    assert listed == [
        "sagemaker:DeleteCluster",
        "s3:*",
        "sns:Publish",
        "sns:Publish",
        "ssm:StartSession",
        "s3:PutObject",
    ]
    assert sorted(a for _, a, _ in auditor.allowed) == ["sagemaker:DescribeCluster", "sns:Publish"]


def _role_statements(synth: Synth, function_module: str) -> list[dict]:
    prefix = "".join(part.title() for part in function_module.split("_")) + "Role"
    roles = [lid for lid in synth.of_type("AWS::IAM::Role") if lid.startswith(f"Functions{prefix}")]
    assert len(roles) == 1, roles
    return [
        statement
        for policy in synth.of_type("AWS::IAM::Policy").values()
        if {"Ref": roles[0]} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _history_actions(statements: list[dict]) -> set[str]:
    actions: set[str] = set()
    for statement in statements:
        text = json.dumps(statement.get("Resource")) + json.dumps(statement.get("Condition", {}))
        if "history/" in text:
            listed = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            actions.update(listed)
    return actions


def test_history_is_written_by_evaluate_only_and_read_by_publish_only(synth: Synth) -> None:
    # Evaluate: PutObject on history/* and nothing else there; Publish: read and list, no write
    assert _history_actions(_role_statements(synth, "evaluate")) == {"s3:PutObject"}
    assert _history_actions(_role_statements(synth, "publish")) == {"s3:GetObject", "s3:ListBucket"}
    for other in ("collect_node", "resolve_cluster", "nccl_results", "report_problem", "validate"):
        assert _history_actions(_role_statements(synth, other)) == set()


def test_publish_may_read_the_report_objects_its_presigned_links_open_and_no_other(synth: Synth) -> None:
    # A presigned GET is authorised as its signer (Amazon S3 User Guide, presigned URLs): the link
    # in the e-mail and Slack opens only while the Publish role may s3:GetObject the report key.
    reads = [
        statement
        for statement in _role_statements(synth, "publish")
        if "s3:GetObject"
        in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
    ]
    resources = sorted(
        render(r)
        for st in reads
        for r in (st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]])
    )
    bucket = next(lid for lid in synth.of_type("AWS::S3::Bucket") if lid.startswith("StorageReports"))
    # Then GetObject reaches the report objects (reports/*) and the run history it reads, no more
    assert resources == [f"<{bucket}.Arn>/history/*", f"<{bucket}.Arn>/reports/*"]
    # And they are plain Allows: no condition that a browser's GET of the link could fail
    assert all(st["Effect"] == "Allow" and "Condition" not in st for st in reads)


def test_glue_tables_project_their_partitions_and_athena_keeps_results_encrypted_in_the_bucket(
    synth: Synth,
) -> None:
    from hyperpod_perf.history.queries import QUESTIONS
    from hyperpod_perf.history.rows import TABLES

    tables = {
        t["Properties"]["TableInput"]["Name"]: t["Properties"]["TableInput"]
        for t in synth.of_type("AWS::Glue::Table").values()
    }
    assert set(tables) == {f"history_{t}" for t in TABLES}
    for name, table in tables.items():
        parameters = table["Parameters"]
        assert parameters["projection.enabled"] == "true"
        assert (parameters["projection.cluster.type"], parameters["projection.run_date.type"]) == (
            "injected",
            "date",
        )
        assert [k["Name"] for k in table["PartitionKeys"]] == ["cluster", "run_date"]
        columns = [c["Name"] for c in table["StorageDescriptor"]["Columns"]]
        assert columns == [c for c, _ in TABLES[name.removeprefix("history_")]]
        assert (
            table["StorageDescriptor"]["SerdeInfo"]["SerializationLibrary"]
            == "org.openx.data.jsonserde.JsonSerDe"
        )
    (workgroup,) = synth.of_type("AWS::Athena::WorkGroup").values()
    config = workgroup["Properties"]["WorkGroupConfiguration"]
    assert config["EnforceWorkGroupConfiguration"] is True
    assert config["ResultConfiguration"]["EncryptionConfiguration"] == {"EncryptionOption": "SSE_S3"}
    assert config["EngineVersion"]["SelectedEngineVersion"] == "Athena engine version 3"
    queries = {
        q["Properties"]["Name"]: q["Properties"]["QueryString"]
        for q in synth.of_type("AWS::Athena::NamedQuery").values()
    }
    assert queries == {f"hyperpod-perf {q.name}": q.sql for q in QUESTIONS}
    (bucket,) = [b for lid, b in synth.of_type("AWS::S3::Bucket").items() if "Reports" in lid]
    rules = {r["Id"]: r for r in bucket["Properties"]["LifecycleConfiguration"]["Rules"]}
    days = rules["expire-reports"]["ExpirationInDays"]
    assert rules["expire-history"]["Prefix"] == "history/"
    assert (
        rules["expire-history"]["ExpirationInDays"]
        == rules["expire-athena-results"]["ExpirationInDays"]
        == days
    )


def _actions(statement: dict) -> list[str]:
    return statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]


def test_the_topology_reads_are_resolve_clusters_only_each_on_its_narrowest_resource(synth: Synth) -> None:
    # ResolveCluster: DescribeInstanceTopology on * (no resource type exists for it), DescribeCluster
    # on the configured EKS cluster only, the clusters' parameters path only
    resolve = {a: st["Resource"] for st in _role_statements(synth, "resolve_cluster") for a in _actions(st)}
    assert resolve["ec2:DescribeInstanceTopology"] == "*"
    assert render(resolve["eks:DescribeCluster"]) == (
        "arn:<AWS::Partition>:eks:<AWS::Region>:<AWS::AccountId>:cluster/ml-cluster-p5-eks"
    )
    assert render(resolve["ssm:GetParametersByPath"]).endswith(
        ":parameter/hyperpod-perf/HyperPodPerf/clusters"
    )
    assert not [
        a
        for a in resolve
        if a.startswith(("eks:", "ec2:", "sts:"))
        and not a.startswith("eks:Describe")
        and a != "ec2:DescribeInstanceTopology"
    ]
    # and the environment names that path; no other function reads the EKS cluster or the topology
    (function,) = [
        f
        for lid, f in synth.of_type("AWS::Lambda::Function").items()
        if lid.startswith("FunctionsResolveCluster")
    ]
    assert "CLUSTERS_PARAMETER_PATH" in function["Properties"]["Environment"]["Variables"]
    for other in ("collect_node", "evaluate", "publish", "nccl_results", "validate", "report_problem"):
        found = {a for st in _role_statements(synth, other) for a in _actions(st)}
        assert not found & {"ec2:DescribeInstanceTopology", "eks:DescribeCluster"}, other


def test_without_a_cluster_that_opts_in_resolve_cluster_gets_no_eks_or_parameter_read() -> None:
    from aws_cdk import App, Stack
    from aws_cdk import aws_iam as iam

    from infra.config import load_config
    from infra.constructs.functions import topology_environment
    from infra.constructs.permissions import GrantContext, read_kubernetes_topology

    stack = Stack(App(), "Plain")
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    config = load_config({"clusters": [{"name": "ml-cluster-p5"}]})
    context = GrantContext(stack, config, None, None, None, "")  # type: ignore[arg-type]
    assert read_kubernetes_topology(role, context) == []
    assert role.node.try_find_child("DefaultPolicy") is None  # no statement was added
    assert topology_environment(stack, "resolve_cluster", config) is None


def _sagemaker_actions(synth: Synth, function_module: str) -> set[str]:
    return {
        a
        for st in _role_statements(synth, function_module)
        for a in _actions(st)
        if a.startswith("sagemaker:")
    }


def test_the_sagemaker_reads_are_split_between_resolve_cluster_and_node_placement(synth: Synth) -> None:
    # Given the two functions that read the HyperPod API (issue 26: DescribeClusterNode per node is
    # off the critical path, in the Gather branch NodePlacement)
    # Then ResolveCluster describes the cluster and lists its nodes, and no longer describes each
    assert _sagemaker_actions(synth, "resolve_cluster") == {
        "sagemaker:DescribeCluster",
        "sagemaker:ListClusterNodes",
    }
    # And NodePlacement only describes nodes, on the same cluster resources
    assert _sagemaker_actions(synth, "node_placement") == {"sagemaker:DescribeClusterNode"}
    placement = [
        st
        for st in _role_statements(synth, "node_placement")
        if "sagemaker:DescribeClusterNode" in _actions(st)
    ]
    resolve = [
        st
        for st in _role_statements(synth, "resolve_cluster")
        if "sagemaker:ListClusterNodes" in _actions(st)
    ]
    assert [st["Resource"] for st in placement] == [st["Resource"] for st in resolve]
    # And it never touches a node: no SSM session, no EC2 or EKS call
    found = {a for st in _role_statements(synth, "node_placement") for a in _actions(st)}
    assert not {a for a in found if a.startswith(("ssm:", "ec2:", "eks:"))}, found
    # And no other function describes nodes
    for other in ("collect_node", "evaluate", "publish", "nccl_results", "validate", "cluster_logs"):
        assert "sagemaker:DescribeClusterNode" not in _sagemaker_actions(synth, other), other
