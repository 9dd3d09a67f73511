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
