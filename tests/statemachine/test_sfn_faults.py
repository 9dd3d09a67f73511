"""Faults through the real ASL (issue 8, item 2): the run finishes, the report says what could not
be checked and why, and every byte collected is in S3 under raw/.

Faults are injected where they arise in production: StartSession answers with the AWS error code,
the simulated agent stalls or cuts the data channel, the logs/CloudWatch/S3 clients raise the
ClientError AWS would return (hyperpod_perf_dev.localrun.faults).
"""

from __future__ import annotations

from sfn_checks import (
    assert_raw_is_what_nodes_printed,
    collect_failure,
    node_row,
    task_failures,
)

from hyperpod_perf_dev.localrun.driver import local_pipeline
from hyperpod_perf_dev.localrun.plan import AdapterFaults, ClusterPlan, NodePlan, RunPlan


def test_nodes_that_stall_refuse_break_off_or_vanish_are_each_reported_with_their_reason(record_case) -> None:
    # Given four misbehaving nodes among eight: node 1's stream stalls after 3 chunks (idle timeout
    # 1.5 s), node 3 refuses the session (AccessDenied), node 5's channel is cut after 5 chunks
    # (partial output), node 7 leaves the cluster after ResolveCluster listed it
    plans = {
        0: NodePlan(stall_after_chunks=3),
        2: NodePlan(refuse="AccessDeniedException"),
        4: NodePlan(close_after_chunks=5),
        6: NodePlan(disappear=True),
    }
    with local_pipeline(RunPlan(clusters=(ClusterPlan(node_plans=plans),))) as run:
        nodes = run.cluster_nodes()
        # When the cluster is diagnosed
        outcome = run.run({"cluster": "ml-cluster"}, "node-faults")

    # Then the run finishes and each failed node says exactly why
    assert outcome.status == "SUCCEEDED"
    expected = {
        0: ("SessionTimeout", "no data for 1.5s (stalled stream)"),
        2: ("AccessDenied", "AccessDeniedException"),
        4: ("SessionProtocolError", "data channel closed before the command finished"),
        6: ("TargetNotConnected", "is not connected"),
    }
    for index, (reason, detail) in expected.items():
        failure = collect_failure(outcome, nodes[index].instance_id)
        assert failure["severity"] == "CONCERN"
        assert failure["evidence"]["reason"] == reason
        assert detail in failure["summary"], failure["summary"]
        row = node_row(outcome, nodes[index].instance_id)
        assert row["collection"] == "failed" and reason in row["collection_error"]
    assert len(outcome.findings("collect.node")) == 4
    # and the report's "not checked" list names each of them with the same reason
    not_checked = {n["what"]: n["why"] for n in outcome.report["not_checked"]}
    for index in expected:
        failure = collect_failure(outcome, nodes[index].instance_id)
        assert not_checked[f"node {nodes[index].instance_id}"] == failure["summary"]
    # and every node that delivered its output has it in raw/, byte for byte
    healthy = [1, 3, 5, 7]
    assert_raw_is_what_nodes_printed(run, outcome, healthy)
    # and what the stalled node printed before it stalled is kept: exactly the 3 chunks that
    # arrived (1,024 bytes each), a prefix of its output; the sections in it were judged and the
    # collect.node finding says the collection is incomplete
    partial = outcome.raw(nodes[0].instance_id)
    assert partial is not None and len(partial) == 3 * 1024
    assert nodes[0].text.encode().startswith(partial)
    stalled = collect_failure(outcome, nodes[0].instance_id)
    assert stalled["summary"].startswith("collection incomplete: SessionTimeout")
    assert (
        stalled["evidence"]["partial_bytes"] == 3 * 1024
        and "meta" in stalled["evidence"]["sections_received"]
    )
    # and for the cut-off node, whatever the torn connection delivered before the reset (the peer's
    # reset may discard bytes still in flight, so anywhere from none to its 5 chunks) is kept the
    # same way: a prefix of its output, and an "incomplete" finding when anything arrived
    cut = outcome.raw(nodes[4].instance_id)
    cut_failure = collect_failure(outcome, nodes[4].instance_id)
    if cut is None:
        assert cut_failure["summary"].startswith("could not be collected: SessionProtocolError")
    else:
        assert 0 < len(cut) <= 5 * 1024 and nodes[4].text.encode().startswith(cut)
        assert cut_failure["summary"].startswith("collection incomplete: SessionProtocolError")
    kept = [*healthy, 0] + ([4] if cut is not None else [])
    assert sorted(k for k in outcome.names() if k.startswith("raw/")) == sorted(
        f"raw/{nodes[i].instance_id}.txt" for i in kept
    )
    # and the vanished node really left the cluster mid-run (listed by ResolveCluster, gone after)
    assert nodes[6].instance_id in {n["node"] for n in outcome.report["nodes"]}
    record_case(
        "node stream stalls after 3 chunks (idle timeout)",
        "collect.node CONCERN SessionTimeout, the 3 KiB received kept in raw/ and judged; run SUCCEEDED",
    )
    record_case(
        "node refuses the session (AccessDenied)",
        "collect.node CONCERN AccessDenied; the other nodes evaluated",
    )
    record_case(
        "node's channel cut mid-stream",
        "collect.node CONCERN SessionProtocolError; whatever arrived kept in raw/",
    )
    record_case(
        "node leaves the cluster mid-run", "collect.node CONCERN TargetNotConnected; listed in not_checked"
    )


