"""Render the outcome log of the hardening suites as the table in docs/SECURITY.md.

    HPD_OUTCOMES_FILE=build/outcomes.json pytest tests/unit/fuzz tests/statemachine
    python tests/render_outcomes.py build/outcomes.json docs/SECURITY.md

Rows of one test (its parametrized cases) are grouped: the table says what was tried, with a few
of the cases, what the code did, and how many cases passed (an `xfailed` count is a known bug
still open). The table replaces what stands between the two markers in the document.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

BEGIN, END = "<!-- outcomes:begin -->", "<!-- outcomes:end -->"
EXAMPLES = 3


def _cell(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(rows: list[dict]) -> str:
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        test = re.sub(r"\[.*\]$", "", row["test"])
        groups[(test, row["outcome"])].append(row)
    lines = [
        "| suite | what was tried | outcome | cases | result |",
        "|---|---|---|---|---|",
    ]
    for (test, outcome_text), members in sorted(groups.items()):
        file = test.partition("::")[0]
        cases = list(dict.fromkeys(m["case"] for m in members))
        shown = "; ".join(cases[:EXAMPLES]) + (
            f"; … (+{len(cases) - EXAMPLES})" if len(cases) > EXAMPLES else ""
        )
        statuses = defaultdict(int)
        for m in members:
            statuses[m["status"]] += 1
        result = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
        lines.append(
            f"| `{Path(file).name}` | {_cell(shown)} | {_cell(outcome_text)} | {len(members)} | {result} |"
        )
    total = defaultdict(int)
    for row in rows:
        total[row["status"]] += 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(total.items()))
    return "\n".join([f"{len(rows)} recorded cases: {summary}.", "", *lines])


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    rows = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    doc = Path(argv[2])
    text = doc.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        print(f"{doc}: no {BEGIN} … {END} markers", file=sys.stderr)
        return 2
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    doc.write_text(f"{head}{BEGIN}\n{render(rows)}\n{END}{tail}", encoding="utf-8")
    print(f"{doc}: table of {len(rows)} cases written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
