"""Every AWS front door of the CLI with a broken local AWS setup: one line, exit 2, no traceback.

The front doors are `diagnose`, `start`, `nccl plan --cluster` and `nccl analyze s3://`. Each is
run in-process with the environment emptied of AWS settings and ~/.aws pointed at files of the
test's own, so the host's configuration cannot leak in. No call leaves the machine: either the
setup check stops the command before any request, moto answers, or the endpoint is a closed
local port.
"""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from hyperpod_perf.aws import cli_session
from hyperpod_perf.aws.cli_session import open_session, resolve_region
from hyperpod_perf.cli import main
from hyperpod_perf_dev.sim.node import simulate_cluster

FRONT_DOORS = {
    "diagnose": ["diagnose", "--cluster", "hpclust00001"],
    "start": ["start", "--cluster", "hpclust00001"],
    "nccl plan": ["nccl", "plan", "--cluster", "hpclust00001"],
    "nccl analyze s3": ["nccl", "analyze", "s3://bucket/nccl/"],
}
AWS_VARS = (
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ENDPOINT_URL",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
)


@pytest.fixture
def bare_aws(monkeypatch, tmp_path):
    """No AWS environment, empty config files, and instance metadata disabled (no network)."""
    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "config"
    config.write_text("[profile ops]\nregion = eu-central-1\n")
    credentials = tmp_path / "credentials"
    credentials.write_text("[ops]\naws_access_key_id = AKIAOPSOPSOPSOPS0000\naws_secret_access_key = x\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(err: str, *mentions: str) -> None:
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hyperpod-perf: ")
    for mention in mentions:
        assert mention in lines[0], lines[0]


@pytest.mark.parametrize("door", FRONT_DOORS)
def test_no_region_anywhere_is_one_line_naming_the_ways_to_set_it(bare_aws, capsys, door):
    # Given credentials but no region from flag, environment or profile
    bare_aws.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE000000000")
    bare_aws.setenv("AWS_SECRET_ACCESS_KEY", "x")

    # When the front door runs
    code, out, err = run(capsys, FRONT_DOORS[door])

    # Then exit 2, one line pointing at --region and AWS_REGION
    assert (code, out) == (2, "")
    assert_one_line(err, "no AWS region", "--region", "AWS_REGION")


@pytest.mark.parametrize("door", FRONT_DOORS)
@pytest.mark.parametrize("how", ["flag", "env"])
def test_unknown_profile_is_one_line_naming_the_profile_and_where_it_came_from(bare_aws, capsys, door, how):
    # Given a profile name that is in neither config file
    argv = FRONT_DOORS[door] + ["--region", "us-west-2"]
    if how == "flag":
        argv += ["--profile", "nosuch"]
    else:
        bare_aws.setenv("AWS_PROFILE", "nosuch")

    code, out, err = run(capsys, argv)

    assert (code, out) == (2, "")
    assert_one_line(err, "'nosuch'", "--profile" if how == "flag" else "AWS_PROFILE", "not found")


@pytest.mark.parametrize("door", FRONT_DOORS)
def test_no_credentials_is_one_line_before_any_request(bare_aws, capsys, door):
    # Given a region but no credentials anywhere (metadata service disabled)
    code, out, err = run(capsys, FRONT_DOORS[door] + ["--region", "us-west-2"])

    assert (code, out) == (2, "")
    assert_one_line(err, "no AWS credentials", "aws sso login")


@pytest.mark.parametrize("door", FRONT_DOORS)
def test_malformed_region_is_a_plain_sentence_not_a_regex(bare_aws, capsys, door):
    bare_aws.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE000000000")
    bare_aws.setenv("AWS_SECRET_ACCESS_KEY", "x")

    code, out, err = run(capsys, FRONT_DOORS[door] + ["--region", "us west"])

    assert (code, out) == (2, "")
    assert_one_line(err, "'us west'", "us-west-2")
    assert "^" not in err and "[a-z]" not in err


@pytest.mark.parametrize("door", FRONT_DOORS)
def test_unreachable_endpoint_is_one_line_naming_it(bare_aws, capsys, door):
    # Given credentials and a region, but every endpoint is a closed local port
    bare_aws.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE000000000")
    bare_aws.setenv("AWS_SECRET_ACCESS_KEY", "x")
    bare_aws.setenv("AWS_MAX_ATTEMPTS", "1")
    bare_aws.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")

    code, _out, err = run(capsys, FRONT_DOORS[door] + ["--region", "us-west-2"])

    assert code == 2
    assert_one_line(err, "127.0.0.1:9")


def test_aws_region_is_honoured_though_botocore_reads_only_aws_default_region(bare_aws):
    # Given AWS_REGION (what Lambda and the SDKs set) and credentials
    bare_aws.setenv("AWS_REGION", "ap-northeast-1")
    bare_aws.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE000000000")
    bare_aws.setenv("AWS_SECRET_ACCESS_KEY", "x")

    # Then the session is in that region; --region wins over it; AWS_REGION wins over AWS_DEFAULT_REGION
    assert open_session(None, None).region_name == "ap-northeast-1"
    assert open_session("us-east-2", None).region_name == "us-east-2"
    bare_aws.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    assert resolve_region(None) == "ap-northeast-1"
    bare_aws.delenv("AWS_REGION")
    assert resolve_region(None) == "eu-west-1"


def test_profile_supplies_region_and_credentials(bare_aws):
    # Given the profile `ops` (region eu-central-1) named by AWS_PROFILE
    bare_aws.setenv("AWS_PROFILE", "ops")

    session = open_session(None, None)

    assert session.region_name == "eu-central-1"
    assert session.get_credentials().access_key == "AKIAOPSOPSOPSOPS0000"
    # and --profile selects it the same way
    bare_aws.delenv("AWS_PROFILE")
    assert open_session(None, "ops").region_name == "eu-central-1"


def _denied(operation: str) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "AccessDeniedException", "Message": f"not authorized to perform: {operation}"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        },
        operation,
    )


