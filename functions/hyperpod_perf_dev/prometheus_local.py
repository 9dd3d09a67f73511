"""A real Prometheus server on loopback, serving a simulated (or recorded) history.

Why the real server: the metrics stage's PromQL (rate ranges, aggregation by node labels, step
alignment, `or` of renamed series) is only right if the real engine says so. The history is
OpenMetrics text with timestamps; `promtool tsdb create-blocks-from openmetrics` writes TSDB blocks
(Prometheus docs, "Backfilling from OpenMetrics format") and `prometheus` serves them read-only
with an empty scrape config. Debian's package provides both (`apt-get install prometheus`).
"""

from __future__ import annotations

import contextlib
import shutil
import socket

# bandit B404: runs the local promtool / prometheus binaries, fixed argv
import subprocess  # nosec B404
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

START_TIMEOUT_SECONDS = 30.0


class PrometheusUnavailable(RuntimeError):
    """promtool or prometheus is not installed, or the server did not come up."""


def binaries() -> tuple[str, str] | None:
    promtool, prometheus = shutil.which("promtool"), shutil.which("prometheus")
    return (promtool, prometheus) if promtool and prometheus else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def serve_openmetrics(*histories: Path, workdir: Path | None = None) -> Iterator[str]:
    """Backfill the files (non-overlapping times) into one TSDB, serve it, yield the base URL."""
    found = binaries()
    if not found:
        raise PrometheusUnavailable("promtool / prometheus not installed (apt-get install prometheus)")
    promtool, prometheus = found
    with contextlib.ExitStack() as stack:
        root = workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hpd-prom-")))
        tsdb, config = root / "tsdb", root / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 60s\nscrape_configs: []\n", encoding="utf-8")
        for openmetrics in histories:
            # bandit B603: fixed argv, local files
            backfill = subprocess.run(  # nosec B603
                [promtool, "tsdb", "create-blocks-from", "openmetrics", str(openmetrics), str(tsdb)],
                capture_output=True,
                text=True,
                check=False,
            )
            if backfill.returncode != 0:
                raise PrometheusUnavailable(
                    f"promtool could not backfill {openmetrics}: {backfill.stderr.strip()[-300:]}"
                )
        port = _free_port()
        log = (root / "prometheus.log").open("w", encoding="utf-8")
        stack.callback(log.close)
        # bandit B603: fixed argv, loopback only
        server = subprocess.Popen(  # nosec B603
            [
                prometheus,
                f"--config.file={config}",
                f"--storage.tsdb.path={tsdb}",
                "--storage.tsdb.retention.time=100y",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )

        def stop() -> None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()

        stack.callback(stop)
        url = f"http://127.0.0.1:{port}"
        _wait_ready(url, server)
        yield url


def _wait_ready(url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise PrometheusUnavailable(f"prometheus exited with {server.returncode} before it was ready")
        try:
            # bandit B310: urlopen of the local server on 127.0.0.1 (readiness)
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as answer:  # nosec B310
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise PrometheusUnavailable(f"prometheus at {url} not ready after {START_TIMEOUT_SECONDS:g} s")
