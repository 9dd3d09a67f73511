"""The metrics stage against a real Prometheus server (Debian's `prometheus` and `promtool`).

Given a simulated cluster's exporter history (hyperpod_perf_dev.sim.metrics: the exporters' real
metric and label names) backfilled into a real TSDB, when the stage runs its PromQL against the
real server, then each planted fault comes back as its finding, on its node, in its minutes.

Expectations were set from the planted faults before running: a fault from t1 to t2 is flagged from
t1 (a gauge) and, for a counter, up to `rate_range` (4 scrapes = 4 min) past t2, because rate()
over the 4 minutes before a step still sees the fault's last increments.

Skips, saying why, where Prometheus is not installed; CI installs it (.ci/run).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.request import Request, urlopen

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from hyperpod_perf.aws.prometheus import AmpWorkspace, PrometheusHttp
from hyperpod_perf.domain.cluster import ClusterNode
from hyperpod_perf.domain.errors import AccessDenied
from hyperpod_perf.domain.findings import Severity
from hyperpod_perf.metrics.model import MetricsWindow
from hyperpod_perf.service.metrics import judge_metrics
from hyperpod_perf_dev.prometheus_local import serve_openmetrics
from hyperpod_perf_dev.sim.metrics import Fault, FleetHistory, SimNode

pytestmark = pytest.mark.prometheus  # skipped without it, failed in CI (tests/conftest.py)

END = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
WINDOW_START = END - timedelta(minutes=60)
HANG_END = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
NODES = [SimNode(f"i-0{n:016x}", f"ip-10-1-0-{10 + n}") for n in range(8)]
HANG_NODES = [SimNode(f"i-0{n + 100:016x}", f"ip-10-2-0-{10 + n}") for n in range(4)]
CLUSTER = [ClusterNode(instance_id=n.instance_id, group="gpu", hostname=n.hostname) for n in NODES] + [
    ClusterNode(instance_id="i-0000000000000dead", group="gpu", hostname="ip-10-1-0-99")  # no exporter on it
]


def at(minutes: int, base: datetime = WINDOW_START) -> datetime:
    return base + timedelta(minutes=minutes)


FAULTS = [
    Fault("power_cap", at(10), at(50), node="ip-10-1-0-12"),
    Fault("hot", at(30), at(45), node="ip-10-1-0-13"),
    Fault("efa_retrans", at(5), at(30), node="ip-10-1-0-15"),
    Fault("xid", at(20), END, node="ip-10-1-0-16", code=79),
    Fault("iowait", at(15), at(35), node="ip-10-1-0-11"),
    Fault("slurm_drain", at(40), END + timedelta(minutes=1), node="ip-10-1-0-17"),
]
HANG_FAULTS = [
    Fault("hang", at(20, HANG_END - timedelta(minutes=60)), at(35, HANG_END - timedelta(minutes=60)))
]


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("prom")
    faults = root / "faults.om"
    FleetHistory(NODES, END - timedelta(hours=2), END, faults=FAULTS).write(str(faults))
    hang = root / "hang.om"
    FleetHistory(HANG_NODES, HANG_END - timedelta(hours=2), HANG_END, faults=HANG_FAULTS).write(str(hang))
    with serve_openmetrics(faults, hang, workdir=root) as url:
        yield url


def window(end: datetime = END) -> MetricsWindow:
    return MetricsWindow.around(end - timedelta(minutes=60), end, baseline_minutes=60)


def by_check(verdict) -> dict[tuple[str | None, str], object]:
    return {(f.node, f.check): f for f in verdict.findings}


def test_each_planted_fault_is_found_on_its_node_in_its_minutes(prometheus):
    verdict = judge_metrics(PrometheusHttp(prometheus), CLUSTER, window())
    found = by_check(verdict)
    concerns = sorted(key for key, f in found.items() if f.severity is Severity.CONCERN)
    ids = {n.hostname: n.instance_id for n in NODES}
    assert concerns == sorted(
        [
            (ids["ip-10-1-0-12"], "metrics.gpu_clock"),
            (ids["ip-10-1-0-13"], "metrics.gpu_thermal"),
            (ids["ip-10-1-0-15"], "metrics.efa_retransmits"),
            (ids["ip-10-1-0-16"], "metrics.xid"),
            (ids["ip-10-1-0-11"], "metrics.iowait"),
            (ids["ip-10-1-0-11"], "metrics.io_pressure"),
            (ids["ip-10-1-0-17"], "metrics.slurm_state"),
        ]
    )
    clock = found[(ids["ip-10-1-0-12"], "metrics.gpu_clock")]
    assert clock.evidence["host"] == "ip-10-1-0-12"
    assert (clock.evidence["from"], clock.evidence["to"]) == ("2026-12-01T11:10:00Z", "2026-12-01T11:50:00Z")
    assert clock.evidence["slowest_gpu_clock_mhz"] in range(1285, 1296)  # 1290 +- 5 MHz of jitter
    assert "power-capped" in clock.summary and "clock event: software power cap" in clock.summary
    hot = found[(ids["ip-10-1-0-13"], "metrics.gpu_thermal")]
    assert (hot.evidence["from"], hot.evidence["minutes"]) == ("2026-12-01T11:30:00Z", 15)
    retrans = found[(ids["ip-10-1-0-15"], "metrics.efa_retransmits")]
    assert retrans.evidence["from"] == "2026-12-01T11:05:00Z"
    assert 25 <= retrans.evidence["minutes"] <= 29  # the fault's 25 min + up to the 4-min rate range
    # 400 packets/s on each of 4 devices against 2 each: 1,600 vs 8 for the fleet
    assert 1300 <= retrans.evidence["rate"] <= 1600 and retrans.evidence["fleet_median"] == 8.0
    xid = found[(ids["ip-10-1-0-16"], "metrics.xid")]
    assert (xid.evidence["codes"], xid.evidence["first"]) == ([79], "2026-12-01T11:20:00Z")
    drained = found[(ids["ip-10-1-0-17"], "metrics.slurm_state")]
    assert (drained.evidence["state"], drained.evidence["minutes"]) == ("drained", 20)
    assert verdict.suspects == sorted({key[0] for key in concerns})
    assert verdict.nodes_seen == 8 and verdict.nodes_without_series == ["i-0000000000000dead"]
    assert verdict.errors == []


def test_what_the_exporters_do_not_publish_is_said_not_taken_for_healthy(prometheus):
    verdict = judge_metrics(PrometheusHttp(prometheus), CLUSTER, window())
    assert verdict.exporters_missing == [
        "dcgm-exporter: DCGM_FI_DEV_THERMAL_VIOLATION (not in the exporter's defaults), "
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL (not in the exporter's defaults)"
    ]
    coverage = [f.summary for f in verdict.findings if f.check == "metrics.coverage"]
    assert "1 node(s) have no series at all: i-0000000000000dead" in coverage
    # one chart per finding with a node series behind it (the Xid and the Slurm state have none)
    assert [c["check"] for c in verdict.charts] == [
        "metrics.gpu_clock", "metrics.gpu_thermal", "metrics.efa_retransmits",
        "metrics.iowait", "metrics.io_pressure",
    ]  # fmt: skip


def test_every_gpu_idle_at_once_is_the_jobs_hang(prometheus):
    verdict = judge_metrics(PrometheusHttp(prometheus), [], window(HANG_END))
    [hang] = [f for f in verdict.findings if f.severity is Severity.CONCERN]
    assert (hang.node, hang.check, hang.evidence["nodes"]) == (None, "metrics.gpu_idle", 4)
    assert (hang.evidence["from"], hang.evidence["minutes"]) == ("2026-12-02T11:20:00Z", 15)


def test_a_window_with_no_series_is_a_concern_not_an_all_clear(prometheus):
    empty = judge_metrics(PrometheusHttp(prometheus), CLUSTER, window(datetime(2026, 11, 1, tzinfo=UTC)))
    assert empty.nodes_seen == 0
    [finding] = empty.findings
    assert (finding.check, finding.severity) == ("metrics.coverage", Severity.CONCERN)


# -- Amazon Managed Prometheus: SigV4 checked by a local endpoint, then answered by the real server --

CREDENTIALS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")


class _AmpEndpoint(BaseHTTPRequestHandler):
    """Recomputes the request's SigV4 signature with botocore (service aps, the region, the secret
    it knows) and answers 403 as AMP does on a mismatch; a valid request is forwarded unchanged."""

    upstream = ""
    secret = CREDENTIALS.secret_key
    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        authorization = self.headers.get("Authorization", "")
        self.seen.append({"path": self.path, "authorization": authorization})
        signed = authorization.partition("SignedHeaders=")[2].partition(",")[0].split(";")
        headers = {k: v for k, v in self.headers.items() if k.lower() in signed and k.lower() != "host"}
        request = AWSRequest(
            method="POST", url=f"http://{self.headers['Host']}{self.path}", data=body, headers=headers
        )
        request.context["timestamp"] = self.headers["X-Amz-Date"]
        signer = SigV4Auth(
            Credentials(CREDENTIALS.access_key, self.secret, CREDENTIALS.token), "aps", "us-west-2"
        )
        expected = signer.signature(
            signer.string_to_sign(request, signer.canonical_request(request)), request
        )
        if f"Signature={expected}" not in authorization or "/us-west-2/aps/aws4_request" not in authorization:
            self._answer(
                403,
                b'{"message":"The request signature we calculated does not match the signature '
                b'you provided."}',
            )
            return
        path = self.path.removeprefix("/workspaces/ws-test")
        with urlopen(Request(self.upstream + path, data=body, method="POST")) as answer:
            self._answer(answer.status, answer.read())

    def _answer(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def amp_endpoint(prometheus) -> Iterator[str]:
    _AmpEndpoint.upstream = prometheus
    _AmpEndpoint.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AmpEndpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    _AmpEndpoint.secret = CREDENTIALS.secret_key


def test_amp_queries_are_sigv4_signed_for_aps_and_judged_alike(amp_endpoint, prometheus):
    workspace = AmpWorkspace("ws-test", region="us-west-2", credentials=CREDENTIALS, endpoint=amp_endpoint)
    signed = judge_metrics(workspace, CLUSTER, window())
    plain = judge_metrics(PrometheusHttp(prometheus), CLUSTER, window())
    assert [(f.node, f.check, f.summary) for f in signed.findings] == [
        (f.node, f.check, f.summary) for f in plain.findings
    ]
    assert signed.source == "amp:us-west-2:ws-test"
    assert {s["path"] for s in _AmpEndpoint.seen} == {"/workspaces/ws-test/api/v1/query_range"}
    assert len(_AmpEndpoint.seen) == signed.queries


def test_a_signature_amp_rejects_is_access_denied_and_the_cli_exits_2(amp_endpoint):
    _AmpEndpoint.secret = "not-the-secret"
    workspace = AmpWorkspace("ws-test", region="us-west-2", credentials=CREDENTIALS, endpoint=amp_endpoint)
    with pytest.raises(AccessDenied, match="signature we calculated does not match"):
        judge_metrics(workspace, CLUSTER, window())


def test_cli_metrics_against_the_server_prints_host_names_and_exits_1(prometheus, tmp_path):
    out = tmp_path / "metrics.json"
    run = subprocess.run(
        [sys.executable, "-m", "hyperpod_perf.cli", "metrics", "--prometheus", prometheus,
         "--end", "2026-12-01T12:00:00Z", "--format", "json", "-o", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr
    document = json.loads(out.read_text(encoding="utf-8"))
    nodes = {f["node"] for f in document["findings"] if f["severity"] == "CONCERN"}
    assert nodes == {
        "ip-10-1-0-11",
        "ip-10-1-0-12",
        "ip-10-1-0-13",
        "ip-10-1-0-15",
        "ip-10-1-0-16",
        "ip-10-1-0-17",
    }
    empty = subprocess.run(
        [sys.executable, "-m", "hyperpod_perf.cli", "metrics", "--prometheus", prometheus,
         "--end", "2026-11-01T00:00:00Z"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert empty.returncode == 2 and "no series for any node" in empty.stdout
