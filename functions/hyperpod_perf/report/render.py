"""Entry points for `hyperpod-perf report render` and `hyperpod-perf report diff`.

Both read stored JSON reports (any run, any time) and return (text, exit code) so the CLI stays a
thin argparse wrapper. Exit codes: 0 success; for `diff`, 1 when the newer report has concerns
the older one did not (scriptable: "did anything get worse?"); 2 for unreadable input.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from hyperpod_perf.domain.bounded_read import FileTooLarge, read_bounded
from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.domain.report import Report
from hyperpod_perf.report.email import render_email
from hyperpod_perf.report.history import diff_reports, render_diff_text
from hyperpod_perf.report.html import render_html
from hyperpod_perf.report.json_report import load_report, render_json
from hyperpod_perf.report.markdown import render_diff_markdown, render_markdown

FORMATS: dict[str, Callable[[Report], str]] = {
    "html": render_html,
    "md": render_markdown,
    "json": render_json,
    "text": render_email,
}

#: A stored report.json: a 2,000-node run's is ~35 MB; past 64 MiB it is not one of ours.
REPORT_FILE_MAX_BYTES = 64 * 1024 * 1024

EXIT_OK = 0
EXIT_NEW_CONCERNS = 1
EXIT_BAD_INPUT = 2


def render_report(report: Report, fmt: str) -> str:
    try:
        renderer = FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}") from None
    return renderer(report)


def read_report(path: str | Path) -> Report:
    """A stored JSON report; errors name the file and say what is wrong in one line."""
    try:
        text = read_bounded(path, REPORT_FILE_MAX_BYTES, "report").decode("utf-8")
    except FileTooLarge as exc:
        raise ValueError(str(exc).removeprefix(f"{path}: ")) from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a JSON report (binary content, not UTF-8 text)") from None
    try:
        return load_report(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{path}: not a hyperpod-perf report ({where}: {first['msg']})") from None
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def render_command(path: str | Path, fmt: str = "html") -> tuple[str, int]:
    """`hyperpod-perf report render REPORT.json --format html|md|json|text`."""
    try:
        return render_report(read_report(path), fmt), EXIT_OK
    except ValueError as exc:
        return f"error: {exc}\n", EXIT_BAD_INPUT


def diff_command(old_path: str | Path, new_path: str | Path, fmt: str = "text") -> tuple[str, int]:
    """`hyperpod-perf report diff OLD.json NEW.json [--format text|json|md]`."""
    try:
        old, new = read_report(old_path), read_report(new_path)
    except ValueError as exc:
        return f"error: {exc}\n", EXIT_BAD_INPUT
    delta = diff_reports(old, new)
    if delta.previous_location is None:
        delta = delta.model_copy(update={"previous_location": str(old_path)})
    if fmt == "json":
        text = json.dumps(delta.model_dump(mode="json"), ensure_ascii=False, indent=1) + "\n"
    elif fmt == "text":
        text = render_diff_text(delta)
    elif fmt == "md":
        text = render_diff_markdown(delta)
    else:
        return f"error: unknown diff format {fmt!r}; choose text, json or md\n", EXIT_BAD_INPUT
    worse = any(f.severity is Severity.CONCERN for f in delta.new)
    return text, EXIT_NEW_CONCERNS if worse else EXIT_OK
