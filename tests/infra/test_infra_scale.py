"""Fifty clusters fit AWS's limits: every function's environment < 4 KB, one SSM parameter each.

Why: with the cluster configuration in the environment, 50 clusters shaped like
infra/example-context.json gave every function ~20 KB of variables (CreateFunction fails above
4 KB, at about eleven clusters). The configuration now lives in SSM parameters under one path.
Deploy-time values (Refs, GetAtts) are counted at the construct's upper bound, so a size that
passes here cannot grow past the limit when CloudFormation fills it in.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from iam_audit import statements
from infra_synth import Synth, example_context, synthesize

from infra.config import ClusterConfig
from infra.constructs.cluster_config import (
    ADVANCED_PARAMETER_LIMIT_BYTES,
    ALARM_NAME_MAX,
    DEPLOY_TIME_VALUE_MAX,
    LAMBDA_ENVIRONMENT_LIMIT_BYTES,
    STANDARD_PARAMETER_LIMIT_BYTES,
    ClusterParameters,
    ConfigurationTooLarge,
    check_environment,
    cluster_document,
    document_size,
)
from infra.constructs.triggers import EVENT_PATTERN_LIMIT, pattern_size, split_to_fit

CLUSTERS = 50


def fifty_clusters() -> dict[str, Any]:
    """The example configuration with its one cluster repeated 50 times (unique names and FSx ids)."""
    context = example_context()
    (template,) = context["clusters"]
    clusters = []
    for i in range(CLUSTERS):
        cluster = copy.deepcopy(template)
        cluster["name"] = f"{template['name']}-{i:02d}"
        cluster["alarmNames"] = [f"{n}-{i:02d}" for n in template["alarmNames"]]
        cluster["alarmPrefixes"] = [f"{p}{i:02d}-" for p in template["alarmPrefixes"]]
        for j, fs in enumerate(cluster["fsx"]):
            fs["id"] = f"fs-0{i:08x}{j:08x}"
        clusters.append(cluster)
    return {**context, "clusters": clusters}


def bounded_length(value: Any) -> int:
    """A template value's bytes once deployed: literals as they are, Refs/GetAtts at their bound."""
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, dict) and ("Ref" in value or "Fn::GetAtt" in value):
        return DEPLOY_TIME_VALUE_MAX
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return sum(bounded_length(p) for p in parts) + len(separator) * max(len(parts) - 1, 0)
    raise AssertionError(f"unexpected template value {value!r}")


