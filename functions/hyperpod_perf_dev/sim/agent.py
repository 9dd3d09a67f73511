"""A loopback stand-in for the SSM agent's side of a Session Manager data channel (tests, demo).

Why: the data-channel client must be proven over a real socket, byte for byte, including the
ways a real channel misbehaves — and no AWS account or agent is available to tests. This server
plays amazon-ssm-agent (and the service in front of it) as its public source behaves for a
NonInteractiveCommands session; each rule below names the agent file and function it follows:

1. the first frame is the text open-data-channel JSON carrying the StartSession token;
2. HandshakeRequest (payload type 5) on sequence 0 with the SYN flag, asking for the session type;
   the client's HandshakeResponse (input_stream_data, type 6) is acknowledged after it is read,
   and a duplicate of it is acknowledged again;
3. HandshakeComplete (type 7) — with the upgrade notice for an old client;
4. the process's output as it writes it, stdout (type 1) and stderr (type 11) interleaved, in
   pipe reads of at most 1024 bytes that never end inside a UTF-8 character, then
   ``EXIT_CODE: <n>`` (type 12);
5. every message kept until acknowledged; the oldest unacknowledged one resent on a timer; the
   end waits (bounded) for the acknowledgements, never for re-acknowledgements of duplicates;
6. channel_closed, then the socket closes.

``Scenario`` switches on what a real channel may also do — out-of-order delivery, duplicates, a
corrupt digest (once or always), a stalled stream, an abrupt close, a KMS encryption request, a
start delay, a publication pause. ``sim.ssm.FakeSsm`` is the matching ``ssm`` client:
``start_session`` registers a session with the agent and returns its ws:// StreamUrl.

What the sim does not model: the agent's adaptive retransmission timeout (a fixed
``resend_after`` here), KMS encryption, stdout/stderr separator prefixes, Port sessions.
"""

from __future__ import annotations

import contextlib
import json
import logging
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
from hyperpod_perf.domain.errors import SessionProtocolError

log = logging.getLogger(__name__)

AGENT_VERSION = "3.3.1142.0"

#: session/datachannel/datachannel.go, ``handshakeTimeout``: how long the agent waits for the
#: HandshakeResponse before it fails the session.
HANDSHAKE_TIMEOUT_S = 15.0
#: session/datachannel/datachannel.go, ``PrepareToCloseChannel``: how long the agent waits for its
#: outgoing buffer to empty (every message acknowledged) before it closes the channel anyway.
CLOSE_WAIT_S = 2.0

#: A process write: which stream it went to (PayloadType.OUTPUT or PayloadType.STDERR) and what.
Write = tuple[int, bytes]


@dataclass
class Scenario:
    """What one session's process prints, and how the channel behaves.

    ``writes`` is the process's writes in the order it made them; when empty, the process wrote
    ``stdout`` and then ``stderr``. ``chunk_size`` is the agent's pipe-read buffer."""

    stdout: bytes = b""
    stderr: bytes = b""
    exit_code: int | None = 0  # None: no ExitCode message at all
    writes: tuple[Write, ...] = ()
    separate_output_stream: bool = True
    chunk_size: int = sp.STREAM_CHUNK_SIZE
    out_of_order: bool = False
    duplicate: bool = False
    bad_digest_once: bool = False  # the first output message goes out once with a corrupt digest
    bad_digest_always: bool = False  # ...and every resend of it too
    stall_after_chunks: int | None = None
    abrupt_close_after_chunks: int | None = None
    request_kms: bool = False
    start_delay: float = 0.0
    publication_pause: float | None = None
    undecodable_frames: tuple[bytes | str, ...] = ()  # sent after HandshakeComplete, as they are
    send_channel_closed: bool = True
    resend_after: float = 0.2
    close_wait: float = CLOSE_WAIT_S
    handshake_timeout: float = HANDSHAKE_TIMEOUT_S
    session_type: str = "NonInteractiveCommands"
    document_properties: dict[str, Any] | None = None

    def process_writes(self) -> tuple[Write, ...]:
        if self.writes:
            return self.writes
        return tuple(
            (payload_type, data)
            for payload_type, data in (
                (sp.PayloadType.OUTPUT, self.stdout),
                (sp.PayloadType.STDERR, self.stderr),
            )
            if data
        )


