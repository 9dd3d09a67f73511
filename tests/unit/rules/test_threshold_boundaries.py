"""Boundary table for every threshold in rules/thresholds.py: at the limit, just inside, just outside,
and with the limit overridden — each row builds the input at that value and asserts the severity.

Why: a test far from every limit (90 C, 12 drops, 93 % OSTs) stays green when `>=` becomes `>` or a
default moves; these rows do not. Inputs are the sibling tests' builders (real captures with one
value edited, or the rendered formats the collector prints); the NCCL and fleet rows use figures
chosen so the limit is exactly representable in floating point.
"""

from __future__ import annotations

import pytest
from test_cluster_rules import LUSTRE, _lustre_series
from test_efa_rules import P4D_DEVICES, counters, healthy_p4d
from test_efa_rules import context as efa_context
from test_filesystem_rules import MOUNTS, lfs_df
from test_filesystem_rules import evaluate as fs_evaluate
from test_gpu_rules import H100_LOAD, healthy_sections, only, real, with_values
from test_host_rules import context as host_context
from test_host_rules import cpu_stat, df, psi

from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.domain.cluster import FileSystemInfo, MetricSeries
from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.nccl.analysis import PairMeasurement, analyze_measurements
from hyperpod_perf.rules import efa, fleet, fsx, gpu, host
from hyperpod_perf.rules.context import NodeContext
from hyperpod_perf.rules.fleet_signals import SM_CLOCK, NodeSignals
from hyperpod_perf.rules.thresholds import Thresholds

OK, CONCERN = Severity.OK, Severity.CONCERN
T = Thresholds


# ---------------------------------------------------------------------------------------------- GPU


@pytest.mark.parametrize(
    ("temperature", "thresholds", "severity"),
    [
        (88, T(), CONCERN),  # at the limit (>=)
        (87, T(), OK),  # just inside
        (89, T(), CONCERN),  # just outside
        (89, T(gpu_temperature_c=90), OK),  # overridden: inside the new limit
        (90, T(gpu_temperature_c=90), CONCERN),  # overridden: at the new limit
    ],
)
def test_gpu_temperature_boundary(temperature, thresholds, severity):
    sections = healthy_sections()
    sections["gpu-query"] = (with_values(real(H100_LOAD), temperature__gpu=str(temperature)), 0)
    findings = _gpu(sections, thresholds)
    assert only(findings, "gpu.temperature").severity is severity


@pytest.mark.parametrize(
    ("sm_mhz", "temperature", "thresholds", "severity"),
    [
        (1000, 85, T(), OK),  # ratio 0.5 at the limit (< 0.5 throttles): not throttled
        (999, 85, T(), CONCERN),  # just below half the max clock while hot
        (1001, 85, T(), OK),
        (999, 80, T(), CONCERN),  # temperature at its limit (>= 80)
        (999, 79, T(), OK),  # just cooler: a low clock alone is not thermal throttling
        (999, 85, T(gpu_throttle_clock_ratio=0.4), OK),  # overridden ratio
        (799, 85, T(gpu_throttle_clock_ratio=0.4), CONCERN),
        (999, 80, T(gpu_throttle_temperature_c=81), OK),  # overridden temperature
    ],
)
def test_gpu_thermal_throttle_boundary(sm_mhz, temperature, thresholds, severity):
    sections = healthy_sections()
    text = with_values(
        real(H100_LOAD),
        temperature__gpu=str(temperature),
        clocks__current__sm=f"{sm_mhz} MHz",
        clocks__max__sm="2000 MHz",
    )
    sections["gpu-query"] = (text, 0)
    assert only(_gpu(sections, thresholds), "gpu.thermal_throttle").severity is severity


def _gpu(sections, thresholds):
    text = render_container([(name, body, rc) for name, (body, rc) in sections.items()])
    return gpu.evaluate(NodeContext(parse_container(text, "node.txt"), thresholds))


# ---------------------------------------------------------------------------------------------- EFA


