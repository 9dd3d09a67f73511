"""The HyperPod nodes of an EKS cluster as the Kubernetes API lists them (read-only: one GET).

Three steps, all read-only:
1. `eks:DescribeCluster` gives the API server endpoint and its certificate authority.
2. An EKS bearer token: `k8s-aws-v1.` + the base64url (unpadded) of an STS GetCallerIdentity URL
   presigned (SigV4 query, 60 s) with the `x-k8s-aws-id: <cluster name>` header signed in, the
   form `aws eks get-token` writes (awscli customizations/eks/get_token.py) and
   aws-iam-authenticator verifies (pkg/token/token.go: prefix, https, path `/`, Action
   GetCallerIdentity, x-k8s-aws-id among X-Amz-SignedHeaders, 0 <= X-Amz-Expires <= 900). The
   URL carries no secret key; STS itself is only called by the API server.
3. `GET /api/v1/nodes?labelSelector=...&limit=...` over TLS verified against that CA, following
   `metadata.continue`; every response is bounded in size.

Kubernetes says who may list nodes: the function's role needs an EKS access entry and a policy
or RBAC binding that covers `nodes` (cluster-scoped; AmazonEKSViewPolicy does not list them, see
docs/DEPLOY.md). A 401 means the API server knows no such principal, a 403 that RBAC refused.
"""

from __future__ import annotations

import base64
import json
import ssl
from typing import Any
from urllib.parse import urlencode

import urllib3
from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.errors import translate_client_error
from hyperpod_perf.domain.errors import AccessDenied, AwsAdapterError, TransientError

# bandit B105: the EKS token scheme's fixed prefix (aws-iam-authenticator), not a secret
TOKEN_PREFIX = "k8s-aws-v1."  # nosec B105
CLUSTER_ID_HEADER = "x-k8s-aws-id"
#: The presign parameter aws eks get-token uses (STS keeps the URL valid 15 minutes regardless).
PRESIGN_EXPIRES_S = 60
HYPERPOD_SELECTOR = "sagemaker.amazonaws.com/compute-type=hyperpod"
PAGE_LIMIT = 500
MAX_PAGES = 20  # 10,000 nodes
MAX_PAGE_BYTES = 32 * 1024 * 1024
CONTEXT = "kubernetes:GET /api/v1/nodes"


def eks_token(sts_client: Any, cluster_name: str) -> str:
    """The bearer token `aws eks get-token --cluster-name <name>` prints."""

    def sign_cluster_header(request: Any, **_: Any) -> None:
        request.headers[CLUSTER_ID_HEADER] = cluster_name

    events = sts_client.meta.events
    unique = f"hyperpod-perf-k8s-aws-id-{id(sign_cluster_header)}"
    events.register_first("before-sign.sts.GetCallerIdentity", sign_cluster_header, unique_id=unique)
    try:
        url = sts_client.generate_presigned_url(
            "get_caller_identity", Params={}, ExpiresIn=PRESIGN_EXPIRES_S, HttpMethod="GET"
        )
    except (ClientError, BotoCoreError) as exc:
        raise translate_client_error(exc, "sts:GetCallerIdentity (presign)") from exc
    finally:
        events.unregister("before-sign.sts.GetCallerIdentity", unique_id=unique)
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def _ssl_context(ca_data: str) -> ssl.SSLContext:
    """A context that trusts only the cluster's CA (certificateAuthority.data is base64 PEM)."""
    try:
        pem = base64.b64decode(ca_data).decode()
        return ssl.create_default_context(cadata=pem)
    except (ValueError, ssl.SSLError) as exc:
        message = f"the cluster's certificate authority is unreadable: {exc}"
        raise AwsAdapterError(message, context=CONTEXT) from exc


class EksNodeLabels:
    """List the HyperPod nodes of an EKS cluster (their labels carry the network-node layers)."""

    def __init__(self, eks_client: Any, sts_client: Any, *, timeout_s: float = 10.0) -> None:
        self._eks = eks_client
        self._sts = sts_client
        self._timeout = urllib3.Timeout(connect=5.0, read=timeout_s)

    def _endpoint(self, cluster_name: str) -> tuple[str, str]:
        try:
            cluster = self._eks.describe_cluster(name=cluster_name)["cluster"]
        except (ClientError, BotoCoreError) as exc:
            raise translate_client_error(exc, f"eks:DescribeCluster {cluster_name}") from exc
        endpoint = cluster.get("endpoint") or ""
        ca = (cluster.get("certificateAuthority") or {}).get("data") or ""
        if not endpoint.startswith("https://") or not ca:
            raise AwsAdapterError(
                f"EKS cluster {cluster_name} reports no https endpoint or CA "
                f"(status {cluster.get('status')})",
                context="eks:DescribeCluster",
            )
        return endpoint.rstrip("/"), ca

    def node_list(self, cluster_name: str, label_selector: str = HYPERPOD_SELECTOR) -> dict[str, Any]:
        """A NodeList of every matching node (all pages)."""
        endpoint, ca = self._endpoint(cluster_name)
        token = eks_token(self._sts, cluster_name)
        pool = urllib3.PoolManager(ssl_context=_ssl_context(ca), timeout=self._timeout, retries=False)
        items: list[dict[str, Any]] = []
        cont: str | None = None
        for _ in range(MAX_PAGES):
            query = {"labelSelector": label_selector, "limit": str(PAGE_LIMIT)}
            if cont:
                query["continue"] = cont
            page = self._get(pool, f"{endpoint}/api/v1/nodes?{urlencode(query)}", token)
            items.extend(page.get("items") or [])
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                break
        return {"apiVersion": "v1", "kind": "NodeList", "items": items}

    def _get(self, pool: urllib3.PoolManager, url: str, token: str) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        try:
            response = pool.request("GET", url, headers=headers, preload_content=False)
            try:
                body = response.read(MAX_PAGE_BYTES + 1)
            finally:
                response.release_conn()
        except urllib3.exceptions.SSLError as exc:
            raise AwsAdapterError(f"TLS to the API server failed: {exc}", context=CONTEXT) from exc
        except urllib3.exceptions.HTTPError as exc:
            raise TransientError(
                f"the API server could not be reached ({type(exc).__name__}): a private-only endpoint "
                "is not reachable from this function",
                context=CONTEXT,
            ) from exc
        status = response.status
        if status == 401:
            raise AccessDenied(
                "401: the API server did not accept the token (no EKS access entry for this role?)",
                code="Unauthorized",
                context=CONTEXT,
            )
        if status == 403:
            raise AccessDenied(
                "403: RBAC does not let this role list nodes (see docs/DEPLOY.md, Kubernetes topology)",
                code="Forbidden",
                context=CONTEXT,
            )
        if status >= 500 or status == 429:
            raise TransientError(f"HTTP {status} from the API server", code=str(status), context=CONTEXT)
        if status != 200:
            raise AwsAdapterError(f"HTTP {status} from the API server", code=str(status), context=CONTEXT)
        if len(body) > MAX_PAGE_BYTES:
            raise AwsAdapterError(f"a page of nodes larger than {MAX_PAGE_BYTES} bytes", context=CONTEXT)
        try:
            document = json.loads(body)
        except ValueError as exc:
            raise AwsAdapterError(f"the API server answered no JSON: {exc}", context=CONTEXT) from exc
        if not isinstance(document, dict):
            raise AwsAdapterError("the API server answered no NodeList", context=CONTEXT)
        return document


__all__ = ["HYPERPOD_SELECTOR", "EksNodeLabels", "eks_token"]
