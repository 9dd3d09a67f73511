"""The topology adapters against their real protocols.

- EC2 DescribeInstanceTopology: moto does not implement it (its EC2 responses raise
  NotImplementedError for the action), so botocore's Stubber checks every request against the
  service model and answers in the documented response shape (the real capture of
  tests/fixtures/real/topology).
- The Kubernetes node list: a local HTTPS server (127.0.0.1, an ephemeral port, a throw-away CA)
  serves the NodeList shape in pages and checks the bearer token as aws-iam-authenticator's
  verifier does before it would call STS (pkg/token/token.go).
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import boto3
import pytest
from botocore.stub import Stubber
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from hyperpod_perf.aws.ec2_topology import MAX_IDS_PER_CALL, InstanceTopology
from hyperpod_perf.aws.eks_nodes import HYPERPOD_SELECTOR, EksNodeLabels, eks_token
from hyperpod_perf.domain.errors import AccessDenied, AwsAdapterError, NotFound, TransientError
from hyperpod_perf.parse.topology import from_instance_topology, from_node_list

FIXTURES = Path(__file__).parents[1] / "fixtures"
REAL_EC2 = json.loads(
    (FIXTURES / "real/topology/ec2_describe-instance-topology_p4de_2-instances.json").read_text()
)
NODELIST = json.loads((FIXTURES / "topology/eks_nodelist_hyperpod_p5.json").read_text())
REGION = "us-west-2"
EKS_CLUSTER = "ml-cluster-eks"
LOOPBACK = "127.0.0.1"


def _ec2() -> Any:
    return boto3.client(
        "ec2", region_name=REGION, aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret"
    )


def _ids(n: int) -> list[str]:
    return [f"i-{k:017x}" for k in range(1, n + 1)]


def test_instance_ids_go_in_batches_of_100_and_each_batch_follows_next_token() -> None:
    # Given 150 instance ids: a batch of 100 answered in two pages, then one of 50
    client = _ec2()
    ids = _ids(150)
    first, second = REAL_EC2["Instances"]
    with Stubber(client) as stub:
        stub.add_response(
            "describe_instance_topology",
            {"Instances": [first], "NextToken": "p2"},
            {"InstanceIds": ids[:100]},
        )
        stub.add_response(
            "describe_instance_topology",
            {"Instances": [second]},
            {"InstanceIds": ids[:100], "NextToken": "p2"},
        )
        stub.add_response("describe_instance_topology", {"Instances": []}, {"InstanceIds": ids[100:]})
        # When the adapter describes them
        document = InstanceTopology(client).describe(ids)
        stub.assert_no_pending_responses()
    # Then every page's instances are merged, in the shape the parser reads
    assert MAX_IDS_PER_CALL == 100
    assert from_instance_topology(document) == from_instance_topology(REAL_EC2)
    assert len(from_instance_topology(document)) == 2


def test_instances_ec2_does_not_know_end_the_attempt_after_one_call_as_not_found() -> None:
    # Given the API refuses the first batch, as it may for instances in HyperPod's service account
    client = _ec2()
    with Stubber(client) as stub:
        stub.add_client_error(
            "describe_instance_topology",
            service_error_code="InvalidInstanceID.NotFound",
            service_message="The instance IDs 'i-00000000000000001' do not exist",
            expected_params={"InstanceIds": _ids(100)},
        )
        with pytest.raises(NotFound) as raised:
            InstanceTopology(client).describe(_ids(250))
        stub.assert_no_pending_responses()  # one call, not three
    assert raised.value.code == "InvalidInstanceID.NotFound"


def test_a_role_without_the_permission_is_access_denied() -> None:
    client = _ec2()
    with Stubber(client) as stub:
        stub.add_client_error("describe_instance_topology", service_error_code="UnauthorizedOperation")
        with pytest.raises(AccessDenied):
            InstanceTopology(client).describe(_ids(2))


# --- the Kubernetes API --------------------------------------------------------------------------


def _certificate(tmp: Path) -> tuple[Path, Path, str]:
    """A self-signed certificate for 127.0.0.1: (cert file, key file, base64 PEM as EKS reports it)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(LOOPBACK))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_file, key_file = tmp / "server.crt", tmp / "server.key"
    cert_file.write_bytes(pem)
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file, base64.b64encode(pem).decode()