@dataclass
class SessionRecord:
    """What the agent saw and sent; tests assert on it."""

    session_id: str
    token: str
    scenario: Scenario
    request_path: str = ""
    request_headers: dict[str, str] = field(default_factory=dict)
    open_frame: dict[str, Any] | None = None
    handshake_request: dict[str, Any] | None = None
    handshake_response: dict[str, Any] | None = None
    handshake_response_header: bytes = b""
    handshake_complete: dict[str, Any] | None = None
    acked: list[int] = field(default_factory=list)
    ack_message_ids: dict[int, str] = field(default_factory=dict)
    sent_ids: dict[int, str] = field(default_factory=dict)
    sent_flags: dict[int, int] = field(default_factory=dict)
    sent: list[tuple[int, int, bytes]] = field(default_factory=list)  # (sequence, payload type, payload)
    resent: list[int] = field(default_factory=list)
    ack_flags: set[int] = field(default_factory=set)
    input_acks: list[int] = field(default_factory=list)  # acknowledgements the agent sent the client
    publication: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    ended: str = ""
    error: str = ""


# --- the agent's output path, as pure functions ---------------------------------------------------


def _rune_at(data: bytes, index: int) -> tuple[bool, int]:
    """(is RuneError, size) of the character at ``index``, as Go's ``bufio.Reader.ReadRune`` sees
    it: an invalid or incomplete sequence is RuneError of size 1; a literal U+FFFD is RuneError
    too, of size 3. Python's strict UTF-8 decoder rejects what Go rejects (overlong forms,
    surrogates, > U+10FFFF)."""
    lead = data[index]
    if lead < 0x80:
        return False, 1
    size = 2 if 0xC2 <= lead <= 0xDF else 3 if 0xE0 <= lead <= 0xEF else 4 if 0xF0 <= lead <= 0xF4 else 0
    if size == 0 or index + size > len(data):
        return True, 1
    try:
        character = data[index : index + size].decode("utf-8")
    except UnicodeDecodeError:
        return True, 1
    return character == "\ufffd", size


def _clean_run_end(data: bytes, index: int) -> int:
    """Where the run of valid characters other than U+FFFD starting at ``index`` ends (the
    character-by-character rules are only needed from there; this keeps megabytes fast)."""
    try:
        data[index:].decode("utf-8")
        end = len(data)
    except UnicodeDecodeError as exc:
        end = index + exc.start
    replacement = data.find("\ufffd".encode(), index, end)
    return end if replacement < 0 else replacement


def agent_payload(held: bytes, read: bytes) -> tuple[bytes, bytes]:
    """One pipe read turned into a message payload, as the agent's ``processStdoutData``
    (session/shell/shell.go) does it: what was held back from the previous read comes first;
    characters are copied whole; a RuneError within the last three bytes — an incomplete
    character, most likely — is held back with everything after it for the next read; a RuneError
    further in is copied as its first byte only (the agent's own quirk: a literal U+FFFD there
    becomes the lone byte 0xEF). Returns (payload, held back). Payloads can so reach
    1024 + 3 bytes; an empty one is never sent (``SendStreamDataMessage``)."""
    data = held + read
    payload = bytearray()
    index = 0
    while index < len(data):
        clean_end = _clean_run_end(data, index)  # a run of whole characters, copied at once
        payload += data[index:clean_end]
        index = clean_end
        if index >= len(data):
            break
        is_error, size = _rune_at(data, index)
        if is_error:
            if len(data) - index < 4:  # utf8.UTFMax
                break
            payload += data[index : index + 1]
        else:
            payload += data[index : index + size]
        index += size
    return bytes(payload), data[index:]


