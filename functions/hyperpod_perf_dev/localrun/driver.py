"""The one local pipeline driver: the deployed pipeline offline, SSM, latencies and faults injected.

Everything real but the account: statemachines/diagnose.asl.json executed by moto's interpreter,
every task the real handler (`localrun.deployment`), nodes reached by the real Session Manager
data-channel client over loopback WebSockets against simulated agents (`localrun.sessions`), the
run started by an alarm event delivered to the real trigger function. What is simulated is
described by a `RunPlan` (`localrun.plan`): the clusters and each node's faults, the faults of the
handlers' AWS clients, the service latencies and an optional StartSession meter.

`hyperpod-perf demo` (`localrun.demo`), the state-machine tests and the time-to-findings
benchmark (`bench.pipeline_run`) all run the pipeline through `local_pipeline(plan)`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from hyperpod_perf.domain.cluster import LUSTRE_GIB_PER_TIB, MB
from hyperpod_perf_dev.localrun.deployment import ACCOUNT, LocalDeployment, local_deployment
from hyperpod_perf_dev.localrun.faults import FaultLog, asl_retry_sleeps, faulty_client_factory
from hyperpod_perf_dev.localrun.outcome import RunOutcome
from hyperpod_perf_dev.localrun.plan import AdapterFaults, ClusterPlan, NodePlan, RunPlan
from hyperpod_perf_dev.localrun.sessions import (
    InProcessSessions,
    NodeBehaviour,
    instance_of,
    loopback_sessions,
)
from hyperpod_perf_dev.sim.node import NodeFaults, SimulatedNode, simulate_cluster

REGION = "us-west-2"
AZS = (("us-west-2a", "usw2-az1"), ("us-west-2b", "usw2-az2"))
GROUP = "worker-group-1"
LUSTRE_GIB, LUSTRE_PER_UNIT = 4800, 250  # 4,800 GiB / 1000 x 250 MB/s/TiB = 1,200 MB/s provisioned
LUSTRE_MOUNT = "oyuutbev"  # the simulated nodes mount 10.1.71.197@tcp:/oyuutbev on /fsx
METRIC_MINUTES = 180
#: AUTOMATIC mode at 4,800 GiB provisions 6,000 Metadata IOPS (FSx for Lustre performance).
LUSTRE_METADATA = {"Mode": "AUTOMATIC", "Iops": 6000}
#: The FSx alarm's evaluation (infra/constructs/triggers.py FsxAlarms): 15 one-minute datapoints at
#: or above 90 % of provisioned. The simulated load ends with 15 such minutes, so the alarm event
#: the demo delivers carries the datapoints the simulated file system really published.
ALARM_MINUTES, ALARM_THRESHOLD_PCT, ALARM_TAIL_UTILIZATION = 15, 90.0, 0.93
DEEP_HEALTH_CHECKS = ("InstanceStress", "InstanceConnectivity")


class LocalPipeline:
    """A deployment in moto with simulated clusters; created by `local_pipeline`."""

    def __init__(self, plan: RunPlan, dep: LocalDeployment) -> None:
        self.plan = plan
        self.dep = dep
        self.nodes: dict[str, list[SimulatedNode]] = {}
        self.fs_ids: dict[str, str] = {}
        #: per cluster: (first minute, per-minute (read, write) bytes/s, provisioned bytes/s)
        self.fs_loads: dict[str, tuple[datetime, list[tuple[float, float]], float]] = {}
        self.faults = FaultLog()
        self.retry_intervals: list[float] = []  # every ASL Retry interval asked for (when patched)
        self.ssm: Any = None  # FakeSsm (websocket transport)
        self.behaviour = NodeBehaviour(self, plan.start_gate)
        self._by_instance: dict[str, tuple[ClusterPlan, SimulatedNode]] = {}
        self._removed: set[str] = set()
        self._lock = threading.Lock()
        self.instance_topology: Any = None  # the simulated DescribeInstanceTopology (localrun.topology)

    # nodes
    def node(self, instance_id: str) -> SimulatedNode | None:
        entry = self._by_instance.get(instance_id)
        return None if entry is None or instance_id in self._removed else entry[1]

    def refault(self, index: int, faults: NodeFaults | None, cluster: str | None = None) -> SimulatedNode:
        """Node `index` prints another collector output from now on (repaired, or not, between runs)."""
        name = cluster or self.plan.clusters[0].name
        plan = next(c for c in self.plan.clusters if c.name == name)
        faults_by_index = {**plan.faults(), index: faults or NodeFaults()}
        sim = simulate_cluster(plan.nodes, faults_by_index, instance_type=plan.instance_type, seed=plan.seed)
        node = sim[index]
        with self._lock:
            self.nodes[name][index] = node
            self._by_instance[node.instance_id] = (plan, node)
        return node

    def layers_of(self, instance_id: str) -> tuple[str, ...]:
        """The node's planned network nodes (what the simulated DescribeInstanceTopology answers)."""
        entry = self._by_instance.get(instance_id)
        return tuple(entry[0].network_layers.get(entry[1].index, ())) if entry else ()

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
        """The ARN of the execution `name` (the trigger returns only the name)."""
        from hyperpod_perf.aws.stepfunctions import DiagnosisStarter

        starter = DiagnosisStarter(self.dep.client("stepfunctions"), self.dep.state_machine_arn)
        return starter.execution_arn(name)

    def alarm_event(self, cluster: str | None = None, when: datetime | None = None) -> dict[str, Any]:
        """An EventBridge `CloudWatch Alarm State Change` for the cluster's FSx alarm."""
        plan = next(c for c in self.plan.clusters if c.name == (cluster or self.plan.clusters[0].name))
        return alarm_event(
            plan.alarm,
            self.fs_ids.get(plan.name),
            when or datetime.now(UTC),
            self.dep.region,
            load=self.fs_loads.get(plan.name),
        )

    def start_from_alarm(self, cluster: str | None = None) -> str:
        """Deliver the cluster's FSx alarm event to the trigger; the ARN of the execution it started."""
        decision = self.trigger(self.alarm_event(cluster))
        if not decision.get("execution_name"):
            raise RuntimeError(f"the trigger did not start a diagnosis: {decision}")
        return self.execution_arn(decision["execution_name"])

    # finishing
    def wait(
        self,
        execution_arn: str,
        *,
        timeout_s: float = 300,
        load: bool = True,
        on_state: Callable[[str], None] | None = None,
        poll_s: float = 0.1,
    ) -> RunOutcome:
        """The finished execution (`on_state` sees each state entered, in order)."""
        description = self.dep.wait(execution_arn, timeout_s=timeout_s, on_state=on_state, poll_s=poll_s)
        return self.outcome(execution_arn, description, load=load)

    def outcome(self, execution_arn: str, description: dict[str, Any], *, load: bool = True) -> RunOutcome:
        """What the ended execution left: `load` reads every object of the run now (usable after the
        deployment is gone), otherwise they are read on demand while it is still up."""
        name = execution_arn.rsplit(":", 1)[-1]
        outcome = RunOutcome(
            status=description["status"],
            execution_arn=execution_arn,
            error=description.get("error"),
            cause=description.get("cause"),
            prefix=self._prefix_of(name),
            history=self.history(execution_arn),
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
def local_pipeline(plan: RunPlan | None = None) -> Iterator[LocalPipeline]:
    """moto + the real ASL + the real handlers + the simulated clusters of `plan`, torn down on exit."""
    from hyperpod_perf.aws import clients
    from hyperpod_perf_dev.sim.account import extended_hyperpod

    plan = plan or RunPlan()
    environment = {
        "MAP_MAX_CONCURRENCY": str(plan.map_concurrency),
        "DISTRIBUTED_MAP_THRESHOLD": str(plan.distributed_threshold),
        "SESSION_TOTAL_TIMEOUT_S": "60",
        **plan.environment,
    }
    latencies = plan.latencies
    with ExitStack() as stack:
        stack.enter_context(extended_hyperpod())
        clusters = [
            {
                "name": c.name,
                "alarmNames": [c.alarm],
                **(
                    {"prometheusWorkspaceId": c.prometheus_workspace_id, "deepCollect": c.deep_collect}
                    if c.prometheus_workspace_id
                    else {}
                ),
            }
            for c in plan.clusters
        ]
        dep = stack.enter_context(local_deployment(region=REGION, environment=environment, clusters=clusters))
        run = LocalPipeline(plan, dep)
        if latencies.asl_retry_scale is not None:
            run.retry_intervals = stack.enter_context(asl_retry_sleeps(latencies.asl_retry_scale))
        for cluster in plan.clusters:
            _seed(run, cluster)
        from hyperpod_perf_dev.localrun.topology import SimulatedInstanceTopology

        run.instance_topology = SimulatedInstanceTopology(run)
        clients.override("instance_topology", lambda: run.instance_topology)
        if plan.adapters != AdapterFaults():
            clients.override("client", faulty_client_factory(plan.adapters, dep.region, run.faults))
        if plan.transport == "in-process":
            sessions = InProcessSessions(run.behaviour, run, latencies)
            clients.override("session_client", lambda total: sessions)
        else:
            run.ssm = loopback_sessions(
                stack,
                lambda target: _agent_scenario(run, target),
                start_error=run.behaviour.start_error,
                start_latency_s=latencies.session_start_s,
                idle_timeout_s=plan.idle_timeout_s,
            )
        yield run


def _agent_scenario(run: LocalPipeline, target: str) -> Any:
    from hyperpod_perf_dev.sim.agent import Scenario

    instance = instance_of(target)
    node = run.node(instance)
    # bandit B101: development-only code (the local run), not in the Lambda asset
    assert node is not None, f"session started on unknown node {instance}"  # nosec B101
    plan = run.plan_of(instance)
    return Scenario(
        stdout=node.text.encode(),
        stall_after_chunks=plan.stall_after_chunks,
        abrupt_close_after_chunks=plan.close_after_chunks,
        start_delay=run.plan.latencies.collector_s,
    )


def _seed(run: LocalPipeline, plan: ClusterPlan) -> None:
    from moto.sagemaker.models import sagemaker_backends

    from hyperpod_perf_dev.sim.account import (
        GroupSeed,
        NodeSeed,
        seed_cluster,
        seed_lustre,
    )
    from hyperpod_perf_dev.sim.lustre_osts import LustreShape, alarm_tail_load, put_lustre_osts

    sim = simulate_cluster(plan.nodes, plan.faults(), instance_type=plan.instance_type, seed=plan.seed)
    run.nodes[plan.name] = sim
    for node in sim:
        run._by_instance[node.instance_id] = (plan, node)
    if not plan.exists:
        return
    dep = run.dep
    zones = [AZS[i % plan.availability_zones] for i in range(len(sim))]
    seeds = [
        NodeSeed(node.instance_id, az=az, az_id=az_id, hostname=node.hostname)
        for node, (az, az_id) in zip(sim, zones, strict=True)
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
            metadata=LUSTRE_METADATA,
        )
        run.fs_ids[plan.name] = fs_id
        provisioned = LUSTRE_GIB / LUSTRE_GIB_PER_TIB * LUSTRE_PER_UNIT * MB
        start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=METRIC_MINUTES)
        load = alarm_tail_load(
            METRIC_MINUTES,
            provisioned,
            plan.lustre_utilization,
            tail_minutes=ALARM_MINUTES,
            tail_utilization=ALARM_TAIL_UTILIZATION,
        )
        put_lustre_osts(
            dep.client("cloudwatch"),
            fs_id,
            start,
            load,
            storage_capacity_gib=LUSTRE_GIB,
            shape=LustreShape(clients=plan.nodes),
        )
        run.fs_loads[plan.name] = (start, load, provisioned)
    logs = dep.client("logs")
    group = f"/aws/sagemaker/Clusters/{plan.name}/{plan.name}"  # moto's cluster id is the cluster name
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="DeepHealthCheckResults/hpd-sim")


