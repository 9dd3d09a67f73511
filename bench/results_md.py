"""bench/RESULTS.md from results.json: the README excerpt, what each figure is and where it comes
from, then every kept section in full — whether `make bench` re-ran it this time or not — and the
mutation record's summary (bench/mutation.json, rendered in full in bench/MUTATION.md).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bench.common import fmt, project_root

KIND_MEANING = (
    "Measured: real code, real timings on the machine named, nothing assumed. Emulated: real code "
    "(state machine, handlers, data channel) in moto and against simulated nodes, with the service "
    "latencies and rates assumed as the section states; it proves behaviour and relative cost, not "
    "AWS's absolute timings. Modelled: a formula over stated inputs (prices, counts)."
)


def _short(commit: str | None) -> str:
    """Full hashes shortened to 12 digits, anything around them kept."""
    return re.sub(r"\b([0-9a-f]{12})[0-9a-f]{28}\b", r"\1", commit or "unrecorded")


def _section(name: str) -> Any:
    from bench.sections import BY_NAME

    return BY_NAME.get(name)


def _inputs_state(bench: dict[str, Any]) -> str:
    """Whether the code a kept record measured is still the code here."""
    from bench.sections import inputs_hash

    section = _section(bench["name"])
    if section is None:
        return "no longer a section"
    recorded = bench.get("inputs_hash")
    if recorded and recorded == inputs_hash(section):
        return "unchanged since"
    again = section.how if not section.in_make_bench else f"`python -m bench --only {bench['name']}`"
    return f"**changed since**: re-measure with {again}"


def _load(value: Any) -> str:
    if isinstance(value, dict):
        low, high = value.get("min"), value.get("max")
        if low is None:
            return "not recorded"
        return f"{low:g}" if low == high else f"{low:g}–{high:g}"
    return "not recorded" if value is None else f"{value:g}"


def _evidence(document: dict[str, Any]) -> list[str]:
    rows = []
    for b in document["benchmarks"]:
        section = _section(b["name"])
        kind = section.kind_text if section else b.get("kind", "")
        rows.append(
            [
                f"`{b['name']}`",
                kind,
                f"`{_short(b.get('commit'))}`, {b.get('date_utc', 'date not recorded')}",
                _load(b.get("load_average_1m", b["details"].get("load_average_1m_at_start"))),
                _inputs_state(b),
            ]
        )
    header = [
        "section",
        "kind of evidence",
        "measured at (commit, date)",
        "load average (1 min)",
        "its inputs",
    ]
    return _table(header, rows)


def _value(figure: dict[str, Any]) -> str:
    return fmt(figure["median"], figure["unit"])


def _spread(figure: dict[str, Any]) -> str:
    if figure["runs"] == 1:
        return "1 run"
    low, high = fmt(figure["min"], figure["unit"]), fmt(figure["max"], figure["unit"])
    return f"{low} – {high} ({figure['runs']} runs)"


def _limit(figure: dict[str, Any]) -> str:
    if figure["limit"] is None:
        return ""
    sign = "<" if figure["limit_kind"] == "max" else "≥"
    source = f" ({figure['source']})" if figure["source"] else ""
    return f"{sign} {fmt(figure['limit'], figure['unit'])}{source}"


def _verdict(figure: dict[str, Any]) -> str:
    if figure["met"] is None:
        return ""
    ratio = f"{figure['ratio']:.2f}× limit"
    return f"{ratio}, {'met' if figure['met'] else '**missed**'}"


def _kind(bench: dict[str, Any], figure: dict[str, Any]) -> str:
    return (
        figure.get("kind")
        or bench.get("kind")
        or (_section(bench["name"]).kind if _section(bench["name"]) else "")
    )


def _figure_load(bench: dict[str, Any], figure: dict[str, Any]) -> str:
    value = figure.get("load_average_1m")
    if value is None:
        value = bench.get("load_average_1m", bench["details"].get("load_average_1m_at_start"))
    return _load(value)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def _figures(document: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(b, f) for b in document["benchmarks"] for f in b["figures"]]


def _headlines(document: dict[str, Any]) -> list[list[str]]:
    """The README's rows: every figure with a limit, plus the real-time equivalents of the
    time-to-findings runs and the cost figures; each with its kind and load average."""
    rows = []
    for bench, figure in _figures(document):
        if figure["limit"] is not None or "real-time equivalent" in figure["name"] or bench["name"] == "cost":
            rows.append(
                [
                    figure["name"],
                    _value(figure),
                    _limit(figure),
                    _verdict(figure),
                    _kind(bench, figure),
                    _figure_load(bench, figure),
                ]
            )
    return rows


def _mutation_lines() -> list[str]:
    path = project_root() / "bench" / "mutation.json"
    lines = ["## Mutation testing", ""]
    if not path.exists():
        return [
            *lines,
            "No record yet (`make mutation` writes bench/mutation.json and bench/MUTATION.md).",
            "",
        ]
    from bench import mutation_report

    record = json.loads(path.read_text())
    total = mutation_report.totals(record)
    modules = record.get("modules", {})
    dates = sorted(m.get("date_utc", "") for m in modules.values() if m.get("date_utc"))
    span = f"{dates[0]} – {dates[-1]}" if dates else "dates not recorded"
    lines += [
        f"{mutation_report.score_pct(total)} % of {mutation_report.mutants(total):,} mutants detected over "
        f"{len(modules)} modules (measured {span}, each module at the commit its row names): "
        "`make mutation` (about half an hour, not part of `make bench`) keeps its own record, "
        "bench/mutation.json, rendered in full with every module and the survivors explained in "
        "bench/MUTATION.md.",
        "",
    ]
    return lines


def render_results(document: dict[str, Any]) -> str:
    missed = [(b, f) for b, f in _figures(document) if f["met"] is False]
    lines = [
        "# Benchmark results",
        "",
        "Generated by `make bench` (`python -m bench`) from bench/results.json; never run by CI. "
        "Each section is re-measured when the files it depends on change and kept otherwise "
        "(bench/sections.py says which files); the table below says when each was measured.",
        "",
    ]
    lines += ["## README excerpt", "", "### Performance", ""]
    lines += _table(["figure", "median", "target", "result", "kind", "load average"], _headlines(document))
    lines += [""]
    if missed:
        parts = [f"{f['name']} ({_value(f)}, target {_limit(f)})" for _, f in missed]
        lines += [
            "Targets not met here: " + "; ".join(parts) + ". What was measured about the causes: "
            "“Targets not met” in bench/RESULTS.md.",
            "",
        ]
    lines += [
        "Time to findings is measured with every latency × the stated scale (to fit 1,024 nodes in "
        "the 10-minute budget) and reported as its real-time equivalent; the emulator's own CPU is "
        "not scaled, so those are upper bounds. Load average: the 1-minute figure when the figure "
        "was taken; on this 2-core machine anything above 2 means other work shared the cores.",
        "",
    ]
    lines += ["## What each figure is", ""]
    lines += _evidence(document)
    lines += ["", KIND_MEANING, ""]
    lines += ["## Machine", ""]
    host = document["machine"]
    lines += [
        f"Last run: {host['cpu']}, {host['cores']} cores, {host.get('memory_gib')} GiB, {host['os']} "
        f"{host['arch']}, Python {host['python']}, {host['date_utc']}; 1-minute load average "
        f"{host.get('load_average_1m')} at the start, {host.get('load_average_1m_end')} at the end; "
        f"commit `{_short(document.get('commit'))}`; {document['total_seconds']:.0f} s "
        f"(budget {document['budget_seconds']} s), command `{document['command']}`. Sections kept "
        "from earlier runs name their own machine, commit and date.",
        "",
    ]
    lines += ["## Targets not met", ""]
    if not missed:
        lines += ["None.", ""]
    for bench, figure in missed:
        why = f" {figure['why']}" if figure.get("why") else ""
        lines += [f"- **{figure['name']}** ({bench['name']}): {_value(figure)} vs {_limit(figure)}.{why}"]
    if missed:
        lines += ["", "More of what was measured is in each section's notes below.", ""]

    for bench in document["benchmarks"]:
        lines += _section_lines(bench, document)
    lines += _mutation_lines()
    return "\n".join(lines).rstrip() + "\n"


def _section_lines(bench: dict[str, Any], document: dict[str, Any]) -> list[str]:
    load = bench.get("load_average_1m", bench["details"].get("load_average_1m_at_start"))
    where = bench.get("machine") or "machine as in the run that measured it"
    how = bench.get("how") or "make bench"
    took = (
        f"`{bench['name']}`: {how}, {bench['seconds']:.0f} s, commit `{_short(bench.get('commit'))}`, "
        f"{bench.get('date_utc', 'date not recorded')}, {where}; 1-minute load average {_load(load)} "
        f"while it ran. Its inputs: {_inputs_state(bench)}."
    )
    high = load.get("max") if isinstance(load, dict) else load
    cores = document["machine"].get("cores") or 0
    if isinstance(high, int | float) and cores and high > cores:
        took += (
            f" The machine was shared while it ran (load average up to {high:g} on {cores} cores): "
            "CPU-bound steps ran slower than on an idle machine; figures from an idle run are not "
            "comparable with these."
        )
    lines = [f"## {bench['title']}", "", took, ""]
    rows = [
        [
            f["name"],
            _value(f),
            _spread(f),
            _limit(f),
            _verdict(f),
            _kind(bench, f),
            _figure_load(bench, f),
            f["note"],
        ]
        for f in bench["figures"]
    ]
    header = ["figure", "median", "spread (min – max)", "limit", "ratio", "kind", "load average", "note"]
    lines += _table(header, rows)
    lines += [""]
    for table in bench["tables"]:
        lines += [f"**{table['caption']}**", ""]
        lines += _table(table["header"], table["rows"])
        lines += [""]
    for note in bench["notes"]:
        lines += [f"- {note}"]
    if bench["notes"]:
        lines += [""]
    return lines


def render_file(results: Path) -> str:
    return render_results(json.loads(results.read_text()))
