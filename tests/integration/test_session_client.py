"""The data-channel client against the loopback fake agent, over a real socket.

Every test is bounded twice: the client's own short timeouts and a pytest timeout, so a protocol
bug shows up as a failure, never as a hung run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from hyperpod_perf.aws import session_protocol as sp
from hyperpod_perf.aws.session import SessionClient, SessionResult
from hyperpod_perf.collect.snapshot import parse_container, render_container
from hyperpod_perf.domain.errors import (
    AccessDenied,
    SessionProtocolError,
    SessionTimeout,
    TargetNotConnected,
    Throttled,
)
from hyperpod_perf_dev.sim.agent import FakeAgent, Scenario
from hyperpod_perf_dev.sim.ssm import FakeSsm, client_error

pytestmark = pytest.mark.timeout(30)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "real"
TARGET = "sagemaker-cluster:abcd1234efgh_worker-group-1-i-0123456789abcdef0"
DOCUMENT = "HyperPodPerf-Collect"


def node_snapshot() -> bytes:
    """A collector container around a real nvidia-smi query (8 KiB: several 1024-byte chunks),
    with a multi-byte character so chunk boundaries can split a UTF-8 sequence."""
    gpu_query = (FIXTURES / "gpu-query" / "h100-80gb-hbm3_590.48.01_load_allfields.txt").read_text()
    text = render_container(
        [
            ("meta", "collector_version=1\nhostname=ip-10-1-2-3\nnote=température\n", 0),
            ("gpu-query", gpu_query, 0),
        ]
    )
    return text.encode("utf-8")


SNAPSHOT = node_snapshot()


@pytest.fixture
def agent() -> Iterator[FakeAgent]:
    with FakeAgent() as server:
        yield server


def make_client(ssm: FakeSsm, **overrides: float) -> SessionClient:
    options: dict[str, float] = {
        "connect_timeout": 2.0,
        "idle_timeout": 2.0,
        "total_timeout": 10.0,
        "close_grace": 0.5,
        "resend_after": 0.3,
    }
    options.update(overrides)
    return SessionClient(ssm, **options)  # type: ignore[arg-type]


def run_one(agent: FakeAgent, scenario: Scenario, **overrides: float) -> tuple[SessionResult, FakeSsm]:
    ssm = FakeSsm(agent, lambda _target: scenario)
    result = make_client(ssm, **overrides).run(TARGET, DOCUMENT, {"timeoutSeconds": ["30"]})
    return result, ssm


def test_happy_path_collects_stdout_stderr_exit_code_and_terminates(agent: FakeAgent) -> None:
    # Given an agent that prints a real snapshot, a line on stderr and exits 0
    scenario = Scenario(stdout=SNAPSHOT, stderr=b"lfs: not found\n", exit_code=0)

    # When the client runs the session
    result, ssm = run_one(agent, scenario)

    # Then the output is byte-identical and parses back into the same sections
    assert result.stdout.encode("utf-8") == SNAPSHOT
    assert result.stderr == "lfs: not found\n"
    assert result.exit_code == 0
    assert result.truncated is False
    parsed = parse_container(result.stdout)
    assert list(parsed.sections) == ["meta", "gpu-query"]
    assert parsed.meta["note"] == "température"
    # And StartSession got the target, document and parameters; the session was terminated
    assert ssm.started == [
        {"Target": TARGET, "DocumentName": DOCUMENT, "Parameters": {"timeoutSeconds": ["30"]}}
    ]
    assert ssm.terminated == [result.session_id]
    record = agent.record(result.session_id)
    assert record.ended == "completed"


def test_wire_details_match_the_reference_plugin(agent: FakeAgent) -> None:
    # Given a normal session
    result, _ = run_one(agent, Scenario(stdout=SNAPSHOT, exit_code=0))
    record = agent.record(result.session_id)

    # Then the first frame was the open-data-channel JSON with the StartSession token
    assert record.open_frame is not None
    assert record.open_frame["TokenValue"] == record.token
    assert record.open_frame["MessageSchemaVersion"] == "1.0"
    assert set(record.open_frame) == {
        "MessageSchemaVersion",
        "RequestId",
        "TokenValue",
        "ClientId",
        "ClientVersion",
    }
    # And the HandshakeResponse was input_stream_data sequence 0 reporting SessionType success
    assert record.handshake_response is not None
    assert record.handshake_response["ProcessedClientActions"] == [
        {"ActionType": "SessionType", "ActionStatus": 1}
    ]
    header = record.handshake_response_header
    assert header[sp.MESSAGE_TYPE_OFFSET : sp.MESSAGE_TYPE_OFFSET + 32].rstrip(b" ") == b"input_stream_data"
    assert int.from_bytes(header[sp.SEQUENCE_NUMBER_OFFSET : sp.SEQUENCE_NUMBER_OFFSET + 8], "big") == 0
    assert int.from_bytes(header[sp.PAYLOAD_TYPE_OFFSET : sp.PAYLOAD_TYPE_OFFSET + 4], "big") == 6
    # And every agent message (handshake 0,1; 9 stdout chunks; exit code) was acknowledged once,
    # with the message id the agent sent and the reference's ack flags (3)
    chunks = -(-len(SNAPSHOT) // sp.STREAM_CHUNK_SIZE)
    assert sorted(record.acked) == list(range(2 + chunks + 1))
    assert record.ack_message_ids == record.sent_ids
    assert record.ack_flags == {3}


def test_out_of_order_messages_are_buffered_and_reassembled(agent: FakeAgent) -> None:
    # Given an agent that swaps neighbouring chunks and sends the first chunk last
    scenario = Scenario(stdout=SNAPSHOT, stderr=b"warn\n", exit_code=3, out_of_order=True)

    # When the client runs the session
    result, ssm = run_one(agent, scenario)

    # Then the output is still in order and complete, the exit code read, each message acked once
    assert result.stdout.encode("utf-8") == SNAPSHOT
    assert result.stderr == "warn\n"
    assert result.exit_code == 3
    record = agent.record(result.session_id)
    assert sorted(record.acked) == sorted(set(record.acked))
    assert record.acked != sorted(record.acked)  # early messages were acknowledged on arrival
    assert ssm.terminated == [result.session_id]


def test_duplicates_are_not_repeated_and_the_agent_does_not_wait_for_reacks(agent: FakeAgent) -> None:
    # Given a channel that delivers every output message twice
    scenario = Scenario(stdout=SNAPSHOT, exit_code=0, duplicate=True)

    # When the client runs the session
    result, _ = run_one(agent, scenario)

    # Then the output appears once and the exit code is read
    assert result.stdout.encode("utf-8") == SNAPSHOT
    assert result.exit_code == 0
    # And the agent ended normally: every message acknowledged at least once (re-acks of
    # duplicates may still be in flight when it closes; it does not wait for them)
    record = agent.record(result.session_id)
    assert record.ended == "completed"
    assert set(record.acked) == set(record.sent_ids)


def test_bad_digest_is_dropped_unacknowledged_and_the_resend_is_used(agent: FakeAgent) -> None:
    # Given an agent whose first output chunk arrives once with a corrupt SHA-256 digest
    scenario = Scenario(stdout=SNAPSHOT, exit_code=0, bad_digest_once=True, resend_after=0.2)

    # When the client runs the session
    result, _ = run_one(agent, scenario)

    # Then the corrupt copy was not acknowledged (the agent had to resend it) and the output is exact
    record = agent.record(result.session_id)
    assert 2 in record.resent
    assert record.acked.count(2) == 1
    assert result.stdout.encode("utf-8") == SNAPSHOT


def test_persistently_bad_digest_ends_as_a_gap_when_the_agent_gives_up(agent: FakeAgent) -> None:
    # Given an agent whose first output message and every resend of it carry a corrupt digest;
    # like amazon-ssm-agent it closes the channel after waiting (bounded) for acknowledgements
    scenario = Scenario(
        stdout=SNAPSHOT, exit_code=0, bad_digest_always=True, resend_after=0.05, close_wait=0.5
    )
    ssm = FakeSsm(agent, lambda _target: scenario)
    client = SessionClient(ssm, idle_timeout=5, total_timeout=10, connect_timeout=2)

    # When the client runs the session, then no corrupt copy was fatal by itself, but the channel
    # closed with message #2 missing: a protocol error naming the gap and the digest
    with pytest.raises(SessionProtocolError, match=r"message #2 never received .*digest") as caught:
        client.run(TARGET, DOCUMENT)
    record = agent.record(ssm.terminated[0])
    assert record.resent.count(2) >= 3  # the client kept going through several corrupt resends
    assert 2 not in record.acked
    assert record.ended == "closed with 1 unacknowledged"
    # And the output after the gap was not passed off as complete
    assert caught.value.partial_output is None


def test_stalled_stream_times_out_on_idle_and_terminates(agent: FakeAgent) -> None:
    # Given an agent that goes silent after three chunks
    scenario = Scenario(stdout=SNAPSHOT, exit_code=0, stall_after_chunks=3)
    ssm = FakeSsm(agent, lambda _target: scenario)
    started = time.monotonic()

    # When the client runs with a 1 s idle limit
    with pytest.raises(SessionTimeout, match=r"no data for 1\.0s"):
        make_client(ssm, idle_timeout=1.0).run(TARGET, DOCUMENT)

    # Then it failed promptly and terminated the session
    assert time.monotonic() - started < 5
    assert len(ssm.terminated) == 1


def test_total_timeout_bounds_a_slow_session(agent: FakeAgent) -> None:
    # Given an agent that waits 3 s after the handshake before it streams
    scenario = Scenario(stdout=SNAPSHOT, exit_code=0, start_delay=3.0)
    ssm = FakeSsm(agent, lambda _target: scenario)

    # When the total limit is 1 s, then the session fails with SessionTimeout and is terminated
    with pytest.raises(SessionTimeout, match="total limit"):
        make_client(ssm, idle_timeout=5.0, total_timeout=1.0).run(TARGET, DOCUMENT)
    assert len(ssm.terminated) == 1


def test_abrupt_close_is_a_protocol_error(agent: FakeAgent) -> None:
    # Given an agent whose socket drops after two chunks (no close frame, no channel_closed)
    scenario = Scenario(stdout=SNAPSHOT, exit_code=0, abrupt_close_after_chunks=2)
    ssm = FakeSsm(agent, lambda _target: scenario)

    # When the client runs, then it reports the channel closed before the command finished
    with pytest.raises(SessionProtocolError, match="closed before the command finished"):
        make_client(ssm).run(TARGET, DOCUMENT)
    assert len(ssm.terminated) == 1


def test_huge_output_is_truncated_at_the_cap_and_still_completes(agent: FakeAgent) -> None:
    # Given an agent that prints 3 MiB
    huge = (b"0123456789abcdef" * 64 + b"\n") * 3000
    scenario = Scenario(stdout=huge, exit_code=0)

    # When the client caps output at 256 KiB
    result, ssm = run_one(agent, scenario, max_output_bytes=256 * 1024, total_timeout=20)

    # Then it keeps exactly the first 256 KiB, flags truncation and still reads the exit code
    assert result.truncated is True
    assert result.stdout.encode() == huge[: 256 * 1024]
    assert result.exit_code == 0
    # And it kept acknowledging (the agent finished normally)
    assert agent.record(result.session_id).ended == "completed"
    assert ssm.terminated == [result.session_id]


def test_kms_encryption_request_fails_clearly(agent: FakeAgent) -> None:
    # Given an agent whose handshake asks for KMS encryption (account preferences)
    scenario = Scenario(stdout=SNAPSHOT, exit_code=0, request_kms=True)
    ssm = FakeSsm(agent, lambda _target: scenario)

    # When the client runs, then it fails with a protocol error that names KMS, and terminates
    with pytest.raises(SessionProtocolError, match="KMS encryption"):
        make_client(ssm).run(TARGET, DOCUMENT)
    assert len(ssm.terminated) == 1


def test_channel_closed_without_exit_code_returns_output_with_unknown_exit(agent: FakeAgent) -> None:
    # Given a document without separateOutputStream: no ExitCode message, only channel_closed
    scenario = Scenario(stdout=SNAPSHOT, separate_output_stream=False)

    # When the client runs
    result, _ = run_one(agent, scenario)

    # Then the output is complete and the exit code is unknown rather than invented
    assert result.stdout.encode("utf-8") == SNAPSHOT
    assert result.exit_code is None


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("TargetNotConnected", TargetNotConnected),
        ("ThrottlingException", Throttled),
        ("AccessDeniedException", AccessDenied),
    ],
)
def test_start_session_errors_become_typed_and_nothing_is_terminated(
    agent: FakeAgent, code: str, expected: type[Exception]
) -> None:
    # Given StartSession failing with an AWS error code
    ssm = FakeSsm(agent, lambda _target: Scenario(), start_error=lambda _target: client_error(code))

    # When the client runs, then the error is the named adapter exception
    with pytest.raises(expected) as caught:
        make_client(ssm).run(TARGET, DOCUMENT)
    assert caught.value.code == code  # type: ignore[attr-defined]
    # And no session existed to terminate
    assert ssm.terminated == []


def test_upgrade_is_signed_when_a_signer_is_given(agent: FakeAgent) -> None:
    # Given a signer (as built from botocore credentials) returning SigV4 headers
    seen: list[str] = []

    def signer(url: str) -> dict[str, str]:
        seen.append(url)
        return {"Authorization": "AWS4-HMAC-SHA256 Credential=test", "X-Amz-Date": "20250101T000000Z"}

    ssm = FakeSsm(agent, lambda _target: Scenario(stdout=b"ok\n", exit_code=0))

    # When the client runs
    result = SessionClient(ssm, signer=signer, close_grace=0.2).run(TARGET, DOCUMENT)

    # Then the upgrade request carried the signer's headers for that stream URL
    record = agent.record(result.session_id)
    assert record.request_headers["Authorization"].startswith("AWS4-HMAC-SHA256")
    assert record.request_headers["X-Amz-Date"] == "20250101T000000Z"
    assert seen == [f"ws://127.0.0.1:{agent.port}{record.request_path}"]
    assert result.stdout == "ok\n"


def test_sigv4_signer_signs_for_ssmmessages_in_the_url_region() -> None:
    # Given static botocore credentials
    from botocore.credentials import Credentials

    from hyperpod_perf.aws.session import sigv4_upgrade_signer

    signer = sigv4_upgrade_signer(Credentials("AKIDEXAMPLE", "secret", "token"))

    # When a stream URL in eu-west-2 is signed
    headers = signer("wss://ssmmessages.eu-west-2.amazonaws.com/v1/data-channel/s-1?role=publish_subscribe")

    # Then the credential scope names the URL's region and the ssmmessages service
    assert "/eu-west-2/ssmmessages/aws4_request" in headers["Authorization"]
    assert headers["X-Amz-Security-Token"] == "token"
    assert "X-Amz-Date" in headers


# --- parity with AWS's own client (session-manager-plugin) and agent (amazon-ssm-agent) ---------


def test_upgrade_is_unsigned_by_default_even_with_credentials(agent: FakeAgent) -> None:
    # Given an ssm client that carries botocore credentials (as a real boto3 client does)
    from botocore.credentials import Credentials

    ssm = FakeSsm(agent, lambda _target: Scenario(stdout=b"ok\n", exit_code=0))
    credentials = Credentials("AKIDEXAMPLE", "secret", "tok")
    ssm._request_signer = SimpleNamespace(_credentials=credentials)  # type: ignore[attr-defined]
    ssm.meta = SimpleNamespace(region_name="us-east-1")  # type: ignore[attr-defined]

    # When the client runs with its defaults, and once more asked to sign
    unsigned = SessionClient(ssm, close_grace=0.2).run(TARGET, DOCUMENT)
    signed = SessionClient(ssm, close_grace=0.2, sign_upgrade=True).run(TARGET, DOCUMENT)

    # Then the default upgrade carried no credentials — the token in the first frame is the
    # credential, as the plugin's websocketutil.OpenConnection dials with no headers
    headers = {k.lower() for k in agent.record(unsigned.session_id).request_headers}
    assert "authorization" not in headers
    assert not {h for h in headers if h.startswith("x-amz-")}
    assert (
        agent.record(unsigned.session_id).open_frame["TokenValue"] == agent.record(unsigned.session_id).token
    )  # type: ignore[index]
    # And signing is still there when asked for
    assert agent.record(signed.session_id).request_headers["Authorization"].startswith("AWS4-HMAC-SHA256")
    assert unsigned.stdout == signed.stdout == "ok\n"


def test_undecodable_frames_are_dropped_and_the_session_completes(
    agent: FakeAgent, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a channel that also carries frames no client can decode: a truncated header, a text
    # frame, a length field that disagrees with the frame, an acknowledge that is not JSON
    good = sp.encode(sp.ClientMessage(sp.MessageType.OUTPUT_STREAM_DATA, 99, sp.PayloadType.OUTPUT, b"x"))
    bad_ack = sp.encode(sp.ClientMessage(sp.MessageType.ACKNOWLEDGE, 0, 0, b"not json", flags=3))
    junk = (b"\x00\x00\x00\x74short", "not a binary frame", good[:-1], bad_ack)
    scenario = Scenario(stdout=SNAPSHOT, stderr=b"warn\n", exit_code=0, undecodable_frames=junk)

    # When the client runs the session
    with caplog.at_level("WARNING", logger="hyperpod_perf.aws.session"):
        result, _ = run_one(agent, scenario)

    # Then none of them ended it: the output is exact and the exit code read
    assert result.stdout.encode("utf-8") == SNAPSHOT
    assert result.stderr == "warn\n"
    assert result.exit_code == 0
    # And each was logged as dropped
    drops = [r.getMessage() for r in caplog.records if "dropped a data-channel frame" in r.getMessage()]
    assert len(drops) == len(junk)
    assert any("shorter than the 120-byte header" in d for d in drops)
    assert any("payload length field says 1" in d for d in drops)
    assert any("acknowledge payload is not JSON" in d for d in drops)


def test_client_version_is_numeric_and_new_enough_for_no_upgrade_notice(agent: FakeAgent) -> None:
    # Given a separateOutputStream session, as the project's Session document asks for
    from hyperpod_perf.collect.session_document import build_session_document

    document = build_session_document("true")
    assert document["sessionType"] == "NonInteractiveCommands"
    assert document["properties"]["linux"]["separateOutputStream"] is True
    result, _ = run_one(agent, Scenario(stdout=b"ok\n", exit_code=0, separate_output_stream=True))
    record = agent.record(result.session_id)

    # Then both the open frame and the HandshakeResponse carry the plugin-style version
    assert record.open_frame is not None and record.handshake_response is not None
    assert record.open_frame["ClientVersion"] == record.handshake_response["ClientVersion"] == "1.2.677.0"
    # And the agent's HandshakeComplete has no upgrade notice for it
    assert record.handshake_complete is not None
    assert record.handshake_complete["CustomerMessage"] == ""


@pytest.mark.parametrize(
    ("client_version", "notice"),
    [("1.2.0.0-hyperpod-perf", True), ("1.2.295", True), ("1.2.295.0", False), ("1.2.312.0", False)],
)
def test_old_client_versions_get_the_agents_upgrade_notice(
    agent: FakeAgent, caplog: pytest.LogCaptureFixture, client_version: str, notice: bool
) -> None:
    # Given a client announcing a version at or around the agent's 1.2.295 threshold
    ssm = FakeSsm(agent, lambda _target: Scenario(stdout=b"ok\n", exit_code=0))
    client = make_client(ssm)
    client.client_version = client_version

    # When it runs a separateOutputStream session
    with caplog.at_level("WARNING", logger="hyperpod_perf.aws.session"):
        result = client.run(TARGET, DOCUMENT)

    # Then the agent's HandshakeComplete carries the upgrade notice exactly for versions <= 1.2.295
    message = agent.record(result.session_id).handshake_complete["CustomerMessage"]  # type: ignore[index]
    assert ("minimum required version 1.2.312.0" in message) is notice
    # And the client logs it (the plugin prints it) and still completes
    assert any("minimum required version" in r.getMessage() for r in caplog.records) is notice
    assert result.stdout == "ok\n"


def test_agent_sets_syn_on_sequence_zero_and_sends_null_properties(agent: FakeAgent) -> None:
    # Given a normal session
    result, _ = run_one(agent, Scenario(stdout=SNAPSHOT, exit_code=0))
    record = agent.record(result.session_id)

    # Then the agent flagged its first message SYN and no other
    assert record.sent_flags[0] == sp.FLAG_SYN
    assert {flags for sequence, flags in record.sent_flags.items() if sequence} == {0}
    # And its SessionType action carried NonInteractiveCommands with Properties null, as the
    # agent's SingleCommand plugin returns no parameters
    assert record.handshake_request is not None
    assert record.handshake_request["RequestedClientActions"] == [
        {
            "ActionType": "SessionType",
            "ActionParameters": {"SessionType": "NonInteractiveCommands", "Properties": None},
        }
    ]
    assert result.stdout.encode() == SNAPSHOT


def test_multibyte_output_is_never_cut_inside_a_character(agent: FakeAgent) -> None:
    # Given output of 3-byte and 4-byte characters that straddle every 1024-byte read boundary
    text = ("é" + "✓" * 400 + "\U0001f600" * 100 + "\n") * 6
    data = text.encode()
    result, _ = run_one(agent, Scenario(stdout=data, exit_code=0))
    record = agent.record(result.session_id)

    # Then every output payload is whole UTF-8 and at most the 1024-byte read plus 3 held back
    outputs = [payload for _, kind, payload in record.sent if kind == sp.PayloadType.OUTPUT]
    assert len(outputs) >= len(data) // 1027
    for payload in outputs:
        payload.decode("utf-8")  # raises if a character was cut
        assert len(payload) <= sp.STREAM_CHUNK_SIZE + 3
    assert max(len(p) for p in outputs) > sp.STREAM_CHUNK_SIZE  # held-back bytes did join a read
    # And the client reassembled the text exactly
    assert result.stdout == text


def test_stdout_and_stderr_interleave_as_the_process_wrote_them(agent: FakeAgent) -> None:
    # Given a process that alternates between stdout and stderr
    out, err = sp.PayloadType.OUTPUT, sp.PayloadType.STDERR
    writes = (
        (out, b"step 1\n"),
        (err, b"warn 1\n"),
        (out, b"step 2\n"),
        (err, b"warn 2\n"),
        (out, b"done\n"),
    )
    result, _ = run_one(agent, Scenario(writes=writes, exit_code=4))
    record = agent.record(result.session_id)

    # Then the agent sent them in that order, then the exit code
    assert [kind for _, kind, _ in record.sent[2:]] == [out, err, out, err, out, sp.PayloadType.EXIT_CODE]
    # And the client split them back into the two streams
    assert result.stdout == "step 1\nstep 2\ndone\n"
    assert result.stderr == "warn 1\nwarn 2\n"
    assert result.exit_code == 4


def test_publication_pause_and_start_are_ignored(agent: FakeAgent) -> None:
    # Given a channel where the service reports the agent's side away for 0.3 s, then back
    scenario = Scenario(stdout=SNAPSHOT, exit_code=0, publication_pause=0.3)

    # When the client runs the session
    result, _ = run_one(agent, scenario)

    # Then both notices were sent, neither disturbed the session
    record = agent.record(result.session_id)
    assert record.publication == ["pause_publication", "start_publication"]
    assert result.stdout.encode() == SNAPSHOT
    assert record.ended == "completed"


# --- the sim against the plugin's own rules -----------------------------------------------------


@pytest.mark.parametrize(
    "scenario",
    [
        Scenario(stdout=SNAPSHOT, stderr=b"warn\n", exit_code=0, duplicate=True, close_wait=5.0),
        Scenario(stdout=SNAPSHOT, exit_code=0, out_of_order=True),
        Scenario(stdout=SNAPSHOT, exit_code=0, bad_digest_once=True, resend_after=0.1),
        Scenario(stdout=SNAPSHOT, exit_code=0, publication_pause=0.2),
    ],
    ids=["duplicates", "out-of-order", "bad-digest-once", "publication-pause"],
)
def test_a_client_following_the_plugins_rules_finishes_every_scenario(
    agent: FakeAgent, scenario: Scenario
) -> None:
    # Given the sim and a client that never re-acknowledges a message it already processed
    from plugin_rules_client import run_plugin_rules

    session_id, token, url = agent.register(scenario)

    # When it runs the session
    run = run_plugin_rules(url, token)

    # Then the agent ended normally: every message acknowledged once was enough (an agent waiting
    # for re-acknowledgements of duplicates would have run out its close wait instead)
    record = agent.record(session_id)
    assert record.ended == "completed"
    # And the plugin-style client got everything once, acknowledging each message once
    assert bytes(run.stdout) == SNAPSHOT
    assert run.exit_payload == b"EXIT_CODE: 0"
    assert sorted(run.acks_sent) == sorted(record.sent_ids)
    if scenario.duplicate:
        assert run.ignored_duplicates  # duplicates arrived and were not acknowledged again


def test_the_agent_acknowledges_input_after_reading_it_and_reacknowledges_a_duplicate(
    agent: FakeAgent,
) -> None:
    # Given a raw connection that answers the HandshakeRequest twice with the same message
    from websockets.sync.client import connect

    session_id, token, url = agent.register(Scenario(stdout=b"ok\n", exit_code=0))
    with connect(url, compression=None, ping_interval=None) as ws:
        ws.send(sp.open_data_channel_frame(token, client_id="c", request_id="r", client_version="1.2.677.0"))
        request = sp.decode(ws.recv(timeout=5))
        response = sp.encode(
            sp.ClientMessage(
                sp.MessageType.INPUT_STREAM_DATA,
                0,
                sp.PayloadType.HANDSHAKE_RESPONSE,
                sp.handshake_response_payload(sp.parse_handshake_request(request.payload), "1.2.677.0"),
            )
        )
        ws.send(response)
        ws.send(response)

        # When the agent answers
        acks = []
        while len(acks) < 2:
            message = sp.decode(ws.recv(timeout=5))
            if message.message_type == sp.MessageType.ACKNOWLEDGE:
                acks.append(sp.parse_acknowledgement(message.payload))

    # Then both copies were acknowledged (handleStreamDataMessage re-acks what it already read),
    # each as input_stream_data #0, and the response was read once
    assert [(a.message_type, a.sequence_number) for a in acks] == [("input_stream_data", 0)] * 2
    record = agent.record(session_id)
    assert record.input_acks[:2] == [0, 0]
    assert record.handshake_response is not None
    assert record.handshake_response["ClientVersion"] == "1.2.677.0"
