"""A record of every bad input the hardening suites tried and what happened, for docs/SECURITY.md.

Why: the security page's table must say what was actually tried and observed, not what someone
remembers. Tests call the ``outcome(case, result)`` fixture after asserting the result; the
conftest hook adds each test's final status (``passed``, ``xfailed`` for a known bug, ...) and,
when ``HPD_OUTCOMES_FILE`` is set, writes all rows to that JSON file at the end of the session.
Rows of tests run in an earlier session are kept, so suites can be run one at a time.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

ENV_VAR = "HPD_OUTCOMES_FILE"


@dataclass
class OutcomeRow:
    test: str  # pytest node id
    case: str  # the bad input, in words
    outcome: str  # what the code did with it
    status: str = "pending"  # the test's result: passed | failed | xfailed | xpassed | skipped


@dataclass
class OutcomeLog:
    path: Path | None
    rows: list[OutcomeRow] = field(default_factory=list)

    @classmethod
    def from_env(cls) -> OutcomeLog:
        value = os.environ.get(ENV_VAR, "").strip()
        return cls(Path(value) if value else None)

    def add(self, test: str, case: str, outcome: str) -> None:
        self.rows.append(OutcomeRow(test, case, outcome))

    def set_status(self, test: str, status: str) -> None:
        for row in self.rows:
            if row.test == test:
                row.status = status

    def write(self) -> Path | None:
        """Merge this session's rows into the file (replacing rows of the same tests)."""
        if self.path is None or not self.rows:
            return None
        ours = {row.test for row in self.rows}
        kept = [row for row in _read(self.path) if row.get("test") not in ours]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        rows = kept + [asdict(row) for row in self.rows]
        self.path.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return self.path


def _read(path: Path) -> list[dict]:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [row for row in rows if isinstance(row, dict)] if isinstance(rows, list) else []
