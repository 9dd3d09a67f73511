"""A loopback stand-in for the SSM agent's side of a Session Manager data channel (tests, demo).

Why: the data-channel client must be proven over a real socket, byte for byte, including the
ways a real channel misbehaves — and no AWS account or agent is available to tests. This server
plays what the reference session-manager-plugin expects from the other end:

1. the first frame is the text open-data-channel JSON carrying the StartSession token;
2. the agent sends HandshakeRequest (output_stream_data, payload type 5, sequence 0) and waits for
   the client's HandshakeResponse (input_stream_data, payload type 6), which it acknowledges;
3. HandshakeComplete (type 7, sequence 1);
4. stdout in <= 1024-byte chunks (type 1), stderr (type 11), then ``EXIT_CODE: <n>`` (type 12);
   every message must be acknowledged, unacknowledged ones are resent (as the agent does);
5. channel_closed, then the socket closes.

``Scenario`` switches on the misbehaviours: out-of-order, duplicated, bad digest (once or always),
a stalled stream, an abrupt close, a KMS encryption request, a start delay. ``FakeSsm`` is the
matching ``ssm`` client: ``start_session`` registers a session with the agent and returns its
ws:// StreamUrl; ``terminate_session`` calls are recorded.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import ServerConnection, serve

from hyperpod_perf.aws import session_protocol as sp

AGENT_VERSION = "3.3.1142.0"


@dataclass
class Scenario:
    stdout: bytes = b""
    stderr: bytes = b""
    exit_code: int | None = 0
    chunk_size: int = sp.STREAM_CHUNK_SIZE
    out_of_order: bool = False
    duplicate: bool = False
    bad_digest_once: bool = False  # the first output chunk goes out once with a corrupt digest
    bad_digest_always: bool = False  # ...and every resend of it too
    stall_after_chunks: int | None = None
    abrupt_close_after_chunks: int | None = None
    request_kms: bool = False
    start_delay: float = 0.0
    send_channel_closed: bool = True
    resend_after: float = 0.2
    ack_deadline: float = 10.0
    session_type: str = "NonInteractiveCommands"


@dataclass
class SessionRecord:
    """What the agent saw; tests assert on it."""

    session_id: str
    token: str
    scenario: Scenario
    request_path: str = ""
    request_headers: dict[str, str] = field(default_factory=dict)
    open_frame: dict[str, Any] | None = None
    handshake_response: dict[str, Any] | None = None
    handshake_response_header: bytes = b""
    acked: list[int] = field(default_factory=list)
    ack_message_ids: dict[int, str] = field(default_factory=dict)
    sent_ids: dict[int, str] = field(default_factory=dict)
    resent: list[int] = field(default_factory=list)
    ack_flags: set[int] = field(default_factory=set)
    ended: str = ""
    error: str = ""


class FakeAgent:
    """A websockets sync server on 127.0.0.1, random port, one thread per connection."""

    def __init__(self) -> None:
        self._sessions: dict[str, SessionRecord] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server = serve(self._handle, "127.0.0.1", 0, compression=None, ping_interval=None)
        self.port: int = self._server.socket.getsockname()[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeAgent:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._thread.join(timeout=5)

    def register(self, scenario: Scenario) -> tuple[str, str, str]:
        """A new session: returns (session_id, token, stream_url)."""
        session_id = f"hpd-test-{uuid.uuid4().hex[:17]}"
        token = uuid.uuid4().hex
        with self._lock:
            self._sessions[session_id] = SessionRecord(session_id, token, scenario)
        url = f"ws://127.0.0.1:{self.port}/v1/data-channel/{session_id}?role=publish_subscribe&cell-number=1"
        return session_id, token, url

    def record(self, session_id: str) -> SessionRecord:
        with self._lock:
            return self._sessions[session_id]

    @property
    def records(self) -> list[SessionRecord]:
        with self._lock:
            return list(self._sessions.values())

    # --- the agent's side -----------------------------------------------------------------------

    def _handle(self, conn: ServerConnection) -> None:
        path = conn.request.path if conn.request is not None else ""
        session_id = path.split("?")[0].rsplit("/", 1)[-1]
        with self._lock:
            record = self._sessions.get(session_id)
        if record is None:
            conn.close(code=4004, reason="unknown session")
            return
        record.request_path = path
        record.request_headers = {k: v for k, v in conn.request.headers.raw_items()} if conn.request else {}
        try:
            _AgentRun(conn, record, self._stop).run()
        except ConnectionClosed as exc:
            record.ended = record.ended or f"client closed: {exc}"
        except Exception as exc:
            record.error = f"{type(exc).__name__}: {exc}"
            raise


class _AgentRun:
    def __init__(self, conn: ServerConnection, record: SessionRecord, stop: threading.Event) -> None:
        self.conn = conn
        self.record = record
        self.scenario = record.scenario
        self.stop = stop
        self.outbox: dict[int, tuple[bytes, float]] = {}
        self.always_corrupt: set[int] = set()

    def run(self) -> None:
        first = self.conn.recv(timeout=5)
        if not isinstance(first, str):
            self.record.ended = "first frame was not text"
            self.conn.close(code=1002)
            return
        self.record.open_frame = json.loads(first)
        if self.record.open_frame.get("TokenValue") != self.record.token:
            self.record.ended = "bad token"
            self.conn.close(code=4001, reason="bad token")
            return

        actions: list[tuple[str, Any]] = [
            ("SessionType", {"SessionType": self.scenario.session_type, "Properties": None})
        ]
        if self.scenario.request_kms:
            actions.append(("KMSEncryption", {"KMSKeyId": "arn:aws:kms:us-east-1:111122223333:key/test"}))
        self.send(
            sp.ClientMessage(
                sp.MessageType.OUTPUT_STREAM_DATA,
                0,
                sp.PayloadType.HANDSHAKE_REQUEST,
                sp.handshake_request_payload(AGENT_VERSION, actions),
            )
        )
        if not self.wait_for(lambda: self.record.handshake_response is not None, 5.0):
            self.record.ended = "no handshake response"
            return
        if self.scenario.start_delay:
            self.stop.wait(self.scenario.start_delay)
        self.send(
            sp.ClientMessage(
                sp.MessageType.OUTPUT_STREAM_DATA,
                1,
                sp.PayloadType.HANDSHAKE_COMPLETE,
                sp.handshake_complete_payload(1_000_000),
            )
        )

        messages = self.stream_messages(first_sequence=2)
        order = list(range(len(messages)))
        if self.scenario.out_of_order:
            # swap neighbours and hold the first chunk back to the very end
            for i in range(1, len(order) - 1, 2):
                order[i], order[i + 1] = order[i + 1], order[i]
            order = order[1:] + order[:1]
        for count, index in enumerate(order):
            if count == self.scenario.abrupt_close_after_chunks:
                self.record.ended = "abrupt close"
                with contextlib.suppress(OSError):
                    self.conn.socket.shutdown(socket.SHUT_RDWR)
                self.conn.socket.close()
                return
            if count == self.scenario.stall_after_chunks:
                self.record.ended = "stalled"
                self.stop.wait(30)
                return
            message = messages[index]
            corrupt = (self.scenario.bad_digest_once or self.scenario.bad_digest_always) and index == 0
            if corrupt and self.scenario.bad_digest_always:
                self.always_corrupt.add(message.sequence_number)
            self.send(message, corrupt=corrupt)
            if self.scenario.duplicate:
                self.conn.send(sp.encode(message))
            self.drain(0)

        # with duplicates, also wait for the re-acknowledgements before closing
        expected_acks = 2 + len(messages) * (2 if self.scenario.duplicate else 1)
        if not self.wait_for(
            lambda: not self.outbox and len(self.record.acked) >= expected_acks, self.scenario.ack_deadline
        ):
            self.record.ended = "unacknowledged messages at deadline"
            return
        if self.scenario.send_channel_closed:
            closed = sp.ClientMessage(
                sp.MessageType.CHANNEL_CLOSED,
                0,
                0,
                sp.channel_closed_payload(self.record.session_id),
            )
            self.conn.send(sp.encode(closed))
        self.record.ended = "completed"
        self.conn.close()

    def stream_messages(self, first_sequence: int) -> list[sp.ClientMessage]:
        size = self.scenario.chunk_size
        payloads: list[tuple[int, bytes]] = []
        for payload_type, data in (
            (sp.PayloadType.OUTPUT, self.scenario.stdout),
            (sp.PayloadType.STDERR, self.scenario.stderr),
        ):
            payloads.extend((payload_type, data[i : i + size]) for i in range(0, len(data), size))
        if self.scenario.exit_code is not None:
            payloads.append((sp.PayloadType.EXIT_CODE, sp.exit_code_payload(self.scenario.exit_code)))
        return [
            sp.ClientMessage(sp.MessageType.OUTPUT_STREAM_DATA, first_sequence + i, payload_type, payload)
            for i, (payload_type, payload) in enumerate(payloads)
        ]

    def send(self, message: sp.ClientMessage, *, corrupt: bool = False) -> None:
        good = sp.encode(message)
        frame = sp.encode(message, digest_override=b"\x00" * 32) if corrupt else good
        self.conn.send(frame)
        self.outbox[message.sequence_number] = (good, time.monotonic())
        self.record.sent_ids[message.sequence_number] = str(message.message_id)

    def wait_for(self, condition: Callable[[], bool], deadline_s: float) -> bool:
        deadline = time.monotonic() + deadline_s
        while not condition():
            if time.monotonic() >= deadline or self.stop.is_set():
                return False
            self.drain(self.scenario.resend_after)
            self.resend()
        return True

    def resend(self) -> None:
        now = time.monotonic()
        for sequence, (frame, sent_at) in list(self.outbox.items()):
            if now - sent_at >= self.scenario.resend_after:
                if sequence in self.always_corrupt:
                    frame = frame[: sp.PAYLOAD_DIGEST_OFFSET] + b"\x00" * 32 + frame[sp.PAYLOAD_TYPE_OFFSET :]
                self.conn.send(frame)
                self.outbox[sequence] = (self.outbox[sequence][0], now)
                self.record.resent.append(sequence)

    def drain(self, timeout: float) -> None:
        """Read what the client sent: acknowledgements and its HandshakeResponse."""
        while True:
            try:
                frame = self.conn.recv(timeout=timeout)
            except TimeoutError:
                return
            timeout = 0
            if isinstance(frame, str):
                continue
            message = sp.decode(frame)
            sp.validate(message)
            if message.message_type == sp.MessageType.ACKNOWLEDGE:
                ack = sp.parse_acknowledgement(message.payload)
                self.record.acked.append(ack.sequence_number)
                self.record.ack_message_ids[ack.sequence_number] = ack.message_id
                self.record.ack_flags.add(message.flags)
                self.outbox.pop(ack.sequence_number, None)
            elif message.message_type == sp.MessageType.INPUT_STREAM_DATA:
                self.conn.send(sp.encode(sp.acknowledgement_for(message)))
                if message.payload_type == sp.PayloadType.HANDSHAKE_RESPONSE:
                    self.record.handshake_response = sp.parse_handshake_response(message.payload)
                    self.record.handshake_response_header = frame[: sp.PAYLOAD_OFFSET]


class FakeSsm:
    """The ``ssm`` client methods SessionClient calls, backed by a FakeAgent.

    ``scenario_for(target)`` picks what each node prints; ``start_error(target)`` may return an
    exception to raise instead (a botocore ClientError, say), to play throttling or an offline node.
    """

    def __init__(
        self,
        agent: FakeAgent,
        scenario_for: Callable[[str], Scenario],
        start_error: Callable[[str], BaseException | None] | None = None,
        start_latency: float = 0.0,
    ) -> None:
        self.agent = agent
        self.scenario_for = scenario_for
        self.start_error = start_error
        self.start_latency = start_latency
        self.started: list[dict[str, Any]] = []
        self.terminated: list[str] = []
        self.session_targets: dict[str, str] = {}
        self._lock = threading.Lock()

    def start_session(self, **kwargs: Any) -> dict[str, Any]:
        target = kwargs["Target"]
        with self._lock:
            self.started.append(kwargs)
        if self.start_error is not None:
            error = self.start_error(target)
            if error is not None:
                raise error
        if self.start_latency:
            time.sleep(self.start_latency)
        session_id, token, url = self.agent.register(self.scenario_for(target))
        with self._lock:
            self.session_targets[session_id] = target
        return {"SessionId": session_id, "TokenValue": token, "StreamUrl": url}

    def terminate_session(self, **kwargs: Any) -> dict[str, Any]:
        with self._lock:
            self.terminated.append(kwargs["SessionId"])
        return {"SessionId": kwargs["SessionId"]}


def client_error(
    code: str, message: str = "", operation: str = "StartSession", status: int = 400
) -> Exception:
    """A botocore ClientError as boto3 raises it."""
    from botocore.exceptions import ClientError

    return ClientError(
        {"Error": {"Code": code, "Message": message or code}, "ResponseMetadata": {"HTTPStatusCode": status}},
        operation,
    )
