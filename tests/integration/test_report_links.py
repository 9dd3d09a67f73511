"""Reports that open from a phone: the S3 console page and a presigned HTTPS link, in e-mail and
Slack, beside the `aws s3 cp` line (issue 23, friction 6). Against moto (`mock_aws`).

Why moto and not a stub: the link is signed by botocore itself (nothing is sent), so only a real
client shows which signature form and host it produces — with botocore's defaults it is the old
`Signature`/`Expires` form on the global host, which the message could not state a lifetime for.
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
import requests
from moto import mock_aws

from hyperpod_perf.aws import clients
from hyperpod_perf.aws.report_links import REPORT_LINK_EXPIRES_S, ReportLinker
from hyperpod_perf.aws.s3 import ReportStore
from hyperpod_perf.domain.findings import Finding, RunbookSection, Severity
from hyperpod_perf.domain.layout import RunLayout
from hyperpod_perf.domain.report import ClusterSummary, NodeSummary, Report, RunInfo
from hyperpod_perf.domain.request import DiagnoseRequest, NotifyPolicy
from hyperpod_perf.pipeline.reporting import publish
from hyperpod_perf.report.render import render_report

REGION = "us-west-2"
BUCKET = "hyperpod-perf-reports-111122223333"
RUN = RunLayout.new("ml-cluster-p5", "exec-0001", datetime(2026, 12, 3, 9, 0, tzinfo=UTC))
HTML_KEY = RUN.report("html")
HTML_URI = f"s3://{BUCKET}/{HTML_KEY}"
LIFETIME = "valid up to 12 h, less if the Lambda function's credentials expire first"
CONSOLE = (
    f"https://{REGION}.console.aws.amazon.com/s3/object/{BUCKET}"
    f"?region={REGION}&prefix=reports/ml-cluster-p5/20261203T090000Z-exec-0001/report.html"
)


@pytest.fixture
def bucket(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    clients.reset()
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        yield ReportStore(s3, BUCKET)
    clients.reset()


def test_the_presigned_link_is_https_sigv4_for_the_report_key_with_the_expiry_it_states(bucket):
    # Given the report page stored in the bucket
    bucket.put_text(HTML_KEY, "<!doctype html><title>report</title>", "text/html; charset=utf-8")
    # When the Publish function's linker (the factory's own signing client) links it
    links = clients.report_linker().links(HTML_URI)
    # Then the direct link is an HTTPS URL on the bucket's regional host, for exactly that key
    url = urlsplit(links.presigned_url or "")
    assert (url.scheme, url.netloc, url.path) == (
        "https",
        f"{BUCKET}.s3.{REGION}.amazonaws.com",
        f"/{HTML_KEY}",
    )
    query = parse_qs(url.query)
    # signed with SigV4, asking for the 12 hours the message states
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    assert query["X-Amz-Expires"] == [str(REPORT_LINK_EXPIRES_S)] == ["43200"]
    assert links.presigned_expires_s == 43200
    assert (
        links.presigned_lifetime()
        == "valid up to 12 h, less if the Lambda function's credentials expire first"
    )
    # And it opens the object (moto serves the signed GET)
    response = requests.get(links.presigned_url, timeout=10)
    assert (response.status_code, response.text) == (200, "<!doctype html><title>report</title>")
    # And the console page names the bucket, the region and the key
    assert links.console_url == CONSOLE


def test_a_link_that_cannot_be_stated_truthfully_is_left_out(bucket):
    # Given a client with botocore's default presigning (the old Signature/Expires query form)
    default = ReportLinker(boto3.client("s3", region_name=REGION))
    # Then no direct link is offered (its lifetime would be another parameter), the console page is
    legacy = default.links(HTML_URI)
    assert (legacy.presigned_url, legacy.presigned_expires_s) == (None, None)
    assert legacy.console_url == CONSOLE
    # And a plain-HTTP local endpoint (the local deploy's moto server) gives none either
    from hyperpod_perf.aws.report_links import presigning_config

    local = boto3.client(
        "s3", region_name=REGION, endpoint_url="http://localhost:5000", config=presigning_config()
    )
    assert ReportLinker(local).links(HTML_URI).presigned_url is None


def _stored_report(store: ReportStore) -> Report:
    report = Report(
        cluster=ClusterSummary(name="ml-cluster-p5", node_count=2),
        run=RunInfo(execution="exec-0001", location=f"s3://{BUCKET}/{RUN.prefix}", region=REGION),
        findings=[
            Finding(
                node="i-0a",
                check="gpu.xid",
                severity=Severity.CONCERN,
                section=RunbookSection.GPU,
                summary="Xid 79: GPU fell off the bus",
                next_step="Replace the node.",
            )
        ],
        nodes=[NodeSummary(node="i-0a"), NodeSummary(node="i-0b")],
    )
    store.put_text(RUN.report("json"), render_report(report, "json"), "application/json")
    return report


def test_e_mail_and_slack_carry_the_console_page_the_direct_link_and_the_copy_command(bucket):
    # Given a stored report and the Publish step with the function's linker
    _stored_report(bucket)
    sent: list[tuple[str, str, dict]] = []
    linker = clients.report_linker()

    # When the notification goes out
    result = publish(
        DiagnoseRequest(cluster="ml-cluster-p5"),
        RUN,
        store=bucket,
        notify=lambda subject, body, chat: sent.append((subject, body, chat)) or "m-1",
        policy=NotifyPolicy.ALWAYS,
        links=linker.links,
    )
    assert result["published"] is True
    ((_, email, chat),) = sent

    # Then the e-mail gives each URL whole on its own line, the lifetime stated, then the command
    lines = email.splitlines()
    start = lines.index(f"Full report: {HTML_URI}")
    assert lines[start + 1 : start + 6] == [
        "Open it in the S3 console (console sign-in; the link does not expire):",
        f"  {CONSOLE}",
        f"Open it directly, no sign-in ({LIFETIME}):",
        lines[start + 4],
        f"Fetch it: aws s3 cp {HTML_URI} .",
    ]
    signed = urlsplit(lines[start + 4].strip())
    assert (signed.netloc, signed.path) == (f"{BUCKET}.s3.{REGION}.amazonaws.com", f"/{HTML_KEY}")
    assert parse_qs(signed.query)["X-Amz-Expires"] == ["43200"]

    # And Slack links both, URLs intact (`&` not turned into an entity), then the copy command
    *_, opened, fetch = chat["content"]["nextSteps"]
    assert opened.startswith(
        f"Open the report <{CONSOLE}|in the S3 console> (console sign-in, does not expire)"
    )
    (link,) = [part for part in opened.split("<")[1:] if "|directly, no sign-in>" in part]
    slack_url = link.split("|", 1)[0]
    assert "&amp;" not in slack_url
    assert urlsplit(slack_url).path == f"/{HTML_KEY}"
    assert parse_qs(urlsplit(slack_url).query)["X-Amz-Expires"] == ["43200"]
    assert opened.endswith(f"({LIFETIME})")
    assert fetch == f"Or fetch it: `aws s3 cp {HTML_URI} .`"
    # And what was sent is what the run keeps
    assert bucket.get_text(f"{RUN.prefix}notification-email.txt") == email
