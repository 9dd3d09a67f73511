"""The report as a picture: the node map, commands as code, charts whose labels never collide.

The browser test (tests/e2e) measures the same things in Chromium; these check the markup and the
label geometry without a browser, so they run everywhere.
"""

from __future__ import annotations

import math
import re
from itertools import combinations, pairwise

import pytest
from report_builders import finding, gpus, hot_gpu, node, report
from test_report_html import outline

from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.report import svg
from hyperpod_perf.report.html import NODE_MAP_NAMED, prose, render_html
from hyperpod_perf.report.view import build_view, gpu_marks, node_groups
from hyperpod_perf_dev.synthetic import synthetic_report_with_history

# --- commands as code ---------------------------------------------------------------------------


def test_backticked_commands_become_code_and_lose_their_backticks() -> None:
    text = "Operator, on the node: `sudo cpupower frequency-set -g performance` (persist it)."
    assert prose(text) == (
        "Operator, on the node: <code>sudo cpupower frequency-set -g performance</code> (persist it)."
    )


def test_bare_aws_commands_become_code_and_stop_at_the_closing_parenthesis() -> None:
    command = "aws fsx update-file-system --file-system-id fs-1 --storage-capacity <GiB>"
    text = f"Raise StorageCapacity ({command}) or not."
    assert prose(text) == (
        "Raise StorageCapacity (<code>aws fsx update-file-system --file-system-id fs-1 --storage-capacity "
        "&lt;GiB&gt;</code>) or not."
    )


def test_plain_english_after_aws_is_not_a_command() -> None:
    assert prose("No aws credentials are configured.") == "No aws credentials are configured."


def test_a_trailing_full_stop_is_not_part_of_the_command() -> None:
    assert prose("Run aws sagemaker list-clusters --region us-west-2.") == (
        "Run <code>aws sagemaker list-clusters --region us-west-2</code>."
    )


@pytest.mark.parametrize(
    "text",
    [
        "`<script>alert(1)</script>`",
        "aws s3 cp <img src=x onerror=alert(1)> .",
        "plain <b>markup</b> & `x` and an unmatched ` backtick",
    ],
)
def test_markup_inside_and_outside_code_is_escaped(text: str) -> None:
    html = prose(text)
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert re.sub(r"</?code>", "", html).count("<") == 0


def test_next_steps_in_the_page_show_no_raw_backticks() -> None:
    step = "Read `/sys/class/infiniband/<dev>/ports/1/state` again"
    html = render_html(report([finding("a", "efa.port_state", next_step=step)], [node("a")]))
    assert "<code>/sys/class/infiniband/&lt;dev&gt;/ports/1/state</code>" in html
    assert "`" not in outline(html).text("concerns")


# --- the node map -------------------------------------------------------------------------------


def _fleet() -> list:
    return [
        node("i-a1", availability_zone="us-west-2a", instance_group="workers", gpus=gpus(60, 1980)),
        node("i-a2", availability_zone="us-west-2a", instance_group="workers", gpus=gpus(60, 1980)),
        node("i-b1", availability_zone="us-west-2b", instance_group="workers", ultraserver_id="u-7"),
        node("i-b2", availability_zone="us-west-2b", instance_group="workers", ultraserver_id="u-7"),
        node("i-x", collection="failed", collection_error="SSM: TargetNotConnected"),
    ]


