"""Entry points the CLI calls for `nccl analyze` and `nccl plan`; they return text, never print."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from hyperpod_perf.domain.findings import has_concern
from hyperpod_perf.nccl import ANALYZE_OUT_FILES
from hyperpod_perf.nccl.analysis import analyze_logs
from hyperpod_perf.nccl.formats import render_html, render_json, render_markdown, render_text
from hyperpod_perf.nccl.heatmap import render_heatmap_svg
from hyperpod_perf.nccl.io import S3Reader, load_logs
from hyperpod_perf.nccl.planner import Mode, plan_files, render_plan
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
    placement: Mapping[str, Sequence[str]] | None = None,
    on_read: Callable[[str], None] | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> tuple[str, int]:
    """Analyse the logs under `paths`; (rendered report, exit code 0 ok / 1 concern / 2 error).

    With `out_dir`, also writes ANALYZE_OUT_FILES there. `placement` (node -> network nodes, top
    first, from `--topology FILE`) lets a block of slow pairs across one layer boundary be named the
    fabric's. `on_read` hears each log as it is read, `on_stage` the analysis (progress lines).
    """
    if fmt not in FORMATS:
        return f"error: unknown format {fmt!r} (choose from {', '.join(FORMATS)})\n", EXIT_ERROR
    loaded = load_logs(paths, s3_reader, on_read)
    errors = "".join(f"error: {e}\n" for e in loaded.errors)
    if not loaded.logs:
        return errors + "error: no nccl-tests logs to analyse\n", EXIT_ERROR
    if on_stage is not None:
        on_stage(f"analysing {len(loaded.logs)} log(s)")
    analysis = analyze_logs(loaded.logs, thresholds, instance_type, placement=placement or None)
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
        documents = {
            "nccl-pairs.json": renderers["json"],
            "nccl-pairs.md": renderers["md"],
            "nccl-pairs.html": renderers["html"],
            "nccl-heatmap.svg": lambda: render_heatmap_svg(
                analysis, thresholds.nccl_pair_slow_pct, thresholds.nccl_drain_pct
            ),
        }
        for name in ANALYZE_OUT_FILES:
            (out_dir / name).write_text(documents[name](), encoding="utf-8")
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
    mode: Mode = "full",
    scheduler: Literal["slurm", "eks"] = "slurm",
    suspects: Sequence[str] = (),
    good: Sequence[str] = (),
    layers: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """The pair plan as text (sbatch lines or MPIJob manifests). Raises ValueError on bad mode/scheduler."""
    return render_plan(nodes, mode, scheduler, suspects, good, layers)


def write_plan(
    out_dir: Path,
    nodes: Sequence[str],
    mode: Mode = "full",
    scheduler: Literal["slurm", "eks"] = "slurm",
    suspects: Sequence[str] = (),
    good: Sequence[str] = (),
    layers: Mapping[str, Sequence[str]] | None = None,
) -> list[Path]:
    """One file per round in `out_dir` (and the sbatch script for Slurm); the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in plan_files(nodes, mode, scheduler, suspects, good, layers).items():
        path = out_dir / name
        path.write_text(text, encoding="utf-8")
        if name.endswith((".sh", ".sbatch")):
            path.chmod(0o755)
        written.append(path)
    return written


#: A node as Slurm and Kubernetes name it: an RFC 1123 host name (ip-10-1-2-3, a FQDN) or an EC2
#: instance id (i-0123456789abcdef0, itself of that form). Anything else is refused: these names
#: are printed into shell commands and manifests.
NODE_NAME_RE = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)


class NodeListError(ValueError):
    """A node list that is not one: a binary file, or a name that is no host name or instance id."""


def read_node_list(text: str) -> list[str]:
    """Nodes from a file: one per line or whitespace/comma separated; `#` starts a comment.

    Raises NodeListError on a binary file or a token that is not a host name / instance id."""
    if "\x00" in text or "\ufffd" in text:
        raise NodeListError("not a text file of node names (binary content)")
    nodes: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0]
        for token in line.replace(",", " ").split():
            if not NODE_NAME_RE.match(token):
                raise NodeListError(f"line {number}: {_shown(token)} is not a host name or instance id")
            nodes.append(token)
    return list(dict.fromkeys(nodes))


def check_node_names(names: Sequence[str], what: str) -> None:
    """Names given on the command line (--suspect, --good) or read from the cluster, checked alike."""
    for name in names:
        if not NODE_NAME_RE.match(name):
            raise NodeListError(f"{what} {_shown(name)} is not a host name or instance id")


def _shown(token: str) -> str:
    """A rejected token as a short, printable repr (it may hold control characters)."""
    return repr(token[:40] + ("…" if len(token) > 40 else ""))
