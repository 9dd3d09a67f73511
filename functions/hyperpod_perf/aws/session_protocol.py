"""Session Manager data-channel messages: encoding and decoding only, no I/O.

Why a module of its own: the byte layout is the part that must match the agent exactly, so it is
kept pure and tested byte offset by byte offset; the WebSocket client (``session.py``) and the
loopback fake agent used in tests both build on it.

Layout (learned from the open-source aws/session-manager-plugin; all integers big-endian)::

    offset size field
         0    4 HeaderLength     u32, always written as 116 (the offset of PayloadLength)
         4   32 MessageType      ASCII, right-padded with spaces
        36    4 SchemaVersion    u32
        40    8 CreatedDate      u64, milliseconds since the epoch
        48    8 SequenceNumber   i64
        56    8 Flags            u64 (SYN=1, FIN=2; acknowledgements carry 3)
        64   16 MessageId        UUID with its two 8-byte halves swapped (low half first)
        80   32 PayloadDigest    SHA-256 of Payload
       112    4 PayloadType      u32
       116    4 PayloadLength    u32
       120    n Payload          starts at HeaderLength + 4
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import time
import uuid
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any

from hyperpod_perf.domain.errors import SessionProtocolError

# --- layout -------------------------------------------------------------------------------------

HEADER_LENGTH_OFFSET = 0
MESSAGE_TYPE_OFFSET = 4
MESSAGE_TYPE_LENGTH = 32
SCHEMA_VERSION_OFFSET = 36
CREATED_DATE_OFFSET = 40
SEQUENCE_NUMBER_OFFSET = 48
FLAGS_OFFSET = 56
MESSAGE_ID_OFFSET = 64
MESSAGE_ID_LENGTH = 16
PAYLOAD_DIGEST_OFFSET = 80
PAYLOAD_DIGEST_LENGTH = 32
PAYLOAD_TYPE_OFFSET = 112
PAYLOAD_LENGTH_OFFSET = 116
#: HeaderLength as written by the plugin and agent: everything before PayloadLength.
HEADER_LENGTH = PAYLOAD_LENGTH_OFFSET
PAYLOAD_OFFSET = HEADER_LENGTH + 4

FLAG_SYN = 1
FLAG_FIN = 2
#: Flags value the reference client puts on every acknowledge message.
ACK_FLAGS = FLAG_SYN | FLAG_FIN

#: Largest payload the agent puts in one output_stream_data message.
STREAM_CHUNK_SIZE = 1024

MESSAGE_SCHEMA_VERSION = "1.0"


class MessageType(StrEnum):
    INPUT_STREAM_DATA = "input_stream_data"
    OUTPUT_STREAM_DATA = "output_stream_data"
    ACKNOWLEDGE = "acknowledge"
    CHANNEL_CLOSED = "channel_closed"
    START_PUBLICATION = "start_publication"
    PAUSE_PUBLICATION = "pause_publication"


class PayloadType(IntEnum):
    OUTPUT = 1
    ERROR = 2
    SIZE = 3
    PARAMETER = 4
    HANDSHAKE_REQUEST = 5
    HANDSHAKE_RESPONSE = 6
    HANDSHAKE_COMPLETE = 7
    ENC_CHALLENGE_REQUEST = 8
    ENC_CHALLENGE_RESPONSE = 9
    FLAG = 10
    STDERR = 11
    EXIT_CODE = 12


class ActionStatus(IntEnum):
    SUCCESS = 1
    FAILED = 2
    UNSUPPORTED = 3


# --- the message --------------------------------------------------------------------------------


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class ClientMessage:
    """One data-channel message. ``payload_digest`` is filled in by ``decode``; ``encode`` computes
    it unless ``digest_override`` is given (only the fake agent does that, to misbehave)."""

    message_type: str
    sequence_number: int
    payload_type: int
    payload: bytes = b""
    message_id: uuid.UUID = field(default_factory=uuid.uuid4)
    created_date_ms: int = field(default_factory=now_ms)
    flags: int = 0
    schema_version: int = 1
    payload_digest: bytes = b""
    header_length: int = HEADER_LENGTH

    def digest_ok(self) -> bool:
        return hashlib.sha256(self.payload).digest() == self.payload_digest


def uuid_to_wire(value: uuid.UUID) -> bytes:
    """The plugin writes the UUID's low 8 bytes first, then its high 8 bytes."""
    raw = value.bytes
    return raw[8:] + raw[:8]