@pytest.mark.parametrize(
    ("counter", "value", "thresholds", "severity"),
    [
        ("rx_drops", 0, T(), OK),  # at the limit (> 0 is a fault)
        ("rx_drops", 1, T(), CONCERN),  # just outside: a single drop counts
        ("rdma_read_wr_err", 1, T(), CONCERN),
        ("rdma_read_wr_err", 1, T(efa_error_counters=("rx_drops",)), OK),  # overridden: not watched
        ("rx_drops", 1, T(efa_error_counters=("rx_drops",)), CONCERN),
    ],
)
def test_efa_error_counter_boundary(counter, value, thresholds, severity):
    sections = healthy_p4d(**{"efa-counters": (counters(P4D_DEVICES, {(P4D_DEVICES[1], counter): value}), 0)})
    findings = efa.evaluate(efa_context("ml.p4d.24xlarge", sections, thresholds))
    judged = {f.severity for f in findings if f.check == "efa.counters"}
    assert judged == {severity}


# --------------------------------------------------------------------------------------------- host


def _host(check: str, thresholds: Thresholds, **sections: tuple[str, int]) -> Severity:
    ctx = host_context(**sections)
    ctx.thresholds = thresholds
    (finding,) = [f for f in host.evaluate(ctx) if f.check == check]
    return finding.severity


@pytest.mark.parametrize(
    ("shm_gib", "thresholds", "severity"),
    [
        (16.0, T(), OK),  # at the limit (< 16 is too small)
        (16.01, T(), OK),
        (15.99, T(), CONCERN),
        (16.0, T(shm_min_gib=32), CONCERN),
        (32.0, T(shm_min_gib=32), OK),
    ],
)
def test_shm_boundary(shm_gib, thresholds, severity):
    assert _host("host.shm", thresholds, df=(df(shm_gib=shm_gib), 0)) is severity


@pytest.mark.parametrize(
    ("used_pct", "thresholds", "severity"),
    [
        (90, T(), CONCERN),  # at the limit (>=)
        (89, T(), OK),
        (91, T(), CONCERN),
        (90, T(root_volume_used_pct=95), OK),
        (95, T(root_volume_used_pct=95), CONCERN),
    ],
)
def test_root_volume_boundary(used_pct, thresholds, severity):
    assert _host("host.root_volume", thresholds, df=(df(root_used_pct=used_pct), 0)) is severity


@pytest.mark.parametrize(
    ("iowait", "thresholds", "severity"),
    [
        (20, T(), OK),  # at the limit (> 20 is a concern)
        (19, T(), OK),
        (21, T(), CONCERN),
        (21, T(iowait_pct=25), OK),
        (26, T(iowait_pct=25), CONCERN),
    ],
)
def test_iowait_boundary(iowait, thresholds, severity):
    assert _host("host.iowait", thresholds, **{"cpu-stat": (cpu_stat(iowait), 0)}) is severity


@pytest.mark.parametrize(
    ("avg10", "thresholds", "severity"),
    [
        (20.0, T(), OK),  # at the limit (> 20)
        (19.99, T(), OK),
        (20.01, T(), CONCERN),
        (20.01, T(io_pressure_some_avg10=30), OK),
        (30.01, T(io_pressure_some_avg10=30), CONCERN),
    ],
)
def test_io_pressure_boundary(avg10, thresholds, severity):
    assert _host("host.io_pressure", thresholds, **{"io-pressure": (psi(avg10), 0)}) is severity


# --------------------------------------------------------------------------------------- Lustre OST


@pytest.mark.parametrize(
    ("used_pct", "thresholds", "severity"),
    [
        (90, T(), CONCERN),  # at the limit (>=)
        (89, T(), OK),
        (91, T(), CONCERN),
        (90, T(lustre_ost_used_pct=95), OK),
        (95, T(lustre_ost_used_pct=95), CONCERN),
    ],
)
def test_lustre_ost_boundary(used_pct, thresholds, severity):
    (finding,), _ = fs_evaluate([("mounts", MOUNTS, 0), ("lfs-df", lfs_df([10, used_pct]), 0)], thresholds)
    assert finding.severity is severity


# ------------------------------------------------------------------------------------------ FSx


