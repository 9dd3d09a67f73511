"""Job logs read from S3 and CloudWatch Logs (moto), and the pipeline's job-log step.

The log text is the real excerpts of tests/fixtures/real/joblogs (SOURCES.md); the buckets, groups
and streams around them are the test's own.
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from hyperpod_perf.aws.joblogs import JobLogSources, ReadBounds, iter_log_group, iter_prefix_logs
from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.cli import main
from hyperpod_perf.domain.errors import AccessDenied
from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.domain.request import DiagnoseRequest
from hyperpod_perf.joblogs import analyze_logs
from hyperpod_perf.pipeline.gather import job_logs

REGION = "us-west-2"
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "joblogs"
BUCKET = "job-logs-bucket"


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        yield


def _client(service: str) -> Any:
    return boto3.client(service, region_name=REGION)


def _put(key: str, body: bytes) -> None:
    _client("s3").put_object(Bucket=BUCKET, Key=key, Body=body)


def test_prefix_objects_stream_as_lines_gzip_included(aws):
    text = (REAL / "nccl-229-ofi-tcp-rxm.log").read_bytes()
    _put("job/a.log", text)
    _put("job/b.log.gz", gzip.compress((REAL / "nccl-563-register-memory-pdsh.log").read_bytes()))
    _put("job/", b"")
    logs = [(name, list(lines)) for name, lines in iter_prefix_logs(_client("s3"), f"s3://{BUCKET}/job/")]
    assert [name for name, _ in logs] == [f"s3://{BUCKET}/job/a.log", f"s3://{BUCKET}/job/b.log.gz"]
    assert logs[0][1] == text.splitlines()
    findings = analyze_logs(logs)
    assert {f.check for f in findings if f.severity.value == "CONCERN"} == {"nccl.transport", "nccl.memlock"}


def test_prefix_bounds_skip_objects_and_cut_bytes_and_say_so(aws):
    for i in range(3):
        _put(f"job/{i}.log", b"x" * 100 + b"\n")
    bounds = ReadBounds()
    names = [n for n, _ in iter_prefix_logs(_client("s3"), f"s3://{BUCKET}/job/", bounds, max_objects=2)]
    assert len(names) == 2 and bounds.objects_skipped == 1
    bounds = ReadBounds()
    read = [
        (n, b"".join(lines))
        for n, lines in iter_prefix_logs(_client("s3"), f"s3://{BUCKET}/job/", bounds, max_bytes=150)
    ]
    assert [len(body) for _, body in read] == [100, 49]  # the second object cut at the byte budget
    assert bounds.bytes_cut is True and bounds.objects_skipped == 1


def _log_group(name: str, lines: list[str], start: datetime) -> None:
    logs = _client("logs")
    logs.create_log_group(logGroupName=name)
    logs.create_log_stream(logGroupName=name, logStreamName="rank-0")
    events = [
        {"timestamp": int((start + timedelta(seconds=i)).timestamp() * 1000), "message": line}
        for i, line in enumerate(lines)
    ]
    logs.put_log_events(logGroupName=name, logStreamName="rank-0", logEvents=events)


def test_log_group_events_keep_their_time_and_are_judged(aws):
    now = datetime.now(UTC).replace(microsecond=0)
    lines = (REAL / "sglang-1693-pg3-timeout.log").read_text().splitlines()
    _log_group("/aws/containerinsights/eks/application", lines, now - timedelta(minutes=5))
    bounds = ReadBounds()
    read = list(
        iter_log_group(
            _client("logs"),
            "/aws/containerinsights/eks/application",
            now - timedelta(hours=1),
            now,
            None,
            bounds,
        )
    )
    assert len(read) == len(lines)
    assert read[0][0] == "/aws/containerinsights/eks/application:rank-0"
    assert read[0][1][0].startswith(f"| {(now - timedelta(minutes=5)).isoformat()} | [rank1]:".encode())
    (timeout,) = [f for f in analyze_logs(read) if f.check == "nccl.timeout"]
    assert timeout.evidence["ranks_timed_out"] == [1, 4]
    cut = ReadBounds()
    assert (
        len(
            list(
                iter_log_group(
                    _client("logs"),
                    "/aws/containerinsights/eks/application",
                    now - timedelta(hours=1),
                    now,
                    None,
                    cut,
                    max_events=2,
                )
            )
        )
        == 2
    )
    assert cut.events_cut is True


class _DeniedGroup(JobLogSources):
    def group(self, *args: Any, **kwargs: Any):
        raise AccessDenied("not authorized", code="AccessDeniedException", context="logs:FilterLogEvents g")


def test_job_log_step_reads_s3_and_reports_an_unreadable_group_without_losing_the_rest(aws):
    # Given the run's cluster file (p5 nodes), a job log in S3 and a log group the role may not read
    store = ReportStore(_client("s3"), BUCKET)
    run = RunLayout.new("ml-cluster", "exec-1", datetime(2025, 6, 2, tzinfo=UTC))
    store.put_json(run.work("cluster"), {"nodes": [{"instance_type": "ml.p5.48xlarge"}]})
    _put("job/rank0.log", (REAL / "nccl-857-socket-no-efa.log").read_bytes())
    request = DiagnoseRequest(
        cluster="ml-cluster", job_logs_s3_prefix=f"s3://{BUCKET}/job/", job_logs_group="/aws/jobs/train"
    )
    # When the job-log step runs
    result = job_logs(request, run, sources=_DeniedGroup(_client("s3"), _client("logs")), store=store)
    payload = store.get_json(run.work("joblogs"))
    # Then the S3 log was judged against the cluster's instance type (p5 has EFA: sockets are a concern)
    assert result["logs"] == 1 and payload["logs"] == 1
    transport = [f for f in payload["findings"] if f["check"] == "nccl.transport"]
    assert transport[0]["severity"] == "CONCERN" and transport[0]["evidence"]["fallback_hosts"] == ["ai"]
    # and the group is reported as not read, with the reason
    (note,) = [f for f in payload["findings"] if f["check"] == "nccl.joblog_coverage"]
    assert note["severity"] == "INFO"
    assert note["summary"] == "job logs: log group /aws/jobs/train: not read (AccessDenied)"


def test_cli_reads_an_s3_prefix(aws, capsys):
    _put("job/rank0.log", (REAL / "llamafactory-2902-rank0-lags.log").read_bytes())
    code = main(["logs", "analyze", f"s3://{BUCKET}/job/", "--region", REGION, "--format", "json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert code == 1
    (timeout,) = [f for f in findings if f["check"] == "nccl.timeout"]
    assert timeout["evidence"]["culprit"]["ranks"] == [0]


def test_cli_missing_bucket_is_one_line_exit_2(aws, capsys):
    assert main(["logs", "analyze", "s3://no-such-bucket-here/x/", "--region", REGION]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hyperpod-perf: ") and "\n" not in err


def test_a_gzip_bomb_and_a_vanished_object_in_the_prefix_are_findings_and_the_rest_is_judged(aws):
    # Given the run's cluster, a real log, the audit's gzip of 200 MB of NULs, and an object that
    # disappears between the listing and its read
    import zlib

    store = ReportStore(_client("s3"), BUCKET)
    run = RunLayout.new("ml-cluster", "exec-2", datetime(2025, 6, 2, tzinfo=UTC))
    store.put_json(run.work("cluster"), {"nodes": [{"instance_type": "ml.p5.48xlarge"}]})
    _put("job/rank0.log", (REAL / "nccl-563-register-memory-pdsh.log").read_bytes())
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    _put("job/rank1.log.gz", b"".join(packer.compress(bytes(1 << 20)) for _ in range(200)) + packer.flush())
    _put("job/rank2.log", b"gone\n")

    class Vanishing(JobLogSources):
        def prefix(self, uri, bounds):
            for name, log in super().prefix(uri, bounds):
                if name.endswith("rank2.log"):
                    _client("s3").delete_object(Bucket=BUCKET, Key="job/rank2.log")
                yield name, log

    request = DiagnoseRequest(cluster="ml-cluster", job_logs_s3_prefix=f"s3://{BUCKET}/job/")
    # When the job-log step runs
    job_logs(request, run, sources=Vanishing(_client("s3"), _client("logs")), store=store)
    findings = store.get_json(run.work("joblogs"))["findings"]
    # Then the real log's registration failure is judged
    assert [f["node"] for f in findings if f["check"] == "nccl.memlock"] == ["ip-10-0-87-143"]
    # and one coverage finding names the bomb (ratio bound) and the vanished object (NotFound)
    (coverage,) = [f for f in findings if f["check"] == "nccl.joblog_coverage"]
    cuts = dict(coverage["evidence"]["cuts"])
    assert "gzip bomb" in cuts[f"s3://{BUCKET}/job/rank1.log.gz"]
    assert cuts[f"s3://{BUCKET}/job/rank2.log"].startswith("not read (NotFound)")
    assert coverage["severity"] == "INFO"


class _Counting:
    """A boto3 Logs client that counts (and optionally refuses) the Insights calls."""

    def __init__(self, inner: Any, refuse: bool = False) -> None:
        self.inner, self.refuse, self.calls = inner, refuse, []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in ("start_query", "get_query_results", "filter_log_events"):
            return attr

        def call(**kwargs: Any) -> Any:
            self.calls.append(name)
            if self.refuse and name == "start_query":
                from botocore.exceptions import ClientError

                raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "StartQuery")
            return attr(**kwargs)

        return call


def _group_events(now: datetime, lines: list[str]) -> None:
    _log_group("/aws/jobs/insights", lines, now - timedelta(minutes=50))


def _read(client: Any, now: datetime) -> list[tuple[str, list[bytes]]]:
    from hyperpod_perf.joblogs.normalize import insights_pattern

    sources = JobLogSources(_client("s3"), client)
    return list(
        sources.group(
            "/aws/jobs/insights", now - timedelta(hours=1), now, None, ReadBounds(), insights_pattern()
        )
    )


def test_a_log_group_is_read_through_logs_insights_with_the_same_events_as_filter_log_events(aws):
    # Given a log group holding a real excerpt (one event a second, 50 minutes ago)
    now = datetime.now(UTC).replace(microsecond=0)
    lines = (REAL / "sglang-1693-pg3-timeout.log").read_text().splitlines()
    _group_events(now, lines)
    # When it is read over an hour (Logs Insights pays from 15 minutes on)
    counting = _Counting(_client("logs"))
    read = _read(counting, now)
    # Then Insights answered (moto runs the query but not its `filter`: every event comes back)
    assert "start_query" in counting.calls and "filter_log_events" not in counting.calls
    # and the events, their times and the finding are those FilterLogEvents gives
    direct = list(iter_log_group(_client("logs"), "/aws/jobs/insights", now - timedelta(hours=1), now))
    assert read == direct
    (timeout,) = [f for f in analyze_logs(read) if f.check == "nccl.timeout"]
    assert timeout.evidence["ranks_timed_out"] == [1, 4]


def test_a_full_insights_answer_continues_from_its_last_timestamp_without_reading_an_event_twice(
    aws, monkeypatch
):
    import hyperpod_perf.aws.joblogs as joblogs

    monkeypatch.setattr(joblogs, "INSIGHTS_ROWS", 4)  # 10 events: answers of 4, 4, then 2
    now = datetime.now(UTC).replace(microsecond=0)
    lines = [f"ip-10-0-0-1:1:1 [0] NCCL INFO NCCL_DEBUG set by environment to INFO.{i}" for i in range(10)]
    _group_events(now, lines)
    counting = _Counting(_client("logs"))
    read = _read(counting, now)
    assert [entry[1][0].decode().rsplit(".", 1)[1] for entry in read] == [str(i) for i in range(10)]
    assert counting.calls.count("start_query") == 4 and "filter_log_events" not in counting.calls


def test_when_insights_is_refused_the_window_is_read_with_filter_log_events(aws):
    now = datetime.now(UTC).replace(microsecond=0)
    lines = (REAL / "sglang-1693-pg3-timeout.log").read_text().splitlines()
    _group_events(now, lines)
    refusing = _Counting(_client("logs"), refuse=True)
    read = _read(refusing, now)
    assert refusing.calls[0] == "start_query" and "filter_log_events" in refusing.calls
    assert len(read) == len(lines)