def test_every_node_is_a_cell_grouped_by_az_group_and_ultraserver() -> None:
    r = report([hot_gpu("i-a2", 95), finding("i-b1", "host.oom", Severity.INFO)], _fleet())
    groups = node_groups(build_view(r))
    assert [(g.label, [row.node for row in g.rows]) for g in groups] == [
        ("AZ unknown · group unknown", ["i-x"]),
        ("us-west-2a · workers", ["i-a1", "i-a2"]),
        ("us-west-2b · workers · UltraServer u-7", ["i-b1", "i-b2"]),
    ]
    page = outline(render_html(r))
    assert page.text("node-map").count("⚠") >= 1
    html = render_html(r)
    cells = re.findall(r'<a class="cell (s\d|sf)" href="(#[^"]+)" title="([^"]*)"[^>]*>(.)</a>', html)
    assert len(cells) == 5
    by_node = {title.split(" — ")[0]: (cls, href, title, icon) for cls, href, title, icon in cells}
    # Then each cell carries an icon as well as a colour class, and a title with its worst check
    assert by_node["i-a2"][0] == "s2" and by_node["i-a2"][3] == "⚠"
    assert "gpu.temperature: GPU 3 at 95 °C" in by_node["i-a2"][2]
    assert by_node["i-b1"][0] == "s1" and by_node["i-b1"][3] == "ℹ"
    assert by_node["i-a1"][0] == "s0" and by_node["i-a1"][3] == "✔"
    assert by_node["i-x"][0] == "sf" and by_node["i-x"][3] == "✖"
    assert "TargetNotConnected" in by_node["i-x"][2]
    # and a bad node's cell links to its details, which exist on the page
    assert f'id="{by_node["i-a2"][1][1:]}"' in html


def test_bad_nodes_are_named_beside_the_map_and_healthy_ones_fold_into_one_line() -> None:
    r = report([hot_gpu("i-a2", 95), finding("i-b1", "host.oom", Severity.INFO)], _fleet())
    page = outline(render_html(r))
    named = page.text("bad-nodes")
    assert "i-a2" in named and "i-x" in named and "i-a1" not in named
    assert "✔ 3 node(s) without concerns (1 with notes only)" in page.text("healthy")


def test_at_1000_nodes_the_map_names_the_first_bad_nodes_and_counts_the_rest() -> None:
    r = synthetic_report_with_history(1000)
    bad = [row for row in build_view(r).rows if row.concerns]
    named = outline(render_html(r)).text("bad-nodes")
    assert len(bad) == 15 < NODE_MAP_NAMED
    assert all(row.node in named for row in bad)


def test_dashboard_link_appears_only_for_an_https_url() -> None:
    base = report([], [node("a")])
    url = "https://us-west-2.console.aws.amazon.com/cloudwatch/home?region=us-west-2#dashboards/dashboard/x-fleet"
    linked = base.model_copy(update={"run": base.run.model_copy(update={"dashboard_url": url})})
    assert f'<a id="dashboard" href="{url}">CloudWatch dashboard</a>' in render_html(linked)
    hostile = base.model_copy(
        update={"run": base.run.model_copy(update={"dashboard_url": "javascript:alert(1)"})}
    )
    assert 'id="dashboard"' not in render_html(hostile) and 'id="dashboard"' not in render_html(base)


# --- GPU pictures mark the GPU behind a finding ----------------------------------------------------


def test_gpu_tile_frames_the_gpu_a_finding_names() -> None:
    pcie = finding(
        "n", "gpu.pcie_width", summary="GPU 3 PCIe link at x8 of x16", evidence={"gpu": 3, "width_current": 8}
    )
    xid = finding("n", "gpu.xid", summary="Xid 79", evidence={"kind": "xid", "code": 79, "gpu": 5})
    r = report([pcie, xid], [node("n", gpus=gpus(60, 1980))])
    row = build_view(r).rows[0]
    assert {i: [label for _, label in marks] for i, marks in gpu_marks(row).items()} == {
        3: ["PCIe x8"],
        5: ["Xid 79"],
    }
    gpu = outline(render_html(r)).text("gpu")
    assert "⚠ GPU 3: PCIe x8 (gpu.pcie_width)" in gpu and "⚠ GPU 5: Xid 79 (gpu.xid)" in gpu
    html = render_html(r)
    assert "<title>GPU 3: PCIe x8</title>" in html and "<title>GPU 5: Xid 79</title>" in html
    assert html.count('stroke-dasharray="4 2"><title>GPU') == 2  # only the two named GPUs are framed


