"""The HTML report's figures: the NCCL pair heatmap and slowest pairs, the file systems' charts,
and the GPU tiles (temperature and SM clock per GPU, the fleet's distribution for large fleets).

Kept apart from the page (`report.html`), which lays out the sections and the text around them:
these are the sections drawn from figures, each a self-contained block of inline SVG. Every text
from a node or an API is escaped, as on the rest of the page.
"""

from __future__ import annotations

import re
from html import escape as e
from typing import Any

from hyperpod_perf.domain.report import Report
from hyperpod_perf.nccl.analysis import PairAnalysis, PairResult, Suspect
from hyperpod_perf.nccl.heatmap import render_heatmap_svg
from hyperpod_perf.report import svg
from hyperpod_perf.report.fsx_figures import lustre_charts
from hyperpod_perf.report.view import (
    SMALL_MULTIPLES_LIMIT,
    FsFigures,
    GpuNode,
    ReportView,
    describe_fs,
    gpu_absences,
    gpu_marks,
    gpu_nodes,
    gpu_outliers,
    nccl_pairs_sorted,
    nccl_stats,
)
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

#: Slowest NCCL pairs listed as text under the heatmap (its accessible alternative).
SLOWEST_PAIRS = 10


def heatmap_svg(nccl: dict[str, Any], thresholds: Thresholds = DEFAULT_THRESHOLDS) -> str | None:
    """The NCCL engineer's heatmap, rebuilt from the stored analysis dict; None when unavailable."""
    try:
        slow = {
            (p.get("a"), p.get("b")): bool(p.get("below_drain_level")) for p in nccl.get("slow_pairs", [])
        }
        pairs = [
            PairResult(
                a=p.get("a"),
                b=p.get("b"),
                busbw_gbps=float(p["busbw_gbps"]),
                runs=int(p.get("runs", 1)),
                sources=list(p.get("sources", [])),
                slow=(p.get("a"), p.get("b")) in slow,
                below_drain=slow.get((p.get("a"), p.get("b")), False),
            )
            for p in nccl.get("pairs", [])
        ]
        nodes = nccl.get("nodes") or sorted({n for p in pairs for n in (p.a, p.b) if n})
        suspects = [Suspect(**s) for s in nccl.get("suspects", [])]
        analysis = PairAnalysis(
            pairs=pairs,
            nodes=list(nodes),
            mean=nccl.get("mean"),
            median=nccl.get("median"),
            slow_threshold_gbps=nccl.get("slow_threshold_gbps"),
            drain_level_gbps=nccl.get("drain_level_gbps"),
            slow_pairs=[p for p in pairs if p.slow],
            suspects=suspects,
            missing_pairs=[],
            missing_count=int((nccl.get("missing_pairs") or {}).get("count", 0)),
            logs=[],
            findings=[],
        )
        raw = render_heatmap_svg(analysis, thresholds.nccl_pair_slow_pct, thresholds.nccl_drain_pct)
    except (KeyError, TypeError, ValueError):
        return None
    return re.sub(r"^<\?xml[^>]*>\s*", "", raw)


def nccl_section(report: Report, heatmap_shown: bool) -> str:
    nccl = report.nccl
    parts = ['<section id="nccl"><h2>NCCL pairwise bandwidth</h2>']
    if not nccl:
        parts.append("<p>No NCCL pairwise results in this run (see “Not checked”).</p></section>")
        return "".join(parts)
    pairs = nccl_pairs_sorted(nccl)
    parts.append(
        f"<p>{e(', '.join(nccl_stats(nccl, pairs)))} (bus bandwidth at the largest message sizes).</p>"
    )
    if heatmap_shown:
        parts.append('<p class="note">The pair heatmap is at the top, beside the node map.</p>')
    else:
        parts.append(
            '<p class="note" id="nccl-heatmap">The heatmap could not be drawn from this run\'s NCCL '
            "results; the slowest pairs are listed below.</p>"
        )
    suspects = nccl.get("suspects") or []
    if suspects:
        items = "".join(
            f"<li>⚠ <strong>{e(str(s.get('node')))}</strong>: in {e(str(s.get('slow_pairs')))} slow of "
            f"{e(str(s.get('pairs')))} pairs{' — drain candidate' if s.get('drain_candidate') else ''}</li>"
            for s in suspects
        )
        parts.append(f"<h3>Suspect nodes</h3><ul>{items}</ul>")
    if pairs:
        rows = "".join(
            f"<tr><td>{e(str(p.get('a')))}</td><td>{e(str(p.get('b')))}</td>"
            f'<td data-r="{float(p["busbw_gbps"]):.3f}">{float(p["busbw_gbps"]):.1f}</td>'
            f"<td>{e(str(p.get('runs', '')))}</td></tr>"
            for p in pairs[:SLOWEST_PAIRS]
        )
        parts.append(
            f"<h3>Slowest {min(len(pairs), SLOWEST_PAIRS)} pairs</h3>"
            "<div class='scroll'><table class='sortable'>"
            '<thead><tr><th scope="col">node a</th><th scope="col">node b</th><th scope="col">busbw GB/s</th>'
            f'<th scope="col">runs</th></tr></thead><tbody>{rows}</tbody></table></div>'
        )
    parts.append("</section>")
    return "".join(parts)


