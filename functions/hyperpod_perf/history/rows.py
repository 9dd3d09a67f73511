"""One run's report as history rows: the tables Athena (Glue) and DuckDB both read. Pure, no I/O.

Why these tables and not one wide row: each question reads one grain — a node in a run (nodes),
a finding (findings), a GPU (gpus: serial and UUID, for asset tracking), a measured pair (pairs) —
and a flat row of plain scalars reads the same way in both engines (arrays and maps do not).
OK findings stay in the report: history keeps what was raised (CONCERN and INFO), which is what
every question asks about, and the node row records that the node was checked and how many
checks passed; at 1,024 nodes that is ~35 times fewer rows per run.

The partition columns (cluster, run_date) are not in the rows: both engines take them from the
object's key (`cluster=<name>/run_date=<YYYY-MM-DD>/`), as a Glue table's partition keys must be.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.domain.names import NodeNames
from hyperpod_perf.domain.report import NodeSummary, Report

#: Column types in the Glue Data Catalog's (Hive) vocabulary; `duckdb_type` maps each one.
STRING, BIGINT, DOUBLE, BOOLEAN = "string", "bigint", "double", "boolean"

#: Every table: its columns in order, each (name, Glue type). One place: the Glue tables in the
#: stack, the DuckDB views and the row builders below all read it.
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "nodes": (
        ("run_id", STRING),
        ("run_time", STRING),
        ("reason", STRING),
        ("instance_id", STRING),
        ("hostname", STRING),
        ("instance_group", STRING),
        ("instance_type", STRING),
        ("availability_zone", STRING),
        ("ultraserver_id", STRING),
        ("network_node_1", STRING),
        ("network_node_2", STRING),
        ("network_node_3", STRING),
        ("network_node_4", STRING),
        ("collection", STRING),
        ("concerns", BIGINT),
        ("checks_ok", BIGINT),
        ("gpu_count", BIGINT),
        ("efa_devices", STRING),
        ("efa_device_count", BIGINT),
        ("sm_clock_under_load_mhz", DOUBLE),
        ("gpu_temperature_max_c", DOUBLE),
        ("pair_mean_gbps", DOUBLE),
        ("slow_pairs", BIGINT),
        ("repair_action", STRING),
        ("figures_json", STRING),
    ),
    "findings": (
        ("run_id", STRING),
        ("run_time", STRING),
        ("instance_id", STRING),
        ("hostname", STRING),
        ("check_id", STRING),
        ("severity", STRING),
        ("tier", STRING),
        ("section", STRING),
        ("code", STRING),
        ("gpu", STRING),
        ("device", STRING),
        ("value", DOUBLE),
        ("summary", STRING),
        ("threshold", STRING),
        ("figures_json", STRING),
    ),
    "gpus": (
        ("run_id", STRING),
        ("run_time", STRING),
        ("instance_id", STRING),
        ("hostname", STRING),
        ("gpu_index", BIGINT),
        ("serial", STRING),
        ("uuid", STRING),
    ),
    "pairs": (
        ("run_id", STRING),
        ("run_time", STRING),
        ("node_a", STRING),
        ("node_b", STRING),
        ("instance_a", STRING),
        ("instance_b", STRING),
        ("busbw_gbps", DOUBLE),
        ("slow", BOOLEAN),
        ("below_drain", BOOLEAN),
        ("shared_layers", BIGINT),
    ),
}

#: Partition keys of every table, in path order.
PARTITION_KEYS: tuple[tuple[str, str], ...] = (("cluster", STRING), ("run_date", STRING))

_DUCKDB_TYPES = {STRING: "VARCHAR", BIGINT: "BIGINT", DOUBLE: "DOUBLE", BOOLEAN: "BOOLEAN"}

#: Evidence keys read into the typed columns, first match wins (the rest stays in figures_json).
_CODE_KEYS = ("code", "xid")
_GPU_KEYS = ("gpu", "gpu_index", "index")
_DEVICE_KEYS = ("device", "pci", "bus_id", "pci_bus_id", "port", "counter", "file_system_id", "mount", "ost")
_VALUE_KEYS = (
    "value",
    "busbw_gbps",
    "median_gbps",
    "temperature_c",
    "sm_clock_mhz",
    "width_current",
    "used_pct",
    "utilization_pct",
    "count",
)
MAX_TEXT = 300
MAX_FIGURES_JSON = 1000


def duckdb_type(glue_type: str) -> str:
    return _DUCKDB_TYPES[glue_type]


def tier_of(finding: Finding) -> str | None:
    """The finding's urgency tier as its report stored it (`act now` / `fix soon` / `watch`; reports
    before schema 1.3 and OK findings have none). Read, not recomputed: history sits below rules."""
    return None if finding.tier is None else finding.tier.value


def utc_stamp(value: str | None) -> str | None:
    """`YYYY-MM-DDTHH:MM:SSZ` (UTC): one fixed format, so string order is time order in both engines."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


