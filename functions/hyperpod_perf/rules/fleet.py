"""Fleet rules: compare nodes that should be identical.

Why robust statistics: the runbook samples one node; a fleet view has to find the one bad node
among 8 or 800 without flagging a healthy fleet's ordinary jitter. The median and the median
absolute deviation (MAD) are not dragged by the outlier itself, and a minimum relative deviation
keeps a perfectly uniform fleet (MAD = 0) from turning 1 MHz into "infinitely far".

Nodes are compared only with nodes of the same instance type.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from statistics import median

from hyperpod_perf.domain.cluster import ClusterNode, normalise_instance_type
from hyperpod_perf.domain.findings import Finding, Handoff, RunbookSection, Severity
from hyperpod_perf.rules.fleet_signals import SIGNALS, Direction, NodeSignals, SignalSpec
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

MAD_TO_SIGMA = 1.4826  # scales the MAD to a standard deviation for normally distributed data
MIN_FLEET_FOR_OUTLIERS = 3
MAX_LISTED_NODES = 20
VERSION_KEYS_ORDER = (
    "driver",
    "cuda",
    "nccl",
    "efa_installer",
    "efa_module",
    "libfabric",
    "aws_ofi_nccl",
    "fabric_manager",
)
INSTANCE_TYPES_THRESHOLD = "> 1 instance type in one instance group"
VERSION_DRIFT_THRESHOLD = "any version differing between nodes"


def _type_key(instance_type: str | None) -> str:
    return normalise_instance_type(instance_type) or "unknown"


def instance_types(nodes: Sequence[ClusterNode]) -> list[Finding]:
    """fleet.instance_types: more than one instance type within one instance group -> CONCERN."""
    by_group: dict[str, Counter[str]] = defaultdict(Counter)
    members: dict[tuple[str, str], list[str]] = defaultdict(list)
    for node in nodes:
        if not node.instance_type:
            continue  # not described (e.g. DescribeClusterNode denied): nothing to compare
        kind = _type_key(node.instance_type)
        by_group[node.group][kind] += 1
        members[(node.group, kind)].append(node.instance_id)
    findings: list[Finding] = []
    uniform: dict[str, str] = {}
    for group, kinds in sorted(by_group.items()):
        if len(kinds) == 1:
            uniform[group] = next(iter(kinds))
            continue
        majority = kinds.most_common(1)[0][0]
        odd = {k: members[(group, k)][:MAX_LISTED_NODES] for k in sorted(kinds) if k != majority}
        findings.append(
            Finding(
                check="fleet.instance_types",
                severity=Severity.CONCERN,
                section=RunbookSection.NCCL,
                summary=(
                    f"instance group {group} mixes {len(kinds)} instance types ("
                    + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items()))
                    + "): the slowest type paces the job"
                ),
                evidence={
                    "group": group,
                    "nodes_per_type": dict(sorted(kinds.items())),
                    "nodes_not_majority": odd,
                },
                threshold=INSTANCE_TYPES_THRESHOLD,
                next_step="Run the job on nodes of one instance type; replace or exclude the odd nodes.",
            )
        )
    if uniform:
        findings.insert(
            0,
            Finding(
                check="fleet.instance_types",
                severity=Severity.OK,
                section=RunbookSection.NCCL,
                summary=f"{len(uniform)} instance group(s) each run a single instance type",
                evidence={"group_types": uniform},
                threshold=INSTANCE_TYPES_THRESHOLD,
            ),
        )
    return findings


def version_drift(signals: Sequence[NodeSignals]) -> list[Finding]:
    """fleet.version_drift: driver/CUDA/NCCL/EFA/OFI versions differ between comparable nodes -> CONCERN."""
    groups: dict[str, list[NodeSignals]] = defaultdict(list)
    for item in signals:
        if item.versions:
            groups[_type_key(item.instance_type)].append(item)
    findings: list[Finding] = []
    for kind, members in sorted(groups.items()):
        if len(members) < 2:
            findings.append(
                Finding(
                    check="fleet.version_drift",
                    severity=Severity.INFO,
                    section=RunbookSection.NCCL,
                    summary=f"only {len(members)} {kind} node with versions collected: drift needs two",
                    evidence={"instance_type": kind, "nodes": [m.node for m in members]},
                )
            )
            continue
        drift: dict[str, dict[str, list[str]]] = {}
        keys = sorted({k for m in members for k in m.versions}, key=_version_key_order)
        for key in keys:
            by_value: dict[str, list[str]] = defaultdict(list)
            for member in members:
                if key in member.versions:
                    by_value[member.versions[key]].append(member.node)
            if len(by_value) > 1:
                drift[key] = {v: nodes for v, nodes in sorted(by_value.items(), key=lambda kv: -len(kv[1]))}
        if not drift:
            findings.append(
                Finding(
                    check="fleet.version_drift",
                    severity=Severity.OK,
                    section=RunbookSection.NCCL,
                    summary=f"{len(members)} {kind} node(s) run identical versions of {', '.join(keys)}",
                    evidence={"instance_type": kind, "versions": dict(sorted(members[0].versions.items()))},
                    threshold=VERSION_DRIFT_THRESHOLD,
                )
            )
            continue
        evidence = {
            "instance_type": kind,
            "nodes_compared": len(members),
            "drift": {
                key: {
                    value: {"count": len(nodes), "nodes": nodes[:MAX_LISTED_NODES]}
                    for value, nodes in values.items()
                }
                for key, values in drift.items()
            },
        }
        described = "; ".join(
            f"{key}: " + ", ".join(f"{value} ({len(nodes)})" for value, nodes in values.items())
            for key, values in drift.items()
        )
        findings.append(
            Finding(
                check="fleet.version_drift",
                severity=Severity.CONCERN,
                section=RunbookSection.NCCL,
                summary=f"versions differ across {len(members)} {kind} nodes: {described}",
                evidence=evidence,
                threshold=VERSION_DRIFT_THRESHOLD,
                next_step="Bring the minority nodes to the fleet's versions (same AMI / lifecycle scripts).",
                handoff=Handoff.VERSIONS,
            )
        )
    return findings


def _version_key_order(key: str) -> tuple[int, str]:
    return (VERSION_KEYS_ORDER.index(key) if key in VERSION_KEYS_ORDER else len(VERSION_KEYS_ORDER), key)


def robust_scores(values: Sequence[float]) -> tuple[float, float]:
    """(median, MAD) of the values."""
    center = median(values)
    mad = median(abs(v - center) for v in values)
    return center, mad


def outliers(
    signals: Sequence[NodeSignals],
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    specs: Iterable[SignalSpec] = SIGNALS,
) -> list[Finding]:
    """fleet.outlier: a node far from its peers' median on a comparable signal -> CONCERN."""
    specs = tuple(specs)
    groups: dict[str, list[NodeSignals]] = defaultdict(list)
    for item in signals:
        groups[_type_key(item.instance_type)].append(item)
    findings: list[Finding] = []
    for kind, members in sorted(groups.items()):
        compared: dict[str, int] = {}
        concerns: list[Finding] = []
        for spec in specs:
            pairs = [(m.node, m.values[spec.name]) for m in members if spec.name in m.values]
            if len(pairs) < MIN_FLEET_FOR_OUTLIERS:
                continue
            compared[spec.name] = len(pairs)
            concerns.extend(_signal_outliers(kind, spec, pairs, thresholds))
        if not compared:
            findings.append(
                Finding(
                    check="fleet.outlier",
                    severity=Severity.INFO,
                    section=RunbookSection.NCCL,
                    summary=(
                        f"{len(members)} {kind} node(s) with signals: fleet comparison needs at least "
                        f"{MIN_FLEET_FOR_OUTLIERS}"
                    ),
                    evidence={"instance_type": kind, "nodes": [m.node for m in members][:MAX_LISTED_NODES]},
                )
            )
        elif concerns:
            findings.extend(concerns)
        else:
            findings.append(
                Finding(
                    check="fleet.outlier",
                    severity=Severity.OK,
                    section=RunbookSection.NCCL,
                    summary=(
                        f"no outlier among {max(compared.values())} {kind} node(s) on {', '.join(compared)}"
                    ),
                    evidence={"instance_type": kind, "nodes_compared": compared},
                    threshold=_threshold_text(thresholds),
                )
            )
    return findings


