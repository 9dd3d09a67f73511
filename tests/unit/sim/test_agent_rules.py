"""The simulated agent's output and handshake rules, asserted directly against amazon-ssm-agent's.

Each expected value is worked out from the agent's source (session/shell/shell.go
``processStdoutData`` and ``setupRoutineToWriteCmdPipelineOutput``, session/datachannel/
datachannel.go ``buildHandshakeCompletePayload``, session/plugins/*/ ``GetPluginParameters``)
before the sim is run.
"""

from __future__ import annotations

from hyperpod_perf.aws import session_protocol as sp
from hyperpod_perf_dev.sim.agent import (
    Scenario,
    agent_output_messages,
    agent_payload,
    handshake_complete_message,
    session_type_properties,
)

OUT, ERR, EXIT = sp.PayloadType.OUTPUT, sp.PayloadType.STDERR, sp.PayloadType.EXIT_CODE
CHECK = "✓".encode()  # e2 9c 93
SMILE = "\U0001f600".encode()  # f0 9f 98 80


def test_a_character_cut_by_the_read_is_held_back_for_the_next_read() -> None:
    # Given a 1024-byte read whose last two bytes start a 3-byte character
    read = b"a" * 1022 + CHECK[:2]

    # When the agent turns it into a payload
    payload, held = agent_payload(b"", read)

    # Then the payload stops before the character, and its two bytes wait
    assert payload == b"a" * 1022
    assert held == CHECK[:2]
    # And with the next read the character goes out whole, first
    payload, held = agent_payload(held, CHECK[2:] + b"b")
    assert payload == CHECK + b"b"
    assert held == b""


def test_held_back_bytes_can_make_a_payload_longer_than_the_read_buffer() -> None:
    # Given three held-back bytes of a 4-byte character and a full 1024-byte read completing it
    payload, held = agent_payload(SMILE[:3], SMILE[3:] + b"x" * 1023)

    # Then the payload is 1027 bytes: the read buffer bounds the read, not the message
    assert len(payload) == 1027
    assert payload.decode() == "\U0001f600" + "x" * 1023
    assert held == b""


def test_an_invalid_byte_inside_the_read_goes_out_as_it_is() -> None:
    # Given a stray 0xff byte followed by four more bytes (so not within the last three)
    payload, held = agent_payload(b"", b"ab\xffcdef")

    # Then it is copied through, byte for byte
    assert payload == b"ab\xffcdef"
    assert held == b""


def test_an_invalid_byte_within_the_last_three_waits_like_an_incomplete_character() -> None:
    # Given a read ending in a stray 0xff two bytes before its end
    payload, held = agent_payload(b"", b"abcd\xffef")

    # Then the agent cannot tell it from a cut character: it and what follows are held back
    assert payload == b"abcd"
    assert held == b"\xffef"


def test_a_literal_replacement_character_becomes_its_first_byte() -> None:
    # Given U+FFFD followed by enough bytes that it is not within the last three
    replacement = "\ufffd".encode()

    # When the agent processes it (ReadRune reports RuneError of size 3; the agent copies one byte)
    payload, held = agent_payload(b"", b"a" + replacement + b"bcde")

    # Then only 0xef goes out for it — the agent's own behaviour, reproduced
    assert payload == b"a\xefbcde"
    assert held == b""


def test_the_streams_interleave_in_write_order_and_each_keeps_its_own_held_bytes() -> None:
    # Given writes alternating between the streams, a stdout character split across two writes
    writes = ((OUT, b"x" + CHECK[:1]), (ERR, b"err\n"), (OUT, CHECK[1:] + b"\n"))
    scenario = Scenario(writes=writes, exit_code=2)

    # When the agent's messages are built
    messages = agent_output_messages(scenario)

    # Then stderr's message sits between the two stdout reads, the split character goes out whole
    # with the second stdout read, and the exit code comes last as the agent's text
    assert messages == [(OUT, b"x"), (ERR, b"err\n"), (OUT, CHECK + b"\n"), (EXIT, b"EXIT_CODE: 2")]


def test_reads_are_at_most_the_buffer_and_what_is_held_at_end_of_file_is_lost() -> None:
    # Given 2,500 bytes of stdout ending in a cut 4-byte character
    data = b"y" * 2497 + SMILE[:3]

    # When the agent reads it in 1024-byte reads
    messages = agent_output_messages(Scenario(stdout=data, exit_code=0))

    # Then it sends 1024, 1024 and the 449 whole bytes; the 3 held bytes never go out (io.EOF)
    assert [(kind, len(payload)) for kind, payload in messages] == [
        (OUT, 1024),
        (OUT, 1024),
        (OUT, 449),
        (EXIT, 12),
    ]


def test_an_empty_payload_is_never_sent() -> None:
    # Given a stderr write that is nothing but the start of a character
    messages = agent_output_messages(Scenario(writes=((ERR, CHECK[:2]),), exit_code=0))

    # Then no message goes out for it (SendStreamDataMessage ignores empty payloads)
    assert messages == [(EXIT, b"EXIT_CODE: 0")]


def test_without_separate_output_stream_everything_is_output_and_there_is_no_exit_code() -> None:
    # Given a document without separateOutputStream
    scenario = Scenario(writes=((OUT, b"a\n"), (ERR, b"e\n")), exit_code=1, separate_output_stream=False)

    # Then stdout and stderr both go out as Output and no ExitCode message follows
    assert agent_output_messages(scenario) == [(OUT, b"a\n"), (OUT, b"e\n")]


def test_session_type_properties_are_null_except_for_port() -> None:
    # Given a document with properties
    properties = {"linux": {"commands": "/opt/collect.sh", "separateOutputStream": "true"}}

    # Then NonInteractiveCommands (SingleCommand.GetPluginParameters returns nil) gets null,
    # InteractiveCommands and Standard_Stream too; Port returns the document's properties
    for session_type in ("NonInteractiveCommands", "InteractiveCommands", "Standard_Stream"):
        assert (
            session_type_properties(Scenario(session_type=session_type, document_properties=properties))
            is None
        )
    port = Scenario(session_type="Port", document_properties={"portNumber": "22"})
    assert session_type_properties(port) == {"portNumber": "22"}


def test_upgrade_notice_only_with_separate_output_and_an_old_client() -> None:
    # Given the agent's rule: separateOutputStream on and client version <= 1.2.295
    separate, combined = Scenario(), Scenario(separate_output_stream=False)

    # Then an old client is told to upgrade, a current one is not, nor is anyone without separation
    assert "minimum required version 1.2.312.0" in handshake_complete_message(
        separate, "1.2.0.0-hyperpod-perf"
    )
    assert handshake_complete_message(separate, "1.2.677.0") == ""
    assert handshake_complete_message(combined, "1.2.0.0-hyperpod-perf") == ""