#: What nvidia-smi prints where a board has no serial to report.
_NO_SERIAL = frozenset({"n/a", "[n/a]", "not supported", "[not supported]"})


def board_serial(value: str | None) -> str | None:
    """A serial that names a board, else None: empty, N/A and all-zero serials (anonymised or
    unprogrammed boards) name none, and would otherwise look like one board on every instance."""
    text = (value or "").strip()
    if not text or text.lower() in _NO_SERIAL or not text.strip("0"):
        return None
    return text


def history_rows(
    report: Report, run: str, *, repairs: Mapping[str, str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Every table's rows for one run. `repairs`: instance id -> the repair (Reboot | Replace) that
    the event starting this run asked HyperPod for (kept on the node's row for the before/after)."""
    run_time = utc_stamp(report.run.started) or utc_stamp(report.run.finished) or ""
    base = {"run_id": run, "run_time": run_time}
    names = _NodeNames(report.nodes)
    per_node = _pair_figures(report.nccl, names)
    by_node: dict[str, list[Finding]] = defaultdict(list)
    for finding in report.findings:
        by_node[names.instance(finding.node) or ""].append(finding)
    repairs = repairs or {}
    nodes = [
        _node_row(base, report.run.reason, n, by_node.get(n.node, []), per_node.get(n.node), repairs)
        for n in report.nodes
    ]
    findings = [_finding_row(base, f, names) for f in report.findings if f.severity is not Severity.OK]
    gpus = [
        {
            **base,
            "instance_id": n.instance_id or n.node,
            "hostname": n.hostname,
            "gpu_index": g.index,
            "serial": board_serial(g.serial),
            "uuid": g.uuid,
        }
        for n in report.nodes
        for g in n.gpus
        if g.serial or g.uuid
    ]
    return {"nodes": nodes, "findings": findings, "gpus": gpus, "pairs": _pair_rows(base, report, names)}


def run_date(rows: Mapping[str, list[dict[str, Any]]], fallback: str) -> str:
    """The partition date of a run's rows (its UTC start date)."""
    for table in rows.values():
        for row in table:
            if row.get("run_time"):
                return str(row["run_time"])[:10]
    return fallback


class _NodeNames:
    """Host names (pair logs, job logs) and instance ids (node findings) of the run's nodes: the
    rows key every node by its instance id, over the shared index (domain/names)."""

    def __init__(self, nodes: Iterable[NodeSummary]) -> None:
        self._names = NodeNames.of(nodes)

    def instance(self, name: str | None) -> str | None:
        if not name:
            return None
        entry = self._names.entry(name)
        return (entry.instance_id or entry.node) if entry else name

    def host(self, instance: str | None) -> str | None:
        return self._names.hostname(instance)


def _network_layer(node: NodeSummary, layer: int) -> str | None:
    return node.network_nodes[layer - 1] if len(node.network_nodes) >= layer else None


def _node_row(
    base: dict[str, Any],
    reason: str,
    node: NodeSummary,
    findings: list[Finding],
    pair: tuple[float, int] | None,
    repairs: Mapping[str, str],
) -> dict[str, Any]:
    instance = node.instance_id or node.node
    figures = node.figures
    return {
        **base,
        "reason": reason[:MAX_TEXT],
        "instance_id": instance,
        "hostname": node.hostname,
        "instance_group": node.instance_group,
        "instance_type": node.instance_type,
        "availability_zone": node.availability_zone,
        "ultraserver_id": node.ultraserver_id,
        **{f"network_node_{i}": _network_layer(node, i) for i in (1, 2, 3, 4)},
        "collection": node.collection,
        "concerns": sum(1 for f in findings if f.severity is Severity.CONCERN),
        "checks_ok": sum(1 for f in findings if f.severity is Severity.OK),
        "gpu_count": len(node.gpus),
        "efa_devices": ",".join(node.efa_devices) or None,
        "efa_device_count": len(node.efa_devices),
        "sm_clock_under_load_mhz": figures.get("gpu.sm_clock_under_load_mhz"),
        "gpu_temperature_max_c": figures.get("gpu.temperature_max_c"),
        "pair_mean_gbps": round(pair[0], 3) if pair else None,
        "slow_pairs": pair[1] if pair else None,
        "repair_action": repairs.get(instance),
        "figures_json": json.dumps(figures, sort_keys=True) if figures else None,
    }


def _first(evidence: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = evidence.get(key)
        if value is not None and not isinstance(value, dict | list):
            return value
    return None


def _scalars(evidence: Mapping[str, Any]) -> str | None:
    """The evidence's scalar figures as compact JSON (bounded): what the typed columns leave out."""
    scalars = {
        k: v for k, v in evidence.items() if isinstance(v, int | float | bool | str) and len(str(v)) <= 120
    }
    if not scalars:
        return None
    text = json.dumps(scalars, sort_keys=True, default=str)
    return text if len(text) <= MAX_FIGURES_JSON else text[: MAX_FIGURES_JSON - 1] + "…"


def _finding_row(base: dict[str, Any], finding: Finding, names: _NodeNames) -> dict[str, Any]:
    evidence = finding.evidence or {}
    instance = names.instance(finding.node)
    value = _first(evidence, _VALUE_KEYS)
    code, gpu, device = (_first(evidence, keys) for keys in (_CODE_KEYS, _GPU_KEYS, _DEVICE_KEYS))
    return {
        **base,
        "instance_id": instance,
        "hostname": names.host(instance) or (finding.node if finding.node != instance else None),
        "check_id": finding.check,
        "severity": finding.severity.value,
        "tier": tier_of(finding),
        "section": finding.section.value,
        "code": None if code is None else str(code),
        "gpu": None if gpu is None else str(gpu),
        "device": None if device is None else str(device)[:MAX_TEXT],
        "value": float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None,
        "summary": finding.summary[:MAX_TEXT],
        "threshold": (finding.threshold or None) and finding.threshold[:MAX_TEXT],
        "figures_json": _scalars(evidence),
    }


def _pairs_of(nccl: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if not nccl:
        return []
    pairs = nccl.get("pairs") or []
    return [p for p in pairs if isinstance(p, Mapping) and p.get("a") and p.get("b")]


def _slow_keys(nccl: Mapping[str, Any] | None) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    slow: set[tuple[str, str]] = set()
    drain: set[tuple[str, str]] = set()
    for p in (nccl or {}).get("slow_pairs") or []:
        key = (str(p.get("a")), str(p.get("b")))
        slow.add(key)
        if p.get("below_drain_level"):
            drain.add(key)
    return slow, drain


def _pair_figures(nccl: Mapping[str, Any] | None, names: _NodeNames) -> dict[str, tuple[float, int]]:
    """Per node (instance id): the mean busbw of its measured pairs and how many were slow."""
    slow, _ = _slow_keys(nccl)
    values: dict[str, list[float]] = defaultdict(list)
    slow_count: dict[str, int] = defaultdict(int)
    for p in _pairs_of(nccl):
        key = (str(p["a"]), str(p["b"]))
        for name in key:
            instance = names.instance(name) or name
            values[instance].append(float(p["busbw_gbps"]))
            slow_count[instance] += key in slow
    return {n: (statistics.fmean(v), slow_count[n]) for n, v in values.items() if v}


def _shared_layers(a: NodeSummary | None, b: NodeSummary | None) -> int | None:
    """How many network nodes (from the top) two nodes share; None when either has no layers."""
    if a is None or b is None or not a.network_nodes or not b.network_nodes:
        return None
    shared = 0
    for x, y in zip(a.network_nodes, b.network_nodes, strict=False):
        if x != y:
            break
        shared += 1
    return shared


def _pair_rows(base: dict[str, Any], report: Report, names: _NodeNames) -> list[dict[str, Any]]:
    summaries = {n.instance_id or n.node: n for n in report.nodes}
    slow, drain = _slow_keys(report.nccl)
    rows = []
    for p in _pairs_of(report.nccl):
        a, b = str(p["a"]), str(p["b"])
        ia, ib = names.instance(a), names.instance(b)
        rows.append(
            {
                **base,
                "node_a": a,
                "node_b": b,
                "instance_a": ia,
                "instance_b": ib,
                "busbw_gbps": round(float(p["busbw_gbps"]), 3),
                "slow": (a, b) in slow,
                "below_drain": (a, b) in drain,
                "shared_layers": _shared_layers(summaries.get(ia or ""), summaries.get(ib or "")),
            }
        )
    return rows
