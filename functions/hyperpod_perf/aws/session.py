"""A Session Manager data-channel client: run one NonInteractiveCommands session, return its output.

Why not the session-manager-plugin binary: inside Lambda there is none, and HyperPod nodes are
reachable only through ``ssm:StartSession`` (see the design's "Reaching nodes"). So this module
speaks the data channel itself, over a well-kept WebSocket library (``websockets``' sync client):

    StartSession -> WebSocket to StreamUrl (an unsigned upgrade, as the session-manager-plugin
    dials it) -> text frame with the token -> binary messages (``session_protocol``): acknowledge
    every output_stream_data (re-acknowledge duplicates, buffer those that arrive early), answer
    the HandshakeRequest, collect stdout (1) / stderr (11) until ExitCode (12) and channel_closed
    -> TerminateSession, always.

Where this follows the reference client (aws/session-manager-plugin) and why:

- The upgrade carries no credentials: ``websocketutil.OpenConnection`` dials with no headers; the
  StartSession token in the first frame (``DataChannel.FinalizeDataChannelHandshake``) is what
  authorizes the channel. SigV4-signing the upgrade stays available (``sign_upgrade=True`` or a
  ``signer``) in case a deployment needs it.
- A frame that cannot be decoded, or fails the digest/date checks, is logged and dropped, never
  fatal: the plugin's OnMessage callback (``sessionhandler.go`` ``OpenDataChannel``) ignores the
  error ``DataChannel.OutputMessageHandler`` returns. Dropped unacknowledged, the message comes
  again from the agent's resend loop. What bounds a channel that only ever delivers garbage is the
  idle limit, which only usable messages reset.
- One deliberate difference: a duplicate of a message already processed is acknowledged again
  (the plugin's ``HandleOutputMessage`` ignores it). The agent removes a message from its resend
  buffer on the first acknowledgement and ignores later ones (``ProcessAcknowledgedMessage``), so
  the extra ack is harmless, and it saves a resend round when an acknowledgement was lost.

Every limit is hard: connect, idle (no usable message), total; output is capped in bytes.
Failures are the named exceptions of ``domain.errors``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, WebSocketException
from websockets.sync.client import connect

from hyperpod_perf.aws import session_protocol as sp
from hyperpod_perf.aws.errors import translate_client_error
from hyperpod_perf.domain.errors import (
    AccessDenied,
    AwsAdapterError,
    SessionProtocolError,
    SessionTimeout,
    Throttled,
    TransientError,
)

log = logging.getLogger(__name__)

#: The client version, in the plugin's numeric form, sent in the open-data-channel frame and the
#: HandshakeResponse. 1.2.677.0 is the plugin release that started sending its version in the
#: open-data-channel frame (its RELEASENOTES.md), as this client does. The agent's checks of the
#: client version, and why this one passes all that matter here:
#:
#: - session/datachannel/datachannel.go ``buildHandshakeCompletePayload``: for a
#:   ``separateOutputStream`` document (this project's: stdout, stderr and ExitCode apart) a client
#:   comparing <= 1.2.295 (``clientVersionWithoutOutputSeparation``, compared by
#:   ``versionutil.Compare``) gets an upgrade notice asking for 1.2.312.0. 1.2.677.0 compares newer.
#:   (The old "1.2.0.0-hyperpod-perf" compared older: it is not a dotted triple, so its parts are
#:   compared one by one and 0 < 295.)
#: - session/plugins/port/port.go: multiplexing from 1.1.70, smux keep-alive off after 1.2.331.0 —
#:   Port sessions only; this client runs NonInteractiveCommands and never opens one.
#: No other check of the client version exists in the agent's session code.
CLIENT_VERSION = "1.2.677.0"

#: Signs the WebSocket upgrade: given the stream URL, returns the headers to add.
UpgradeSigner = Callable[[str], Mapping[str, str]]


class SsmSessionApi(Protocol):
    """The two boto3 ``ssm`` client methods this module calls (injectable for tests)."""

    def start_session(self, **kwargs: Any) -> Mapping[str, Any]: ...

    def terminate_session(self, **kwargs: Any) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class SessionResult:
    stdout: str
    stderr: str
    exit_code: int | None  # None when the channel closed without an ExitCode message
    truncated: bool
    session_id: str


def sigv4_upgrade_signer(credentials: Any, *, fallback_region: str | None = None) -> UpgradeSigner:
    """A signer for the data-channel upgrade GET with botocore's SigV4 (service ``ssmmessages``).

    ``credentials`` is a botocore Credentials object (``boto3.Session().get_credentials()``).
    The region is read from the stream URL host (``ssmmessages.<region>.amazonaws.com``), else
    ``fallback_region`` (the ssm client's region).
    """
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    def sign(url: str) -> Mapping[str, str]:
        parts = urlsplit(url)
        signing_region = _region_from_host(parts.hostname or "") or fallback_region
        if not signing_region:
            raise SessionProtocolError(
                f"cannot tell the signing region of stream URL host {parts.hostname!r}"
            )
        https_url = parts._replace(scheme="https").geturl()
        request = AWSRequest(method="GET", url=https_url)
        SigV4Auth(credentials.get_frozen_credentials(), "ssmmessages", signing_region).add_auth(request)
        return {k: v for k, v in request.headers.items() if k.lower() != "host"}

    return sign


def _region_from_host(host: str) -> str | None:
    labels = host.split(".")
    if len(labels) >= 3 and labels[0].startswith("ssmmessages"):
        return labels[1]
    return None


def _credentials_of(ssm_client: Any) -> Any:
    """The credentials a botocore client signs with, if it is one (fakes have none).

    botocore exposes no public accessor on a client; its request signer holds them."""
    signer = getattr(ssm_client, "_request_signer", None)
    return getattr(signer, "_credentials", None)


@dataclass
class _Outgoing:
    frame: bytes
    sent_at: float
    resends: int = 0


@dataclass
class _Channel:
    """Per-session state. One instance per ``run`` so a SessionClient can serve many threads."""

    max_output_bytes: int
    expected_sequence: int = 0
    early: dict[int, sp.ClientMessage] = field(default_factory=dict)
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    exit_code: int | None = None
    exit_seen: bool = False
    closed: bool = False
    closed_output: str = ""
    handshake_complete: bool = False
    next_out_sequence: int = 0
    unacked: dict[int, _Outgoing] = field(default_factory=dict)
    dropped: int = 0
    last_drop: str = ""
    customer_message: str = ""

    def drop(self, context: str, reason: str) -> None:
        self.dropped += 1
        self.last_drop = reason
        log.warning("%s: dropped a data-channel frame: %s", context, reason)

    def drops_note(self) -> str:
        return f"; {self.dropped} frames dropped, last: {self.last_drop}" if self.dropped else ""

    def keep(self, buffer: bytearray, chunk: bytes) -> None:
        room = self.max_output_bytes - len(self.stdout) - len(self.stderr)
        if len(chunk) > room:
            self.truncated = True
            chunk = chunk[: max(room, 0)]
        buffer.extend(chunk)


class SessionClient:
    """Runs one session per ``run`` call; safe to share between threads (no shared mutable state)."""

    def __init__(
        self,
        ssm_client: SsmSessionApi,
        *,
        connect_timeout: float = 10.0,
        idle_timeout: float = 60.0,
        total_timeout: float = 300.0,
        max_output_bytes: int = 4 * 1024 * 1024,
        signer: UpgradeSigner | None = None,
        sign_upgrade: bool = False,
        close_grace: float = 2.0,
        resend_after: float = 1.0,
        max_resends: int = 10,
        early_buffer_capacity: int = 10_000,
        client_version: str = CLIENT_VERSION,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``sign_upgrade``: SigV4-sign the WebSocket upgrade with the ssm client's credentials
        (off by default: the reference client sends none). ``signer`` overrides how."""
        self._ssm = ssm_client
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.total_timeout = total_timeout
        self.max_output_bytes = max_output_bytes
        self.close_grace = close_grace
        self.resend_after = resend_after
        self.max_resends = max_resends
        self.early_buffer_capacity = early_buffer_capacity
        self.client_version = client_version
        self._clock = clock
        if signer is None and sign_upgrade:
            credentials = _credentials_of(ssm_client)
            if credentials is not None:
                region = getattr(getattr(ssm_client, "meta", None), "region_name", None)
                signer = sigv4_upgrade_signer(credentials, fallback_region=region)
        self._signer = signer

    # --- public ---------------------------------------------------------------------------------

    def run(
        self, target: str, document_name: str, parameters: Mapping[str, list[str]] | None = None
    ) -> SessionResult:
        """Start a session on ``target`` with ``document_name`` and return what it printed."""
        started = self._clock()
        response = self._start_session(target, document_name, parameters)
        session_id = str(response.get("SessionId", ""))
        try:
            stream_url = response.get("StreamUrl")
            token = response.get("TokenValue")
            if not stream_url or not token:
                raise SessionProtocolError("StartSession returned no StreamUrl/TokenValue", context=target)
            return self._stream(str(stream_url), str(token), session_id, target, started)
        finally:
            self._terminate(session_id)

    # --- AWS calls ------------------------------------------------------------------------------

    def _start_session(
        self, target: str, document_name: str, parameters: Mapping[str, list[str]] | None
    ) -> Mapping[str, Any]:
        kwargs: dict[str, Any] = {"Target": target, "DocumentName": document_name}
        if parameters:
            kwargs["Parameters"] = {k: list(v) for k, v in parameters.items()}
        try:
            return self._ssm.start_session(**kwargs)
        except AwsAdapterError:
            raise
        except Exception as exc:
            raise translate_client_error(exc, f"ssm:StartSession {target}") from exc

    def _terminate(self, session_id: str) -> None:
        if not session_id:
            return
        try:
            self._ssm.terminate_session(SessionId=session_id)
        except Exception as exc:  # terminating is best effort; the result stands
            log.warning("TerminateSession %s failed: %s", session_id, exc)

    # --- the data channel -----------------------------------------------------------------------

    def _stream(self, url: str, token: str, session_id: str, target: str, started: float) -> SessionResult:
        headers = dict(self._signer(url)) if self._signer is not None else None
        context = f"session {session_id} ({target})"
        try:
            ws = connect(
                url,
                additional_headers=headers,
                open_timeout=self.connect_timeout,
                close_timeout=1.0,
                compression=None,
                ping_interval=None,
                max_size=2 * 1024 * 1024,
                user_agent_header=f"hyperpod-perf/{self.client_version}",
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            message = f"data channel upgrade refused with HTTP {status}"
            if status in (401, 403):
                raise AccessDenied(message, context=context) from exc
            if status == 429:
                raise Throttled(message, context=context) from exc
            if status >= 500:
                raise TransientError(message, context=context) from exc
            raise SessionProtocolError(message, context=context) from exc
        except TimeoutError as exc:
            raise SessionTimeout(
                f"data channel not open after {self.connect_timeout}s", context=context
            ) from exc
        except InvalidHandshake as exc:
            raise SessionProtocolError(f"data channel upgrade failed: {exc}", context=context) from exc
        except OSError as exc:
            raise TransientError(f"cannot reach the data channel: {exc}", context=context) from exc

        channel = _Channel(max_output_bytes=self.max_output_bytes)
        try:
            return self._read_channel(ws, channel, token, session_id, context, started)
        except AwsAdapterError as exc:
            if channel.stdout:
                exc.partial_output = channel.stdout.decode("utf-8", errors="replace")
            raise

    def _read_channel(
        self, ws: Any, channel: _Channel, token: str, session_id: str, context: str, started: float
    ) -> SessionResult:
        try:
            with ws:
                ws.send(
                    sp.open_data_channel_frame(
                        token,
                        client_id=str(uuid.uuid4()),
                        request_id=str(uuid.uuid4()),
                        client_version=self.client_version,
                    )
                )
                self._pump(ws, channel, context, started)
        except ConnectionClosed as exc:
            if not (channel.closed or channel.exit_seen):
                raise SessionProtocolError(
                    f"data channel closed before the command finished ({exc})", context=context
                ) from exc
        except WebSocketException as exc:
            raise SessionProtocolError(f"WebSocket error: {exc}", context=context) from exc
        except OSError as exc:
            if not (channel.closed or channel.exit_seen):
                raise TransientError(f"data channel connection failed: {exc}", context=context) from exc
        if channel.early and not channel.exit_seen:
            raise SessionProtocolError(
                f"data channel closed with message #{channel.expected_sequence} never received "
                f"({len(channel.early)} later messages held){channel.drops_note()}",
                context=context,
            )
        return SessionResult(
            stdout=channel.stdout.decode("utf-8", errors="replace"),
            stderr=channel.stderr.decode("utf-8", errors="replace"),
            exit_code=channel.exit_code,
            truncated=channel.truncated,
            session_id=session_id,
        )

    def _pump(self, ws: Any, channel: _Channel, context: str, started: float) -> None:
        last_usable = self._clock()
        exit_at: float | None = None
        while not channel.closed:
            now = self._clock()
            if exit_at is not None and now - exit_at >= self.close_grace:
                return  # exit code in hand; channel_closed is a courtesy we need not wait for
            total_left = self.total_timeout - (now - started)
            if total_left <= 0:
                raise SessionTimeout(
                    f"session exceeded its total limit of {self.total_timeout}s", context=context
                )
            idle_left = self.idle_timeout - (now - last_usable)
            if idle_left <= 0:
                raise SessionTimeout(
                    f"no data for {self.idle_timeout}s (stalled stream){channel.drops_note()}",
                    context=context,
                )
            wait = min(total_left, idle_left, self.resend_after)
            if exit_at is not None:
                wait = min(wait, max(self.close_grace - (now - exit_at), 0.0))
            try:
                frame = ws.recv(timeout=max(wait, 0.001))
            except TimeoutError:
                self._resend_unacked(ws, channel, context)
                continue
            raw = frame.encode("utf-8") if isinstance(frame, str) else frame
            if self._handle(ws, channel, raw, context):
                last_usable = self._clock()
            if channel.exit_seen and exit_at is None:
                exit_at = self._clock()

    def _handle(self, ws: Any, channel: _Channel, raw: bytes, context: str) -> bool:
        """Handle one frame; False when it was dropped (it then does not count as progress).

        As the plugin's ``DataChannel.OutputMessageHandler`` (datachannel/streaming.go): decode,
        ``Validate``, then dispatch on the message type; an error at any step is logged and the
        frame dropped — unacknowledged, so the agent sends it again."""
        try:
            message = sp.decode(raw)
            sp.validate(message)
        except SessionProtocolError as exc:
            channel.drop(context, exc.message)
            return False
        kind = message.message_type
        if kind == sp.MessageType.OUTPUT_STREAM_DATA:
            self._on_stream_data(ws, channel, message, context)
        elif kind == sp.MessageType.ACKNOWLEDGE:
            try:
                ack = sp.parse_acknowledgement(message.payload)
            except SessionProtocolError as exc:
                channel.drop(context, exc.message)
                return False
            channel.unacked.pop(ack.sequence_number, None)
        elif kind == sp.MessageType.CHANNEL_CLOSED:
            closed = sp.parse_channel_closed(message.payload)
            channel.closed = True
            channel.closed_output = str(closed.get("Output") or "")
        elif kind in (sp.MessageType.START_PUBLICATION, sp.MessageType.PAUSE_PUBLICATION):
            # The service telling the sender to pause or resume while the agent's side is away.
            # This client only ever sends acknowledgements and one HandshakeResponse (resent until
            # acknowledged), so there is nothing to hold back: noted, and ignored like the plugin.
            log.debug("%s: %s", context, kind)
        else:
            log.warning("%s: ignoring a message of unknown type %r", context, kind)
        return True

    def _on_stream_data(self, ws: Any, channel: _Channel, message: sp.ClientMessage, context: str) -> None:
        sequence = message.sequence_number
        if sequence < channel.expected_sequence:
            ws.send(sp.encode(sp.acknowledgement_for(message)))  # duplicate: our ack was lost
            return
        if sequence > channel.expected_sequence:
            if sequence in channel.early or len(channel.early) < self.early_buffer_capacity:
                channel.early[sequence] = message
                ws.send(sp.encode(sp.acknowledgement_for(message)))
            return
        ws.send(sp.encode(sp.acknowledgement_for(message)))
        self._process(ws, channel, message, context)
        channel.expected_sequence += 1
        while channel.expected_sequence in channel.early:
            self._process(ws, channel, channel.early.pop(channel.expected_sequence), context)
            channel.expected_sequence += 1

    def _process(self, ws: Any, channel: _Channel, message: sp.ClientMessage, context: str) -> None:
        kind = message.payload_type
        if kind == sp.PayloadType.OUTPUT:
            channel.keep(channel.stdout, message.payload)
        elif kind in (sp.PayloadType.STDERR, sp.PayloadType.ERROR):
            channel.keep(channel.stderr, message.payload)
        elif kind == sp.PayloadType.EXIT_CODE:
            try:
                channel.exit_code = sp.parse_exit_code(message.payload)
            except SessionProtocolError as exc:  # keep the output; the exit code stays unknown
                log.warning("%s: %s", context, exc.message)
            channel.exit_seen = True
        elif kind == sp.PayloadType.HANDSHAKE_REQUEST:
            request = sp.parse_handshake_request(message.payload)
            if request.requests_encryption():
                raise SessionProtocolError(
                    "the agent requires KMS encryption of the session (account Session Manager "
                    "preferences); this client does not implement it — disable KMS encryption for "
                    "these sessions or use the session-manager-plugin",
                    context=context,
                )
            self._send_input(
                ws,
                channel,
                sp.PayloadType.HANDSHAKE_RESPONSE,
                sp.handshake_response_payload(request, self.client_version),
            )
        elif kind == sp.PayloadType.HANDSHAKE_COMPLETE:
            try:
                complete = sp.parse_handshake_complete(message.payload)
            except SessionProtocolError as exc:  # only informative: the session goes on
                log.warning("%s: %s", context, exc.message)
                complete = {}
            channel.customer_message = str(complete.get("CustomerMessage") or "")
            if channel.customer_message:  # the plugin prints it to the user; here it goes to the log
                log.warning("%s: the agent says: %s", context, channel.customer_message.strip())
            channel.handshake_complete = True
        elif kind == sp.PayloadType.ENC_CHALLENGE_REQUEST:
            raise SessionProtocolError(
                "the agent sent an encryption challenge; KMS encryption is not supported", context=context
            )
        # Size, Parameter, Flag and unknown payload types carry nothing a reader needs.

    def _send_input(self, ws: Any, channel: _Channel, payload_type: sp.PayloadType, payload: bytes) -> None:
        message = sp.ClientMessage(
            message_type=sp.MessageType.INPUT_STREAM_DATA,
            sequence_number=channel.next_out_sequence,
            payload_type=payload_type,
            payload=payload,
        )
        frame = sp.encode(message)
        ws.send(frame)
        channel.unacked[channel.next_out_sequence] = _Outgoing(frame, self._clock())
        channel.next_out_sequence += 1

    def _resend_unacked(self, ws: Any, channel: _Channel, context: str) -> None:
        now = self._clock()
        for sequence, outgoing in channel.unacked.items():
            if now - outgoing.sent_at < self.resend_after:
                continue
            if outgoing.resends >= self.max_resends:
                raise SessionProtocolError(
                    f"input message #{sequence} never acknowledged after {outgoing.resends} resends",
                    context=context,
                )
            ws.send(outgoing.frame)
            outgoing.sent_at = now
            outgoing.resends += 1


def describe_failure(exc: BaseException) -> str:
    """A one-line reason for a report: the error class and its message."""
    if isinstance(exc, AwsAdapterError):
        return f"{exc.reason}: {exc}"
    return f"{type(exc).__name__}: {exc}"


__all__ = [
    "CLIENT_VERSION",
    "SessionClient",
    "SessionResult",
    "SsmSessionApi",
    "UpgradeSigner",
    "describe_failure",
    "sigv4_upgrade_signer",
]