def uuid_from_wire(raw: bytes) -> uuid.UUID:
    if len(raw) != MESSAGE_ID_LENGTH:
        raise SessionProtocolError(f"message id must be 16 bytes, got {len(raw)}")
    return uuid.UUID(bytes=raw[8:] + raw[:8])


def encode(message: ClientMessage, *, digest_override: bytes | None = None) -> bytes:
    """Serialize a message to the wire layout above."""
    type_bytes = message.message_type.encode("ascii")
    if len(type_bytes) > MESSAGE_TYPE_LENGTH:
        raise SessionProtocolError(f"message type {message.message_type!r} is longer than 32 bytes")
    digest = digest_override if digest_override is not None else hashlib.sha256(message.payload).digest()
    if len(digest) != PAYLOAD_DIGEST_LENGTH:
        raise SessionProtocolError("payload digest must be 32 bytes")
    header = b"".join(
        (
            struct.pack(">I", HEADER_LENGTH),
            type_bytes.ljust(MESSAGE_TYPE_LENGTH, b" "),
            struct.pack(">I", message.schema_version),
            struct.pack(">Q", message.created_date_ms),
            struct.pack(">q", message.sequence_number),
            struct.pack(">Q", message.flags),
            uuid_to_wire(message.message_id),
            digest,
            struct.pack(">I", message.payload_type),
            struct.pack(">I", len(message.payload)),
        )
    )
    return header + message.payload


def decode(data: bytes) -> ClientMessage:
    """Parse one wire message. Raises SessionProtocolError on a malformed frame.

    The digest is *not* checked here (use ``validate``): the caller decides what a bad digest
    means (the reference client drops the message unacknowledged so the agent resends it).
    """
    if len(data) < PAYLOAD_OFFSET:
        raise SessionProtocolError(
            f"frame of {len(data)} bytes is shorter than the {PAYLOAD_OFFSET}-byte header"
        )
    (header_length,) = struct.unpack_from(">I", data, HEADER_LENGTH_OFFSET)
    if header_length < HEADER_LENGTH or header_length + 4 > len(data):
        raise SessionProtocolError(f"invalid header length {header_length} for a {len(data)}-byte frame")
    raw_type = data[MESSAGE_TYPE_OFFSET : MESSAGE_TYPE_OFFSET + MESSAGE_TYPE_LENGTH]
    try:
        message_type = raw_type.strip(b"\x00").decode("ascii").strip()
    except UnicodeDecodeError as exc:
        raise SessionProtocolError("message type is not ASCII") from exc
    (schema_version,) = struct.unpack_from(">I", data, SCHEMA_VERSION_OFFSET)
    (created,) = struct.unpack_from(">Q", data, CREATED_DATE_OFFSET)
    (sequence,) = struct.unpack_from(">q", data, SEQUENCE_NUMBER_OFFSET)
    (flags,) = struct.unpack_from(">Q", data, FLAGS_OFFSET)
    message_id = uuid_from_wire(data[MESSAGE_ID_OFFSET : MESSAGE_ID_OFFSET + MESSAGE_ID_LENGTH])
    digest = bytes(data[PAYLOAD_DIGEST_OFFSET : PAYLOAD_DIGEST_OFFSET + PAYLOAD_DIGEST_LENGTH])
    (payload_type,) = struct.unpack_from(">I", data, PAYLOAD_TYPE_OFFSET)
    (payload_length,) = struct.unpack_from(">I", data, PAYLOAD_LENGTH_OFFSET)
    payload = bytes(data[header_length + 4 :])
    if len(payload) != payload_length:
        raise SessionProtocolError(
            f"{message_type} #{sequence}: payload length field says {payload_length}, "
            f"frame carries {len(payload)}"
        )
    return ClientMessage(
        message_type=message_type,
        sequence_number=sequence,
        payload_type=payload_type,
        payload=payload,
        message_id=message_id,
        created_date_ms=created,
        flags=flags,
        schema_version=schema_version,
        payload_digest=digest,
        header_length=header_length,
    )


