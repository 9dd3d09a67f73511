"""How the session client treats single frames: drop what it cannot read, re-acknowledge
duplicates, keep going. A recording stand-in for the socket makes every send visible."""

from __future__ import annotations

import pytest

from hyperpod_perf.aws import session_protocol as sp
from hyperpod_perf.aws.session import SessionClient, _Channel

CONTEXT = "session s-1 (test)"


class RecordingSocket:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send(self, frame: bytes) -> None:
        self.sent.append(frame)

    def acked(self) -> list[int]:
        return [sp.parse_acknowledgement(sp.decode(f).payload).sequence_number for f in self.sent]


def output(sequence: int, payload: bytes, payload_type: int = sp.PayloadType.OUTPUT) -> bytes:
    return sp.encode(sp.ClientMessage(sp.MessageType.OUTPUT_STREAM_DATA, sequence, payload_type, payload))


@pytest.fixture
def client() -> SessionClient:
    return SessionClient(ssm_client=None)  # type: ignore[arg-type]  # no AWS call in these tests


def test_a_duplicate_of_a_processed_message_is_acknowledged_again_but_not_kept_twice(
    client: SessionClient,
) -> None:
    # Given a channel that has processed messages 0 and 1
    ws, channel = RecordingSocket(), _Channel(max_output_bytes=1000)
    for sequence, text in ((0, b"a"), (1, b"b")):
        assert client._handle(ws, channel, output(sequence, text), CONTEXT)

    # When message 1 arrives again
    accepted = client._handle(ws, channel, output(1, b"b"), CONTEXT)

    # Then it is acknowledged a second time (harmless to the agent) and its text is not repeated
    assert accepted is True
    assert ws.acked() == [0, 1, 1]
    assert bytes(channel.stdout) == b"ab"
    assert channel.expected_sequence == 2


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        (b"\x00\x00\x00\x74tiny", "shorter than the 120-byte header"),
        (output(0, b"abc")[:-1], "payload length field says 3"),
        (output(0, b"abc")[:80] + b"\x00" * 32 + output(0, b"abc")[112:], "digest does not match"),
        (sp.encode(sp.ClientMessage(sp.MessageType.ACKNOWLEDGE, 0, 0, b"{", flags=3)), "not JSON"),
    ],
    ids=["short", "length-mismatch", "bad-digest", "bad-ack"],
)
def test_a_frame_that_cannot_be_read_is_dropped_unacknowledged(
    client: SessionClient, frame: bytes, reason: str
) -> None:
    # Given a fresh channel
    ws, channel = RecordingSocket(), _Channel(max_output_bytes=1000)

    # When an unreadable frame arrives
    accepted = client._handle(ws, channel, frame, CONTEXT)

    # Then it is dropped — not progress, nothing sent, the reason kept — and the channel goes on
    assert accepted is False
    assert ws.sent == []
    assert channel.dropped == 1
    assert reason in channel.last_drop
    assert client._handle(ws, channel, output(0, b"ok"), CONTEXT) is True
    assert bytes(channel.stdout) == b"ok"


def test_an_unreadable_exit_code_leaves_the_exit_unknown_and_keeps_the_output(client: SessionClient) -> None:
    # Given output followed by an ExitCode whose text is not "EXIT_CODE: <n>"
    ws, channel = RecordingSocket(), _Channel(max_output_bytes=1000)
    client._handle(ws, channel, output(0, b"data"), CONTEXT)

    # When it arrives
    client._handle(ws, channel, output(1, b"EXIT: ?", sp.PayloadType.EXIT_CODE), CONTEXT)

    # Then the command counts as finished with an unknown exit code, output intact, both acked
    assert channel.exit_seen is True
    assert channel.exit_code is None
    assert bytes(channel.stdout) == b"data"
    assert ws.acked() == [0, 1]


def test_publication_notices_are_ignored(client: SessionClient) -> None:
    # Given pause/start_publication as the service may send them
    ws, channel = RecordingSocket(), _Channel(max_output_bytes=1000)
    for kind in (sp.MessageType.PAUSE_PUBLICATION, sp.MessageType.START_PUBLICATION):
        frame = sp.encode(sp.ClientMessage(kind, 0, 0, b"", created_date_ms=0))

        # Then each is accepted, answered with nothing, and changes no state
        assert client._handle(ws, channel, frame, CONTEXT) is True
    assert ws.sent == []
    assert channel.expected_sequence == 0
    assert channel.dropped == 0
