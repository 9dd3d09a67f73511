"""`hyperpod-perf demo`: the deployed pipeline, run offline on a simulated cluster.

Everything real but the account: the state machine is statemachines/diagnose.asl.json executed
by moto's interpreter; every task runs the real handler; nodes are reached by the real
Session Manager data-channel client over loopback WebSockets, against simulated agents that
serve each simulated node's collector output; the run starts from a CloudWatch alarm event
delivered to the real trigger function.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hyperpod_perf.domain.cluster import LUSTRE_GIB_PER_TIB, MB
from hyperpod_perf_dev.localrun.deployment import ACCOUNT, LocalDeployment, local_deployment
from hyperpod_perf_dev.sim.node import NodeFaults, SimulatedNode, simulate_cluster

CLUSTER = "ml-cluster"
GROUP = "worker-group-1"
INSTANCE_TYPE = "ml.p5.48xlarge"
ALARM = f"hpd-{CLUSTER}-fsx-throughput"
REGION = "us-west-2"
AZS = (("us-west-2a", "usw2-az1"), ("us-west-2b", "usw2-az2"))
LUSTRE_GIB, LUSTRE_PER_UNIT = 4800, 250  # 4,800 GiB / 1000 x 250 MB/s/TiB = 1,200 MB/s provisioned
LUSTRE_MOUNT = "oyuutbev"  # the simulated nodes mount 10.1.71.197@tcp:/oyuutbev on /fsx
WINDOW_MINUTES = 180


@dataclass(frozen=True)
class Scenario:
    name: str
    faults: dict[int, NodeFaults]  # by 0-based node index ("node 3" is index 2)
    lustre_utilization: float
    node_recovery: str
    availability_zones: int  # the nodes alternate over this many AZs


def scenario(name: str, nodes: int) -> Scenario:
    if name == "healthy":
        return Scenario("healthy", {}, 0.35, "Automatic", availability_zones=1)
    if name != "faulty":
        raise ValueError(f"unknown scenario {name!r}: choose faulty or healthy")
    if nodes < 6:
        raise ValueError(
            "the faulty scenario plants faults on nodes 2, 3, 5 and 6: use --node-count 6 or more"
        )
    return Scenario(
        "faulty",
        {
            2: NodeFaults(pcie_width_gpu=3),  # node 3: one GPU at PCIe x8
            4: NodeFaults(xid79=True, xid79_gpu=5),  # node 5: Xid 79, GPU fallen off the bus
            5: NodeFaults(efa_port_down="rdmap113s0"),  # node 6: an EFA port DOWN
            1: NodeFaults(governor="powersave"),  # node 2: CPU governor powersave
        },
        0.97,
        "None",
        availability_zones=2,
    )


@dataclass
class DemoResult:
    status: str
    execution_arn: str
    duration_s: float
    nodes: int
    report: dict[str, Any] | None = None
    email: str | None = None
    chatbot: dict[str, Any] | None = None
    files: list[Path] = field(default_factory=list)
    invocations: Counter = field(default_factory=Counter)
    history_events: int = 0
    error: str | None = None


def run_demo(
    *,
    nodes: int = 8,
    scenario_name: str = "faulty",
    out_dir: Path | None = Path("demo-out"),
    progress: Callable[[str], None] = print,
    session_start_latency_s: float = 0.0,
    timeout_s: float = 1800,
    distributed_threshold: int = 200,
    map_concurrency: int = 30,  # the deployed default (infra/config.py)
) -> DemoResult:
    from hyperpod_perf.aws import clients
    from hyperpod_perf.aws.session import SessionClient
    from hyperpod_perf_dev.sim.account import extended_hyperpod
    from hyperpod_perf_dev.sim.agent import FakeAgent, FakeSsm
    from hyperpod_perf_dev.sim.agent import Scenario as AgentScenario

    plan = scenario(scenario_name, nodes)
    sim = simulate_cluster(nodes, plan.faults, instance_type=INSTANCE_TYPE)
    by_instance = {node.instance_id: node for node in sim}
    environment = {
        "MAP_MAX_CONCURRENCY": str(map_concurrency),
        "DISTRIBUTED_MAP_THRESHOLD": str(distributed_threshold),
        "SESSION_TOTAL_TIMEOUT_S": "60",
        # The simulated SSM has no StartSession quota: pace at 10/s (one node per batch here);
        # the state-machine tests and the benchmark pace at the real 3/s.
        "SESSION_RATE_PER_S": "10",
    }
    progress(
        f"simulated cluster {CLUSTER}: {nodes} x {INSTANCE_TYPE} in {plan.availability_zones} AZ(s), "
        f"scenario {plan.name}"
    )
    with (
        extended_hyperpod(),
        FakeAgent() as agent,
        local_deployment(
            region=REGION, environment=environment, clusters=[{"name": CLUSTER, "alarmNames": [ALARM]}]
        ) as dep,
    ):
        fs_id = _seed_account(dep, sim, plan)
        sfn = dep.client("stepfunctions")

        def scenario_for(target: str) -> AgentScenario:
            instance_id = target.rsplit("-", 2)[-2] + "-" + target.rsplit("-", 1)[-1]
            return AgentScenario(stdout=by_instance[instance_id].text.encode())

        ssm = FakeSsm(agent, scenario_for, start_latency=session_start_latency_s)
        clients.override("session_client", lambda total: SessionClient(ssm, total_timeout=total))
        started = time.monotonic()
        progress(f"CloudWatch alarm {ALARM} -> ALARM (FSx {fs_id}); delivering the event to the trigger")
        decision = dep.trigger(_alarm_event(fs_id))
        if not decision.get("execution_name"):
            raise RuntimeError(f"the trigger did not start a diagnosis: {decision}")
        arn = _execution_arn(dep, decision["execution_name"])
        progress(f"execution {decision['execution_name']} started")
        seen: Counter = Counter()

        def on_state(name: str) -> None:
            seen[name] += 1
            if name == "CollectNode":
                if seen[name] in (1, nodes) or seen[name] % max(1, nodes // 4) == 0:
                    progress(f"  CollectNode {seen[name]}/{nodes}")
            else:
                progress(f"  {name}")

        description = dep.wait(arn, timeout_s=timeout_s, on_state=on_state)
        duration = time.monotonic() - started
        result = DemoResult(
            status=description["status"],
            execution_arn=arn,
            duration_s=duration,
            nodes=nodes,
            invocations=Counter(i.function for i in dep.bridge.invocations) if dep.bridge else Counter(),
            history_events=len(sfn.get_execution_history(executionArn=arn)["events"]),
            error=description.get("error"),
        )
        _collect_outputs(dep, result, out_dir)
        _head_email_with_subject(dep, result, out_dir)
        return result


def _seed_account(dep: LocalDeployment, sim: list[SimulatedNode], plan: Scenario) -> str:
    from hyperpod_perf_dev.sim.account import (
        GroupSeed,
        NodeSeed,
        seed_cluster,
        seed_lustre,
    )
    from hyperpod_perf_dev.sim.lustre_load import lustre_load, put_lustre_load

    seeds = [
        NodeSeed(
            node.instance_id,
            az=AZS[i % plan.availability_zones][0],
            az_id=AZS[i % plan.availability_zones][1],
            hostname=node.hostname,
        )
        for i, node in enumerate(sim)
    ]
    seed_cluster(
        dep.client("sagemaker"),
        CLUSTER,
        [
            GroupSeed(
                GROUP, INSTANCE_TYPE, seeds, deep_health_checks=["InstanceStress", "InstanceConnectivity"]
            )
        ],
        region=dep.region,
        node_recovery=plan.node_recovery,
        orchestrator={"Slurm": {}},
    )
    fs_id = seed_lustre(
        dep.client("fsx"),
        region=dep.region,
        capacity_gib=LUSTRE_GIB,
        per_unit=LUSTRE_PER_UNIT,
        mount_name=LUSTRE_MOUNT,
    )
    provisioned = LUSTRE_GIB / LUSTRE_GIB_PER_TIB * LUSTRE_PER_UNIT * MB
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    start = now - timedelta(minutes=WINDOW_MINUTES)
    load = lustre_load(WINDOW_MINUTES, provisioned, plan.lustre_utilization)
    put_lustre_load(dep.client("cloudwatch"), fs_id, start, load)
    logs = dep.client("logs")
    group = f"/aws/sagemaker/Clusters/{CLUSTER}/{CLUSTER}"  # moto's cluster id is the cluster name
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="DeepHealthCheckResults/hpd-demo")
    return fs_id


def _alarm_event(fs_id: str) -> dict[str, Any]:
    """An EventBridge `CloudWatch Alarm State Change`, shaped like the real captures."""
    now = datetime.now(UTC)
    return {
        "version": "0",
        "id": "5c0e9b8e-2f4e-4a0b-9d2e-hpd000000001"[:36],
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "account": ACCOUNT,
        "time": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{ALARM}"],
        "detail": {
            "alarmName": ALARM,
            "configuration": {
                "description": "FSx for Lustre throughput >= 90% of provisioned for 15 minutes",
                "metrics": [
                    {
                        "id": "read",
                        "metricStat": {
                            "metric": {
                                "dimensions": {"FileSystemId": fs_id},
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
            "previousState": {"value": "OK", "timestamp": now.isoformat(), "reason": "Threshold not crossed"},
            "state": {"value": "ALARM", "timestamp": now.isoformat(), "reason": "Threshold Crossed"},
        },
    }


def _execution_arn(dep: LocalDeployment, name: str) -> str:
    """The ARN the trigger's execution got (the trigger returns only its name; the bench uses this too)."""
    from hyperpod_perf.aws.stepfunctions import DiagnosisStarter

    return DiagnosisStarter(dep.client("stepfunctions"), dep.state_machine_arn).execution_arn(name)