@pytest.mark.parametrize(
    ("values", "level", "fraction", "saturated"),
    [
        ([90.0] * 8 + [10.0] * 2, 90.0, 0.8, True),  # level and share both at their limits (>=)
        ([89.99] * 8 + [10.0] * 2, 90.0, 0.8, False),  # just below the level
        ([90.0] * 7 + [10.0] * 3, 90.0, 0.8, False),  # share just below (0.7)
        ([90.0] * 9 + [10.0] * 1, 90.0, 0.8, True),
    ],
)
def test_sustained_saturation_comparators(values, level, fraction, saturated):
    assert fsx._sustained(values, level, fraction)[0] is saturated


@pytest.mark.parametrize(
    ("utilizations", "thresholds", "severity"),
    [
        ([91.0] * 8 + [30.0] * 2, T(), CONCERN),  # 80 % of the window above 90 %: sustained (defaults)
        ([91.0] * 7 + [30.0] * 3, T(), OK),  # 70 %: a burst, not saturation
        ([89.0] * 10, T(), OK),  # always just below the level
        ([91.0] * 8 + [30.0] * 2, T(fs_saturated_fraction=0.85), OK),  # overridden share
        ([91.0] * 8 + [30.0] * 2, T(fs_throughput_saturated_pct=92), OK),  # overridden level
        ([89.0] * 10, T(fs_throughput_saturated_pct=88), CONCERN),
    ],
)
def test_lustre_throughput_saturation_boundary(utilizations, thresholds, severity):
    (finding,) = fsx.throughput(LUSTRE, _lustre_series(utilizations), {}, thresholds)
    # saturated is a CONCERN; anything else without I/O-bound nodes is OK
    assert finding.severity is severity


OPENZFS = FileSystemInfo(
    file_system_id="fs-0fedcba9876543210", type="OPENZFS", storage_capacity_gib=1024, throughput_capacity=160
)


def _iops_series(values: list[float]) -> list[MetricSeries]:
    from datetime import UTC, datetime, timedelta

    start = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
    stamps = tuple(start + timedelta(minutes=i) for i in range(len(values)))
    return [
        MetricSeries(
            file_system_id=OPENZFS.file_system_id,
            metric="FileServerDiskIopsUtilization",
            stat="Average",
            period_s=60,
            timestamps=stamps,
            values=tuple(values),
        )
    ]


@pytest.mark.parametrize(
    ("values", "thresholds", "severity"),
    [
        ([80.0] * 8 + [5.0] * 2, T(), CONCERN),  # at the level and at the share
        ([79.99] * 8 + [5.0] * 2, T(), OK),
        ([80.0] * 7 + [5.0] * 3, T(), OK),
        ([80.0] * 10, T(openzfs_iops_utilization_pct=85), OK),
        ([85.0] * 10, T(openzfs_iops_utilization_pct=85), CONCERN),
    ],
)
def test_openzfs_iops_boundary(values, thresholds, severity):
    (finding,) = fsx.openzfs_iops(OPENZFS, _iops_series(values), thresholds)
    assert finding.severity is severity


# ------------------------------------------------------------------------------------------ fleet

#: 8 peers: median 100, MAD 2 (four at 100, four at 102) -> scale 1.4826 x 2; the 9th node is judged.
PEERS = [100.0] * 4 + [102.0] * 4
SCALE = fleet.MAD_TO_SIGMA * 2


def _fleet(value: float, thresholds: Thresholds) -> Severity:
    signals = [
        NodeSignals(node=f"node-{i}", instance_type="ml.p5.48xlarge", values={SM_CLOCK.name: v})
        for i, v in enumerate([*PEERS, value])
    ]
    findings = fleet.outliers(signals, thresholds)
    judged = [f for f in findings if f.node == "node-8"]
    return judged[0].severity if judged else OK