def _gpu_slots(html: str, node_name: str) -> dict[int, str]:
    """GPU index -> "missing" (an empty ✕ slot) or "bars", from the node's GPU tile."""
    tile = re.search(rf'aria-label="{node_name}: GPU temperature and SM clock per GPU".*?</svg>', html, re.S)
    assert tile, html
    svg_text = tile.group(0)
    missing = {
        int(i)
        for i in re.findall(r'fill="none" stroke="[^"]+" stroke-dasharray="2 2"><title>GPU (\d+):', svg_text)
    }
    numbers = [
        int(i) for i in re.findall(r'text-anchor="middle"(?: font-weight="700")?>(\d+)</text>', svg_text)
    ]
    return {i: "missing" if i in missing else "bars" for i in numbers}


def test_the_gpu_that_fell_off_the_bus_is_drawn_missing_not_at_normal_temperature_and_clock() -> None:
    # Given a node whose nvidia-smi still lists all 8 GPUs at 60 °C and full clock, and an Xid 79
    # (fallen off the bus) on GPU 5
    xid = finding("n", "gpu.xid", summary="Xid 79", evidence={"kind": "xid", "code": 79, "gpu": 5})
    r = report([xid], [node("n", gpus=gpus(60, 1980))])
    # When the report is drawn
    html = render_html(r)
    # Then GPU 5 is an empty slot marked ✕, the other seven have their bars
    assert _gpu_slots(html, "n") == {i: "missing" if i == 5 else "bars" for i in range(8)}
    assert "<title>GPU 5: fell off the bus (Xid 79): its last figures are not drawn</title>" in html
    assert "✕ GPU 5: fell off the bus (Xid 79)" in outline(html).text("gpu")


def test_a_gpu_nvidia_smi_no_longer_lists_is_drawn_as_a_missing_slot() -> None:
    # Given gpu.count: 7 of 8 GPUs listed, GPU 2 absent from the listing (the others keep their index)
    listed = [g for g in gpus(60, 1980) if g.index != 2]
    count = finding("n", "gpu.count", summary="7 GPUs listed", evidence={"gpus": 7, "expected": 8})
    r = report([count], [node("n", gpus=listed)])
    # When the report is drawn
    html = render_html(r)
    # Then the tile has eight slots, GPU 2 the missing one
    assert _gpu_slots(html, "n") == {i: "missing" if i == 2 else "bars" for i in range(8)}
    assert "✕ GPU 2: not listed by nvidia-smi (7 of 8 GPUs listed)" in outline(html).text("gpu")
    # and a renumbered listing (0-6) stands GPU 7 for the missing one
    renumbered = report([count], [node("n", gpus=gpus(60, 1980, count=7))])
    assert _gpu_slots(render_html(renumbered), "n") == {i: "missing" if i == 7 else "bars" for i in range(8)}


def test_ok_findings_and_evidence_without_a_gpu_index_mark_nothing() -> None:
    ok = finding("n", "gpu.pcie_width", Severity.OK, evidence={"gpu": 3, "width_current": 16})
    flag = finding("n", "gpu.xid", evidence={"gpu": True, "gpus": ["3", 4.0]})  # not GPU indices
    row = build_view(report([ok, flag], [node("n", gpus=gpus(60, 1980))])).rows[0]
    assert gpu_marks(row) == {}


# --- chart geometry -----------------------------------------------------------------------------


