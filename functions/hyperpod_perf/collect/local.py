"""Run collector.sh on this machine: backs `hyperpod-perf snapshot --local`.

The script is shipped inside the package (the same bytes the SSM Session document embeds),
so a local run and a remote run produce the same container for the same node.
"""

from __future__ import annotations

import contextlib
import os
import signal

# bandit B404: runs the packaged collector.sh, fixed argv
import subprocess  # nosec B404
import time
from pathlib import Path

COLLECTOR_SCRIPT = "collector.sh"


class CollectorError(RuntimeError):
    """The collector could not be started or did not finish in time."""


def collector_script_path() -> Path:
    """Where the packaged collector.sh lives (next to this module)."""
    return Path(__file__).with_name(COLLECTOR_SCRIPT)


def run_local_collector(timeout_s: float = 120, env: dict[str, str] | None = None) -> str:
    """Run the collector with bash and return its stdout (the snapshot container).

    `env` adds to (and overrides) this process's environment, e.g. `HPD_TIMEOUT` or the
    `HPD_SYSFS`/`HPD_PROCFS`/`HPD_ROOT` roots. A non-zero exit is not an error here: the
    container itself records every command's rc, and a partial container is still evidence.
    """
    script = collector_script_path()
    if not script.is_file():
        raise CollectorError(f"collector script not found at {script}")
    try:
        # Own session: on timeout the whole tree (timeout, tools, their children) is killed.
        # bandit B603, B607: fixed argv, no shell
        process = subprocess.Popen(  # nosec B603 B607
            ["bash", str(script)],
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise CollectorError("bash is not installed; the collector needs bash") from exc
    except OSError as exc:
        raise CollectorError(f"collector could not be started: {exc}") from exc
    try:
        stdout, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        _kill_group(process)
        raise CollectorError(f"collector did not finish within {timeout_s:g} s") from exc
    return stdout.decode("utf-8", errors="replace")


#: Sweeps of the collector's session before giving up: each kills every live member it finds, and
#: a member forked during one sweep (`timeout` starting its command) is found by the next.
KILL_SWEEPS = 50


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill every process of the collector's session: `timeout` moves each command into a
    process group of its own, so killing the collector's group alone would leave them running.
    One listing is not enough: a `timeout` listed alive can fork its command before it is killed,
    and that command is in no listing yet, so the session is swept until no live member is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(process.pid, signal.SIGKILL)
    for _ in range(KILL_SWEEPS):
        members = _session_members(process.pid)
        if not members:
            break
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def _session_members(session_id: int) -> list[int]:
    """Live pids whose session is `session_id` (Linux /proc; empty elsewhere). A zombie is left out:
    it is already dead and is reaped by its parent or, once that is killed, by init."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # fields: state ppid pgrp session ...
        if len(fields) > 3 and fields[3] == str(session_id) and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members
