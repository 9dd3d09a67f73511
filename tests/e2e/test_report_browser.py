"""The demo report in a real browser: headless Chromium renders it at desktop and phone width.

Skips (with the reason) when Chromium is not installed; CI installs the Debian `chromium` package.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from hyperpod_perf.report.html import render_html
from hyperpod_perf.report.synthetic import synthetic_report_with_history

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
    "--enable-logging=stderr",
    "--v=0",
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render_html(synthetic_report_with_history(8)), encoding="utf-8")
    return path


def run_chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    profile = tmp_path / "profile"
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=90,
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


@pytest.mark.parametrize(("width", "height"), [(1280, 2000), (390, 2400)], ids=["desktop", "phone"])
def test_screenshot_renders_without_console_errors(
    page: Path, tmp_path: Path, width: int, height: int
) -> None:
    # Given the demo report; When Chromium screenshots it at this width
    shot = tmp_path / f"report-{width}.png"
    result = run_chromium(tmp_path, f"--screenshot={shot}", f"--window-size={width},{height}", page.as_uri())
    # Then a PNG of exactly that size exists and the page logged no script errors
    assert shot.exists(), result.stderr[-2000:]
    assert png_size(shot) == (width, height)
    assert console_errors(result.stderr) == []


def test_dom_shows_verdict_fleet_table_and_heatmap(page: Path, tmp_path: Path) -> None:
    # When Chromium loads the page (scripts run) and dumps the DOM
    result = run_chromium(tmp_path, "--dump-dom", page.as_uri())
    dom = result.stdout
    # Then the verdict, the sortable fleet table (script ran) and the inline heatmap are there
    assert "1 node degrades NCCL; FSx fs-0123456789abcdef0 saturated" in dom
    assert 'id="fleet-table"' in dom
    assert 'class="sortable"' in dom and 'tabindex="0"' in dom  # the sorter decorated the headings
    assert "NCCL pairwise busbw heatmap" in dom
    assert console_errors(result.stderr) == []
