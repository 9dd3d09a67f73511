"""PlanJobLogs and ScanJobLogs: a job's logs under an S3 prefix, read by many functions at once.

A 1,000-node job writes tens to hundreds of GiB of logs, more than one function can read in its
15 minutes. PlanJobLogs lists the prefix (paginated, bounded) and writes the batches for the
job-log Distributed Map: objects grouped up to BATCH_BYTES (a gzip weighs GZIP_WEIGHT times its
stored size: it inflates), plain objects larger than that cut into line-aligned byte ranges
(`domain.bounded_stream.line_range`: every line read by exactly one child). Each child
(ScanJobLogs) scans its batch and writes a partial scan (`joblogs.state_io`); a child that fails
for good writes a part naming the objects it could not read. NcclResults then merges the parts
(`reduce_parts`), so the report judges the whole job and says what was not read.

Why a batch list written by the planner rather than the Map's own `ItemReader` over
`s3:listObjectsV2` with an `ItemBatcher`: moto 5.2.5, which runs the real state machine in the
tests, cannot parse `ItemBatcher`, and its `listObjectsV2` reader makes one call (at most 1,000
keys); the planner also knows each object's size, so batches are balanced by bytes, not counts.
The ItemReader reads the planner's list (`s3:getObject`, JSON), as the node map does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.domain.bounded_stream import ReadBounds
from hyperpod_perf.domain.errors import AwsAdapterError, NotFound
from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.domain.request import DiagnoseRequest

#: Stored bytes per child (1 GiB of plain text: ~45 s of CPU at the worst case measured).
BATCH_BYTES = 1024**3
#: A gzip inflates 10-45x (bounded_stream.MAX_RATIO's note): it counts this much towards a batch.
GZIP_WEIGHT = 10
MAX_BATCH_OBJECTS = 500
#: Objects listed in all (one S3 listing page holds 1,000).
MAX_OBJECTS = 200_000
#: Stored bytes read in all; objects beyond are skipped and counted.
MAX_TOTAL_BYTES = 2 * 1024**4
#: Children running at once (each one Lambda invocation).
MAX_CONCURRENCY = 100
PLAN = "joblogs-plan"
BATCHES = "joblogs-batches"
PART = "joblogs-part-"


class JobLogLister(Protocol):
    def list_prefix(self, uri: str, limit: int) -> tuple[str, list[tuple[str, int]]]: ...


class JobLogReader(Protocol):
    def pieces(
        self, bucket: str, pieces: list[tuple[str, int, int]], bounds: ReadBounds
    ) -> Iterator[tuple[str, Iterable[bytes]]]: ...


def plan_batches(objects: list[tuple[str, int]]) -> list[list[tuple[str, int, int]]]:
    """Batches of (key, start, end) pieces (end 0: the whole object), in key order."""
    batches: list[list[tuple[str, int, int]]] = []
    current: list[tuple[str, int, int]] = []
    weight = 0

    def close() -> None:
        nonlocal current, weight
        if current:
            batches.append(current)
        current, weight = [], 0

    for key, size in objects:
        if not key.endswith(".gz") and size > BATCH_BYTES:
            close()
            for start in range(0, size, BATCH_BYTES):
                batches.append([(key, start, min(start + BATCH_BYTES, size))])
            continue
        cost = size * GZIP_WEIGHT if key.endswith(".gz") else size
        if current and (weight + cost > BATCH_BYTES or len(current) >= MAX_BATCH_OBJECTS):
            close()
        current.append((key, 0, 0))
        weight += cost
    close()
    return batches


def plan_job_logs(
    request: DiagnoseRequest, run: RunLayout, *, sources: JobLogLister, store: ReportStore
) -> dict[str, Any]:
    """List the request's job-log prefix and write the map's batches and the plan."""
    uri = request.job_logs_s3_prefix
    if uri is None:  # the ASL enters PlanJobLogs only for a request that names a prefix
        raise ValueError("PlanJobLogs needs the request's job_logs_s3_prefix")
    plan: dict[str, Any] = {"uri": uri, "bucket": None, "batches": 0, "objects": 0, "bytes": 0}
    plan.update(skipped=0, error=None)
    batches: list[list[tuple[str, int, int]]] = []
    try:
        bucket, objects = sources.list_prefix(uri, MAX_OBJECTS + 1)
    except AwsAdapterError as exc:
        plan["error"] = {"reason": exc.reason, "detail": str(exc)[:500]}
    else:
        kept: list[tuple[str, int]] = []
        total = 0
        for key, size in objects[:MAX_OBJECTS]:
            if total + size > MAX_TOTAL_BYTES:
                plan["skipped"] += 1
                continue
            kept.append((key, size))
            total += size
        plan["skipped"] += max(0, len(objects) - MAX_OBJECTS)
        batches = plan_batches(kept)
        plan.update(bucket=bucket, batches=len(batches), objects=len(kept), bytes=total)
    items = [{"index": i, "bucket": plan["bucket"], "pieces": batch} for i, batch in enumerate(batches)]
    key = store.put_json(run.work(BATCHES), items)
    store.put_json(run.work(PLAN), plan)
    return {
        "key": key,
        "batches": len(batches),
        "max_concurrency": max(1, min(len(batches), MAX_CONCURRENCY)),
    }


def scan_batch(
    batch: dict[str, Any],
    run: RunLayout,
    *,
    sources: JobLogReader,
    store: ReportStore,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One child of the map: scan its pieces and write the partial scan (or, after a failure
    that the map caught, a part naming what was not read)."""
    from hyperpod_perf.joblogs import scan_logs
    from hyperpod_perf.joblogs.state_io import scan_to_dict

    index = int(batch["index"])
    pieces = [(str(k), int(s), int(e)) for k, s, e in batch.get("pieces") or []]
    key = run.work(f"{PART}{index:05d}")
    if error is not None:
        store.put_json(
            key, {"index": index, "failed": True, "error": error, "pieces": pieces[:50], "count": len(pieces)}
        )
        return {"index": index, "failed": True}
    nodes = store.get_json(run.work("cluster"))["nodes"]
    instance_type = next((n.get("instance_type") for n in nodes if n.get("instance_type")), None)
    bounds = ReadBounds()
    scan = scan_logs(sources.pieces(str(batch["bucket"]), pieces, bounds), instance_type, bounds)
    scan.drop_cache()
    store.put_json(key, {"index": index, **scan_to_dict(scan)})
    return {"index": index, "logs": scan.logs, "records": scan.records}


