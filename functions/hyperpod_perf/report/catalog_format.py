"""The check catalog as text, JSON or Markdown (`hyperpod-perf checks`, docs/CHECKS.md).

Why a legend: a catalog line says `G` and `→ hyperpod-node-debugger § G`; without the runbook at
hand neither says what it means or who acts next. Every listing ends with one line per section
letter and one per hand-off (domain.findings SECTION_MEANINGS, HANDOFF_MEANINGS).
"""

from __future__ import annotations

import difflib
import json

from hyperpod_perf.domain.findings import (
    HANDOFF_MEANINGS,
    SECTION_MEANINGS,
    TIER_MEANINGS,
    Handoff,
    RunbookSection,
    Tier,
)
from hyperpod_perf.rules.catalog import CATALOG, Check
from hyperpod_perf.rules.urgency import CONCERN_TIERS

CHECKS_DOC_TITLE = "# Check catalog"


class UnknownCheckId(LookupError):
    """`checks ID` named no check and no family; the message suggests the closest ids."""


def _row(check: Check) -> dict[str, object]:
    return {
        "id": check.id,
        "family": check.family,
        "section": check.section.value,
        "handoff": check.handoff.value if check.handoff else None,
        "rule": f"hyperpod_perf.{check.rule}",
        "thresholds": list(check.thresholds),
        "meaning": check.meaning,
        "tier": CONCERN_TIERS[check.id][0].value,
        "tier_reason": CONCERN_TIERS[check.id][1],
    }


def select_checks(check_id: str | None) -> list[Check]:
    """Every check, the one named, or a family's (`gpu`, `gpu.`); UnknownCheckId otherwise."""
    if not check_id:
        return list(CATALOG.values())
    wanted = check_id.strip().lower()
    if wanted in CATALOG:
        return [CATALOG[wanted]]
    family = [c for c in CATALOG.values() if c.family == wanted.rstrip(".")]
    if family:
        return family
    close = difflib.get_close_matches(wanted, list(CATALOG), n=3, cutoff=0.6)
    close += [cid for cid in CATALOG if wanted in cid and cid not in close][: 3 - len(close)]
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise UnknownCheckId(f"checks: no check {check_id!r}{hint} (`hyperpod-perf checks` lists every id)")


def render_catalog(fmt: str, check_id: str | None = None) -> str:
    checks = select_checks(check_id)
    rows = [_row(c) for c in checks]
    if fmt == "json":  # one check named exactly: its object; otherwise the list
        exact = check_id is not None and check_id.strip().lower() in CATALOG
        return json.dumps(rows[0] if exact else rows, indent=2) + "\n"
    if fmt == "md":
        return _markdown(rows) if check_id is None else _markdown_rows(rows, checks)
    if check_id is not None and len(checks) == 1:
        return _one_check_text(checks[0])
    width = max(len(str(r["id"])) for r in rows)
    lines = [
        f"{r['id']:<{width}}  {r['section']}  {r['meaning']}"
        + (f"  → {r['handoff']}" if r["handoff"] else "")
        for r in rows
    ]
    return "\n".join([*lines, "", *legend_lines(None if check_id is None else checks)]) + "\n"


def legend_lines(checks: list[Check] | None = None) -> list[str]:
    """`Sections:` then `Hand-offs (→):`, one line each, for the checks listed (all by default)."""
    sections, handoffs = _legend_keys(checks)
    lines = ["Sections:"] + [f"  {s.value}  {SECTION_MEANINGS[s]}" for s in sections]
    lines += ["Urgency tiers (a CONCERN's; INFO is always watch; `checks ID` gives a check's):"]
    lines += [f"  {t.value:<8}  {TIER_MEANINGS[t]}" for t in Tier]
    if handoffs:
        width = max(len(h.value) for h in handoffs)
        lines += ["Hand-offs (→ who takes the concern next):"]
        lines += [f"  {h.value:<{width}}  {HANDOFF_MEANINGS[h]}" for h in handoffs]
    return lines


