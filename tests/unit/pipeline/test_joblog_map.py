"""The job-log map's batches (pipeline/joblog_map.py): balanced by bytes, large plain logs cut in
ranges, every byte of the prefix in exactly one batch; a batch with no part is reported."""

from __future__ import annotations

from hyperpod_perf.pipeline import joblog_map
from hyperpod_perf.pipeline.joblog_map import BATCH_BYTES, GZIP_WEIGHT, MAX_BATCH_OBJECTS, plan_batches


def test_objects_fill_a_batch_up_to_the_byte_bound_and_no_further():
    half = BATCH_BYTES // 2
    batches = plan_batches([("a.log", half), ("b.log", half), ("c.log", 1)])
    assert batches == [[("a.log", 0, 0), ("b.log", 0, 0)], [("c.log", 0, 0)]]  # at the bound: one batch


def test_a_gzip_weighs_its_inflation():
    size = BATCH_BYTES // GZIP_WEIGHT
    batches = plan_batches([("a.log.gz", size), ("b.log.gz", 1)])
    assert batches == [[("a.log.gz", 0, 0)], [("b.log.gz", 0, 0)]]


def test_a_large_plain_log_is_cut_into_ranges_that_cover_it_exactly():
    size = 2 * BATCH_BYTES + 5
    batches = plan_batches([("small.log", 10), ("big.log", size), ("after.log", 10)])
    ranges = [piece for batch in batches for piece in batch if piece[0] == "big.log"]
    assert ranges == [
        ("big.log", 0, BATCH_BYTES),
        ("big.log", BATCH_BYTES, 2 * BATCH_BYTES),
        ("big.log", 2 * BATCH_BYTES, size),
    ]
    assert batches[0] == [("small.log", 0, 0)] and batches[-1] == [("after.log", 0, 0)]
    # a large gzip cannot be cut: it stays whole
    assert plan_batches([("big.log.gz", size)]) == [[("big.log.gz", 0, 0)]]


def test_a_batch_holds_at_most_max_batch_objects():
    batches = plan_batches([(f"{i:05d}.log", 1) for i in range(MAX_BATCH_OBJECTS + 1)])
    assert [len(b) for b in batches] == [MAX_BATCH_OBJECTS, 1]


class _Lister:
    def __init__(self, objects):
        self.objects = objects

    def list_prefix(self, uri, limit):
        return "bucket", self.objects[:limit]


class _Store:
    def __init__(self):
        self.data = {}

    def put_json(self, key, value):
        self.data[key] = value
        return key

    def get_json(self, key):
        from hyperpod_perf.domain.errors import NotFound

        if key not in self.data:
            raise NotFound("no such key", code="NoSuchKey")
        return self.data[key]

    def list_keys(self, prefix):
        return [k for k in self.data if k.startswith(prefix)]


def _run():
    from datetime import UTC, datetime

    from hyperpod_perf.domain.layout import RunLayout

    return RunLayout.new("ml-cluster", "exec-3", datetime(2025, 6, 2, tzinfo=UTC))


def test_the_plan_counts_what_it_skips_and_the_reduce_names_batches_without_a_part(monkeypatch):
    from hyperpod_perf.domain.request import DiagnoseRequest

    monkeypatch.setattr(joblog_map, "MAX_TOTAL_BYTES", 25)
    store, run = _Store(), _run()
    request = DiagnoseRequest(cluster="ml-cluster", job_logs_s3_prefix="s3://bucket/job/")
    result = joblog_map.plan_job_logs(
        request, run, sources=_Lister([("a", 10), ("b", 10), ("c", 10)]), store=store
    )
    plan = store.data[run.work(joblog_map.PLAN)]
    assert (plan["objects"], plan["skipped"], plan["bytes"]) == (2, 1, 20)
    assert result["batches"] == 1 and result["max_concurrency"] == 1
    scan, unread = joblog_map.reduce_parts(store, run, None)
    assert scan.bounds.objects_skipped == 1
    assert unread == [("job-log batch(es) 0 of s3://bucket/job/", "no result recorded", "")]
