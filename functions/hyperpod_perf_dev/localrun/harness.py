"""Simulated runs of the deployed pipeline, with faults planted where operators meet them.

Why a harness beside the demo: the state-machine tests and the benchmarks need many variants of
one thing — the real `diagnose.asl.json` in moto, the real handlers, a simulated HyperPod cluster —
each with something broken on purpose: a node whose agent is down, a throttled StartSession, a
stream that stalls or closes half-way, a node that vanishes between ResolveCluster and its
CollectNode, a cluster that is missing, empty or Updating, a role without logs or metrics
permissions, an S3 PutObject that fails once. Every fault is injected where the real one would
arise (a botocore ClientError from the client, a misbehaving data channel from the simulated
agent), so the translation into named errors, the ASL's Retry/Catch and the report are all the
production code paths.

Nodes are addressed by 0-based index ("node 3" is index 2), as in the demo's scenarios.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from hyperpod_perf.domain.cluster import LUSTRE_GIB_PER_TIB, MB
from hyperpod_perf_dev.localrun.deployment import ACCOUNT, LocalDeployment, local_deployment
from hyperpod_perf_dev.sim.node import NodeFaults, SimulatedNode, simulate_cluster

REGION = "us-west-2"
AZS = (("us-west-2a", "usw2-az1"), ("us-west-2b", "usw2-az2"))
INSTANCE_TYPE = "ml.p5.48xlarge"
GROUP = "worker-group-1"
LUSTRE_GIB, LUSTRE_PER_UNIT = 4800, 250  # 4,800 GiB / 1000 x 250 MB/s/TiB = 1,200 MB/s provisioned
LUSTRE_MOUNT = "oyuutbev"  # the simulated nodes mount 10.1.71.197@tcp:/oyuutbev on /fsx
METRIC_MINUTES = 180
DEEP_HEALTH_CHECKS = ("InstanceStress", "InstanceConnectivity")
_INSTANCE_ID = re.compile(r"(i-[0-9a-f]{8,17})$")


# --- what to simulate -------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodePlan:
    """How one node behaves. The default is a healthy node that answers its session."""

    faults: NodeFaults | None = None  # problems planted in the collector output
    refuse: str | None = None  # StartSession fails with this AWS error code every time
    throttle: int = 0  # the first `throttle` StartSession calls fail with ThrottlingException
    stall_after_chunks: int | None = None  # the stream goes silent after this many chunks
    close_after_chunks: int | None = None  # the socket is cut after this many chunks (partial output)
    disappear: bool = False  # removed from the cluster after ResolveCluster, agent gone
    status: str | None = None  # HyperPod InstanceStatus (moto says Running)


@dataclass(frozen=True)
class ClusterPlan:
    name: str = "ml-cluster"
    nodes: int = 8
    node_plans: Mapping[int, NodePlan] = field(default_factory=dict)
    exists: bool = True  # False: not created at all (ClusterNotFound)
    empty: bool = False  # created, then every node removed (NoTargets)
    status: str = "InService"  # e.g. Updating
    node_recovery: str = "Automatic"
    lustre_utilization: float | None = 0.35  # of provisioned throughput; None: no FSx metrics
    alarm_name: str | None = None  # default hpd-<name>-fsx-throughput
    seed: int = 0  # varies instance ids, hostnames and jitter between clusters
    instance_type: str = INSTANCE_TYPE

    @property
    def alarm(self) -> str:
        return self.alarm_name or f"hpd-{self.name}-fsx-throughput"

    def plan(self, index: int) -> NodePlan:
        return self.node_plans.get(index, NodePlan())


@dataclass(frozen=True)
class AdapterFaults:
    """Faults in the handlers' AWS clients (raised as botocore ClientErrors by the client)."""

    logs_access_denied: bool = False  # every CloudWatch Logs call
    metrics_access_denied: bool = False  # every CloudWatch call (GetMetricData)
    s3_put_failures: int = 0  # the first N PutObject calls whose key contains `s3_put_key_part` fail
    s3_put_key_part: str = "/raw/"


