"""Judging the fleet's series over time: per node, per step, against the fleet and its own baseline.

Why over time and not at an instant: a node slow but not broken (clocks down under a power cap, a
NIC retransmitting under load), or a degradation that came and went inside the alarm window, is
invisible to a snapshot. Every rule here flags the steps of the alarm window where a node (or the
whole fleet) is off, keeps only runs of consecutive flagged steps that last at least
`metrics_min_minutes`, and reports the longest run: the node, the minutes (HH:MM-HH:MM UTC), the
series and the figures behind it, and a small chart of the node against the fleet median.

The fleet reference is the median across nodes at the same step (robust: a handful of bad nodes
do not move it); with fewer than `MIN_FLEET` nodes it is the node's own baseline median instead.
When at least `metrics_fleet_share` of the nodes are flagged at once (iowait on every node), the
cause is shared — the file system, the job — and one fleet finding replaces the per-node ones.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.metrics.model import FleetSeries, Grid, NodeSeries
from hyperpod_perf.metrics.signals import BY_NAME, clock_reason_names
from hyperpod_perf.rules.catalog import lookup
from hyperpod_perf.rules.thresholds import Thresholds

#: Fewer nodes than this at a step: no fleet median, the node's own baseline is the reference.
MIN_FLEET = 3
MAX_CHART_POINTS = 60
MAX_CHARTS = 20
#: sinfo long states (and prefixes) that mean Slurm took the node out of the job's reach.
SLURM_BAD_STATES = ("drain", "down", "fail", "not_responding", "maint", "reboot", "power_down")


@dataclass(frozen=True)
class Span:
    """A run of consecutive flagged steps, grid indices inclusive."""

    first: int
    last: int

    @property
    def steps(self) -> int:
        return self.last - self.first + 1


def flagged_spans(flags: Sequence[bool], indices: range) -> list[Span]:
    spans: list[Span] = []
    start: int | None = None
    for i in indices:
        if flags[i]:
            start = i if start is None else start
        elif start is not None:
            spans.append(Span(start, i - 1))
            start = None
    if start is not None:
        spans.append(Span(start, indices[-1]))
    return spans


def _hhmm(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%H:%M")


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


@dataclass
class Verdicts:
    findings: list[Finding] = field(default_factory=list)
    charts: list[dict[str, Any]] = field(default_factory=list)


class FleetJudge:
    """The rules, sharing the grid, the fleet medians and the span arithmetic."""

    def __init__(self, fleet: FleetSeries, thresholds: Thresholds) -> None:
        self.fleet = fleet
        self.grid: Grid = fleet.grid
        self.t = thresholds
        self.out = Verdicts()
        self._medians: dict[str, list[float | None]] = {}

    # -- shared arithmetic ---------------------------------------------------------------------

    def series(self, signal: str) -> NodeSeries:
        return self.fleet.values.get(signal, {})

    def fleet_median(self, signal: str) -> list[float | None]:
        """The median across nodes at each step (None below MIN_FLEET nodes)."""
        if signal not in self._medians:
            per_node = list(self.series(signal).values())
            medians: list[float | None] = [None] * self.grid.size
            for i in (*self.grid.baseline_indices(), *self.grid.window_indices()):  # the steps read
                column = [s[i] for s in per_node if s[i] is not None]
                medians[i] = statistics.median(column) if len(column) >= MIN_FLEET else None
            self._medians[signal] = medians
        return self._medians[signal]

    def baseline(self, values: Sequence[float | None]) -> float | None:
        return _median([values[i] for i in self.grid.baseline_indices()])

    def longest(self, flags: Sequence[bool]) -> Span | None:
        """The longest run of flags inside the window lasting at least metrics_min_minutes."""
        need = self.t.metrics_min_minutes * 60
        spans = [
            s for s in flagged_spans(flags, self.grid.window_indices()) if s.steps * self.grid.step >= need
        ]
        return max(spans, key=lambda s: (s.steps, -s.first), default=None)

    def minutes(self, span: Span) -> int:
        return round(span.steps * self.grid.step / 60)

    @property
    def lasting(self) -> str:
        return f"for >= {self.t.metrics_min_minutes:g} min"

    def during(self, span: Span) -> str:
        """`for 40 min (10:05-10:45 UTC)`"""
        return f"for {self.minutes(span)} min ({self.when(span)})"

    def when(self, span: Span) -> str:
        first = self.grid.timestamp(span.first)
        last = self.grid.timestamp(span.last) + self.grid.step
        return f"{_hhmm(first)}-{_hhmm(last)} UTC"

    def span_evidence(self, span: Span, signal: str) -> dict[str, Any]:
        return {
            "from": _iso(self.grid.timestamp(span.first)),
            "to": _iso(self.grid.timestamp(span.last) + self.grid.step),
            "minutes": self.minutes(span),
            "series": BY_NAME[signal].metrics[0]
            if len(BY_NAME[signal].metrics) == 1
            else list(BY_NAME[signal].metrics),
            "step_seconds": self.grid.step,
        }

    def host(self, node: str) -> str | None:
        return self.fleet.hostnames.get(node)

    def emit(
        self,
        check: str,
        node: str | None,
        summary: str,
        evidence: dict[str, Any],
        *,
        threshold: str,
        next_step: str | None,
        severity: Severity = Severity.CONCERN,
        chart: tuple[str, NodeSeries | None, str] | None = None,
    ) -> None:
        entry = lookup(check)
        if node and self.host(node) and self.host(node) != node:
            evidence = {"host": self.host(node), **evidence}
        self.out.findings.append(
            Finding(
                node=node,
                check=check,
                severity=severity,
                section=entry.section,
                summary=summary,
                evidence=evidence,
                threshold=threshold,
                next_step=next_step,
                handoff=entry.handoff.value if entry.handoff else None,
            )
        )
        if chart and len(self.out.charts) < MAX_CHARTS:
            signal, per_node, title = chart
            self.out.charts.append(self._chart(check, node, signal, per_node, title))

    def _chart(
        self, check: str, node: str | None, signal: str, per_node: NodeSeries | None, title: str
    ) -> dict[str, Any]:
        """Node against fleet median over baseline and window, thinned to MAX_CHART_POINTS."""
        grid = self.grid
        stride = max(1, -(-grid.size // MAX_CHART_POINTS))
        # In the baseline, a multiple of its stride: only steps that were read.
        before = -(-stride // grid.baseline_stride) * grid.baseline_stride
        picks = [*range(0, grid.window_from, before), *range(grid.window_from, grid.size, stride)]
        own = (per_node or {}).get(node or "", [None] * self.grid.size)
        median = self.fleet_median(signal)
        return {
            "check": check,
            "node": node,
            "title": title,
            "unit": BY_NAME[signal].unit,
            "window_start": _iso(self.grid.window_first),
            "times": [_iso(self.grid.timestamp(i)) for i in picks],
            "node_values": [None if own[i] is None else round(own[i], 3) for i in picks],
            "fleet_median": [None if median[i] is None else round(median[i], 3) for i in picks],
        }

    def per_node(
        self,
        signal: str,
        flag: Callable[[str, int, float], bool],
    ) -> dict[str, Span]:
        """node -> its longest flagged span, `flag(node, step, value)` deciding each step."""
        found: dict[str, Span] = {}
        for node, values in self.series(signal).items():
            flags = [False] * self.grid.size
            for i in self.grid.window_indices():
                value = values[i]
                flags[i] = value is not None and flag(node, i, value)
            span = self.longest(flags)
            if span:
                found[node] = span
        return found

    def shared_cause(self, signal: str, found: dict[str, Span]) -> bool:
        nodes = len(self.series(signal))
        return nodes >= MIN_FLEET and len(found) >= self.t.metrics_fleet_share * nodes

    def mean_over(self, values: Sequence[float | None], span: Span) -> float | None:
        present = [v for v in values[span.first : span.last + 1] if v is not None]
        return sum(present) / len(present) if present else None

    def busy(self, node: str, i: int) -> bool:
        """Whether the node's GPUs were working at step i (unknown utilisation counts as busy)."""
        util = self.series("gpu_util").get(node)
        return util is None or util[i] is None or util[i] >= self.t.metrics_busy_util_pct

    # -- the rules -----------------------------------------------------------------------------

    def gpu_clock(self) -> None:
        clocks = self.series("sm_clock")
        median = self.fleet_median("sm_clock")
        ratio = self.t.metrics_clock_low_ratio

        def low(node: str, i: int, value: float) -> bool:
            reference = median[i] if median[i] is not None else self.baseline(clocks[node])
            return bool(reference) and self.busy(node, i) and value < ratio * reference  # type: ignore[operator]

        for node, span in sorted(self.per_node("sm_clock", low).items()):
            own = self.mean_over(clocks[node], span) or 0.0
            reference = self.mean_over(median, span) or self.baseline(clocks[node]) or 0.0
            below = round(100 * (1 - own / reference)) if reference else 0
            causes = self._throttle_causes(node, span)
            cause = f", {' and '.join(causes)}" if causes else ", no throttle reason recorded"
            whom = "the fleet" if self.mean_over(median, span) else "its own baseline"
            self.emit(
                "metrics.gpu_clock",
                node,
                f"SM clock {below} % below {whom} {self.during(span)}{cause}",
                {
                    **self.span_evidence(span, "sm_clock"),
                    "slowest_gpu_clock_mhz": round(own),
                    "fleet_median_mhz": round(reference),
                    "baseline_mhz": _round(self.baseline(clocks[node])),
                    "causes": causes,
                },
                threshold=f"slowest GPU < {ratio:g} x fleet median while busy, {self.lasting}",
                next_step="the whole job runs at this node's pace: check its power and cooling "
                "(nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE) and drain it if the cap persists",
                chart=("sm_clock", clocks, "slowest GPU SM clock vs fleet median"),
            )

    def _throttle_causes(self, node: str, span: Span) -> list[str]:
        causes: list[str] = []
        for signal, label in (
            ("power_violation", "power-capped"),
            ("thermal_violation", "thermally throttled"),
        ):
            share = self.mean_over(self.series(signal).get(node, []), span)
            if share is not None and share >= self.t.metrics_throttle_share:
                causes.append(f"{label} {round(100 * min(share, 1.0))} % of the time")
        reasons = self.series("clock_reasons").get(node)
        if reasons:
            mask = 0
            for value in reasons[span.first : span.last + 1]:
                mask |= int(value or 0)
            causes.extend(f"clock event: {name}" for name in clock_reason_names(mask))
        temp = self.series("gpu_temp").get(node)
        hottest = max((v for v in (temp or [])[span.first : span.last + 1] if v is not None), default=None)
        if hottest is not None and hottest >= self.t.metrics_gpu_temperature_c:
            causes.append(f"hottest GPU {hottest:g} C")
        return causes

    def gpu_thermal(self) -> None:
        limit = self.t.metrics_gpu_temperature_c
        temps = self.series("gpu_temp")
        for node, span in sorted(self.per_node("gpu_temp", lambda n, i, v: v >= limit).items()):
            peak = max(v for v in temps[node][span.first : span.last + 1] if v is not None)
            self.emit(
                "metrics.gpu_thermal",
                node,
                f"hottest GPU at or above {limit:g} C {self.during(span)}, peak {peak:g} C",
                {
                    **self.span_evidence(span, "gpu_temp"),
                    "peak_c": peak,
                    "fleet_median_c": _round(self.mean_over(self.fleet_median("gpu_temp"), span)),
                },
                threshold=f">= {limit:g} C {self.lasting}",
                next_step="hand to the node debugger: cooling or airflow (the GPU slows itself down)",
                chart=("gpu_temp", temps, "hottest GPU temperature vs fleet median"),
            )

    def gpu_idle(self) -> None:
        """A hang (every busy node idle at once) or one node idle while the fleet works."""
        util = self.series("gpu_util")
        idle, busy = self.t.metrics_idle_util_pct, self.t.metrics_busy_util_pct
        workers = [n for n, v in util.items() if (self.baseline(v) or 0) >= busy]
        if not workers:
            return
        all_idle = [False] * self.grid.size
        for i in self.grid.window_indices():
            column = [util[n][i] for n in workers]
            all_idle[i] = all(v is not None for v in column) and all(v < idle for v in column)  # type: ignore[operator]
        span = self.longest(all_idle) if len(workers) >= 2 or len(util) == 1 else None
        if span:
            before = _median([_median([util[n][i] for n in workers]) for i in self.grid.baseline_indices()])
            self.emit(
                "metrics.gpu_idle",
                None,
                f"every GPU of the job idle {self.during(span)} on {len(workers)} "
                f"node(s) that ran at {before:.0f} % before: the job is hung or stalled on input",
                {
                    **self.span_evidence(span, "gpu_util"),
                    "nodes": len(workers),
                    "baseline_util_pct": _round(before),
                },
                threshold=f"every node >= {busy:g} % in the baseline below {idle:g} % {self.lasting}",
                next_step="look for the collective the ranks wait in (py-spy dump, the NCCL flight recorder) "
                "and for the data loader: `hyperpod-perf logs analyze` on the job's logs",
            )
            return
        median = self.fleet_median("gpu_util")
        if len(workers) < MIN_FLEET:
            return
        stopped = self.per_node("gpu_util", lambda n, i, v: v < idle and (median[i] or 0) >= busy)
        for node, found in sorted(stopped.items()):
            if node in workers:
                self.emit(
                    "metrics.gpu_idle",
                    node,
                    f"GPUs idle {self.during(found)} while the fleet ran at "
                    f"{self.mean_over(median, found):.0f} %: this node stopped working in the job",
                    {
                        **self.span_evidence(found, "gpu_util"),
                        "baseline_util_pct": _round(self.baseline(util[node])),
                    },
                    threshold=f"< {idle:g} % while the fleet median >= {busy:g} %, {self.lasting}",
                    next_step="its job processes may have died or hung: read its logs and dmesg",
                    chart=("gpu_util", util, "busiest GPU utilisation vs fleet median"),
                )

    def xid(self) -> None:
        """dcgm-exporter's XID gauge holds the last Xid's code: a change to a non-zero code is an event."""
        for node, values in sorted(self.series("xid").items()):
            events: list[tuple[float, int]] = []
            previous: float | None = None
            for i in range(self.grid.size):
                value = values[i]
                if value is None:
                    continue
                if value and value != previous and i >= self.grid.window_from:
                    events.append((self.grid.timestamp(i), int(value)))
                previous = value
            if events:
                from hyperpod_perf.rules.gpu.kernel_log import XID_CATALOG

                codes = sorted({code for _, code in events})
                actions = [XID_CATALOG.for_code(code) for code in codes]
                named = ", ".join(
                    f"{c} ({a.title})" if a.title else str(c) for c, a in zip(codes, actions, strict=True)
                )
                first = events[0][0]
                self.emit(
                    "metrics.xid",
                    node,
                    f"Xid {named} during the window (first at {_hhmm(first)} UTC)",
                    {
                        "codes": codes,
                        "first": _iso(first),
                        "events": len(events),
                        "series": "DCGM_FI_DEV_XID_ERRORS",
                        "action": [a.key for a in actions],
                    },
                    threshold="a new non-zero DCGM_FI_DEV_XID_ERRORS value inside the window",
                    next_step=" ".join(dict.fromkeys(a.next_step for a in actions)),
                )
            elif previous:
                self.emit(
                    "metrics.xid",
                    node,
                    f"last Xid {int(previous)} happened before the baseline (the gauge holds it since)",
                    {"codes": [int(previous)], "series": "DCGM_FI_DEV_XID_ERRORS"},
                    threshold="a non-zero DCGM_FI_DEV_XID_ERRORS that did not change in the window",
                    next_step="check its age in the node's dmesg before acting on it",
                    severity=Severity.INFO,
                )

    def counter_over(self, check: str, signal: str, limit: float, what: str, next_step: str) -> None:
        """A counter's rate above an absolute limit, sustained."""
        values = self.series(signal)
        for node, span in sorted(self.per_node(signal, lambda n, i, v: v > limit).items()):
            rate = self.mean_over(values[node], span) or 0.0
            self.emit(
                check,
                node,
                f"{what} at {figure(rate)} {BY_NAME[signal].unit} {self.during(span)}",
                {**self.span_evidence(span, signal), "rate": round(rate, 3), "unit": BY_NAME[signal].unit},
                threshold=f"> {limit:g} {BY_NAME[signal].unit} {self.lasting}",
                next_step=next_step,
                chart=(signal, values, f"{what} vs fleet median"),
            )

    def fleet_ratio(self, check: str, signal: str, what: str, next_step: str) -> None:
        """A counter's rate many times the fleet median (and above a floor), sustained."""
        values = self.series(signal)
        median = self.fleet_median(signal)
        ratio, floor = self.t.metrics_efa_retrans_fleet_ratio, self.t.metrics_efa_retrans_min_per_s

        def high(node: str, i: int, value: float) -> bool:
            return value >= floor and value >= ratio * (median[i] or 0.0)

        found = self.per_node(signal, high)
        for node, span in sorted(found.items()):
            rate = self.mean_over(values[node], span) or 0.0
            fleet = self.mean_over(median, span) or 0.0
            times = f"{rate / fleet:.0f}x the fleet" if fleet > 0 else "while the fleet has none"
            self.emit(
                check,
                node,
                f"{what} {times} {self.during(span)}: {figure(rate)} {BY_NAME[signal].unit}",
                {**self.span_evidence(span, signal), "rate": round(rate, 3), "fleet_median": round(fleet, 3)},
                threshold=f">= {ratio:g} x fleet median and >= {floor:g}/s {self.lasting}",
                next_step=next_step,
                chart=(signal, values, f"{what} vs fleet median"),
            )

    def network_low(self) -> None:
        values = self.series("efa_bytes")
        median = self.fleet_median("efa_bytes")
        low, floor = self.t.metrics_network_low_ratio, self.t.metrics_network_min_bytes_per_s

        def slow(node: str, i: int, value: float) -> bool:
            return (median[i] or 0.0) >= floor and value < low * (median[i] or 0.0)

        for node, span in sorted(self.per_node("efa_bytes", slow).items()):
            own, fleet = self.mean_over(values[node], span) or 0.0, self.mean_over(median, span) or 0.0
            self.emit(
                "metrics.network_low",
                node,
                f"EFA traffic {own / 1e9:.2f} GB/s against the fleet's {fleet / 1e9:.2f} GB/s for "
                f"{self.minutes(span)} min ({self.when(span)})",
                {
                    **self.span_evidence(span, "efa_bytes"),
                    "bytes_per_s": round(own),
                    "fleet_median_bytes_per_s": round(fleet),
                },
                threshold=f"< {low:g} x fleet median (fleet >= {floor:g} B/s) {self.lasting}",
                next_step="a node moving far less than its peers waits (a straggler elsewhere) or is on a "
                "degraded path: compare with its EFA error findings and run the pairwise NCCL test",
                chart=("efa_bytes", values, "EFA bytes/s vs fleet median"),
            )

    def host_io(self, check: str, signal: str, limit: float, what: str) -> None:
        values = self.series(signal)
        found = self.per_node(signal, lambda n, i, v: v > limit)
        if self.shared_cause(signal, found):
            first = min(s.first for s in found.values())
            last = max(s.last for s in found.values())
            span = Span(first, last)
            self.emit(
                check,
                None,
                f"{what} above {limit:g} % on {len(found)} of {len(values)} nodes ({self.when(span)}): "
                "a shared cause, most likely the file system",
                {**self.span_evidence(span, signal), "nodes": len(found), "of": len(values)},
                threshold=f"> {limit:g} % {self.lasting} on >= {self.t.metrics_fleet_share:.0%} of nodes",
                next_step="read this run's FSx findings (throughput, metadata, OST balance) then",
            )
            return
        for node, span in sorted(found.items()):
            level = self.mean_over(values[node], span) or 0.0
            self.emit(
                check,
                node,
                f"{what} {level:.0f} % {self.during(span)} while the fleet's median "
                f"is {self.mean_over(self.fleet_median(signal), span) or 0:.0f} %",
                {**self.span_evidence(span, signal), "pct": round(level, 1)},
                threshold=f"> {limit:g} % {self.lasting}",
                next_step="it waits on storage more than its peers: its mounts, local disk, Lustre client",
                chart=(signal, values, f"{what} vs fleet median"),
            )

    def ruled_out(self) -> None:
        """A cluster-level OK per rule that had series and flagged nothing over the window."""
        flagged = {f.check for f in self.out.findings}
        total = len(self.fleet.nodes())
        answered = {name: self.series(name) for signals, _ in RULED_OUT.values() for name in signals}
        checks = [
            *RULED_OUT.items(),
            ("metrics.slurm_state", ((), "no node down, drained or failing in Slurm")),
        ]
        for check, (signals, text) in checks:
            if check in flagged:
                continue
            nodes = set(self.fleet.states) if not signals else {n for s in signals for n in answered[s]}
            if not nodes:
                continue  # no series: metrics.coverage says so, nothing is ruled out
            window = self.when(Span(self.grid.window_from, self.grid.size - 1))
            names = [m for name in signals or ("slurm_state",) for m in BY_NAME[name].metrics]
            self.emit(
                check,
                None,
                f"{text} {self.lasting} in the window ({window}; {len(nodes)} of {total} nodes with series)",
                {"nodes_with_series": len(nodes), "of": total, "series": names},
                threshold="the limits of the rule's concern (hyperpod-perf checks " + check + ")",
                next_step=None,
                severity=Severity.OK,
            )

    def slurm_state(self) -> None:
        for node, states in sorted(self.fleet.states.items()):
            bad = [False] * self.grid.size
            for i in self.grid.window_indices():
                state = (states[i] or "").lower()
                bad[i] = any(state.startswith(s) or s in state for s in SLURM_BAD_STATES)
            spans = flagged_spans(bad, self.grid.window_indices())
            if not spans:
                continue
            span = max(spans, key=lambda s: s.steps)
            state = states[span.first]
            self.emit(
                "metrics.slurm_state",
                node,
                f"Slurm had it {state} {self.during(span)}",
                {**self.span_evidence(span, "slurm_state"), "state": state},
                threshold="a Slurm state of down, drained, failing or not responding inside the window",
                next_step="`scontrol show node` gives Slurm's reason; a node drained mid-job stalls the job",
            )


