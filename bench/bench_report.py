"""Benchmark: render a 1,000-node report in every format; not run by CI.

Prints the median of 5 renders per format and the sizes. Targets (issue 7): the HTML under 2 s
and under 2 MB, the e-mail under 60 lines. Run: `python bench/bench_report.py [nodes]`;
`python -m bench` calls `run()`.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import BenchResult, Figure
from hyperpod_perf.report.chatbot import render_chatbot_json
from hyperpod_perf.report.email import render_email
from hyperpod_perf.report.html import render_html
from hyperpod_perf.report.json_report import render_json
from hyperpod_perf.report.markdown import render_markdown
from hyperpod_perf_dev.synthetic import synthetic_report_with_history

RUNS = 5
RENDERERS = {
    "html": render_html,
    "md": render_markdown,
    "json": render_json,
    "email": render_email,
    "chatbot": render_chatbot_json,
}


HTML_LIMIT_S, HTML_LIMIT_MB, EMAIL_LIMIT_LINES = 2.0, 2.0, 60


def measure(nodes: int) -> tuple[str, dict[str, tuple[list[float], str]]]:
    """(description, format -> (timings, last rendered text))."""
    report = synthetic_report_with_history(nodes)
    description = f"{nodes} nodes, {len(report.findings)} findings, {len(report.nccl['pairs'])} NCCL pairs"
    rendered: dict[str, tuple[list[float], str]] = {}
    for name, render in RENDERERS.items():
        timings, text = [], ""
        for _ in range(RUNS):
            started = time.perf_counter()
            text = render(report)
            timings.append(time.perf_counter() - started)
        rendered[name] = (timings, text)
    return description, rendered


def run(progress: Callable[[str], None] = print, nodes: int = 1000) -> BenchResult:
    """For `python -m bench`: every format's render time; the HTML's size; the e-mail's length."""
    description, rendered = measure(nodes)
    result = BenchResult("report", f"Report rendering, {nodes:,} nodes")
    result.notes.append(f"Synthetic report: {description}.")
    for name, (timings, text) in rendered.items():
        size_mb = len(text.encode()) / 1e6
        limit = HTML_LIMIT_S if name == "html" else None
        result.figures.append(
            Figure(
                f"render {name}",
                "s",
                timings,
                limit=limit,
                source="issue 7" if limit else "",
                note=f"{size_mb:.2f} MB, {text.count(chr(10)):,} lines",
            )
        )
    html = rendered["html"][1]
    result.figures.append(
        Figure("HTML report size", "MB", [len(html.encode()) / 1e6], HTML_LIMIT_MB, source="issue 7")
    )
    email = rendered["email"][1]
    result.figures.append(
        Figure("e-mail length", "lines", [email.count(chr(10))], EMAIL_LIMIT_LINES, source="issue 7")
    )
    progress(f"  html: {statistics.median(rendered['html'][0]):.3f} s, {len(html.encode()) / 1e6:.2f} MB")
    return result


def main(nodes: int = 1000) -> None:
    description, rendered = measure(nodes)
    print(f"report: {description}")
    for name, (timings, text) in rendered.items():
        size = len(text.encode())
        print(
            f"{name:8s} median {statistics.median(timings):.3f} s  size {size / 1e6:.2f} MB  "
            f"lines {text.count(chr(10))}"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
