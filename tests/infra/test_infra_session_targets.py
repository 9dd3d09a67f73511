"""`sessionTargetResourceArns: ["*"]`, the form of AWS's HyperPod guide, as the documented fallback.

Why a test of its own: `"*"` widens who StartSession may reach, so the grant must widen targets
only. A plain `Resource: *` would also allow every Session document (AWS-StartInteractiveCommand,
a shell); the stack instead grants StartSession on everything that is not a Session document,
plus this project's document, and the audit accepts that statement only when `"*"` was configured.
"""

from __future__ import annotations

import pytest
from iam_audit import ANY_SESSION_DOCUMENT, Auditor, statements
from infra_synth import Synth, example_context, synthesize

from infra.config import load_config


@pytest.fixture(scope="module")
def synth_any_target(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    context = {**example_context(), "sessionTargetResourceArns": ["*"]}
    return synthesize(tmp_path_factory.mktemp("cdk.out-any-target"), context)


def _starts(synth: Synth):
    return [st for st in statements(synth.template) if "ssm:StartSession" in st.actions]


def test_star_alone_is_accepted_and_mixed_with_arns_is_not() -> None:
    assert load_config({"sessionTargetResourceArns": ["*"]}).any_session_target
    assert not load_config(
        {"sessionTargetResourceArns": ["arn:aws:sagemaker:us-west-2:111122223333:cluster/*"]}
    ).any_session_target
    assert not load_config({}).any_session_target


def test_star_grants_any_target_but_only_the_projects_document(synth_any_target: Synth) -> None:
    # Given the stack synthesized with sessionTargetResourceArns ["*"]
    assert synth_any_target.error is None, synth_any_target.error
    pinned, any_target = sorted(_starts(synth_any_target), key=lambda st: bool(st.not_resources))
    # Then one statement names this project's Session document only
    (document_id,) = synth_any_target.of_type("AWS::SSM::Document")
    assert pinned.resources == (
        f"arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:document/<{document_id}>",
    )
    # And the other reaches any target except a Session document (own or AWS's), same condition
    assert any_target.resources == ()
    assert set(any_target.not_resources) == ANY_SESSION_DOCUMENT
    for statement in (pinned, any_target):
        assert statement.condition == {"BoolIfExists": {"ssm:SessionDocumentAccessCheck": "true"}}


def test_the_audit_allows_it_only_when_star_was_configured(synth_any_target: Synth, synth: Synth) -> None:
    # Given the any-target template audited as configured, and audited as if "*" had not been set
    configured = Auditor(synth_any_target.template, any_session_target=True)
    unconfigured = Auditor(synth_any_target.template)
    for statement in statements(synth_any_target.template):
        configured.judge(statement)
        unconfigured.judge(statement)
    # Then only the configured audit passes; the other names the any-target grant
    assert configured.violations == []
    assert [v for v in unconfigured.violations if "ssm:StartSession" in v] != []
    assert len(unconfigured.violations) == 1
    # And the default stack has no such grant at all
    assert all(not st.not_resources for st in statements(synth.template))
    assert len(_starts(synth)) == 1


def test_star_adds_no_resource_wildcard_for_cdk_nag_to_acknowledge(synth_any_target: Synth) -> None:
    # Given the acknowledgements recorded on the collector's role
    acknowledged = [
        rule
        for path, entries in synth_any_target.metadata.items()
        if "CollectNodeRole" in path
        for entry in entries
        if entry["type"] == "aws:cdk:acknowledged-rules"
        for rule in entry["data"]
    ]
    # Then none acknowledges a "*" target: the grant has no Resource wildcard (NotResource instead)
    assert acknowledged
    assert not [r for r in acknowledged if r.endswith("[Resource::*]") and "StartSession" in r]
    assert synth_any_target.validation_report.get("pluginReports", []) == []


# --- finding 8 of the audit (issue 24): StartSession on the configured clusters, TerminateSession
# --- on the sessions the role itself started, the "*" mode flagged at synth.


def _warnings(synth: Synth) -> list[str]:
    return [
        str(entry["data"])
        for entries in synth.metadata.values()
        for entry in entries
        if entry["type"] == "aws:cdk:warning"
    ]


@pytest.fixture(scope="module")
def synth_without_ids(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    context = example_context()
    clusters = [{k: v for k, v in c.items() if k != "id"} for c in context["clusters"]]
    return synthesize(tmp_path_factory.mktemp("cdk.out-no-ids"), {**context, "clusters": clusters})


def test_start_session_reaches_only_the_configured_clusters_when_their_ids_are_given(synth: Synth) -> None:
    # Given the example configuration, whose one cluster carries its id
    (cluster,) = example_context()["clusters"]
    # When the collector's StartSession statement is read
    (start,) = _starts(synth)
    targets = [r for r in start.resources if ":document/" not in r]
    # Then it names that cluster's ARN, not the account's `cluster/*`
    own = "arn:<AWS::Partition>:sagemaker:<AWS::Region>:<AWS::AccountId>"
    assert targets == [f"{own}:cluster/{cluster['id']}"]
    # And the audit, told the configured ids, accepts it; told other ids, it names the grant
    other = Auditor(synth.template, session_cluster_ids=("ffffffffffff",))
    for statement in statements(synth.template):
        other.judge(statement)
    assert [v for v in other.violations if "ssm:StartSession" in v] != []
    assert not any("give each configured cluster" in w for w in _warnings(synth))


def test_without_cluster_ids_start_session_stays_account_wide_and_the_synth_says_so(
    synth_without_ids: Synth,
) -> None:
    # Given the same configuration without the cluster's id
    assert synth_without_ids.error is None, synth_without_ids.error
    (start,) = _starts(synth_without_ids)
    # Then StartSession reaches the account's clusters (ids unknown); a synth warning says how to narrow it
    assert [r for r in start.resources if ":document/" not in r] == [
        "arn:<AWS::Partition>:sagemaker:<AWS::Region>:<AWS::AccountId>:cluster/*"
    ]
    assert any("give each configured cluster its `id`" in w for w in _warnings(synth_without_ids))


def test_terminate_session_acts_only_on_sessions_tagged_with_the_roles_own_user_id(synth: Synth) -> None:
    # Given every statement granting ssm:TerminateSession
    terminates = [st for st in statements(synth.template) if "ssm:TerminateSession" in st.actions]
    # Then there is one, on this region's and account's sessions, conditioned on the session's own tag
    (terminate,) = terminates
    assert terminate.resources == ("arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:session/*",)
    assert terminate.condition == {
        "StringLike": {"ssm:resourceTag/aws:ssmmessages:session-id": ["${aws:userid}"]}
    }
    # And the audit refuses the old unconditioned form
    bare = {
        "Resources": {
            "R": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "PolicyDocument": {
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Action": "ssm:TerminateSession",
                                "Resource": "arn:aws:ssm:us-east-1:111122223333:session/*",
                            }
                        ]
                    }
                },
            }
        }
    }
    auditor = Auditor(bare)
    for statement in statements(bare):
        auditor.judge(statement)
    assert len(auditor.violations) == 1 and "ssm:TerminateSession" in auditor.violations[0]


def test_the_any_target_mode_is_flagged_at_synth(synth_any_target: Synth, synth: Synth) -> None:
    # Given the "*" mode and the default
    # Then only the "*" synth carries the warning that it is weaker
    assert any("weaker than the default" in w for w in _warnings(synth_any_target))
    assert not any("weaker than the default" in w for w in _warnings(synth))
