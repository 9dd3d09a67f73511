"""The deployment's CloudWatch dashboard is linked from the e-mail, Slack and Markdown as from the HTML."""

from __future__ import annotations

import json

import pytest

from hyperpod_perf.domain.report import Report
from hyperpod_perf.report.chatbot import render_chatbot
from hyperpod_perf.report.email import render_email
from hyperpod_perf.report.markdown import render_markdown
from hyperpod_perf_dev.synthetic import synthetic_report

URL = "https://us-west-2.console.aws.amazon.com/cloudwatch/home?region=us-west-2#dashboards:name=HyperPodPerf-fleet"


def _with_dashboard(url: str | None) -> Report:
    base = synthetic_report(8)
    return base.model_copy(update={"run": base.run.model_copy(update={"dashboard_url": url})})


def test_every_channel_links_the_dashboard() -> None:
    # Given a run of a deployment with a dashboard
    report = _with_dashboard(URL)
    # When rendered for each channel
    email = render_email(report)
    chat = render_chatbot(report)["content"]["description"]
    markdown = render_markdown(report)
    # Then each carries the URL whole
    assert f"The fleet over time (CloudWatch dashboard): {URL}" in email.splitlines()
    assert f"<{URL}|Fleet dashboard>" in chat.splitlines()
    assert f"The fleet over time: [CloudWatch dashboard](<{URL}>)" in markdown.splitlines()


@pytest.mark.parametrize(
    "bad",
    ["javascript:alert(1)", "http://plain.example/d", "https://x.example/a>b", "https://x.example/a|b", None],
)
def test_a_url_that_is_not_plain_https_is_never_linked(bad: str | None) -> None:
    report = _with_dashboard(bad)
    rendered = render_email(report) + json.dumps(render_chatbot(report)) + render_markdown(report)
    assert "dashboard" not in rendered.lower()
