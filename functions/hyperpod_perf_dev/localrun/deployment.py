"""A deployment of the pipeline inside moto: bucket, topic, the real ASL, handlers bridged.

The state machine definition is the file in `statemachines/`, with its `${...}` substitutions
filled in exactly as the CDK stack fills them (same table, `pipeline.tasks`).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from hyperpod_perf.pipeline.tasks import (
    BUCKET_SUBSTITUTION,
    TASK_FUNCTIONS,
    TRIGGER_FUNCTION,
    load_handler,
)
from hyperpod_perf_dev.localrun.bridge import LambdaBridge, environment_overlay, installed

ACCOUNT = "123456789012"
#: The local per-cluster configuration path (the stack uses /hyperpod-perf/<stack>/clusters).
CLUSTERS_PARAMETER_PATH = "/hyperpod-perf/local/clusters"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/hyperpod-perf-local"
MOTO_CONFIG = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}


def asl_path() -> Path:
    """statemachines/diagnose.asl.json: from the source tree, or the copy shipped in the package."""
    source_tree = Path(__file__).resolve().parents[3] / "statemachines" / "diagnose.asl.json"
    if source_tree.exists():
        return source_tree
    return Path(str(resources.files("hyperpod_perf_dev.localrun") / "diagnose.asl.json"))


def substitute(definition: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        definition = definition.replace("${" + key + "}", value)
    return definition


def function_name(module: str) -> str:
    return f"hpd-{module.replace('_', '-')}"


@dataclass
class LocalDeployment:
    region: str = "us-east-1"
    bucket: str = "hyperpod-perf-reports-local"
    environment: dict[str, str] = field(default_factory=dict)
    state_machine_arn: str = ""
    topic_arn: str = ""
    bridge: LambdaBridge | None = None

    def substitutions(self) -> dict[str, str]:
        values = {
            key: f"arn:aws:lambda:{self.region}:{ACCOUNT}:function:{function_name(module)}"
            for key, module in TASK_FUNCTIONS.items()
        }
        values[BUCKET_SUBSTITUTION] = self.bucket
        return values

    def client(self, service: str) -> Any:
        import boto3

        return boto3.client(service, region_name=self.region)

    def start(self, request: dict[str, Any], name: str | None = None) -> str:
        # AWS names an unnamed execution with a UUID; moto leaves it None (an ARN ending in
        # ":None" and a null $$.Execution.Name, which the handlers rightly reject), so name it here.
        kwargs: dict[str, Any] = {
            "stateMachineArn": self.state_machine_arn,
            "input": json.dumps(request),
            "name": name or str(uuid.uuid4()),
        }
        return self.client("stepfunctions").start_execution(**kwargs)["executionArn"]

    def wait(
        self,
        execution_arn: str,
        *,
        timeout_s: float = 600,
        on_state: Callable[[str], None] | None = None,
        poll_s: float = 0.1,
    ) -> dict[str, Any]:
        """Poll until the execution ends; `on_state` sees each state entered, once, in order."""
        sfn = self.client("stepfunctions")
        deadline = time.monotonic() + timeout_s
        seen = 0
        while True:
            description = sfn.describe_execution(executionArn=execution_arn)
            if on_state is not None:
                events = sfn.get_execution_history(executionArn=execution_arn)["events"]
                for event in events[seen:]:
                    entered = event.get("stateEnteredEventDetails")
                    if entered:
                        on_state(entered["name"])
                seen = len(events)
            if description["status"] != "RUNNING":
                return description
            if time.monotonic() > deadline:
                raise TimeoutError(f"execution {execution_arn} still running after {timeout_s:.0f} s")
            time.sleep(poll_s)

    def trigger(self, event: dict[str, Any]) -> dict[str, Any]:
        """Deliver an EventBridge event to the trigger function, as the rule target would."""
        # bandit B101: development-only code (the local run), not in the Lambda asset
        assert self.bridge is not None  # nosec B101
        body = json.dumps(event).encode()
        headers: dict[str, str] = {}
        result = json.loads(self.bridge.invoke(function_name(TRIGGER_FUNCTION), body, headers))
        if headers.get("x-amz-function-error"):
            raise RuntimeError(f"trigger failed: {result}")
        return result


@contextmanager
def local_deployment(
    *,
    region: str = "us-east-1",
    environment: dict[str, str] | None = None,
    clusters: Sequence[dict[str, Any]] = (),
    extra_setup: Callable[[LocalDeployment], None] | None = None,
) -> Iterator[LocalDeployment]:
    """moto + bridge + bucket + topic + state machine + the clusters' SSM parameters, torn down on exit.

    `clusters` are ClusterTriggerConfig objects (`{"name", "alarmNames", ...}`), stored as the
    stack stores them: one SSM parameter per cluster under CLUSTERS_PARAMETER_PATH.
    """
    from moto import mock_aws

    from hyperpod_perf.aws import clients
    from hyperpod_perf.handlers import settings

    deployment = LocalDeployment(region=region)
    # moto's interpreter logs expected control flow (IsPresent on an absent field) as errors, and
    # Powertools warns when a handler emitted no metric (metrics are disabled in the local run).
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    with ExitStack() as stack:
        stack.enter_context(environment_overlay({"AWS_DEFAULT_REGION": region, **_FAKE_CREDENTIALS}))
        stack.enter_context(mock_aws(config=MOTO_CONFIG))
        s3, sns, sfn = (deployment.client(s) for s in ("s3", "sns", "stepfunctions"))
        create = {"Bucket": deployment.bucket}
        if region != "us-east-1":
            create["CreateBucketConfiguration"] = {"LocationConstraint": region}
        s3.create_bucket(**create)
        deployment.topic_arn = sns.create_topic(Name="hyperpod-perf-local")["TopicArn"]
        definition = substitute(asl_path().read_text(), deployment.substitutions())
        deployment.state_machine_arn = sfn.create_state_machine(
            name="hyperpod-perf-diagnose-local", definition=definition, roleArn=ROLE_ARN
        )["stateMachineArn"]
        put_cluster_parameters(deployment.client("ssm"), CLUSTERS_PARAMETER_PATH, clusters)
        env = {
            "CLUSTERS_PARAMETER_PATH": CLUSTERS_PARAMETER_PATH,
            "REPORT_BUCKET": deployment.bucket,
            "READABLE_S3_PREFIXES": json.dumps([f"{deployment.bucket}/nccl/"]),
            "TOPIC_ARN": deployment.topic_arn,
            "STATE_MACHINE_ARN": deployment.state_machine_arn,
            "SESSION_DOCUMENT_NAME": "hyperpod-perf-collector-local",
            "POWERTOOLS_SERVICE_NAME": "hyperpod-perf",
            "POWERTOOLS_METRICS_NAMESPACE": "HyperPodPerf",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
            **(environment or {}),
        }
        deployment.environment = env
        stack.enter_context(environment_overlay(env))
        settings.reset_cache()
        stack.callback(settings.reset_cache)
        stack.callback(clients.reset)
        modules = [*TASK_FUNCTIONS.values(), TRIGGER_FUNCTION]
        deployment.bridge = LambdaBridge({function_name(m): load_handler(m) for m in modules})
        stack.enter_context(installed(deployment.bridge))
        if extra_setup is not None:
            extra_setup(deployment)
        yield deployment


def put_cluster_parameters(ssm: Any, path: str, clusters: Sequence[dict[str, Any]]) -> None:
    """One String parameter per cluster, `<path>/<name>` = its configuration as compact JSON."""
    for cluster in clusters:
        ssm.put_parameter(
            Name=f"{path}/{cluster['name']}",
            Value=json.dumps(cluster, separators=(",", ":")),
            Type="String",
            Overwrite=True,
        )


_FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    # bandit B105: moto's fake credentials
    "AWS_SECRET_ACCESS_KEY": "testing",  # nosec B105
    # bandit B105: moto's fake credentials
    "AWS_SESSION_TOKEN": "testing",  # nosec B105
}