def _legend_keys(checks: list[Check] | None) -> tuple[list[RunbookSection], list[Handoff]]:
    """Every letter and hand-off for the whole catalog (a finding may carry any of them); only
    those of the checks shown for a selection."""
    if checks is None or len(checks) == len(CATALOG):
        return list(RunbookSection), list(Handoff)
    return (
        [s for s in RunbookSection if any(c.section is s for c in checks)],
        [h for h in Handoff if any(c.handoff is h for c in checks)],
    )


def _one_check_text(check: Check) -> str:
    """Everything the catalog knows about one check, its section and hand-off spelled out."""
    handoff = (
        f"{check.handoff.value}: {HANDOFF_MEANINGS[check.handoff]}"
        if check.handoff
        else "none (this tool's report carries the next step)"
    )
    tier, reason = CONCERN_TIERS[check.id]
    lines = [
        check.id,
        f"  meaning:    {check.meaning}",
        f"  section:    {check.section.value}: {SECTION_MEANINGS[check.section]}",
        f"  thresholds: {', '.join(check.thresholds) or '—'}"
        + (" (override with --thresholds FILE)" if check.thresholds else ""),
        f"  urgency:    {tier.value} when a CONCERN: {reason} (some evidence changes it: rules/urgency.py)",
        f"  rule:       hyperpod_perf.{check.rule}",
        f"  hand-off:   {handoff}",
    ]
    return "\n".join(lines) + "\n"


_TABLE_HEAD = [
    "| check | section | meaning | urgency of a concern | thresholds | rule | hand-off |",
    "|---|---|---|---|---|---|---|",
]


def _table_body(rows: list[dict[str, object]]) -> list[str]:
    return [
        f"| `{r['id']}` | {r['section']} | {r['meaning']} | {r['tier']} | "
        f"{', '.join(f'`{t}`' for t in r['thresholds']) or '—'} | `{r['rule']}` | {r['handoff'] or '—'} |"  # type: ignore[union-attr]
        for r in rows
    ]


def _markdown_legend(checks: list[Check] | None) -> list[str]:
    sections, handoffs = _legend_keys(checks)
    lines = ["## Sections", "", "| letter | what it covers |", "|---|---|"]
    lines += [f"| {s.value} | {SECTION_MEANINGS[s]} |" for s in sections]
    lines += [
        "",
        "## Urgency tiers",
        "",
        "Every output lists findings in this order; INFO is always `watch`;",
    ]
    lines += ["some evidence moves a concern (an Xid older than `event_stale_days`: watch).", ""]
    lines += ["| tier | what it asks of the operator |", "|---|---|"]
    lines += [f"| {t.value} | {TIER_MEANINGS[t]} |" for t in Tier]
    if handoffs:
        lines += ["", "## Hand-offs", "", "A concern's `→` names who takes it next:", ""]
        lines += ["| hand-off | who takes it, for what |", "|---|---|"]
        lines += [f"| {h.value} | {HANDOFF_MEANINGS[h]} |" for h in handoffs]
    return lines


def _markdown_rows(rows: list[dict[str, object]], checks: list[Check]) -> str:
    return "\n".join([*_TABLE_HEAD, *_table_body(rows), "", *_markdown_legend(checks)]) + "\n"


def _markdown(rows: list[dict[str, object]]) -> str:
    head = [
        CHECKS_DOC_TITLE,
        "",
        "Generated from `functions/hyperpod_perf/rules/catalog.py` by `hyperpod-perf checks --format md`",
        "(a test keeps this file in step). Sections are the runbook's (legend below the table);",
        "hand-offs name the skill that takes a concern next (legend below). Thresholds are the field",
        "names of `rules/thresholds.py`, each overridable with `--thresholds FILE`.",
        "`hyperpod-perf checks ID` shows one check (`checks gpu` a family).",
        "",
        *_TABLE_HEAD,
    ]
    return "\n".join([*head, *_table_body(rows), "", *_markdown_legend(None)]) + "\n"
