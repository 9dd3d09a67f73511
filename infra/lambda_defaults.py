"""One place for every Lambda setting the functions share, so tests can hold the stack to them.

Why constants: the runtime, the architecture and the Powertools layer must agree (the layer is
built per Python version and CPU), and the dependencies layer is built for the same pair.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from hyperpod_perf.pipeline import tasks as pipeline_tasks
from hyperpod_perf.pipeline.pacing import COLLECT_TIMEOUT_S

RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64
LOGGING_FORMAT = lambda_.LoggingFormat.JSON
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
TRACING = lambda_.Tracing.ACTIVE

#: The AWS-managed Powertools for AWS Lambda (Python) v3 layer, published by AWS in every
#: commercial region under account 017000801446. Pinned so a deploy is reproducible; bump it
#: deliberately (docs.aws.amazon.com/powertools/python -> "Lambda Layer").
POWERTOOLS_LAYER_ACCOUNT = "017000801446"
POWERTOOLS_LAYER_NAME = "AWSLambdaPowertoolsPythonV3-python312-arm64"
POWERTOOLS_LAYER_VERSION = 27


def powertools_layer_arn(region: str, version: int = POWERTOOLS_LAYER_VERSION) -> str:
    """`arn:aws:lambda:<region>:017000801446:layer:AWSLambdaPowertoolsPythonV3-python312-arm64:<v>`."""
    return f"arn:aws:lambda:{region}:{POWERTOOLS_LAYER_ACCOUNT}:layer:{POWERTOOLS_LAYER_NAME}:{version}"


#: What neither the runtime (boto3) nor the Powertools layer (pydantic v2, aws-xray-sdk) ships.
#: The pin is the one the project's own tests run against.
LAYER_REQUIREMENTS: tuple[str, ...] = ("websockets==17.4",)
#: pip's target platform for the dependencies layer: the Lambda arm64 Python 3.12 environment.
LAYER_PIP_PLATFORM = "manylinux2014_aarch64"
LAYER_PYTHON_VERSION = "3.12"

#: Functions' code asset: the package only; the development package (simulated cluster, local
#: run, synthetic reports), tests, caches and build metadata stay out.
CODE_ASSET_EXCLUDES: tuple[str, ...] = (
    "hyperpod_perf_dev",
    "**/__pycache__",
    "**/*.pyc",
    "*.egg-info",
    "**/tests",
    "**/.pytest_cache",
    "**/.hypothesis",
)

POWERTOOLS_SERVICE_NAME = "hyperpod-perf"
POWERTOOLS_METRICS_NAMESPACE = "HyperPodPerf"
POWERTOOLS_LOG_LEVEL = "INFO"


@dataclass(frozen=True)
class FunctionSizing:
    """Memory and timeout of one function; sized for a 2,000-node cluster where it matters."""

    memory_mb: int
    timeout: Duration


#: handler module -> sizing. The handler entry point is `hyperpod_perf.handlers.<module>.handler`.
FUNCTION_SIZING: dict[str, FunctionSizing] = {
    "validate": FunctionSizing(256, Duration.seconds(30)),
    # Lists the nodes (ListClusterNodes, 100 a page) and reads their network topology.
    "resolve_cluster": FunctionSizing(512, Duration.minutes(5)),
    # A batch of nodes, their sessions paced at the invocation's share of the StartSession rate;
    # batches are sized to fit this timeout (pipeline/pacing.py); ~10 sessions of ~1 MiB in flight.
    "collect_node": FunctionSizing(512, Duration.seconds(COLLECT_TIMEOUT_S)),
    "record_node_failure": FunctionSizing(256, Duration.seconds(30)),
    "fsx_metrics": FunctionSizing(256, Duration.minutes(2)),
    # ~20 range queries of every node's series and the judge over them (1,024 nodes x 240 steps):
    # CPU-bound, 1 vCPU at 1,769 MB.
    "cluster_metrics": FunctionSizing(1769, Duration.minutes(3)),
    "cluster_logs": FunctionSizing(512, Duration.minutes(5)),
    # Describes every target for placement: ~2,000 DescribeClusterNode calls at the API's pace.
    "node_placement": FunctionSizing(512, Duration.minutes(10)),
    # Lists the job-log prefix and writes the job-log map's batches.
    "plan_job_logs": FunctionSizing(512, Duration.minutes(5)),
    # One batch of the job-log map: ~1 GiB of stored logs (pipeline/joblog_map.py BATCH_BYTES),
    # CPU-bound: 1 vCPU at 1,769 MB; memory stays flat (bounded readers and scan state).
    "scan_job_logs": FunctionSizing(1769, Duration.minutes(15)),
    # Merges the job-log map's parts and reads the job's log group (job-log forensics), besides
    # the pairwise nccl-tests logs: ~1 vCPU at 1,769 MB.
    "nccl_results": FunctionSizing(1769, Duration.minutes(10)),
    # Parses and judges every node's raw snapshot: memory buys CPU on Lambda.
    "evaluate": FunctionSizing(2048, Duration.minutes(10)),
    "publish": FunctionSizing(1024, Duration.minutes(3)),
    "report_problem": FunctionSizing(256, Duration.minutes(1)),
    "trigger": FunctionSizing(256, Duration.seconds(30)),
}

HANDLER_MODULES: tuple[str, ...] = tuple(FUNCTION_SIZING)


handler_entry = pipeline_tasks.handler_entry