@dataclass(frozen=True)
class RunPlan:
    clusters: tuple[ClusterPlan, ...] = (ClusterPlan(),)
    adapters: AdapterFaults = AdapterFaults()
    #: "websocket": the real SessionClient over loopback WebSockets against FakeAgent (default);
    #: "in-process": a light session fake that returns the simulated text directly (large fleets).
    transport: str = "websocket"
    idle_timeout_s: float = 1.5  # the data channel's idle limit (a stalled stream hits it)
    distributed_threshold: int = 200
    map_concurrency: int = 8
    environment: Mapping[str, str] = field(default_factory=dict)


def demo_faults() -> dict[int, NodePlan]:
    """The demo's faulty scenario, as node plans (node 3 = index 2, ...)."""
    return {
        2: NodePlan(faults=NodeFaults(pcie_width_gpu=3)),
        4: NodePlan(faults=NodeFaults(xid79=True, xid79_gpu=5)),
        5: NodePlan(faults=NodeFaults(efa_port_down="rdmap113s0")),
        1: NodePlan(faults=NodeFaults(governor="powersave")),
    }


# --- what a run produced ----------------------------------------------------------------------------


@dataclass
class RunOutcome:
    """How an execution ended, and lazy access to what it left in the bucket."""

    status: str
    execution_arn: str
    error: str | None
    cause: str | None
    prefix: str | None  # reports/<cluster>/<stamp>-<execution>/, when the run got that far
    history: list[dict[str, Any]]
    store: Any = field(repr=False, default=None)  # SimulatedRun (reads the bucket on demand)
    _objects: dict[str, bytes] | None = field(repr=False, default=None)
    _keys: list[str] | None = field(repr=False, default=None)

    def names(self) -> list[str]:
        """Every key under the run's prefix, relative to it."""
        if self._keys is None:
            self._keys = [k[len(self.prefix) :] for k in self.store.keys(self.prefix)] if self.prefix else []
        return self._keys

    def get(self, name: str) -> bytes | None:
        if self._objects is not None or not self.prefix:
            return (self._objects or {}).get(name)
        return self.store.get(self.prefix + name)

    @property
    def objects(self) -> dict[str, bytes]:
        """Every object under the prefix (reads them all: for small runs)."""
        if self._objects is None:
            self._objects = self.store.objects(self.prefix) if self.prefix else {}
        return self._objects

    @property
    def report(self) -> dict[str, Any] | None:
        body = self.get("report.json")
        return json.loads(body) if body is not None else None

    @property
    def email(self) -> str | None:
        body = self.get("notification-email.txt")
        return body.decode() if body is not None else None

    @property
    def chatbot(self) -> dict[str, Any] | None:
        body = self.get("notification-chatbot.json")
        return json.loads(body) if body is not None else None

    def raw(self, instance_id: str) -> bytes | None:
        return self.get(f"raw/{instance_id}.txt")

    def states_entered(self) -> list[str]:
        return [
            e["stateEnteredEventDetails"]["name"] for e in self.history if "stateEnteredEventDetails" in e
        ]

    def findings(self, check: str | None = None, severity: str | None = None) -> list[dict[str, Any]]:
        report = self.report or {}
        return [
            f
            for f in report.get("findings", [])
            if (check is None or f["check"] == check) and (severity is None or f["severity"] == severity)
        ]


# --- the session side ---------------------------------------------------------------------------------


def instance_of(target: str) -> str:
    """The instance id at the end of `sagemaker-cluster:<id>_<group>-<instance-id>`."""
    match = _INSTANCE_ID.search(target)
    if match is None:
        raise ValueError(f"no instance id in SSM target {target!r}")
    return match.group(1)


class _NodeBehaviour:
    """Per-target StartSession outcomes shared by both transports (thread-safe counters)."""

    def __init__(self, run: SimulatedRun) -> None:
        self._run = run
        self._lock = threading.Lock()
        self.calls: dict[str, int] = {}

    def start_error(self, target: str) -> BaseException | None:
        from hyperpod_perf_dev.sim.agent import client_error

        instance = instance_of(target)
        node = self._run.node(instance)
        plan = self._run.plan_of(instance)
        with self._lock:
            self.calls[instance] = self.calls.get(instance, 0) + 1
            count = self.calls[instance]
        if plan.disappear:
            self._run.remove_node(instance)
            return client_error("TargetNotConnected", f"{target} is not connected.")
        if plan.refuse:
            return client_error(plan.refuse, f"{target}: {plan.refuse}")
        if count <= plan.throttle:
            return client_error("ThrottlingException", "Rate exceeded")
        if node is None:
            return client_error("TargetNotConnected", f"{target} is not connected.")
        return None


