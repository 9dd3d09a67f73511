"""Node runners: rate limit, concurrency, retries, typed per-node failures, sinks, offline dirs."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hyperpod_perf.aws.ssm_commands import SsmCommandClient, bucket_and_key
from hyperpod_perf.collect.runner import (
    DirectorySink,
    NodeFailure,
    NodeOutput,
    NodeTarget,
    SendCommandNodeRunner,
    SessionNodeRunner,
    SnapshotDirRunner,
    TokenBucket,
)
from hyperpod_perf.collect.snapshot import render_container
from hyperpod_perf.domain.errors import SessionTimeout, TargetNotConnected, Throttled

pytestmark = pytest.mark.timeout(30)

CLUSTER = "abcd1234efgh"
SNAPSHOT = render_container(
    [("meta", "collector_version=1\nhostname=ip-10-0-0-1\n", 0), ("memlock", "unlimited\n", 0)]
)


@dataclass
class Result:
    stdout: str
    stderr: str = ""
    exit_code: int | None = 0
    truncated: bool = False
    session_id: str = "s-1"


Outcome = Result | BaseException | Callable[[], Result]


class ScriptedSessions:
    """A SessionClient stand-in: per target, a list of outcomes consumed one per call."""

    def __init__(
        self, outcomes: dict[str, list[Outcome]], default: Outcome | None = None, delay: float = 0.0
    ):
        self.outcomes = {k: list(v) for k, v in outcomes.items()}
        self.default = default if default is not None else Result(SNAPSHOT)
        self.delay = delay
        self.calls: list[tuple[float, str, str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def run(self, target: str, document_name: str, parameters: Any = None) -> Result:
        with self._lock:
            self.calls.append((time.monotonic(), target, document_name, parameters))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            queue = self.outcomes.get(target)
            outcome = queue.pop(0) if queue else self.default
        try:
            if self.delay:
                time.sleep(self.delay)
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome() if callable(outcome) else outcome
        finally:
            with self._lock:
                self.in_flight -= 1


def node(i: int, group: str = "worker-group-1") -> NodeTarget:
    return NodeTarget(f"i-{i:017x}", group, f"ip-10-0-0-{i}")


def target(n: NodeTarget) -> str:
    return n.ssm_target(CLUSTER)


def runner(sessions: ScriptedSessions, **options: Any) -> SessionNodeRunner:
    defaults: dict[str, Any] = {
        "rate_per_s": 1000.0,
        "burst": 1000.0,
        "concurrency": 8,
        "rng": random.Random(7),
    }
    defaults.update(options)
    return SessionNodeRunner(CLUSTER, lambda: sessions, **defaults)


def test_ssm_target_format_for_hyperpod_nodes() -> None:
    assert (
        NodeTarget("i-0123456789abcdef0", "worker-group-1").ssm_target("abcd1234efgh")
        == "sagemaker-cluster:abcd1234efgh_worker-group-1-i-0123456789abcdef0"
    )
    with pytest.raises(ValueError, match="instance group"):
        NodeTarget("i-0123456789abcdef0").ssm_target("abcd1234efgh")


def test_token_bucket_spaces_calls_at_the_rate() -> None:
    # Given a bucket at 3/s (burst 1) on a fake clock that sleeping advances
    now = [100.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    bucket = TokenBucket(3.0, clock=lambda: now[0], sleep=sleep)

    # When 10 calls acquire back to back
    waits = [bucket.acquire() for _ in range(10)]

    # Then the first goes at once and each next one 1/3 s later: 9 intervals = 3 s
    assert waits[0] == 0
    assert waits[1:] == pytest.approx([1 / 3] * 9)
    assert now[0] - 100.0 == pytest.approx(3.0)


def test_token_bucket_allows_a_burst_then_the_rate() -> None:
    now = [0.0]
    bucket = TokenBucket(2.0, burst=3, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    waits = [bucket.acquire() for _ in range(5)]
    assert waits == pytest.approx([0, 0, 0, 0.5, 0.5])


def test_token_bucket_start_delay_holds_the_first_call_then_keeps_the_rate() -> None:
    # Given a bucket at 2/s told to start 0.25 s late (a wave's second batch at 4/s overall)
    now = [0.0]
    bucket = TokenBucket(
        2.0, initial_delay_s=0.25, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s)
    )
    # Then its first call waits exactly the delay and the next ones 1/2 s each
    assert [bucket.acquire() for _ in range(3)] == pytest.approx([0.25, 0.5, 0.5])
    with pytest.raises(ValueError):
        TokenBucket(2.0, initial_delay_s=-1)


def test_past_the_stop_time_no_session_starts_and_the_node_comes_back_not_started() -> None:
    # Given a runner whose caller's deadline (on its clock) is 10.0, and a clock at 9.0 then 11.0
    sessions = ScriptedSessions({})
    now = [9.0]
    first = runner(sessions, clock=lambda: now[0], stop_starting_at=10.0)
    # When one node is collected before the stop time, then one after it
    (before,) = first.collect([node(1)])
    now[0] = 11.0
    (after,) = first.collect([node(2)])
    # Then only the first started a session; the second is NotStarted, with no attempt made
    assert isinstance(before, NodeOutput)
    assert [call[1] for call in sessions.calls] == [target(node(1))]
    assert isinstance(after, NodeFailure)
    assert (after.reason, after.attempts) == ("NotStarted", 0)


def test_runner_start_session_rate_is_limited_across_threads() -> None:
    # Given 7 nodes, 7 threads and a 20/s limit
    sessions = ScriptedSessions({})
    nodes = [node(i) for i in range(7)]
    begin = time.monotonic()

    # When they are collected
    results = runner(sessions, rate_per_s=20.0, burst=1, concurrency=7).collect(nodes)

    # Then the k-th StartSession call went out no earlier than k/20 s after the start
    # (a late thread can only make calls later, never earlier, so this cannot flake under load)
    starts = sorted(call[0] for call in sessions.calls)
    for k, started in enumerate(starts):
        assert started - begin >= k * 0.05 - 1e-3, (k, started - begin)
    assert starts[-1] - begin < 6 * 0.05 + 1.0
    assert all(isinstance(r, NodeOutput) for r in results)


def test_runner_concurrency_is_bounded() -> None:
    # Given 12 slow sessions and concurrency 3
    sessions = ScriptedSessions({}, delay=0.05)

    # When collected
    runner(sessions, concurrency=3).collect([node(i) for i in range(12)])

    # Then never more than 3 sessions ran at once, and 3 did
    assert sessions.max_in_flight == 3
    assert len(sessions.calls) == 12


def test_throttling_is_retried_with_jittered_exponential_backoff() -> None:
    # Given a node throttled twice before it answers
    n = node(1)
    sessions = ScriptedSessions(
        {target(n): [Throttled("Rate exceeded"), Throttled("Rate exceeded"), Result(SNAPSHOT)]}
    )
    slept: list[float] = []

    # When collected with base 0.5 s backoff and a recorded sleep
    (result,) = runner(sessions, backoff_base_s=0.5, sleep=slept.append).collect([n])

    # Then it succeeded on the third attempt after two backoffs within [0, 0.5] and [0, 1.0]
    assert isinstance(result, NodeOutput)
    assert result.attempts == 3
    assert len(slept) == 2
    assert 0 <= slept[0] <= 0.5 and 0 <= slept[1] <= 1.0
    # And the delays are the seeded full-jitter draws (reproducible, not constants)
    rng = random.Random(7)
    assert slept == pytest.approx([rng.uniform(0, 0.5), rng.uniform(0, 1.0)])


def test_retries_give_up_with_a_typed_failure() -> None:
    n = node(2)
    sessions = ScriptedSessions({}, default=Throttled("Rate exceeded", code="ThrottlingException"))
    (result,) = runner(sessions, max_retries=3, sleep=lambda _s: None).collect([n])
    assert isinstance(result, NodeFailure)
    assert result.reason == "Throttled"
    assert result.attempts == 4
    assert "gave up after 4 attempts" in result.detail
    assert len(sessions.calls) == 4


def test_each_node_gets_its_own_typed_outcome_and_nothing_raises() -> None:
    # Given five nodes: fine, agent offline, stalled, a client bug, an empty output
    nodes = [node(i) for i in range(5)]
    sessions = ScriptedSessions(
        {
            target(nodes[1]): [TargetNotConnected("i-1 is not connected", code="TargetNotConnected")],
            target(nodes[2]): [SessionTimeout("no data for 60s (stalled stream)")],
            target(nodes[3]): [ValueError("bug")],
            target(nodes[4]): [Result("", stderr="bash: nvidia-smi: command not found\n", exit_code=127)],
        }
    )

    # When collected
    results = runner(sessions, sleep=lambda _s: None).collect(nodes)

    # Then results follow the node order, each with its reason; non-retryable errors are tried once
    assert [r.node for r in results] == nodes
    assert isinstance(results[0], NodeOutput) and results[0].text == SNAPSHOT
    assert [(r.reason, r.attempts) for r in results[1:] if isinstance(r, NodeFailure)] == [
        ("TargetNotConnected", 1),
        ("SessionTimeout", 1),
        ("ValueError", 1),
        ("EmptyOutput", 1),
    ]
    assert "stalled" in results[2].detail  # type: ignore[union-attr]
    assert "exit code 127" in results[4].detail and "nvidia-smi" in results[4].detail  # type: ignore[union-attr]


def test_runner_passes_target_document_and_parameters() -> None:
    sessions = ScriptedSessions({})
    n = node(3, group="controller-machine")
    SessionNodeRunner(
        CLUSTER, lambda: sessions, document_name="Doc", parameters={"sectionTimeoutSeconds": ["30"]}
    ).collect([n])
    assert sessions.calls[0][1:] == (
        f"sagemaker-cluster:{CLUSTER}_controller-machine-{n.instance_id}",
        "Doc",
        {"sectionTimeoutSeconds": ["30"]},
    )


def test_sink_receives_raw_text_before_any_parsing(tmp_path: Path) -> None:
    # Given output that is not even a snapshot, and a directory sink
    garbage = "Segmentation fault\n\x00half a line"
    n = node(4)
    sessions = ScriptedSessions({target(n): [Result(garbage, exit_code=139)]})
    sink = DirectorySink(tmp_path / "raw")

    # When collected
    (result,) = runner(sessions, sink=sink).collect([n])

    # Then the raw bytes were saved verbatim under the node id, and returned unparsed
    saved = (tmp_path / "raw" / f"{n.instance_id}.txt").read_text(encoding="utf-8")
    assert saved == garbage
    assert isinstance(result, NodeOutput) and result.text == garbage and result.exit_code == 139
    assert result.sink_error is None
    assert [p.name for p in (tmp_path / "raw").iterdir()] == [f"{n.instance_id}.txt"]  # no temp files left


def test_a_failing_sink_does_not_lose_the_text() -> None:
    def broken_sink(_node_id: str, _text: str) -> None:
        raise OSError("bucket unreachable")

    n = node(5)
    (result,) = runner(ScriptedSessions({}), sink=broken_sink).collect([n])
    assert isinstance(result, NodeOutput)
    assert result.text == SNAPSHOT
    assert result.sink_error == "OSError: bucket unreachable"


def test_the_observer_hears_of_every_node_as_it_finishes_and_cannot_fail_one() -> None:
    # Given four nodes, one offline, and an observer that records and then raises once
    nodes = [node(i) for i in range(4)]
    sessions = ScriptedSessions(
        {target(nodes[2]): [TargetNotConnected("not connected", code="TargetNotConnected")]}
    )
    heard: list[tuple[str, bool, int, int]] = []

    def observer(outcome, done: int, total: int) -> None:
        heard.append((outcome.node.instance_id, outcome.ok, done, total))
        if done == 1:
            raise RuntimeError("the terminal went away")

    # When collected with it
    results = runner(sessions, on_done=observer, concurrency=2).collect(nodes)

    # Then it heard each node once, counted 1..4 of 4, the failure included
    assert sorted(h[0] for h in heard) == sorted(n.instance_id for n in nodes)
    assert [(h[2], h[3]) for h in heard] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert {h[0]: h[1] for h in heard}[nodes[2].instance_id] is False
    # and its failure cost no node
    assert [r.ok for r in results] == [True, True, False, True]


def test_directory_sink_sanitises_node_ids(tmp_path: Path) -> None:
    sink = DirectorySink(tmp_path)
    sink("../etc/passwd", "x")
    assert (tmp_path / ".._etc_passwd.txt").read_text() == "x"


# --- offline snapshots --------------------------------------------------------------------------


def write_snapshot(directory: Path, name: str, hostname: str, instance_id: str = "") -> str:
    meta = (
        f"collector_version=1\nhostname={hostname}\ninstance_id={instance_id}\n"
        "instance_group=worker-group-1\n"
    )
    text = render_container([("meta", meta, 0)])
    (directory / name).write_text(text)
    return text


def test_snapshot_dir_matches_by_instance_id_then_hostname(tmp_path: Path) -> None:
    # Given files named by instance id, by hostname, and one named arbitrarily with a meta hostname
    by_id = write_snapshot(tmp_path, "i-00000000000000001.txt", "ip-10-0-0-1")
    by_host_name = write_snapshot(tmp_path, "ip-10-0-0-2.txt", "ip-10-0-0-2")
    by_meta = write_snapshot(tmp_path, "node-c.txt", "ip-10-0-0-3")
    nodes = [
        NodeTarget("i-00000000000000001", "g", "ip-10-0-0-1"),
        NodeTarget("i-00000000000000002", "g", "ip-10-0-0-2"),
        NodeTarget("i-00000000000000003", "g", "ip-10-0-0-3"),
        NodeTarget("i-00000000000000004", "g", "ip-10-0-0-4"),
    ]

    # When collected from the directory
    heard: list[tuple[int, int]] = []
    results = SnapshotDirRunner(
        tmp_path, on_done=lambda _o, done, total: heard.append((done, total))
    ).collect(nodes)

    # Then each found node has its file's text; the missing one is a typed failure
    assert [r.text for r in results[:3]] == [by_id, by_host_name, by_meta]  # type: ignore[union-attr]
    assert results[2].source.endswith("node-c.txt")  # type: ignore[union-attr]
    assert isinstance(results[3], NodeFailure)
    assert results[3].reason == "SnapshotMissing"
    assert "i-00000000000000004.txt or hostname ip-10-0-0-4" in results[3].detail
    # and the observer heard of all four, the missing one too
    assert heard == [(1, 4), (2, 4), (3, 4), (4, 4)]


# --- SendCommand ----------------------------------------------------------------------------------


class FakeRunCommandSsm:
    """send_command / get_command_invocation as boto3 returns them (shapes from the SSM API)."""

    def __init__(self, statuses: list[str], inline_stdout: str, url: str) -> None:
        self.statuses = statuses
        self.inline_stdout = inline_stdout
        self.url = url
        self.sent: list[dict[str, Any]] = []
        self.polls = 0

    def send_command(self, **kwargs: Any) -> dict[str, Any]:
        self.sent.append(kwargs)
        return {"Command": {"CommandId": "cmd-1"}}

    def get_command_invocation(self, **kwargs: Any) -> dict[str, Any]:
        self.polls += 1
        if self.polls == 1:
            from hyperpod_perf_dev.sim.ssm import client_error

            raise client_error("InvocationDoesNotExist", operation="GetCommandInvocation")
        status = self.statuses.pop(0) if self.statuses else "Success"
        return {
            "Status": status,
            "ResponseCode": 0 if status == "Success" else -1,
            "StandardOutputContent": self.inline_stdout if status == "Success" else "",
            "StandardErrorContent": "",
            "StandardOutputUrl": self.url if status == "Success" else "",
        }


def test_send_command_runner_polls_and_reads_full_output_from_s3() -> None:
    # Given SendCommand whose inline output is cut at 24,000 chars and whose full stdout is in S3
    full = SNAPSHOT * 2000
    url = "https://s3.us-east-1.amazonaws.com/hpd-out/runs/cmd-1/i-00000000000000001/awsrunShellScript/collect/stdout"
    ssm = FakeRunCommandSsm(["Pending", "InProgress"], full[:24_000], url)
    reads: list[tuple[str, str]] = []

    def s3_reader(bucket: str, key: str) -> str:
        reads.append((bucket, key))
        return full

    client = SsmCommandClient(
        ssm, output_bucket="hpd-out", output_prefix="runs", s3_reader=s3_reader, sleep=lambda _s: None
    )
    n = node(1)

    # When the runner collects the node
    (result,) = SendCommandNodeRunner(client, document_name="HyperPodPerf-Collect-Command").collect([n])

    # Then it polled past InvocationDoesNotExist/Pending/InProgress and read the whole text from S3
    assert isinstance(result, NodeOutput)
    assert result.text == full and result.truncated is False
    assert result.source == "ssm-command:cmd-1"
    assert reads == [("hpd-out", "runs/cmd-1/i-00000000000000001/awsrunShellScript/collect/stdout")]
    assert ssm.sent == [
        {
            "InstanceIds": [n.instance_id],
            "DocumentName": "HyperPodPerf-Collect-Command",
            "OutputS3BucketName": "hpd-out",
            "OutputS3KeyPrefix": "runs",
        }
    ]
    assert ssm.polls == 4


def test_send_command_undeliverable_is_target_not_connected() -> None:
    ssm = FakeRunCommandSsm(["Undeliverable"], "", "")
    (result,) = SendCommandNodeRunner(
        SsmCommandClient(ssm, sleep=lambda _s: None), document_name="D"
    ).collect([node(1)])
    assert isinstance(result, NodeFailure) and result.reason == "TargetNotConnected"


def test_bucket_and_key_reads_both_url_styles() -> None:
    assert bucket_and_key("https://s3.eu-west-1.amazonaws.com/b/k/stdout") == ("b", "k/stdout")
    assert bucket_and_key("https://b.s3.eu-west-1.amazonaws.com/k/stdout") == ("b", "k/stdout")
    assert bucket_and_key("") is None