#: What each rule looked at, and how its silence reads: one cluster-level OK per check whose series
#: answered and that flagged nothing, so "ruled out" can cite the window, not only a snapshot.
RULED_OUT: dict[str, tuple[tuple[str, ...], str]] = {
    "metrics.gpu_clock": (("sm_clock",), "no node's busy GPUs clocked below the fleet"),
    "metrics.gpu_thermal": (("gpu_temp",), "no node's GPUs at the temperature limit"),
    "metrics.gpu_idle": (
        ("gpu_util",),
        "no hang (every GPU idle at once) and no node idle while the fleet ran",
    ),
    "metrics.xid": (("xid",), "no new Xid in dcgm-exporter's gauge"),
    "metrics.pcie_replay": (("pcie_replay",), "no sustained PCIe replays"),
    "metrics.nvlink_errors": (("nvlink_errors",), "no NVLink error counter rising"),
    "metrics.efa_retransmits": (("efa_retrans",), "no node's EFA retransmits far above the fleet"),
    "metrics.efa_errors": (("efa_rx_drops", "efa_errors"), "no EFA timeouts, unresponsive remotes or drops"),
    "metrics.network_low": (("efa_bytes",), "no node moving far less EFA traffic than the fleet"),
    "metrics.iowait": (("iowait",), "no node (and not the fleet) waiting on I/O"),
    "metrics.io_pressure": (("io_pressure",), "no node (and not the fleet) under I/O pressure"),
}


