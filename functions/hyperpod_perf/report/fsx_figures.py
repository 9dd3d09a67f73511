"""The FSx for Lustre figure: what the fs.* checks judge, each as a share of its limit, from zero.

Three small charts per Lustre file system, each the quantity one check holds against its line:
read+write throughput as a % of provisioned (fs.throughput), metadata operations as a % of what the
Metadata IOPS support (fs.metadata), the busiest OST as a % of its share of provisioned (fs.ost_hot).
Every chart is a share, so its axis starts at zero: a line at 35 % looks like a third of the way up.
The captions say the same in words (and Markdown, which has no pictures, prints only them).
"""

from __future__ import annotations

import statistics
from html import escape as e

from hyperpod_perf.domain.report import FileSystemSummary, MetricPoint
from hyperpod_perf.report import svg
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds


def _share(points: list[MetricPoint], limit: float | None) -> list[tuple[str, float]]:
    if not limit:
        return []
    return [(p.timestamp, 100.0 * p.value / limit) for p in points]


def _sentence(what: str, shares: list[tuple[str, float]], level: float) -> str:
    values = [v for _, v in shares]
    above = sum(v >= level for v in values) / len(values)
    return (
        f"{what}: peak {max(values):.0f}%, mean {statistics.fmean(values):.0f}%; "
        f"{above:.0%} of the window at or above {level:g}%"
    )


def _metadata_what(fs: FileSystemSummary) -> str:
    return f"metadata operations of {fs.metadata_ops_ceiling:,.0f} file opens/s supported"


def _hottest_what(fs: FileSystemSummary) -> str:
    osts = f" ({fs.ost_count} OSTs)" if fs.ost_count else ""
    return f"busiest OST of its share of provisioned{osts}"


def lustre_sentences(fs: FileSystemSummary, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[str]:
    """Metadata, busiest OST and fullest OST in words (throughput is `view.describe_fs`'s)."""
    out = []
    metadata = _share(fs.metadata_ops_per_s, fs.metadata_ops_ceiling)
    if metadata:
        out.append(_sentence(_metadata_what(fs), metadata, thresholds.fs_metadata_saturated_pct))
    elif fs.metadata_ops_per_s:
        peak = max(p.value for p in fs.metadata_ops_per_s)
        out.append(f"metadata operations: peak {peak:,.0f}/s (no Metadata IOPS published to compare with)")
    hottest = [(p.timestamp, p.value) for p in fs.hottest_ost_pct]
    if hottest:
        out.append(_sentence(_hottest_what(fs), hottest, thresholds.fs_throughput_saturated_pct))
    if fs.fullest_ost_used_pct is not None:
        limit = thresholds.lustre_ost_used_pct
        out.append(f"fullest OST {fs.fullest_ost_used_pct:.0f}% used (limit {limit:g}%)")
    return out


def _chart(points: list[tuple[str, float]], title: str, level: float) -> str:
    return svg.line_chart(
        points,
        title=title,
        unit="% of the limit",
        refs=[svg.RefLine(100.0, "limit 100%"), svg.RefLine(level, f"{level:g}% line", svg.COLOR_WARN_REF)],
        from_zero=True,
    )


def lustre_charts(fs: FileSystemSummary, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[str]:
    """The Lustre charts (inline SVG figures with captions); [] when there is no share to draw."""
    fs_id = fs.file_system_id
    throughput_level = thresholds.fs_throughput_saturated_pct
    metadata_level = thresholds.fs_metadata_saturated_pct
    rows = [
        (
            _share(fs.throughput_mbps, fs.provisioned_mbps),
            f"{fs_id}: read+write throughput, % of {fs.provisioned_mbps or 0:,.0f} MB/s provisioned",
            "throughput of provisioned",
            throughput_level,
        ),
        (
            _share(fs.metadata_ops_per_s, fs.metadata_ops_ceiling),
            f"{fs_id}: metadata operations, % of {fs.metadata_ops_ceiling or 0:,.0f} file opens/s supported",
            _metadata_what(fs) if fs.metadata_ops_ceiling else "",
            metadata_level,
        ),
        (
            [(p.timestamp, p.value) for p in fs.hottest_ost_pct],
            f"{fs_id}: busiest OST, % of its share of provisioned",
            _hottest_what(fs),
            throughput_level,
        ),
    ]
    return [
        f'<figure class="fs">{_chart(points, title, level)}'
        f"<figcaption>{e(_sentence(what, points, level))}</figcaption></figure>"
        for points, title, what, level in rows
        if points
    ]