@pytest.mark.parametrize("door", FRONT_DOORS)
def test_access_denied_is_one_line_naming_the_operation(bare_aws, capsys, door):
    # Given valid credentials (moto) whose every call is refused
    with mock_aws():

        def refuse(self, operation_name, api_params):
            raise _denied(f"{self.meta.service_model.service_name}:{operation_name}")

        bare_aws.setattr("botocore.client.BaseClient._make_api_call", refuse)
        code, _out, err = run(capsys, FRONT_DOORS[door] + ["--region", "us-west-2"])

    # Then exit 2 and one line saying what was denied
    assert code == 2
    assert_one_line(err, "not authorized to perform")


def test_describe_aws_problem_knows_the_setup_errors_and_passes_others_by():
    from botocore.exceptions import (
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        ProfileNotFound,
        UnauthorizedSSOTokenError,
    )

    explain = cli_session.describe_aws_problem
    assert "no AWS region" in explain(NoRegionError())
    assert "'p1'" in explain(ProfileNotFound(profile="p1"))
    assert "no AWS credentials" in explain(NoCredentialsError())
    assert "aws sso login" in explain(UnauthorizedSSOTokenError())
    assert "https://x.example" in explain(EndpointConnectionError(endpoint_url="https://x.example"))
    assert "permission denied for DescribeCluster" in explain(_denied("DescribeCluster"))
    assert explain(ValueError("unrelated")) is None
    throttled = ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow"}}, "ListClusterNodes")
    assert explain(throttled) is None


# --- diagnose --snapshots with no AWS access ---------------------------------------------------


def _snapshot_dir(tmp_path):
    """Four simulated p5 nodes, one left on NCCL 2.18.3, and an ssh timeout where a fifth
    node's snapshot should be."""
    directory = tmp_path / "snapshots"
    directory.mkdir()
    sim = simulate_cluster(4)
    for i, node in enumerate(sim):
        text = node.text.replace("nccl=2.21.5\n", "nccl=2.18.3\n") if i == 2 else node.text
        (directory / f"{node.instance_id}.txt").write_text(text)
    (directory / "i-0fffffffffffffff9.txt").write_text(
        "ssh: connect to host ip-10-1-9-9 port 22: timed out\n"
    )
    return directory, sim


@pytest.mark.parametrize("access", ["no-credentials", "unreachable-endpoint", "--offline"])
def test_diagnose_snapshots_without_aws_access_skips_the_aws_stages_and_judges_the_files(
    bare_aws, capsys, tmp_path, access
):
    # Given a snapshot directory, and no credentials / an account that cannot be reached / --offline
    directory, sim = _snapshot_dir(tmp_path)
    extra = []
    if access != "no-credentials":
        bare_aws.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE000000000")
        bare_aws.setenv("AWS_SECRET_ACCESS_KEY", "x")
        bare_aws.setenv("AWS_DEFAULT_REGION", "us-west-2")
    if access == "unreachable-endpoint":
        bare_aws.setenv("AWS_MAX_ATTEMPTS", "1")
        bare_aws.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    if access == "--offline":
        extra = ["--offline"]

    # When diagnose runs on it, as JSON, with --out
    out_dir = tmp_path / "out"
    code, out, err = run(
        capsys,
        [
            "diagnose",
            "--cluster",
            "hpclust00001",
            "--snapshots",
            str(directory),
            "--format",
            "json",
            "--out",
            str(out_dir),
            *extra,
        ],
    )

    # Then stderr says the AWS stages were skipped and why, and where the report went
    assert "Traceback" not in err
    skipped, written = err.splitlines()
    assert "skipping the AWS stages" in skipped and str(directory) in skipped
    assert ("--offline" if access == "--offline" else "no AWS access") in skipped
    assert written == f"written to {out_dir}/: report.json, report.md, report.html"
    # and the report judges the files: the drift, the ssh timeout as that node's concern
    assert code == 1
    report = json.loads(out)
    found = {(f["node"], f["check"]): f for f in report["findings"] if f["severity"] == "CONCERN"}
    assert set(found) == {(None, "fleet.version_drift"), ("i-0fffffffffffffff9", "collect.node")}
    assert found[(None, "fleet.version_drift")]["evidence"]["drift"]["nccl"]["2.18.3"]["nodes"] == [
        sim[2].instance_id
    ]
    assert {n["node"] for n in report["nodes"]} == {*(n.instance_id for n in sim), "i-0fffffffffffffff9"}
    # and the report names what the snapshots could not tell
    whats = [row["what"] for row in report["not_checked"]]
    assert "topology.az_spread, topology.ultraserver" in whats
    assert (out_dir / "report.html").read_text().lstrip().lower().startswith("<!doctype html")


def test_diagnose_offline_needs_snapshots(bare_aws, capsys):
    code, out, err = run(capsys, ["diagnose", "--cluster", "hpclust00001", "--offline"])
    assert (code, out) == (2, "")
    assert_one_line(err, "--offline needs --snapshots")
