"""The AWS adapters against moto (`mock_aws`): pagination, empty results and AccessDenied.

Where moto cannot serve a case it is said: GetMetricData pagination (moto never returns a
NextToken) and AccessDenied (moto allows everything) use botocore's Stubber, which still checks
every request against the real service model.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from hyperpod_moto import (
    REGION,
    GroupSeed,
    NodeSeed,
    extend_moto_hyperpod,
    put_lustre_throughput,
    seed_cluster,
    seed_lustre,
)
from moto import mock_aws

from hyperpod_perf.aws.cloudwatch import FsxMetrics, build_queries, choose_period
from hyperpod_perf.aws.fsx import FsxFileSystems
from hyperpod_perf.aws.logs import ClusterLogs, cluster_log_group
from hyperpod_perf.aws.sagemaker import HyperPodClusters, validate_cluster_identifier
from hyperpod_perf.domain.cluster import MB, FileSystemInfo, LogKind, Orchestrator
from hyperpod_perf.domain.errors import AccessDenied, InvalidRequest, NotFound, Throttled
from hyperpod_perf.domain.mounts import Mount, match_mounts

DEEP_HEALTH = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "deep-health"
CLUSTER = "hpclust00001"  # 12 lowercase alphanumerics, so moto's ARN (cluster/<name>) is a valid ARN


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        extend_moto_hyperpod(monkeypatch)
        yield


def _client(service: str) -> Any:
    return boto3.client(service, region_name=REGION)


def _iid(i: int) -> str:
    return f"i-0abc{i:013x}"


class Recording:
    """Wraps a client and records the operations called (and can add fixed parameters)."""

    def __init__(self, client: Any, **extra: Any) -> None:
        self._client, self._extra, self.calls = client, extra, []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)

        def call(**kwargs: Any) -> Any:
            self.calls.append((name, kwargs))
            return method(**{**kwargs, **self._extra})

        return call


# --- SageMaker -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "-starts-with-hyphen",
        "has_underscore",
        "x" * 64,
        "arn:aws:sagemaker:us-west-2:12345678901:cluster/abcd1234efgh",  # 11-digit account
        "arn:aws:sagemaker:us-west-2:123456789012:cluster/ABCD",  # not a cluster id
        "arn:aws:ec2:us-west-2:123456789012:cluster/abcd1234efgh",
    ],
)
def test_cluster_identifier_is_validated_before_any_call(bad):
    # Given a client that records every call
    client = Recording(object())

    # When a malformed name or ARN is used
    with pytest.raises(InvalidRequest) as caught:
        HyperPodClusters(client).describe_cluster(bad)

    # Then it is rejected as invalid and AWS was never called
    assert client.calls == []
    assert caught.value.code == "InvalidClusterIdentifier"


def test_valid_names_and_arns_pass_validation():
    for good in (
        "a",
        "ml-cluster-1",
        "x" * 63,
        "arn:aws-us-gov:sagemaker:us-gov-west-1:123456789012:cluster/abcd1234efgh",
    ):
        assert validate_cluster_identifier(good) == good


def test_describe_cluster_and_nodes_with_placement(aws):
    # Given a Slurm cluster (no Orchestrator field) with NodeRecovery None, 3 GPU workers in two AZs
    sm = _client("sagemaker")
    arn = seed_cluster(
        sm,
        CLUSTER,
        [
            GroupSeed("controller", "ml.m5.2xlarge", [NodeSeed(_iid(100))]),
            GroupSeed(
                "workers",
                "ml.p5.48xlarge",
                [
                    NodeSeed(_iid(1), hostname="ip-10-1-2-3.us-west-2.compute.internal"),
                    NodeSeed(_iid(2)),
                    NodeSeed(_iid(3), az="us-west-2b", az_id="usw2-az2", ultraserver_id="us-123"),
                ],
                deep_health_checks=["InstanceStress"],
            ),
        ],
        node_recovery="None",
    )
    clusters = HyperPodClusters(sm)

    # When the cluster is described by name and by ARN, and its nodes listed and described
    info = clusters.describe_cluster(CLUSTER)
    by_arn = clusters.describe_cluster(arn)
    listed = clusters.list_nodes(CLUSTER, info.cluster_id)
    nodes, errors = clusters.describe_nodes(CLUSTER, info.cluster_id, [n.instance_id for n in listed])

    # Then the domain model carries what the rules need
    assert info == by_arn
    assert info.cluster_id == CLUSTER and info.region == REGION and info.arn == arn
    assert info.orchestrator is Orchestrator.SLURM
    assert info.node_recovery == "None"
    workers = info.group("workers")
    assert workers.on_start_deep_health_checks == ("InstanceStress",)
    assert (workers.instance_type, workers.target_count, workers.threads_per_core) == ("ml.p5.48xlarge", 3, 1)
    assert sorted((n.instance_id, n.group) for n in listed) == sorted(
        [(_iid(100), "controller"), *((_iid(i), "workers") for i in (1, 2, 3))]
    )
    # And the listing alone carries type, status, UltraServer and host name, but no placement
    listing = {n.instance_id: n for n in listed}
    assert (listing[_iid(3)].instance_type, listing[_iid(3)].status, listing[_iid(3)].ultraserver_id) == (
        "ml.p5.48xlarge",
        "Running",
        "us-123",
    )
    assert listing[_iid(1)].hostname == "ip-10-1-2-3.us-west-2.compute.internal"
    assert listing[_iid(1)].ssm_target == f"sagemaker-cluster:{CLUSTER}_workers-{_iid(1)}"
    assert {(n.az, n.az_id, n.private_ip) for n in listed} == {(None, None, None)}
    assert errors == {}
    by_id = {n.instance_id: n for n in nodes}
    assert (by_id[_iid(3)].az, by_id[_iid(3)].az_id, by_id[_iid(3)].ultraserver_id) == (
        "us-west-2b",
        "usw2-az2",
        "us-123",
    )
    assert by_id[_iid(1)].hostname == "ip-10-1-2-3.us-west-2.compute.internal"
    assert by_id[_iid(1)].status == "Running" and by_id[_iid(1)].running
    assert by_id[_iid(1)].ssm_target == f"sagemaker-cluster:{CLUSTER}_workers-{_iid(1)}"


def test_eks_orchestrator_is_recognised(aws):
    sm = _client("sagemaker")
    seed_cluster(
        sm,
        CLUSTER,
        [GroupSeed("workers", "ml.p5.48xlarge", [NodeSeed(_iid(1))])],
        node_recovery="Automatic",
        orchestrator={"Eks": {"ClusterArn": "arn:aws:eks:us-west-2:123456789012:cluster/k8"}},
    )
    info = HyperPodClusters(sm).describe_cluster(CLUSTER)
    assert info.orchestrator is Orchestrator.EKS
    assert info.node_recovery == "Automatic"


def test_list_nodes_follows_every_page(aws):
    # Given 130 nodes (moto pages ListClusterNodes by 100) and a client that records calls
    sm = _client("sagemaker")
    seed_cluster(
        sm, CLUSTER, [GroupSeed("workers", "ml.p5.48xlarge", [NodeSeed(_iid(i)) for i in range(130)])]
    )
    recording = Recording(sm)

    # When all node ids are listed
    listed = HyperPodClusters(recording).list_nodes(CLUSTER, CLUSTER)

    # Then every node comes back exactly once, over two pages (the second with the first's token)
    assert sorted(n.instance_id for n in listed) == sorted(_iid(i) for i in range(130))
    assert [name for name, _ in recording.calls] == ["list_cluster_nodes", "list_cluster_nodes"]
    assert "NextToken" in recording.calls[1][1]


def test_empty_cluster_lists_no_nodes(aws):
    sm = _client("sagemaker")
    seed_cluster(sm, CLUSTER, [GroupSeed("workers", "ml.p5.48xlarge", [])])
    assert HyperPodClusters(sm).list_nodes(CLUSTER, CLUSTER) == []


def test_one_failing_node_description_does_not_hide_the_others(aws):
    sm = _client("sagemaker")
    seed_cluster(sm, CLUSTER, [GroupSeed("workers", "ml.p5.48xlarge", [NodeSeed(_iid(i)) for i in range(4)])])
    nodes, errors = HyperPodClusters(sm, max_workers=3).describe_nodes(
        CLUSTER, CLUSTER, [_iid(0), _iid(1), "i-0000000000000dead", _iid(2), _iid(3)]
    )
    assert [n.instance_id for n in nodes] == [_iid(i) for i in range(4)]
    assert list(errors) == ["i-0000000000000dead"]
    assert "Could not find node" in str(errors["i-0000000000000dead"])


def test_missing_cluster_and_access_denied_are_named_errors(aws):
    sm = _client("sagemaker")
    with pytest.raises(InvalidRequest, match="Could not find cluster"):  # moto answers ValidationException
        HyperPodClusters(sm).describe_cluster("no-such-cluster")
    with Stubber(sm) as stub:
        stub.add_client_error("describe_cluster", "AccessDeniedException", "not authorized", 400)
        with pytest.raises(AccessDenied) as caught:
            HyperPodClusters(sm).describe_cluster(CLUSTER)
    assert caught.value.context == "sagemaker:DescribeCluster"


def test_throttling_is_retried_with_backoff():
    # Given a client that is throttled twice, then answers
    sm = boto3.client("sagemaker", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    delays: list[float] = []
    with Stubber(sm) as stub:
        stub.add_client_error("list_cluster_nodes", "ThrottlingException", "Rate exceeded", 400)
        stub.add_client_error("list_cluster_nodes", "ThrottlingException", "Rate exceeded", 400)
        stub.add_response(
            "list_cluster_nodes",
            {
                "ClusterNodeSummaries": [
                    {
                        "InstanceGroupName": "workers",
                        "InstanceId": _iid(1),
                        "InstanceType": "ml.p5.48xlarge",
                        "LaunchTime": datetime(2025, 1, 1, tzinfo=UTC),
                        "InstanceStatus": {"Status": "Running"},
                    }
                ]
            },
            {"ClusterName": CLUSTER, "MaxResults": 100},  # the API's largest page
        )
        # When the nodes are listed
        listed = HyperPodClusters(sm, sleep=delays.append).list_nodes(CLUSTER, "abcdefghijkl")

    # Then the call succeeded after backing off 0.5 s then 1 s
    assert [(n.instance_id, n.group, n.instance_type, n.status) for n in listed] == [
        (_iid(1), "workers", "ml.p5.48xlarge", "Running")
    ]
    assert delays == [0.5, 1.0]


def test_throttling_gives_up_after_the_retries():
    sm = boto3.client("sagemaker", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(sm) as stub:
        for _ in range(5):
            stub.add_client_error("describe_cluster", "ThrottlingException", "Rate exceeded", 400)
        with pytest.raises(Throttled):
            HyperPodClusters(sm, sleep=lambda _s: None).describe_cluster(CLUSTER)


# --- FSx -----------------------------------------------------------------------------------------


def test_describe_file_systems_by_id_and_missing_id(aws):
    # Given a Lustre file system of 2400 GiB at 250 MB/s/TiB
    fsx_client = _client("fsx")
    fs_id = seed_lustre(fsx_client, capacity_gib=2400, per_unit=250, mount_name="oyuutbev")

    # When it and an unknown id are described
    found, errors = FsxFileSystems(fsx_client).describe([fs_id, "fs-00000000000000000"])

    # Then the known one carries its figures and the unknown one is a NotFound, not an exception
    (fs,) = found
    assert (fs.type, fs.storage_capacity_gib, fs.per_unit_storage_throughput) == ("LUSTRE", 2400, 250)
    assert fs.lustre_mount_name == "oyuutbev" and fs.deployment_type == "PERSISTENT_2"
    assert fs.provisioned_throughput_mbps == pytest.approx(600.0)  # 2,400 GiB / 1000 x 250 MB/s/TiB
    assert fs.dns_name == f"{fs_id}.fsx.{REGION}.amazonaws.com"
    assert isinstance(errors["fs-00000000000000000"], NotFound)


def test_match_lustre_and_nfs_mounts_to_systems_listed_across_pages(aws):
    # Given a Lustre and an OpenZFS file system, listed one per page
    fsx_client = _client("fsx")
    lustre_id = seed_lustre(fsx_client, capacity_gib=1200, per_unit=125, mount_name="oyuutbev")
    zfs = fsx_client.create_file_system(
        FileSystemType="OPENZFS",
        StorageCapacity=1024,
        StorageType="SSD",
        SubnetIds=["subnet-0123456789abcdef0"],
        OpenZFSConfiguration={
            "DeploymentType": "SINGLE_AZ_2",
            "ThroughputCapacity": 640,
            "DiskIopsConfiguration": {"Mode": "AUTOMATIC"},
        },
    )["FileSystem"]
    recording = Recording(fsx_client, MaxResults=1)
    mounts = [
        Mount("10.1.71.197@tcp:/oyuutbev", "/fsx", "lustre", "i-0a"),
        Mount("10.1.71.197@tcp:/oyuutbev/users", "/home", "lustre", "i-0b"),
        Mount(f"{zfs['DNSName']}:/fsx/vol1", "/data", "nfs4", "i-0a"),
        Mount("10.9.9.9@tcp:/elsewhere", "/scratch", "lustre", "i-0a"),
        Mount("/dev/nvme1n1", "/opt/sagemaker", "ext4", "i-0a"),
    ]

    # When the account's file systems are listed and the node mounts matched to them
    discovery = match_mounts(FsxFileSystems(recording).list_all(), mounts)

    # Then both are found (via MountName and DNS name), the foreign Lustre mount is unmatched,
    # and the listing followed its pages
    assert sorted(fs.file_system_id for fs in discovery.file_systems) == sorted(
        [lustre_id, zfs["FileSystemId"]]
    )
    assert discovery.matched == {"/fsx": lustre_id, "/home": lustre_id, "/data": zfs["FileSystemId"]}
    assert [m.device for m in discovery.unmatched] == ["10.9.9.9@tcp:/elsewhere"]
    assert discovery.nodes_by_fs == {lustre_id: {"i-0a", "i-0b"}, zfs["FileSystemId"]: {"i-0a"}}
    assert [("NextToken" in kw) for _, kw in recording.calls] == [False, True]  # two pages of one
    zfs_info = next(fs for fs in discovery.file_systems if fs.type == "OPENZFS")
    assert (zfs_info.throughput_capacity, zfs_info.iops_mode) == (640, "AUTOMATIC")


def test_a_non_fsx_mount_is_ignored_and_an_empty_account_matches_nothing(aws):
    # Given an account with no file system
    systems = FsxFileSystems(_client("fsx")).list_all()
    assert systems == []
    # Then a local disk is neither matched nor reported, and a Lustre mount is reported unmatched
    local = match_mounts(systems, [Mount("/dev/root", "/", "ext4")])
    assert (local.file_systems, local.matched, local.unmatched) == ([], {}, [])
    discovery = match_mounts(systems, [Mount("10.1.1.1@tcp:/abc", "/fsx", "lustre")])
    assert discovery.file_systems == [] and [m.device for m in discovery.unmatched] == ["10.1.1.1@tcp:/abc"]


def test_fsx_access_denied(aws):
    fsx_client = _client("fsx")
    with Stubber(fsx_client) as stub:
        stub.add_client_error("describe_file_systems", "AccessDeniedException", "no", 400)
        stub.add_client_error("describe_file_systems", "AccessDeniedException", "no", 400)
        found, errors = FsxFileSystems(fsx_client).describe(["fs-0123456789abcdef0"])
        with pytest.raises(AccessDenied):
            FsxFileSystems(fsx_client).list_all()
    assert found == [] and isinstance(errors["fs-0123456789abcdef0"], AccessDenied)


# --- CloudWatch ----------------------------------------------------------------------------------

NOW = datetime(2025, 6, 2, 12, 0, tzinfo=UTC)


def test_one_get_metric_data_call_returns_every_series(aws):
    # Given a Lustre file system with 60 minutes of 400 MB/s read + 100 MB/s write
    cw = _client("cloudwatch")
    lustre = FileSystemInfo(
        file_system_id="fs-0123456789abcdef0",
        type="LUSTRE",
        storage_capacity_gib=2400,
        per_unit_storage_throughput=250,
    )
    zfs = FileSystemInfo(file_system_id="fs-0fedcba9876543210", type="OPENZFS", throughput_capacity=640)
    start = NOW - timedelta(hours=1)
    put_lustre_throughput(cw, lustre.file_system_id, start, 60, 400 * MB, 100 * MB)
    recording = Recording(cw)
    metrics = FsxMetrics(recording)

    # When the window is fetched for both file systems
    series = metrics.fetch([lustre, zfs], start, NOW, now=NOW)

    # Then one call brought all 23 series (17 Lustre, 6 OpenZFS) with the right statistic, Lustre
    # Sum = bytes per minute
    assert [name for name, _ in recording.calls] == ["get_metric_data"]
    assert len(recording.calls[0][1]["MetricDataQueries"]) == 23
    keyed = {(s.file_system_id, s.metric, s.stat): s for s in series}
    read = keyed[(lustre.file_system_id, "DataReadBytes", "Sum")]
    assert len(read.values) == 60 and set(read.values) == {400 * MB * 60}
    assert read.period_s == 60 and read.timestamps[0] == start
    assert set(keyed[(lustre.file_system_id, "DataWriteBytes", "Sum")].values) == {100 * MB * 60}
    assert (
        keyed[(zfs.file_system_id, "FileServerDiskIopsUtilization", "Maximum")].values == ()
    )  # empty result
    assert sorted(k[2] for k in keyed if k[0] == zfs.file_system_id) == ["Average"] * 3 + ["Maximum"] * 3


def test_metric_pages_are_merged_by_query_id():
    # Given GetMetricData answering in two pages (moto never pages: botocore Stubber instead)
    cw = boto3.client("cloudwatch", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    lustre = FileSystemInfo(file_system_id="fs-0123456789abcdef0", type="LUSTRE")
    t = [NOW - timedelta(minutes=m) for m in (3, 2, 1)]
    with Stubber(cw) as stub:
        stub.add_response(
            "get_metric_data",
            {
                "MetricDataResults": [
                    {"Id": "m0", "Timestamps": t[:2], "Values": [1.0, 2.0], "StatusCode": "PartialData"},
                    {"Id": "m1", "Timestamps": t[:2], "Values": [5.0, 6.0], "StatusCode": "PartialData"},
                ],
                "NextToken": "page-2",
            },
            {"MetricDataQueries": ANY, "StartTime": ANY, "EndTime": ANY, "ScanBy": "TimestampAscending"},
        )
        stub.add_response(
            "get_metric_data",
            {
                "MetricDataResults": [
                    {"Id": "m0", "Timestamps": [t[2]], "Values": [3.0], "StatusCode": "Complete"}
                ]
            },
            {
                "MetricDataQueries": ANY,
                "StartTime": ANY,
                "EndTime": ANY,
                "ScanBy": "TimestampAscending",
                "NextToken": "page-2",
            },
        )
        # When fetched
        metrics = FsxMetrics(cw)
        series = metrics.fetch([lustre], NOW - timedelta(minutes=5), NOW, now=NOW)

    # Then both pages are merged, in time order, and the partial status is kept (m0 is the
    # DataReadBytes Sum, m1 its Maximum: the hottest OST)
    read, hottest = series[:2]
    assert (read.metric, read.stat, read.values, read.status) == (
        "DataReadBytes",
        "Sum",
        (1.0, 2.0, 3.0),
        "PartialData",
    )
    assert read.timestamps == tuple(t)
    assert (hottest.stat, hottest.values) == ("Maximum", (5.0, 6.0))
    assert all(s.values == () for s in series[2:])
    assert metrics.calls == 2


def test_metrics_access_denied():
    cw = boto3.client("cloudwatch", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(cw) as stub:
        stub.add_client_error("get_metric_data", "AccessDenied", "not authorized", 403)
        with pytest.raises(AccessDenied) as caught:
            FsxMetrics(cw).fetch(
                [FileSystemInfo(file_system_id="fs-0123456789abcdef0", type="LUSTRE")],
                NOW - timedelta(hours=1),
                NOW,
            )
    assert caught.value.context == "cloudwatch:GetMetricData"


def test_period_keeps_one_minute_data_within_limits():
    assert choose_period(NOW - timedelta(hours=3), NOW, 8, NOW) == 60
    # 15 days x 1,440 minutes x 8 queries > 100,800 datapoints per call: 5-minute periods
    assert choose_period(NOW - timedelta(days=15), NOW, 8, NOW) == 300
    assert choose_period(NOW - timedelta(days=1), NOW, 500, NOW) == 900  # 500 queries share the budget
    assert choose_period(NOW - timedelta(days=20), NOW - timedelta(days=17), 2, NOW) == 300  # beyond 15 days
    ids = [q["Id"] for q, _ in build_queries([FileSystemInfo(file_system_id="fs-1", type="ONTAP")], 60)]
    assert ids == []  # types without a rule fetch nothing


# --- CloudWatch Logs -----------------------------------------------------------------------------

#: CloudWatch Logs (and moto) reject events older than 14 days, so log tests use the real clock.
LOG_NOW = datetime.now(UTC).replace(microsecond=0)


def _seed_logs(logs_client: Any, group: str, start: datetime) -> None:
    logs_client.create_log_group(logGroupName=group)
    streams = {
        "DeepHealthCheckResults/i-0abc0000000000001": [
            (DEEP_HEALTH / "dhc_cluster-level_nccl-bw-below-threshold_p4d.json").read_text()
        ],
        "SagemakerHealthMonitoringAgent/workers/i-0abc0000000000002": [
            json.dumps(json.loads((DEEP_HEALTH / "hma_npd-event_xid71_pretty.json").read_text())),
            '{"level":"info","ts":"2024-08-21T18:00:00Z","msg":"agent heartbeat"}',
        ],
        "LifecycleConfig/workers/i-0abc0000000000002": ["on_create.sh finished"],
    }
    base = int(start.timestamp() * 1000)
    for offset, (stream, messages) in enumerate(streams.items()):
        logs_client.create_log_stream(logGroupName=group, logStreamName=stream)
        logs_client.put_log_events(
            logGroupName=group,
            logStreamName=stream,
            logEvents=[
                {"timestamp": base + 60_000 * (offset + i + 1), "message": m} for i, m in enumerate(messages)
            ],
        )
    old = "DeepHealthCheckResults/i-0abc0000000000009"
    logs_client.create_log_stream(logGroupName=group, logStreamName=old)
    logs_client.put_log_events(
        logGroupName=group,
        logStreamName=old,
        logEvents=[{"timestamp": base - 3_600_000, "message": "too old"}],
    )


def test_logs_fetch_deep_health_and_hma_records_in_the_window(aws):
    # Given the cluster log group with a deep-health failure, an HMA event, an HMA heartbeat,
    # a lifecycle stream and a record older than the window
    logs_client = _client("logs")
    start = LOG_NOW - timedelta(hours=3)
    group = cluster_log_group("ml-cluster", "abcd1234efgh")
    _seed_logs(logs_client, group, start)

    # When fetched for the window
    fetched = ClusterLogs(logs_client).fetch("ml-cluster", "abcd1234efgh", start, LOG_NOW)

    # Then only the deep-health record and the HMA detection event come back, classified by stream
    assert group == "/aws/sagemaker/Clusters/ml-cluster/abcd1234efgh"
    assert not fetched.truncated and not fetched.group_missing
    kinds = [(r.kind, r.stream) for r in fetched.records]
    assert kinds == [
        (LogKind.DEEP_HEALTH, "DeepHealthCheckResults/i-0abc0000000000001"),
        (LogKind.HMA, "SagemakerHealthMonitoringAgent/workers/i-0abc0000000000002"),
    ]
    assert "Expected minimum threshold :80" in fetched.records[0].message
    assert '"HealthMonitoringAgentDetectionEvent": "HealthEvent"' in fetched.records[1].message


def test_logs_paginate_and_stop_at_the_bound(aws):
    # Given 30 HMA events
    logs_client = _client("logs")
    group = cluster_log_group("ml-cluster", "abcd1234efgh")
    logs_client.create_log_group(logGroupName=group)
    stream = "SagemakerHealthMonitoringAgent/workers/i-0abc0000000000002"
    logs_client.create_log_stream(logGroupName=group, logStreamName=stream)
    base = int((LOG_NOW - timedelta(hours=1)).timestamp() * 1000)
    events = [
        {
            "timestamp": base + i * 1000,
            "message": json.dumps({"n": i, "HealthMonitoringAgentDetectionEvent": "HealthEvent"}),
        }
        for i in range(30)
    ]
    logs_client.put_log_events(logGroupName=group, logStreamName=stream, logEvents=events)
    recording = Recording(logs_client)

    # When fetched in pages of 7 without a bound, then with a bound of 10
    everything = ClusterLogs(recording, page_size=7).fetch(
        "ml-cluster", "abcd1234efgh", LOG_NOW - timedelta(hours=2), LOG_NOW
    )
    bounded = ClusterLogs(logs_client, page_size=7).fetch(
        "ml-cluster", "abcd1234efgh", LOG_NOW - timedelta(hours=2), LOG_NOW, max_events=10
    )

    # Then all 30 arrive once, in order, over several pages; the bounded fetch says it was cut
    assert [json.loads(r.message)["n"] for r in everything.records] == list(range(30))
    hma_calls = [kw for name, kw in recording.calls if kw["logStreamNamePrefix"].startswith("Sagemaker")]
    assert len(hma_calls) == 5 and all(
        kw["filterPattern"] == '"HealthMonitoringAgentDetectionEvent"' for kw in hma_calls
    )
    assert not everything.truncated
    assert len(bounded.records) == 10 and bounded.truncated


def test_missing_log_group_and_access_denied(aws):
    logs_client = _client("logs")
    missing = ClusterLogs(logs_client).fetch(
        "ml-cluster", "abcd1234efgh", LOG_NOW - timedelta(hours=1), LOG_NOW
    )
    assert missing.group_missing and missing.records == ()
    with Stubber(logs_client) as stub:
        stub.add_client_error("filter_log_events", "AccessDeniedException", "no logs:FilterLogEvents", 400)
        with pytest.raises(AccessDenied) as caught:
            ClusterLogs(logs_client).fetch(
                "ml-cluster", "abcd1234efgh", LOG_NOW - timedelta(hours=1), LOG_NOW
            )
    assert "logs:FilterLogEvents" in caught.value.context
