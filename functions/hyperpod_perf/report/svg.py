"""Small inline-SVG charts for the HTML report, generated here rather than by a plotting library.

Why hand-made: the report renders inside Lambda, where matplotlib would add ~40 MB to the
package and seconds to a cold start, and its SVG output is large. These charts need only lines,
bars and labels. Every text is escaped; every chart carries a <title> and an aria-label, and
reference lines are dashed *and* labelled, so colour is never the only signal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

#: Palette shared with the page CSS (ok / info / concern / series / reference).
COLOR_SERIES = "#1f5fa8"
COLOR_REF = "#b3261e"
COLOR_WARN_REF = "#8a5a00"
COLOR_OK = "#2e7d32"
COLOR_CONCERN = "#b3261e"
COLOR_MUTED = "#6b6b6b"


def _n(value: float) -> str:
    """Compact coordinates keep 1,000-node reports small."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class RefLine:
    value: float
    label: str
    color: str = COLOR_REF


def _open(width: int, height: int, label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(label)}" class="chart"><title>{escape(label)}</title>'
    )


def line_chart(
    points: Sequence[tuple[str, float]],
    *,
    title: str,
    unit: str,
    refs: Sequence[RefLine] = (),
    width: int = 640,
    height: int = 220,
) -> str:
    """One series over time with labelled horizontal reference lines (provisioned, 80 %, ...)."""
    left, right, top, bottom = 56, 150, 14, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [v for _, v in points]
    y_max = max([*values, *(r.value for r in refs), 1e-9]) * 1.1

    def x(i: int) -> float:
        return left + (plot_w * i / max(len(points) - 1, 1))

    def y(v: float) -> float:
        return top + plot_h * (1 - v / y_max)

    parts = [_open(width, height, title)]
    parts.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#ccc"/>')
    for frac in (0.0, 0.5, 1.0):
        value = y_max / 1.1 * frac
        parts.append(
            f'<text x="{left - 6}" y="{_n(y(value) + 4)}" text-anchor="end" font-size="11">'
            f"{escape(f'{value:,.0f}')}</text>"
        )
    parts.append(
        f'<text x="12" y="{top + plot_h / 2:.0f}" font-size="11" '
        f'transform="rotate(-90 12 {top + plot_h / 2:.0f})" '
        f'text-anchor="middle">{escape(unit)}</text>'
    )
    for ref in refs:
        ry = _n(y(ref.value))
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{ry}" y2="{ry}" stroke="{ref.color}" '
            f'stroke-width="1.5" stroke-dasharray="6 4"/>'
            f'<text x="{left + plot_w + 6}" y="{_n(y(ref.value) + 4)}" font-size="11" fill="{ref.color}">'
            f"{escape(ref.label)}</text>"
        )
    if points:
        coords = " ".join(f"{_n(x(i))},{_n(y(v))}" for i, (_, v) in enumerate(points))
        parts.append(f'<polyline points="{coords}" fill="none" stroke="{COLOR_SERIES}" stroke-width="2"/>')
        peak_i = max(range(len(values)), key=values.__getitem__)
        parts.append(
            f'<circle cx="{_n(x(peak_i))}" cy="{_n(y(values[peak_i]))}" r="3.5" fill="{COLOR_SERIES}"/>'
            f'<text x="{_n(x(peak_i))}" y="{_n(max(y(values[peak_i]) - 7, top + 10))}" font-size="11" '
            f'text-anchor="middle">peak {escape(f"{values[peak_i]:,.0f}")}</text>'
        )
        for i, anchor in ((0, "start"), (len(points) - 1, "end")):
            parts.append(
                f'<text x="{_n(x(i))}" y="{height - 8}" font-size="11" text-anchor="{anchor}">'
                f"{escape(short_time(points[i][0]))}</text>"
            )
    else:
        parts.append(
            f'<text x="{left + plot_w / 2:.0f}" y="{top + plot_h / 2:.0f}" text-anchor="middle" '
            f'font-size="13">no data points in the window</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def short_time(timestamp: str) -> str:
    """`2026-11-30T12:05:00Z` -> `11-30 12:05` (the window is hours, the date still matters)."""
    if len(timestamp) >= 16 and timestamp[10] in "T ":
        return f"{timestamp[5:10]} {timestamp[11:16]}"
    return timestamp


@dataclass(frozen=True)
class GpuBar:
    index: int
    temperature_c: float | None
    clock_ratio: float | None  # SM clock / max SM clock


def gpu_tile(node: str, bars: Sequence[GpuBar], *, temp_limit: float, clock_floor: float) -> str:
    """Per-GPU temperature and SM-clock bars for one node; bars past a limit are marked ▲/▼."""
    n = max(len(bars), 1)
    width, height = 200, 96
    bar_w = (width - 20) / n
    row_h = 30
    parts = [_open(width, height, f"{node}: GPU temperature and SM clock per GPU")]
    for row, (label, y0) in enumerate((("temp °C", 14), ("SM clock", 58))):
        parts.append(f'<text x="2" y="{y0 - 3}" font-size="10" fill="{COLOR_MUTED}">{label}</text>')
        parts.append(f'<line x1="10" x2="{width - 10}" y1="{y0 + row_h}" y2="{y0 + row_h}" stroke="#bbb"/>')
        limit_frac = temp_limit / 100 if row == 0 else clock_floor
        ly = _n(y0 + row_h * (1 - limit_frac))
        parts.append(
            f'<line x1="10" x2="{width - 10}" y1="{ly}" y2="{ly}" stroke="{COLOR_REF}" '
            'stroke-dasharray="3 2"/>'
        )
    for i, bar in enumerate(bars):
        bx = 10 + i * bar_w + 1
        for value, frac, y0, bad, mark in (
            (
                bar.temperature_c,
                None if bar.temperature_c is None else min(bar.temperature_c / 100, 1.0),
                14,
                bar.temperature_c is not None and bar.temperature_c >= temp_limit,
                "▲",
            ),
            (
                bar.clock_ratio,
                None if bar.clock_ratio is None else min(bar.clock_ratio, 1.0),
                58,
                bar.clock_ratio is not None and bar.clock_ratio < clock_floor,
                "▼",
            ),
        ):
            if value is None or frac is None:
                parts.append(f'<text x="{_n(bx)}" y="{y0 + row_h - 2}" font-size="9">?</text>')
                continue
            h = row_h * frac
            color = COLOR_CONCERN if bad else COLOR_SERIES
            parts.append(
                f'<rect x="{_n(bx)}" y="{_n(y0 + row_h - h)}" width="{_n(bar_w - 2)}" height="{_n(h)}" '
                f'fill="{color}"/>'
            )
            if bad:
                parts.append(
                    f'<text x="{_n(bx + (bar_w - 2) / 2)}" y="{_n(y0 + row_h - h - 1)}" font-size="9" '
                    f'text-anchor="middle" fill="{COLOR_CONCERN}">{mark}</text>'
                )
    parts.append("</svg>")
    return "".join(parts)


def histogram(
    values: Sequence[float],
    *,
    title: str,
    unit: str,
    bins: int = 20,
    ref: RefLine | None = None,
    width: int = 360,
    height: int = 150,
) -> str:
    """Distribution of one per-node figure across the fleet, with a labelled limit line."""
    left, right, top, bottom = 36, 10, 12, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    parts = [_open(width, height, title)]
    if not values:
        parts.append(
            f'<text x="{width / 2:.0f}" y="{height / 2:.0f}" text-anchor="middle">no data</text></svg>'
        )
        return "".join(parts)
    lo = min([*values, *([ref.value] if ref else [])])
    hi = max([*values, *([ref.value] if ref else [])])
    span = (hi - lo) or 1.0
    counts = [0] * bins
    for v in values:
        counts[min(int((v - lo) / span * bins), bins - 1)] += 1
    peak = max(counts)
    bw = plot_w / bins
    for i, c in enumerate(counts):
        if not c:
            continue
        h = plot_h * c / peak
        parts.append(
            f'<rect x="{_n(left + i * bw + 0.5)}" y="{_n(top + plot_h - h)}" width="{_n(bw - 1)}" '
            f'height="{_n(h)}" fill="{COLOR_SERIES}"><title>{c} node(s)</title></rect>'
        )
    parts.append(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#999"/>'
        f'<text x="{left - 4}" y="{top + 10}" font-size="10" text-anchor="end">{peak}</text>'
        f'<text x="{left}" y="{height - 16}" font-size="10">{escape(f"{lo:g}")}</text>'
        f'<text x="{left + plot_w}" y="{height - 16}" font-size="10" text-anchor="end">'
        f"{escape(f'{hi:g}')}</text>"
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 3}" font-size="10" text-anchor="middle">'
        f"{escape(unit)} (nodes per bin)</text>"
    )
    if ref is not None:
        rx = _n(left + plot_w * (ref.value - lo) / span)
        parts.append(
            f'<line x1="{rx}" x2="{rx}" y1="{top}" y2="{top + plot_h}" stroke="{ref.color}" '
            'stroke-dasharray="4 3"/>'
            f'<text x="{rx}" y="{top + 8}" font-size="10" fill="{ref.color}" text-anchor="end">'
            f"{escape(ref.label)} </text>"
        )
    parts.append("</svg>")
    return "".join(parts)