def _fs_chart(fig: FsFigures, view: ReportView) -> str:
    fs = fig.fs
    if fig.kind == "iops":
        chart = svg.line_chart(
            [(p.timestamp, p.value) for p in fs.iops_utilization_pct],
            title=f"{fs.file_system_id}: disk IOPS utilisation over the window",
            unit="% utilisation",
            refs=[svg.RefLine(view.thresholds.openzfs_iops_utilization_pct, f"{fig.level:g}% limit")],
            from_zero=True,  # a share: its height reads as the share it is
        )
    elif lustre := lustre_charts(fs, view.thresholds):
        return f'<p class="note">{e(describe_fs(fig))}</p>' + "".join(lustre)
    else:
        refs = []
        if fs.provisioned_mbps:
            refs.append(svg.RefLine(fs.provisioned_mbps, f"provisioned {fs.provisioned_mbps:,.0f}"))
            if fig.level:
                refs.append(
                    svg.RefLine(
                        fig.level,
                        f"{view.thresholds.fs_throughput_saturated_pct:g}% line",
                        svg.COLOR_WARN_REF,
                    )
                )
        chart = svg.line_chart(
            [(p.timestamp, p.value) for p in fs.throughput_mbps],
            title=f"{fs.file_system_id}: read+write throughput over the window",
            unit="MB/s",
            refs=refs,
            from_zero=True,  # a dip from 700 to 650 MB/s is 7 %, not half the plot
        )
    return f'<figure class="fs">{chart}<figcaption>{e(describe_fs(fig))}</figcaption></figure>'


def filesystems_section(view: ReportView) -> str:
    parts = ['<section id="fsx"><h2>File systems</h2>']
    if not view.filesystems:
        parts.append("<p>No FSx file system metrics in this run (see “Not checked”).</p>")
    for fig in view.filesystems:
        parts.append(f"<h3>{e(fig.fs.file_system_id)} ({e(fig.fs.type)})</h3>{_fs_chart(fig, view)}")
    parts.append("</section>")
    return "".join(parts)


def _tile(n: GpuNode, view: ReportView) -> str:
    t = view.thresholds
    gpus = n.row.summary.gpus if n.row.summary else []
    marks = gpu_marks(n.row)
    absent = gpu_absences(n.row)
    bars = [
        svg.GpuBar(
            g.index,
            g.temperature_c,
            (g.sm_clock_mhz / g.max_sm_clock_mhz)
            if g.sm_clock_mhz is not None and g.max_sm_clock_mhz
            else None,
            ", ".join(label for _, label in marks.get(g.index, [])),
            absent.get(g.index, ""),
        )
        for g in gpus
    ]
    listed = {g.index for g in gpus}
    bars += [  # the GPUs nvidia-smi no longer lists: a gap in the picture, not silence
        svg.GpuBar(index, None, None, ", ".join(label for _, label in marks.get(index, [])), why)
        for index, why in absent.items()
        if index not in listed
    ]
    bars.sort(key=lambda bar: bar.index)
    caption = [f"<strong>{e(n.row.label)}</strong>"]
    for index in sorted(marks):
        for f, label in marks[index]:
            caption.append(f"⚠ GPU {index}: {e(label)} (<code>{e(f.check)}</code>)")
    for index in sorted(absent):
        caption.append(f"✕ GPU {index}: {e(absent[index])}")
    if n.max_temperature is not None:
        hot = " ▲ hot" if n.max_temperature >= t.gpu_temperature_c else ""
        caption.append(f"max {n.max_temperature:g} °C{hot}")
    if n.min_clock_ratio is not None:
        low = " ▼ low" if n.min_clock_ratio < t.gpu_throttle_clock_ratio else ""
        caption.append(f"min SM clock {n.min_clock_ratio:.0%} of max{low}")
    tile = svg.gpu_tile(
        n.row.node, bars, temp_limit=t.gpu_temperature_c, clock_floor=t.gpu_throttle_clock_ratio
    )
    return f"<figure>{tile}<figcaption>{' · '.join(caption)}</figcaption></figure>"


