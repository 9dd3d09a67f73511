"""The check catalog as text, JSON or Markdown (`hyperpod-perf checks`, docs/CHECKS.md)."""

from __future__ import annotations

import json

from hyperpod_perf.rules.catalog import CATALOG, Check

CHECKS_DOC_TITLE = "# Check catalog"


def _row(check: Check) -> dict[str, object]:
    return {
        "id": check.id,
        "family": check.family,
        "section": check.section.value,
        "handoff": check.handoff.value if check.handoff else None,
        "rule": f"hyperpod_perf.{check.rule}",
        "thresholds": list(check.thresholds),
        "meaning": check.meaning,
    }


def render_catalog(fmt: str) -> str:
    rows = [_row(c) for c in CATALOG.values()]
    if fmt == "json":
        return json.dumps(rows, indent=2) + "\n"
    if fmt == "md":
        return _markdown(rows)
    width = max(len(str(r["id"])) for r in rows)
    lines = [
        f"{r['id']:<{width}}  {r['section']}  {r['meaning']}"
        + (f"  → {r['handoff']}" if r["handoff"] else "")
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def _markdown(rows: list[dict[str, object]]) -> str:
    head = [
        CHECKS_DOC_TITLE,
        "",
        "Generated from `functions/hyperpod_perf/rules/catalog.py` by `hyperpod-perf checks --format md`",
        "(a test keeps this file in step). Sections are the runbook's: A NCCL unevenness, B file system,",
        "G GPU hardware, I resource exhaustion, C coverage, X collection. Thresholds are the field names",
        "of `rules/thresholds.py`, each overridable with `--thresholds FILE`.",
        "",
        "| check | section | meaning | thresholds | rule | hand-off |",
        "|---|---|---|---|---|---|",
    ]
    body = [
        f"| `{r['id']}` | {r['section']} | {r['meaning']} | "
        f"{', '.join(f'`{t}`' for t in r['thresholds']) or '—'} | `{r['rule']}` | {r['handoff'] or '—'} |"  # type: ignore[union-attr]
        for r in rows
    ]
    return "\n".join(head + body) + "\n"
