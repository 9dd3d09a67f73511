"""Byte layout of Session Manager data-channel messages, checked offset by offset."""

from __future__ import annotations

import hashlib
import json
import struct
import uuid

import pytest

from hyperpod_perf.aws import session_protocol as sp
from hyperpod_perf.domain.errors import SessionProtocolError

MESSAGE_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


def sample(payload: bytes = b"hello\n", sequence: int = 7) -> sp.ClientMessage:
    return sp.ClientMessage(
        message_type=sp.MessageType.OUTPUT_STREAM_DATA,
        sequence_number=sequence,
        payload_type=sp.PayloadType.OUTPUT,
        payload=payload,
        message_id=MESSAGE_ID,
        created_date_ms=1_700_000_000_123,
        flags=0,
        schema_version=1,
    )


def test_header_fields_sit_at_the_reference_offsets() -> None:
    # Given an output message
    payload = b"hello\n"

    # When it is encoded
    wire = sp.encode(sample(payload))

    # Then each field is where the plugin reads it, big-endian
    assert len(wire) == 120 + len(payload)
    assert struct.unpack_from(">I", wire, 0) == (116,)
    assert wire[4:36] == b"output_stream_data".ljust(32, b" ")
    assert struct.unpack_from(">I", wire, 36) == (1,)
    assert struct.unpack_from(">Q", wire, 40) == (1_700_000_000_123,)
    assert struct.unpack_from(">q", wire, 48) == (7,)
    assert struct.unpack_from(">Q", wire, 56) == (0,)
    assert wire[80:112] == hashlib.sha256(payload).digest()
    assert struct.unpack_from(">I", wire, 112) == (1,)
    assert struct.unpack_from(">I", wire, 116) == (len(payload),)
    assert wire[120:] == payload
    # And the offsets the module exports agree with those numbers
    assert (sp.SCHEMA_VERSION_OFFSET, sp.CREATED_DATE_OFFSET, sp.SEQUENCE_NUMBER_OFFSET) == (36, 40, 48)
    assert (sp.FLAGS_OFFSET, sp.MESSAGE_ID_OFFSET, sp.PAYLOAD_DIGEST_OFFSET) == (56, 64, 80)
    assert (sp.PAYLOAD_TYPE_OFFSET, sp.PAYLOAD_LENGTH_OFFSET, sp.PAYLOAD_OFFSET) == (112, 116, 120)


def test_message_id_halves_are_swapped_on_the_wire() -> None:
    # Given a UUID whose bytes are 00..ff
    # When a message carrying it is encoded
    wire = sp.encode(sample())

    # Then the low 8 bytes come first, then the high 8 bytes
    assert wire[64:72] == bytes.fromhex("8899aabbccddeeff")
    assert wire[72:80] == bytes.fromhex("0011223344556677")
    # And decoding restores the UUID
    assert sp.decode(wire).message_id == MESSAGE_ID


def test_round_trip_keeps_every_field() -> None:
    # Given a message with a negative sequence and non-ASCII payload
    original = sample("température ✓".encode(), sequence=-3)

    # When it is encoded and decoded
    decoded = sp.decode(sp.encode(original))

    # Then every field survives and the digest verifies
    assert decoded.message_type == "output_stream_data"
    assert decoded.sequence_number == -3
    assert decoded.payload == original.payload
    assert decoded.created_date_ms == original.created_date_ms
    assert decoded.payload_type == 1
    assert decoded.header_length == 116
    assert decoded.digest_ok()
    sp.validate(decoded)


def test_digest_mismatch_is_detected_by_validate() -> None:
    # Given a frame whose payload was altered after the digest was computed
    wire = bytearray(sp.encode(sample(b"abc")))
    wire[120] ^= 0xFF

    # When it is decoded, then decoding succeeds but validation names the digest
    message = sp.decode(bytes(wire))
    assert not message.digest_ok()
    with pytest.raises(SessionProtocolError, match="digest"):
        sp.validate(message)


