"""The HTML report: structure an operator relies on, escaping, and size at fleet scale."""

from __future__ import annotations

from html.parser import HTMLParser

from report_builders import finding, gpus, hot_gpu, node, report

from hyperpod_perf.domain.findings import RunbookSection
from hyperpod_perf.domain.report import FileSystemSummary, MetricPoint, NotChecked
from hyperpod_perf.report.html import render_html
from hyperpod_perf_dev.synthetic import synthetic_report, synthetic_report_with_history

VOID = {"meta", "br", "link", "img", "input", "hr", "circle", "rect", "line", "polyline", "path", "use"}


class Outline(HTMLParser):
    """Checks nesting (every opened element closed in order) and records what the page shows."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.ids: dict[str, str] = {}
        self.text_by_id: dict[str, list[str]] = {}
        self.counts: dict[str, int] = {}
        self.scripts = 0
        self.external: list[str] = []
        self._open_ids: list[tuple[int, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.counts[tag] = self.counts.get(tag, 0) + 1
        if tag == "script":
            self.scripts += 1
            if a.get("src"):
                self.external.append(str(a["src"]))
        if tag in {"link", "img"} and (a.get("href") or a.get("src")):
            self.external.append(str(a.get("href") or a.get("src")))
        if a.get("id"):
            self.ids[str(a["id"])] = tag
            self._open_ids.append((len(self.stack), a["id"]))
            self.text_by_id.setdefault(a["id"], [])
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.counts[tag] = self.counts.get(tag, 0) + 1

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> but open {self.stack[-3:]}")
            return
        self.stack.pop()
        self._open_ids = [(d, i) for d, i in self._open_ids if d < len(self.stack)]

    def handle_data(self, data: str) -> None:
        for _, ident in self._open_ids:
            self.text_by_id[ident].append(data)

    def text(self, ident: str) -> str:
        return "".join(self.text_by_id.get(ident, []))


def outline(html: str) -> Outline:
    parser = Outline()
    parser.feed(html)
    parser.close()
    return parser


def test_demo_report_is_well_formed_and_shows_verdict_fleet_heatmap_and_figures() -> None:
    # Given the 8-node demo report with history; When rendered
    page = outline(render_html(synthetic_report_with_history(8)))
    # Then every element is closed in order, nothing is loaded from outside, one inline script
    assert page.errors == []
    assert page.stack == []
    assert page.external == []
    assert page.scripts == 1
    # And the verdict comes first with a word, not only a colour
    assert (
        page.text("verdict")
        .strip()
        .startswith("⚠ FIX SOON: 1 node has GPU faults; 1 node has EFA problems; 1 node degrades NCCL")
    )
    # And the fleet table has one row per node plus the header
    assert page.ids["fleet-table"] == "table"
    assert page.text("fleet-table").count("i-0") == 8
    # And the heatmap SVG, two FSx charts and eight GPU tiles are inline
    assert "NCCL pairwise busbw heatmap" in page.text("nccl-heatmap")
    # (Lustre as a share of its 1,200 MB/s provisioned, from zero, with its 90 % line)
    assert "read+write throughput, % of 1,200 MB/s provisioned" in page.text("fsx")
    assert "90% line" in page.text("fsx") and "80% limit" in page.text("fsx")
    assert page.text("gpu").count("min SM clock") == 8
    assert "New: 3" in page.text("history") and "Resolved: 1" in page.text("history")
    assert "health.deep_check" in page.text("not-checked")


def test_hostile_text_everywhere_is_escaped() -> None:
    # Given a node name, summary, evidence, cluster name, NCCL host and reason carrying markup
    evil = "<script>alert(1)</script>"
    r = report(
        [
            hot_gpu(evil, 95),
            finding(
                evil,
                "collect.node",
                section=RunbookSection.COLLECTION,
                summary=f"log line {evil}",
                evidence={"line": evil},
                next_step=evil,
            ),
        ],
        [node(evil, hostname=evil, gpus=gpus(95, 900))],
        nccl={
            "pairs": [{"a": evil, "b": "h2", "busbw_gbps": 100.0, "runs": 1}],
            "mean": 100.0,
            "median": 100.0,
            "slow_pairs": [],
            "suspects": [{"node": evil, "slow_pairs": 1, "pairs": 1}],
        },
        not_checked=[NotChecked(what=evil, why=evil)],
    )
    r = r.model_copy(update={"cluster": r.cluster.model_copy(update={"name": evil})})
    # When rendered
    html = render_html(r)
    # Then the only <script> is the page's own sorter, and the markup shows as text
    assert html.count("<script>") == 1
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert outline(html).errors == []


def test_colour_is_never_the_only_signal_in_the_fleet_table() -> None:
    html = render_html(report([hot_gpu("a", 95)], [node("a")]))
    assert '<td class="s2" data-r="2">⚠<span class="w"> concern</span></td>' in html
    assert '<td class="sn" data-r="-1">–</td>' in html  # not checked is a dash, not a blank cell


def test_openzfs_chart_draws_the_80_percent_line_and_says_how_long_it_was_above() -> None:
    points = [
        MetricPoint(timestamp=f"2026-11-30T10:{m:02d}:00Z", value=v)
        for m, v in ((0, 70.0), (5, 85.0), (10, 90.0), (15, 60.0))
    ]
    r = report(
        [],
        [],
        filesystems=[
            FileSystemSummary(
                file_system_id="fs-0123456789abcdef1", type="OPENZFS", iops_utilization_pct=points
            )
        ],
    )
    text = outline(render_html(r)).text("fsx")
    assert "80% limit" in text
    assert "disk IOPS utilisation peak 90%, mean 76%; 50% of the window at or above 80%" in text


def test_1000_node_report_stays_under_2_mb_with_outliers_and_distribution() -> None:
    # Given a 1,000-node report; When rendered
    html = render_html(synthetic_report_with_history(1000))
    page = outline(html)
    # Then it is small enough to mail or open on a phone, and the GPU section shows outliers + histograms
    assert len(html.encode()) < 2_000_000
    assert page.errors == []
    assert page.text("fleet-table").count("i-0") == 1000
    gpu = page.text("gpu")
    assert "1000 nodes: the distribution across the fleet, then the 24 outliers" in gpu
    assert gpu.count("min SM clock") == 24
    # And the 13 hot nodes are among the outliers (GPU concerns first)
    assert gpu.count("▲ hot") == 13


def test_first_run_says_there_is_no_history() -> None:
    assert "No previous report to compare with." in outline(render_html(synthetic_report(4))).text("history")


def test_nccl_results_the_heatmap_cannot_read_leave_a_note_and_the_rest_of_the_page() -> None:
    # Given the demo report whose stored NCCL analysis has a pair without its bus bandwidth
    broken = synthetic_report(8).model_copy(update={"nccl": {"pairs": [{"a": "i-0a", "b": "i-0b"}]}})
    # When rendered
    page = outline(render_html(broken))
    # Then the page is whole, says why there is no heatmap, and still draws the other figures
    assert page.errors == [] and page.stack == []
    assert page.ids["nccl-heatmap"] == "p"
    assert "could not be drawn from this run's NCCL results" in page.text("nccl-heatmap")
    assert page.text("gpu").count("min SM clock") == 8
