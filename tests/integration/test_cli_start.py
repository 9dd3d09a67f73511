"""`hyperpod-perf start` sends the documented execution input, job-log locations included."""

from __future__ import annotations

import json

import boto3
from moto import mock_aws

from hyperpod_perf.cli import main

DEFINITION = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}})


@mock_aws
def test_start_passes_the_job_log_locations_in_the_execution_input(monkeypatch, capsys) -> None:
    # Given a deployed state machine (moto) and credentials for it
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    sfn = boto3.client("stepfunctions", region_name="us-west-2")
    arn = sfn.create_state_machine(
        name="diagnose", definition=DEFINITION, roleArn="arn:aws:iam::123456789012:role/sfn"
    )["stateMachineArn"]

    # When started with job-log locations
    code = main(
        [
            "start",
            "--cluster", "ml-cluster",
            "--region", "us-west-2",
            "--state-machine-arn", arn,
            "--job-logs-s3-prefix", "s3://train-logs/run-42/",
            "--job-logs-group", "/aws/batch/job",
            "--job-logs-filter", "NCCL",
        ]
    )  # fmt: skip

    # Then the execution input carries them as the request fields
    assert code == 0
    execution = sfn.list_executions(stateMachineArn=arn)["executions"][0]["executionArn"]
    sent = json.loads(sfn.describe_execution(executionArn=execution)["input"])
    assert sent["cluster"] == "ml-cluster"
    assert (sent["job_logs_s3_prefix"], sent["job_logs_group"], sent["job_logs_filter"]) == (
        "s3://train-logs/run-42/",
        "/aws/batch/job",
        "NCCL",
    )
    assert capsys.readouterr().out.startswith("started arn:aws:states:us-west-2:")


def test_start_refuses_a_job_log_prefix_that_is_not_s3_with_one_line(capsys) -> None:
    code = main(["start", "--cluster", "ml-cluster", "--job-logs-s3-prefix", "/local/dir"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("hyperpod-perf: job_logs_s3_prefix") and err.count("\n") == 1


@mock_aws
def test_start_passes_the_metrics_source_and_the_tier(monkeypatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    sfn = boto3.client("stepfunctions", region_name="us-west-2")
    arn = sfn.create_state_machine(
        name="diagnose", definition=DEFINITION, roleArn="arn:aws:iam::123456789012:role/sfn"
    )["stateMachineArn"]
    code = main(
        [
            "start", "--cluster", "ml-cluster", "--region", "us-west-2", "--state-machine-arn", arn,
            "--prometheus-workspace", "ws-0123abcd-4567-89ef-0123-456789abcdef", "--deep-collect", "all",
        ]
    )  # fmt: skip
    assert code == 0
    execution = sfn.list_executions(stateMachineArn=arn)["executions"][0]["executionArn"]
    sent = json.loads(sfn.describe_execution(executionArn=execution)["input"])
    assert (sent["prometheus_workspace_id"], sent["deep_collect"]) == (
        "ws-0123abcd-4567-89ef-0123-456789abcdef",
        "all",
    )


def _seeded_state_machine(monkeypatch):
    """A deployed state machine and a two-node cluster whose nodes report their host names."""
    from hyperpod_moto import GroupSeed, NodeSeed, extend_moto_hyperpod, seed_cluster

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    extend_moto_hyperpod(monkeypatch)
    seed_cluster(
        boto3.client("sagemaker", region_name="us-west-2"),
        "ml-cluster",
        [
            GroupSeed(
                "workers",
                "ml.p5.48xlarge",
                [
                    NodeSeed("i-0a1b2c3d4e5f60001", hostname="ip-10-1-117-147"),
                    NodeSeed("i-0a1b2c3d4e5f60002", hostname="ip-10-1-42-84"),
                ],
            )
        ],
    )
    sfn = boto3.client("stepfunctions", region_name="us-west-2")
    return sfn, sfn.create_state_machine(
        name="diagnose", definition=DEFINITION, roleArn="arn:aws:iam::123456789012:role/sfn"
    )["stateMachineArn"]


@mock_aws
def test_start_node_by_host_name_sends_its_instance_id(monkeypatch, capsys) -> None:
    # Given the cluster and the deployed pipeline
    sfn, arn = _seeded_state_machine(monkeypatch)

    # When started on one node named by its Slurm host name and one by its hyperpod-i- name
    code = main(
        [
            "start", "--cluster", "ml-cluster", "--region", "us-west-2", "--state-machine-arn", arn,
            "--node", "ip-10-1-42-84", "--node", "hyperpod-i-0a1b2c3d4e5f60001",
        ]
    )  # fmt: skip

    # Then the request carries the instance ids the pipeline takes
    assert code == 0, capsys.readouterr().err
    execution = sfn.list_executions(stateMachineArn=arn)["executions"][0]["executionArn"]
    sent = json.loads(sfn.describe_execution(executionArn=execution)["input"])
    assert (sent["nodes"], sent["scope"]) == (["i-0a1b2c3d4e5f60001", "i-0a1b2c3d4e5f60002"], "focus")


@mock_aws
def test_start_node_with_an_unknown_host_name_exits_2_and_starts_nothing(monkeypatch, capsys) -> None:
    sfn, arn = _seeded_state_machine(monkeypatch)

    code = main(
        ["start", "--cluster", "ml-cluster", "--region", "us-west-2", "--state-machine-arn", arn,
         "--node", "ip-10-1-42-8"]
    )  # fmt: skip

    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "no node 'ip-10-1-42-8' in cluster ml-cluster (2 node(s)); closest: ip-10-1-42-84 (" in err
    assert sfn.list_executions(stateMachineArn=arn)["executions"] == []