class InProcessSessions:
    """A session client without the data channel: returns the node's simulated output directly.

    For large fleets (thousands of nodes) where the loopback WebSocket per node would dominate the
    run time; StartSession faults (refuse, throttle, disappear) still apply, stream faults do not.
    """

    def __init__(self, behaviour: _NodeBehaviour, run: SimulatedRun) -> None:
        self._behaviour = behaviour
        self._run = run

    def run(self, target: str, document_name: str, parameters: Any = None) -> Any:
        from hyperpod_perf.aws.errors import translate_client_error
        from hyperpod_perf.aws.session import SessionResult

        error = self._behaviour.start_error(target)
        if error is not None:
            raise translate_client_error(error, f"ssm:StartSession {target}") from error
        node = self._run.node(instance_of(target))
        assert node is not None
        return SessionResult(node.text, "", 0, False, f"inproc-{node.instance_id}")


# --- faulty AWS clients -------------------------------------------------------------------------------


class FaultyClient:
    """A boto3 client whose chosen calls raise the ClientError AWS would return."""

    def __init__(self, inner: Any, fail: Callable[[str, dict[str, Any]], BaseException | None]) -> None:
        self._inner = inner
        self._fail = fail

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if not callable(attribute) or name.startswith("_") or name in ("get_paginator", "can_paginate"):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            error = self._fail(name, kwargs)
            if error is not None:
                raise error
            return attribute(*args, **kwargs)

        return call


@dataclass
class FaultLog:
    """What the injected faults actually did (tests assert on it)."""

    failed_puts: list[str] = field(default_factory=list)
    denied_calls: list[str] = field(default_factory=list)


def _client_factory(faults: AdapterFaults, region: str, log: FaultLog) -> Callable[[str], Any]:
    import boto3

    from hyperpod_perf_dev.sim.agent import client_error

    lock = threading.Lock()
    cache: dict[str, Any] = {}
    puts_left = [faults.s3_put_failures]

    def fail(service: str) -> Callable[[str, dict[str, Any]], BaseException | None]:
        def decide(operation: str, kwargs: dict[str, Any]) -> BaseException | None:
            if service == "logs" and faults.logs_access_denied:
                log.denied_calls.append(f"logs:{operation}")
                return client_error(
                    "AccessDeniedException", f"not authorized to perform: logs:{operation}", operation, 400
                )
            if service == "cloudwatch" and faults.metrics_access_denied:
                log.denied_calls.append(f"cloudwatch:{operation}")
                return client_error(
                    "AccessDenied", f"not authorized to perform: cloudwatch:{operation}", operation, 403
                )
            if service == "s3" and operation == "put_object" and faults.s3_put_key_part in kwargs["Key"]:
                with lock:
                    if puts_left[0] > 0:
                        puts_left[0] -= 1
                        log.failed_puts.append(kwargs["Key"])
                        return client_error(
                            "InternalError", "We encountered an internal error.", "PutObject", 500
                        )
            return None

        return decide

    def factory(service: str) -> Any:
        with lock:
            if service not in cache:
                inner = boto3.client(service, region_name=region)
                cache[service] = FaultyClient(inner, fail(service))
            return cache[service]

    return factory


# --- instant ASL retries ------------------------------------------------------------------------------


@contextmanager
def instant_asl_retries() -> Iterator[list[float]]:
    """moto's interpreter really sleeps a Retrier's interval; skip it, keeping the requested intervals.

    Only the retrier module's view of `time` is replaced (not `time.sleep` for the whole process),
    so the simulated agents, the session client and the polling keep their real clocks.
    """
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    requested: list[float] = []
    original = retrier_decl.time
    retrier_decl.time = SimpleNamespace(sleep=requested.append)
    try:
        yield requested
    finally:
        retrier_decl.time = original


