"""Small inline-SVG charts for the HTML report, generated here rather than by a plotting library.

Why hand-made: the report renders inside Lambda, where matplotlib would add ~40 MB to the
package and seconds to a cold start, and its SVG output is large. These charts need only lines,
bars and labels. Every text is escaped; every chart carries a <title> and an aria-label, and
reference lines are dashed *and* labelled, so colour is never the only signal.
"""

from __future__ import annotations

import math
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


#: Average glyph advance as a share of the font size (system sans-serif, digits and Latin text).
#: Used to keep labels apart before the browser lays them out; the browser test measures the truth.
GLYPH_WIDTH = 0.62


def text_width(text: str, font_size: float) -> float:
    return len(text) * font_size * GLYPH_WIDTH


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round axis ticks (1, 2, 2.5, 5 x 10^k) covering lo..hi, as a person would draw them."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(lo / step) * step
    ticks = [first]
    while ticks[-1] < hi - 1e-9:
        ticks.append(ticks[-1] + step)
    return [round(t, 6) for t in ticks]


def value_axis(values: Sequence[float], refs: Sequence[float], *, from_zero: bool = False) -> list[float]:
    """Ticks for a value axis that shows the data *and* every reference line legibly.

    Starts at 0 only when the data come near it; otherwise the axis is zoomed to the data and the
    lines, so a series running at 95 % of provisioned is not squeezed into the top 5 % of the plot.
    A share (a % of a limit) is drawn `from_zero`, so its height reads as the share it is.
    """
    every = [*values, *refs]
    if not every:
        return [0.0, 1.0]
    lo, hi = min(every), max(every)
    pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
    lo, hi = lo - pad, hi + pad
    if from_zero or lo <= 0.25 * hi or min(every) >= 0 > lo:
        lo = 0.0
    return nice_ticks(lo, hi)


def spread_labels(positions: Sequence[float], gap: float, low: float, high: float) -> list[float]:
    """Move label baselines apart by at least `gap`, keeping their order and the range low..high."""
    order = sorted(range(len(positions)), key=lambda i: positions[i])
    placed = [0.0] * len(positions)
    previous = low - gap
    for i in order:
        placed[i] = max(positions[i], previous + gap)
        previous = placed[i]
    overflow = previous - high
    if overflow > 0:  # pushed past the bottom: shift the packed run back up
        for i in order:
            placed[i] -= overflow
        for k in range(1, len(order)):  # keep the gap if the top clamp squeezed it
            placed[order[k]] = max(placed[order[k]], placed[order[k - 1]] + gap)
    return placed


