"""Rewrite the golden files of tests/unit/report/test_report_golden.py (then review the diff by eye).

Kept apart from the test so a comparing run can never rewrite what it compares against.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "unit" / "report"))

from test_report_golden import CASES, GOLDEN


def main() -> None:
    for name, render, build in CASES:
        (GOLDEN / name).write_text(render(build()), encoding="utf-8")
        print(f"wrote {GOLDEN / name}")


if __name__ == "__main__":
    main()