def _head_email_with_subject(dep: LocalDeployment, result: DemoResult, out_dir: Path | None) -> None:
    """notification-email.txt as the recipient sees it: `Subject: <subject>`, a blank line, the body.

    The subject is the one actually published to the (moto) SNS topic, not recomputed."""
    if result.email is None:
        return
    from moto.sns.models import sns_backends

    topic = sns_backends[ACCOUNT][dep.region].topics.get(dep.topic_arn)
    subjects = [
        subject for _mid, _message, subject, _attrs, _group in (topic.sent_notifications if topic else [])
    ]
    if not subjects or not subjects[-1]:
        return
    result.email = f"Subject: {subjects[-1]}\n\n{result.email}"
    if out_dir is not None:
        (out_dir / "notification-email.txt").write_text(result.email, encoding="utf-8")


def _collect_outputs(dep: LocalDeployment, result: DemoResult, out_dir: Path | None) -> None:
    """Copy the run's report, notification bodies and raw snapshots out of the (moto) bucket."""
    s3 = dep.client("s3")
    keys = [
        o["Key"]
        for p in s3.get_paginator("list_objects_v2").paginate(Bucket=dep.bucket, Prefix="reports/")
        for o in p.get("Contents", [])
    ]
    for key in keys:
        name = key.split("/", 3)[-1]  # strip reports/<cluster>/<run>/
        body = s3.get_object(Bucket=dep.bucket, Key=key)["Body"].read()
        if name == "report.json":
            result.report = json.loads(body)
        elif name == "notification-email.txt":
            result.email = body.decode()
        elif name == "notification-chatbot.json":
            result.chatbot = json.loads(body)
        if out_dir is not None and not name.startswith("work/"):
            target = out_dir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
            result.files.append(target)
