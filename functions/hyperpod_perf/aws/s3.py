"""The report bucket: every artefact of a run (raw node output, work files, reports)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.errors import translate_client_error

#: Concurrent GETs of one `get_many` (and the S3 client's connection pool: aws/clients.py).
READ_CONCURRENCY = 32


class ReportStore:
    """Reads and writes one bucket. Keys are built by the caller (domain.layout)."""

    def __init__(self, client: Any, bucket: str) -> None:
        self._s3 = client
        self.bucket = bucket

    def put_text(self, key: str, text: str, content_type: str = "text/plain; charset=utf-8") -> str:
        return self.put_bytes(key, text.encode("utf-8"), content_type)

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> str:
        try:
            self._s3.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type)
        except (ClientError, BotoCoreError) as exc:
            raise translate_client_error(exc, f"s3:PutObject s3://{self.bucket}/{key}") from exc
        return key

    def put_json(self, key: str, value: Any) -> str:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        return self.put_text(key, text, "application/json")

    def get_bytes(self, key: str) -> bytes:
        try:
            return self._s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except (ClientError, BotoCoreError) as exc:
            raise translate_client_error(exc, f"s3:GetObject s3://{self.bucket}/{key}") from exc

    def get_many(self, keys: Sequence[str]) -> list[bytes]:
        """Every object's bytes, in the order of `keys`, READ_CONCURRENCY requests at a time.

        Why concurrent: S3 serves small objects in tens of milliseconds each (AWS's S3 performance
        guidelines) and scales with parallel connections, so the 1,024 node results of a run take
        ~25 s one GET after another and well under a second this way. The first error is raised
        (translated, like get_bytes) once every request has ended."""
        if len(keys) < 2:
            return [self.get_bytes(key) for key in keys]
        with ThreadPoolExecutor(
            max_workers=min(READ_CONCURRENCY, len(keys)), thread_name_prefix="s3-get"
        ) as pool:
            return list(pool.map(self.get_bytes, keys))

    def get_text(self, key: str) -> str:
        return self.get_bytes(key).decode("utf-8", errors="replace")

    def get_json(self, key: str) -> Any:
        return json.loads(self.get_bytes(key))

    def list_keys(self, prefix: str, *, limit: int = 100_000) -> list[str]:
        """All keys under a prefix, in key order (bounded)."""
        keys: list[str] = []
        try:
            paginator = self._s3.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
                keys.extend(item["Key"] for item in page.get("Contents", []))
                if len(keys) >= limit:
                    return keys[:limit]
        except (ClientError, BotoCoreError) as exc:
            raise translate_client_error(exc, f"s3:ListBucket s3://{self.bucket}/{prefix}") from exc
        return keys

    def list_objects(self, prefix: str, *, limit: int = 100_000) -> list[tuple[str, int]]:
        """(key, size) of every object under a prefix, in key order (bounded)."""
        objects: list[tuple[str, int]] = []
        try:
            paginator = self._s3.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
                objects.extend((item["Key"], int(item.get("Size") or 0)) for item in page.get("Contents", []))
                if len(objects) >= limit:
                    return objects[:limit]
        except (ClientError, BotoCoreError) as exc:
            raise translate_client_error(exc, f"s3:ListBucket s3://{self.bucket}/{prefix}") from exc
        return objects

    def list_prefixes(self, prefix: str) -> list[str]:
        """Immediate "sub-folders" of a prefix (used to find the previous run of a cluster)."""
        prefixes: list[str] = []
        try:
            paginator = self._s3.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix, Delimiter="/"):
                prefixes.extend(p["Prefix"] for p in page.get("CommonPrefixes", []))
        except (ClientError, BotoCoreError) as exc:
            raise translate_client_error(exc, f"s3:ListBucket s3://{self.bucket}/{prefix}") from exc
        return sorted(prefixes)


def split_s3_uri(uri: str) -> tuple[str, str]:
    """`s3://bucket/prefix` -> (bucket, prefix)."""
    rest = uri.removeprefix("s3://")
    bucket, _, prefix = rest.partition("/")
    return bucket, prefix


#: Bounds for reading a prefix of logs (NCCL results): enough for 512 nodes' pairs, no more.
MAX_PREFIX_OBJECTS = 200_000
MAX_OBJECT_BYTES = 32 * 1024 * 1024


def read_prefix_texts(client: Any, uri: str) -> list[tuple[str, str]]:
    """(key, text) of every object under `s3://bucket/prefix` (bounded; oversized objects cut)."""
    bucket, prefix = split_s3_uri(uri)
    store = ReportStore(client, bucket)
    texts: list[tuple[str, str]] = []
    for key in store.list_keys(prefix, limit=MAX_PREFIX_OBJECTS):
        if key.endswith("/"):
            continue
        try:
            response = client.get_object(Bucket=bucket, Key=key, Range=f"bytes=0-{MAX_OBJECT_BYTES - 1}")
            data = response["Body"].read()
        except (ClientError, BotoCoreError) as exc:
            raise translate_client_error(exc, f"s3:GetObject s3://{bucket}/{key}") from exc
        texts.append((key, data.decode("utf-8", errors="replace")))
    return texts
