"""`hyperpod-perf diagnose`: the whole diagnosis in-process against a real account (no deploy)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from hyperpod_perf.cli.common import (
    EXIT_CONCERN,
    EXIT_OK,
    UsageError,
    add_aws_options,
    add_out_dir,
    add_output_file,
    announce_written,
    emit,
    first_line,
    load_thresholds_or_exit,
)
from hyperpod_perf.cli.progress import Progress

if TYPE_CHECKING:
    from hyperpod_perf.collect.runner import NodeCollection, Observer
    from hyperpod_perf.collect.snapshot import RawSnapshot
    from hyperpod_perf.domain.cluster import DiagnosisResult
    from hyperpod_perf.domain.findings import Finding
    from hyperpod_perf.domain.report import NotChecked, Report
    from hyperpod_perf.domain.request import DiagnoseRequest
    from hyperpod_perf.rules.thresholds import Thresholds


def register(sub: argparse._SubParsersAction) -> None:
    diagnose = sub.add_parser("diagnose", help="diagnose a cluster from here (read-only; AWS credentials)")
    diagnose.add_argument("--cluster", required=True, help="HyperPod cluster name or ARN")
    add_aws_options(diagnose)
    diagnose.add_argument(
        "--node",
        action="append",
        default=[],
        metavar="NODE",
        help="only these nodes; repeatable: an instance id, a host name (Slurm node name, "
        "ip-10-1-2-3 or its IP) or a Kubernetes node name",
    )
    diagnose.add_argument(
        "--snapshots",
        metavar="DIR",
        help="pre-collected snapshots instead of SSM; with no AWS access the AWS stages are skipped",
    )
    diagnose.add_argument(
        "--offline",
        action="store_true",
        help="with --snapshots: skip the AWS stages even where credentials exist (judge the files alone)",
    )
    diagnose.add_argument(
        "--runner",
        choices=("session", "send-command"),
        default="session",
        help="how collector.sh reaches the nodes: an SSM session, or SSM SendCommand (needs --document)",
    )
    diagnose.add_argument("--document", help="SSM document with collector.sh (see `hyperpod-perf document`)")
    diagnose.add_argument("--fsx", action="append", default=[], metavar="FS_ID", help="FSx file system ids")
    diagnose.add_argument("--since", default="3h", help="metrics and logs window, e.g. 90m, 3h, 1d")
    diagnose.add_argument(
        "--format",
        choices=("text", "json", "md", "html"),
        default="text",
        help="what stdout (or -o FILE) gets: the findings (text, md) or the report (json, html)",
    )
    add_output_file(diagnose)
    add_out_dir(diagnose, "report.json, report.md, report.html (and raw/<node>.txt when collecting over SSM)")
    source = diagnose.add_mutually_exclusive_group()
    source.add_argument(
        "--prometheus",
        metavar="URL",
        help="judge every node's exporter series over --since too (a Prometheus URL)",
    )
    source.add_argument(
        "--amp-workspace", metavar="WORKSPACE_ID", help="... or an Amazon Managed Prometheus workspace"
    )
    diagnose.add_argument("--thresholds", metavar="FILE")
    diagnose.add_argument("--concurrency", type=int, default=8, help="node sessions at once")
    diagnose.add_argument("--rate", type=float, default=3.0, help="StartSession calls per second")
    diagnose.add_argument(
        "--kubernetes-topology",
        action="store_true",
        help="EKS clusters: read the nodes' network layers from the Kubernetes API (needs list on nodes)",
    )
    diagnose.set_defaults(handler=cmd_diagnose)

    document = sub.add_parser("document", help="print the SSM Session document that runs collector.sh")
    document.add_argument(
        "--type", choices=("session", "command"), default="session", help="SSM document type to print"
    )
    add_output_file(document)
    document.set_defaults(handler=cmd_document)


def cmd_document(args: argparse.Namespace) -> int:
    from hyperpod_perf.collect.session_document import (
        build_command_document,
        build_session_document,
        document_json,
    )

    build = build_session_document if args.type == "session" else build_command_document
    emit(document_json(build()) + "\n", args.output)
    return EXIT_OK


def cmd_diagnose(args: argparse.Namespace) -> int:
    from hyperpod_perf.domain.findings import has_concern
    from hyperpod_perf.domain.names import split_node_names
    from hyperpod_perf.domain.request import DiagnoseRequest, TargetScope
    from hyperpod_perf.service.errors import DiagnosisError
    from hyperpod_perf.service.window import parse_window

    thresholds = load_thresholds_or_exit(args.thresholds)
    try:
        ids, _lookup = split_node_names(args.node)  # host names are looked up in the cluster
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    try:
        window = parse_window(args.since)
        request = DiagnoseRequest(
            cluster=args.cluster,
            region=args.region,
            nodes=tuple(ids),
            scope=TargetScope.FOCUS if args.node else TargetScope.ALL,
            window_minutes=max(5, int(window.total_seconds() // 60)),
            fsx_ids=tuple(args.fsx),
            reason="hyperpod-perf diagnose (CLI)",
        )
    except (DiagnosisError, ValidationError) as exc:
        raise UsageError(first_line(exc)) from exc

    if args.snapshots and not Path(args.snapshots).is_dir():
        raise UsageError(f"--snapshots {args.snapshots}: not a directory")
    if args.offline and not args.snapshots:
        raise UsageError("--offline needs --snapshots DIR (the nodes' collector output to judge)")
    with Progress() as progress:
        report, result, not_checked = _diagnose(args, request, thresholds, progress)
    _write(args, report, result, not_checked)
    return EXIT_CONCERN if has_concern(result.findings) else EXIT_OK


def _write(
    args: argparse.Namespace, report: Report, result: DiagnosisResult, not_checked: list[NotChecked]
) -> None:
    """--out DIR gets report.{json,md,html} (raw/ was filled as nodes answered); stdout or -o FILE
    gets --format's document — except an HTML page also written to DIR, which is not printed."""
    from hyperpod_perf.domain.names import NodeNames
    from hyperpod_perf.report.findings_format import render
    from hyperpod_perf.report.render import render_report

    findings = result.findings
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        names = []
        for fmt in ("json", "md", "html"):
            (args.out / f"report.{fmt}").write_text(render_report(report, fmt), encoding="utf-8")
            names.append(f"report.{fmt}")
        raw = args.out / "raw"
        if raw.is_dir():
            names.append(f"raw/ ({sum(1 for p in raw.iterdir() if p.is_file())} node snapshots)")
        announce_written(args.out, names)
        if args.format == "html" and not args.output:
            return
    if args.format == "json":
        emit(render_report(report, "json"), args.output)
    elif args.format == "html":
        emit(render_report(report, "html"), args.output)
    else:
        names = NodeNames.of(result.node_summaries)
        emit(render(findings, args.format, not_checked or None, names=names), args.output)


