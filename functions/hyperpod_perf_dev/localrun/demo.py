"""`hyperpod-perf demo`: the deployed pipeline, run offline on a simulated cluster.

Everything real but the account: the state machine is statemachines/diagnose.asl.json executed
by moto's interpreter; every task runs the real handler; nodes are reached by the real
Session Manager data-channel client over loopback WebSockets, against simulated agents that
serve each simulated node's collector output; the run starts from a CloudWatch alarm event
delivered to the real trigger function. The run itself is `localrun.driver.local_pipeline`; this
module holds the demo's scenarios, its progress lines and the files it writes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyperpod_perf_dev.localrun.driver import LocalPipeline, local_pipeline
from hyperpod_perf_dev.localrun.outcome import RunOutcome
from hyperpod_perf_dev.localrun.plan import INSTANCE_TYPE, ClusterPlan, Latencies, NodePlan, RunPlan
from hyperpod_perf_dev.sim.node import NodeFaults

CLUSTER = "ml-cluster"
ALARM = f"hpd-{CLUSTER}-fsx-throughput"


def demo_cluster(name: str, nodes: int) -> ClusterPlan:
    """The demo's scenario `name` (faulty or healthy) on `nodes` simulated p5 nodes."""
    if name == "healthy":
        return ClusterPlan(CLUSTER, nodes, lustre_utilization=0.35, availability_zones=1)
    if name != "faulty":
        raise ValueError(f"unknown scenario {name!r}: choose faulty or healthy")
    if nodes < 6:
        raise ValueError(
            "the faulty scenario plants faults on nodes 2, 3, 5 and 6: use --node-count 6 or more"
        )
    planted = {
        2: NodeFaults(pcie_width_gpu=3),  # node 3: one GPU at PCIe x8
        4: NodeFaults(xid79=True, xid79_gpu=5),  # node 5: Xid 79, GPU fallen off the bus
        5: NodeFaults(efa_port_down="rdmap113s0"),  # node 6: an EFA port DOWN
        1: NodeFaults(governor="powersave"),  # node 2: CPU governor powersave
    }
    return ClusterPlan(
        CLUSTER,
        nodes,
        node_plans={index: NodePlan(faults=faults) for index, faults in planted.items()},
        node_recovery="None",
        lustre_utilization=0.97,
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
    #: One line: what served the run's metrics stage, or why it had none.
    metrics_tier: str = ""


def run_demo(
    *,
    nodes: int = 8,
    scenario_name: str = "faulty",
    out_dir: Path | None = Path("demo-out"),
    progress: Callable[[str], None] = print,
    step: Callable[[str], None] | None = None,
    session_start_latency_s: float = 0.0,
    timeout_s: float = 1800,
    distributed_threshold: int = 200,
    map_concurrency: int = 30,  # the deployed default (infra/config.py)
) -> DemoResult:
    """The offline run. `progress` hears the story's lines (the cluster, the alarm, the execution);
    `step` each state the execution enters and every CollectNode (the CLI's rewritten progress
    line) — without one, the states go to `progress` too, CollectNode a few times."""
    from hyperpod_perf_dev.localrun import demo_metrics

    cluster = demo_cluster(scenario_name, nodes)
    with_metrics = demo_metrics.available()
    if with_metrics:
        # every node deep-collected too, so the demo shows both tiers' findings side by side (the
        # deployed default, deepCollect "suspects", is what tests/statemachine/test_sfn_metrics.py runs)
        cluster = dataclasses.replace(
            cluster, prometheus_workspace_id=demo_metrics.DEMO_WORKSPACE, deep_collect="all"
        )
    plan = RunPlan(
        clusters=(cluster,),
        distributed_threshold=distributed_threshold,
        map_concurrency=map_concurrency,
        # The simulated SSM has no StartSession quota: pace at 10/s (one node per batch here);
        # the state-machine tests and the benchmark pace at the real 3/s.
        environment={"SESSION_RATE_PER_S": "10"},
        idle_timeout_s=None,  # the session client's own idle limit, as deployed
        latencies=Latencies(session_start_s=session_start_latency_s, asl_retry_scale=None),
    )
    progress(
        f"simulated cluster {CLUSTER}: {nodes} x {INSTANCE_TYPE} in {cluster.availability_zones} AZ(s), "
        f"scenario {scenario_name}"
    )
    with local_pipeline(plan) as run, contextlib.ExitStack() as stack:
        tier = _metrics_tier(run, stack, scenario_name, with_metrics)
        progress(tier)
        seeded = _seed_history(run, out_dir)
        if seeded:
            progress(f"run history: {seeded} object(s) of earlier demo runs from {out_dir}/history/")
        started = time.monotonic()
        fs_id = run.fs_ids[CLUSTER]
        progress(f"CloudWatch alarm {ALARM} -> ALARM (FSx {fs_id}); delivering the event to the trigger")
        arn = run.start_from_alarm()
        progress(f"execution {arn.rsplit(':', 1)[-1]} started")
        seen: Counter = Counter()
        show = step or progress

        def on_state(name: str) -> None:
            seen[name] += 1
            if name == "CollectNode":
                if step is not None or seen[name] in (1, nodes) or seen[name] % max(1, nodes // 4) == 0:
                    show(f"  CollectNode {seen[name]}/{nodes}")
            else:
                show(f"  {name}")

        outcome = run.wait(arn, timeout_s=timeout_s, on_state=on_state, load=False)
        result = DemoResult(
            status=outcome.status,
            execution_arn=arn,
            duration_s=time.monotonic() - started,
            nodes=nodes,
            invocations=Counter(i.function for i in (run.dep.bridge.invocations if run.dep.bridge else [])),
            history_events=len(outcome.history),
            error=outcome.error,
            metrics_tier=tier,
        )
        _collect_outputs(outcome, result, out_dir)
        _head_email_with_subject(run, result, out_dir)
        _keep_history(run, out_dir)
        return result


HISTORY_DIR = "history"


def _metrics_tier(
    run: LocalPipeline,
    stack: contextlib.ExitStack,
    scenario: str,
    with_metrics: bool,
) -> str:
    """A real Prometheus with the nodes' exporter history, or a line saying why there is none."""
    from hyperpod_perf.aws import clients
    from hyperpod_perf.aws.prometheus import PrometheusHttp
    from hyperpod_perf_dev.localrun import demo_metrics

    if not with_metrics:
        return "metrics tier: skipped, prometheus not installed (apt-get install prometheus)"
    workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hpd-demo-prom-")))
    nodes = [(n.instance_id, n.hostname) for n in run.cluster_nodes()]
    url = stack.enter_context(demo_metrics.serve_demo_history(nodes, scenario, workdir))
    clients.override("metrics_source", lambda workspace, region: PrometheusHttp(url))
    return (
        f"metrics tier: a real Prometheus at {url} served {demo_metrics.HISTORY_HOURS} h of the nodes' "
        "dcgm-exporter, EFA exporter, node_exporter and Slurm exporter series"
    )


def _seed_history(run: LocalPipeline, out_dir: Path | None) -> int:
    """Earlier demo runs' history objects into the (fresh, moto) bucket: the demo remembers, as the
    deployed bucket does, so a node that fails again is named a repeat offender."""
    root = out_dir / HISTORY_DIR if out_dir is not None else None
    if root is None or not root.is_dir():
        return 0
    s3 = run.dep.client("s3")
    files = sorted(p for p in root.rglob("*.jsonl.gz") if p.is_file())
    for path in files:
        key = f"{HISTORY_DIR}/{path.relative_to(root).as_posix()}"
        s3.put_object(Bucket=run.dep.bucket, Key=key, Body=path.read_bytes())
    return len(files)


def _keep_history(run: LocalPipeline, out_dir: Path | None) -> None:
    """The bucket's history/ (this run's rows and the earlier ones) back into `out_dir/history/`,
    where `hyperpod-perf history --dir` queries it with DuckDB."""
    if out_dir is None:
        return
    for key in run.keys(f"{HISTORY_DIR}/"):
        body = run.get(key)
        if body is None:
            continue
        target = out_dir / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)


def _head_email_with_subject(run: LocalPipeline, result: DemoResult, out_dir: Path | None) -> None:
    """notification-email.txt as the recipient sees it: `Subject: <subject>`, a blank line, the body.

    The subject is the one actually published to the (moto) SNS topic, not recomputed."""
    if result.email is None:
        return
    published = run.published()
    if not published or not published[-1]["subject"]:
        return
    result.email = f"Subject: {published[-1]['subject']}\n\n{result.email}"
    if out_dir is not None:
        (out_dir / "notification-email.txt").write_text(result.email, encoding="utf-8")


def _collect_outputs(outcome: RunOutcome, result: DemoResult, out_dir: Path | None) -> None:
    """Copy the run's report, notification bodies and raw snapshots out of the (moto) bucket."""
    result.report, result.email, result.chatbot = outcome.report, outcome.email, outcome.chatbot
    if out_dir is None:
        return
    for name in outcome.names():
        if name.startswith("work/"):
            continue
        target = out_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(outcome.get(name) or b"")
        result.files.append(target)
