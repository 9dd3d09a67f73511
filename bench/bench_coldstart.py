"""Benchmark: cold start — each handler's import time, and the size of what Lambda loads.

Import time: `python -X importtime -c "import hyperpod_perf.handlers.<m>"` in a fresh
interpreter per run, with the environment the functions get (Powertools settings); the figure is
the cumulative time `-X importtime` reports for the handler module itself (everything it pulls
in, interpreter start excluded). Target (issue 9): < 300 ms each here.

Asset size: the `functions/` tree as the CDK stack packages it (its CODE_ASSET_EXCLUDES), both
unzipped and zipped, plus the dependencies layer built with the stack's own pip command
(websockets for Lambda arm64 / Python 3.12). Target: the total under 5 MB. The AWS-managed
Powertools layer is not counted: it is AWS's, shared, and cached by Lambda independently.

Run: `python -m bench.bench_coldstart`.
"""

from __future__ import annotations

import fnmatch
import io
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import BenchResult, Figure, Progress, project_root
from bench.infra_facts import infra_facts

RUNS = 3
IMPORT_LIMIT_MS = 300.0
ASSET_LIMIT_MB = 5.0
LAMBDA_ENV = {
    "POWERTOOLS_SERVICE_NAME": "hyperpod-perf",
    "POWERTOOLS_METRICS_NAMESPACE": "HyperPodPerf",
    "POWERTOOLS_LOG_LEVEL": "INFO",
    "POWERTOOLS_TRACE_DISABLED": "true",  # no X-Ray daemon here; the SDK is still imported
}


def handler_modules() -> list[str]:
    handlers = project_root() / "functions" / "hyperpod_perf" / "handlers"
    skip = {"__init__", "events", "observability", "settings"}  # shared helpers, not entry points
    return sorted(p.stem for p in handlers.glob("*.py") if p.stem not in skip)


def import_ms(module: str) -> tuple[float, float, list[tuple[str, float]]]:
    """(the module's cumulative import ms, the whole process's CPU ms, its heaviest imports) in a
    fresh process. CPU time is less sensitive than wall time to other load on the machine."""
    env = {**os.environ, **LAMBDA_ENV}
    name = f"hyperpod_perf.handlers.{module}"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {name}"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        raise RuntimeError(f"import {name} failed: {completed.stderr[-2000:]}")
    cpu_ms = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    cumulative = None
    heavy: list[tuple[str, float]] = []
    for line in completed.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        raw = line.removeprefix("import time:").split("|")
        parts = [p.strip() for p in raw]
        if not parts[1].isdigit():
            continue  # the header line
        if parts[2] == name:
            cumulative = int(parts[1]) / 1000
        # the name column is " " + two spaces per nesting level + the module name
        depth = (len(raw[2]) - len(raw[2].lstrip(" ")) - 1) // 2
        if depth in (1, 2):  # what the handler imports, and what those import
            heavy.append((parts[2], int(parts[1]) / 1000))
    if cumulative is None:
        raise RuntimeError(f"-X importtime printed no line for {name}")
    heavy.sort(key=lambda item: -item[1])
    return cumulative, cpu_ms, heavy[:6]


def _excluded(relative: Path, patterns: list[str]) -> bool:
    """CDK's glob excludes, as the stack lists them (`**/x` matches at any depth)."""
    text = relative.as_posix()
    for pattern in patterns:
        if pattern.startswith("**/"):
            tail = pattern[3:]
            if any(fnmatch.fnmatch(part, tail) for part in relative.parts):
                return True
        elif fnmatch.fnmatch(text, pattern) or fnmatch.fnmatch(relative.parts[0], pattern):
            return True
    return False


def tree_sizes(root: Path, patterns: list[str]) -> tuple[int, int, int]:
    """(files, unzipped bytes, zipped bytes) of `root` minus the excludes."""
    files = [
        p for p in sorted(root.rglob("*")) if p.is_file() and not _excluded(p.relative_to(root), patterns)
    ]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(path, path.relative_to(root).as_posix())
    return len(files), sum(p.stat().st_size for p in files), len(buffer.getvalue())


