"""Job logs at scale through the real ASL: PlanJobLogs -> the job-log Distributed Map -> NcclResults.

The prefix holds real excerpts (tests/fixtures/real/joblogs), 16 NCCL Inspector files in the
plugin's format with a planted straggler on node 5's host (hyperpod_perf_dev/timing_formats.py),
the audit's gzip bomb and one large plain log; batches are made small (64 KiB) so that the prefix
fans out over many children and the large log is cut into ranges, and one child's part write
fails for good.
"""

from __future__ import annotations

import json
import zlib

import pytest
from sfn_checks import REAL_NCCL

import hyperpod_perf.pipeline.joblog_map as joblog_map
from hyperpod_perf_dev.localrun.demo import demo_cluster
from hyperpod_perf_dev.localrun.driver import local_pipeline
from hyperpod_perf_dev.localrun.plan import AdapterFaults, RunPlan
from hyperpod_perf_dev.timing_formats import Job, inspector_lines

REAL_JOBLOGS = REAL_NCCL.parent / "joblogs"
DEMO = demo_cluster("faulty", 8)


class NodeJob(Job):
    """The planted job's ranks on the demo cluster's hosts (8 ranks per node, nodes 4 and 5)."""

    hosts: tuple[str, ...] = ()

    def host(self, rank: int) -> str:
        return self.hosts[rank // 8]


def _nul_gzip(total: int) -> bytes:
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    return b"".join(packer.compress(bytes(1 << 20)) for _ in range(total >> 20)) + packer.flush()


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(joblog_map, "BATCH_BYTES", 64 * 1024)
    monkeypatch.setattr(joblog_map, "GZIP_WEIGHT", 1)


def test_job_logs_fan_out_on_the_map_merge_to_one_judgement_and_say_what_was_not_read(small_batches):
    # the part write of batch 1 fails 5 times: the child and its 4 retries, then the Catch records it
    faults = AdapterFaults(s3_put_failures=5, s3_put_key_part="work/joblogs-part-00001")
    with local_pipeline(RunPlan(clusters=(DEMO,), adapters=faults)) as run:
        nodes = run.cluster_nodes()
        s3, bucket = run.dep.client("s3"), run.dep.bucket
        job = NodeJob(late_rank=11)
        job.hosts = (nodes[3].hostname, nodes[4].hostname)
        excerpts = sorted(REAL_JOBLOGS.glob("*.log"))
        for path in excerpts:
            s3.put_object(Bucket=bucket, Key=f"nccl/job-9/excerpts/{path.name}", Body=path.read_bytes())
        for rank in range(job.ranks):
            key = f"nccl/job-9/inspector/{job.host(rank)}-pid{job.pid(rank)}.log"
            s3.put_object(Bucket=bucket, Key=key, Body=inspector_lines(job, rank).encode())
        s3.put_object(Bucket=bucket, Key="nccl/job-9/bomb.log.gz", Body=_nul_gzip(200 << 20))
        big = b"".join(p.read_bytes() for p in excerpts) * 4  # ~0.5 MiB: cut into 64 KiB ranges
        s3.put_object(Bucket=bucket, Key="nccl/job-9/all-ranks.log", Body=big)
        # When the request names the prefix as the job's logs
        prefix = f"s3://{bucket}/nccl/job-9/"
        outcome = run.run({"cluster": "ml-cluster", "job_logs_s3_prefix": prefix}, "joblog-map")
        plan = outcome.get("work/joblogs-plan.json")
        parts = [n for n in outcome.names() if n.startswith("work/joblogs-part-")]

    # Then the run planned the prefix, fanned it out on the map and merged the parts in NcclResults
    assert outcome.status == "SUCCEEDED"
    entered = outcome.states_entered()
    assert entered.index("PlanJobLogs") < entered.index("ScanJobLogs") < entered.index("NcclResults")
    plan = json.loads(plan)
    assert plan["objects"] == len(excerpts) + job.ranks + 2
    assert plan["batches"] > 10 and len(parts) == plan["batches"]
    # and the straggler planted in the Inspector files is named on node 5, with its own concerns
    (straggler,) = outcome.findings("nccl.straggler", "CONCERN")
    assert straggler["evidence"]["culprit"]["hosts"] == [nodes[4].hostname]
    assert straggler["evidence"]["late_in"] == job.collectives
    assert f"[node {nodes[4].instance_id} also: gpu.xid" in straggler["summary"]
    # and the real excerpts' findings survived the fan-out (the memory-registration failure)
    assert outcome.findings("nccl.memlock", "CONCERN")
    # and what was not read is said: the bomb (ratio bound) and the failed batch's objects
    coverage = {f["summary"]: f for f in outcome.findings("nccl.joblog_coverage")}
    assert any("gzip bomb" in s for s in coverage), list(coverage)
    assert any("job-log batch 1 " in s and "not read (TransientError)" in s for s in coverage), list(coverage)