@pytest.mark.parametrize(
    ("z", "thresholds", "severity"),
    [
        (3.6, T(fleet_outlier_min_relative_deviation=0.0), CONCERN),  # just beyond the default 3.5
        (3.4, T(fleet_outlier_min_relative_deviation=0.0), OK),  # just inside
        (3.6, T(fleet_outlier_robust_z=4.0, fleet_outlier_min_relative_deviation=0.0), OK),  # overridden
        (4.1, T(fleet_outlier_robust_z=4.0, fleet_outlier_min_relative_deviation=0.0), CONCERN),
    ],
)
def test_fleet_robust_z_boundary(z, thresholds, severity):
    assert _fleet(100.0 - z * SCALE, thresholds) is severity


def test_fleet_robust_z_at_the_limit_is_an_outlier():
    # Given the threshold set to exactly the z of a value 10 below the median (the comparison is `>=`)
    z = 10.0 / SCALE
    assert _fleet(90.0, T(fleet_outlier_robust_z=z, fleet_outlier_min_relative_deviation=0.0)) is CONCERN
    assert _fleet(90.0, T(fleet_outlier_robust_z=z * 1.0001, fleet_outlier_min_relative_deviation=0.0)) is OK


@pytest.mark.parametrize(
    ("value", "thresholds", "severity"),
    [
        (95.0, T(fleet_outlier_robust_z=0.1), CONCERN),  # exactly 5 % below the median 100 (>=)
        (95.01, T(fleet_outlier_robust_z=0.1), OK),  # just inside the default 5 %
        (94.9, T(fleet_outlier_robust_z=0.1), CONCERN),
        (94.0, T(fleet_outlier_robust_z=0.1, fleet_outlier_min_relative_deviation=0.07), OK),  # overridden
        (92.0, T(fleet_outlier_robust_z=0.1, fleet_outlier_min_relative_deviation=0.07), CONCERN),
    ],
)
def test_fleet_min_relative_deviation_boundary(value, thresholds, severity):
    assert _fleet(value, thresholds) is severity


# ------------------------------------------------------------------------------------------- NCCL


def synthetic_matrix(
    n: int, bad: list[int], *, good_gbps: float, bad_factor: float
) -> tuple[list[str], list[PairMeasurement]]:
    """Every pair of n nodes at `good_gbps` at 1 GiB; pairs with a bad node at `bad_factor` of it."""
    nodes = [f"node-{i}" for i in range(n)]
    bad_nodes = {nodes[i] for i in bad}
    values = {
        (a, b): good_gbps * (bad_factor if a in bad_nodes or b in bad_nodes else 1.0)
        for i, a in enumerate(nodes)
        for b in nodes[i + 1 :]
    }
    return nodes, _pairs(values)


def _pairs(values: dict[tuple[str, str], float]) -> list[PairMeasurement]:
    return [
        PairMeasurement(v, f"{a}__{b}.log", a, b, sizes=((1 << 30, v),), complete=True)
        for (a, b), v in values.items()
    ]


def _slow(low: float, thresholds: Thresholds) -> bool:
    """Three pairs at 70 and one at `low` (no common node among them to localise)."""
    values = {("a", "b"): 70.0, ("c", "d"): 70.0, ("e", "f"): 70.0, ("g", "h"): low}
    analysis = analyze_measurements(_pairs(values), thresholds)
    return [(p.a, p.b) for p in analysis.slow_pairs] == [("g", "h")]


@pytest.mark.parametrize(
    ("low", "thresholds", "slow"),
    [
        (30.0, T(nccl_pair_slow_pct=50), False),  # mean 60, limit 60 x 0.5 = 30 exactly: not below it
        (29.9, T(nccl_pair_slow_pct=50), True),  # just below
        (30.1, T(nccl_pair_slow_pct=50), False),
    ],
)
def test_nccl_pair_slow_at_an_exact_limit(low, thresholds, slow):
    assert _slow(low, thresholds) is slow