def _diagnose(
    args: argparse.Namespace, request: DiagnoseRequest, thresholds: Thresholds, progress: Progress
) -> tuple[Report, DiagnosisResult, list[NotChecked]]:
    """The diagnosis with its progress line (a terminal only): each stage, then each node."""
    from hyperpod_perf.aws.cli_session import resolve_region
    from hyperpod_perf.domain.cluster import ClusterInfo
    from hyperpod_perf.domain.report import RunInfo
    from hyperpod_perf.service.report import build_report

    started = datetime.now(UTC)
    offline = "--offline" if args.offline else None
    if offline is None:
        try:
            result = _diagnose_with_aws(args, request, thresholds, progress)
        except _NoAwsAccess as exc:
            offline = str(exc)
    not_checked: list[NotChecked] = []
    if offline is not None:
        why = "--offline" if args.offline else f"no AWS access ({offline})"
        progress.say(
            f"hyperpod-perf: {why}: skipping the AWS stages (cluster and node description, "
            f"placement, FSx metrics, health logs); judging the snapshots in {args.snapshots} alone"
        )
        result, not_checked = _diagnose_offline(args, thresholds, progress)
    if args.prometheus or args.amp_workspace:
        progress.show("reading the nodes' exporter series", force=True)
    verdict = _metrics_verdict(args, result, thresholds)
    if verdict is not None:
        result = result.model_copy(update={"findings": [*result.findings, *verdict.findings]})
    report = build_report(
        result.cluster or ClusterInfo(name=args.cluster, arn="", cluster_id=""),
        result.findings,
        result.node_summaries,
        result.fs_data,
        RunInfo(
            started=started.isoformat(),
            finished=datetime.now(UTC).isoformat(),
            reason=request.reason,
            window_minutes=request.window_minutes,
            region=resolve_region(args.region),
            location=str(args.out) if args.out else None,
        ),
        metrics=verdict.model_dump(mode="json", exclude={"findings"}) if verdict is not None else None,
    )
    if not_checked:
        report = report.model_copy(update={"not_checked": [*report.not_checked, *not_checked]})
    return report, result, not_checked


