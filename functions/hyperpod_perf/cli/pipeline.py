"""`hyperpod-perf demo` (the pipeline offline) and `hyperpod-perf start` (the deployed one)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from hyperpod_perf.cli.common import (
    EXIT_CONCERN,
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    add_aws_options,
    add_out_dir,
    announce_written,
    first_line,
)
from hyperpod_perf.cli.progress import Progress

STACK_NAME = "HyperPodPerf"


def register(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser("demo", help="run the whole pipeline offline on a simulated cluster")
    demo.add_argument(
        "--node-count",
        "--nodes",  # `--nodes` kept as an alias: in `nccl plan` it named a file, hence the new name
        dest="nodes",
        type=int,
        default=8,
        metavar="N",
        help="simulated ml.p5.48xlarge nodes, 1-4096",
    )
    demo.add_argument(
        "--scenario", choices=("faulty", "healthy"), default="faulty", help="plant faults, or none"
    )
    add_out_dir(
        demo,
        "the reports, notification bodies, raw/ and history/",
        default=Path("demo-out"),
    )
    demo.set_defaults(handler=cmd_demo)

    start = sub.add_parser("start", help="start a diagnosis on the deployed state machine")
    start.add_argument("--cluster", required=True, help="HyperPod cluster name or ARN")
    add_aws_options(start)
    start.add_argument(
        "--node",
        action="append",
        default=[],
        metavar="NODE",
        help="only these nodes; repeatable: an instance id, a host name (Slurm node name, ip-10-1-2-3 "
        "or its IP; looked up in the cluster) or a Kubernetes node name",
    )
    start.add_argument("--nccl-s3-prefix", help="s3://bucket/prefix of pairwise nccl-tests logs")
    start.add_argument("--job-logs-s3-prefix", help="s3://bucket/prefix of the training job's own logs")
    start.add_argument("--job-logs-group", metavar="NAME", help="CloudWatch Logs group of the training job")
    start.add_argument("--job-logs-filter", metavar="PATTERN", help="filter pattern for --job-logs-group")
    start.add_argument(
        "--prometheus-workspace",
        metavar="WORKSPACE_ID",
        help="the cluster's AMP workspace: the run starts with the metrics step (the stack's role may "
        "query only the configured workspaces)",
    )
    start.add_argument(
        "--deep-collect",
        choices=("suspects", "all"),
        help="with --prometheus-workspace: SSM deep collection of the suspects and a sample (default) or all",
    )
    start.add_argument("--stack", default=STACK_NAME, help="the CloudFormation stack")
    start.add_argument("--state-machine-arn", help="instead of reading it from the stack outputs")
    start.add_argument(
        "--wait",
        action="store_true",
        help="follow the run to its end: its verdict, the report's key, and exit 0 no concern, "
        "1 concerns, 3 the run failed",
    )
    start.set_defaults(handler=cmd_start)


def cmd_demo(args: argparse.Namespace) -> int:
    try:
        from hyperpod_perf_dev.localrun.demo import run_demo
    except ImportError as exc:  # hyperpod_perf_dev and moto come with the development install
        raise UsageError(
            f"the demo needs the development package and extras (pip install -e '.[dev]'): {exc}"
        ) from exc
    if not 1 <= args.nodes <= 4096:
        raise UsageError("--node-count must be between 1 and 4096")
    from hyperpod_perf.aws.clients import SDK_ERRORS

    try:
        # On a terminal: the story's lines stay, the state machine's steps share one rewritten line
        # (cleared before the result is printed); a pipe or a log file gets the result alone.
        with Progress() as progress:
            result = run_demo(
                nodes=args.nodes,
                scenario_name=args.scenario,
                out_dir=args.out,
                progress=progress.note,
                step=lambda text: progress.show(f"execution: {text.strip()}"),
            )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    except (*SDK_ERRORS, RuntimeError) as exc:
        # The local deployment itself failed (e.g. moto rejects the state machine definition):
        # the same one-line report as a failed execution, not a traceback.
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"hyperpod-perf: the offline pipeline could not run: {reason}", file=sys.stderr)
        return EXIT_FAILED
    print(f"\nexecution {result.status} in {result.duration_s:.1f} s ({result.nodes} nodes)")
    print(f"{result.metrics_tier}\n")
    if result.status != "SUCCEEDED":
        print(f"hyperpod-perf: demo run ended {result.status}: {result.error}", file=sys.stderr)
        return EXIT_FAILED
    if result.email:
        print("---- e-mail notification " + "-" * 50)
        print(result.email)
    raw = [p for p in result.files if p.parent.name == "raw"]
    names = sorted(p.name for p in result.files if p.parent == args.out)
    announce_written(args.out, [*names, f"raw/ ({len(raw)} raw node snapshots)"])
    return EXIT_OK


def cmd_start(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from hyperpod_perf.aws import clients
    from hyperpod_perf.aws.cloudformation import stack_outputs
    from hyperpod_perf.aws.stepfunctions import DiagnosisStarter
    from hyperpod_perf.domain.errors import AwsAdapterError
    from hyperpod_perf.domain.request import DiagnoseRequest, TargetScope

    nodes = _instance_ids(args) if args.node else ()
    try:
        request = DiagnoseRequest(
            cluster=args.cluster,
            region=args.region,
            nodes=nodes,
            scope=TargetScope.FOCUS if args.node else TargetScope.ALL,
            nccl_s3_prefix=args.nccl_s3_prefix,
            job_logs_s3_prefix=args.job_logs_s3_prefix,
            job_logs_group=args.job_logs_group,
            job_logs_filter=args.job_logs_filter,
            prometheus_workspace_id=args.prometheus_workspace,
            deep_collect=args.deep_collect,
            reason="hyperpod-perf start (CLI)",
        )
    except ValidationError as exc:
        raise UsageError(first_line(exc)) from exc
    try:
        arn = args.state_machine_arn or stack_outputs(
            clients.regional_client("cloudformation", args.region, args.profile), args.stack
        ).get("StateMachineArn")
        if not arn:
            raise UsageError(f"stack {args.stack} has no StateMachineArn output; pass --state-machine-arn")
        starter = DiagnosisStarter(clients.regional_client("stepfunctions", args.region, args.profile), arn)
        name = f"hpd-cli-{request.cluster_name[:40]}-{datetime.now(UTC):%Y%m%dT%H%M%S}"
        started = starter.start(name, request.model_dump(mode="json", exclude_none=True))
        print(f"started {started.execution_arn or name}")
        if not args.wait or started.execution_arn is None:
            return EXIT_OK
        return _follow(starter, started.execution_arn)
    except AwsAdapterError as exc:
        raise UsageError(str(exc)) from exc


#: How often `start --wait` asks Step Functions how the run is going.
FOLLOW_POLL_S = 3.0


def _instance_ids(args: argparse.Namespace) -> tuple[str, ...]:
    """--node by any name as the instance ids the pipeline's request takes: ids as given, host
    names looked up in the cluster (SageMaker ListClusterNodes / DescribeClusterNode) here, with
    the caller's credentials, since the request's patterns admit instance ids only."""
    from hyperpod_perf.aws import clients
    from hyperpod_perf.aws.sagemaker import HyperPodClusters
    from hyperpod_perf.domain.errors import AwsAdapterError
    from hyperpod_perf.domain.names import split_node_names
    from hyperpod_perf.service.errors import DiagnosisError
    from hyperpod_perf.service.resolve import resolve_node_names

    try:
        ids, lookup = split_node_names(args.node)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if not lookup:
        return tuple(ids)
    try:
        sagemaker = clients.regional_client("sagemaker", args.region, args.profile)
        return resolve_node_names(HyperPodClusters(sagemaker), args.cluster, args.node)
    except (DiagnosisError, AwsAdapterError) as exc:
        raise UsageError(str(exc)) from exc


def _follow(starter, execution_arn: str) -> int:
    """The run followed to its end (its states on the progress line), then its verdict and the exit
    code every other command gives: 0 no concern, 1 concerns, 3 the run itself failed."""
    seen = 0
    with Progress() as progress:
        while True:
            description = starter.describe(execution_arn)
            events = starter.history(execution_arn)
            for event in events[seen:]:
                entered = event.get("stateEnteredEventDetails")
                if entered:
                    progress.show(f"execution: {entered['name']}")
            seen = len(events)
            if description["status"] != "RUNNING":
                break
            time.sleep(FOLLOW_POLL_S)
    return run_exit_code(description)


def run_exit_code(description: dict) -> int:
    """What an ended execution means for the exit code, printed as its last lines.

    SUCCEEDED carries the Evaluate step's result (`report.value`: verdict, concern count, report
    key); a run that ended any other way (FAILED, TIMED_OUT, ABORTED: its notification says why)
    or left no result is a failure, not an all-clear."""
    status = description["status"]
    if status != "SUCCEEDED":
        why = ": ".join(str(description[k]) for k in ("error", "cause") if description.get(k))
        print(f"execution {status}" + (f" ({why})" if why else ""))
        print(f"hyperpod-perf: the diagnosis did not finish ({status})", file=sys.stderr)
        return EXIT_FAILED
    print(f"execution {status}")
    output = json.loads(description.get("output") or "{}")
    report = (output.get("report") or {}).get("value") or {}
    concerns = report.get("concerns")
    if not isinstance(concerns, int):
        print("hyperpod-perf: the run left no report to read its verdict from", file=sys.stderr)
        return EXIT_FAILED
    print(f"verdict: {report.get('verdict')} ({concerns} concern(s))")
    print(f"report: {report.get('report_key')}")
    return EXIT_CONCERN if concerns else EXIT_OK
