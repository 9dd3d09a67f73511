"""The benchmark sections `make bench` keeps, and what each one's figures depend on.

A section is re-run when the hash of its inputs differs from the hash in its kept record
(bench/results.json): its `inputs` globs (the bench modules and the code it measures, relative
to the repository root), the versions of the packages that shape the timings, and — for a section
that `needs` another (cost prices the pipeline's runs) — that section's inputs. Formatting code
(bench/__main__.py, results_md.py) is not an input: changing how figures are printed re-renders
RESULTS.md from the records without measuring anything again.

Adding a section: write `bench/bench_<name>.py` with `run(progress) -> BenchResult`, then one
`Section(...)` below naming its kind of evidence and its inputs. That is all `make bench`,
`--only`, the re-run decision and RESULTS.md need.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import BenchResult, Progress, project_root

#: Every section's timings also depend on these (the interpreter and the libraries in the loop).
PACKAGES = ("boto3", "botocore", "pydantic", "pydantic-core", "aws-lambda-powertools", "moto", "websockets")
_SHARED = ("bench/common.py", "bench/sections.py")
_PACKAGE = (
    "functions/hyperpod_perf/**/*.py",
    "functions/hyperpod_perf/**/*.json",
    "functions/hyperpod_perf/**/*.sh",
)
_DEV = ("functions/hyperpod_perf_dev/**/*.py", "functions/hyperpod_perf_dev/**/*.txt")
_NODE_ENGINE = (
    "functions/hyperpod_perf/collect/**/*.py",
    "functions/hyperpod_perf/parse/**/*.py",
    "functions/hyperpod_perf/rules/**/*.py",
    "functions/hyperpod_perf/rules/*.json",
    "functions/hyperpod_perf/domain/**/*.py",
    "functions/hyperpod_perf_dev/sim/**/*.py",
)

#: The kinds of evidence a figure can be (RESULTS.md says what each proves).
KINDS = ("measured", "emulated", "modelled")


@dataclass
class Context:
    """What a section's `run` gets: progress output, the sections already run in this `make
    bench` (cost prices the pipeline's runs), and the options."""

    progress: Progress
    done: dict[str, BenchResult]
    quick: bool = False


@dataclass(frozen=True)
class Section:
    name: str
    kind: str  # the kind of its figures unless a figure says otherwise
    kind_text: str  # what that means for this section, one sentence
    inputs: tuple[str, ...]
    run: Callable[[Context], BenchResult] = field(repr=False, compare=False)
    needs: tuple[str, ...] = ()  # sections whose fresh results `run` takes (re-run together)
    in_make_bench: bool = True  # False: measured by hand (the command is in `how`), kept as recorded
    how: str = ""


def _pipeline(context: Context) -> BenchResult:
    from bench import bench_pipeline

    plan = ((8, 1), (64, 1)) if context.quick else bench_pipeline.PLAN
    result, runs = bench_pipeline.run(context.progress, plan=plan)
    result.details["_runs"] = runs  # for cost; never written to results.json
    return result


def _pipeline_metrics(context: Context) -> BenchResult:
    from bench import bench_pipeline_metrics

    plan = ((8, 1), (64, 1)) if context.quick else bench_pipeline_metrics.PLAN
    return bench_pipeline_metrics.run(context.progress, plan=plan)


def _cost(context: Context) -> BenchResult:
    from bench import bench_cost

    return bench_cost.run(context.done["pipeline"].details["_runs"], context.progress)


def _module(name: str, **kwargs: object) -> Callable[[Context], BenchResult]:
    """A section that is `bench.bench_<name>.run(progress, **kwargs)`."""

    def run(context: Context) -> BenchResult:
        module = importlib.import_module(f"bench.bench_{name}")
        return module.run(context.progress, **kwargs)

    return run


SECTIONS: tuple[Section, ...] = (
    Section(
        "history",
        "measured",
        "measured on this machine: one 1,024-node run's history rows, and each question on DuckDB over "
        "a synthetic 90 days x 1,024 nodes x 4 runs a day (the demo's row format; the CLI's Parquet "
        "copies, and the objects read directly)",
        (
            *_SHARED,
            "bench/bench_history.py",
            "functions/hyperpod_perf/history/**/*.py",
            "functions/hyperpod_perf/history/**/*.sql",
        ),
        _module("history"),
    ),
    Section(
        "pipeline",
        "emulated",
        "the real state machine in moto, the real handlers and data-channel client against simulated "
        "nodes on this machine, with assumed latencies (StartSession 2 s, collector 8 s, 3 calls/s "
        "metered service-side, S3 requests 20 ms), time-scaled; the runbook's way column is a model",
        (
            *_SHARED,
            "bench/bench_pipeline.py",
            "bench/pipeline_run.py",
            "bench/bench_runner.py",
            "statemachines/*.json",
            *_PACKAGE,
            *_DEV,
        ),
        _pipeline,
    ),
    Section(
        "pipeline_metrics",
        "emulated",
        "the pipeline section's run with the cluster's metrics source configured: the real state machine "
        "and handlers in moto, ClusterMetrics' SigV4-signed queries answered by an emulated Prometheus "
        "(the real server's wire format, the simulated fleet's series, an assumed 2 s per query), the "
        "same assumed StartSession, collector and S3 latencies, time-scaled",
        (
            *_SHARED,
            "bench/bench_pipeline_metrics.py",
            "bench/pipeline_run.py",
            "bench/bench_runner.py",
            "statemachines/*.json",
            *_PACKAGE,
            *_DEV,
        ),
        _pipeline_metrics,
    ),
    Section(
        "cost",
        "modelled",
        "us-east-1 list prices × the counts and durations of the emulated pipeline runs (Lambda "
        "durations scaled back to real time)",
        (*_SHARED, "bench/bench_cost.py", "bench/infra_facts.py", "infra/lambda_defaults.py"),
        _cost,
        needs=("pipeline",),
    ),
    Section(
        "engine",
        "measured",
        "measured on this machine: parse and evaluate per snapshot (CPU time and, where valgrind is "
        "installed, CPU instructions), the evaluate CLI, and the same figures for the reference "
        "commit before the GPU/PCIe/topology checks, timed in turn in the same run",
        (
            *_SHARED,
            "bench/bench_engine.py",
            *_NODE_ENGINE,
            "functions/hyperpod_perf/cli/**/*.py",
            "functions/hyperpod_perf/report/findings_format.py",
        ),
        _module("engine"),
    ),
    Section(
        "fleet",
        "measured",
        "measured on this machine",
        (*_SHARED, "bench/bench_fleet.py", *_NODE_ENGINE, "functions/hyperpod_perf/service/**/*.py"),
        _module("fleet"),
    ),
    Section(
        "nccl",
        "measured",
        "measured on this machine",
        (
            *_SHARED,
            "bench/bench_nccl.py",
            "functions/hyperpod_perf/nccl/**/*.py",
            "functions/hyperpod_perf/parse/nccl_tests.py",
            "functions/hyperpod_perf/report/svg.py",
        ),
        _module("nccl"),
    ),
    Section(
        "joblogs",
        "measured",
        "measured on this machine: the whole CLI in a child process over generated 1 GiB inputs",
        (
            *_SHARED,
            "bench/bench_joblogs.py",
            "functions/hyperpod_perf/joblogs/**/*.py",
            "functions/hyperpod_perf/cli/logs.py",
            "functions/hyperpod_perf/aws/joblogs.py",
            "tests/fixtures/real/joblogs/*",
        ),
        _module("joblogs"),
    ),
    Section(
        "metrics",
        "measured",
        "measured on this machine: the stage's own code over 1,024 nodes' prepared answers, one real "
        "answer's parsing times the query count, and the whole stage against a real Prometheus at 64 "
        "nodes (a 1,024-node history would be ~7.6 GB of OpenMetrics to backfill)",
        (
            *_SHARED,
            "bench/bench_metrics.py",
            "functions/hyperpod_perf/metrics/**/*.py",
            "functions/hyperpod_perf/service/metrics.py",
            "functions/hyperpod_perf/aws/prometheus.py",
            "functions/hyperpod_perf_dev/sim/metrics.py",
            "functions/hyperpod_perf_dev/prometheus_local.py",
        ),
        _module("metrics"),
    ),
    Section(
        "straggler",
        "measured",
        "measured on this machine at the full 1,024 ranks x 10,000 collectives (the inputs written "
        "at bench time and deleted); a smaller `--collectives` run also states a linear "
        "extrapolation, which is optimistic",
        (
            *_SHARED,
            "bench/bench_straggler.py",
            "functions/hyperpod_perf/joblogs/**/*.py",
            "functions/hyperpod_perf/cli/logs.py",
            "functions/hyperpod_perf_dev/timing_formats.py",
        ),
        _module("straggler"),
    ),
    Section(
        "joblogmap",
        "emulated",
        "the real ASL and handlers in moto fanning a scaled prefix out (bytes / ~1,000); one child "
        "measured at a quarter of its 1 GiB batch; S3 read times assumed; time-scaled",
        (
            *_SHARED,
            "bench/bench_joblog_map.py",
            "bench/bench_joblogs.py",
            "statemachines/*.json",
            *_PACKAGE,
            *_DEV,
            "tests/fixtures/real/joblogs/*",
        ),
        _module("joblog_map"),
    ),
    Section(
        "report",
        "measured",
        "measured on this machine",
        (
            *_SHARED,
            "bench/bench_report.py",
            "functions/hyperpod_perf/report/**/*",
            "functions/hyperpod_perf/domain/**/*.py",
            "functions/hyperpod_perf_dev/synthetic.py",
        ),
        _module("report"),
    ),
    Section(
        "coldstart",
        "measured",
        "measured on this machine: each handler in a fresh process against a local moto server "
        "(import + first − warm invocation); asset sizes of the stack's packaging",
        (
            *_SHARED,
            "bench/bench_coldstart.py",
            "bench/coldstart_child.py",
            "bench/infra_facts.py",
            "infra/lambda_defaults.py",
            "infra/constructs/functions.py",
            "infra/code_asset.py",
            *_PACKAGE,
            *_DEV,
        ),
        _module("coldstart"),
    ),
    Section(
        "runner",
        "emulated",
        "the real runner and data-channel client against loopback simulated nodes, with assumed "
        "latencies and rate (2 s, 3/s, 10 % random throttling), real time",
        (
            *_SHARED,
            "bench/bench_runner.py",
            "functions/hyperpod_perf/collect/runner.py",
            "functions/hyperpod_perf/aws/session*.py",
            "functions/hyperpod_perf_dev/sim/agent.py",
            "functions/hyperpod_perf_dev/localrun/sessions.py",
        ),
        _module("runner", runs=2),
    ),
)

BY_NAME: dict[str, Section] = {s.name: s for s in SECTIONS}


def input_files(section: Section) -> list[Path]:
    """The files a section's figures depend on (its own inputs and those of what it needs)."""
    root = project_root()
    patterns = [p for name in (*section.needs, section.name) for p in BY_NAME[name].inputs]
    files = {path for pattern in patterns for path in root.glob(pattern) if path.is_file()}
    return sorted(p for p in files if "__pycache__" not in p.parts)


def packages() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def inputs_hash(section: Section) -> str:
    """sha256 over the inputs' paths and contents and the package versions (16 hex digits)."""
    digest = hashlib.sha256()
    root = project_root()
    for path in input_files(section):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for name, version in sorted(packages().items()):
        digest.update(f"{name}={version}\0".encode())
    return digest.hexdigest()[:16]
