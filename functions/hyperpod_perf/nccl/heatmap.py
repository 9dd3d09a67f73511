"""SVG heatmap of the pair matrix: plain markup, viewable without JavaScript.

Colour alone is not enough (colour-blind readers, black-and-white prints), so:
- detailed mode (up to DETAILED_MAX nodes): labelled rows/columns, one cell per pair with a
  tooltip (`<title>`), slow pairs hatched, pairs below the drain level cross-hatched, missing
  pairs grey with a dot pattern, suspect nodes' labels prefixed with "▲" and suffixed "(suspect)",
  their row and column outlined with a dashed line;
- compact mode (larger clusters, up to 512 nodes and beyond): no labels, one unit per cell, the
  lower-left triangle coloured by busbw and the upper-right triangle showing only the slow pairs in
  black (position, not colour, tells slow); runs of equal cells are merged into one path segment so
  512 nodes stay well under 2 MB; suspect rows/columns dashed and listed by name.
All text goes through `html.escape`.
"""

from __future__ import annotations

from html import escape

from hyperpod_perf.nccl.analysis import PairAnalysis

DETAILED_MAX = 64
_CELL = 16
_CELL_FEW = 24  # up to _FEW_NODES nodes, cells big enough to point at on a phone
_FEW_NODES = 16
_LABEL = 170
_LEGEND_W = 340  # the widest legend line ("▲ <host>: 15/15 slow, median ...") at 12 px
_COMPACT_SIZE = 1024
# Buckets of busbw relative to the run median, best first (ColorBrewer RdYlGn, colour-blind safer end).
_BUCKET_COLOURS = ("#1a9850", "#91cf60", "#fee08b", "#fc8d59", "#d73027")
_MISSING = "#d9d9d9"


def _bucket(value: float, median: float, slow_pct: float, drain_pct: float) -> int:
    ratio = value / median if median else 1.0
    if ratio >= 1 - slow_pct / 200:
        return 0
    if ratio >= 1 - slow_pct / 100:
        return 1
    if ratio >= 1 - 2 * slow_pct / 100:
        return 2
    if ratio >= 1 - drain_pct / 100:
        return 3
    return 4


def _defs() -> str:
    return (
        "<defs>"
        '<pattern id="slow" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        '<line x1="0" y1="0" x2="0" y2="4" stroke="#000" stroke-width="1.4"/></pattern>'
        '<pattern id="drain" width="4" height="4" patternUnits="userSpaceOnUse">'
        '<path d="M0 0L4 4M4 0L0 4" stroke="#000" stroke-width="1"/></pattern>'
        '<pattern id="missing" width="4" height="4" patternUnits="userSpaceOnUse">'
        '<circle cx="2" cy="2" r="0.8" fill="#555"/></pattern>'
        "</defs>"
    )


def _legend(x: int, y: int, analysis: PairAnalysis, slow_pct: float, drain_pct: float, compact: bool) -> str:
    labels = (
        f"within {slow_pct / 2:g}% of median",
        f"{slow_pct / 2:g}–{slow_pct:g}% below",
        f"{slow_pct:g}–{2 * slow_pct:g}% below",
        f"{2 * slow_pct:g}–{drain_pct:g}% below",
        f"more than {drain_pct:g}% below",
    )
    parts = [f'<g font-family="sans-serif" font-size="12" transform="translate({x},{y})">']
    for i, (colour, label) in enumerate(zip(_BUCKET_COLOURS, labels, strict=True)):
        parts.append(f'<rect x="0" y="{i * 18}" width="14" height="14" fill="{colour}"/>')
        parts.append(f'<text x="20" y="{i * 18 + 11}">{escape(label)}</text>')
    base = len(labels) * 18 + 8
    if compact:
        notes = [
            ("#000", "upper-right triangle: slow pair (black)"),
            (_MISSING, "not measured"),
        ]
        for i, (fill, label) in enumerate(notes):
            parts.append(f'<rect x="0" y="{base + i * 18}" width="14" height="14" fill="{fill}"/>')
            parts.append(f'<text x="20" y="{base + i * 18 + 11}">{escape(label)}</text>')
    else:
        notes = [("url(#slow)", "hatched: slow pair"), ("url(#drain)", "crossed: below drain level")]
        notes.append(("url(#missing)", "dotted grey: not measured"))
        for i, (fill, label) in enumerate(notes):
            parts.append(
                f'<rect x="0" y="{base + i * 18}" width="14" height="14" fill="#fff" stroke="#999"/>'
            )
            parts.append(f'<rect x="0" y="{base + i * 18}" width="14" height="14" fill="{fill}"/>')
            parts.append(f'<text x="20" y="{base + i * 18 + 11}">{escape(label)}</text>')
    y_next = base + 3 * 18 + 8
    parts.append(f'<text x="0" y="{y_next}" font-weight="bold">▲ suspect node (dashed row/column)</text>')
    for i, s in enumerate(analysis.suspects[:20]):
        parts.append(
            f'<text x="0" y="{y_next + 18 * (i + 1)}">▲ {escape(s.node)}: {s.slow_pairs}/{s.pairs} slow, '
            f"median {s.median_gbps:.1f} GB/s</text>"
        )
    if median := analysis.median:
        parts.append(
            f'<text x="0" y="{y_next + 18 * (min(len(analysis.suspects), 20) + 2)}">'
            f"median {median:.1f} GB/s, "
            f"mean {analysis.mean or 0:.1f} GB/s, {len(analysis.slow_pairs)} slow pairs</text>"
        )
    parts.append("</g>")
    return "".join(parts)