def validate(message: ClientMessage) -> None:
    """The reference client's checks: publication notices pass as they are; otherwise a message
    type, a creation date and — when there is a payload — a matching SHA-256 digest."""
    if message.message_type in (MessageType.START_PUBLICATION, MessageType.PAUSE_PUBLICATION):
        return
    if not message.message_type:
        raise SessionProtocolError("message type is missing")
    if message.created_date_ms == 0:
        raise SessionProtocolError(
            f"{message.message_type} #{message.sequence_number}: created date is missing"
        )
    if message.payload and not message.digest_ok():
        raise SessionProtocolError(
            f"{message.message_type} #{message.sequence_number}: payload SHA-256 digest does not match"
        )


# --- payloads -----------------------------------------------------------------------------------


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def _json_object(payload: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SessionProtocolError(f"{what} payload is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise SessionProtocolError(f"{what} payload is not a JSON object")
    return value


def open_data_channel_frame(token: str, *, client_id: str, request_id: str, client_version: str) -> str:
    """The first (text) frame on a fresh data channel: proves the StartSession token."""
    return json.dumps(
        {
            "MessageSchemaVersion": MESSAGE_SCHEMA_VERSION,
            "RequestId": request_id,
            "TokenValue": token,
            "ClientId": client_id,
            "ClientVersion": client_version,
        }
    )


@dataclass(frozen=True)
class Acknowledgement:
    message_type: str
    message_id: str
    sequence_number: int
    is_sequential: bool = True


def acknowledgement_for(message: ClientMessage) -> ClientMessage:
    """The acknowledge message that answers ``message`` (sequence 0, flags 3, as the reference)."""
    content = {
        "AcknowledgedMessageType": message.message_type,
        "AcknowledgedMessageId": str(message.message_id),
        "AcknowledgedMessageSequenceNumber": message.sequence_number,
        "IsSequentialMessage": True,
    }
    return ClientMessage(
        message_type=MessageType.ACKNOWLEDGE,
        sequence_number=0,
        payload_type=0,
        payload=_json_bytes(content),
        flags=ACK_FLAGS,
    )


def parse_acknowledgement(payload: bytes) -> Acknowledgement:
    content = _json_object(payload, "acknowledge")
    try:
        return Acknowledgement(
            message_type=str(content["AcknowledgedMessageType"]),
            message_id=str(content["AcknowledgedMessageId"]),
            sequence_number=int(content["AcknowledgedMessageSequenceNumber"]),
            is_sequential=bool(content.get("IsSequentialMessage", True)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SessionProtocolError(f"acknowledge payload lacks a field: {exc}") from exc


@dataclass(frozen=True)
class RequestedAction:
    action_type: str
    parameters: Any


@dataclass(frozen=True)
class HandshakeRequest:
    agent_version: str
    actions: tuple[RequestedAction, ...]

    def session_type(self) -> str | None:
        for action in self.actions:
            if action.action_type == "SessionType" and isinstance(action.parameters, dict):
                value = action.parameters.get("SessionType")
                return str(value) if value is not None else None
        return None

    def requests_encryption(self) -> bool:
        return any(action.action_type == "KMSEncryption" for action in self.actions)


def parse_handshake_request(payload: bytes) -> HandshakeRequest:
    content = _json_object(payload, "HandshakeRequest")
    actions = content.get("RequestedClientActions") or []
    if not isinstance(actions, list):
        raise SessionProtocolError("HandshakeRequest RequestedClientActions is not a list")
    parsed = tuple(
        RequestedAction(str(a.get("ActionType", "")), a.get("ActionParameters"))
        for a in actions
        if isinstance(a, dict)
    )
    return HandshakeRequest(agent_version=str(content.get("AgentVersion", "")), actions=parsed)


def handshake_request_payload(agent_version: str, actions: list[tuple[str, Any]]) -> bytes:
    """What an agent sends; used by the test fake and for round-trip tests."""
    return _json_bytes(
        {
            "AgentVersion": agent_version,
            "RequestedClientActions": [{"ActionType": t, "ActionParameters": p} for t, p in actions],
        }
    )


#: Session types a non-interactive reader can serve (the plugin accepts these for its shell path).
SUPPORTED_SESSION_TYPES = frozenset({"NonInteractiveCommands", "InteractiveCommands", "Standard_Stream"})


def handshake_response_payload(request: HandshakeRequest, client_version: str) -> bytes:
    """Answer every requested action: SessionType succeeds when it is one this client reads;
    anything else (KMSEncryption included) is reported Unsupported with an error, like the plugin."""
    processed: list[dict[str, Any]] = []
    errors: list[str] = []
    for action in request.actions:
        if action.action_type == "SessionType":
            session_type = request.session_type()
            if session_type in SUPPORTED_SESSION_TYPES:
                processed.append({"ActionType": "SessionType", "ActionStatus": ActionStatus.SUCCESS.value})
                continue
            error = f"Failed to process action SessionType: unknown session type {session_type}"
            status = ActionStatus.FAILED
        else:
            error = f"Unsupported action {action.action_type}"
            status = ActionStatus.UNSUPPORTED
        processed.append({"ActionType": action.action_type, "ActionStatus": status.value, "Error": error})
        errors.append(error)
    body: dict[str, Any] = {"ClientVersion": client_version, "ProcessedClientActions": processed}
    if errors:
        body["Errors"] = errors
    return _json_bytes(body)


def parse_handshake_response(payload: bytes) -> dict[str, Any]:
    return _json_object(payload, "HandshakeResponse")


def handshake_complete_payload(time_to_complete_ns: int = 0, customer_message: str = "") -> bytes:
    """HandshakeComplete as the agent's ``buildHandshakeCompletePayload`` (session/datachannel/
    datachannel.go) fills it: the handshake's duration (a Go ``time.Duration``, so nanoseconds) and
    a message for the user, empty unless there is something to say."""
    return _json_bytes({"HandshakeTimeToComplete": time_to_complete_ns, "CustomerMessage": customer_message})


def parse_handshake_complete(payload: bytes) -> dict[str, Any]:
    return _json_object(payload, "HandshakeComplete") if payload else {}


# --- client versions, as the agent compares them --------------------------------------------------

#: amazon-ssm-agent session/datachannel/datachannel.go, constant ``clientVersionWithoutOutputSeparation``:
#: a client whose version compares <= this one is told to upgrade when the document separates
#: stdout and stderr (``buildHandshakeCompletePayload``).
AGENT_CLIENT_VERSION_WITHOUT_OUTPUT_SEPARATION = "1.2.295"
#: Same file, ``firstVersionWithOutputSeparationFeature``: the version the notice asks for.
AGENT_FIRST_CLIENT_VERSION_WITH_OUTPUT_SEPARATION = "1.2.312.0"

_GO_INT = re.compile(r"[+-]?[0-9]+")


def _go_int(text: str) -> int | None:
    """``strconv.Atoi``'s notion of a number (Python's ``int`` also takes spaces and underscores)."""
    return int(text) if _GO_INT.fullmatch(text) else None


def _dotted_tri(version: str) -> tuple[tuple[int, int, int], list[str]] | None:
    """The version as coreos/go-semver's ``Version.Set`` reads it, or None where that fails:
    ``+metadata`` and then ``-prerelease`` cut off, and exactly three integer parts left."""
    core = version.split("+", 1)[0]
    core, _, prerelease = core.partition("-")
    parts = core.split(".", 2)
    numbers = [_go_int(part) for part in parts]
    if len(parts) != 3 or any(n is None for n in numbers):
        return None
    major, minor, patch = (int(n) for n in numbers if n is not None)
    return (major, minor, patch), (prerelease.split(".") if prerelease else [])


def _compare_prerelease(this: list[str], other: list[str]) -> int:
    if not this or not other:
        return (not this) - (not other)  # no prerelease ranks higher; both none: equal
    for a, b in zip(this, other, strict=False):
        a_num, b_num = _go_int(a), _go_int(b)
        if a_num is not None and b_num is not None and a_num != b_num:
            return 1 if a_num > b_num else -1
        if a != b:
            return 1 if a > b else -1
    return (len(this) > len(other)) - (len(this) < len(other))


def compare_versions(this: str, other: str) -> int:
    """Order two client versions the way amazon-ssm-agent does (agent/versionutil/versionutil.go,
    ``Compare`` with strictSort): semantic-version rules when both parse as dotted triples,
    otherwise part by part on ``.`` — numerically where both parts are integers, as text
    otherwise — and, all shared parts equal, the version with fewer parts is the older.

    Why it matters: ``1.2.0.0-hyperpod-perf`` is not a dotted triple, so it is compared part by
    part and its ``0`` loses to ``295``: the agent took it for a client older than 1.2.295."""
    this_semver, other_semver = _dotted_tri(this), _dotted_tri(other)
    if this_semver is not None and other_semver is not None:
        if this_semver[0] != other_semver[0]:
            return 1 if this_semver[0] > other_semver[0] else -1
        return _compare_prerelease(this_semver[1], other_semver[1])
    this_parts, other_parts = this.split("."), other.split(".")
    for a, b in zip(this_parts, other_parts, strict=False):
        a_num, b_num = _go_int(a), _go_int(b)
        if a_num is not None and b_num is not None:
            if a_num != b_num:
                return 1 if a_num > b_num else -1
        elif a != b:
            return 1 if a > b else -1
    return len(this_parts) - len(other_parts)


def output_separation_notice(client_version: str) -> str:
    """The upgrade notice the agent puts in HandshakeComplete's CustomerMessage for a client too
    old for separate stdout/stderr (``buildHandshakeCompletePayload``), or "" when it is recent
    enough. The agent adds it only for documents with ``separateOutputStream`` on."""
    if compare_versions(client_version, AGENT_CLIENT_VERSION_WITHOUT_OUTPUT_SEPARATION) > 0:
        return ""
    return (
        "Please update session manager plugin version (minimum required version "
        f"{AGENT_FIRST_CLIENT_VERSION_WITH_OUTPUT_SEPARATION}) for fully support of separate "
        "StdOut/StdErr output.\r\n"
    )


_EXIT_CODE_RE = re.compile(rb"^\s*EXIT_CODE:\s*(-?\d+)\s*$")


def exit_code_payload(code: int) -> bytes:
    return f"EXIT_CODE: {code}".encode("ascii")


def parse_exit_code(payload: bytes) -> int:
    """The agent's ExitCode payload is the text ``EXIT_CODE: <n>``."""
    match = _EXIT_CODE_RE.match(payload)
    if match is None:
        raise SessionProtocolError(f"ExitCode payload {payload[:64]!r} is not 'EXIT_CODE: <n>'")
    return int(match.group(1))


def channel_closed_payload(session_id: str, output: str = "") -> bytes:
    return _json_bytes(
        {
            "MessageId": str(uuid.uuid4()),
            "CreatedDate": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            "DestinationId": session_id,
            "SessionId": session_id,
            "MessageType": MessageType.CHANNEL_CLOSED.value,
            "SchemaVersion": 1,
            "Output": output,
        }
    )


def parse_channel_closed(payload: bytes) -> dict[str, Any]:
    """Tolerant: a channel_closed with an unreadable payload still closes the channel."""
    try:
        return _json_object(payload, "channel_closed") if payload else {}
    except SessionProtocolError:
        return {"Output": payload.decode("utf-8", errors="replace")}