def build_layer(command: list[str]) -> tuple[int, int, int, str]:
    """The dependencies layer, built with the stack's pip command; (files, bytes, zipped, how)."""
    with tempfile.TemporaryDirectory(prefix="hpd-layer-") as tmp:
        args = [a.replace("LAYER_OUT", tmp) for a in command]
        completed = subprocess.run(
            [sys.executable, *args], capture_output=True, text=True, check=False, timeout=300
        )
        if completed.returncode == 0:
            files, size, zipped = tree_sizes(Path(tmp), ["**/__pycache__", "**/*.pyc"])
            return files, size, zipped, "built with the stack's pip command (arm64, Python 3.12 wheels)"
    # Offline: measure the installed copy instead (this machine's platform; close in size).
    import websockets

    root = Path(websockets.__file__).parent
    files, size, zipped = tree_sizes(root, ["**/__pycache__", "**/*.pyc"])
    return (
        files,
        size,
        zipped,
        f"pip could not build it here ({completed.stderr.strip()[-200:]}); "
        "measured the installed websockets package instead",
    )


def run(progress: Progress = print) -> BenchResult:
    result = BenchResult("coldstart", "Cold start: handler import time and the Lambda asset size")
    process_cpu_ms = []
    slowest: tuple[float, str, list[tuple[str, float]]] = (0.0, "", [])
    for module in handler_modules():
        samples: list[float] = []
        cpu_samples: list[float] = []
        for _ in range(RUNS):
            cumulative, cpu, heavy = import_ms(module)
            samples.append(cumulative)
            cpu_samples.append(cpu)
            process_cpu_ms.append(cpu)
            if cumulative > slowest[0]:
                slowest = (cumulative, module, heavy)
        progress(f"  import hyperpod_perf.handlers.{module}: {statistics.median(samples):.0f} ms")
        result.figures.append(
            Figure(
                f"import handlers.{module}",
                "ms",
                samples,
                IMPORT_LIMIT_MS,
                source="issue 9",
                note=f"whole process CPU {statistics.median(cpu_samples):.0f} ms (interpreter start incl.)",
            )
        )

    facts = infra_facts()
    functions_dir = project_root() / "functions"
    files, size, zipped = tree_sizes(functions_dir, facts["code_asset_excludes"])
    layer_files, layer_size, layer_zipped, how = build_layer(facts["layer_command"])
    progress(f"  code {size / 1e6:.2f} MB, zipped {zipped / 1e6:.2f} MB; layer {layer_size / 1e6:.2f} MB")
    result.figures += [
        Figure("code asset (functions/), unzipped", "MB", [size / 1e6], note=f"{files} files"),
        Figure("code asset (functions/), zipped", "MB", [zipped / 1e6]),
        Figure(
            "dependencies layer (" + ", ".join(facts["layer_requirements"]) + "), unzipped",
            "MB",
            [layer_size / 1e6],
            note=f"{layer_files} files; {how}",
        ),
        Figure(
            "code asset + dependencies layer, unzipped",
            "MB",
            [(size + layer_size) / 1e6],
            ASSET_LIMIT_MB,
            source="issue 9",
            note=f"zipped {(zipped + layer_zipped) / 1e6:.2f} MB",
        ),
    ]
    heavy_text = ", ".join(f"{name} {ms:.0f} ms" for name, ms in slowest[2])
    for figure in result.figures:
        if figure.name == f"import handlers.{slowest[1]}":
            figure.why = f"Heaviest imports under it (one run): {heavy_text}."
    result.notes.append(
        f"Heaviest imports under the slowest handler ({slowest[1]}, one run): "
        + ", ".join(f"{name} {ms:.0f} ms" for name, ms in slowest[2])
        + " (nested: a child's time is inside its parent's)."
    )
    result.notes.append(
        "Import times are `-X importtime`'s wall-clock cumulative time of the handler module "
        "(interpreter start excluded), so other load on the machine inflates them; the whole "
        f"process's CPU time (user + sys, interpreter start included) was a median "
        f"{statistics.median(process_cpu_ms):.0f} ms over all handlers. Lambda's Python 3.12 arm64 "
        "runtime differs from this machine; "
        "the figures compare handlers with each other and with the limit, not with Lambda's own "
        "init duration."
    )
    return result


if __name__ == "__main__":
    for figure in run().figures:
        low, high = figure.spread
        print(f"{figure.name}: median {figure.median:,.2f} {figure.unit} ({low:,.2f}-{high:,.2f})")
