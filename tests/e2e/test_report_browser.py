"""The report in a real browser: headless Chromium lays it out and the page measures itself.

Each page gets a small script appended that measures what Chromium laid out (the verdict's box, the
node map and the bad nodes it names, every SVG text box, the page's size, the smallest chart text)
and writes it as JSON into the DOM, which `--dump-dom` returns. No browser driver is needed.

Skips (with the reason) when Chromium is not installed; CI installs the Debian `chromium` package.
Screenshots go to $REPORT_SCREENSHOTS (default: the test's tmp dir) for a person to look at.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import re
import shutil
import struct
import subprocess
from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

from hyperpod_perf.cli import main
from hyperpod_perf.domain.report import Report
from hyperpod_perf.nccl.analysis import PairMeasurement, analyze_measurements
from hyperpod_perf.nccl.formats import render_html as render_nccl_html
from hyperpod_perf.report.html import render_html
from hyperpod_perf.report.view import build_view
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS
from hyperpod_perf_dev.localrun.demo_metrics import available as metrics_tier
from hyperpod_perf_dev.synthetic import synthetic_report_with_history

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install chromium)"),
]

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
]

DESKTOP = (1280, 900)
PHONE = (390, 844)
#: Smallest chart text, in CSS pixels as drawn, that still reads on a phone.
MIN_CHART_TEXT_PX = 9.0
#: Page height budgets, in desktop screens (900 px): the issue measured ~22 screens at 64 nodes.
#: With the metrics tier the demo has 5 bad nodes and 3 more concerns, not 4: 5,629 px measured at 64
#: nodes (6.25 screens), so one more screen is allowed then, no more.
METRICS = metrics_tier()
MAX_SCREENS_64 = 7 if METRICS else 6
MAX_SCREENS_1000 = 8

MEASURE = """
<script>
(function(){
function box(el){var r=el.getBoundingClientRect();
 return [r.left+scrollX,r.top+scrollY,r.right+scrollX,r.bottom+scrollY];}
var out={viewport:[innerWidth,innerHeight],scrollWidth:document.documentElement.scrollWidth,
 height:document.documentElement.scrollHeight,svgs:[],minChartPx:null};
var v=document.getElementById('verdict');out.verdict=v?box(v):null;
out.named=[].map.call(document.querySelectorAll('#bad-nodes li>a'),function(a){
 return {text:a.textContent,box:box(a)};});
out.cells=[].map.call(document.querySelectorAll('#node-map .cell'),function(c){
 return {label:c.getAttribute('aria-label'),cls:c.className,icon:c.textContent,box:box(c)};});
document.querySelectorAll('svg').forEach(function(svg){
 var texts=[].slice.call(svg.querySelectorAll('text')).filter(function(t){
  var r=t.getBoundingClientRect();return r.width>0&&r.height>0;});
 var vb=svg.viewBox&&svg.viewBox.baseVal,scale=vb&&vb.width?svg.getBoundingClientRect().width/vb.width:1;
 out.svgs.push({label:svg.getAttribute('aria-label')||(svg.querySelector('title')||{}).textContent||'',
  chart:svg.classList.contains('chart'),
  texts:texts.map(function(t){return {text:t.textContent,box:box(t),
   px:parseFloat(t.getAttribute('font-size')||getComputedStyle(t).fontSize)*scale};})});
});
var host=window.parent.document,pre=host.createElement('pre');pre.id='measured';
pre.textContent=JSON.stringify(out);host.body.appendChild(pre);
var first=document.querySelector('#bad-nodes li>a');
if(first){window.addEventListener('hashchange',function(){
 var t=document.getElementById(location.hash.slice(1)),q=host.createElement('pre');q.id='followed';
 q.textContent=JSON.stringify({hash:location.hash,tag:t&&t.tagName,open:!!(t&&t.open)});
 host.body.appendChild(q);});
 location.hash=first.getAttribute('href');}
})();
</script>
"""


def run_chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    profile = tmp_path / "profile"
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def console_errors(stderr: str) -> list[str]:
    return [
        line for line in stderr.splitlines() if "Uncaught" in line or ("CONSOLE" in line and "rror" in line)
    ]


def measure(page: str, tmp_path: Path, size: tuple[int, int]) -> dict[str, Any]:
    """Lay the page out in a frame of this size and return what it measured of itself.

    The page runs in a same-origin `srcdoc` frame because a headless window cannot be narrower
    than 500 px; a frame's width is the layout width, as a phone's is with `width=device-width`.
    """
    framed = page.replace("</body>", MEASURE + "</body>")
    host = (
        '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">'
        f'<iframe width="{size[0]}" height="{size[1]}" style="border:0;display:block" '
        f'srcdoc="{html.escape(framed, quote=True)}"></iframe></body></html>'
    )
    path = tmp_path / f"measure-{size[0]}.html"
    path.write_text(host, encoding="utf-8")
    result = run_chromium(
        tmp_path, "--dump-dom", "--window-size=1400,1000", "--virtual-time-budget=5000", path.as_uri()
    )
    found = re.search(r'<pre id="measured">(.*?)</pre>', result.stdout, re.S)
    assert found, result.stderr[-2000:]
    assert console_errors(result.stderr) == []
    measured = json.loads(html.unescape(found.group(1)))
    # After measuring, the script follows the first bad node's link: what did it land on?
    followed = re.search(r'<pre id="followed">(.*?)</pre>', result.stdout, re.S)
    measured["followed"] = json.loads(html.unescape(followed.group(1))) if followed else None
    return measured


def screenshot(page: str, name: str, tmp_path: Path, size: tuple[int, int]) -> Path:
    folder = Path(os.environ.get("REPORT_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    source = tmp_path / f"{name}.html"
    source.write_text(page, encoding="utf-8")
    shot = folder / f"{name}-{size[0]}x{size[1]}.png"
    result = run_chromium(
        tmp_path, f"--screenshot={shot}", f"--window-size={size[0]},{size[1]}", source.as_uri()
    )
    assert shot.exists(), result.stderr[-2000:]
    assert console_errors(result.stderr) == []
    return shot


def overlaps(svg: dict[str, Any], tolerance: float = 0.5) -> list[tuple[str, str]]:
    """Pairs of text elements in one SVG whose laid-out boxes intersect by more than `tolerance` px."""
    texts = svg["texts"]
    hits = []
    for a, b in combinations(texts, 2):
        (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = a["box"], b["box"]
        if min(ax1, bx1) - max(ax0, bx0) > tolerance and min(ay1, by1) - max(ay0, by0) > tolerance:
            hits.append((a["text"], b["text"]))
    return hits


# ---------------------------------------------------------------- the pages under test


def _demo_report(tmp_path_factory: pytest.TempPathFactory, nodes: int) -> Report:
    """The report `hyperpod-perf demo` writes (the faulty scenario, through the whole pipeline)."""
    out = tmp_path_factory.mktemp(f"demo{nodes}")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["demo", "--nodes", str(nodes), "--out", str(out)])
    assert code in (0, 1, 2), f"demo exited {code}"
    return Report.model_validate_json((out / "report.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Report]:
    """The pages under test: the demo at 8 and 64 nodes, the synthetic fleet at 8, 64 and 1,000."""
    made = {f"demo{n}": _demo_report(tmp_path_factory, n) for n in (8, 64)}
    made.update({f"synthetic{n}": synthetic_report_with_history(n) for n in (8, 64, 1000)})
    return made


@pytest.fixture(scope="module")
def measured(
    reports: dict[str, Report], tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str, tuple[int, int]], dict[str, Any]]:
    """`measured(name, size)`: one Chromium layout per page and size, shared by the tests."""
    cache: dict[tuple[str, tuple[int, int]], dict[str, Any]] = {}

    def get(name: str, size: tuple[int, int]) -> dict[str, Any]:
        if (name, size) not in cache:
            cache[(name, size)] = measure(render_html(reports[name]), tmp_path_factory.mktemp("m"), size)
        return cache[(name, size)]

    return get


def _bad_nodes(report: Report) -> set[str]:
    """The nodes with a concern, as the report labels them: host name and instance id (a
    host-named NCCL finding joins its node)."""
    view = build_view(report)
    return {view.names.label(row.node) for row in view.rows if row.concerns}


def _nccl_page(nodes: int = 16, slow: int = 3) -> str:
    hosts = [f"ip-10-1-{k // 250}-{k % 250 + 4}" for k in range(nodes)]
    measurements = [
        PairMeasurement(300.0 if slow in (i, j) else 360.0 + (i * 7 + j) % 5, "synthetic", hosts[i], hosts[j])
        for i, j in combinations(range(nodes), 2)
    ]
    return render_nccl_html(analyze_measurements(measurements), DEFAULT_THRESHOLDS)


# ---------------------------------------------------------------- the tests

Measured = Callable[[str, tuple[int, int]], dict[str, Any]]


@pytest.mark.parametrize("name", ["demo8", "demo64"])
def test_first_screen_holds_the_verdict_and_names_every_bad_node(
    name: str, reports: dict[str, Report], measured: Measured, tmp_path: Path
) -> None:
    # Given the demo report (4 planted node faults, 5 with the metrics tier's) at 8 and at 64 nodes
    report = reports[name]
    bad = _bad_nodes(report)
    assert len(bad) == 4 + METRICS
    # When Chromium lays it out at 1280x900
    m = measured(name, DESKTOP)
    fold = DESKTOP[1]
    # Then the verdict is on the first screen
    assert m["verdict"][3] <= fold
    # and every node is a cell of the map, each bad one marked ⚠ (an icon, not only a colour)
    assert len(m["cells"]) == len(report.nodes)
    marked = {c["label"].split(" — ")[0] for c in m["cells"] if c["icon"] == "⚠"}
    assert marked == bad
    assert all(c["box"][3] <= fold for c in m["cells"] if c["icon"] == "⚠")
    # and every bad node is named, in full, above the fold
    named = {n["text"]: n["box"] for n in m["named"]}
    assert set(named) == bad
    assert max(box[3] for box in named.values()) <= fold
    # and following a named node's link opens its details (a closed <details> until then)
    assert m["followed"] == {"hash": "#n0", "tag": "DETAILS", "open": True}
    screenshot(render_html(report), f"report-{name}", tmp_path, DESKTOP)


@pytest.mark.parametrize("nodes", [8, 64, 1000])
def test_first_screen_names_the_bad_nodes_beside_the_pair_heatmap(
    nodes: int, reports: dict[str, Report], measured: Measured, tmp_path: Path
) -> None:
    # Given the synthetic fleet with NCCL results (a straggler, hot GPUs, EFA drops)
    name = f"synthetic{nodes}"
    bad = _bad_nodes(reports[name])
    m = measured(name, DESKTOP)
    # Then the verdict and the pair heatmap are on the first screen, beside the node map
    assert m["verdict"][3] <= DESKTOP[1]
    heatmap = next(s for s in m["svgs"] if "heatmap" in s["label"])
    assert heatmap["texts"] and min(t["box"][1] for t in heatmap["texts"]) < DESKTOP[1]
    # and the bad nodes are named in the first screen (at 1,000 nodes: the first dozen at least)
    on_screen = {n["text"] for n in m["named"] if n["box"][3] <= DESKTOP[1]}
    assert on_screen <= bad
    assert on_screen == bad if nodes < 1000 else len(on_screen) >= 12
    if nodes == 1000:
        screenshot(render_html(reports[name]), f"report-{name}", tmp_path, DESKTOP)


@pytest.mark.parametrize(
    ("name", "screens"), [("demo64", MAX_SCREENS_64), ("synthetic1000", MAX_SCREENS_1000)]
)
def test_page_height_stays_a_few_screens_at_64_and_1000_nodes(
    name: str, screens: int, measured: Measured
) -> None:
    # When the report is laid out on a desktop (healthy nodes folded, details closed)
    height = measured(name, DESKTOP)["height"]
    # Then the page is at most this many screens tall (the issue measured ~22 at 64 nodes)
    assert height <= screens * DESKTOP[1], height


@pytest.mark.parametrize("name", ["demo8", "synthetic64", "synthetic1000"])
@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_no_two_svg_labels_overlap(name: str, size: tuple[int, int], measured: Measured) -> None:
    m = measured(name, size)
    # Then no chart, GPU picture, histogram or heatmap has two text boxes that intersect
    charts = [s for s in m["svgs"] if s["texts"]]
    assert len(charts) >= 2
    assert {s["label"]: overlaps(s) for s in charts if overlaps(s)} == {}


@pytest.mark.parametrize("name", ["demo8", "demo64", "synthetic8", "synthetic1000"])
def test_phone_has_no_sideways_scroll_and_chart_text_stays_readable(
    name: str, reports: dict[str, Report], measured: Measured, tmp_path: Path
) -> None:
    # When Chromium lays the page out 390 px wide
    m = measured(name, PHONE)
    # Then nothing is wider than the screen
    assert m["viewport"][0] == PHONE[0]
    assert m["scrollWidth"] <= PHONE[0]
    # and chart text (FSx, histograms, GPU tiles) is drawn at least 9 px tall
    chart_px = [t["px"] for s in m["svgs"] if s["chart"] for t in s["texts"]]
    assert chart_px and min(chart_px) >= MIN_CHART_TEXT_PX, min(chart_px)
    if name.startswith("demo"):
        screenshot(render_html(reports[name]), f"report-{name}-phone", tmp_path, (PHONE[0], 2400))


def test_nccl_page_fits_a_phone(tmp_path: Path) -> None:
    # Given the NCCL engineer's page for 16 nodes with one slow node
    page = _nccl_page()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    # When laid out 390 px wide, Then it does not scroll sideways and the heatmap is there
    m = measure(page, tmp_path, PHONE)
    assert m["scrollWidth"] <= PHONE[0]
    assert any("heatmap" in s["label"] for s in m["svgs"])
    screenshot(page, "nccl-phone", tmp_path, PHONE)


@pytest.mark.parametrize("size", [DESKTOP, (PHONE[0], 2400)], ids=["desktop", "phone"])
def test_screenshot_renders_without_console_errors(
    reports: dict[str, Report], tmp_path: Path, size: tuple[int, int]
) -> None:
    # Given the demo-like report; When Chromium screenshots it at this size
    shot = screenshot(render_html(reports["synthetic8"]), "report-synthetic8", tmp_path, size)
    # Then a PNG of exactly that size exists (console errors are checked by `screenshot`)
    assert png_size(shot) == size


def test_dom_shows_verdict_node_map_fleet_table_and_heatmap(
    reports: dict[str, Report], tmp_path: Path
) -> None:
    path = tmp_path / "report.html"
    path.write_text(render_html(reports["synthetic8"]), encoding="utf-8")
    # When Chromium loads the page (scripts run) and dumps the DOM
    result = run_chromium(tmp_path, "--dump-dom", path.as_uri())
    dom = result.stdout
    # Then the verdict, the node map, the sortable fleet table (script ran) and the heatmap are there
    assert "1 node degrades NCCL; FSx fs-0123456789abcdef0 saturated" in dom
    assert 'id="node-map"' in dom and 'id="fleet-table"' in dom
    assert 'class="sortable"' in dom and 'tabindex="0"' in dom  # the sorter decorated the headings
    assert "NCCL pairwise busbw heatmap" in dom
    assert console_errors(result.stderr) == []
