"""The diagnose state machine end to end: the real ASL in moto, the real handlers, simulated clusters.

Each test starts one execution (from an alarm event through the real trigger, or StartExecution
with a request) and asserts what the run left behind: the report's findings, the raw node output
in S3, the SNS message, the path taken through the ASL.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sfn_checks import (
    DATA,
    REAL_NCCL,
    assert_raw_is_what_nodes_printed,
    collect_failure,
    concerns_by_node,
    node_row,
    task_failures,
)

from hyperpod_perf_dev.localrun.demo import demo_cluster
from hyperpod_perf_dev.localrun.driver import local_pipeline, wait_all
from hyperpod_perf_dev.localrun.plan import ClusterPlan, NodePlan, RunPlan

DEMO = demo_cluster("faulty", 8)


def test_demo_scenario_from_an_alarm_reports_every_planted_concern_and_notifies() -> None:
    # Given the demo cluster: 8 x p5 over two AZs, PCIe x8 on node 3, Xid 79 on node 5, an EFA port
    # down on node 6, powersave on node 2, Lustre at 97% of provisioned, NodeRecovery None
    with local_pipeline(RunPlan(clusters=(DEMO,))) as run:
        nodes = run.cluster_nodes()
        # When the FSx alarm's state-change event reaches the trigger
        decision = run.trigger(run.alarm_event())
        outcome = run.wait(run.execution_arn(decision["execution_name"]))
        published = run.published()

    # Then the run succeeded along the happy path
    assert decision["started"] is True
    assert outcome.status == "SUCCEEDED"
    assert "ReportProblem" not in outcome.states_entered()
    # and exactly the planted concerns were found, on the planted nodes
    assert concerns_by_node(outcome) == {
        nodes[2].instance_id: {"gpu.pcie_width"},
        nodes[4].instance_id: {"gpu.xid"},
        nodes[5].instance_id: {"efa.port_state"},
        nodes[1].instance_id: {"host.cpu_governor"},
        None: {"topology.az_spread", "fs.throughput"},
    }
    (xid,) = outcome.findings("gpu.xid", "CONCERN")
    assert "Xid 79" in xid["summary"] and "GPU 5" in xid["summary"]
    (pcie,) = outcome.findings("gpu.pcie_width", "CONCERN")
    assert "GPU 3" in pcie["summary"] and "x8 of x16" in pcie["summary"]
    (port,) = outcome.findings("efa.port_state", "CONCERN")
    assert "rdmap113s0" in port["summary"]
    (saturated,) = outcome.findings("fs.throughput", "CONCERN")
    assert run.fs_ids["ml-cluster"] in saturated["summary"] and "97.0%" in saturated["summary"]
    (recovery,) = outcome.findings("coverage.node_recovery", "INFO")
    assert "NodeRecovery is None" in recovery["summary"]
    assert outcome.report["run"]["reason"] == "CloudWatch alarm hpd-ml-cluster-fsx-throughput in ALARM"
    # and the report files and every node's raw output are in the bucket, byte for byte
    assert {"report.json", "report.md", "report.html"} <= set(outcome.names())
    assert_raw_is_what_nodes_printed(run, outcome, list(range(8)))
    # and one SNS message went out, its e-mail and Chatbot bodies the ones kept beside the report
    (message,) = published
    assert message["bodies"]["email"] == outcome.email
    assert json.loads(message["bodies"]["https"]) == outcome.chatbot
    assert message["subject"].startswith(
        "[hyperpod-perf] ml-cluster: ACT NOW 1/8 nodes - 1 node is failing the job"
    )
    assert outcome.chatbot["version"] == "1.0" and outcome.chatbot["source"] == "custom"
    assert f"s3://{run.dep.bucket}/{outcome.prefix}report.html" in outcome.email
    for check in ("gpu.pcie_width", "gpu.xid", "efa.port_state", "host.cpu_governor", "fs.throughput"):
        assert check in outcome.email


def test_a_node_that_cannot_be_collected_becomes_its_concern_and_the_others_are_evaluated() -> None:
    # Given node 7's SSM agent is offline (StartSession answers TargetNotConnected)
    plan = ClusterPlan(node_plans={6: NodePlan(refuse="TargetNotConnected")})
    with local_pipeline(RunPlan(clusters=(plan,))) as run:
        nodes = run.cluster_nodes()
        # When the cluster is diagnosed
        outcome = run.run({"cluster": "ml-cluster"}, "one-node-down")

    # Then the run still succeeds; node 7 carries a collect.node CONCERN naming the reason
    assert outcome.status == "SUCCEEDED"
    failure = collect_failure(outcome, nodes[6].instance_id)
    assert failure["severity"] == "CONCERN"
    assert failure["evidence"]["reason"] == "TargetNotConnected"
    assert "could not be collected: TargetNotConnected" in failure["summary"]
    assert node_row(outcome, nodes[6].instance_id)["collection"] == "failed"
    # and the other seven were collected and judged (their raw output and their checks are there)
    others = [i for i in range(8) if i != 6]
    assert_raw_is_what_nodes_printed(run, outcome, others)
    assert outcome.raw(nodes[6].instance_id) is None
    for index in others:
        assert node_row(outcome, nodes[index].instance_id)["collection"] == "collected"
        checked = {f["check"] for f in outcome.findings() if f["node"] == nodes[index].instance_id}
        assert {"gpu.xid", "efa.port_state", "host.cpu_governor"} <= checked
    assert outcome.report["cluster"]["node_count"] == 8


def test_a_cluster_that_does_not_exist_ends_with_a_clear_notification_then_fails(record_case) -> None:
    # Given no cluster named ghost-cluster in the account
    with local_pipeline(RunPlan(clusters=(ClusterPlan(name="ghost-cluster", exists=False),))) as run:
        # When a diagnosis of it is requested
        outcome = run.run({"cluster": "ghost-cluster"}, "ghost")
        published = run.published()

    # Then ResolveCluster's ClusterNotFound is caught: ReportProblem notifies, then the Fail state
    assert outcome.status == "FAILED"
    assert outcome.error == "DiagnosisFailed"
    entered = outcome.states_entered()
    assert entered[-2:] == ["ReportProblem", "DiagnosisFailed"]
    assert "Gather" not in entered
    (message,) = published
    text = message["bodies"]["email"]
    assert message["subject"] == "hyperpod-perf: diagnosis of ghost-cluster could not run (ClusterNotFound)"
    assert "The diagnosis could not run: ClusterNotFound." in text
    assert "cluster 'ghost-cluster' not found" in text
    assert "aws sagemaker list-clusters" in text  # what to do next
    chatbot = json.loads(message["bodies"]["https"])
    assert chatbot["content"]["title"] == ":warning: hyperpod-perf could not diagnose ghost-cluster"
    # and the problem is recorded beside where the report would have been
    problem = json.loads(outcome.get("problem.json"))
    assert problem["reason"] == "ClusterNotFound" and problem["execution"] == "ghost"
    record_case(
        "unknown cluster name",
        "ReportProblem notification 'ClusterNotFound' with the list-clusters command; then Fail",
    )


def test_an_invalid_request_is_rejected_with_a_notification_saying_which_field(record_case) -> None:
    # Given a request whose cluster name carries shell metacharacters
    with local_pipeline() as run:
        # When it is started
        outcome = run.run({"cluster": "ml-cluster; rm -rf /"}, "bad-input")
        published = run.published()

    # Then ValidateRequest rejects it: ReportInvalidRequest notifies, then RequestRejected fails
    assert outcome.status == "FAILED"
    assert outcome.error == "InvalidRequest"
    assert outcome.states_entered() == ["ValidateRequest", "ReportInvalidRequest", "RequestRejected"]
    (message,) = published
    text = message["bodies"]["email"]
    assert "The diagnosis could not run: InvalidRequest." in text
    assert "invalid request field 'cluster'" in text
    assert "HyperPod cluster name" in text
    # and the problem is kept in the execution's own folder for rejected requests, nowhere else
    assert outcome.prefix is not None and outcome.prefix.startswith("reports/_rejected/")
    assert outcome.names() == ["problem.json"]
    record_case(
        "invalid start-execution input", "ReportInvalidRequest notification naming the field; then Fail"
    )


def test_a_rejected_request_cannot_choose_where_its_problem_is_written(record_case) -> None:
    # Given a run that succeeded, and invalid requests naming its folder or one outside reports/
    with local_pipeline() as run:
        first = run.run({"cluster": "ml-cluster"}, "good")
        assert first.status == "SUCCEEDED" and first.prefix is not None
        before = run.keys("")
        forged_run = {"prefix": first.prefix, "execution": "good", "started": "2026-01-01T00:00:00+00:00"}
        attempts = {
            "other-run": {"cluster": "ml-cluster", "run": forged_run},
            "outside": {"cluster": "ml-cluster", "run": {**forged_run, "prefix": "outside/"}},
            "top-level": {"cluster": "ml-cluster", "prefix": "outside/"},
            "request-key": {"request": {"cluster": "victim"}, "cluster": "ml-cluster", "sample_size": "8"},
        }
        # When each is started
        outcomes = {name: run.run(request, f"forged-{name}") for name, request in attempts.items()}
        after = run.keys("")

    # Then each is rejected, and its problem.json lies in its own execution's folder under
    # reports/_rejected/: the successful run's folder is untouched and nothing is outside reports/
    new_keys = sorted(set(after) - set(before))
    assert all(o.error == "InvalidRequest" for o in outcomes.values())
    assert new_keys == sorted(o.prefix + "problem.json" for o in outcomes.values() if o.prefix is not None)
    assert len(new_keys) == len(attempts)
    assert all(k.startswith("reports/_rejected/") and "-forged-" in k for k in new_keys)
    untouched = [k for k in before if k.startswith(first.prefix)]
    assert [k for k in after if k.startswith(first.prefix)] == untouched
    for name in attempts:
        record_case(
            f"rejected request carrying {name!r} location",
            "rejected; problem.json only in reports/_rejected/<stamp>-<its execution>/",
        )


def test_a_throttled_start_session_is_retried_by_the_state_machine_until_the_node_is_collected(
    record_case,
) -> None:
    # Given node 4's StartSession is throttled 5 times: the handler's own 5 attempts all fail
    plan = ClusterPlan(node_plans={3: NodePlan(throttle=5)})
    with local_pipeline(RunPlan(clusters=(plan,))) as run:
        node = run.cluster_nodes()[3]
        # When the cluster is diagnosed
        outcome = run.run({"cluster": "ml-cluster"}, "throttled")
        calls = run.behaviour.calls[node.instance_id]
        intervals = list(run.retry_intervals)

    # Then CollectNode failed once with Throttled, the ASL retried it (backoff requested, sleep
    # skipped by the driver), and the 6th StartSession got through
    assert outcome.status == "SUCCEEDED"
    assert task_failures(outcome) == ["Throttled"]
    assert len(intervals) == 1 and 0 <= intervals[0] <= 1.0  # IntervalSeconds 1, full jitter
    assert calls == 6
    # and the node is collected like any other: raw output kept, no collect.node finding
    assert outcome.raw(node.instance_id) == node.text.encode()
    assert outcome.findings("collect.node") == []
    assert node_row(outcome, node.instance_id)["collection"] == "collected"
    record_case("StartSession throttled", "retried with backoff; node collected")


def test_an_alarm_storm_of_fifty_events_in_a_minute_starts_one_execution() -> None:
    # Given 50 deliveries of the cluster's alarm within one minute (redeliveries and re-fires)
    with local_pipeline(RunPlan(clusters=(ClusterPlan(nodes=2),))) as run:
        start = datetime.now(UTC).replace(second=0, microsecond=0)
        # When each reaches the trigger
        decisions = [
            run.trigger(run.alarm_event(when=start + timedelta(seconds=i * 60 / 50))) for i in range(50)
        ]
        executions = wait_all(run)

    # Then they all name the same execution and exactly one exists (and it ran to completion)
    assert {d["execution_name"] for d in decisions} == {decisions[0]["execution_name"]}
    # and only the first event counts as a start; the 49 others join it (the metric says so)
    assert [d["started"] for d in decisions] == [True] + [False] * 49
    assert len(executions) == 1
    assert executions[0]["name"] == decisions[0]["execution_name"]
    assert executions[0]["status"] == "SUCCEEDED"


def test_a_healthy_cluster_reports_only_its_two_az_spread_and_still_notifies() -> None:
    # Given the healthy scenario: no planted node fault, Lustre at 35%, NodeRecovery Automatic,
    # and (as in the demo) nodes alternating between two AZs
    with local_pipeline() as run:
        outcome = run.run({"cluster": "ml-cluster"}, "healthy")
        published = run.published()

    # Then the only concern is the AZ spread the layout itself plants
    assert outcome.status == "SUCCEEDED"
    assert concerns_by_node(outcome) == {None: {"topology.az_spread"}}
    (spread,) = outcome.findings("topology.az_spread")
    assert "us-west-2a (usw2-az1): 4, us-west-2b (usw2-az2): 4" in spread["summary"]
    # (the zones read by the Gather branch NodePlacement, beside the fan-out, into work/placement,
    # and the fleet rows carry them although CollectNode judged the nodes before they were known)
    assert "work/placement.json" in outcome.names()
    assert (
        sorted(n["availability_zone"] for n in outcome.report["nodes"])
        == ["us-west-2a"] * 4 + ["us-west-2b"] * 4
    )
    assert outcome.findings("coverage.node_recovery", "INFO") == []
    (fs,) = outcome.findings("fs.throughput")
    assert fs["severity"] == "OK"
    # and (notify policy "always") the healthy result is still published
    (message,) = published
    assert message["bodies"]["email"] == outcome.email


def test_the_second_run_compares_with_the_first_and_says_what_is_still_present() -> None:
    # Given the demo cluster, diagnosed once
    with local_pipeline(RunPlan(clusters=(DEMO,))) as run:
        first = run.run({"cluster": "ml-cluster"}, "run-1")
        # When it is diagnosed again, nothing fixed in between
        second = run.run({"cluster": "ml-cluster"}, "run-2")
        published = run.published()

    # Then the first had nothing to compare with, the second lists every concern as still present
    assert first.report["history"] is None
    history = second.report["history"]
    assert history["previous_location"] == f"s3://{run.dep.bucket}/{first.prefix}"
    still = {(f["node"], f["check"]) for f in history["still_present"] if f["severity"] == "CONCERN"}
    concerns = {(f["node"], f["check"]) for f in first.findings(severity="CONCERN")}
    assert still == concerns and len(concerns) == 6
    assert history["new"] == [] and history["resolved"] == []
    # and the second notification says so
    assert len(published) == 2
    assert "SINCE LAST RUN: 0 new, 0 resolved, " in second.email
    assert f"{len(history['still_present'])} still present" in second.email
    assert "SINCE LAST RUN: no previous report to compare with" in first.email


def test_pairwise_nccl_logs_under_the_request_prefix_become_nccl_findings() -> None:
    # Given four pairwise all_reduce logs named <hostA>__<hostB>.log after the simulated hosts:
    # three are the real p5 capture (~487 GB/s), one a synthetic slow pair (~301 GB/s)
    real = (REAL_NCCL / "p5-2node_srun-label_allreduce-16G.txt").read_text()
    slow = (DATA / "nccl_slow_pair_synthetic.log").read_text()
    with local_pipeline(RunPlan(clusters=(ClusterPlan(nodes=4),))) as run:
        hosts = [n.hostname for n in run.cluster_nodes()]
        logs = {
            f"{hosts[0]}__{hosts[1]}.log": real,
            f"{hosts[2]}__{hosts[3]}.log": real,
            f"{hosts[0]}__{hosts[2]}.log": real,
            f"{hosts[1]}__{hosts[3]}.log": slow,
        }
        s3 = run.dep.client("s3")
        for name, text in logs.items():
            s3.put_object(Bucket=run.dep.bucket, Key=f"nccl/2025-06-02/{name}", Body=text.encode())
        # When the request points at that prefix
        prefix = f"s3://{run.dep.bucket}/nccl/2025-06-02/"
        outcome = run.run({"cluster": "ml-cluster", "nccl_s3_prefix": prefix}, "nccl")

    # Then NcclResults ran and the slow pair is a concern naming its two hosts
    assert outcome.status == "SUCCEEDED"
    assert "NcclResults" in outcome.states_entered()
    slow_pairs = [f for f in outcome.findings("nccl.pair_slow", "CONCERN") if "pair " in f["summary"]]
    (pair,) = slow_pairs
    assert f"{hosts[1]}–{hosts[3]}" in pair["summary"]
    assert "301.2 GB/s" in pair["summary"]
    (baseline,) = outcome.findings("nccl.below_baseline")
    assert baseline["severity"] == "OK" and "487.2 GB/s" in baseline["summary"]
    assert outcome.report["nccl"] is not None


REAL_JOBLOGS = REAL_NCCL.parent / "joblogs"


def test_job_logs_in_the_request_join_the_report_cross_referenced_with_the_node() -> None:
    # Given the demo cluster (Xid 79 on node 5) and a job log in S3: the real aws-ofi-nccl#889
    # excerpt (plugin initialisation failed on a p4d: no EFA) with its host name replaced by node 5's
    with local_pipeline(RunPlan(clusters=(DEMO,))) as run:
        nodes = run.cluster_nodes()
        text = (REAL_JOBLOGS / "ofi-889-cloudwatch-glued-init-failed.log").read_text()
        log = text.replace("ip-10-36-29-253", nodes[4].hostname)
        run.dep.client("s3").put_object(Bucket=run.dep.bucket, Key="nccl/job-7/rank0.log", Body=log.encode())
        # When the request names that prefix as the job's logs
        prefix = f"s3://{run.dep.bucket}/nccl/job-7/"
        outcome = run.run({"cluster": "ml-cluster", "job_logs_s3_prefix": prefix}, "joblogs")
        published = run.published()

    # Then NcclResults ran and the transport fallback is a concern naming node 5, with its Xid beside it
    assert outcome.status == "SUCCEEDED"
    assert "NcclResults" in outcome.states_entered()
    fallback = next(
        f for f in outcome.findings("nccl.transport", "CONCERN") if "did not use EFA" in f["summary"]
    )
    (named,) = fallback["evidence"]["nodes"]
    assert named["host"] == nodes[4].hostname and named["node"] == nodes[4].instance_id
    assert any(c.startswith("gpu.xid: ") for c in named["node_concerns"])
    assert f"[node {nodes[4].instance_id} also: gpu.xid" in fallback["summary"]
    # and the e-mail and the Slack (Chatbot) message carry it
    assert "nccl.transport" in published[-1]["bodies"]["email"]
    assert "nccl.transport" in published[-1]["bodies"]["https"]