@pytest.fixture(scope="module")
def synth50(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(tmp_path_factory.mktemp("cdk.out-50"), fifty_clusters())


def test_fifty_clusters_synthesize_nag_clean(synth50: Synth) -> None:
    assert synth50.error is None, synth50.error
    assert len(synth50.context["clusters"]) == CLUSTERS


def _environment_sizes(stack: Synth) -> dict[str, int]:
    """Each function's environment as Lambda counts it (keys and values together)."""
    sizes = {}
    for logical_id, function in stack.of_type("AWS::Lambda::Function").items():
        variables = function["Properties"]["Environment"]["Variables"]
        assert "CLUSTERS_CONFIG" not in variables
        sizes[logical_id] = sum(len(k) + bounded_length(v) for k, v in variables.items())
    return sizes


def test_every_function_environment_stays_under_4_kb(synth50: Synth, synth: Synth) -> None:
    # Given every function of the 50-cluster stack, counted as Lambda counts it
    sizes = _environment_sizes(synth50)
    assert len(sizes) == 15  # ClusterMetrics (issue 21) and NodePlacement (issue 26) included
    # Then each is under 4 KB, with the deploy-time values at their upper bound
    assert max(sizes.values()) < LAMBDA_ENVIRONMENT_LIMIT_BYTES, sizes
    # And the environment no longer grows with the clusters: the one-cluster stack's is the same
    assert sizes == _environment_sizes(synth)


def test_each_cluster_has_one_standard_parameter_under_the_triggers_path(synth50: Synth) -> None:
    # Given the SSM parameters of the 50-cluster stack
    parameters = synth50.of_type("AWS::SSM::Parameter").values()
    names = sorted(p["Properties"]["Name"] for p in parameters)
    # Then there is one per cluster under the path, each a Standard (free) parameter
    assert names == sorted(f"/hyperpod-perf/HyperPodPerf/clusters/ml-cluster-p5-{i:02d}" for i in range(50))
    assert {p["Properties"]["Tier"] for p in parameters} == {"Standard"}
    values = [p["Properties"]["Value"] for p in parameters]
    # And together they are what no environment could hold (over 4 KB), each far under its 4 KB
    assert all(isinstance(v, str) for v in values)  # every name is known at synth time: exact sizes
    assert sum(len(v.encode()) for v in values) > LAMBDA_ENVIRONMENT_LIMIT_BYTES
    for value in values:
        assert value.count("hyperpod-perf-HyperPodPerf-fsx-") == 2
        assert len(value.encode()) < STANDARD_PARAMETER_LIMIT_BYTES / 4, value


def test_every_event_pattern_fits_eventbridges_2048_characters(synth50: Synth) -> None:
    # Given every rule of the 50-cluster stack
    rules = synth50.of_type("AWS::Events::Rule").values()
    patterns = [r["Properties"]["EventPattern"] for r in rules]
    # Then each pattern is literal (no deploy-time value) and within 2,048 characters as JSON
    for pattern in patterns:
        text = json.dumps(pattern)
        assert '"Ref"' not in text and len(text) <= EVENT_PATTERN_LIMIT, len(text)
    # And together they still match every configured alarm name and prefix, and every cluster
    alarm_matches = [
        m for p in patterns if p["source"] == ["aws.cloudwatch"] for m in p["detail"]["alarmName"]
    ]
    expected = [n for c in synth50.context["clusters"] for n in c["alarmNames"]]
    expected += [{"prefix": p} for c in synth50.context["clusters"] for p in c["alarmPrefixes"]]
    assert alarm_matches == [*expected, {"prefix": "hyperpod-perf-HyperPodPerf-fsx-"}]
    assert len([p for p in patterns if p["source"] == ["aws.cloudwatch"]]) > 1
    health = [p for p in patterns if p["detail-type"] == ["SageMaker HyperPod Cluster Node Health Event"]]
    assert [n for p in health for n in p["detail"]["ClusterName"]] == [
        c["name"] for c in synth50.context["clusters"]
    ]


def test_split_to_fit_packs_at_the_limit_and_refuses_what_cannot_fit() -> None:
    def pattern(values: list[str]) -> dict[str, list[str]]:
        return {"v": values}

    # Given two values whose pattern is exactly 19 characters ({"v": ["aa", "bb"]})
    assert pattern_size(pattern(["aa", "bb"])) == 19
    # Then a 19-character limit keeps them together, and 18 splits them
    assert split_to_fit(["aa", "bb"], pattern, limit=19) == [["aa", "bb"]]
    assert split_to_fit(["aa", "bb"], pattern, limit=18) == [["aa"], ["bb"]]
    # And a single value over the limit is a synth error naming EventBridge's limit
    with pytest.raises(ConfigurationTooLarge, match="EventBridge's 10-character limit"):
        split_to_fit(["aa"], pattern, limit=10)


def test_the_trigger_reads_that_path_and_nothing_else(synth50: Synth) -> None:
    # Given every statement granting a Parameter Store read
    reads = [
        st for st in statements(synth50.template) if any(a.startswith("ssm:GetParameter") for a in st.actions)
    ]
    # Then only the trigger's role, and ResolveCluster's (the example cluster opts in to the
    # Kubernetes topology), read, by path, exactly the clusters' path (no wildcard)
    assert sorted((st.where.split(" ")[0][:20], st.actions) for st in reads) == [
        ("FunctionsResolveClus", ("ssm:GetParametersByPath",)),
        ("TriggersTriggerRoleD", ("ssm:GetParametersByPath",)),
    ]
    assert {st.resources for st in reads} == {
        (
            "arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:parameter/hyperpod-perf/HyperPodPerf/clusters",
        )
    }


# --- the limits, at the edge -----------------------------------------------------------------------


def _cluster_of_size(size: int) -> ClusterConfig:
    """A cluster whose configuration document is exactly `size` bytes (alarm names of <= 255)."""
    names: list[str] = []
    while True:
        cluster = ClusterConfig(name="edge", alarmNames=names)
        missing = size - document_size(cluster_document(cluster, []))
        if missing == 0:
            return cluster
        if names and 1 <= len(names[-1]) + missing <= 255:
            names[-1] = "a" * (len(names[-1]) + missing)
        elif missing > 0:
            names.append("a")
        else:  # the new name overshot: take the difference from the one before
            names[-2] = "a" * (len(names[-2]) + missing)


def _tier(tmp_path: Path, cluster: ClusterConfig) -> str:
    stack = cdk.Stack(cdk.App(outdir=str(tmp_path)), "Edge")
    parameters = ClusterParameters(stack, "P", clusters=(cluster,), fsx_alarm_names={})
    return stack.resolve(parameters.parameters["edge"].node.default_child.tier)


@pytest.mark.parametrize(
    ("size", "tier"),
    [(STANDARD_PARAMETER_LIMIT_BYTES, "Standard"), (STANDARD_PARAMETER_LIMIT_BYTES + 1, "Advanced")],
)
def test_a_configuration_over_4_kb_takes_an_advanced_parameter(tmp_path: Path, size: int, tier: str) -> None:
    assert _tier(tmp_path, _cluster_of_size(size)) == tier


def test_a_configuration_at_8_kb_fits_and_one_byte_more_is_a_synth_error_naming_the_limit(
    tmp_path: Path,
) -> None:
    assert _tier(tmp_path / "at", _cluster_of_size(ADVANCED_PARAMETER_LIMIT_BYTES)) == "Advanced"
    with pytest.raises(ConfigurationTooLarge) as error:
        _tier(tmp_path / "over", _cluster_of_size(ADVANCED_PARAMETER_LIMIT_BYTES + 1))
    assert "cluster edge may reach 8193 bytes" in str(error.value)
    assert "at most 8192 bytes (8 KB, advanced tier)" in str(error.value)


def test_generated_alarm_names_count_at_their_255_character_maximum() -> None:
    cluster = ClusterConfig(name="c")
    literal = document_size(cluster_document(cluster, ["n"]))
    token = document_size(cluster_document(cluster, [cdk.Token.as_string({"Ref": "Alarm"})]))
    assert token - literal == ALARM_NAME_MAX - 1


def test_an_environment_over_4_kb_is_a_synth_error_naming_the_limit() -> None:
    # Given environments of exactly 4,096 bytes (keys and values) and one byte more
    at_limit = {"K": "v" * (LAMBDA_ENVIRONMENT_LIMIT_BYTES - 1)}
    assert check_environment("trigger", at_limit) == LAMBDA_ENVIRONMENT_LIMIT_BYTES
    with pytest.raises(ConfigurationTooLarge, match=r"may reach 4097 bytes; AWS Lambda allows 4096 bytes"):
        check_environment("trigger", {"K": "v" * LAMBDA_ENVIRONMENT_LIMIT_BYTES})
    # And a deploy-time value counts at its bound, not at the length of its placeholder
    token = cdk.Token.as_string({"Ref": "Bucket"})
    assert check_environment("trigger", {"B": token}) == 1 + DEPLOY_TIME_VALUE_MAX
