"""`hyperpod-perf metrics`: the fleet's time series over a window, judged per node, from the CLI.

The source is any Prometheus-compatible API: a URL (`--prometheus http://host:9090`, e.g. a
port-forward to the cluster's Prometheus) or an Amazon Managed Prometheus workspace
(`--amp-workspace ws-… --region …`, signed with the caller's credentials). Without a cluster,
the nodes are the ones the series name (host names).

Exit codes: 0 no concern, 1 at least one concern, 2 usage, an unusable source, or no series at all
for the window (never an all-clear on nothing read).
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta

from hyperpod_perf.cli.common import (
    EXIT_CONCERN,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_output_file,
    emit,
    load_thresholds_or_exit,
)

MAX_WINDOW_MINUTES = 7 * 24 * 60


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "metrics",
        help="judge every node's time series over a window (Prometheus / Amazon Managed Prometheus)",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--prometheus", metavar="URL", help="a Prometheus API base URL (http://host:9090)")
    source.add_argument(
        "--amp-workspace", metavar="WORKSPACE_ID", help="an Amazon Managed Prometheus workspace id"
    )
    parser.add_argument("--region", help="the AMP workspace's region (default: the profile's)")
    parser.add_argument("--profile", help="named profile for --amp-workspace")
    parser.add_argument("--end", help="window end, ISO 8601 (default: now)")
    parser.add_argument("--start", help="window start, ISO 8601 (default: --minutes before --end)")
    parser.add_argument(
        "--minutes",
        type=int,
        default=60,
        help="window length when --start is not given (default: %(default)s)",
    )
    parser.add_argument(
        "--baseline-minutes",
        type=int,
        default=60,
        help="baseline just before the window (default: %(default)s)",
    )
    parser.add_argument(
        "--scrape-seconds", type=int, default=60, help="the exporters' scrape interval (default: %(default)s)"
    )
    parser.add_argument("--thresholds", metavar="FILE", help="JSON / TOML overrides of rules/thresholds.py")
    parser.add_argument("--format", choices=("text", "json", "md"), default="text", help="output format")
    add_output_file(parser)
    parser.set_defaults(handler=cmd_metrics)


def _instant(text: str, flag: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{flag}: not an ISO 8601 time: {text!r} (e.g. 2026-12-01T10:00:00Z)") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def window_from_args(args: argparse.Namespace, now: datetime):  # -> MetricsWindow
    from hyperpod_perf.metrics.model import MetricsWindow

    end = _instant(args.end, "--end") if args.end else now
    start = _instant(args.start, "--start") if args.start else end - timedelta(minutes=args.minutes)
    if not start < end:
        raise UsageError("--start must be before --end")
    if (end - start) > timedelta(
        minutes=MAX_WINDOW_MINUTES
    ) or not 0 <= args.baseline_minutes <= MAX_WINDOW_MINUTES:
        raise UsageError("the window and the baseline are at most 7 days each")
    if not 1 <= args.scrape_seconds <= 3600:
        raise UsageError("--scrape-seconds must be between 1 and 3600")
    return MetricsWindow.around(
        start, end, baseline_minutes=args.baseline_minutes, scrape_seconds=args.scrape_seconds
    )


def _source(args: argparse.Namespace):  # -> MetricsSource
    from hyperpod_perf.aws.prometheus import AmpWorkspace, PrometheusHttp

    if args.prometheus:
        if not args.prometheus.startswith(("http://", "https://")):
            raise UsageError("--prometheus must be an http:// or https:// URL")
        return PrometheusHttp(args.prometheus)
    from hyperpod_perf.aws.prometheus import NoRegion

    try:
        return AmpWorkspace.with_profile(args.amp_workspace, region=args.region, profile=args.profile)
    except NoRegion as exc:
        raise UsageError(str(exc)) from exc


def render_verdict(verdict, fmt: str) -> str:  # verdict: MetricsVerdict
    from hyperpod_perf.report.findings_format import render

    if fmt == "json":
        return json.dumps(verdict.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    window = verdict.window
    head = (
        f"metrics from {verdict.source}: {window.start:%Y-%m-%d %H:%M}-{window.end:%H:%M} UTC "
        f"(baseline from {window.baseline_start:%H:%M}, step {window.step_seconds} s), "
        f"{verdict.nodes_seen} node(s), {verdict.series_read} series, {verdict.queries} queries "
        f"in {verdict.elapsed_seconds:.2f} s"
    )
    body = render(verdict.findings, fmt) if verdict.findings else "no findings\n"
    if fmt == "md":
        return f"{head}\n\n{body}"
    return f"{head}\n{body}"


def cmd_metrics(args: argparse.Namespace) -> int:
    from hyperpod_perf.domain.errors import AwsAdapterError
    from hyperpod_perf.domain.findings import has_concern
    from hyperpod_perf.service.metrics import judge_metrics

    thresholds = load_thresholds_or_exit(args.thresholds)
    window = window_from_args(args, datetime.now(UTC))
    try:
        verdict = judge_metrics(_source(args), [], window, thresholds)
    except AwsAdapterError as exc:
        raise UsageError(f"the metrics source cannot be used: {exc}") from exc
    emit(render_verdict(verdict, args.format), args.output)
    if verdict.nodes_seen == 0:
        return EXIT_USAGE
    return EXIT_CONCERN if has_concern(verdict.findings) else EXIT_OK