def reduce_parts(
    store: ReportStore, run: RunLayout, instance_type: str | None
) -> tuple[Any, list[tuple[str, str, str]]] | None:
    """The merged scan of every part, and what was not read ((where, reason, detail) each):
    None when the run has no job-log plan (the prefix was read directly)."""
    from hyperpod_perf.joblogs import JobLogScan
    from hyperpod_perf.joblogs.state_io import scan_from_dict

    try:
        plan = store.get_json(run.work(PLAN))
    except NotFound:
        return None
    scan = JobLogScan(instance_type)
    unread: list[tuple[str, str, str]] = []
    if plan.get("error"):
        unread.append((plan["uri"], plan["error"]["reason"], plan["error"]["detail"]))
    scan.bounds.objects_skipped += int(plan.get("skipped") or 0)
    seen: set[int] = set()
    prefix = run.work(PART).removesuffix(".json")
    for key in sorted(store.list_keys(prefix)):
        part = store.get_json(key)
        index = int(part.get("index", -1))
        seen.add(index)
        if part.get("failed"):
            error = part.get("error") or {}
            first = ", ".join(p[0] for p in part.get("pieces", [])[:3])
            unread.append(
                (
                    f"{part.get('count', 0)} object(s) of job-log batch {index} ({first}…)",
                    str(error.get("Error") or error.get("reason") or "failed"),
                    str(error.get("Cause") or error.get("detail") or "")[:500],
                )
            )
            continue
        scan.merge(scan_from_dict(part))
    missing = sorted(set(range(int(plan.get("batches") or 0))) - seen)
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (" …" if len(missing) > 10 else "")
        unread.append((f"job-log batch(es) {shown} of {plan['uri']}", "no result recorded", ""))
    return scan, unread
