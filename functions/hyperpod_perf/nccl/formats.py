"""Render a `PairAnalysis` as text, JSON, Markdown or HTML (with the SVG heatmap inline)."""

from __future__ import annotations

import json
from html import escape

from hyperpod_perf.domain import escaping
from hyperpod_perf.domain.findings import Finding, Severity
from hyperpod_perf.nccl.analysis import PairAnalysis
from hyperpod_perf.nccl.heatmap import render_heatmap_svg
from hyperpod_perf.rules.thresholds import Thresholds

_ORDER = {Severity.CONCERN: 0, Severity.INFO: 1, Severity.OK: 2}


def _sorted(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: _ORDER[f.severity])


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def render_json(analysis: PairAnalysis) -> str:
    return json.dumps(analysis.to_dict(), indent=2, ensure_ascii=False) + "\n"


def _headline(analysis: PairAnalysis) -> str:
    return (
        f"{len(analysis.pairs)} pairs over {len(analysis.nodes)} nodes; mean {_num(analysis.mean)} GB/s, "
        f"median {_num(analysis.median)} GB/s; {len(analysis.slow_pairs)} slow pairs; "
        f"suspects: {', '.join(s.node for s in analysis.suspects) or 'none'}"
    )


#: How many log names a grouped line lists before "+N more".
LISTED_SOURCES = 3


def _grouped(findings: list[Finding]) -> list[tuple[Finding, str, list[str]]]:
    """(first finding, summary, sources): findings that differ only by the log they name (`<log>:
    run cut short ...` on 21 logs) become one entry listing the logs; the others stay alone."""
    entries: dict[tuple[str, Severity, str, str | None], tuple[Finding, str, list[str]]] = {}
    out: list[tuple[Finding, str, list[str]]] = []
    for f in _sorted(findings):
        source = str(f.evidence.get("source") or "")
        if source and f.summary.startswith(f"{source}: "):
            rest = f.summary.removeprefix(f"{source}: ")
            key = (f.check, f.severity, rest, f.next_step)
            if key in entries:
                entries[key][2].append(source)
                continue
            entries[key] = (f, rest, [source])
            out.append(entries[key])
        else:
            out.append((f, f.summary, []))
    return out


def _summary_line(summary: str, sources: list[str]) -> str:
    if len(sources) <= 1:
        return f"{sources[0]}: {summary}" if sources else summary
    shown = ", ".join(sources[:LISTED_SOURCES])
    more = f" +{len(sources) - LISTED_SOURCES} more" if len(sources) > LISTED_SOURCES else ""
    return f"{len(sources)} logs: {summary} ({shown}{more})"


def render_text(analysis: PairAnalysis) -> str:
    lines = [f"NCCL pairwise analysis: {_headline(analysis)}", ""]
    for f, summary, sources in _grouped(analysis.findings):
        lines.append(f"[{f.severity.value}] {f.check}: {_summary_line(summary, sources)}")
        if f.next_step and f.severity is not Severity.OK:
            lines.append(f"    next: {f.next_step}")
    return escaping.terminal("\n".join(lines) + "\n")


def _md_cell(text: str) -> str:
    return escaping.markdown(text)


def render_markdown(analysis: PairAnalysis) -> str:
    lines = ["# NCCL pairwise analysis", "", _headline(analysis), ""]
    if analysis.suspects:
        lines += [
            "## Suspect nodes",
            "",
            "| node | slow pairs | median GB/s | others' median GB/s | drain candidate |",
        ]
        lines.append("|---|---|---|---|---|")
        for s in analysis.suspects:
            lines.append(
                f"| {_md_cell(s.node)} | {s.slow_pairs} of {s.pairs} | {s.median_gbps:.1f} | "
                f"{s.others_median_gbps:.1f} | {'yes' if s.drain_candidate else 'no'} |"
            )
        lines.append("")
    lines += ["## Findings", "", "| severity | check | summary | next step |", "|---|---|---|---|"]
    for f, summary, sources in _grouped(analysis.findings):
        lines.append(
            f"| {f.severity.value} | {f.check} | {_md_cell(_summary_line(summary, sources))} | "
            f"{_md_cell(f.next_step or '')} |"
        )
    if analysis.slow_pairs:
        lines += ["", "## Slowest pairs", "", "| a | b | busbw GB/s |", "|---|---|---|"]
        for p in analysis.slow_pairs[:50]:
            lines.append(f"| {_md_cell(p.a or '?')} | {_md_cell(p.b or '?')} | {p.busbw_gbps:.1f} |")
    return escaping.markdown_document("\n".join(lines) + "\n")


def render_html(analysis: PairAnalysis, thresholds: Thresholds) -> str:
    svg = render_heatmap_svg(analysis, thresholds.nccl_pair_slow_pct, thresholds.nccl_drain_pct)
    rows = "".join(
        f"<tr><td>{escape(f.severity.value)}</td><td>{escape(f.check)}</td><td>{escape(f.summary)}</td>"
        f"<td>{escape(f.next_step or '')}</td></tr>"
        for f in _sorted(analysis.findings)
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>NCCL pairwise analysis</title>"
        # Phone-sized screens: the heatmap scales to the width, the table scrolls inside its box and
        # long host names wrap, so the page itself never scrolls sideways.
        "<style>*{box-sizing:border-box}body{font-family:sans-serif;margin:1.5em;overflow-wrap:anywhere}"
        "svg{max-width:100%;height:auto;display:block}.scroll{overflow-x:auto;max-width:100%}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}"
        "@media (max-width:640px){body{margin:8px;font-size:14px}"
        # a phone shows each finding as a block (severity, check, summary, next step), not 4 columns
        "table,tbody,tr,td{display:block}tr:first-child{display:none}"
        "tr{border:1px solid #ccc;margin:6px 0}td{border:0;padding:2px 6px}td:first-child{font-weight:bold}}"
        "</style>"
        "</head><body>"
        f"<h1>NCCL pairwise analysis</h1><p>{escape(_headline(analysis))}</p>"
        f"<h2>Pair matrix</h2>{svg}"
        '<h2>Findings</h2><div class="scroll"><table>'
        "<tr><th>severity</th><th>check</th><th>summary</th><th>next step</th></tr>"
        f"{rows}</table></div></body></html>\n"
    )