def gpus_section(view: ReportView) -> str:
    t = view.thresholds
    nodes = gpu_nodes(view)
    parts = ['<section id="gpu"><h2>GPU temperature and SM clock per node</h2>']
    if not nodes:
        parts.append("<p>No GPU figures in this run.</p></section>")
        return "".join(parts)
    parts.append(
        f'<p class="note">Per GPU (numbered underneath): temperature on 0–100 °C (dashed line '
        f"{t.gpu_temperature_c:g} °C, ▲ at or above) and SM clock as a share of its maximum (dashed line "
        f"{t.gpu_throttle_clock_ratio:.0%}, ▼ below). A GPU a finding names is framed and marked ⚠.</p>"
    )
    shown = gpu_outliers(nodes)
    if len(shown) < len(nodes):
        temps = [n.max_temperature for n in nodes if n.max_temperature is not None]
        clocks = [round(n.min_clock_ratio * 100, 1) for n in nodes if n.min_clock_ratio is not None]
        parts.append(
            f"<p>{len(nodes)} nodes: the distribution across the fleet, then the {len(shown)} outliers "
            "(GPU concerns first, then hottest or slowest-clocked).</p><div class='tiles dist'>"
            + "<figure>"
            + svg.histogram(
                temps,
                title="Hottest GPU per node (°C)",
                unit="°C",
                ref=svg.RefLine(t.gpu_temperature_c, f"{t.gpu_temperature_c:g} °C"),
            )
            + "<figcaption>Hottest GPU per node</figcaption></figure><figure>"
            + svg.histogram(
                clocks,
                title="Lowest SM clock per node (% of max)",
                unit="% of max",
                ref=svg.RefLine(t.gpu_throttle_clock_ratio * 100, f"{t.gpu_throttle_clock_ratio:.0%}"),
            )
            + "<figcaption>Lowest SM clock per node</figcaption></figure></div><h3>Outliers</h3>"
        )
    flagged = [n for n in shown if gpu_marks(n.row) or n.gpu_concern]
    others = [n for n in shown if n not in flagged]
    if flagged:
        parts.append(f'<div class="tiles">{"".join(_tile(n, view) for n in flagged)}</div>')
    if others:
        what = "node(s) with no GPU named by a finding"
        if len(nodes) > SMALL_MULTIPLES_LIMIT:
            what = "more outlier(s): hottest or slowest-clocked, no GPU named by a finding"
        parts.append(
            f"<details><summary>{len(others)} {what}</summary>"
            f'<div class="tiles">{"".join(_tile(n, view) for n in others)}</div></details>'
        )
    parts.append("</section>")
    return "".join(parts)


def metrics_section(report: Report) -> str:
    """The metrics stage: what it read, who it suspects, and each finding's series against the
    fleet median (axes from zero: a dip is drawn at its true size)."""
    verdict = report.metrics
    parts = ['<section id="metrics"><h2>Metrics over the window</h2>']
    if not verdict:
        parts.append(
            "<p>No metrics source in this run (the cluster has no prometheusWorkspaceId).</p></section>"
        )
        return "".join(parts)
    window = verdict.get("window") or {}
    parts.append(
        f"<p>{e(str(verdict.get('source', '')))}: {e(str(window.get('start', '')))} to "
        f"{e(str(window.get('end', '')))} (baseline from {e(str(window.get('baseline_start', '')))}, "
        f"step {e(str(window.get('step_seconds', '')))} s): {e(str(verdict.get('nodes_seen', 0)))} node(s), "
        f"{e(str(verdict.get('series_read', 0)))} series, {e(str(verdict.get('queries', 0)))} queries.</p>"
    )
    if suspects := verdict.get("suspects"):
        parts.append(f"<p>Suspects: {', '.join(f'<code>{e(str(s))}</code>' for s in suspects)}</p>")
    if missing := verdict.get("exporters_missing"):
        parts.append("<p class='note'>Not covered: " + "; ".join(e(str(m)) for m in missing) + "</p>")
    charts = verdict.get("charts") or []
    if charts:  # folded like the node details: the page stays a few screens tall
        parts.append(
            f"<details><summary>{len(charts)} chart(s): each finding's series against the fleet</summary>"
        )
    for chart in charts:
        points = [
            (str(t), float(v))
            for t, v in zip(chart.get("times", []), chart.get("node_values", []), strict=False)
            if v is not None
        ]
        times = {str(t): i for i, t in enumerate(chart.get("times", []))}
        fleet = chart.get("fleet_median", [])
        companion = [fleet[times[t]] if times[t] < len(fleet) else None for t, _ in points]
        title = f"{chart.get('node')}: {chart.get('title')}"
        drawn = svg.line_chart(
            points, title=title, unit=str(chart.get("unit", "")), from_zero=True,
            companion=companion, companion_label="fleet median",
        )  # fmt: skip
        caption = (
            f"{chart.get('check')} on {chart.get('node')}: the node (solid) against the fleet median "
            f"(dashed); the alarm window starts at {str(chart.get('window_start', ''))[11:16]} UTC"
        )
        parts.append(f'<figure class="fs">{drawn}<figcaption>{e(caption)}</figcaption></figure>')
    if charts:
        parts.append("</details>")
    parts.append("</section>")
    return "".join(parts)