def test_access_denied_on_logs_and_metrics_is_reported_as_not_checked_and_the_rest_runs(record_case) -> None:
    # Given a role that may not read CloudWatch Logs nor CloudWatch metrics
    faults = AdapterFaults(logs_access_denied=True, metrics_access_denied=True)
    with local_pipeline(RunPlan(clusters=(ClusterPlan(nodes=4),), adapters=faults)) as run:
        fs_id = run.fs_ids["ml-cluster"]
        # When the cluster is diagnosed
        outcome = run.run({"cluster": "ml-cluster"}, "denied")
        denied = set(run.faults.denied_calls)

    # Then the run finishes and the report lists exactly those checks as not checked, and why
    assert outcome.status == "SUCCEEDED"
    assert denied == {"logs:filter_log_events", "cloudwatch:get_metric_data"}
    not_checked = {(n["what"], n["why"]) for n in outcome.report["not_checked"]}
    assert not_checked == {
        ("health.deep_check", "deep health check results in CloudWatch Logs: not checked (AccessDenied)"),
        ("health.hma", "Health Monitoring Agent events in CloudWatch Logs: not checked (AccessDenied)"),
        ("fs.throughput", f"CloudWatch metrics of {fs_id} could not be read: not checked (AccessDenied)"),
    }
    for check in ("health.deep_check", "health.hma", "fs.throughput"):
        (finding,) = [f for f in outcome.findings(check, "INFO") if "not checked" in f["summary"]]
        assert finding["next_step"].startswith("Grant the caller read access for ")
    # and the nodes were still collected and judged
    assert_raw_is_what_nodes_printed(run, outcome, [0, 1, 2, 3])
    assert outcome.findings("collect.node") == []
    record_case(
        "AccessDenied on logs:FilterLogEvents and cloudwatch:GetMetricData",
        "health.* and fs.throughput listed as not checked (AccessDenied); run SUCCEEDED",
    )


def test_an_empty_cluster_ends_with_a_no_targets_notification(record_case) -> None:
    # Given a cluster whose node list is empty
    with local_pipeline(RunPlan(clusters=(ClusterPlan(empty=True),))) as run:
        # When it is diagnosed
        outcome = run.run({"cluster": "ml-cluster"}, "empty")
        published = run.published()

    # Then the designed outcome: ReportProblem says there is nothing to diagnose, then Fail
    assert outcome.status == "FAILED" and outcome.error == "DiagnosisFailed"
    assert outcome.states_entered()[-2:] == ["ReportProblem", "DiagnosisFailed"]
    (message,) = published
    text = message["bodies"]["email"]
    assert "The diagnosis could not run: NoTargets." in text
    assert "cluster ml-cluster has no node to diagnose" in text
    assert "aws sagemaker list-cluster-nodes" in text
    assert not any(k.startswith("raw/") for k in outcome.names())
    record_case(
        "cluster with no node",
        "ReportProblem notification 'NoTargets' with the list-cluster-nodes command; then Fail",
    )


def test_a_cluster_that_is_updating_is_diagnosed_and_reported_with_its_status(record_case) -> None:
    # Given a cluster in status Updating whose node 8 is still Pending (no agent yet)
    plans = {7: NodePlan(status="Pending", refuse="TargetNotConnected")}
    with local_pipeline(RunPlan(clusters=(ClusterPlan(status="Updating", node_plans=plans),))) as run:
        nodes = run.cluster_nodes()
        # When it is diagnosed
        outcome = run.run({"cluster": "ml-cluster"}, "updating")

    # Then the run finishes; the report carries the cluster status; the pending node says why
    assert outcome.status == "SUCCEEDED"
    assert outcome.report["cluster"]["status"] == "Updating"
    # (not even tried: HyperPod does not report it Running, so no SSM session is started for it)
    failure = collect_failure(outcome, nodes[7].instance_id)
    assert (failure["severity"], failure["evidence"]["reason"]) == ("INFO", "NodeNotRunning")
    assert failure["summary"] == "not collected: node status is Pending"
    assert node_row(outcome, nodes[7].instance_id)["collection"] == "not_collected"
    pending = {"what": f"node {nodes[7].instance_id}", "why": failure["summary"]}
    assert pending in outcome.report["not_checked"]
    assert not [s for s in run.ssm.started if s["Target"].endswith(nodes[7].instance_id)]
    assert_raw_is_what_nodes_printed(run, outcome, list(range(7)))
    record_case(
        "cluster Updating, one node Pending",
        "diagnosed; report shows Updating; Pending node INFO not collected, no session started",
    )


