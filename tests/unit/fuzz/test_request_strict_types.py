"""Strict types at every edge (issue 24, finding 7): nothing is coerced, s3:// prefixes are
normalised or refused, and a cluster ARN must be in the deployment's partition, region and account.

What the audit reproduced on the old models, each now refused with the field named:
`sample_size: true` -> 1, `"8"` -> 8, `window_minutes: 60.0` -> 60; `s3://b//x` and `s3://b/./x`;
any bucket; a cluster ARN of another account, partition, region, or a malformed partition.
The same strictness holds for the state machine's task payloads and the deployment configuration.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hyperpod_perf.domain.request import Deployment, DiagnoseRequest
from hyperpod_perf.domain.steps import CollectEvent, ProblemEvent
from hyperpod_perf.pipeline.errors import InvalidRequest
from hyperpod_perf.pipeline.request import validate_request
from hyperpod_perf.pipeline.triggers import ClusterTriggerConfig
from infra.config import ConfigError, load_config

DEPLOYMENT = Deployment(partition="aws", region="us-west-2", account="111122223333")
ARN = "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef123456"
STARTED = "2026-01-01T00:00:00Z"

COERCIONS = {
    "sample_size true": ("sample_size", True),
    "sample_size '8'": ("sample_size", "8"),
    "sample_size 8.0": ("sample_size", 8.0),
    "window_minutes 60.0": ("window_minutes", 60.0),
    "window_minutes '60'": ("window_minutes", "60"),
    "cluster 42": ("cluster", 42),
    "reason 1": ("reason", 1),
    "nodes a string": ("nodes", "i-0123456789abcdef0"),
    "nodes [1]": ("nodes", [1]),
    "scope 1": ("scope", 1),
    "region true": ("region", True),
}


@pytest.mark.parametrize("case", COERCIONS)
def test_a_value_of_the_wrong_type_is_refused_not_coerced(case: str, outcome) -> None:
    # Given a request whose field has a value the old model coerced
    field, value = COERCIONS[case]
    raw = {"cluster": "ml-cluster", field: value}
    # When it is validated
    with pytest.raises(ValidationError) as caught:
        DiagnoseRequest.model_validate(raw)
    # Then the error names that field
    assert caught.value.errors()[0]["loc"][0] == field
    outcome(f"request `{case}`", "ValidationError on the field (no coercion)")


def test_json_shapes_still_validate_lists_and_enum_values_as_json_carries_them() -> None:
    # Given the request as the state machine passes it (arrays, enum values as strings)
    request = DiagnoseRequest.model_validate(
        {
            "cluster": "c",
            "nodes": ["i-0123456789abcdef0"],
            "scope": "focus",
            "notify": "concern",
            "sample_size": 0,
        }
    )
    # Then lists become tuples and strings their enum members; 0 is a valid int, not False
    assert request.nodes == ("i-0123456789abcdef0",)
    assert (request.scope.value, request.notify.value, request.sample_size) == ("focus", "concern", 0)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("s3://bucket", "s3://bucket/"),
        ("s3://bucket/", "s3://bucket/"),
        ("s3://bucket/nccl/run-1/", "s3://bucket/nccl/run-1/"),
        ("s3://bucket/nccl/run-", "s3://bucket/nccl/run-"),
    ],
)
def test_s3_prefixes_are_normalised(given: str, expected: str) -> None:
    request = DiagnoseRequest.model_validate({"cluster": "c", "nccl_s3_prefix": given})
    assert request.nccl_s3_prefix == expected


@pytest.mark.parametrize(
    "prefix",
    [
        "s3://bucket//x/",
        "s3://bucket/a//b",
        "s3://bucket/./x/",
        "s3://bucket/x/./",
        "s3://bucket/../other/",
        "s3://bucket/x/..",
        "s3://bucket//",
    ],
)
@pytest.mark.parametrize("field", ["nccl_s3_prefix", "job_logs_s3_prefix"])
def test_empty_dot_and_dot_dot_segments_are_refused(prefix: str, field: str, outcome) -> None:
    with pytest.raises(ValidationError) as caught:
        DiagnoseRequest.model_validate({"cluster": "c", field: prefix})
    assert caught.value.errors()[0]["loc"] == (field,)
    assert "segments" in caught.value.errors()[0]["msg"]
    outcome(f"`{field}` {prefix}", "ValidationError: empty, '.' or '..' segment")


@pytest.mark.parametrize(
    ("prefix", "allowed"),
    [
        ("s3://mine/nccl/run-1/", True),
        ("s3://mine/nccl/", True),
        ("s3://mine/nccl", False),  # lists `nccl*`: more than the grant's `nccl/`
        ("s3://mine/nccl-other/", False),
        ("s3://mine/", False),
        ("s3://other/nccl/run-1/", False),
        ("s3://minex/nccl/", False),
        ("s3://logs/anything/", True),  # a whole configured bucket
    ],
)
def test_a_deployment_reads_only_the_buckets_and_prefixes_it_was_configured_for(
    prefix: str, allowed: bool, outcome
) -> None:
    # Given a deployment configured to read mine/nccl/ and the whole logs bucket
    readable = ("mine/nccl/", "logs/")
    # When a request names an s3:// prefix
    run = {"cluster": "c", "nccl_s3_prefix": prefix}
    if allowed:
        assert validate_request(run, "e", STARTED, readable_s3_prefixes=readable)["request"]["nccl_s3_prefix"]
        return
    # Then one outside them is refused, naming the field and what is configured
    with pytest.raises(
        InvalidRequest, match=r"'nccl_s3_prefix'.*does not read \(configured: s3://mine/nccl/"
    ):
        validate_request(run, "e", STARTED, readable_s3_prefixes=readable)
    outcome(f"`nccl_s3_prefix` {prefix} outside the configured buckets", "InvalidRequest naming the field")


@pytest.mark.parametrize(
    ("arn", "why"),
    [
        ("arn:aws:sagemaker:us-west-2:999999999999:cluster/abcdef123456", "another account"),
        ("arn:aws:sagemaker:eu-west-1:111122223333:cluster/abcdef123456", "another region"),
        ("arn:aws-cn:sagemaker:us-west-2:111122223333:cluster/abcdef123456", "another partition"),
    ],
)
def test_a_cluster_arn_outside_the_deployment_is_refused(arn: str, why: str, outcome) -> None:
    # Given the deployment's own ARN is accepted
    accepted = validate_request({"cluster": ARN}, "e", STARTED, deployment=DEPLOYMENT)
    assert accepted["request"]["cluster"] == ARN
    # Then one of another account, region or partition is refused, saying which deployment this is
    with pytest.raises(InvalidRequest, match="this deployment diagnoses aws, us-west-2, 111122223333 only"):
        validate_request({"cluster": arn}, "e", STARTED, deployment=DEPLOYMENT)
    outcome(f"cluster ARN of {why}", "InvalidRequest: not this deployment's partition/region/account")


@pytest.mark.parametrize(
    "arn",
    [
        "arn:awsx:sagemaker:us-west-2:111122223333:cluster/abcdef123456",
        "arn:aws-:sagemaker:us-west-2:111122223333:cluster/abcdef123456",
        "arn:aws:sagemaker:us-west-22x:111122223333:cluster/abcdef123456",
    ],
)
def test_a_malformed_partition_or_region_is_refused_even_without_a_deployment(arn: str, outcome) -> None:
    with pytest.raises(ValidationError):
        DiagnoseRequest.model_validate({"cluster": arn})
    outcome("cluster ARN with a malformed partition or region", "ValidationError on `cluster`")


def test_the_deployment_is_read_from_the_invoked_functions_arn() -> None:
    arn = "arn:aws-us-gov:lambda:us-gov-west-1:111122223333:function:f:live"
    assert Deployment.from_function_arn(arn) == Deployment("aws-us-gov", "us-gov-west-1", "111122223333")
    assert Deployment.from_function_arn("") is None
    assert Deployment.from_function_arn("not an arn") is None


@pytest.mark.parametrize(
    ("model", "raw"),
    [
        (CollectEvent, {"attempt": "1"}),
        (CollectEvent, {"rate_per_s": "2"}),
        (ProblemEvent, {"rejected": "yes"}),
        (ProblemEvent, {"execution": 7}),
        (ClusterTriggerConfig, {"name": "c", "alarmNames": "one-alarm"}),
    ],
)
def test_task_payloads_and_the_trigger_configuration_are_strict(model, raw) -> None:
    base = {
        CollectEvent: {
            "batch": {"index": 0, "targets": [{"instance_id": "i-0123456789abcdef0", "cluster_id": "abc"}]},
            "run": {"prefix": "reports/c/x/", "execution": "e", "started": STARTED},
            "rate_per_s": 1.0,
        },
        ProblemEvent: {},
        ClusterTriggerConfig: {},
    }[model]
    model.model_validate(base | ({"name": "c"} if model is ClusterTriggerConfig else {}))
    with pytest.raises(ValidationError):
        model.model_validate(base | raw)


@pytest.mark.parametrize(
    "raw",
    [
        {"mapMaxConcurrency": "30"},
        {"nodeSampleSize": True},
        {"sessionRatePerSecond": "2"},
        {"clusters": [{"name": "c", "alarmNames": "not-a-list"}]},
        {"ncclResultBuckets": ["bucket/a//b"]},
        {"ncclResultBuckets": ["bucket/./a"]},
        {"clusters": [{"name": "c", "id": "ABC"}]},
    ],
)
def test_the_deployment_configuration_refuses_what_it_used_to_coerce(raw) -> None:
    with pytest.raises(ConfigError):
        load_config(raw)
