"""One diagnosis through the real state machine in moto, with the service's latencies, time-scaled.

The run is the one local pipeline driver (`localrun.driver.local_pipeline`: moto + the real ASL +
the Lambda bridge, the loopback agent and the real data-channel client) on the demo's faulty
cluster (`localrun.demo.demo_cluster`), with what the demo does not model and the benchmark needs
given to the driver as its latencies and StartSession meter:

- StartSession is metered service-side: a shared token bucket (3/s, burst 3) raises
  ThrottlingException past the rate, as the service does; an accepted call then takes the
  session-start latency (2 s);
- the collector runs for 8 s on the node before its output streams (the agent's `start_delay`);
- every S3 request the handlers make takes 20 ms (S3_REQUEST_S, slept after moto answers, so
  concurrent requests overlap as they do against S3);
- every latency is multiplied by `scale` and the rate divided by it: the session start, the
  collector run, the service rate, the deployment's configured StartSession rate (which
  ResolveCluster divides among the CollectNode batches, pipeline/pacing.py) and the expected
  seconds per node it plans with, the collector Lambda's retry backoff, and the state machine's
  Retry intervals (moto's interpreter really sleeps them).
  Emulator CPU (moto, handlers, agent — all in this one process) is NOT scaled: it is real work
  on this machine, and it is part of what is measured.

With `with_metrics` the cluster has a metrics source (issue 21's two tiers): its AMP workspace is
configured (`deepCollect: suspects`, the default with a source), and ClusterMetrics' SigV4-signed
queries (`AmpWorkspace`, the deployed class) go to the emulated Prometheus of
`hyperpod_perf_dev.prometheus_emulated`, in a process of its own, which answers each of them with
the simulated fleet's series QUERY_LATENCY_S (scaled) after it was sent. The fleet's series carry
the demo's metrics faults (`localrun.demo_metrics.demo_faults`: node 5's Xid, node 6's EFA
retransmits, node 7 power-capped) and, from 64 nodes, two more slow-but-not-broken nodes further
in the fleet, so the suspects tier has suspects to send the deep collection to.

This module adds only the measuring: the time inside each CollectNode batch, the moments of the
first StartSession and the last node done, and the priced AWS calls.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.bench_runner import ServiceRateLimit
from hyperpod_perf_dev.localrun.bridge import Invocation
from hyperpod_perf_dev.localrun.demo import demo_cluster
from hyperpod_perf_dev.localrun.driver import local_pipeline
from hyperpod_perf_dev.localrun.plan import Latencies, RunPlan

#: Real-world figures (issue 9): StartSession ~2 s, 3 calls/s, the collector ~8 s on a node.
SESSION_START_S = 2.0
COLLECTOR_S = 8.0
#: Every S3 request the handlers make (GET, PUT, LIST): AWS's S3 performance guidelines give
#: "median latencies ... often in the range of tens of milliseconds" for small requests; moto
#: answers in-process in well under that, which would hide whether reads are serial or parallel.
S3_REQUEST_S = 0.020
RATE_PER_S = 3.0
RATE_BURST = 3.0
#: The collector Lambda's own retry backoff (collect.runner defaults), scaled with the rest.
RUNNER_BACKOFF_BASE_S, RUNNER_BACKOFF_MAX_S = 0.5, 10.0
#: The functions that turn collected snapshots into the report ("evaluation" in the ideal).
_EVALUATION = ("hpd-evaluate", "hpd-publish")
#: One AMP range query over 1,024 nodes x 8 GPUs, a 3 h window and its 3 h baseline, answered (an
#: assumption: AMP documents quotas, not query latency): the real Prometheus here answered the
#: same queries over 64 nodes in ~0.3 s each under load (bench/RESULTS.md, metrics section), and a
#: 1,024-node answer is ~5 MB on the wire; 2 s is taken as a managed, multi-tenant service's
#: answer with margin. ClusterMetrics sends them QUERY_CONCURRENCY at a time (service/metrics.py).
QUERY_LATENCY_S = 2.0
METRICS_FUNCTION = "hpd-cluster-metrics"
#: Any workspace id: the factory is overridden to the emulated endpoint.
WORKSPACE = "ws-bench-emulated"


@dataclass
class PipelineRun:
    nodes: int
    scale: float
    concurrency: int  # the Map's MaxConcurrency, as ResolveCluster derived it from the rate
    mode: str
    status: str
    duration_s: float  # alarm event delivered -> execution finished, in (scaled) wall seconds
    invocations: list[Invocation]
    #: id(invocation.event) -> scaled time inside it: a CollectNode batch's sessions (paced,
    #: started, collected, retried), from its start until its last session ended
    waited_s: dict[int, float]
    history: list[dict[str, Any]]
    api_calls: Counter
    metrics_requested: int
    start_session_calls: int
    throttled: int
    collected: int
    failed: int
    report_nodes: int | None
    report_concerns: int | None
    error: str | None = None
    #: where the time went: alarm -> first StartSession -> last CollectNode done -> execution end
    head_s: float = 0.0
    fan_out_s: float = 0.0
    tail_s: float = 0.0
    batches: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    #: With a metrics source: what ClusterMetrics' verdict said and did (None without one).
    metrics: MetricsTier | None = None

    @property
    def deep_nodes(self) -> int:
        """The nodes the SSM deep collection was for: all of them without a metrics source."""
        return self.metrics.deep_collected if self.metrics else self.nodes

    @property
    def ideal_s(self) -> float:
        """Rate-limit bound for the nodes deep-collected (K / rate) + one session start and
        collector run + evaluation, scaled; with a metrics source, plus the queries' own latency
        bound (ceil(queries / concurrency) x the assumed latency): what the latencies force."""
        evaluation = sum(i.duration_s for i in self.invocations if i.function in _EVALUATION)
        one_node = (SESSION_START_S + COLLECTOR_S) * self.scale
        queries = self.metrics.query_bound_s if self.metrics else 0.0
        return queries + self.deep_nodes / (RATE_PER_S / self.scale) + one_node + evaluation

    @property
    def efficiency(self) -> float:
        return self.ideal_s / self.duration_s


@dataclass
class MetricsTier:
    """ClusterMetrics in one run: its duration, its verdict, and where the deep collection went."""

    duration_s: float  # the function's wall time (scaled run)
    queries: int
    query_bound_s: float  # ceil(queries / concurrency) x the scaled query latency
    suspects: list[str]
    planted: list[str]  # the instance ids given a fault in the series
    deep_collected: int  # nodes the fan-out was re-planned for
    metrics_only: int  # nodes judged by their series only
    nodes_seen: int
    tier: str  # the verdict's deep_collect ("suspects", or "all" when nothing could be read)
    emulated_latency_s: float


def metrics_faults(nodes: list[Any], now: datetime) -> list[Any]:
    """The demo's metrics faults, and from 64 nodes two more power-capped / retransmitting nodes
    half-way and three quarters into the fleet (host names as the simulated cluster has them)."""
    from hyperpod_perf_dev.localrun.demo_metrics import demo_faults
    from hyperpod_perf_dev.sim.metrics import Fault

    hosts = [n.hostname for n in nodes]
    faults = demo_faults(hosts, "faulty", now)
    if len(hosts) >= 64:
        until = now + timedelta(minutes=30)
        faults += [
            Fault("power_cap", now - timedelta(minutes=50), until, node=hosts[len(hosts) // 2]),
            Fault("efa_retrans", now - timedelta(minutes=20), until, node=hosts[3 * len(hosts) // 4]),
        ]
    return faults


@contextmanager
def _emulated_metrics_source(run: Any, scale: float, planted: list[str]) -> Iterator[None]:
    """ClusterMetrics' factory pointed at the emulated Prometheus, signed as for AMP."""
    from botocore.credentials import Credentials

    from hyperpod_perf.aws import clients
    from hyperpod_perf.aws.prometheus import AmpWorkspace
    from hyperpod_perf_dev.prometheus_emulated import serve_emulated
    from hyperpod_perf_dev.sim.metrics import SimNode

    nodes = run.cluster_nodes()
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    faults = metrics_faults(nodes, now)
    by_host = {n.hostname: n.instance_id for n in nodes}
    planted += [by_host[f.node] for f in faults if f.node in by_host]
    credentials = Credentials("AKIDBENCHEMULATED", "bench-emulated-secret")  # signed, never checked
    sim = [SimNode(n.instance_id, n.hostname) for n in nodes]
    with serve_emulated(sim, faults, latency_s=QUERY_LATENCY_S * scale, require_sigv4=True) as url:
        clients.override(
            "metrics_source",
            lambda workspace, region: AmpWorkspace(
                workspace, region=region or run.dep.region, credentials=credentials, endpoint=url
            ),
        )
        yield