def alarm_event(
    alarm: str,
    fs_id: str | None,
    when: datetime,
    region: str = REGION,
    *,
    load: tuple[datetime, list[tuple[float, float]], float] | None = None,
) -> dict[str, Any]:
    """An EventBridge `CloudWatch Alarm State Change` of the deployed FSx alarm, at `when`.

    The shape is the real captures' (tests/fixtures/real/events: `configuration.metrics` with the
    metric-math expression and its metricStat inputs, `state.reason` and the JSON-in-a-string
    `state.reasonData`), the expression and threshold those of infra/constructs/triggers.py
    FsxAlarms, the datapoints the last ALARM_MINUTES of the simulated load (`load`).
    """
    stamp = when.astimezone(UTC)
    dimensions = {"FileSystemId": fs_id} if fs_id else {}
    provisioned = load[2] if load else LUSTRE_GIB / LUSTRE_GIB_PER_TIB * LUSTRE_PER_UNIT * MB
    points: list[tuple[datetime, float]] = []
    if load:
        first, samples, _ = load
        for minute in range(max(0, len(samples) - ALARM_MINUTES), len(samples)):
            read, write = samples[minute]
            points.append((first + timedelta(minutes=minute), round(100 * (read + write) / provisioned, 4)))
    points.reverse()  # CloudWatch lists the most recent datapoint first
    crossed = sum(1 for _, v in points if v >= ALARM_THRESHOLD_PCT)
    listed = ", ".join(f"{v} ({t:%d/%m/%y %H:%M:%S})" for t, v in points)
    reason = (
        f"Threshold Crossed: {crossed} out of the last {len(points)} datapoints [{listed}] were greater "
        f"than or equal to the threshold ({ALARM_THRESHOLD_PCT}) (minimum {ALARM_MINUTES} datapoints for "
        "OK -> ALARM transition)."
    )
    reason_data = {
        "version": "1.0",
        "queryDate": stamp.strftime("%Y-%m-%dT%H:%M:%S.000+0000"),
        "startDate": (points[-1][0] if points else stamp).strftime("%Y-%m-%dT%H:%M:%S.000+0000"),
        "period": 60,
        "recentDatapoints": [v for _, v in reversed(points)],
        "threshold": ALARM_THRESHOLD_PCT,
    }

    def read_write(metric_id: str, name: str) -> dict[str, Any]:
        return {
            "id": metric_id,
            "metricStat": {
                "metric": {"dimensions": dimensions, "name": name, "namespace": "AWS/FSx"},
                "period": 60,
                "stat": "Sum",
            },
            "returnData": False,
        }

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
                "description": (
                    f"hyperpod-perf: Lustre {fs_id} read+write >= {ALARM_THRESHOLD_PCT:g}% of "
                    f"{provisioned / MB:g} MB/s for {ALARM_MINUTES} min; starts a diagnosis "
                    "(runbook section B)."
                ),
                "metrics": [
                    {
                        "expression": f"(r + w) / PERIOD(r) / {provisioned:.0f} * 100",
                        "id": "expr_1",
                        "label": "Throughput % of provisioned",
                        "returnData": True,
                    },
                    read_write("r", "DataReadBytes"),
                    read_write("w", "DataWriteBytes"),
                ],
            },
            "previousState": {  # as in the real metric-math capture
                "value": "INSUFFICIENT_DATA",
                "timestamp": (stamp - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.000+0000"),
                "reason": "Unchecked: Initial alarm creation",
            },
            "state": {
                "value": "ALARM",
                "timestamp": stamp.strftime("%Y-%m-%dT%H:%M:%S.000+0000"),
                "reason": reason,
                "reasonData": json.dumps(reason_data, separators=(",", ":")),
            },
        },
    }


def wait_all(run: LocalPipeline, timeout_s: float = 120) -> list[dict[str, Any]]:
    """Every execution of the state machine, once none is RUNNING."""
    sfn = run.dep.client("stepfunctions")
    deadline = time.monotonic() + timeout_s
    while True:
        pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=run.dep.state_machine_arn)
        executions = [e for page in pages for e in page["executions"]]
        if all(e["status"] != "RUNNING" for e in executions) or time.monotonic() > deadline:
            return executions
        time.sleep(0.1)