def token_problem(token: str, cluster: str) -> str | None:
    """What aws-iam-authenticator's Verify would refuse in the token before it calls STS, or None."""
    if len(token) > 4096 or not token.startswith("k8s-aws-v1."):
        return "prefix or length"
    body = token.removeprefix("k8s-aws-v1.")
    if "=" in body:
        return "padded base64"
    url = urlparse(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode())
    if url.scheme != "https" or url.path != "/" or not url.hostname.startswith("sts."):
        return f"url {url.scheme}://{url.hostname}{url.path}"
    query = {k.lower(): v for k, v in parse_qs(url.query).items()}
    allowed = {
        "action",
        "version",
        "x-amz-algorithm",
        "x-amz-credential",
        "x-amz-date",
        "x-amz-expires",
        "x-amz-security-token",
        "x-amz-signature",
        "x-amz-signedheaders",
    }
    if set(query) - allowed or any(len(v) != 1 for v in query.values()):
        return f"query parameters {sorted(set(query) - allowed)}"
    if query["action"] != ["GetCallerIdentity"]:
        return "action"
    if "x-k8s-aws-id" not in query["x-amz-signedheaders"][0].split(";"):
        return "x-k8s-aws-id not signed"
    if not 0 <= int(query["x-amz-expires"][0]) <= 900:
        return "expires"
    signed_at = dt.datetime.strptime(query["x-amz-date"][0], "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
    if dt.datetime.now(dt.UTC) > signed_at + dt.timedelta(minutes=15):
        return "expired"
    return None


class _Api(BaseHTTPRequestHandler):
    """GET /api/v1/nodes in pages of one item, refusing a token the verifier would refuse."""

    status = 200
    seen: list[dict[str, Any]]

    def do_GET(self) -> None:
        url = urlparse(self.path)
        query = parse_qs(url.query)
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        problem = token_problem(token, EKS_CLUSTER)
        self.server.seen.append({"path": url.path, "query": query, "problem": problem})  # type: ignore[attr-defined]
        if self.server.status != 200 or problem:  # type: ignore[attr-defined]
            self._send(401 if problem else self.server.status, {"kind": "Status"})  # type: ignore[attr-defined]
            return
        index = int(query.get("continue", ["0"])[0])
        page = {"kind": "NodeList", "apiVersion": "v1", "items": NODELIST["items"][index : index + 1]}
        if index + 1 < len(NODELIST["items"]):
            page["metadata"] = {"continue": str(index + 1)}
        self._send(200, page)

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def _api_server(tmp: Path, status: int = 200) -> Iterator[tuple[str, str, list[dict[str, Any]]]]:
    cert_file, key_file, ca_data = _certificate(tmp)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    server.status, server.seen = status, []  # type: ignore[attr-defined]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", ca_data, server.seen  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


class _Eks:
    """eks:DescribeCluster's answer for the test server (moto's endpoint is not one that listens)."""

    def __init__(self, endpoint: str, ca_data: str) -> None:
        self.endpoint, self.ca_data, self.calls = endpoint, ca_data, []

    def describe_cluster(self, name: str) -> dict[str, Any]:
        self.calls.append(name)
        return {
            "cluster": {
                "name": name,
                "status": "ACTIVE",
                "endpoint": self.endpoint,
                "certificateAuthority": {"data": self.ca_data},
            }
        }


def _sts() -> Any:
    return boto3.client(
        "sts", region_name=REGION, aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret"
    )


def test_the_token_is_the_presigned_get_caller_identity_url_with_the_cluster_header_signed() -> None:
    token = eks_token(_sts(), EKS_CLUSTER)
    assert token_problem(token, EKS_CLUSTER) is None
    url = base64.urlsafe_b64decode(token.removeprefix("k8s-aws-v1.") + "==").decode()
    assert "X-Amz-Expires=60" in url and "x-k8s-aws-id" in url


def test_the_hyperpod_nodes_are_listed_over_verified_tls_following_continue(tmp_path: Path) -> None:
    # Given an API server that serves one node per page and checks the token
    with _api_server(tmp_path) as (endpoint, ca_data, seen):
        eks = _Eks(endpoint, ca_data)
        # When the adapter lists the HyperPod nodes
        node_list = EksNodeLabels(eks, _sts()).node_list(EKS_CLUSTER)
    # Then both pages were read with a good token and the HyperPod label selector
    assert eks.calls == [EKS_CLUSTER]
    assert [s["problem"] for s in seen] == [None, None]
    assert all(s["path"] == "/api/v1/nodes" for s in seen)
    assert seen[0]["query"]["labelSelector"] == [HYPERPOD_SELECTOR]
    assert seen[1]["query"]["continue"] == ["1"]
    layers = from_node_list(node_list)
    assert layers["i-00f3cbe8dfee6b675"][1] == "nn-6ff5053c3a4d86db7"
    assert layers["i-0f190b8fa232cef49"][1] == "nn-1a2b3c4d5e6f70819"


REFUSALS = [(401, AccessDenied), (403, AccessDenied), (503, TransientError)]


@pytest.mark.parametrize(("status", "error"), REFUSALS)
def test_refusals_of_the_api_server_are_named(tmp_path: Path, status: int, error: type[Exception]) -> None:
    with _api_server(tmp_path, status) as (endpoint, ca_data, _seen), pytest.raises(error) as raised:
        EksNodeLabels(_Eks(endpoint, ca_data), _sts()).node_list(EKS_CLUSTER)
    assert str(status) in str(raised.value)


def test_an_api_server_whose_certificate_is_not_the_clusters_ca_is_refused(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    _, _, other_ca = _certificate(tmp_path / "other")
    with _api_server(tmp_path) as (endpoint, _ca, seen), pytest.raises(AwsAdapterError, match="TLS"):
        EksNodeLabels(_Eks(endpoint, other_ca), _sts()).node_list(EKS_CLUSTER)
    assert seen == []  # nothing was sent to a server the CA does not vouch for