# --- the run --------------------------------------------------------------------------------------------


class SimulatedRun:
    """A deployment in moto with simulated clusters; created by `simulated_run`."""

    def __init__(self, plan: RunPlan, dep: LocalDeployment) -> None:
        self.plan = plan
        self.dep = dep
        self.nodes: dict[str, list[SimulatedNode]] = {}
        self.fs_ids: dict[str, str] = {}
        self.faults = FaultLog()
        self.retry_intervals: list[float] = []
        self.ssm: Any = None  # FakeSsm (websocket transport)
        self.behaviour = _NodeBehaviour(self)
        self._by_instance: dict[str, tuple[ClusterPlan, SimulatedNode]] = {}
        self._removed: set[str] = set()
        self._lock = threading.Lock()

    # nodes
    def node(self, instance_id: str) -> SimulatedNode | None:
        entry = self._by_instance.get(instance_id)
        return None if entry is None or instance_id in self._removed else entry[1]

    def plan_of(self, instance_id: str) -> NodePlan:
        entry = self._by_instance.get(instance_id)
        return entry[0].plan(entry[1].index) if entry else NodePlan()

    def remove_node(self, instance_id: str) -> None:
        """The node leaves the cluster (terminated, replaced) while the run is under way."""
        from moto.sagemaker.models import sagemaker_backends

        with self._lock:
            if instance_id in self._removed:
                return
            self._removed.add(instance_id)
            cluster_plan = self._by_instance[instance_id][0]
            cluster = sagemaker_backends[ACCOUNT][self.dep.region].clusters[cluster_plan.name]
            cluster.nodes.pop(instance_id, None)

    def cluster_nodes(self, cluster: str | None = None) -> list[SimulatedNode]:
        return self.nodes[cluster or self.plan.clusters[0].name]

    # starting
    def start(self, request: dict[str, Any], name: str | None = None) -> str:
        return self.dep.start(request, name)

    def trigger(self, event: dict[str, Any]) -> dict[str, Any]:
        return self.dep.trigger(event)

    def execution_arn(self, name: str) -> str:
        machine = self.dep.state_machine_arn.split(":stateMachine:", 1)
        return f"{machine[0]}:execution:{machine[1]}:{name}"

    def alarm_event(self, cluster: str | None = None, when: datetime | None = None) -> dict[str, Any]:
        """An EventBridge `CloudWatch Alarm State Change` for the cluster's FSx alarm."""
        plan = next(c for c in self.plan.clusters if c.name == (cluster or self.plan.clusters[0].name))
        return alarm_event(plan.alarm, self.fs_ids.get(plan.name), when or datetime.now(UTC), self.dep.region)

    # finishing
    def wait(self, execution_arn: str, *, timeout_s: float = 300, load: bool = True) -> RunOutcome:
        """The finished execution; `load` reads every object of the run now (usable after the
        deployment is gone), otherwise they are read on demand while it is still up."""
        description = self.dep.wait(execution_arn, timeout_s=timeout_s)
        history = self.history(execution_arn)
        name = execution_arn.rsplit(":", 1)[-1]
        prefix = self._prefix_of(name)
        outcome = RunOutcome(
            status=description["status"],
            execution_arn=execution_arn,
            error=description.get("error"),
            cause=description.get("cause"),
            prefix=prefix,
            history=history,
            store=self,
        )
        if load:
            outcome.names()
            _ = outcome.objects
        return outcome

    def run(self, request: dict[str, Any], name: str | None = None, *, timeout_s: float = 300) -> RunOutcome:
        return self.wait(self.start(request, name), timeout_s=timeout_s)

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        sfn = self.dep.client("stepfunctions")
        events: list[dict[str, Any]] = []
        for page in sfn.get_paginator("get_execution_history").paginate(executionArn=execution_arn):
            events.extend(page["events"])
        return events

    def keys(self, prefix: str = "reports/") -> list[str]:
        s3 = self.dep.client("s3")
        return [
            o["Key"]
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=self.dep.bucket, Prefix=prefix)
            for o in page.get("Contents", [])
        ]

    def get(self, key: str) -> bytes | None:
        s3 = self.dep.client("s3")
        try:
            return s3.get_object(Bucket=self.dep.bucket, Key=key)["Body"].read()
        except s3.exceptions.NoSuchKey:
            return None

    def objects(self, prefix: str) -> dict[str, bytes]:
        s3 = self.dep.client("s3")
        return {
            key[len(prefix) :]: s3.get_object(Bucket=self.dep.bucket, Key=key)["Body"].read()
            for key in self.keys(prefix)
        }

    def published(self) -> list[dict[str, Any]]:
        """Every SNS message published to the topic: subject and the per-protocol bodies."""
        from moto.sns.models import sns_backends

        topic = sns_backends[ACCOUNT][self.dep.region].topics[self.dep.topic_arn]
        return [
            {"message_id": mid, "subject": subject, "bodies": json.loads(message)}
            for mid, message, subject, _attrs, _group in topic.sent_notifications
        ]

    def _prefix_of(self, execution_name: str) -> str | None:
        """reports/<cluster>/<stamp>-<execution>/ (one level of delimiter listing per cluster)."""
        s3 = self.dep.client("s3")
        marker = f"-{execution_name}/"
        clusters = s3.list_objects_v2(Bucket=self.dep.bucket, Prefix="reports/", Delimiter="/")
        for cluster in clusters.get("CommonPrefixes", []):
            runs = s3.list_objects_v2(Bucket=self.dep.bucket, Prefix=cluster["Prefix"], Delimiter="/")
            for run in runs.get("CommonPrefixes", []):
                if run["Prefix"].endswith(marker):
                    return run["Prefix"]
        return None


