"""The functions' code asset: the package as Lambda gets it, with bytecode for the runtime's Python.

Why bytecode: a function can write only to /tmp (Security Overview of AWS Lambda, "Lambda
isolation technologies"), so Python cannot cache what it compiles in the code directory and a
source-only asset compiles every project module it imports on every cold start (bench/RESULTS.md,
cold start: 5-20 % of a handler's cold start here). The asset therefore carries `__pycache__`
compiled by the runtime's Python version (a `.pyc` is valid for one version only: its name carries
the interpreter's cache tag, e.g. `cpython-312`). They are `checked-hash` pycs (PEP 552): the
interpreter checks each against its source's hash, not its modification time, so the times a zip
extraction sets cannot make them stale, and a pyc that does not match its source is recompiled,
never trusted. Where no Python of the runtime's version is installed, the asset is the source
alone, as before, and the build says so.

No CDK import here: the bench builds the same asset to import it (bench/bench_coldstart.py).
"""

from __future__ import annotations

import fnmatch
import shutil

# bandit B404: the build runs the runtime's Python on fixed argv
import subprocess  # nosec B404
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

#: Where Lambda puts the function's code (LAMBDA_TASK_ROOT): the path tracebacks name.
TASK_ROOT = "/var/task"

Runner = Callable[..., subprocess.CompletedProcess[str]]


def excluded(relative: Path, patterns: Iterable[str]) -> bool:
    """CDK's glob excludes, as the stack lists them (`**/x` matches at any depth, a bare name the
    top-level entry)."""
    text = relative.as_posix()
    for pattern in patterns:
        if pattern.startswith("**/"):
            tail = pattern[3:]
            if any(fnmatch.fnmatch(part, tail) for part in relative.parts):
                return True
        elif fnmatch.fnmatch(text, pattern) or fnmatch.fnmatch(relative.parts[0], pattern):
            return True
    return False


def asset_files(root: Path, patterns: Iterable[str]) -> list[Path]:
    """The files under `root` the asset holds (sorted), minus the excludes."""
    patterns = tuple(patterns)
    return [p for p in sorted(root.rglob("*")) if p.is_file() and not excluded(p.relative_to(root), patterns)]


def runtime_python(version: str, run: Runner = subprocess.run) -> str | None:
    """An interpreter of `version` ("3.12"): this one if it is, else `python<version>` on PATH if
    it runs and reports that version; None when there is none."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    candidate = shutil.which(f"python{version}")
    if candidate is None:
        return None
    probe = "import sys; print(f'{sys.version_info.major}.{sys.version_info.minor}')"
    done = run([candidate, "-c", probe], capture_output=True, text=True, check=False, timeout=60)
    return candidate if done.returncode == 0 and done.stdout.strip() == version else None


def build_code_asset(
    source: Path,
    output: Path,
    patterns: Iterable[str],
    python: str | None,
    run: Runner = subprocess.run,
) -> bool:
    """Copy the asset's files from `source` to `output`, then compile them with `python` (None:
    source only). Returns whether the asset carries bytecode. A failed compile raises: a deploy
    must not ship half an asset."""
    for path in asset_files(source, patterns):
        destination = output / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination)
    if python is None:
        return False
    command = [
        python,
        "-m",
        "compileall",
        "-q",
        "--invalidation-mode",
        "checked-hash",
        "-s",
        str(output),
        "-p",
        TASK_ROOT,
        str(output),
    ]
    done = run(command, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        output_text = done.stdout + done.stderr
        raise RuntimeError(f"compiling the code asset failed: {' '.join(command)}\n{output_text}")
    return True