def _matrix(analysis: PairAnalysis) -> tuple[list[str], dict[tuple[int, int], tuple[float, bool, bool]]]:
    index = {n: i for i, n in enumerate(analysis.nodes)}
    cells: dict[tuple[int, int], tuple[float, bool, bool]] = {}
    for p in analysis.pairs:
        if p.a is None or p.b is None:
            continue
        i, j = index[p.a], index[p.b]
        if i < j:
            i, j = j, i
        cells[(i, j)] = (p.busbw_gbps, p.slow, p.below_drain)
    return analysis.nodes, cells


def render_heatmap_svg(analysis: PairAnalysis, slow_pct: float = 5.0, drain_pct: float = 20.0) -> str:
    """The pair matrix as a standalone SVG document (text)."""
    if len(analysis.nodes) <= DETAILED_MAX:
        return _detailed(analysis, slow_pct, drain_pct)
    return _compact(analysis, slow_pct, drain_pct)


def _detailed(analysis: PairAnalysis, slow_pct: float, drain_pct: float) -> str:
    nodes, cells = _matrix(analysis)
    n = len(nodes)
    suspects = analysis.suspect_nodes
    median = analysis.median or 0.0
    # Sized to what it holds: bigger cells for a few nodes, a label margin as wide as the longest
    # name, and a height that fits the legend (a fixed 420 px left most of a small map blank).
    size = _CELL_FEW if n <= _FEW_NODES else _CELL
    longest = max((len(x) + (11 if x in suspects else 0) for x in nodes), default=4)
    margin = min(_LABEL, int(longest * 6.6) + 14)
    grid = n * size
    legend_h = 8 * 18 + 16 + 18 * (min(len(analysis.suspects), 20) + 3)
    # The legend goes under the matrix, not beside it: the picture stays narrow enough to sit
    # beside the report's node map and to fill a phone's width without shrinking the cells.
    width = max(margin + grid + 10, _LEGEND_W)
    height = margin + grid + 24 + legend_h
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img">',
        "<title>NCCL pairwise busbw heatmap</title>",
        _defs(),
        f'<g font-family="sans-serif" font-size="11" transform="translate({margin},{margin})">',
    ]
    for i, node in enumerate(nodes):
        mark = node in suspects
        label = escape(f"▲ {node} (suspect)" if mark else node)
        weight = ' font-weight="bold"' if mark else ""
        y = i * size + size * 0.75
        out.append(f'<text x="-4" y="{y:g}" text-anchor="end"{weight}>{label}</text>')
        out.append(
            f'<text transform="translate({i * size + size * 0.75:g},-4) rotate(-90)"{weight}>{label}</text>'
        )
    for i in range(n):
        for j in range(n):
            x, y = j * size, i * size
            if i == j:
                out.append(
                    f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="#fff" stroke="#eee"/>'
                )
                continue
            cell = cells.get((max(i, j), min(i, j)))
            pair = escape(f"{nodes[min(i, j)]} – {nodes[max(i, j)]}")
            if cell is None:
                out.append(
                    f'<g><title>{pair}: not measured</title><rect x="{x}" y="{y}" width="{size}" '
                    f'height="{size}" fill="{_MISSING}"/><rect x="{x}" y="{y}" width="{size}" '
                    f'height="{size}" fill="url(#missing)"/></g>'
                )
                continue
            value, slow, drain = cell
            colour = _BUCKET_COLOURS[_bucket(value, median, slow_pct, drain_pct)]
            status = " — below drain level" if drain else (" — slow" if slow else "")
            overlay = ""
            if drain:
                overlay = (
                    f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="url(#drain)" class="drain"/>'
                )
            elif slow:
                overlay = (
                    f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="url(#slow)" class="slow"/>'
                )
            out.append(
                f"<g><title>{pair}: {value:.1f} GB/s{status}</title>"
                f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="{colour}"/>{overlay}</g>'
            )
    out.extend(_suspect_outlines(nodes, suspects, size, 1.5))
    out.append("</g>")
    out.append(_legend(8, margin + grid + 24, analysis, slow_pct, drain_pct, compact=False))
    out.append("</svg>")
    return "\n".join(out)