def test_empty_payload_needs_no_digest_and_publication_notices_pass() -> None:
    # Given an empty-payload message with a zero digest, and a start_publication with no date
    empty = sp.encode(sample(b""), digest_override=b"\x00" * 32)
    notice = sp.encode(
        sp.ClientMessage(sp.MessageType.START_PUBLICATION, 0, 0, b"x", created_date_ms=0),
        digest_override=b"\x01" * 32,
    )

    # When validated, then both pass (as in the reference client)
    sp.validate(sp.decode(empty))
    sp.validate(sp.decode(notice))


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (b"\x00" * 50, "shorter than the 120-byte header"),
        (struct.pack(">I", 4) + b"\x00" * 120, "invalid header length"),
    ],
)
def test_malformed_frames_raise_protocol_errors(frame: bytes, message: str) -> None:
    with pytest.raises(SessionProtocolError, match=message):
        sp.decode(frame)


def test_payload_length_field_must_match_the_frame() -> None:
    # Given a frame cut short by one byte
    wire = sp.encode(sample(b"abcdef"))[:-1]

    # Then decoding reports the length mismatch
    with pytest.raises(SessionProtocolError, match="payload length field says 6, frame carries 5"):
        sp.decode(wire)


def test_acknowledgement_names_the_message_and_uses_reference_flags() -> None:
    # Given a received output message
    received = sp.decode(sp.encode(sample()))

    # When the acknowledgement is built
    ack = sp.acknowledgement_for(received)

    # Then it is an 'acknowledge' message, sequence 0, flags 3, with the JSON the agent expects
    assert ack.message_type == "acknowledge"
    assert ack.sequence_number == 0
    assert ack.flags == 3
    assert json.loads(ack.payload) == {
        "AcknowledgedMessageType": "output_stream_data",
        "AcknowledgedMessageId": "00112233-4455-6677-8899-aabbccddeeff",
        "AcknowledgedMessageSequenceNumber": 7,
        "IsSequentialMessage": True,
    }
    parsed = sp.parse_acknowledgement(sp.decode(sp.encode(ack)).payload)
    assert (parsed.message_type, parsed.sequence_number) == ("output_stream_data", 7)


def test_handshake_response_accepts_session_type_and_refuses_the_rest() -> None:
    # Given a HandshakeRequest asking for the session type and KMS encryption
    payload = sp.handshake_request_payload(
        "3.3.1142.0",
        [
            ("SessionType", {"SessionType": "NonInteractiveCommands", "Properties": None}),
            ("KMSEncryption", {"KMSKeyId": "alias/x"}),
        ],
    )
    request = sp.parse_handshake_request(payload)

    # When the response is built
    response = json.loads(sp.handshake_response_payload(request, "1.0"))

    # Then the session type succeeded (1), KMS is Unsupported (3) and listed in Errors
    assert request.agent_version == "3.3.1142.0"
    assert request.session_type() == "NonInteractiveCommands"
    assert request.requests_encryption()
    assert response["ClientVersion"] == "1.0"
    assert response["ProcessedClientActions"][0] == {"ActionType": "SessionType", "ActionStatus": 1}
    assert response["ProcessedClientActions"][1]["ActionStatus"] == 3
    assert response["Errors"] == ["Unsupported action KMSEncryption"]


@pytest.mark.parametrize(
    ("payload", "code"), [(b"EXIT_CODE: 0", 0), (b"EXIT_CODE: 124", 124), (b"EXIT_CODE: -1\n", -1)]
)
def test_exit_code_payload_is_parsed(payload: bytes, code: int) -> None:
    assert sp.parse_exit_code(payload) == code


def test_exit_code_payload_round_trips_and_rejects_garbage() -> None:
    assert sp.parse_exit_code(sp.exit_code_payload(2)) == 2
    with pytest.raises(SessionProtocolError, match="EXIT_CODE"):
        sp.parse_exit_code(b"exited")