class _Waits:
    """Scaled time per CollectNode invocation: from the handler's start until its runner's last
    session ended.

    The handler builds one runner per invocation (on the handler's thread) and calls it from its
    batch's worker threads, one node per call; everything in that window is scaled time (the
    bucket's pacing at the scaled rate, the injected StartSession latency and collector runs,
    retry backoff) except this machine's CPU for the data channel and for the nodes evaluated
    while later sessions still ran, which is scaled back up with the rest (an overestimate).
    What follows the last session (the last node's evaluation, the return) is not scaled.
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()

    def begin(self) -> None:
        self._local.runner = None
        self._local.began = time.monotonic()

    def runner_created(self, runner: Any) -> None:
        self._local.runner = runner

    def collect_ended(self, runner: Any) -> None:
        with self._lock:
            runner.last_collect_end = max(getattr(runner, "last_collect_end", 0.0), time.monotonic())

    def end(self) -> float:
        runner = getattr(self._local, "runner", None)
        last = getattr(runner, "last_collect_end", None)
        return 0.0 if last is None else max(0.0, last - self._local.began)


def _timed_runner(base: type, waits: _Waits, **fixed: Any) -> Callable[..., Any]:
    """The handler's runner class, with the bench's scaled backoff and its sessions' end timed."""

    class TimedRunner(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            waits.runner_created(self)

        def collect(self, nodes: Any) -> Any:
            try:
                return super().collect(nodes)
            finally:
                waits.collect_ended(self)

    return functools.partial(TimedRunner, **fixed)


def run_pipeline(
    nodes: int,
    *,
    scale: float,
    concurrency: int,
    distributed_threshold: int = 200,
    timeout_s: float = 900,
    seed: int = 9,
    with_metrics: bool = False,
) -> PipelineRun:
    from hyperpod_perf.handlers import collect_node as collect_handler

    rate = RATE_PER_S / scale
    waits = _Waits()
    moments: dict[str, float] = {}
    limit = ServiceRateLimit(rate, burst=RATE_BURST, random_throttle=0.0, seed=seed)

    def metered(target: str) -> BaseException | None:
        """The service's meter (an accepted call then takes the session-start latency)."""
        moments.setdefault("first_start_session", time.monotonic())
        return limit(target)

    cluster = demo_cluster("faulty", nodes)
    if with_metrics:
        cluster = dataclasses.replace(cluster, prometheus_workspace_id=WORKSPACE, deep_collect="suspects")
    planted: list[str] = []
    plan = RunPlan(
        clusters=(cluster,),
        map_concurrency=concurrency,  # a cap: the rate decides (pipeline/pacing.py)
        distributed_threshold=distributed_threshold,
        environment={
            "SESSION_RATE_PER_S": f"{rate:g}",
            "SESSION_SECONDS_PER_NODE": f"{(SESSION_START_S + COLLECTOR_S) * scale:g}",
            "SESSION_TOTAL_TIMEOUT_S": "120",
        },
        idle_timeout_s=None,  # the session client's own idle limit, as deployed
        latencies=Latencies(
            session_start_s=SESSION_START_S * scale, collector_s=COLLECTOR_S * scale, asl_retry_scale=scale
        ),
        start_gate=metered,
    )
    with ExitStack() as stack:
        run = stack.enter_context(local_pipeline(plan))
        if with_metrics:
            stack.enter_context(_emulated_metrics_source(run, scale, planted))
        stack.enter_context(
            _attribute(
                collect_handler,
                "SessionNodeRunner",
                _timed_runner(
                    collect_handler.SessionNodeRunner,
                    waits,
                    backoff_base_s=RUNNER_BACKOFF_BASE_S * scale,
                    backoff_max_s=RUNNER_BACKOFF_MAX_S * scale,
                ),
            )
        )
        bridge = run.dep.bridge
        assert bridge is not None
        waited: dict[int, float] = {}
        for name, handler in list(bridge.handlers.items()):
            bridge.handlers[name] = _measuring(handler, waits, waited, moments)
        api_calls: Counter = Counter()
        metrics_requested = _count_api_calls(api_calls, s3_latency_s=S3_REQUEST_S * scale)

        started = time.monotonic()
        arn = run.start_from_alarm()
        description = run.dep.wait(arn, timeout_s=timeout_s, poll_s=0.05)
        ended = time.monotonic()
        duration = ended - started
        first = moments.get("first_start_session", started)
        last = moments.get("last_node_done", first)
        api_calls = Counter(api_calls)  # the bench's own reads below are not the pipeline's

        outcome = run.outcome(arn, description, load=False)
        history = outcome.history
        report = outcome.report
        invocations = list(bridge.invocations)
        functions = Counter(i.function for i in invocations)
        resolved = _resolved(history)
        collection = Counter(row.get("collection") for row in (report or {}).get("nodes", []))
        return PipelineRun(
            nodes=nodes,
            scale=scale,
            concurrency=int(resolved.get("max_concurrency", 0)),
            mode=str(resolved.get("mode", "?")),
            status=description["status"],
            duration_s=duration,
            invocations=invocations,
            waited_s=waited,
            history=history,
            api_calls=api_calls,
            metrics_requested=metrics_requested[0],
            start_session_calls=limit.calls,
            throttled=limit.throttled_by_rate,
            collected=collection["collected"],
            failed=sum(count for status, count in collection.items() if status != "collected"),
            report_nodes=len(report.get("nodes", [])) if report else None,
            report_concerns=_concerns(report),
            error=description.get("error"),
            head_s=first - started,
            fan_out_s=last - first,
            tail_s=ended - last,
            batches=functions["hpd-collect-node"]
            - sum(1 for i in invocations if i.function == "hpd-collect-node" and i.error),
            metrics=_metrics_tier(report, invocations, planted, scale) if with_metrics else None,
        )


def _metrics_tier(
    report: dict[str, Any] | None, invocations: list[Invocation], planted: list[str], scale: float
) -> MetricsTier:
    from hyperpod_perf.service.metrics import QUERY_CONCURRENCY

    verdict = (report or {}).get("metrics") or {}
    queries = int(verdict.get("queries") or 0)
    return MetricsTier(
        duration_s=sum(i.duration_s for i in invocations if i.function == METRICS_FUNCTION),
        queries=queries,
        query_bound_s=math.ceil(queries / QUERY_CONCURRENCY) * QUERY_LATENCY_S * scale,
        suspects=list(verdict.get("suspects") or []),
        planted=sorted(set(planted)),
        deep_collected=len((report or {}).get("nodes", [])),
        metrics_only=len(verdict.get("metrics_only") or []),
        nodes_seen=int(verdict.get("nodes_seen") or 0),
        tier=str(verdict.get("deep_collect") or "?"),
        emulated_latency_s=QUERY_LATENCY_S * scale,
    )


def _resolved(history: list[dict[str, Any]]) -> dict[str, Any]:
    """What ResolveCluster handed to the Map (mode, MaxConcurrency, batches), from the history."""
    for event in history:
        details = event.get("stateExitedEventDetails") or {}
        if details.get("name") == "ResolveCluster":
            return json.loads(details["output"])["cluster"]["value"]
    return {}


def _concerns(report: dict[str, Any] | None) -> int | None:
    if report is None:
        return None
    return sum(1 for f in report.get("findings", []) if f.get("severity") == "CONCERN")


def _measuring(
    handler: Callable[[dict[str, Any], Any], Any],
    waits: _Waits,
    waited: dict[int, float],
    moments: dict[str, float],
) -> Callable[[dict[str, Any], Any], Any]:
    """Record the scaled time inside each CollectNode batch (keyed by its event object) and when
    the last one ended."""

    def run(event: dict[str, Any], context: Any) -> Any:
        if "batch" not in event:
            return handler(event, context)
        waits.begin()
        try:
            return handler(event, context)
        finally:
            waited[id(event)] = waits.end()
            moments["last_node_done"] = max(moments.get("last_node_done", 0.0), time.monotonic())

    return run


def _count_api_calls(counter: Counter, *, s3_latency_s: float = 0.0) -> list[int]:
    """Count the priced AWS calls the handlers make (boto3's default session, as `aws.clients` uses)
    and give each S3 request its latency."""
    import boto3

    lock = threading.Lock()
    metrics = [0]

    def before_call(model: Any, **_: Any) -> None:
        with lock:
            counter[f"{model.service_model.service_name}:{model.name}"] += 1

    def metric_queries(params: dict[str, Any], **_: Any) -> None:
        with lock:
            metrics[0] += len(params.get("MetricDataQueries", []))

    def s3_latency(**_: Any) -> None:
        time.sleep(s3_latency_s)

    boto3.setup_default_session()  # a fresh session: the handlers' clients are created after this
    boto3.DEFAULT_SESSION.events.register("before-call", before_call)
    boto3.DEFAULT_SESSION.events.register("before-parameter-build.cloudwatch.GetMetricData", metric_queries)
    if s3_latency_s > 0:
        boto3.DEFAULT_SESSION.events.register("after-call.s3", s3_latency)
    return metrics


@contextmanager
def _attribute(owner: Any, name: str, value: Any) -> Iterator[None]:
    saved = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, saved)