def _threshold_text(thresholds: Thresholds) -> str:
    return (
        f"robust z (|x - median| / ({MAD_TO_SIGMA} x MAD)) >= {thresholds.fleet_outlier_robust_z:g} and "
        f">= {thresholds.fleet_outlier_min_relative_deviation:.0%} from the median, in the bad direction"
    )


def _signal_outliers(
    kind: str, spec: SignalSpec, pairs: list[tuple[str, float]], thresholds: Thresholds
) -> list[Finding]:
    center, mad = robust_scores([v for _, v in pairs])
    scale = MAD_TO_SIGMA * mad
    findings = []
    worse = "lower" if spec.direction is Direction.LOW_IS_BAD else "higher"
    for node, value in pairs:
        worse_by = (center - value) if spec.direction is Direction.LOW_IS_BAD else (value - center)
        if worse_by <= 0:
            continue
        relative = worse_by / abs(center) if center else math.inf
        z = worse_by / scale if scale > 0 else math.inf
        if (
            z < thresholds.fleet_outlier_robust_z
            or relative < thresholds.fleet_outlier_min_relative_deviation
        ):
            continue
        findings.append(
            Finding(
                node=node,
                check="fleet.outlier",
                severity=Severity.CONCERN,
                section=RunbookSection.NCCL,
                summary=(
                    f"{spec.description} is {value:g} {spec.unit}, fleet median {center:g} {spec.unit} "
                    f"({_relative_text(relative)} {worse}; {len(pairs)} {kind} nodes)"
                ),
                evidence={
                    "signal": spec.name,
                    "value": value,
                    "fleet_median": center,
                    "fleet_mad": mad,
                    "robust_z": None if math.isinf(z) else round(z, 2),
                    "relative_deviation": None if math.isinf(relative) else round(relative, 4),
                    "nodes_compared": len(pairs),
                    "instance_type": kind,
                },
                threshold=_threshold_text(thresholds),
                next_step=spec.next_step,
                handoff=spec.handoff,
            )
        )
    return findings


def _relative_text(relative: float) -> str:
    return "from zero" if math.isinf(relative) else f"{relative:.0%}"


def evaluate(
    nodes: Sequence[ClusterNode], signals: Sequence[NodeSignals], thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> list[Finding]:
    return instance_types(nodes) + version_drift(signals) + outliers(signals, thresholds)