def figure(value: float) -> str:
    """A rate as an operator reads it: 1,430 / 14.3 / 0.143."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def judge(fleet: FleetSeries, thresholds: Thresholds) -> Verdicts:
    """Every metrics rule over the fleet's series; findings in a stable order."""
    j = FleetJudge(fleet, thresholds)
    j.gpu_clock()
    j.gpu_thermal()
    j.gpu_idle()
    j.xid()
    j.counter_over(
        "metrics.pcie_replay", "pcie_replay", thresholds.metrics_pcie_replays_per_minute,
        "PCIe replays",
        "the GPU's PCIe link is retrying: reseat or replace (hand to the node debugger)",
    )  # fmt: skip
    j.counter_over(
        "metrics.nvlink_errors", "nvlink_errors", 0.0, "NVLink errors",
        "NVLink CRC / replay / recovery errors slow every all-reduce on this node: hand to the node debugger",
    )  # fmt: skip
    j.fleet_ratio(
        "metrics.efa_retransmits", "efa_retrans", "EFA retransmits",
        "this node's EFA path is losing packets: check its EFA counters (runbook § A) and its pairs",
    )  # fmt: skip
    j.fleet_ratio(
        "metrics.efa_errors", "efa_rx_drops", "EFA receive drops",
        "receive drops under load: the node cannot keep up (CPU, memory) or its link is degraded",
    )  # fmt: skip
    j.counter_over(
        "metrics.efa_errors", "efa_errors", 0.0, "EFA timeouts / unresponsive or impaired remotes",
        "the node's EFA sessions are timing out: check the remote nodes it names and the EFA counters",
    )  # fmt: skip
    j.network_low()
    j.host_io("metrics.iowait", "iowait", thresholds.metrics_iowait_pct, "CPU iowait")
    j.host_io("metrics.io_pressure", "io_pressure", thresholds.metrics_io_pressure_pct, "I/O pressure")
    j.slurm_state()
    j.ruled_out()
    return j.out
