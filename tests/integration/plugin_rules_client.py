"""A minimal data-channel client that follows the session-manager-plugin's rules, not ours.

Why: the simulated agent must work with AWS's own client, not only with this project's — e.g. it
must not wait for re-acknowledgements the official client never sends. This test helper applies
the rules of the plugin's ``DataChannel.HandleOutputMessage`` (src/datachannel/streaming.go):

- the expected message: HandshakeRequest / HandshakeComplete acknowledged first, then handled;
  any other payload handled, then acknowledged; then the buffered successors, unacknowledged;
- a later message: acknowledged and buffered;
- an earlier one (a duplicate of one already processed): ignored — no acknowledgement;
- a frame that fails to decode or ``Validate``: logged and dropped (``OutputMessageHandler``'s
  error is ignored by its caller);
- start_publication / pause_publication: ignored; channel_closed: the end.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from websockets.sync.client import connect

from hyperpod_perf.aws import session_protocol as sp
from hyperpod_perf.domain.errors import SessionProtocolError

PLUGIN_VERSION = "1.2.677.0"


@dataclass
class PluginRun:
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    exit_payload: bytes = b""
    acks_sent: list[int] = field(default_factory=list)
    ignored_duplicates: list[int] = field(default_factory=list)
    dropped: int = 0
    closed: bool = False


def run_plugin_rules(url: str, token: str, *, deadline_s: float = 10.0) -> PluginRun:
    """Run one session the plugin's way until channel_closed (or the deadline: then raise)."""
    run = PluginRun()
    expected = 0
    early: dict[int, sp.ClientMessage] = {}
    response: bytes | None = None
    response_acked = False
    sent_at = 0.0
    ends = time.monotonic() + deadline_s
    with connect(url, compression=None, ping_interval=None) as ws:
        ws.send(
            sp.open_data_channel_frame(
                token,
                client_id=str(uuid.uuid4()),
                request_id=str(uuid.uuid4()),
                client_version=PLUGIN_VERSION,
            )
        )

        def acknowledge(message: sp.ClientMessage) -> None:
            ws.send(sp.encode(sp.acknowledgement_for(message)))
            run.acks_sent.append(message.sequence_number)

        def handle(message: sp.ClientMessage) -> None:
            nonlocal response, sent_at
            if message.payload_type == sp.PayloadType.HANDSHAKE_REQUEST:
                request = sp.parse_handshake_request(message.payload)
                response = sp.encode(
                    sp.ClientMessage(
                        sp.MessageType.INPUT_STREAM_DATA,
                        0,
                        sp.PayloadType.HANDSHAKE_RESPONSE,
                        sp.handshake_response_payload(request, PLUGIN_VERSION),
                    )
                )
                ws.send(response)
                sent_at = time.monotonic()
            elif message.payload_type == sp.PayloadType.OUTPUT:
                run.stdout += message.payload
            elif message.payload_type == sp.PayloadType.STDERR:
                run.stderr += message.payload
            elif message.payload_type == sp.PayloadType.EXIT_CODE:
                run.exit_payload = message.payload

        while not run.closed:
            if time.monotonic() > ends:
                raise TimeoutError("plugin-rules client: no channel_closed before the deadline")
            if response is not None and not response_acked and time.monotonic() - sent_at > 0.2:
                ws.send(response)
                sent_at = time.monotonic()
            try:
                frame = ws.recv(timeout=0.1)
            except TimeoutError:
                continue
            try:
                message = sp.decode(frame.encode() if isinstance(frame, str) else frame)
                sp.validate(message)
            except SessionProtocolError:
                run.dropped += 1
                continue
            if message.message_type == sp.MessageType.CHANNEL_CLOSED:
                run.closed = True
            elif message.message_type == sp.MessageType.ACKNOWLEDGE:
                response_acked = (
                    response_acked or sp.parse_acknowledgement(message.payload).sequence_number == 0
                )
            elif message.message_type != sp.MessageType.OUTPUT_STREAM_DATA:
                continue
            elif message.sequence_number == expected:
                handshake = message.payload_type in (
                    sp.PayloadType.HANDSHAKE_REQUEST,
                    sp.PayloadType.HANDSHAKE_COMPLETE,
                )
                if handshake:
                    acknowledge(message)
                handle(message)
                if not handshake:
                    acknowledge(message)
                expected += 1
                while expected in early:
                    handle(early.pop(expected))
                    expected += 1
            elif message.sequence_number > expected:
                acknowledge(message)
                early[message.sequence_number] = message
            else:
                run.ignored_duplicates.append(message.sequence_number)
    return run
