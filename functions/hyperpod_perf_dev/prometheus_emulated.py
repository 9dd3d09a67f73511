"""An emulated Prometheus HTTP API: the metrics stage's range queries answered from a model of the
simulated fleet, after an assumed query latency. For the time-to-findings bench at 1,024 nodes.

Why not the real server there: a real Prometheus serving 1,024 nodes x 8 GPUs x 6 h needs ~7.6 GB
of OpenMetrics backfilled first (bench/RESULTS.md, metrics section); the tests and the demo use the
real one (`prometheus_local`). This is an emulation and says so: it knows only the stage's own
queries (`metrics.signals.SIGNALS`, matched with their rate range wildcarded) and answers any other
query as Prometheus answers one it cannot parse (HTTP 400, `bad_data`), so a changed signal fails
loudly instead of reading as an empty, healthy fleet.

What it answers is what the real server answers over `sim.metrics.FleetHistory` for the same nodes
and faults (checked against the real server: tests/integration/test_prometheus_emulated.py): the
same label sets per exporter (dcgm-exporter's `Hostname` and `instance`; the EFA exporter's and
node_exporter's `instance`; the Slurm exporter's `node`, `status`), the same levels and rates
(healthy: SM clock 1,980 MHz, 8 GPUs x 650 W, EFA retransmits 2/s per device x 4; a power-capped
node at ~1,290 MHz with 80 % of the time power-throttled; an EFA port retransmitting 400/s per
device), and no series where FleetHistory writes none (the thermal-violation and NVLink counters,
two of the EFA error counters), so coverage notes come out alike.

The wire format is the real server's, taken from answers of Debian's prometheus 2.42 captured here
(tests/fixtures/prometheus/): `{"status":"success","data":{"resultType":"matrix","result":[...]}}`,
each series `{"metric":{<labels, sorted>},"values":[[<unix seconds, a JSON number>,"<value>"],...]}`
sorted by labels, values as Go's `strconv.FormatFloat(v, 'f', -1, 64)` writes them ("1980",
"5191.3279999999995", "8000000000"), `Content-Type: application/json`; an error is
`{"status":"error","errorType":"bad_data","error":...}` with HTTP 400. Points are evaluated at
start, start + step, ... <= end, as a range query evaluates.

The latency: every answer is sent `latency_s` after its request arrived (or when built, if later:
the emulator's own CPU is then visible, not hidden). AMP documents quotas, not query latency (AMP
User Guide, "Amazon Managed Service for Prometheus service quotas"); the figure is an assumption
the bench states. AMP requests are SigV4-signed: with `require_sigv4` an unsigned request gets 403
as AMP answers it (the signature itself is checked in tests/integration/test_metrics_prometheus.py).

Run as `python -m hyperpod_perf_dev.prometheus_emulated` with the spec as JSON on stdin (see
`serve_emulated`): the server then runs in a process of its own, so building answers does not hold
the measured process's interpreter lock, as a remote AMP would not.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re

# bandit B404: starts this same module in a child interpreter, fixed argv
import subprocess  # nosec B404
import sys
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from hyperpod_perf.metrics.signals import SIGNALS, Exporter
from hyperpod_perf_dev.sim.metrics import Fault, SimNode

_RANGE = re.compile(r"\[\d+s\]")
START_TIMEOUT_SECONDS = 30.0


def prom_float(value: float) -> str:
    """A sample value as Prometheus writes it (Go's FormatFloat 'f', -1: shortest, no exponent)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    return f"{Decimal(text):f}" if "e" in text or "E" in text else text


def prom_time(seconds: float) -> str:
    """A sample time as Prometheus writes it: unix seconds, at most 3 decimals, no trailing zeros."""
    millis = round(seconds * 1000)
    if millis % 1000 == 0:
        return str(millis // 1000)
    return f"{millis / 1000:.3f}".rstrip("0")


def _key(query: str) -> str:
    return _RANGE.sub("[RANGE]", query)


#: Every query the stage sends (rate range wildcarded) -> (signal name, the metric it reads).
QUERIES: dict[str, tuple[str, str]] = {}
for _signal in SIGNALS:
    _queries = _signal.promqls(0)
    _metrics = _signal.metrics if _signal.summed else (_signal.metrics[0],)
    for _metric, _query in zip(_metrics, _queries, strict=True):
        QUERIES[_key(_query)] = (_signal.name, _metric)

#: Counters FleetHistory never writes: their queries answer an empty matrix, as the real server's.
ABSENT = frozenset(
    {
        "DCGM_FI_DEV_THERMAL_VIOLATION",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "node_amazonefa_impaired_remote_conn_events",
        "node_amazonefa_unresponsive_remote_events",
    }
)
_EXPORTER_OF = {s.name: s.exporter for s in SIGNALS}
#: A node without faults: (level, jitter amplitude) per signal, FleetHistory's healthy node as the
#: queries aggregate it (min / max / sum over its 8 GPUs, sum over its 4 EFA devices).
HEALTHY: dict[str, tuple[float, float]] = {
    "sm_clock": (1980.0, 0.0),
    "gpu_temp": (62.5, 0.5),
    "power": (5200.0, 20.0),
    "gpu_util": (97.5, 0.5),
    "efa_retrans": (8.0, 0.0),
    "efa_bytes": (8.0e9, 0.0),
    "iowait": (1.0, 0.0),
    "io_pressure": (0.5, 0.0),
}


@dataclass
class FleetModel:
    """The simulated fleet's series as the stage's queries read them (FleetHistory's levels)."""

    nodes: Sequence[SimNode]
    faults: Sequence[Fault] = ()
    _by_host: dict[str, list[tuple[str, float, float, int]]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_host = {}
        for f in self.faults:
            hosts = [f.node] if f.node else [n.hostname for n in self.nodes]
            for host in hosts:
                self._by_host.setdefault(host, []).append(
                    (f.kind, f.start.timestamp(), f.end.timestamp(), f.code)
                )

    def _active(self, host: str, t: float) -> set[str]:
        return {kind for kind, start, end, _ in self._by_host.get(host, ()) if start <= t < end}

    def _xid(self, host: str, t: float) -> int:
        """The gauge holds the last Xid after the fault ends (DCGM_FI_DEV_XID_ERRORS)."""
        last = 0
        for kind, start, _, code in sorted(self._by_host.get(host, ()), key=lambda f: f[1]):
            if kind == "xid" and start <= t:
                last = code
        return last

    def value(self, signal: str, metric: str, host: str, t: float, jitter: float) -> float | None:
        """The value a query for (signal, metric) answers for `host` at `t`; None: no point."""
        if host not in self._by_host:
            level, amplitude = HEALTHY.get(signal, (0.0, 0.0))
            return level + amplitude * jitter
        active = self._active(host, t)
        idle = "hang" in active or "idle_node" in active
        if signal == "sm_clock":
            if idle:
                return 345.0
            if "power_cap" in active:
                return 1290.0 + 5 * jitter
            return 1700.0 if "hot" in active else 1980.0
        if signal == "gpu_temp":
            return 40.0 if idle else (91.0 + jitter if "hot" in active else 62.5 + 0.5 * jitter)
        if signal == "power":
            return 960.0 if idle else (5600.0 if "power_cap" in active else 5200.0 + 20 * jitter)
        if signal == "gpu_util":
            return 0.0 if idle else 97.5 + 0.5 * jitter
        if signal == "xid":
            return float(self._xid(host, t))
        if signal == "power_violation":
            return 0.8 if "power_cap" in active else 0.0
        if signal == "clock_reasons":
            return 4.0 if "power_cap" in active else 0.0
        if signal == "efa_retrans":
            return 1600.0 if "efa_retrans" in active else 8.0
        if signal == "efa_bytes":
            return 4.0e3 if "hang" in active else 8.0e9
        if signal == "iowait":
            return 45.0 if "iowait" in active else 1.0
        if signal == "io_pressure":
            return 50.0 if "iowait" in active else 0.5
        return 0.0  # pcie_replay, efa_errors (retrans_timeout_events), efa_rx_drops

    def answer(self, query: str, start: float, end: float, step: float) -> tuple[int, bytes]:
        """(HTTP status, body) for one range query, as the real server writes them."""
        known = QUERIES.get(_key(query))
        if known is None:
            return 400, _error(f"emulated Prometheus: not one of the metrics stage's queries: {query[:120]}")
        if step <= 0 or end < start:
            return 400, _error('invalid parameter "step"' if step <= 0 else "end before start")
        signal, metric = known
        if metric in ABSENT:
            return 200, b'{"status":"success","data":{"resultType":"matrix","result":[]}}'
        count = int((end - start) // step) + 1
        stamps = [start + i * step for i in range(count)]
        times = [prom_time(t) for t in stamps]
        parts = []
        constant: dict[float, str] = {}
        first = int(start // step)
        for host in sorted(n.hostname for n in self.nodes):
            seed = zlib.crc32(host.encode())
            healthy = host not in self._by_host
            if signal == "slurm_state":
                parts += self._states(host, healthy, stamps, times, constant)
                continue
            level, amplitude = HEALTHY.get(signal, (0.0, 0.0))
            if healthy and amplitude == 0.0:  # the same points for every such node: built once
                if level not in constant:
                    text = prom_float(level)
                    constant[level] = ",".join(f'[{ts},"{text}"]' for ts in times)
                points = [constant[level]]
            elif healthy:  # 2,001 jitter steps: their texts built once per signal
                texts = _jitter_texts(level, amplitude)
                points = [f'[{ts},"{texts[_jitter_step(seed, first + i)]}"]' for i, ts in enumerate(times)]
            else:
                points = self._points(signal, metric, host, seed, stamps, times, first)
            if _EXPORTER_OF[signal] is Exporter.DCGM:
                labels = {"Hostname": host, "instance": host}
            else:
                labels = {"instance": host}
            text = json.dumps(labels, separators=(",", ":"))
            parts.append(f'{{"metric":{text},"values":[{",".join(points)}]}}')
        body = '{"status":"success","data":{"resultType":"matrix","result":[' + ",".join(parts) + "]}}"
        return 200, body.encode()

    def _states(
        self, host: str, healthy: bool, stamps: list[float], times: list[str], constant: dict[float, str]
    ) -> list[str]:
        """slurm_node_status by (node, status): one series per state the node was in."""
        drained = (
            [False] * len(stamps) if healthy else ["slurm_drain" in self._active(host, t) for t in stamps]
        )
        series = []
        for status in ("allocated", "drained"):
            if healthy and status == "allocated":
                if -1.0 not in constant:
                    constant[-1.0] = ",".join(f'[{ts},"1"]' for ts in times)
                points = constant[-1.0]
            else:
                want = status == "drained"
                points = ",".join(f'[{ts},"1"]' for ts, d in zip(times, drained, strict=True) if d == want)
            if points:
                labels = json.dumps({"node": host, "status": status}, separators=(",", ":"))
                series.append(f'{{"metric":{labels},"values":[{points}]}}')
        return series

    def _points(
        self,
        signal: str,
        metric: str,
        host: str,
        seed: int,
        stamps: list[float],
        times: list[str],
        first: int,
    ) -> list[str]:
        points = []
        for i, t in enumerate(stamps):
            jitter = _jitter_step(seed, first + i) / 1000.0 - 1.0
            value = self.value(signal, metric, host, t, jitter)
            if value is not None:
                points.append(f'[{times[i]},"{prom_float(value)}"]')
        return points


def _jitter_step(seed: int, index: int) -> int:
    """0..2000, fixed per (node, grid step): the same answer for the same query, every time."""
    return (seed + index * 2654435761) % 2001


@functools.lru_cache(maxsize=64)
def _jitter_texts(level: float, amplitude: float) -> tuple[str, ...]:
    return tuple(prom_float(level + amplitude * (k / 1000.0 - 1.0)) for k in range(2001))


def _error(message: str) -> bytes:
    return json.dumps(
        {"status": "error", "errorType": "bad_data", "error": message}, separators=(",", ":")
    ).encode()


def _seconds(text: str) -> float:
    """A step as the API takes it: a duration ("90s", "1m") or a float of seconds."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)?", text.strip())
    if not match:
        raise ValueError(text)
    return float(match.group(1)) * units[match.group(2) or "s"]


class EmulatedPrometheus:
    """The HTTP endpoint: POST or GET `.../api/v1/query_range`, answered after `latency_s`."""

    def __init__(self, model: FleetModel, *, latency_s: float, require_sigv4: bool = False) -> None:
        self.model = model
        self.latency_s = latency_s
        self.require_sigv4 = require_sigv4
        self.queries = 0
        self.build_s_max = 0.0
        self._lock = threading.Lock()
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._serve(urlsplit(self.path).query)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self._serve(self.rfile.read(length).decode())

            def _serve(self, form: str) -> None:
                arrived = time.monotonic()
                status, body = emulator._answer(self.path, form, self.headers.get("Authorization", ""))
                with emulator._lock:
                    emulator.build_s_max = max(emulator.build_s_max, time.monotonic() - arrived)
                time.sleep(max(0.0, emulator.latency_s - (time.monotonic() - arrived)))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _answer(self, path: str, form: str, authorization: str) -> tuple[int, bytes]:
        if not urlsplit(path).path.endswith("/api/v1/query_range"):
            return 404, b"404 page not found\n"
        if self.require_sigv4 and not authorization.startswith("AWS4-HMAC-SHA256 "):
            return 403, b'{"message":"Missing Authentication Token"}'
        fields = {k: v[0] for k, v in parse_qs(form).items()}
        try:
            start, end = float(fields["start"]), float(fields["end"])
            step = _seconds(fields["step"])
        except (KeyError, ValueError):
            return 400, _error("invalid parameter: start, end and step are required")
        with self._lock:
            self.queries += 1
        return self.model.answer(fields.get("query", ""), start, end, step)

    def serve_forever(self) -> None:
        self._server.serve_forever(poll_interval=0.2)

    def start(self) -> EmulatedPrometheus:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def spec(
    nodes: Sequence[SimNode], faults: Sequence[Fault], *, latency_s: float, require_sigv4: bool = False
) -> dict[str, Any]:
    return {
        "nodes": [[n.instance_id, n.hostname] for n in nodes],
        "faults": [[f.kind, f.start.timestamp(), f.end.timestamp(), f.node, f.code] for f in faults],
        "latency_s": latency_s,
        "require_sigv4": require_sigv4,
    }


def from_spec(document: dict[str, Any]) -> EmulatedPrometheus:
    from datetime import UTC

    nodes = [SimNode(i, h) for i, h in document["nodes"]]
    faults = [
        Fault(kind, datetime.fromtimestamp(s, UTC), datetime.fromtimestamp(e, UTC), node=node, code=code)
        for kind, s, e, node, code in document["faults"]
    ]
    return EmulatedPrometheus(
        FleetModel(nodes, faults),
        latency_s=float(document["latency_s"]),
        require_sigv4=bool(document.get("require_sigv4")),
    )


@contextlib.contextmanager
def serve_emulated(
    nodes: Sequence[SimNode], faults: Sequence[Fault], *, latency_s: float, require_sigv4: bool = False
) -> Iterator[str]:
    """The emulator in a child interpreter; yields its base URL, stops it on exit."""
    # bandit B603: this module in a child interpreter, fixed argv, the spec on stdin
    child = subprocess.Popen(  # nosec B603
        [sys.executable, "-m", "hyperpod_perf_dev.prometheus_emulated"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        # bandit B101: type narrowing, Popen was given PIPEs for both (dev-only code)
        assert child.stdin is not None and child.stdout is not None  # nosec B101
        child.stdin.write(json.dumps(spec(nodes, faults, latency_s=latency_s, require_sigv4=require_sigv4)))
        child.stdin.close()
        url = child.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"the emulated Prometheus did not start (exit {child.poll()})")
        yield url
    finally:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def main() -> int:
    server = from_spec(json.load(sys.stdin))
    print(server.url, flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
