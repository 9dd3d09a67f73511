"""Entry points the CLI calls for `nccl analyze` and `nccl plan`; they return text, never print."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from hyperpod_perf.models import has_concern
from hyperpod_perf.nccl.analysis import analyze_logs
from hyperpod_perf.nccl.heatmap import render_heatmap_svg
from hyperpod_perf.nccl.io import S3Reader, load_logs
from hyperpod_perf.nccl.planner import render_plan
from hyperpod_perf.nccl.render import render_html, render_json, render_markdown, render_text
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

EXIT_OK = 0
EXIT_CONCERN = 1
EXIT_ERROR = 2
FORMATS = ("text", "json", "md", "html")


def run_analyze(
    paths: list[str],
    fmt: str = "text",
    out_dir: Path | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    instance_type: str | None = None,
    s3_reader: S3Reader | None = None,
) -> tuple[str, int]:
    """Analyse the logs under `paths`; (rendered report, exit code 0 ok / 1 concern / 2 error).

    With `out_dir`, also writes nccl-pairs.{json,md,html} and nccl-heatmap.svg there.
    """
    if fmt not in FORMATS:
        return f"error: unknown format {fmt!r} (choose from {', '.join(FORMATS)})\n", EXIT_ERROR
    loaded = load_logs(paths, s3_reader)
    errors = "".join(f"error: {e}\n" for e in loaded.errors)
    if not loaded.logs:
        return errors + "error: no nccl-tests logs to analyse\n", EXIT_ERROR
    analysis = analyze_logs(loaded.logs, thresholds, instance_type)
    if not analysis.pairs:
        return errors + render_text(analysis) + "error: no log yielded a bandwidth\n", EXIT_ERROR
    renderers = {
        "text": lambda: render_text(analysis),
        "json": lambda: render_json(analysis),
        "md": lambda: render_markdown(analysis),
        "html": lambda: render_html(analysis, thresholds),
    }
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "nccl-pairs.json").write_text(renderers["json"](), encoding="utf-8")
        (out_dir / "nccl-pairs.md").write_text(renderers["md"](), encoding="utf-8")
        (out_dir / "nccl-pairs.html").write_text(renderers["html"](), encoding="utf-8")
        (out_dir / "nccl-heatmap.svg").write_text(
            render_heatmap_svg(analysis, thresholds.nccl_pair_slow_pct, thresholds.nccl_drain_pct),
            encoding="utf-8",
        )
    text = renderers[fmt]()
    if errors and fmt == "text":
        text = errors + text
    if loaded.errors and fmt == "json":  # inputs that could not be read stay visible in the document
        document = json.loads(text)
        document["input_errors"] = list(loaded.errors)
        text = json.dumps(document, indent=2) + "\n"
    code = EXIT_CONCERN if has_concern(analysis.findings) or loaded.errors else EXIT_OK
    return text, code


def run_plan(
    nodes: Sequence[str],
    mode: Literal["full", "quick"] = "full",
    scheduler: Literal["slurm", "eks"] = "slurm",
    suspects: Sequence[str] = (),
    good: Sequence[str] = (),
) -> str:
    """The pair plan as text (sbatch lines or MPIJob manifests). Raises ValueError on bad mode/scheduler."""
    return render_plan(nodes, mode, scheduler, suspects, good)


def read_node_list(text: str) -> list[str]:
    """Nodes from a file: one per line or whitespace/comma separated; `#` starts a comment."""
    nodes: list[str] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        nodes.extend(token for token in line.replace(",", " ").split() if token)
    return list(dict.fromkeys(nodes))
