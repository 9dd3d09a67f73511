"""Node runners: get every node's raw collector output, or a typed reason why not.

Why a runner abstraction: the same engine reads snapshots from three places — live SSM sessions
(the default), SendCommand on plain SSM managed instances, and a directory of saved snapshots
(``--snapshots DIR``, the demo, tests). Each returns, per node, either the raw text or a
``NodeFailure`` with a stable reason; one node's failure never aborts the others.

Why the fan-out looks like this: StartSession is rate-limited (reported ~3 TPS). A token bucket
spaces the calls, a bounded thread pool keeps the sessions in flight, and throttling/transient
errors are retried with jittered exponential backoff. Raw output goes to the ``sink`` (S3 in
Lambda, a directory in the CLI) *before* anyone parses it, so nothing collected is lost even
when a parser later fails.

No boto3 here: SSM calls live in ``hyperpod_perf.aws`` and are injected.
"""

from __future__ import annotations

import logging
import os
import random
import re
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hyperpod_perf.collect.session_document import DEFAULT_SESSION_DOCUMENT_NAME
from hyperpod_perf.collect.snapshot import SNAPSHOT_FILE_MAX_BYTES, parse_container
from hyperpod_perf.domain.bounded_read import read_prefix
from hyperpod_perf.domain.errors import AwsAdapterError, Throttled, TransientError

log = logging.getLogger(__name__)

#: (node id, raw text) -> None; called before parsing. May raise; the text is kept regardless.
Sink = Callable[[str, str], None]


# --- what a runner returns ----------------------------------------------------------------------


@dataclass(frozen=True)
class NodeTarget:
    """A node as HyperPod lists it."""

    instance_id: str
    instance_group: str = ""
    hostname: str | None = None

    def ssm_target(self, cluster_id: str) -> str:
        """The SSM target of a HyperPod node: ``sagemaker-cluster:<cluster-id>_<group>-<instance-id>``."""
        if not self.instance_group:
            raise ValueError(f"node {self.instance_id} has no instance group; HyperPod targets need one")
        return f"sagemaker-cluster:{cluster_id}_{self.instance_group}-{self.instance_id}"


@dataclass(frozen=True)
class NodeOutput:
    """The raw collector output of one node."""

    node: NodeTarget
    text: str
    source: str  # where it came from: "ssm-session:<id>", a file path, "ssm-command:<id>"
    exit_code: int | None = None
    truncated: bool = False
    stderr: str = ""
    attempts: int = 1
    sink_error: str | None = None

    ok = True


@dataclass(frozen=True)
class NodeFailure:
    """Why one node yielded nothing. ``reason`` is a stable label (an exception class name such as
    ``TargetNotConnected``, ``Throttled``, ``SessionTimeout``, or ``SnapshotMissing`` / ``EmptyOutput``)."""

    node: NodeTarget
    reason: str
    detail: str
    attempts: int = 1
    partial_text: str | None = None  # what arrived before the failure (already given to the sink)

    ok = False


NodeCollection = NodeOutput | NodeFailure

#: The reason of a node whose session was never started because the caller's deadline came first.
NOT_STARTED = "NotStarted"


class NodeRunner(Protocol):
    def collect(self, nodes: list[NodeTarget]) -> list[NodeCollection]: ...


#: (a node's outcome, nodes finished so far, nodes in this `collect` call) -> None, called as each
#: node finishes (from the runner's threads): the CLI's progress line. It cannot fail a node.
Observer = Callable[[NodeCollection, int, int], None]


class _Finished:
    """Counts the nodes of one `collect` call as they finish and tells the observer."""

    def __init__(self, total: int, observer: Observer | None) -> None:
        self.total, self.observer = total, observer
        self.done = 0
        self._lock = threading.Lock()

    def __call__(self, outcome: NodeCollection) -> NodeCollection:
        if self.observer is None:
            return outcome
        with self._lock:
            self.done += 1
            done = self.done
        try:
            self.observer(outcome, done, self.total)
        except Exception as exc:  # progress is never worth a node
            log.warning("%s: progress observer failed: %s", outcome.node.instance_id, exc)
        return outcome


