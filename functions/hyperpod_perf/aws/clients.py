"""The adapters each handler uses, built from boto3 clients once per container.

Why a module of factories: handlers stay a few lines, and the local run (moto) and the tests
swap a whole adapter by overriding one factory (`override`), without patching internals. Nothing
here imports boto3 or an adapter before a factory is called (cold start: docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache
from typing import Any

_overrides: dict[str, Callable[..., Any]] = {}


def __getattr__(name: str) -> Any:
    """SDK_ERRORS: what the AWS SDK raises when a call fails before an adapter translated it (a
    caller outside aws/ catches these by this name instead of importing botocore). Resolved on
    first use: importing botocore is a cold-start cost only the functions that call AWS pay."""
    if name == "SDK_ERRORS":
        from botocore.exceptions import BotoCoreError, ClientError

        return (ClientError, BotoCoreError)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def override(name: str, factory: Callable[..., Any]) -> None:
    """Replace one factory (local run, tests); `reset()` restores the defaults."""
    _overrides[name] = factory


def reset() -> None:
    _overrides.clear()
    _client.cache_clear()
    _presigning_s3.cache_clear()
    botocore_session.cache_clear()


@cache
def botocore_session() -> Any:
    """The one botocore session every client of this process is created from.

    botocore, not boto3: the functions use clients only (no resources, no S3 transfer manager), and
    `import boto3` also imports s3transfer (its transfer manager, `multiprocessing` managers and
    more) before the first client: a cold-start cost for nothing (bench/RESULTS.md, cold start).
    One session: its loader caches the service models and endpoint data each client reads, as
    boto3's default session would; credentials and region come from the same environment chain.

    `reset` (a test's or a local run's end) drops the session, so the next one reads credentials
    and region afresh, but not its loader (`_service_models`): boto3's default session kept its
    models for the process, and a fresh loader per local run re-read each client's model, ≈ 1 s of
    every run's first steps here (sagemaker 0.22 s, ec2 0.40 s, s3 0.13 s: bench/RESULTS.md)."""
    import botocore.session

    session = botocore.session.get_session()
    session.register_component("data_loader", _service_models(session.get_config_variable("data_path")))
    return session


@cache
def _service_models(data_path: str | None) -> Any:
    """botocore's loader of service models and endpoint data: it caches what it has read."""
    import botocore.loaders

    return botocore.loaders.create_loader(data_path)


@cache
def _client(service: str) -> Any:
    """botocore and its configuration are loaded here, on a function's first AWS call (≈ 580 M CPU
    instructions, plus each client's model): a function that calls no AWS API never loads them."""
    from botocore.config import Config

    from hyperpod_perf.aws.s3 import READ_CONCURRENCY

    config = Config(
        retries={"mode": "adaptive", "max_attempts": 5},
        connect_timeout=5,
        read_timeout=30,
        max_pool_connections=READ_CONCURRENCY,  # one connection per concurrent GET (botocore: 10)
    )
    return botocore_session().create_client(service, config=config)


def preload(*services: str) -> None:
    """Inside Lambda, create these clients at import, in the function's init phase.

    AWS's Lambda best practice (SDK clients outside the handler, reused by every invocation; the
    init phase runs before any event waits on it). Elsewhere — tests, the CLI, the local run, which
    may swap the clients after importing a handler — they are created on first use as before."""
    if os.getenv("LAMBDA_TASK_ROOT") and "client" not in _overrides:
        for service in services:
            _client(service)


def client(service: str) -> Any:
    if "client" in _overrides:
        return _overrides["client"](service)
    return _client(service)


def starter(state_machine_arn: str):
    from hyperpod_perf.aws.stepfunctions import DiagnosisStarter

    if "starter" in _overrides:
        return _overrides["starter"](state_machine_arn)
    return DiagnosisStarter(client("stepfunctions"), state_machine_arn)


def store(bucket: str):
    from hyperpod_perf.aws.s3 import ReportStore

    if "store" in _overrides:
        return _overrides["store"](bucket)
    return ReportStore(client("s3"), bucket)