def agent_output_messages(scenario: Scenario) -> list[tuple[int, bytes]]:
    """(payload type, payload) of every output message, in the order the agent sends them.

    With ``separateOutputStream`` the agent reads stdout and stderr in two goroutines
    (``setupRoutineToWriteCmdPipelineOutput``), each pipe read of at most ``chunk_size`` bytes
    becoming one message as soon as it is read, so the two streams interleave as the process
    wrote them; each stream keeps its own held-back bytes, and what is still held at end of file
    is lost (the loop ends on io.EOF). Then ``sendExitCode`` sends ``EXIT_CODE: <n>``
    (``processCommandsWithOutputStreamSeparate``). Without it, the process writes into one
    output file that ``writePump`` sends as Output after the command ended, with no exit code
    (``processCommandsWithExec``)."""
    size = scenario.chunk_size
    held: dict[int, bytes] = {}
    messages: list[tuple[int, bytes]] = []
    for stream, data in scenario.process_writes():
        payload_type = stream if scenario.separate_output_stream else sp.PayloadType.OUTPUT
        for offset in range(0, len(data), size):
            payload, held[payload_type] = agent_payload(
                held.get(payload_type, b""), data[offset : offset + size]
            )
            if payload:
                messages.append((payload_type, payload))
    if scenario.separate_output_stream and scenario.exit_code is not None:
        messages.append((sp.PayloadType.EXIT_CODE, sp.exit_code_payload(scenario.exit_code)))
    return messages


def session_type_properties(scenario: Scenario) -> Any:
    """The ``Properties`` of the SessionType handshake action: ``GetPluginParameters`` of the
    session plugin (session/plugins/sessionplugin/sessionplugin.go ``Execute``). For
    NonInteractiveCommands, InteractiveCommands and Standard_Stream it returns nil (plugins/
    singlecommand/singlecommand.go, plugins/standardstream/standardstream.go), so the agent sends
    ``null``; only Port returns the document's properties (plugins/port/port.go)."""
    return scenario.document_properties if scenario.session_type == "Port" else None