# --- sinks --------------------------------------------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


class DirectorySink:
    """Writes ``<dir>/<node id>.txt`` atomically (temp file + rename), for the CLI."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    def path_for(self, node_id: str) -> Path:
        return self.directory / f"{_UNSAFE.sub('_', node_id) or 'node'}.txt"

    def __call__(self, node_id: str, raw_text: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.path_for(node_id)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(raw_text)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


# --- rate limiting ------------------------------------------------------------------------------


class TokenBucket:
    """Thread-safe token bucket: ``acquire`` blocks until a call may go out.

    Each caller reserves its slot under the lock and sleeps outside it, so callers are served in
    arrival order and the long-run rate is exactly ``rate_per_s``; ``burst`` calls may go at once.
    ``initial_delay_s`` holds the first call back that long (buckets sharing one service-side
    rate start out of phase instead of all firing at once).
    """

    def __init__(
        self,
        rate_per_s: float,
        burst: float = 1.0,
        *,
        initial_delay_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate_per_s <= 0:
            raise ValueError("rate_per_s must be positive")
        if initial_delay_s < 0:
            raise ValueError("initial_delay_s must not be negative")
        self.rate = rate_per_s
        self.burst = max(burst, 1.0)
        self._clock = clock
        self._sleep = sleep
        self._tokens = self.burst - initial_delay_s * rate_per_s
        self._last = clock()
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Take one token; returns the seconds waited."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
            self._last = now
            self._tokens -= 1.0
            wait = 0.0 if self._tokens >= 0 else -self._tokens / self.rate
        if wait > 0:
            self._sleep(wait)
        return wait


# --- fan-out ------------------------------------------------------------------------------------


class _Result(Protocol):
    """What a session or command client returns (SessionResult, CommandResult)."""

    stdout: str
    stderr: str
    exit_code: int | None
    truncated: bool


class _FanOutRunner:
    """Bounded, rate-limited, retrying fan-out; subclasses say how to run one node once."""

    def __init__(
        self,
        *,
        concurrency: int = 8,
        rate_per_s: float = 3.0,
        burst: float = 1.0,
        max_retries: int = 4,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 10.0,
        retry_on: tuple[type[BaseException], ...] = (Throttled, TransientError),
        sink: Sink | None = None,
        rng: random.Random | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        start_after_s: float = 0.0,
        stop_starting_at: float | None = None,
        on_done: Observer | None = None,
    ) -> None:
        """``start_after_s`` delays the first call (see TokenBucket); past ``stop_starting_at``
        (a ``clock`` reading) no further session starts: those nodes come back as ``NotStarted``,
        so a caller with a deadline (a Lambda's timeout) can hand them on instead of dying.
        ``on_done`` hears of each node as it finishes (see Observer)."""
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self._clock = clock
        self.stop_starting_at = stop_starting_at
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_on = retry_on
        self.sink = sink
        self.on_done = on_done
        # bandit B311: backoff jitter, not a secret
        self._rng = rng or random.Random()  # nosec B311
        self._rng_lock = threading.Lock()
        self._sleep = sleep
        self.bucket = TokenBucket(rate_per_s, burst, initial_delay_s=start_after_s, clock=clock, sleep=sleep)

    def collect(self, nodes: list[NodeTarget]) -> list[NodeCollection]:
        """One entry per node, in the order given; never raises for a node's failure."""
        if not nodes:
            return []
        finished = _Finished(len(nodes), self.on_done)
        with ThreadPoolExecutor(
            max_workers=min(self.concurrency, len(nodes)), thread_name_prefix="hpd-node"
        ) as pool:
            return list(pool.map(lambda node: finished(self._collect_one(node)), nodes))

    def _invoke(self, node: NodeTarget) -> tuple[_Result, str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def backoff(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(max, base * 2^(attempt-1))]."""
        ceiling = min(self.backoff_max_s, self.backoff_base_s * (2 ** (attempt - 1)))
        with self._rng_lock:
            return self._rng.uniform(0, ceiling)

    def _collect_one(self, node: NodeTarget) -> NodeCollection:
        attempt = 0
        while True:
            attempt += 1
            self.bucket.acquire()
            if self.stop_starting_at is not None and self._clock() >= self.stop_starting_at:
                detail = "no time left in this invocation to start its session"
                return NodeFailure(node, NOT_STARTED, detail, attempt - 1)
            try:
                result, source = self._invoke(node)
            except self.retry_on as exc:
                if attempt > self.max_retries:
                    return self._failure(node, exc, attempt, suffix=f" (gave up after {attempt} attempts)")
                delay = self.backoff(attempt)
                log.info("%s: %s; retry %d in %.2fs", node.instance_id, type(exc).__name__, attempt, delay)
                self._sleep(delay)
                continue
            except Exception as exc:  # one node's failure must not abort the fleet
                return self._failure(node, exc, attempt)
            return self._output(node, result, source, attempt)

    def _failure(self, node: NodeTarget, exc: BaseException, attempt: int, suffix: str = "") -> NodeFailure:
        """A typed failure; whatever the node printed before it failed goes to the sink all the same."""
        failure = _failure(node, exc, attempt, suffix)
        if failure.partial_text and self.sink is not None:
            try:
                self.sink(node.instance_id, failure.partial_text)
            except Exception as sink_exc:  # the text stays on the failure
                log.warning("%s: sink failed for partial output: %s", node.instance_id, sink_exc)
        return failure

    def _output(self, node: NodeTarget, result: _Result, source: str, attempt: int) -> NodeCollection:
        if not result.stdout.strip():
            detail = f"the collector printed nothing (exit code {result.exit_code})"
            if result.stderr.strip():
                detail += f"; stderr: {result.stderr.strip()[:500]}"
            return NodeFailure(node, "EmptyOutput", detail, attempt)
        sink_error = None
        if self.sink is not None:
            try:
                self.sink(node.instance_id, result.stdout)
            except Exception as exc:  # keep the text in memory; report the sink problem
                sink_error = f"{type(exc).__name__}: {exc}"
                log.warning("%s: sink failed: %s", node.instance_id, sink_error)
        return NodeOutput(
            node=node,
            text=result.stdout,
            source=source,
            exit_code=result.exit_code,
            truncated=result.truncated,
            stderr=result.stderr,
            attempts=attempt,
            sink_error=sink_error,
        )


def _failure(node: NodeTarget, exc: BaseException, attempts: int, suffix: str = "") -> NodeFailure:
    reason = exc.reason if isinstance(exc, AwsAdapterError) else type(exc).__name__
    partial = exc.partial_output if isinstance(exc, AwsAdapterError) else None
    return NodeFailure(node, reason, f"{exc}{suffix}", attempts, partial_text=partial or None)


class SessionRunner(Protocol):
    """``aws.session.SessionClient``'s interface."""

    def run(
        self, target: str, document_name: str, parameters: Mapping[str, list[str]] | None = None
    ) -> Any: ...


class SessionNodeRunner(_FanOutRunner):
    """Collect over SSM Session Manager (the HyperPod path).

    ``session_client_factory`` is called for every session attempt and may return one shared
    ``SessionClient`` (it is thread-safe); a factory lets callers give each call fresh settings.
    """

    def __init__(
        self,
        cluster_id: str,
        session_client_factory: Callable[[], SessionRunner],
        *,
        document_name: str = DEFAULT_SESSION_DOCUMENT_NAME,
        parameters: Mapping[str, list[str]] | None = None,
        **fan_out: Any,
    ) -> None:
        super().__init__(**fan_out)
        self.cluster_id = cluster_id
        self.session_client_factory = session_client_factory
        self.document_name = document_name
        self.parameters = dict(parameters or {})

    def _invoke(self, node: NodeTarget) -> tuple[_Result, str]:
        client = self.session_client_factory()
        result = client.run(node.ssm_target(self.cluster_id), self.document_name, self.parameters or None)
        return result, f"ssm-session:{getattr(result, 'session_id', '')}"


class CommandRunner(Protocol):
    """``aws.ssm_commands.SsmCommandClient``'s interface."""

    def run(
        self, instance_id: str, document_name: str, parameters: Mapping[str, list[str]] | None = None
    ) -> Any: ...


class SendCommandNodeRunner(_FanOutRunner):
    """Collect with SendCommand + GetCommandInvocation, for SSM managed instances where Run Command
    works (HyperPod nodes are reported to refuse it). ``target_for`` maps a node to the SSM
    instance id (default: its EC2 instance id)."""

    def __init__(
        self,
        command_client: CommandRunner,
        *,
        document_name: str,
        parameters: Mapping[str, list[str]] | None = None,
        target_for: Callable[[NodeTarget], str] = lambda node: node.instance_id,
        **fan_out: Any,
    ) -> None:
        super().__init__(**fan_out)
        self.command_client = command_client
        self.document_name = document_name
        self.parameters = dict(parameters or {})
        self.target_for = target_for

    def _invoke(self, node: NodeTarget) -> tuple[_Result, str]:
        result = self.command_client.run(self.target_for(node), self.document_name, self.parameters or None)
        return result, f"ssm-command:{getattr(result, 'command_id', '')}"


# --- offline ------------------------------------------------------------------------------------


class SnapshotDirRunner:
    """Reads saved snapshots (``--snapshots DIR``): ``<instance-id>.txt``, else a file whose stem or
    ``meta`` hostname equals the node's hostname."""

    def __init__(self, directory: Path | str, on_done: Observer | None = None) -> None:
        self.directory = Path(directory)
        self.on_done = on_done

    def _files(self) -> list[Path]:
        return sorted(p for p in self.directory.glob("*.txt") if p.is_file())

    def collect(self, nodes: list[NodeTarget]) -> list[NodeCollection]:
        files = self._files()
        by_stem = {p.stem: p for p in files}
        by_host: dict[str, Path] | None = None
        results: list[NodeCollection] = []
        finished = _Finished(len(nodes), self.on_done)
        for node in nodes:
            path = by_stem.get(node.instance_id)
            if path is None and node.hostname:
                path = by_stem.get(node.hostname)
                if path is None:
                    if by_host is None:
                        by_host = self._hostname_index(files)
                    path = by_host.get(node.hostname)
            if path is None:
                wanted = f"{node.instance_id}.txt" + (
                    f" or hostname {node.hostname}" if node.hostname else ""
                )
                results.append(
                    finished(
                        NodeFailure(node, "SnapshotMissing", f"no snapshot for {wanted} in {self.directory}")
                    )
                )
                continue
            results.append(finished(self._read(node, path)))
        return results

    @staticmethod
    def _hostname_index(files: Sequence[Path]) -> dict[str, Path]:
        index: dict[str, Path] = {}
        for path in files:
            head = read_prefix(path, SNAPSHOT_FILE_MAX_BYTES).data.decode("utf-8", errors="replace")
            hostname = parse_container(head, str(path)).meta.get("hostname")
            if hostname:
                index.setdefault(hostname, path)
        return index

    @staticmethod
    def _read(node: NodeTarget, path: Path) -> NodeCollection:
        try:  # bounded: a 300 MB file or a FIFO in the directory keeps memory flat
            prefix = read_prefix(path, SNAPSHOT_FILE_MAX_BYTES)
        except OSError as exc:
            return NodeFailure(node, "SnapshotUnreadable", f"{path}: {exc}")
        text = prefix.data.decode("utf-8", errors="replace")
        return NodeOutput(node=node, text=text, source=str(path), truncated=prefix.truncated)
