"""What a local pipeline run simulates: the clusters, each node's faults, the AWS faults, the latencies.

Plain frozen data, read by `localrun.driver.LocalPipeline`; the demo, the state-machine tests and
the time-to-findings benchmark each describe their run with these and nothing else.

Nodes are addressed by 0-based index ("node 3" is index 2), as in the demo's scenarios.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from hyperpod_perf_dev.sim.node import NodeFaults

INSTANCE_TYPE = "ml.p5.48xlarge"


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
    availability_zones: int = 2  # the nodes alternate over this many AZs (1 or 2)
    #: Configured as the cluster's AMP workspace (the trigger puts it on the request): the run's
    #: metrics stage then reads the source `clients.metrics_source` is overridden to (the demo's
    #: local Prometheus); None: no metrics source, the branch is skipped.
    prometheus_workspace_id: str | None = None
    deep_collect: str = "suspects"  # the configuration's deepCollect
    #: node index -> its network nodes, top first, as EC2 DescribeInstanceTopology answers them;
    #: empty: EC2 knows none of the cluster's instances (as expected of HyperPod's service account)
    network_layers: Mapping[int, tuple[str, ...]] = field(default_factory=dict)

    @property
    def alarm(self) -> str:
        return self.alarm_name or f"hpd-{self.name}-fsx-throughput"

    def plan(self, index: int) -> NodePlan:
        return self.node_plans.get(index, NodePlan())

    def faults(self) -> dict[int, NodeFaults]:
        """The collector-output faults by node index (what `simulate_cluster` plants)."""
        return {i: p.faults for i, p in self.node_plans.items() if p.faults is not None}


@dataclass(frozen=True)
class AdapterFaults:
    """Faults in the handlers' AWS clients (raised as botocore ClientErrors by the client)."""

    logs_access_denied: bool = False  # every CloudWatch Logs call
    metrics_access_denied: bool = False  # every CloudWatch call (GetMetricData)
    describe_node_access_denied: bool = False  # every SageMaker DescribeClusterNode call
    s3_put_failures: int = 0  # the first N PutObject calls whose key contains `s3_put_key_part` fail
    s3_put_key_part: str = "/raw/"


@dataclass(frozen=True)
class Latencies:
    """Service latencies the run emulates (assumed figures, in wall seconds; none by default).

    `asl_retry_scale`: moto's interpreter really sleeps each Retry interval of the ASL; the driver
    records the interval asked for and sleeps it times this factor (0: not at all, the tests'
    default); None leaves moto's own sleep in place.
    """

    session_start_s: float = 0.0  # an accepted StartSession takes this long
    collector_s: float = 0.0  # the collector runs this long on the node before its output streams
    asl_retry_scale: float | None = 0.0


#: A StartSession meter: given the SSM target, the ClientError to raise instead (the service's
#: throttling, say), or None to let the call through. Consulted after the node's own plan.
StartGate = Callable[[str], BaseException | None]


@dataclass(frozen=True)
class RunPlan:
    clusters: tuple[ClusterPlan, ...] = (ClusterPlan(),)
    adapters: AdapterFaults = AdapterFaults()
    #: "websocket": the real SessionClient over loopback WebSockets against FakeAgent (default);
    #: "in-process": a light session fake that returns the simulated text directly (large fleets).
    transport: str = "websocket"
    #: the data channel's idle limit (a stalled stream hits it); None: the client's own default
    idle_timeout_s: float | None = 1.5
    distributed_threshold: int = 200
    map_concurrency: int = 8
    environment: Mapping[str, str] = field(default_factory=dict)
    latencies: Latencies = Latencies()
    start_gate: StartGate | None = None
