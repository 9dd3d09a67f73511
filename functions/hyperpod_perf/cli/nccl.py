"""`hyperpod-perf nccl analyze|plan`: pairwise all-reduce results, read and planned (never run)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from hyperpod_perf.cli.common import (
    EXIT_USAGE,
    UsageError,
    add_aws_options,
    add_out_dir,
    add_output_file,
    announce_written,
    emit,
    instance_type_arg,
    load_thresholds_or_exit,
    read_text_or_exit,
)
from hyperpod_perf.cli.progress import Progress
from hyperpod_perf.nccl import ANALYZE_OUT_FILES

if TYPE_CHECKING:
    from hyperpod_perf.domain.names import NodeNames

TOPOLOGY_HELP = (
    "the nodes' network layers: `aws ec2 describe-instance-topology` output, `kubectl get nodes -o json`, "
    "a JSON object host -> [network node, ...] (top layer first), or `scontrol show topology` output"
)


def register(sub: argparse._SubParsersAction) -> None:
    nccl = sub.add_parser("nccl", help="pairwise NCCL all-reduce analysis and test planning")
    nccl_sub = nccl.add_subparsers(dest="nccl_command", required=True)

    analyze = nccl_sub.add_parser("analyze", help="find slow pairs and the node behind them")
    analyze.add_argument(
        "paths", nargs="+", metavar="PATH", help="nccl-tests logs: files, dirs, s3://bucket/prefix"
    )
    analyze.add_argument(
        "--format",
        choices=("text", "json", "md", "html"),
        default="text",
        help="what stdout (or -o FILE) gets; with --out DIR an html page is written there, not printed",
    )
    add_output_file(analyze)
    add_out_dir(analyze, ", ".join(ANALYZE_OUT_FILES))
    analyze.add_argument(
        "--instance-type",
        type=instance_type_arg,
        help="for the published busbw baseline, e.g. ml.p5.48xlarge",
    )
    analyze.add_argument("--thresholds", metavar="FILE")
    analyze.add_argument("--topology", metavar="FILE", help=TOPOLOGY_HELP)
    add_aws_options(analyze)
    analyze.set_defaults(handler=cmd_analyze)

    plan = nccl_sub.add_parser(
        "plan",
        help="print the pair test plan (read-only: prints, never submits)",
        description="Plan pairwise nccl-tests runs. Read-only: prints sbatch lines or MPIJob manifests.",
    )
    source = plan.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--node-file",
        "--nodes",  # deprecated alias: `demo --nodes` is a count, here it was a file
        dest="node_file",
        metavar="FILE",
        help="node names, one per line (Slurm host names or instance ids); --nodes is a deprecated alias",
    )
    source.add_argument("--cluster", help="HyperPod cluster name or ARN (needs AWS credentials)")
    add_aws_options(plan)
    plan.add_argument(
        "--mode",
        choices=("full", "quick", "layers"),
        default="full",
        help="full: every pair once (N-1 rounds); quick: ring pairs then suspects; layers: pairs within "
        "and across each network-layer boundary (needs --topology) (default: %(default)s)",
    )
    plan.add_argument("--topology", metavar="FILE", help=TOPOLOGY_HELP)
    plan.add_argument(
        "--scheduler",
        choices=("slurm", "eks"),
        default="slurm",
        help="what to print for (default: %(default)s)",
    )
    plan.add_argument(
        "--suspect",
        action="append",
        default=[],
        metavar="NODE",
        help="a node to re-test (quick mode); repeatable",
    )
    plan.add_argument(
        "--good", action="append", default=[], metavar="NODE", help="a known-good partner node; repeatable"
    )
    add_output_file(plan)
    add_out_dir(plan, "one file per round (round-N.sh + nccl-tests.sbatch, or round-N.yaml)")
    plan.set_defaults(handler=cmd_plan)


def cmd_analyze(args: argparse.Namespace) -> int:
    from hyperpod_perf.nccl.commands import run_analyze

    s3_reader = None
    if any(p.startswith("s3://") for p in args.paths):
        from hyperpod_perf.aws.clients import regional_client
        from hyperpod_perf.aws.s3 import read_prefix_texts
        from hyperpod_perf.domain.errors import AwsAdapterError

        # Built before any read: a missing region, profile or credentials is one line (exit 2).
        s3 = regional_client("s3", args.region, args.profile)

        def s3_reader(uri: str) -> list[tuple[str, str]]:
            try:
                return read_prefix_texts(s3, uri)
            except AwsAdapterError as exc:
                raise UsageError(str(exc)) from exc

    thresholds = load_thresholds_or_exit(args.thresholds)
    placement = _topology_or_exit(args.topology) if args.topology else None
    with Progress() as progress:
        text, code = run_analyze(
            args.paths,
            args.format,
            args.out,
            thresholds,
            args.instance_type,
            s3_reader=s3_reader,
            placement=placement,
            on_read=progress.counter("reading nccl-tests logs"),
            on_stage=lambda stage: progress.show(stage, force=True),
        )
    if code == EXIT_USAGE:
        # Nothing could be analysed: whatever report there is goes to stdout, the reasons to stderr
        # as one line (the CLI's contract for exit 2), never mixed into the report.
        report, reasons = _split_errors(text)
        sys.stdout.write(report)
        raise UsageError("; ".join(reasons) or "nccl analyze: nothing to analyse")
    if args.out:
        announce_written(args.out, list(ANALYZE_OUT_FILES))
        if args.format == "html" and not args.output:
            return code  # the page is in DIR: a terminal or a pipe does not get it again
    emit(text, args.output)
    return code


def _split_errors(text: str) -> tuple[str, list[str]]:
    """run_analyze prefixes its error lines with `error: `; the rest is the rendered report."""
    report, reasons = [], []
    for line in text.splitlines(keepends=True):
        if line.startswith("error: "):
            reasons.append(line.removeprefix("error: ").strip())
        else:
            report.append(line)
    return "".join(report), reasons


def cmd_plan(args: argparse.Namespace) -> int:
    from hyperpod_perf.domain.names import NodeName, NodeNames
    from hyperpod_perf.nccl.commands import (
        NodeListError,
        check_node_names,
        read_node_list,
        run_plan,
        write_plan,
    )

    try:
        if args.node_file:
            nodes = read_node_list(read_text_or_exit(args.node_file, what="node file"))
            index = NodeNames(NodeName(n) for n in nodes)
        else:
            nodes, index = _cluster_node_names(args.cluster, args.region, args.profile)
            check_node_names(nodes, "cluster node")
    except NodeListError as exc:
        raise UsageError(f"{args.node_file or args.cluster}: {exc}") from exc
    try:
        check_node_names(args.suspect, "--suspect")
        check_node_names(args.good, "--good")
    except NodeListError as exc:
        raise UsageError(str(exc)) from exc
    if len(nodes) < 2:
        raise UsageError("nccl plan needs at least two nodes")
    layers = _plan_layers(args, nodes)
    args.suspect = _as_listed(args.suspect, "--suspect", nodes, index)
    args.good = _as_listed(args.good, "--good", nodes, index)
    if args.out:
        written = write_plan(args.out, nodes, args.mode, args.scheduler, args.suspect, args.good, layers)
        rounds = [p for p in written if p.name.startswith("round-")]
        first = rounds[0].name if rounds else "round-1"
        apply = "kubectl apply -f" if args.scheduler == "eks" else "sh"
        announce_written(args.out, [p.name for p in written])
        print(
            f"{len(rounds)} round file(s), read-only: nothing was submitted; "
            f"run one round at a time: {apply} {args.out}/{first}",
            file=sys.stderr,
        )
        if not args.output:
            return 0
    emit(run_plan(nodes, args.mode, args.scheduler, args.suspect, args.good, layers), args.output)
    return 0


def _topology_or_exit(path: str) -> dict[str, tuple[str, ...]]:
    """--topology FILE as node -> layers; a file in no known shape, or placing no node, is exit 2."""
    from hyperpod_perf.parse.topology import TopologyError, parse_topology

    try:
        layers = parse_topology(read_text_or_exit(path))
    except TopologyError as exc:
        raise UsageError(f"--topology {path}: {exc}") from exc
    if not layers:
        raise UsageError(f"--topology {path}: no node carries network layers in it")
    return layers


def _plan_layers(args: argparse.Namespace, nodes: list[str]) -> dict[str, tuple[str, ...]] | None:
    """The layers plan's topology, checked against the node list."""
    from hyperpod_perf.nccl.analysis.placement import layer_map

    if args.mode != "layers":
        if args.topology:
            raise UsageError("--topology is read by --mode layers only")
        return None
    if not args.topology:
        raise UsageError("--mode layers needs --topology FILE (the nodes' network layers)")
    layers = _topology_or_exit(args.topology)
    placed = layer_map(layers, nodes)
    if len(placed) < 2:
        raise UsageError(f"--topology {args.topology}: places {len(placed)} of the {len(nodes)} nodes")
    if len(placed) < len(nodes):
        missing = [n for n in nodes if n not in placed]
        print(
            f"note: {len(missing)} node(s) not in {args.topology} (e.g. {missing[0]}): "
            "tested among themselves",
            file=sys.stderr,
        )
    return layers