def test_an_s3_put_that_fails_once_is_retried_and_nothing_is_lost(record_case) -> None:
    # Given the first PutObject of a raw node output fails with a 500 InternalError
    faults = AdapterFaults(s3_put_failures=1, s3_put_key_part="/raw/")
    with local_pipeline(RunPlan(clusters=(ClusterPlan(nodes=4),), adapters=faults)) as run:
        # When the cluster is diagnosed
        outcome = run.run({"cluster": "ml-cluster"}, "s3-once")
        failed = list(run.faults.failed_puts)
        intervals = list(run.retry_intervals)

    # Then CollectNode failed once with TransientError, the ASL retried it, and the run succeeded
    assert outcome.status == "SUCCEEDED"
    assert task_failures(outcome) == ["TransientError"]
    assert len(failed) == 1 and failed[0].startswith(outcome.prefix + "raw/")
    assert len(intervals) == 1
    # and every node's raw output is in S3, the retried one included, with no collect.node finding
    assert_raw_is_what_nodes_printed(run, outcome, [0, 1, 2, 3])
    assert failed[0][len(outcome.prefix) :] in outcome.names()
    assert outcome.findings("collect.node") == []
    record_case(
        "S3 PutObject of a raw output fails once (500)",
        "CollectNode retried by the state machine (TransientError); every raw output in S3",
    )


def test_describe_cluster_node_denied_leaves_the_nodes_unplaced_and_the_rest_runs(record_case) -> None:
    # Given a role that may not DescribeClusterNode (only NodePlacement calls it, beside the fan-out)
    faults = AdapterFaults(describe_node_access_denied=True)
    with local_pipeline(RunPlan(clusters=(ClusterPlan(nodes=4),), adapters=faults)) as run:
        # When the cluster is diagnosed
        outcome = run.run({"cluster": "ml-cluster"}, "no-placement")
        denied = list(run.faults.denied_calls)

    # Then each node's description was refused, once, and the run still finished with every node
    assert outcome.status == "SUCCEEDED"
    assert denied == ["sagemaker:describe_cluster_node"] * 4
    assert_raw_is_what_nodes_printed(run, outcome, [0, 1, 2, 3])
    assert outcome.findings("collect.node") == []
    # and the report says the placement was not checked, and why, and invents no zone
    (finding,) = [
        f for f in outcome.findings("topology.az_spread") if "could not be described" in f["summary"]
    ]
    assert finding["severity"] == "INFO"
    assert finding["summary"] == "placement of 4 node(s) could not be described: not checked (AccessDenied)"
    assert {n["availability_zone"] for n in outcome.report["nodes"]} == {None}
    (unplaced,) = [f for f in outcome.findings("topology.az_spread") if f != finding]
    assert unplaced["summary"] == "placement not known for any of 4 node(s): AZ spread not checked"
    record_case(
        "AccessDenied on sagemaker:DescribeClusterNode",
        "topology.az_spread INFO not checked (AccessDenied); nodes collected and judged; run SUCCEEDED",
    )


def test_a_node_placement_step_that_keeps_failing_is_caught_and_the_report_is_still_written(
    record_case,
) -> None:
    # Given every PutObject of work/placement failing (a 500 each time, past the ASL's retries)
    faults = AdapterFaults(s3_put_failures=100, s3_put_key_part="/work/placement")
    with local_pipeline(RunPlan(clusters=(ClusterPlan(nodes=4),), adapters=faults)) as run:
        outcome = run.run({"cluster": "ml-cluster"}, "placement-fails")
        failed = list(run.faults.failed_puts)

    # Then NodePlacement was tried five times (the first and four retries), then caught
    assert outcome.status == "SUCCEEDED"
    assert task_failures(outcome) == ["TransientError"] * 5
    assert len(failed) == 5
    assert any(
        e["type"] == "PassStateExited" and e["stateExitedEventDetails"]["name"] == "PlacementNotRead"
        for e in outcome.history
    )
    # and Evaluate went on without it: every node collected, judged and reported, unplaced
    assert_raw_is_what_nodes_printed(run, outcome, [0, 1, 2, 3])
    assert len(outcome.report["nodes"]) == 4
    (unplaced,) = outcome.findings("topology.az_spread")
    assert unplaced["summary"] == "placement not known for any of 4 node(s): AZ spread not checked"
    record_case(
        "NodePlacement fails past its retries (S3 500 on work/placement)",
        "caught (PlacementNotRead); report written without zones; run SUCCEEDED",
    )
