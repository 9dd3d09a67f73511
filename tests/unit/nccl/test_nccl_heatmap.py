"""The SVG heatmap: well-formed XML, marks that are not only colour, bounded size."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET
from itertools import combinations

from nccl_synth import synthetic_matrix

from hyperpod_perf.nccl.analysis import PairMeasurement, analyze_measurements
from hyperpod_perf.nccl.heatmap import render_heatmap_svg

NS = "{http://www.w3.org/2000/svg}"


def test_detailed_heatmap_marks_slow_pairs_and_the_suspect():
    nodes, measurements = synthetic_matrix(8, [3], noise=0.01)
    analysis = analyze_measurements(measurements)
    svg = render_heatmap_svg(analysis)
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    texts = ["".join(t.itertext()) for t in root.iter(f"{NS}text")]
    assert f"▲ {nodes[3]} (suspect)" in texts
    # 7 slow pairs, drawn in both triangles, each with a hatch overlay (pattern, not only colour)
    overlays = [r for r in root.iter(f"{NS}rect") if r.get("class") in ("slow", "drain")]
    assert len(overlays) == 2 * 7
    assert len([r for r in root.iter(f"{NS}rect") if r.get("class") == "suspect"]) == 2
    titles = ["".join(t.itertext()) for t in root.iter(f"{NS}title")]
    assert any(nodes[3] in t and "below drain level" in t for t in titles)


def test_text_is_escaped():
    measurements = [
        PairMeasurement(400.0, "x", "<script>&", "b"),
        PairMeasurement(400.0, "y", "b", "c"),
        PairMeasurement(400.0, "z", "<script>&", "c"),
    ]
    svg = render_heatmap_svg(analyze_measurements(measurements))
    assert "<script>" not in svg and "&lt;script&gt;&amp;" in svg
    ET.fromstring(svg)


def test_missing_pairs_are_drawn_as_not_measured():
    nodes, measurements = synthetic_matrix(4)
    analysis = analyze_measurements(measurements[1:])
    svg = render_heatmap_svg(analysis)
    titles = ["".join(t.itertext()) for t in ET.fromstring(svg).iter(f"{NS}title")]
    assert titles.count(f"{nodes[0]} – {nodes[1]}: not measured") == 2


def test_512_nodes_compact_heatmap_stays_small_and_marks_the_suspect():
    nodes, measurements = synthetic_matrix(512, [100], noise=0.03)
    analysis = analyze_measurements(measurements)
    svg = render_heatmap_svg(analysis)
    assert len(svg.encode()) < 2 * 1024 * 1024
    root = ET.fromstring(svg)
    texts = ["".join(t.itertext()) for t in root.iter(f"{NS}text")]
    assert any(t.startswith(f"▲ {nodes[100]}: 511/511 slow") for t in texts)
    suspects = [r for r in root.iter(f"{NS}rect") if r.get("class") == "suspect"]
    assert len(suspects) == 2 and suspects[0].get("stroke-dasharray")
    # The slow-pair map (black path, upper triangle) holds one cell in each row above the suspect's
    # (sorted) row, then one run along its own row to the end
    at = analysis.nodes.index(nodes[100])
    black = [p for p in root.iter(f"{NS}path") if p.get("stroke") == "#000"]
    expected = "".join(f"M{at} {row}h1" for row in range(at)) + f"M{at + 1} {at}h{511 - at}"
    assert len(black) == 1 and black[0].get("d") == expected


def test_512_nodes_worst_case_random_matrix_stays_under_2_mb():
    # Given 512 nodes whose pairs are spread at random over every colour bucket (no long runs)
    rng = random.Random(3)
    nodes = [f"n{i:03d}" for i in range(512)]
    measurements = [PairMeasurement(rng.uniform(200, 420), "s", a, b) for a, b in combinations(nodes, 2)]
    svg = render_heatmap_svg(analyze_measurements(measurements))
    # Then the document stays a parseable SVG under 2 MB
    assert len(svg.encode()) < 2 * 1024 * 1024
    ET.fromstring(svg)