def handshake_complete_message(scenario: Scenario, client_version: str) -> str:
    """HandshakeComplete's CustomerMessage (datachannel.go ``buildHandshakeCompletePayload``): the
    upgrade notice when the document separates the output streams and the client compares
    <= 1.2.295; the KMS line is not modelled (no encryption here)."""
    return sp.output_separation_notice(client_version) if scenario.separate_output_stream else ""


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
    """One session, agent side. Single-threaded: between sends it reads what the client sent
    (``tick``), which is what the agent's receive goroutine and resend scheduler do in parallel."""

    def __init__(self, conn: ServerConnection, record: SessionRecord, stop: threading.Event) -> None:
        self.conn = conn
        self.record = record
        self.scenario = record.scenario
        self.stop = stop
        self.next_sequence = 0
        self.outbox: dict[int, tuple[bytes, float]] = {}
        self.always_corrupt: set[int] = set()
        self.expected_input = 0
        self.early_input: dict[int, sp.ClientMessage] = {}
        self.handshake_error = ""

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

        started = time.monotonic_ns()
        actions: list[tuple[str, Any]] = [
            (
                "SessionType",
                {
                    "SessionType": self.scenario.session_type,
                    "Properties": session_type_properties(self.scenario),
                },
            )
        ]
        if self.scenario.request_kms:
            actions.append(("KMSEncryption", {"KMSKeyId": "arn:aws:kms:us-east-1:111122223333:key/test"}))
        request = sp.handshake_request_payload(AGENT_VERSION, actions)
        self.record.handshake_request = json.loads(request)
        self.send_next(sp.PayloadType.HANDSHAKE_REQUEST, request)
        if not self.wait_for(
            lambda: self.record.handshake_response is not None, self.scenario.handshake_timeout
        ):
            self.record.ended = "no handshake response"
            return
        if self.handshake_error:
            self.record.ended = f"handshake failed: {self.handshake_error}"
            self.close_channel(self.handshake_error)
            return
        if self.scenario.start_delay:
            self.stop.wait(self.scenario.start_delay)
        client_version = str((self.record.handshake_response or {}).get("ClientVersion", ""))
        complete = sp.handshake_complete_payload(
            time.monotonic_ns() - started, handshake_complete_message(self.scenario, client_version)
        )
        self.record.handshake_complete = json.loads(complete)
        self.send_next(sp.PayloadType.HANDSHAKE_COMPLETE, complete)

        for junk in self.scenario.undecodable_frames:
            self.conn.send(junk)
        if self.scenario.publication_pause is not None:
            self.publication(sp.MessageType.PAUSE_PUBLICATION)
            self.stop.wait(self.scenario.publication_pause)
            self.publication(sp.MessageType.START_PUBLICATION)

        messages = [
            self.message(payload_type, payload)
            for payload_type, payload in agent_output_messages(self.scenario)
        ]
        order = list(range(len(messages)))
        if self.scenario.out_of_order:  # the network's doing, not the agent's
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
            self.tick(0)

        # PrepareToCloseChannel: wait, bounded, until every message is acknowledged — once each;
        # the agent never waits for the client to acknowledge a duplicate again.
        all_acked = self.wait_for(lambda: not self.outbox, self.scenario.close_wait)
        self.record.ended = "completed" if all_acked else f"closed with {len(self.outbox)} unacknowledged"
        self.close_channel("")

    # --- sending ----------------------------------------------------------------------------------

    def message(self, payload_type: int, payload: bytes) -> sp.ClientMessage:
        """The next output_stream_data message, as ``DataChannel.SendStreamDataMessage``
        (session/datachannel/datachannel.go) numbers and flags it: one sequence for everything the
        agent streams, and Flags SYN (1) on sequence 0 only."""
        sequence = self.next_sequence
        self.next_sequence += 1
        flags = sp.FLAG_SYN if sequence == 0 else 0
        return sp.ClientMessage(
            sp.MessageType.OUTPUT_STREAM_DATA, sequence, payload_type, payload, flags=flags
        )

    def send_next(self, payload_type: int, payload: bytes) -> None:
        self.send(self.message(payload_type, payload))

    def send(self, message: sp.ClientMessage, *, corrupt: bool = False) -> None:
        good = sp.encode(message)
        frame = sp.encode(message, digest_override=b"\x00" * 32) if corrupt else good
        self.conn.send(frame)
        self.outbox[message.sequence_number] = (good, time.monotonic())
        self.record.sent_ids[message.sequence_number] = str(message.message_id)
        self.record.sent_flags[message.sequence_number] = message.flags
        self.record.sent.append((message.sequence_number, message.payload_type, message.payload))

    def publication(self, kind: sp.MessageType) -> None:
        """pause_publication / start_publication come from the service, not the agent (the agent
        receives them too: ``handlePausePublicationMessage``), when the other side goes away and
        comes back. Their encoding is not public; the plugin's ``Validate`` exempts them from
        every check, so they are sent here with no creation date, which only that exemption lets
        through."""
        self.conn.send(sp.encode(sp.ClientMessage(kind, 0, 0, b"", created_date_ms=0)))
        self.record.publication.append(str(kind))

    def close_channel(self, output: str) -> None:
        if self.scenario.send_channel_closed:
            closed = sp.ClientMessage(
                sp.MessageType.CHANNEL_CLOSED, 0, 0, sp.channel_closed_payload(self.record.session_id, output)
            )
            self.conn.send(sp.encode(closed))
        self.conn.close()

    def wait_for(self, condition: Callable[[], bool], deadline_s: float) -> bool:
        deadline = time.monotonic() + deadline_s
        while not condition():
            if time.monotonic() >= deadline or self.stop.is_set():
                return False
            self.tick(min(self.scenario.resend_after, 0.1))
        return True

    def tick(self, timeout: float) -> None:
        self.drain(timeout)
        self.resend()

    def resend(self) -> None:
        """``ResendStreamDataMessageScheduler``: only the oldest unacknowledged message is
        resent, once its retransmission timeout has passed since it was last sent."""
        if not self.outbox:
            return
        sequence = min(self.outbox)
        frame, sent_at = self.outbox[sequence]
        now = time.monotonic()
        if now - sent_at < self.scenario.resend_after:
            return
        if sequence in self.always_corrupt:
            frame = frame[: sp.PAYLOAD_DIGEST_OFFSET] + b"\x00" * 32 + frame[sp.PAYLOAD_TYPE_OFFSET :]
        self.conn.send(frame)
        self.outbox[sequence] = (self.outbox[sequence][0], now)
        self.record.resent.append(sequence)

    # --- receiving --------------------------------------------------------------------------------

    def drain(self, timeout: float) -> None:
        """Read what the client sent, as ``dataChannelIncomingMessageHandler`` does: decode and
        ``AgentMessage.Validate`` (type and creation date; the agent does not check the digest),
        a failure logged and the frame dropped; then by message type."""
        while True:
            try:
                frame = self.conn.recv(timeout=timeout)
            except TimeoutError:
                return
            timeout = 0
            raw = frame.encode("utf-8") if isinstance(frame, str) else frame
            try:
                message = sp.decode(raw)
                if not message.message_type or message.created_date_ms == 0:
                    raise SessionProtocolError("message type or created date missing")
            except SessionProtocolError as exc:
                self.record.dropped.append(exc.message)
                log.debug("sim agent %s: dropped a frame: %s", self.record.session_id, exc)
                continue
            if message.message_type == sp.MessageType.ACKNOWLEDGE:
                self.on_acknowledge(message)
            elif message.message_type == sp.MessageType.INPUT_STREAM_DATA:
                self.on_input(message, raw)

    def on_acknowledge(self, message: sp.ClientMessage) -> None:
        """``ProcessAcknowledgedMessage``: the acknowledged message leaves the outgoing buffer; an
        acknowledgement of one already gone changes nothing."""
        try:
            ack = sp.parse_acknowledgement(message.payload)
        except SessionProtocolError as exc:
            self.record.dropped.append(exc.message)
            return
        self.record.acked.append(ack.sequence_number)
        self.record.ack_message_ids[ack.sequence_number] = ack.message_id
        self.record.ack_flags.add(message.flags)
        self.outbox.pop(ack.sequence_number, None)

    def on_input(self, message: sp.ClientMessage, raw: bytes) -> None:
        """``handleStreamDataMessage``: the expected message is processed, then acknowledged, then
        any buffered successors; a later one is acknowledged and buffered; an earlier one — a
        duplicate of what was already processed — is acknowledged again."""
        sequence = message.sequence_number
        if sequence == self.expected_input:
            self.process_input(message, raw)
            self.acknowledge(message)
            self.expected_input += 1
            while self.expected_input in self.early_input:
                buffered = self.early_input.pop(self.expected_input)
                self.process_input(buffered, sp.encode(buffered))
                self.expected_input += 1
        elif sequence > self.expected_input:
            self.acknowledge(message)
            self.early_input[sequence] = message
        else:
            self.acknowledge(message)

    def acknowledge(self, message: sp.ClientMessage) -> None:
        self.conn.send(sp.encode(sp.acknowledgement_for(message)))
        self.record.input_acks.append(message.sequence_number)

    def process_input(self, message: sp.ClientMessage, raw: bytes) -> None:
        """``processStreamDataMessage`` / ``handleHandshakeResponse``: a failed client action
        fails the handshake, and so the session."""
        if message.payload_type != sp.PayloadType.HANDSHAKE_RESPONSE:
            return  # NonInteractiveCommands reads no input
        response = sp.parse_handshake_response(message.payload)
        failed = [a for a in response.get("ProcessedClientActions") or [] if a.get("ActionStatus") != 1]
        if failed:
            self.handshake_error = "; ".join(
                f"{a.get('ActionType')} failed on client with status {a.get('ActionStatus')} "
                f"error: {a.get('Error')}"
                for a in failed
            )
        self.record.handshake_response = response
        self.record.handshake_response_header = raw[: sp.PAYLOAD_OFFSET]
