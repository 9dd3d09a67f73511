"""The trigger's per-cluster configuration, read from SSM parameters under one path (moto).

Why: the configuration left the Lambda environment (4 KB for all variables together); the
trigger now reads one parameter per cluster, once per cold start. Pagination matters: AWS returns
at most 10 parameters a page, and 50 clusters are 5 pages.
"""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws
from pydantic import ValidationError

from hyperpod_perf.aws import clients
from hyperpod_perf.handlers import settings
from hyperpod_perf_dev.localrun.deployment import put_cluster_parameters

REGION = "us-west-2"
PATH = "/hyperpod-perf/HyperPodPerf/clusters"


@pytest.fixture
def ssm(monkeypatch: pytest.MonkeyPatch):
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        clients.reset()
        settings.reset_cache()
        yield boto3.client("ssm", region_name=REGION)
        clients.reset()
        settings.reset_cache()


def _cluster(i: int) -> dict[str, object]:
    return {
        "name": f"ml-cluster-{i:02d}",
        "alarmNames": [f"ml-cluster-{i:02d}-step-time-high", f"HyperPodPerf-FsxAlarms{i:02d}-ABCDEF{i:06d}"],
        "alarmPrefixes": [f"ml-cluster-{i:02d}-nccl-"],
        "fsxIds": [f"fs-0{i:016x}"],
    }


def test_fifty_clusters_are_read_over_every_page_once_per_container(ssm) -> None:
    # Given 50 clusters' parameters under the path, and one parameter outside it
    put_cluster_parameters(ssm, PATH, [_cluster(i) for i in range(50)])
    ssm.put_parameter(Name="/hyperpod-perf/Other/clusters/x", Value="{}", Type="String")
    # When the trigger's settings read the path
    clusters = settings.load_clusters(PATH)
    # Then all 50 are there, in name order, with their alarms, prefixes and file systems
    assert [c.name for c in clusters] == [f"ml-cluster-{i:02d}" for i in range(50)]
    assert clusters[7].owns_alarm("ml-cluster-07-nccl-allreduce")
    assert clusters[7].fsx_ids == ("fs-00000000000000007",)
    # And a second call (a warm invocation) does not read SSM again
    ssm.delete_parameter(Name=f"{PATH}/ml-cluster-00")
    assert len(settings.load_clusters(PATH)) == 50


def test_no_cluster_configured_is_an_empty_configuration(ssm) -> None:
    assert settings.load_clusters(PATH) == ()


def test_a_malformed_parameter_names_itself_in_one_line(ssm) -> None:
    # Given a parameter whose cluster name breaks the pattern
    ssm.put_parameter(Name=f"{PATH}/bad", Value=json.dumps({"name": "bad name!"}), Type="String")
    # Then the settings error names the parameter and the field, without a pydantic dump
    with pytest.raises(settings.SettingsError) as error:
        settings.load_clusters(PATH)
    assert str(error.value).startswith(f"SSM parameter {PATH}/bad: invalid cluster configuration (name:")
    assert "\n" not in str(error.value)


def test_the_trigger_settings_require_a_parameter_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a trigger environment with a relative or trailing-slash path
    arn = "arn:aws:states:us-west-2:111122223333:stateMachine:m"
    for bad in ("hyperpod-perf/clusters", "/hyperpod-perf/clusters/", ""):
        env = {"STATE_MACHINE_ARN": arn, "CLUSTERS_PARAMETER_PATH": bad}
        with pytest.raises(ValidationError, match="CLUSTERS_PARAMETER_PATH"):
            settings.TriggerSettings.model_validate(env)
    # And the stack's form is accepted
    ok = settings.TriggerSettings.model_validate({"STATE_MACHINE_ARN": arn, "CLUSTERS_PARAMETER_PATH": PATH})
    assert ok.clusters_parameter_path == PATH
