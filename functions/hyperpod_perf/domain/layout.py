"""Where a run keeps its files in the report bucket (one place for every key).

reports/<cluster>/<UTC timestamp>-<execution>/
    report.json | report.md | report.html     what people read
    raw/<node>.txt                             every byte collected, before any parsing
    work/cluster.json, work/targets.json       resolved cluster and the nodes to collect
    work/nodes/<node>.json                     per-node outcome: findings or the failure
    work/batches.json                          the Distributed Map's items (batches of nodes)

reports/_map-runs/<map run id>/                the Distributed Map's ResultWriter output (no
                                               cluster prefix starts with "_": safe_segment)
    work/fsx.json, work/logs.json, work/nccl.json

history/<table>/cluster=<cluster>/run_date=<YYYY-MM-DD>/<run id>.jsonl.gz
                                               the run history Athena and DuckDB query (one object per
                                               run and table, partitioned as the Glue table projects them)
"""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict

_SAFE = re.compile(r"[^A-Za-z0-9._-]")

#: The Distributed Map's ResultWriter prefix: a fixed one, under reports/ so the bucket's lifecycle
#: expires it; each Map Run writes its own <map run id>/ folder beneath it. Fixed because the
#: ResultWriter's Parameters cannot reach the run's prefix in the offline interpreter (it evaluates
#: them against the Map's results, not its input), and the tested definition is the deployed one.
MAP_RUNS_PREFIX = "reports/_map-runs"


def safe_segment(value: str, limit: int = 120) -> str:
    """A key segment that cannot climb out of its prefix (`../`, `/`, control characters)."""
    cleaned = _SAFE.sub("_", value).strip("._") or "_"
    return cleaned[:limit]


class RunLayout(BaseModel):
    """The run envelope every state passes along: the bucket prefix and the execution."""

    model_config = ConfigDict(frozen=True, strict=True)

    prefix: str  # reports/<cluster>/<timestamp>-<execution>/
    execution: str
    started: str

    @classmethod
    def new(cls, cluster_name: str, execution: str, started: datetime) -> RunLayout:
        stamp = started.strftime("%Y%m%dT%H%M%SZ")
        return cls(
            prefix=f"{cluster_prefix(cluster_name)}{stamp}-{safe_segment(execution, 80)}/",
            execution=execution,
            started=started.isoformat(),
        )

    def report(self, extension: str) -> str:
        return f"{self.prefix}report.{extension}"

    def raw(self, node: str) -> str:
        return f"{self.prefix}raw/{safe_segment(node)}.txt"

    def work(self, name: str) -> str:
        return f"{self.prefix}work/{safe_segment(name)}.json"

    def node_result(self, node: str) -> str:
        return f"{self.prefix}work/nodes/{safe_segment(node)}.json"

    @property
    def node_results_prefix(self) -> str:
        return f"{self.prefix}work/nodes/"


def cluster_prefix(cluster_name: str) -> str:
    return f"reports/{safe_segment(cluster_name, 63)}/"


#: The run history's prefix: its own, so the Evaluate step's PutObject grant names it alone.
HISTORY_PREFIX = "history/"


def run_id(run: RunLayout) -> str:
    """`<UTC timestamp>-<execution>`: the run's folder name, unique and time-ordered."""
    return run.prefix.rstrip("/").rsplit("/", 1)[-1]


def history_key(table: str, cluster_name: str, run_date: str, run: str) -> str:
    """One run's rows of one history table (Hive-style partitions: cluster=…/run_date=…)."""
    return (
        f"{HISTORY_PREFIX}{safe_segment(table, 40)}/cluster={safe_segment(cluster_name, 63)}/"
        f"run_date={safe_segment(run_date, 10)}/{safe_segment(run, 120)}.jsonl.gz"
    )


def history_cluster_prefix(table: str, cluster_name: str) -> str:
    return f"{HISTORY_PREFIX}{safe_segment(table, 40)}/cluster={safe_segment(cluster_name, 63)}/"