def _metrics_verdict(args: argparse.Namespace, result, thresholds):  # -> MetricsVerdict | None
    """The metrics stage over the same window and nodes, when a source is given (every node is
    deep-collected here: the CLI has no fan-out to narrow)."""
    if not (args.prometheus or args.amp_workspace):
        return None
    from hyperpod_perf.aws.prometheus import AmpWorkspace, NoRegion, PrometheusHttp
    from hyperpod_perf.domain.errors import AccessDenied, NotFound
    from hyperpod_perf.metrics.model import MetricsWindow
    from hyperpod_perf.pipeline.metrics import unusable_source
    from hyperpod_perf.service.metrics import judge_metrics
    from hyperpod_perf.service.window import parse_window

    end = result.window_end or datetime.now(UTC)
    start = result.window_start or end - parse_window(args.since)
    window = MetricsWindow.for_alarm(start, end)
    try:
        source = (
            PrometheusHttp(args.prometheus)
            if args.prometheus
            else AmpWorkspace.with_profile(args.amp_workspace, region=args.region, profile=args.profile)
        )
    except NoRegion as exc:
        raise UsageError(str(exc)) from exc
    # Host names as the nodes themselves reported them (the snapshots), where the API gave none
    # or another form: the exporters label series with the host's own name.
    seen = {n.instance_id: n.hostname for n in result.node_summaries if n.hostname}
    nodes = [
        n.model_copy(update={"hostname": seen[n.instance_id]}) if n.instance_id in seen else n
        for n in result.nodes
    ]
    try:
        return judge_metrics(source, nodes, window, thresholds)
    except (AccessDenied, NotFound) as exc:
        return unusable_source(source.source, window, exc)


class _NoAwsAccess(Exception):
    """No region, credentials or reachable account, with --snapshots: the diagnosis goes on
    offline instead of stopping (the snapshots hold everything a node-level verdict needs)."""


def _diagnose_with_aws(
    args: argparse.Namespace, request: DiagnoseRequest, thresholds: Thresholds, progress: Progress
) -> DiagnosisResult:
    """The whole diagnosis against the account; _NoAwsAccess when --snapshots could stand in."""
    from hyperpod_perf.aws import clients
    from hyperpod_perf.aws.cli_session import AwsConfigurationError
    from hyperpod_perf.aws.cloudwatch import FsxMetrics
    from hyperpod_perf.aws.fsx import FsxFileSystems
    from hyperpod_perf.aws.logs import ClusterLogs
    from hyperpod_perf.aws.sagemaker import HyperPodClusters
    from hyperpod_perf.domain.errors import AwsAdapterError
    from hyperpod_perf.service.diagnosis import diagnose
    from hyperpod_perf.service.errors import ClusterNotFound, DiagnosisError
    from hyperpod_perf.service.resolve import resolve_node_names

    # One session for every client: a missing region, profile or credentials stops here, before
    # any work, as one line (AwsConfigurationError -> exit 2), unless --snapshots can stand in.
    try:
        clients.regional_client("sts", args.region, args.profile)
    except AwsConfigurationError as exc:
        if args.snapshots:
            raise _NoAwsAccess(str(exc)) from exc
        raise

    def client(service: str):
        return clients.regional_client(service, args.region, args.profile)

    raw_dir = args.out / "raw" if args.out else None
    runner = _node_runner(args, client, raw_dir, _collection_progress(progress))
    clusters = HyperPodClusters(client("sagemaker"))
    try:
        if args.node:  # host names to instance ids, against the cluster's node list
            request = request.model_copy(
                update={"nodes": resolve_node_names(clusters, args.cluster, args.node)}
            )
        return diagnose(
            request,
            clusters=clusters,
            fsx=FsxFileSystems(client("fsx")),
            metrics=FsxMetrics(client("cloudwatch")),
            logs=ClusterLogs(client("logs")),
            node_runner=runner,
            thresholds=thresholds,
            topology=_topology_sources(client, args.kubernetes_topology),
            on_stage=lambda text: progress.show(text, force=True),
        )
    except DiagnosisError as exc:
        # The account answered "no such cluster": a wrong name, not a missing access (exit 2).
        reachable = isinstance(exc, ClusterNotFound) or not isinstance(exc.__cause__, AwsAdapterError)
        if args.snapshots and not reachable:
            raise _NoAwsAccess(first_line(exc)) from exc
        raise UsageError(str(exc)) from exc


def _collection_progress(progress: Progress) -> Observer:
    """The runner's observer: `collecting 12/64: i-… collected` (or the reason it was not)."""

    def observe(outcome: NodeCollection, done: int, total: int) -> None:
        how = "collected" if outcome.ok else getattr(outcome, "reason", "failed")
        progress.show(f"collecting {done}/{total}: {outcome.node.instance_id} {how}", force=done == total)

    return observe


