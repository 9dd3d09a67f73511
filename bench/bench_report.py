"""Benchmark: render a 1,000-node report in every format; not run by CI.

Prints the median of 5 renders per format and the sizes. Targets (issue 7): the HTML under 2 s
and under 2 MB, the e-mail under 60 lines. Run: `python bench/bench_report.py [nodes]`.
"""

from __future__ import annotations

import statistics
import sys
import time

from hyperpod_perf.report.chatbot import render_chatbot_json
from hyperpod_perf.report.email import render_email
from hyperpod_perf.report.html import render_html
from hyperpod_perf.report.json_report import render_json
from hyperpod_perf.report.markdown import render_markdown
from hyperpod_perf.report.synthetic import synthetic_report_with_history

RUNS = 5
RENDERERS = {
    "html": render_html,
    "md": render_markdown,
    "json": render_json,
    "email": render_email,
    "chatbot": render_chatbot_json,
}


def main(nodes: int = 1000) -> None:
    report = synthetic_report_with_history(nodes)
    print(f"report: {nodes} nodes, {len(report.findings)} findings, {len(report.nccl['pairs'])} NCCL pairs")
    for name, render in RENDERERS.items():
        timings, text = [], ""
        for _ in range(RUNS):
            started = time.perf_counter()
            text = render(report)
            timings.append(time.perf_counter() - started)
        size = len(text.encode())
        print(
            f"{name:8s} median {statistics.median(timings):.3f} s  size {size / 1e6:.2f} MB  "
            f"lines {text.count(chr(10))}"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