def test_open_data_channel_frame_carries_the_token() -> None:
    frame = json.loads(sp.open_data_channel_frame("tok", client_id="c", request_id="r", client_version="v"))
    assert frame == {
        "MessageSchemaVersion": "1.0",
        "RequestId": "r",
        "TokenValue": "tok",
        "ClientId": "c",
        "ClientVersion": "v",
    }


def test_channel_closed_payload_is_read_tolerantly() -> None:
    assert sp.parse_channel_closed(sp.channel_closed_payload("s-1", "bye"))["Output"] == "bye"
    assert sp.parse_channel_closed(b"not json")["Output"] == "not json"


# --- client versions, compared as amazon-ssm-agent's versionutil.Compare does --------------------


@pytest.mark.parametrize(
    ("this", "other", "sign"),
    [
        # not dotted triples: part by part, numerically; 0 < 295 decides
        ("1.2.0.0-hyperpod-perf", "1.2.295", -1),
        ("1.2.677.0", "1.2.295", 1),
        ("1.2.294.0", "1.2.295", -1),
        # all shared parts equal: the version with more parts is the newer
        ("1.2.295.0", "1.2.295", 1),
        # both dotted triples: semantic-version rules, a prerelease ranks below its release
        ("1.2.295", "1.2.295", 0),
        ("1.2.296", "1.2.295", 1),
        ("1.2.295-beta", "1.2.295", -1),
        ("1.2.295-beta.2", "1.2.295-beta.10", -1),
        # a part that is not a number is compared as text
        ("1.2.x", "1.2.295.0", 1),
    ],
)
def test_versions_compare_as_the_agent_compares_them(this: str, other: str, sign: int) -> None:
    # When two client versions are compared, then the sign is the agent's
    result = sp.compare_versions(this, other)
    assert (result > 0) - (result < 0) == sign
    # And the comparison is antisymmetric
    reverse = sp.compare_versions(other, this)
    assert (reverse > 0) - (reverse < 0) == -sign


def test_upgrade_notice_threshold_is_inclusive_at_1_2_295() -> None:
    # Given the agent's clientVersionWithoutOutputSeparation = 1.2.295, compared with <= 0
    # Then at the limit the notice is given, just above it not
    assert sp.output_separation_notice("1.2.295") != ""
    assert sp.output_separation_notice("1.2.295.0") == ""
    assert sp.output_separation_notice("1.2.294.9") != ""
    # And this client's own version is past it
    from hyperpod_perf.aws.session import CLIENT_VERSION

    assert sp.output_separation_notice(CLIENT_VERSION) == ""
    assert sp.output_separation_notice("1.2.0.0-hyperpod-perf").startswith(
        "Please update session manager plugin version (minimum required version 1.2.312.0)"
    )


def test_publication_notices_pass_validation_without_a_creation_date() -> None:
    # Given start/pause_publication as the sim sends them: no creation date, empty payload
    for kind in (sp.MessageType.START_PUBLICATION, sp.MessageType.PAUSE_PUBLICATION):
        message = sp.decode(sp.encode(sp.ClientMessage(kind, 0, 0, b"", created_date_ms=0)))

        # Then they pass (the plugin's Validate exempts them), where another type would not
        sp.validate(message)
    other = sp.decode(
        sp.encode(sp.ClientMessage(sp.MessageType.OUTPUT_STREAM_DATA, 0, 1, b"", created_date_ms=0))
    )
    with pytest.raises(SessionProtocolError, match="created date is missing"):
        sp.validate(other)


def test_handshake_request_with_object_properties_parses() -> None:
    # Given a Port-style SessionType action whose Properties is the document's object
    payload = sp.handshake_request_payload(
        "3.3.1142.0", [("SessionType", {"SessionType": "Port", "Properties": {"portNumber": "22"}})]
    )

    # Then the request parses and names the session type
    request = sp.parse_handshake_request(payload)
    assert request.session_type() == "Port"
    assert request.actions[0].parameters["Properties"] == {"portNumber": "22"}