def _diagnose_offline(
    args: argparse.Namespace, thresholds: Thresholds, progress: Progress
) -> tuple[DiagnosisResult, list[NotChecked]]:
    """Every *.txt in --snapshots judged as `evaluate DIR` judges it (a file that is not a
    snapshot is its node's collect.node CONCERN), then reported as `diagnose` reports."""
    from hyperpod_perf.cli.batch import Unusable, file_node_name, read_node_file, snapshot_names
    from hyperpod_perf.domain.findings import Severity
    from hyperpod_perf.domain.names import NodeName, NodeNames
    from hyperpod_perf.service.gaps import collect_finding
    from hyperpod_perf.service.offline import diagnose_snapshots

    directory = Path(args.snapshots)
    files = sorted(p for p in directory.glob("*.txt") if p.is_file())
    read = {path: read_node_file(path) for path in files}
    # --node by any name: the snapshots' own meta names them (instance id, host name), the
    # file name where the content could not be read.
    names = NodeNames(
        snapshot_names(r) if not isinstance(r, Unusable) else NodeName(file_node_name(p))
        for p, r in read.items()
    )
    wanted_keys, missing = names.resolve_all(args.node)
    wanted = set(wanted_keys)
    snapshots: list[RawSnapshot] = []
    collection: list[Finding] = []
    chosen = [
        (path, outcome)
        for path, outcome in read.items()
        if not wanted
        or (file_node_name(path) if isinstance(outcome, Unusable) else snapshot_names(outcome).node) in wanted
    ]
    tick = progress.counter("reading snapshots", len(chosen))
    for path, outcome in chosen:
        tick(path.name)
        if isinstance(outcome, Unusable):
            collection.append(outcome.finding)
        else:
            snapshots.append(outcome)
    for node in missing:
        collection.append(
            collect_finding(
                node,
                Severity.INFO,
                f"not collected: no snapshot of {node} in {directory}",
                reason="SnapshotMissing",
            )
        )
    if args.node and not wanted:
        snapshots = []  # every name missed: nothing of what was asked for can be judged
    if not snapshots:
        raise UsageError(f"--snapshots {directory}: no usable snapshot (collector.sh output, *.txt) to judge")
    progress.show(f"judging {len(snapshots)} snapshot(s) and the fleet", force=True)
    return diagnose_snapshots(args.cluster, snapshots, collection, thresholds)


def _topology_sources(client, kubernetes: bool):
    """EC2 DescribeInstanceTopology always; the Kubernetes API with --kubernetes-topology (EKS)."""
    from hyperpod_perf.aws.ec2_topology import InstanceTopology
    from hyperpod_perf.aws.eks_nodes import EksNodeLabels
    from hyperpod_perf.service.topology import TopologySources

    return TopologySources(
        instance_topology=InstanceTopology(client("ec2")),
        node_labels=EksNodeLabels(client("eks"), client("sts")) if kubernetes else None,
        kubernetes_opt_in=lambda _cluster: kubernetes,
    )


def _node_runner(args: argparse.Namespace, client, raw_dir: Path | None, on_done: Observer):
    """--snapshots DIR, else SSM sessions (or SendCommand); raw output kept in --out/raw first."""
    from hyperpod_perf.collect.runner import DirectorySink, SnapshotDirRunner

    if args.snapshots:
        if not Path(args.snapshots).is_dir():
            raise UsageError(f"--snapshots {args.snapshots}: not a directory")
        return SnapshotDirRunner(args.snapshots, on_done=on_done)
    sink = DirectorySink(raw_dir) if raw_dir else None
    if args.runner == "send-command":
        from hyperpod_perf.aws.ssm_commands import SsmCommandClient
        from hyperpod_perf.collect.runner import SendCommandNodeRunner

        if not args.document:
            raise UsageError("--runner send-command needs --document (a Command document with collector.sh)")
        return SendCommandNodeRunner(
            SsmCommandClient(client("ssm")),
            document_name=args.document,
            concurrency=args.concurrency,
            rate_per_s=args.rate,
            sink=sink,
            on_done=on_done,
        )
    return _LazySessionRunner(args, client, sink, on_done)


class _LazySessionRunner:
    """The session runner needs the cluster id, which is known once the cluster is described."""

    def __init__(self, args: argparse.Namespace, client, sink, on_done: Observer) -> None:
        self._args, self._client, self._sink, self._on_done = args, client, sink, on_done

    def collect(self, nodes):
        from hyperpod_perf.aws.sagemaker import HyperPodClusters
        from hyperpod_perf.aws.session import SessionClient
        from hyperpod_perf.collect.runner import SessionNodeRunner
        from hyperpod_perf.collect.session_document import DEFAULT_SESSION_DOCUMENT_NAME

        cluster_id = (
            HyperPodClusters(self._client("sagemaker")).describe_cluster(self._args.cluster).cluster_id
        )
        session = SessionClient(self._client("ssm"))
        runner = SessionNodeRunner(
            cluster_id,
            lambda: session,
            document_name=self._args.document or DEFAULT_SESSION_DOCUMENT_NAME,
            concurrency=self._args.concurrency,
            rate_per_s=self._args.rate,
            sink=self._sink,
            on_done=self._on_done,
        )
        return runner.collect(nodes)