@pytest.mark.parametrize(
    ("below_pct", "thresholds", "slow"),
    [
        (5.5, T(), True),  # 5.5 % below the mean of the others: beyond the default 5 %
        (4.5, T(), False),
        (5.5, T(nccl_pair_slow_pct=6.0), False),  # overridden
        (6.5, T(nccl_pair_slow_pct=6.0), True),
    ],
)
def test_nccl_pair_slow_default_and_override(below_pct, thresholds, slow):
    # 99 pairs at 100 and one pair `below_pct` below: the mean barely moves
    values = {(f"n{i}a", f"n{i}b"): 100.0 for i in range(99)}
    values[("xa", "xb")] = 100.0 * (1 - below_pct / 100)
    analysis = analyze_measurements(_pairs(values), thresholds)
    assert ([(p.a, p.b) for p in analysis.slow_pairs] == [("xa", "xb")]) is slow


@pytest.mark.parametrize(
    ("factor", "thresholds", "drain"),
    [
        (0.79, T(), True),  # 21 % below the median: beyond the default 20 % drain level
        (0.81, T(), False),
        (0.79, T(nccl_drain_pct=25), False),  # overridden
        (0.74, T(nccl_drain_pct=25), True),
    ],
)
def test_nccl_drain_level_boundary(factor, thresholds, drain):
    nodes, measurements = synthetic_matrix(8, [3], good_gbps=100.0, bad_factor=factor)
    analysis = analyze_measurements(measurements, thresholds)
    (suspect,) = analysis.suspects
    assert suspect.node == nodes[3] and suspect.drain_candidate is drain


def test_nccl_drain_level_at_an_exact_limit_is_not_below_it():
    # median 100 (over 8 nodes: 21 good pairs at 100, 7 at 50); drain 50 % -> level exactly 50
    _, measurements = synthetic_matrix(8, [3], good_gbps=100.0, bad_factor=0.5)
    analysis = analyze_measurements(measurements, T(nccl_drain_pct=50))
    assert analysis.drain_level_gbps == 50.0
    assert [p.below_drain for p in analysis.slow_pairs] == [False] * 7
    assert analysis.suspects[0].drain_candidate is False


def _suspects(slow_of_node: int, pairs_of_node: int, thresholds: Thresholds) -> list[str]:
    """Node `x` paired with `pairs_of_node` partners, `slow_of_node` of those pairs at 50, others at 100;
    the partners also measured among themselves at 100 (so they are not suspects)."""
    partners = [f"p{i}" for i in range(pairs_of_node)]
    values = {("x", p): (50.0 if i < slow_of_node else 100.0) for i, p in enumerate(partners)}
    for i, a in enumerate(partners):
        for b in partners[i + 1 :]:
            values[(a, b)] = 100.0
    return [s.node for s in analyze_measurements(_pairs(values), thresholds).suspects]


@pytest.mark.parametrize(
    ("slow", "pairs", "thresholds", "named"),
    [
        (3, 6, T(), True),  # share 0.5 at the limit (>=)
        (2, 6, T(), False),  # share 0.33: just inside
        (4, 6, T(), True),
        (3, 6, T(nccl_suspect_share=0.6), False),  # overridden
        (4, 6, T(nccl_suspect_share=0.6), True),
        (2, 4, T(), True),  # 2 slow pairs: the minimum count
        (1, 2, T(), False),  # share 0.5 but a single slow pair never names a node
    ],
)
def test_nccl_suspect_share_and_minimum_slow_pairs(slow, pairs, thresholds, named):
    assert (_suspects(slow, pairs, thresholds) == ["x"]) is named


@pytest.mark.parametrize(
    ("median", "thresholds", "severity"),
    [
        (395.0595, T(), OK),  # exactly 0.9 x 438.955 (p5, 1 GiB) is not below it
        (395.0, T(), CONCERN),
        (396.0, T(), OK),
        (396.0, T(nccl_baseline_ratio=0.95), CONCERN),  # overridden
        (417.1, T(nccl_baseline_ratio=0.95), OK),
    ],
)
def test_nccl_baseline_ratio_boundary(median, thresholds, severity):
    values = {("a", "b"): median, ("a", "c"): median, ("b", "c"): median}
    analysis = analyze_measurements(_pairs(values), thresholds, instance_type="ml.p5.48xlarge")
    (baseline,) = [f for f in analysis.findings if f.check == "nccl.below_baseline"]
    assert baseline.severity is severity