def _cluster_node_names(cluster: str, region: str | None, profile: str | None) -> tuple[list[str], NodeNames]:
    """Hostnames (what sbatch -w and Kubernetes use) where HyperPod reports them, else instance
    ids; and the index of every node's names (so --suspect may name a node either way)."""
    from hyperpod_perf.aws.clients import regional_client
    from hyperpod_perf.aws.sagemaker import HyperPodClusters
    from hyperpod_perf.domain.errors import AwsAdapterError
    from hyperpod_perf.service.errors import DiagnosisError
    from hyperpod_perf.service.resolve import cluster_node_names

    try:
        index = cluster_node_names(HyperPodClusters(regional_client("sagemaker", region, profile)), cluster)
    except (AwsAdapterError, DiagnosisError, ValueError) as exc:
        raise UsageError(str(exc)) from exc
    entries = [e for e in (index.entry(key) for key in index.nodes()) if e is not None]
    return [e.hostname or e.node for e in entries], index


def _as_listed(names: list[str], option: str, nodes: list[str], index: NodeNames) -> list[str]:
    """Each name as the node list spells it: `--suspect i-…` finds the node the list names
    `ip-10-1-2-3` (and back); a name that is no listed node is a usage error naming the closest."""
    listed = {index.canonical(n): n for n in nodes}
    out: list[str] = []
    for name in names:
        found = listed.get(index.canonical(name))
        if found is None:
            close = index.suggestions(name)
            hint = f"; closest: {', '.join(close)}" if close else ""
            raise UsageError(f"{option} {name}: not in the node list ({len(nodes)} nodes){hint}")
        out.append(found)
    return out