@contextmanager
def simulated_run(plan: RunPlan | None = None) -> Iterator[SimulatedRun]:
    """moto + the real ASL + the real handlers + the simulated clusters of `plan`, torn down on exit."""
    from hyperpod_perf.aws import clients
    from hyperpod_perf.aws.session import SessionClient
    from hyperpod_perf_dev.sim.account import extended_hyperpod
    from hyperpod_perf_dev.sim.agent import FakeAgent, FakeSsm

    plan = plan or RunPlan()
    environment = {
        "MAP_MAX_CONCURRENCY": str(plan.map_concurrency),
        "DISTRIBUTED_MAP_THRESHOLD": str(plan.distributed_threshold),
        "SESSION_TOTAL_TIMEOUT_S": "60",
        **plan.environment,
    }
    with ExitStack() as stack:
        stack.enter_context(extended_hyperpod())
        clusters = [{"name": c.name, "alarmNames": [c.alarm]} for c in plan.clusters]
        dep = stack.enter_context(local_deployment(region=REGION, environment=environment, clusters=clusters))
        run = SimulatedRun(plan, dep)
        run.retry_intervals = stack.enter_context(instant_asl_retries())
        for cluster in plan.clusters:
            _seed(run, cluster)
        adapters = plan.adapters
        if adapters != AdapterFaults():
            clients.override("client", _client_factory(adapters, dep.region, run.faults))
        if plan.transport == "in-process":
            sessions = InProcessSessions(run.behaviour, run)
            clients.override("session_client", lambda total: sessions)
        else:
            agent = stack.enter_context(FakeAgent())
            run.ssm = FakeSsm(agent, lambda target: _agent_scenario(run, target), run.behaviour.start_error)
            clients.override(
                "session_client",
                lambda total: SessionClient(run.ssm, total_timeout=total, idle_timeout=plan.idle_timeout_s),
            )
        yield run


def _agent_scenario(run: SimulatedRun, target: str) -> Any:
    from hyperpod_perf_dev.sim.agent import Scenario

    instance = instance_of(target)
    node = run.node(instance)
    assert node is not None, f"session started on unknown node {instance}"
    plan = run.plan_of(instance)
    return Scenario(
        stdout=node.text.encode(),
        stall_after_chunks=plan.stall_after_chunks,
        abrupt_close_after_chunks=plan.close_after_chunks,
    )


