"""The FSx for Lustre figure shows what the fs.* checks judge: each a share of its limit, from zero."""

from __future__ import annotations

import re

from hyperpod_perf.domain.report import FileSystemSummary, MetricPoint
from hyperpod_perf.report import svg
from hyperpod_perf.report.fsx_figures import lustre_charts, lustre_sentences
from hyperpod_perf.report.view import describe_fs, fs_figures


def points(values: list[float]) -> list[MetricPoint]:
    return [MetricPoint(timestamp=f"2026-11-30T09:{i:02d}:00+00:00", value=v) for i, v in enumerate(values)]


#: 1,200 MB/s provisioned; 420 MB/s (35 %) then a 15-minute tail at 1,116 MB/s (93 %); 1,800
#: metadata ops/s of 12,000 opens/s; the busiest OST at 40 % of its share, 90 % in the tail.
LUSTRE = FileSystemSummary(
    file_system_id="fs-0123456789abcdef0",
    type="LUSTRE",
    provisioned_mbps=1200.0,
    storage_capacity_gib=4800,
    throughput_mbps=points([420.0] * 45 + [1116.0] * 15),
    metadata_ops_per_s=points([1800.0] * 60),
    metadata_ops_ceiling=12000.0,
    hottest_ost_pct=points([40.0] * 45 + [90.0] * 15),
    ost_count=4,
    fullest_ost_used_pct=56.8,
)


def _y_ticks(chart: str) -> list[str]:
    return re.findall(r'text-anchor="end" font-size="13">([0-9,.]+)</text>', chart)


def test_three_charts_each_a_share_with_its_line_and_an_axis_from_zero():
    charts = lustre_charts(LUSTRE)

    titles = [re.search(r"<title>([^<]+)</title>", c).group(1) for c in charts]
    assert titles == [
        "fs-0123456789abcdef0: read+write throughput, % of 1,200 MB/s provisioned",
        "fs-0123456789abcdef0: metadata operations, % of 12,000 file opens/s supported",
        "fs-0123456789abcdef0: busiest OST, % of its share of provisioned",
    ]
    # every value axis starts at 0 (the metadata chart at 15 % would otherwise be zoomed)
    assert [_y_ticks(c)[0] for c in charts] == ["0", "0", "0"]
    assert all("limit 100%" in c for c in charts)
    assert [re.search(r"(\d+)% line", c).group(1) for c in charts] == ["90", "80", "90"]
    captions = [re.search(r"<figcaption>([^<]+)</figcaption>", c).group(1) for c in charts]
    assert captions == [
        "throughput of provisioned: peak 93%, mean 50%; 25% of the window at or above 90%",
        "metadata operations of 12,000 file opens/s supported: peak 15%, mean 15%; 0% of the window at or "
        "above 80%",
        "busiest OST of its share of provisioned (4 OSTs): peak 90%, mean 52%; 25% of the window at or "
        "above 90%",
    ]


def test_the_same_figures_in_words_for_markdown_and_the_caption():
    text = describe_fs(fs_figures(LUSTRE))
    assert text.startswith(
        "fs-0123456789abcdef0 (LUSTRE): throughput peak 1,116 MB/s, mean 594 MB/s of 1,200"
    )
    assert text.endswith(
        "; metadata operations of 12,000 file opens/s supported: peak 15%, mean 15%; 0% of the window at or "
        "above 80%; busiest OST of its share of provisioned (4 OSTs): peak 90%, mean 52%; 25% of the window "
        "at or above 90%; fullest OST 57% used (limit 90%)"
    )


def test_without_limits_there_is_no_share_to_draw_and_the_words_say_so():
    bare = LUSTRE.model_copy(
        update={
            "provisioned_mbps": None,
            "metadata_ops_ceiling": None,
            "hottest_ost_pct": [],
            "ost_count": None,
        }
    )
    assert lustre_charts(bare) == []
    assert (
        lustre_sentences(bare)[0]
        == "metadata operations: peak 1,800/s (no Metadata IOPS published to compare with)"
    )


def test_a_share_axis_can_start_at_zero_whatever_the_data():
    assert svg.value_axis([85.0, 97.0], [90.0, 100.0])[0] > 0  # zoomed by default
    assert svg.value_axis([85.0, 97.0], [90.0, 100.0], from_zero=True)[0] == 0.0


def _figures(html: str) -> dict[str, str]:
    return {
        re.search(r"<title>([^<]+)</title>", fig).group(1): fig
        for fig in re.findall(r'<figure class="fs">(.*?)</figure>', html, re.S)
    }


def test_the_report_draws_throughput_and_iops_utilisation_from_zero_whatever_the_data():
    from report_builders import report

    from hyperpod_perf.report.html import render_html

    # Given a Lustre file system with no provisioned figure, its throughput between 600 and 700
    # MB/s (the chart that started at 600), and an OpenZFS one at 85-97 % IOPS utilisation
    lustre = LUSTRE.model_copy(
        update={
            "file_system_id": "fs-0aaaaaaaaaaaaaaa1",
            "provisioned_mbps": None,
            "metadata_ops_ceiling": None,
            "hottest_ost_pct": [],
            "throughput_mbps": points([700.0, 650.0, 610.0, 690.0] * 15),
        }
    )
    zfs = FileSystemSummary(
        file_system_id="fs-0bbbbbbbbbbbbbbb2",
        type="OPENZFS",
        iops_utilization_pct=points([85.0, 97.0, 90.0] * 20),
    )
    # When the report is rendered
    figures = _figures(render_html(report([], [], filesystems=[lustre, zfs])))
    # Then both value axes start at 0 (a 13 % dip no longer fills the plot)
    throughput = figures["fs-0aaaaaaaaaaaaaaa1: read+write throughput over the window"]
    iops = figures["fs-0bbbbbbbbbbbbbbb2: disk IOPS utilisation over the window"]
    assert (_y_ticks(throughput)[0], _y_ticks(iops)[0]) == ("0", "0")
    assert _y_ticks(throughput)[-1] in ("700", "800") and _y_ticks(iops)[-1] == "100"