def _text_boxes(svg_text: str) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Boxes of the unrotated <text> elements, from their x/y/anchor/size (as `svg.text_width` models)."""
    boxes = []
    for attrs, label in re.findall(r"<text ([^>]*)>([^<]*)</text>", svg_text):
        if "rotate" in attrs:
            continue
        a = dict(re.findall(r'([\w-]+)="([^"]*)"', attrs))
        size = float(a.get("font-size", 16))
        width = svg.text_width(label, size)
        x, y = float(a["x"]), float(a["y"])
        x0 = {"start": x, "middle": x - width / 2, "end": x - width}[a.get("text-anchor", "start")]
        boxes.append((label, (x0, y - size * 0.8, x0 + width, y + size * 0.2)))
    return boxes


def _collisions(svg_text: str) -> list[tuple[str, str]]:
    return [
        (a, b)
        for (a, (ax0, ay0, ax1, ay1)), (b, (bx0, by0, bx1, by1)) in combinations(_text_boxes(svg_text), 2)
        if min(ax1, bx1) > max(ax0, bx0) and min(ay1, by1) > max(ay0, by0)
    ]


def _series(values: list[float]) -> list[tuple[str, float]]:
    return [(f"2026-11-30T{9 + i // 60:02d}:{i % 60:02d}:00Z", v) for i, v in enumerate(values)]


def test_value_axis_zooms_to_a_series_near_its_provisioned_line() -> None:
    # Given a series between 1,100 and 1,224 MB/s and lines at 1,080 and 1,200
    ticks = svg.value_axis([1100.0, 1224.0, 1150.0], [1200.0, 1080.0])
    # Then the axis starts well above 0 and still holds every value and line
    assert ticks[0] > 0 and ticks[0] <= 1080 and ticks[-1] >= 1224
    # and the provisioned line sits in the plot's middle band, not squeezed into its top 5 %
    assert 0.1 < (1200 - ticks[0]) / (ticks[-1] - ticks[0]) < 0.9


def test_value_axis_keeps_zero_when_the_data_come_near_it() -> None:
    assert svg.value_axis([10.0, 400.0], [1200.0])[0] == 0.0


@pytest.mark.parametrize(("lo", "hi"), [(0.0, 1.0), (1080.0, 1224.0), (3.0, 97.0), (0.0, 1320.0)])
def test_nice_ticks_are_round_evenly_spaced_and_cover_the_range(lo: float, hi: float) -> None:
    ticks = svg.nice_ticks(lo, hi)
    steps = {round(b - a, 6) for a, b in pairwise(ticks)}
    assert len(steps) == 1 and ticks[0] <= lo and ticks[-1] >= hi and 3 <= len(ticks) <= 7
    (step,) = steps
    assert round(step / 10 ** math.floor(math.log10(step)), 6) in {1, 2, 2.5, 5}


def test_spread_labels_keeps_the_gap_and_the_order() -> None:
    # Given three labels within 4 px of each other and one pushed past the bottom
    wanted = [100.0, 104.0, 101.0, 300.0]
    placed = svg.spread_labels(wanted, gap=14, low=20, high=250)
    # Then they keep their order, stand at least 14 px apart and stay inside low..high
    assert sorted(range(4), key=placed.__getitem__) == sorted(range(4), key=wanted.__getitem__)
    assert all(b - a >= 14 for a, b in pairwise(sorted(placed)))
    assert min(placed) >= 20 and max(placed) <= 250


@pytest.mark.parametrize(
    "values",
    [
        [1164.0] * 180,  # the old flat demo line
        [1137.0 if i == 0 else 1100.0 for i in range(36)],  # the peak at the first point, by a tick
        [1224.0 if i == 179 else 1150.0 + (i % 7) * 5 for i in range(180)],  # peak at the last point
        [900.0 + i * 10 for i in range(36)],
    ],
)
def test_fs_chart_labels_do_not_collide(values: list[float]) -> None:
    chart = svg.line_chart(
        _series(values),
        title="t",
        unit="MB/s",
        refs=[svg.RefLine(1200, "provisioned 1,200"), svg.RefLine(1080, "90% line", svg.COLOR_WARN_REF)],
    )
    assert _collisions(chart) == []


@pytest.mark.parametrize("count", [8, 64, 1000])
def test_histogram_count_and_limit_labels_do_not_collide(count: int) -> None:
    # Given every node's lowest SM clock at ~100 % and the 50 % floor at the axis's left end
    chart = svg.histogram(
        [99.0 + (i % 3) * 0.5 for i in range(count)],
        title="t",
        unit="% of max",
        ref=svg.RefLine(50.0, "50%"),
    )
    assert f">{count}</text>" in chart
    assert _collisions(chart) == []