def _seed(run: SimulatedRun, plan: ClusterPlan) -> None:
    from moto.sagemaker.models import sagemaker_backends

    from hyperpod_perf_dev.sim.account import (
        GroupSeed,
        NodeSeed,
        seed_cluster,
        seed_lustre,
    )
    from hyperpod_perf_dev.sim.lustre_load import lustre_load, put_lustre_load

    faults = {i: p.faults for i, p in plan.node_plans.items() if p.faults is not None}
    sim = simulate_cluster(plan.nodes, faults, instance_type=plan.instance_type, seed=plan.seed)
    run.nodes[plan.name] = sim
    for node in sim:
        run._by_instance[node.instance_id] = (plan, node)
    if not plan.exists:
        return
    dep = run.dep
    seeds = [
        NodeSeed(node.instance_id, az=AZS[i % 2][0], az_id=AZS[i % 2][1], hostname=node.hostname)
        for i, node in enumerate(sim)
    ]
    seed_cluster(
        dep.client("sagemaker"),
        plan.name,
        [GroupSeed(GROUP, plan.instance_type, seeds, deep_health_checks=list(DEEP_HEALTH_CHECKS))],
        region=dep.region,
        node_recovery=plan.node_recovery,
        orchestrator={"Slurm": {}},
    )
    cluster = sagemaker_backends[ACCOUNT][dep.region].clusters[plan.name]
    cluster.status = plan.status
    for index, node_plan in plan.node_plans.items():
        if node_plan.status is not None:
            cluster.nodes[sim[index].instance_id].status = node_plan.status
    if plan.empty:
        cluster.nodes = {}
    if plan.lustre_utilization is not None:
        fs_id = seed_lustre(
            dep.client("fsx"),
            region=dep.region,
            capacity_gib=LUSTRE_GIB,
            per_unit=LUSTRE_PER_UNIT,
            mount_name=LUSTRE_MOUNT,
        )
        run.fs_ids[plan.name] = fs_id
        provisioned = LUSTRE_GIB / LUSTRE_GIB_PER_TIB * LUSTRE_PER_UNIT * MB
        start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=METRIC_MINUTES)
        load = lustre_load(METRIC_MINUTES, provisioned, plan.lustre_utilization)
        put_lustre_load(dep.client("cloudwatch"), fs_id, start, load)
    logs = dep.client("logs")
    group = f"/aws/sagemaker/Clusters/{plan.name}/{plan.name}"  # moto's cluster id is the cluster name
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="DeepHealthCheckResults/hpd-sim")


def alarm_event(alarm: str, fs_id: str | None, when: datetime, region: str = REGION) -> dict[str, Any]:
    """An EventBridge `CloudWatch Alarm State Change` (shape of the real captures), at `when`."""
    dimensions = {"FileSystemId": fs_id} if fs_id else {}
    stamp = when.astimezone(UTC)
    return {
        "version": "0",
        "id": f"hpd-sim-{int(stamp.timestamp() * 1000)}",
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "account": ACCOUNT,
        "time": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:cloudwatch:{region}:{ACCOUNT}:alarm:{alarm}"],
        "detail": {
            "alarmName": alarm,
            "configuration": {
                "description": "FSx for Lustre throughput >= 90% of provisioned for 15 minutes",
                "metrics": [
                    {
                        "id": "read",
                        "metricStat": {
                            "metric": {
                                "dimensions": dimensions,
                                "name": "DataReadBytes",
                                "namespace": "AWS/FSx",
                            },
                            "period": 60,
                            "stat": "Sum",
                        },
                        "returnData": False,
                    }
                ],
            },
            "previousState": {
                "value": "OK",
                "timestamp": stamp.isoformat(),
                "reason": "Threshold not crossed",
            },
            "state": {"value": "ALARM", "timestamp": stamp.isoformat(), "reason": "Threshold Crossed"},
        },
    }


def wait_all(run: SimulatedRun, timeout_s: float = 120) -> list[dict[str, Any]]:
    """Every execution of the state machine, once none is RUNNING."""
    sfn = run.dep.client("stepfunctions")
    deadline = time.monotonic() + timeout_s
    while True:
        pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=run.dep.state_machine_arn)
        executions = [e for page in pages for e in page["executions"]]
        if all(e["status"] != "RUNNING" for e in executions) or time.monotonic() > deadline:
            return executions
        time.sleep(0.1)