@cache
def _presigning_s3() -> Any:
    """An S3 client of its own for signing report links (aws/report_links.py: SigV4, the bucket's
    regional host); the shared client keeps botocore's defaults for its requests. From the one
    botocore session, as every client here: boto3 would load s3transfer for nothing."""
    from hyperpod_perf.aws.report_links import presigning_config

    return botocore_session().create_client("s3", config=presigning_config())


def report_linker():
    """The report's console page and presigned link, signed with the function's own credentials."""
    from hyperpod_perf.aws.report_links import ReportLinker

    if "report_linker" in _overrides:
        return _overrides["report_linker"]()
    if "client" in _overrides:
        return ReportLinker(_overrides["client"]("s3"))
    return ReportLinker(_presigning_s3())


def notifier(topic_arn: str):
    from hyperpod_perf.aws.sns import Notifier

    if "notifier" in _overrides:
        return _overrides["notifier"](topic_arn)
    return Notifier(client("sns"), topic_arn)


def regional_client(service: str, region: str | None, profile: str | None = None) -> Any:
    """A client for the CLI: --region / AWS_REGION / AWS_DEFAULT_REGION / the profile's region,
    --profile / AWS_PROFILE. A missing region, profile or credentials raises
    AwsConfigurationError (one sentence), never a botocore traceback."""
    if "client" in _overrides:
        return _overrides["client"](service)
    from hyperpod_perf.aws.cli_session import open_session, session_client

    return session_client(open_session(region, profile), service)


def clusters():
    from hyperpod_perf.aws.sagemaker import HyperPodClusters

    if "clusters" in _overrides:
        return _overrides["clusters"]()
    return HyperPodClusters(client("sagemaker"))


def file_systems():
    from hyperpod_perf.aws.fsx import FsxFileSystems

    return FsxFileSystems(client("fsx"))


def fsx_metrics():
    from hyperpod_perf.aws.cloudwatch import FsxMetrics

    return FsxMetrics(client("cloudwatch"))


def metrics_source(workspace_id: str, region: str | None = None):
    """The cluster's Amazon Managed Prometheus workspace, queried with the function's own credentials."""
    if "metrics_source" in _overrides:
        return _overrides["metrics_source"](workspace_id, region)
    from hyperpod_perf.aws.prometheus import AmpWorkspace

    return AmpWorkspace.with_session(workspace_id, region=region, session=botocore_session())


def cluster_logs():
    from hyperpod_perf.aws.logs import ClusterLogs

    if "logs" in _overrides:
        return _overrides["logs"]()
    return ClusterLogs(client("logs"))


def session_client(total_timeout_s: float):
    """The data-channel client (the local run swaps in one whose StartSession reaches its agents)."""
    from hyperpod_perf.aws.session import SessionClient

    if "session_client" in _overrides:
        return _overrides["session_client"](total_timeout_s)
    return SessionClient(client("ssm"), total_timeout=total_timeout_s)


def prefix_reader():
    from hyperpod_perf.aws.s3 import read_prefix_texts

    s3 = client("s3")
    return lambda uri: read_prefix_texts(s3, uri)


def job_log_sources():
    """The training job's logs: S3 prefixes and CloudWatch log groups, streamed."""
    from hyperpod_perf.aws.joblogs import JobLogSources

    if "job_log_sources" in _overrides:
        return _overrides["job_log_sources"]()
    return JobLogSources(client("s3"), client("logs"))


def parameters_by_path(path: str) -> dict[str, str]:
    """The SSM parameters directly under `path` (the trigger's per-cluster configuration)."""
    from hyperpod_perf.aws.parameters import read_parameters_by_path

    if "parameters" in _overrides:
        return _overrides["parameters"](path)
    return read_parameters_by_path(client("ssm"), path)


def instance_topology():
    """EC2 DescribeInstanceTopology (the local run swaps in the simulated cluster's answer)."""
    from hyperpod_perf.aws.ec2_topology import InstanceTopology

    if "instance_topology" in _overrides:
        return _overrides["instance_topology"]()
    return InstanceTopology(client("ec2"))


def eks_node_labels():
    """The Kubernetes node list of an EKS cluster (eks:DescribeCluster, an STS-presigned token)."""
    from hyperpod_perf.aws.eks_nodes import EksNodeLabels

    if "eks_node_labels" in _overrides:
        return _overrides["eks_node_labels"]()
    return EksNodeLabels(client("eks"), client("sts"))