def line_chart(
    points: Sequence[tuple[str, float]],
    *,
    title: str,
    unit: str,
    refs: Sequence[RefLine] = (),
    width: int = 500,
    height: int = 260,
    from_zero: bool = True,
    companion: Sequence[float | None] | None = None,
    companion_label: str = "",
) -> str:
    """One series over time with labelled horizontal reference lines (provisioned, 90 %, ...).

    `companion`, aligned with `points` (None: no value at that step), is drawn dashed and muted with
    its label in the right margin: the fleet median beside one node's series.

    The value axis starts at zero: every chart of the report is a share of a limit or a
    throughput, and an axis from 600 MB/s made a 5 % dip look like a collapse (issue 23);
    `from_zero=False` zooms it to the data and the lines (see `value_axis`). The peak is marked and
    labelled inside the plot, and the reference labels sit in the right margin, spread so no two
    overlap. Drawn at its natural size on a desktop; on a phone it shrinks by at most ~30 %.
    """
    font = 13  # drawn at >= 9.7 px when a 390 px phone shrinks the chart to ~375 px
    left, right, top, bottom = 52, 140, 26, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [v for _, v in points]
    others = [v for v in (companion or ()) if v is not None]
    ticks = value_axis(values + others, [r.value for r in refs], from_zero=from_zero)
    y_lo, y_hi = ticks[0], ticks[-1]

    def x(i: int) -> float:
        return left + (plot_w * i / max(len(points) - 1, 1))

    def y(v: float) -> float:
        return top + plot_h * (1 - (v - y_lo) / ((y_hi - y_lo) or 1.0))

    parts = [_open(width, height, title)]
    parts.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#ccc"/>')
    for tick in ticks:
        ty = _n(y(tick))
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{ty}" y2="{ty}" stroke="#eee"/>'
            f'<text x="{left - 6}" y="{_n(y(tick) + font / 3)}" text-anchor="end" font-size="{font}">'
            f"{escape(f'{tick:,.0f}' if step_is_whole(ticks) else f'{tick:,.1f}')}</text>"
        )
    # The unit sits above the value axis, level with the plot's top edge: a rotated label beside
    # the ticks collided with 5-character tick labels ("1,000").
    parts.append(
        f'<text x="{left}" y="{top - 6}" font-size="{font}" fill="{COLOR_MUTED}">{escape(unit)}</text>'
    )
    label_y = spread_labels([y(r.value) + font / 3 for r in refs], font + 2, top + font, height - 4)
    for ref, ly in zip(refs, label_y, strict=True):
        ry = _n(y(ref.value))
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{ry}" y2="{ry}" stroke="{ref.color}" '
            f'stroke-width="1.5" stroke-dasharray="6 4"/>'
            f'<text x="{left + plot_w + 6}" y="{_n(ly)}" font-size="{font}" fill="{ref.color}">'
            f"{escape(ref.label)}</text>"
        )
    if companion and others:
        runs: list[list[str]] = [[]]
        for i, v in enumerate(companion[: len(points)]):
            if v is None:
                runs.append([])
            else:
                runs[-1].append(f"{_n(x(i))},{_n(y(v))}")
        for run in (r for r in runs if r):
            parts.append(
                f'<polyline points="{" ".join(run)}" fill="none" stroke="{COLOR_MUTED}" '
                'stroke-width="1.4" stroke-dasharray="4 3"/>'
            )
        last = next(v for v in reversed(companion[: len(points)]) if v is not None)
        parts.append(
            f'<text x="{left + plot_w + 6}" y="{_n(y(last) + font / 3)}" font-size="{font}" '
            f'fill="{COLOR_MUTED}">{escape(companion_label)}</text>'
        )
    if points:
        coords = " ".join(f"{_n(x(i))},{_n(y(v))}" for i, (_, v) in enumerate(points))
        parts.append(f'<polyline points="{coords}" fill="none" stroke="{COLOR_SERIES}" stroke-width="1.6"/>')
        peak_i = max(range(len(values)), key=values.__getitem__)
        px, py = x(peak_i), y(values[peak_i])
        label = f"peak {values[peak_i]:,.0f}"
        half = text_width(label, font) / 2
        anchor, lx = "middle", px
        if px - half < left + 2:
            anchor, lx = "start", left + 2
        elif px + half > left + plot_w - 2:
            anchor, lx = "end", left + plot_w - 2
        ly = py - 8 if py - 8 - font >= top else py + font + 6
        parts.append(
            f'<circle cx="{_n(px)}" cy="{_n(py)}" r="3.5" fill="{COLOR_SERIES}"/>'
            f'<text x="{_n(lx)}" y="{_n(ly)}" font-size="{font}" text-anchor="{anchor}" '
            f'font-weight="600" paint-order="stroke" stroke="#fff" stroke-width="3">'
            f"{escape(label)}</text>"
        )
        marks = [(0, "start"), (len(points) - 1, "end")]
        if len(points) > 2:
            marks.insert(1, ((len(points) - 1) // 2, "middle"))
        for i, anchor in marks:
            parts.append(
                f'<text x="{_n(x(i))}" y="{height - 12}" font-size="{font}" text-anchor="{anchor}">'
                f"{escape(short_time(points[i][0]))}</text>"
            )
    else:
        parts.append(
            f'<text x="{left + plot_w / 2:.0f}" y="{top + plot_h / 2:.0f}" text-anchor="middle" '
            f'font-size="13">no data points in the window</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def step_is_whole(ticks: Sequence[float]) -> bool:
    return all(float(t).is_integer() for t in ticks)


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
    mark: str = ""  # why this GPU is named by a finding (`PCIe x8`, `Xid 79`); "" when none
    #: why the GPU is drawn as missing (off the bus, not listed), its figures not drawn; "" when not
    missing: str = ""


def gpu_tile(node: str, bars: Sequence[GpuBar], *, temp_limit: float, clock_floor: float) -> str:
    """Per-GPU temperature and SM-clock bars for one node, each GPU numbered underneath.

    A GPU a finding names (the x8 PCIe link, the Xid 79) is framed with a dashed outline and marked
    ⚠ under its number, so the picture says *which* GPU is behind the concern; bars past a limit
    are marked ▲ (hot) / ▼ (slow clock). A GPU that is `missing` (fell off the bus, or no longer
    listed by nvidia-smi) has no bars: an empty dashed slot with ✕ in each row, so the picture
    never shows it at a normal temperature and full clock. Shape and text carry every signal,
    colour only repeats it.
    """
    n = max(len(bars), 1)
    width, height = 240, 128
    x0, x1 = 44, width - 4
    bar_w = (x1 - x0) / n
    row_h = 30
    rows = (("temp", 10), ("clock", 50))
    parts = [_open(width, height, f"{node}: GPU temperature and SM clock per GPU")]
    for label, y0 in rows:
        parts.append(f'<text x="2" y="{y0 + row_h - 10}" font-size="11" fill="{COLOR_MUTED}">{label}</text>')
        parts.append(f'<line x1="{x0}" x2="{x1}" y1="{y0 + row_h}" y2="{y0 + row_h}" stroke="#bbb"/>')
    for row, (_, y0) in enumerate(rows):
        limit_frac = temp_limit / 100 if row == 0 else clock_floor
        ly = _n(y0 + row_h * (1 - limit_frac))
        parts.append(
            f'<line x1="{x0}" x2="{x1}" y1="{ly}" y2="{ly}" stroke="{COLOR_REF}" stroke-dasharray="3 2"/>'
        )
    parts.append(f'<text x="2" y="{height - 26}" font-size="11" fill="{COLOR_MUTED}">GPU</text>')
    for i, bar in enumerate(bars):
        bx = x0 + i * bar_w + 1
        cx = _n(bx + (bar_w - 2) / 2)
        if bar.mark:
            parts.append(
                f'<rect x="{_n(bx - 1)}" y="2" width="{_n(bar_w)}" height="{height - 20}" fill="#fde2e1" '
                f'stroke="{COLOR_CONCERN}" stroke-width="1.5" stroke-dasharray="4 2">'
                f"<title>GPU {bar.index}: {escape(bar.mark)}</title></rect>"
            )
        if bar.missing:
            for _, y0 in rows:
                parts.append(
                    f'<rect x="{_n(bx)}" y="{y0}" width="{_n(bar_w - 2)}" height="{row_h}" fill="none" '
                    f'stroke="{COLOR_CONCERN}" stroke-dasharray="2 2"><title>GPU {bar.index}: '
                    f"{escape(bar.missing)}</title></rect>"
                    f'<text x="{cx}" y="{y0 + row_h - 10}" font-size="11" text-anchor="middle" '
                    f'fill="{COLOR_CONCERN}">✕</text>'
                )
        for value, frac, y0, bad, sign in (
            ()
            if bar.missing
            else (
                (
                    bar.temperature_c,
                    None if bar.temperature_c is None else min(bar.temperature_c / 100, 1.0),
                    rows[0][1],
                    bar.temperature_c is not None and bar.temperature_c >= temp_limit,
                    "▲",
                ),
                (
                    bar.clock_ratio,
                    None if bar.clock_ratio is None else min(bar.clock_ratio, 1.0),
                    rows[1][1],
                    bar.clock_ratio is not None and bar.clock_ratio < clock_floor,
                    "▼",
                ),
            )
        ):
            if value is None or frac is None:
                parts.append(
                    f'<text x="{cx}" y="{y0 + row_h - 2}" font-size="10" text-anchor="middle">?</text>'
                )
                continue
            h = row_h * frac
            color = COLOR_CONCERN if bad else COLOR_SERIES
            parts.append(
                f'<rect x="{_n(bx)}" y="{_n(y0 + row_h - h)}" width="{_n(bar_w - 2)}" height="{_n(h)}" '
                f'fill="{color}"/>'
            )
            if bad:
                parts.append(
                    f'<text x="{cx}" y="{_n(y0 + row_h - h - 1)}" font-size="9" '
                    f'text-anchor="middle" fill="{COLOR_CONCERN}">{sign}</text>'
                )
        weight = ' font-weight="700"' if bar.mark or bar.missing else ""
        parts.append(
            f'<text x="{cx}" y="{height - 26}" font-size="11" text-anchor="middle"{weight}>{bar.index}</text>'
        )
        if bar.mark or bar.missing:
            parts.append(
                f'<text x="{cx}" y="{height - 10}" font-size="11" text-anchor="middle" '
                f'fill="{COLOR_CONCERN}">{"✕" if bar.missing else "⚠"}</text>'
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
    height: int = 160,
) -> str:
    """Distribution of one per-node figure across the fleet, with a labelled limit line.

    The limit's label sits above the plot and the count scale left of it, so neither can cover
    the other whatever the data (the 64-node histogram once printed "64" over "50%").
    """
    font = 11
    left, right, top, bottom = 36, 10, 24, 32
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
        f'<text x="{left - 4}" y="{top + font}" font-size="{font}" text-anchor="end">{peak}</text>'
        f'<text x="{left - 4}" y="{top + plot_h}" font-size="{font}" text-anchor="end">0</text>'
        f'<text x="{left}" y="{height - 18}" font-size="{font}">{escape(f"{lo:g}")}</text>'
        f'<text x="{left + plot_w}" y="{height - 18}" font-size="{font}" text-anchor="end">'
        f"{escape(f'{hi:g}')}</text>"
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 4}" font-size="{font}" text-anchor="middle">'
        f"{escape(unit)} (nodes per bin)</text>"
    )
    if ref is not None:
        rx = left + plot_w * (ref.value - lo) / span
        label = f"limit {ref.label}"
        half = text_width(label, font) / 2
        lx = min(max(rx, half + 1), width - half - 1)
        parts.append(
            f'<line x1="{_n(rx)}" x2="{_n(rx)}" y1="{top - 4}" y2="{top + plot_h}" stroke="{ref.color}" '
            'stroke-dasharray="4 3"/>'
            f'<text x="{_n(lx)}" y="{top - 8}" font-size="{font}" fill="{ref.color}" text-anchor="middle">'
            f"{escape(label)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