def _suspect_outlines(nodes: list[str], suspects: set[str], cell: float, stroke: float) -> list[str]:
    n = len(nodes)
    out = []
    for i, node in enumerate(nodes):
        if node in suspects:
            out.append(
                f'<rect class="suspect" x="0" y="{i * cell:g}" width="{n * cell:g}" height="{cell:g}" '
                'fill="none" '
                f'stroke="#000" stroke-width="{stroke:g}" stroke-dasharray="{3 * stroke:g} {2 * stroke:g}">'
                f"<title>suspect: {escape(node)}</title></rect>"
            )
            out.append(
                f'<rect class="suspect" x="{i * cell:g}" y="0" width="{cell:g}" height="{n * cell:g}" '
                'fill="none" '
                f'stroke="#000" stroke-width="{stroke:g}" stroke-dasharray="{3 * stroke:g} {2 * stroke:g}"/>'
            )
    return out


def _compact(analysis: PairAnalysis, slow_pct: float, drain_pct: float) -> str:
    nodes, cells = _matrix(analysis)
    n = len(nodes)
    median = analysis.median or 0.0
    scale = _COMPACT_SIZE / n
    # One path per colour bucket: horizontal runs in the lower triangle ("M x y h len").
    runs: dict[str, list[str]] = {c: [] for c in (*_BUCKET_COLOURS, _MISSING, "#000")}
    for i in range(1, n):
        current: str | None = None
        start = 0
        for j in range(i + 1):
            if j < i:
                cell = cells.get((i, j))
                colour = (
                    _MISSING
                    if cell is None
                    else _BUCKET_COLOURS[_bucket(cell[0], median, slow_pct, drain_pct)]
                )
            else:
                colour = None  # diagonal ends the row
            if colour != current:
                if current is not None:
                    runs[current].append(f"M{start} {i}h{j - start}")
                current, start = colour, j
    # Upper-right triangle: slow pairs in black, at (row=min, col=max).
    slow_cells = sorted((j, i) for (i, j), (_, slow, _) in cells.items() if slow)
    row, run_start, prev = -1, -1, -2
    for r, c in slow_cells:
        if r == row and c == prev + 1:
            prev = c
            continue
        if row >= 0:
            runs["#000"].append(f"M{run_start} {row}h{prev - run_start + 1}")
        row, run_start, prev = r, c, c
    if row >= 0:
        runs["#000"].append(f"M{run_start} {row}h{prev - run_start + 1}")

    size = _COMPACT_SIZE
    width, height = size + 420, max(size + 60, 500)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img">',
        f"<title>NCCL pairwise busbw heatmap ({n} nodes)</title>",
        '<text x="20" y="20" font-family="sans-serif" font-size="13">'
        f"{n} nodes (sorted by name); lower-left: busbw; "
        "upper-right: slow pairs</text>",
        f'<g transform="translate(20,40) scale({scale:.6g})">',
        f'<rect x="0" y="0" width="{n}" height="{n}" fill="#fff" stroke="#999" '
        f'stroke-width="{1 / scale:.4g}"/>',
    ]
    for colour, segments in runs.items():
        if segments:
            # Stroke the run along the row's centre line, one unit thick.
            out.append(
                f'<path transform="translate(0,0.5)" stroke="{colour}" stroke-width="1" fill="none" '
                f'd="{"".join(segments)}"/>'
            )
    out.extend(_suspect_outlines(nodes, analysis.suspect_nodes, 1, max(1.0, 2 / scale)))
    out.append("</g>")
    out.append(_legend(size + 40, 40, analysis, slow_pct, drain_pct, compact=True))
    out.append("</svg>")
    return "\n".join(out)
