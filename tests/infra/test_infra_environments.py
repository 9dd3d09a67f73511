"""The stack synthesizes the same, nag-clean, whatever account and region the CDK CLI passes.

Why: `cdk synth`/`cdk deploy` always set CDK_DEFAULT_REGION (and, with credentials,
CDK_DEFAULT_ACCOUNT). A stack bound to them carries the literal region and account in its ARNs,
and the cdk-nag acknowledgements (written against `<AWS::Region>:<AWS::AccountId>`) stop matching:
the documented deploy failed with five AwsSolutions-IAM5 errors. The app is environment-agnostic,
so every ARN carries the pseudo parameters and the deploy's account and region fill them.
"""

from __future__ import annotations

import json

import pytest
from iam_audit import statements
from infra_synth import Synth, example_context, synthesize

ACCOUNT = "111122223333"
#: A commercial region, AWS GovCloud (partition aws-us-gov) and China (partition aws-cn).
REGIONS = ("us-west-2", "us-gov-west-1", "cn-north-1")


@pytest.fixture(scope="module", params=REGIONS)
def synth_in_region(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Synth]:
    region = request.param
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CDK_DEFAULT_ACCOUNT", ACCOUNT)
        patch.setenv("CDK_DEFAULT_REGION", region)
        return region, synthesize(tmp_path_factory.mktemp(f"cdk.out-{region}"), example_context())


def _wildcard_resources(synth: Synth) -> list[str]:
    """Every identity-policy resource with a wildcard, as cdk-nag renders its evidence."""
    return sorted(
        {
            resource
            for statement in statements(synth.template)
            if statement.kind == "identity"
            for resource in statement.resources
            if "*" in resource and resource != "*"
        }
    )


def test_cdk_nag_passes_with_the_cli_environment_set(synth_in_region: tuple[str, Synth]) -> None:
    # Given the app synthesized with CDK_DEFAULT_ACCOUNT and CDK_DEFAULT_REGION set, as the CLI does
    region, synth = synth_in_region
    # Then the AwsSolutions validation passed: no finding, no error
    violations = [
        v for p in synth.validation_report.get("pluginReports", []) for v in p.get("violations", [])
    ]
    assert synth.error is None, f"{region}: {synth.error}"
    assert violations == []


def test_no_literal_account_or_region_reaches_the_template(synth_in_region: tuple[str, Synth]) -> None:
    # Given the same synth
    region, synth = synth_in_region
    text = json.dumps(synth.template)
    # Then neither the CLI's account nor its region is baked in anywhere
    assert ACCOUNT not in text
    assert region not in text
    # And the wildcard grants the acknowledgements name carry the pseudo parameters instead
    wildcards = _wildcard_resources(synth)
    scoped_to_account = [r for r in wildcards if r.startswith("arn:<AWS::Partition>:")]
    assert scoped_to_account, wildcards
    for resource in scoped_to_account:
        service = resource.split(":")[2]
        if service != "s3":  # S3 ARNs have no region or account field
            assert ":<AWS::Region>:<AWS::AccountId>:" in resource, resource


def test_the_template_is_the_same_in_every_environment(
    synth_in_region: tuple[str, Synth], synth: Synth
) -> None:
    # Given the synth with the CLI's environment and the session's synth of the same configuration
    region, bound = synth_in_region
    # Then the templates are identical: one artifact, whoever synthesizes it, deploys anywhere
    assert bound.template == synth.template, region


def test_the_context_may_be_given_as_json_text_on_the_command_line() -> None:
    from infra.config import ConfigError, load_config

    # Given the configuration as `cdk synth -c hyperpod-perf='{...}'` passes it (a string)
    config = load_config('{"notifyPolicy": "concern", "nodeSampleSize": 3}')
    # Then it is read as the object
    assert (config.notify_policy.value, config.node_sample_size) == ("concern", 3)
    # And text that is not JSON is one clear line, not a traceback
    with pytest.raises(ConfigError, match="given as text is not JSON"):
        load_config("{notifyPolicy: concern}")
