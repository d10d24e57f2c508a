"""The wire layer: a small synchronous P4Runtime client over finsy's generated protos.

Why not finsy's asyncio ``Switch``: the controller, the ``innet`` CLI, the tests and the
benchmarks are short sequential programs (connect, push, write, read, leave); a blocking
client keeps every layer above plain functions that tests call directly.  Only the
StreamChannel needs a thread: it files every message it receives (arbitration updates,
PacketIns, DigestLists, idle-timeout notifications, stream errors) by kind, and
:meth:`P4RuntimeClient.next_message` takes them in arrival order, of any kind or of one.

Every ``grpc.RpcError`` is turned into a :mod:`innet.controller.errors` exception here
and nowhere else.  Every RPC carries a deadline, so an unreachable or stuck switch
becomes ``SwitchUnreachableError`` instead of a hang.

    with P4RuntimeClient("127.0.0.1:9559", device_id=1, election_id=1) as client:
        client.set_pipeline(p4info, device_config)
        client.write([update, ...])
        digest = client.next_message(5.0, "digest")

Entities by name (table entries, registers, ...) are built by
:mod:`innet.controller.entities` over a :class:`innet.controller.schema.P4Schema`.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

import grpc
from finsy.proto import U128, p4i, p4r, p4r_grpc

from innet.controller.errors import (
    ControllerError,
    NoPipelineError,
    NotPrimaryError,
    RpcError,
    SwitchUnreachableError,
    UnimplementedError,
    UpdateFailure,
    WriteError,
)
from innet.controller.reconnect import NO_RECONNECT, ReconnectPolicy
from innet.controller.tls import ClientTls
from innet.switch.p4rt_codec.device_configs import describe
from innet.switch.p4rt_codec.status import decode_write_errors, status_code_of, status_details

LOG = logging.getLogger(__name__)
CLOSE_SECONDS = 5.0
"""How long closing a channel may take before teardown goes on without it."""


def _close_within(channel: grpc.Channel, seconds: float) -> None:
    """Close ``channel``, giving up after ``seconds``: a call that Ctrl-C interrupted can leave
    grpc's close waiting forever, and a teardown must not hang on it (the process that ends
    takes the channel with it)."""
    closer = threading.Thread(target=channel.close, name="grpc-channel-close", daemon=True)
    closer.start()
    closer.join(seconds)
    if closer.is_alive():
        LOG.debug("gRPC channel close did not finish within %g s; going on without it", seconds)

MAX_MESSAGE_BYTES = 256 << 20
"""Receive limit of the client channel (large register reads)."""
MAX_WRITE_BYTES = 3 << 20
"""Updates per Write request are cut so a request stays under gRPC's default 4 MiB."""
MAX_WRITE_UPDATES = 128
"""And at most this many updates per request, so that a failed request's per-update
errors fit gRPC's metadata limits (innet-switch sends per-update errors for up to
``innet.switch.p4runtime.errors.MAX_DETAILED_UPDATES`` updates; BMv2 sends every message
in full). Loading 30k register cells takes the same time with 128 as with 20000."""
MAX_METADATA_BYTES = 1 << 20
"""Trailing metadata the client accepts (gRPC's default is 8 KiB): room for the full
per-update error messages a switch such as BMv2 sends for a failed batch."""
CLI_ROLE = "innet-cli"
"""The P4Runtime role of the ``innet`` commands' write sessions when no election id is given:
a role of its own, so that they are primary beside a testbed's controller (the default role,
election id 1) without taking that role's primary away; innet-switch gives every role full
pipeline access (an unset role config, as the spec says)."""
MAX_PENDING_MESSAGES = 100_000
"""StreamChannel messages of one kind kept until taken; beyond it the oldest are dropped."""

Describe = Callable[[p4r.Update], str]
T = TypeVar("T")


def fresh_election_id() -> int:
    """An election id above every earlier one of this clock: microseconds since the epoch.
    A switch keeps the highest id a role ever had and makes only an id at least that high
    primary, so a fixed id (2) works once; this one keeps working for each new session."""
    return time.time_ns() // 1000


def describe_update(update: p4r.Update) -> str:
    """A short description of an update's entity by kind and numeric ids (the schema
    layer passes a better one with names)."""
    entity = update.entity
    which = entity.WhichOneof("entity") or "empty entity"
    inner = getattr(entity, which, None) if which != "empty entity" else None
    for field in ("table_id", "register_id", "counter_id"):
        if inner is not None and hasattr(inner, field):
            return f"{which} {field} {getattr(inner, field)}"
    return which


def rpc_error(error: grpc.RpcError, what: str, address: str) -> ControllerError:
    """The controller exception for a failed RPC ``what`` on the switch at ``address``."""
    code: grpc.StatusCode = error.code()  # type: ignore[attr-defined]
    details: str = error.details() or ""  # type: ignore[attr-defined]
    text = f"{what} on switch {address}: {code.name}: {details}"
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return SwitchUnreachableError(f"{what}: switch {address} did not answer ({code.name}: {details})")
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return NotPrimaryError(text + " (this client is not the primary controller: another one holds a "
                               "higher election id; use an id above it, or another P4Runtime role, as the "
                               f"innet commands do without --election-id: role {CLI_ROLE!r})", code)
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return UnimplementedError(text, code)
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return NoPipelineError(text + " (push a pipeline first)", code)
    return RpcError(text, code)


class _StreamEnded(Exception):
    """The StreamChannel is over: ``error`` is why (None when the switch closed it)."""

    def __init__(self, error: grpc.RpcError | None) -> None:
        super().__init__("StreamChannel ended")
        self.error = error


class _Stream:
    """The StreamChannel: a request queue, and a reader thread that files each response
    by kind (``arbitration``, ``packet``, ``digest``, ...) with its arrival number."""

    def __init__(self, stub: p4r_grpc.P4RuntimeStub,
                 on_arbitration: Callable[[p4r.MasterArbitrationUpdate], None]) -> None:
        self._out: "queue.Queue[p4r.StreamMessageRequest | None]" = queue.Queue()
        self._on_arbitration = on_arbitration
        self._ready = threading.Condition()
        self._inbox: dict[str, deque[tuple[int, p4r.StreamMessageResponse]]] = {}
        self._received = 0
        self._ended: _StreamEnded | None = None
        self.dropped = 0
        """Messages dropped because MAX_PENDING_MESSAGES of their kind were not taken."""
        self._call = stub.StreamChannel(self._requests())
        self._thread = threading.Thread(target=self._read, name="p4rt-stream", daemon=True)
        self._thread.start()

    def _requests(self) -> Iterator[p4r.StreamMessageRequest]:
        while (item := self._out.get()) is not None:
            yield item

    def _read(self) -> None:
        ended = _StreamEnded(None)
        try:
            for response in self._call:
                kind = response.WhichOneof("update") or "unknown"
                if kind == "arbitration":
                    self._on_arbitration(response.arbitration)
                with self._ready:
                    pending = self._inbox.setdefault(kind, deque(maxlen=MAX_PENDING_MESSAGES))
                    if len(pending) == MAX_PENDING_MESSAGES:
                        self.dropped += 1
                        if self.dropped == 1:
                            LOG.warning("StreamChannel: %d %s messages not taken; dropping the oldest",
                                        MAX_PENDING_MESSAGES, kind)
                    pending.append((self._received, response))
                    self._received += 1
                    self._ready.notify_all()
        except grpc.RpcError as error:
            ended = _StreamEnded(error)
        with self._ready:
            self._ended = ended
            self._ready.notify_all()

    def take(self, kind: str | None, timeout: float) -> p4r.StreamMessageResponse | None:
        """The oldest message (of ``kind`` when given), None after ``timeout`` seconds;
        raises _StreamEnded when the stream is over and nothing is left to take."""
        deadline = time.monotonic() + timeout
        with self._ready:
            while True:
                oldest: deque[tuple[int, p4r.StreamMessageResponse]] | None = None
                for name, pending in self._inbox.items():
                    if not pending or kind not in (None, name):
                        continue
                    if oldest is None or pending[0][0] < oldest[0][0]:
                        oldest = pending
                if oldest is not None:
                    return oldest.popleft()[1]
                if self._ended is not None:
                    raise self._ended
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._ready.wait(remaining)

    def send(self, request: p4r.StreamMessageRequest) -> None:
        self._out.put(request)

    @property
    def ended(self) -> bool:
        """The switch ended the stream or it failed (the switch went away)."""
        with self._ready:
            return self._ended is not None

    def close(self) -> None:
        self._out.put(None)
        self._call.cancel()
        self._thread.join(timeout=2)


class P4RuntimeClient:
    """One P4Runtime session with one device: channel, arbitration, RPCs."""

    def __init__(self, address: str, device_id: int = 1, election_id: int | None = 1,
                 timeout: float = 10.0, tls: ClientTls | None = None,
                 reconnect: ReconnectPolicy = NO_RECONNECT, role: str = "") -> None:
        self.address = address
        self.role = role
        """P4Runtime role (``Role.name``) this session arbitrates for and names in every
        Write, Set and Read; ``""`` is the default role (full pipeline access), sent as an
        unset role as the spec asks."""
        self.tls = tls
        """TLS of the channel (the switch runs with ``--grpc-server-ssl``); None: plaintext."""
        self.reconnect = reconnect
        """What an RPC that finds the switch gone (UNAVAILABLE) does: reconnect with
        back-off, re-arbitrate, call ``on_reconnect``, and try once more."""
        self.on_reconnect: Callable[[], None] | None = None
        """Called after a reconnect, before the failed RPC is tried again: restores what
        the switch lost in a restart (``Switch`` sets it). Its own RPCs do not reconnect."""
        self.reconnects = 0
        """Reconnects done so far."""
        self._recovering = False
        self.device_id = device_id
        self.election_id = election_id
        """None: a read-only session (no StreamChannel, no arbitration; writes are refused)."""
        self.timeout = timeout
        """Deadline in seconds of every RPC (and of connecting)."""
        self.is_primary = False
        self._channel: grpc.Channel | None = None
        self._stub: p4r_grpc.P4RuntimeStub | None = None
        self._stream: _Stream | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def connect(self) -> "P4RuntimeClient":
        """Open the channel and arbitrate; raises SwitchUnreachableError within
        ``timeout`` when nothing answers, RpcError when arbitration is refused."""
        try:
            self._connect(self.timeout)
        except BaseException:
            self.close()
            raise
        return self

    def recover(self) -> None:
        """Reconnect after the switch went away: new channel and StreamChannel with
        exponential back-off until ``reconnect.deadline``, arbitration with the same
        election id, then ``on_reconnect``. Raises SwitchUnreachableError naming the
        deadline and the last failure when the switch does not come back in time."""
        policy = self.reconnect
        deadline = time.monotonic() + policy.deadline
        attempts = 0
        last: Exception | None = None
        for delay in policy.delays():
            self.close()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            attempts += 1
            try:
                self._connect(min(remaining, max(1.0, 2 * delay), self.timeout))
                break
            except (SwitchUnreachableError, RpcError) as error:
                # refused, not up yet, or the old stream's election id not released yet
                last = error
                LOG.debug("switch %s: reconnect attempt %d failed: %s", self.address, attempts, error)
            time.sleep(max(0.0, min(delay, deadline - time.monotonic())))
        if self._stub is None:
            self.close()
            raise SwitchUnreachableError(
                f"switch {self.address}: connection lost and not back within {policy.deadline:g} s "
                f"({attempts} attempts; last: {last})")
        self.reconnects += 1
        LOG.warning("switch %s: reconnected (%s) after %d attempt(s)", self.address,
                    "primary" if self.is_primary else "backup", attempts)
        if self.on_reconnect is not None:
            self._recovering = True
            try:
                self.on_reconnect()
            finally:
                self._recovering = False

    def _may_recover(self, error: grpc.RpcError | None) -> bool:
        """A call failed because the switch is gone (not merely slow): reconnect?"""
        if not self.reconnect.enabled or self._recovering or self._stub is None:
            return False
        return error is None or error.code() == grpc.StatusCode.UNAVAILABLE  # type: ignore[attr-defined]

    def _stream_lost(self) -> bool:
        """Our StreamChannel ended: the switch restarted or went away. The channel itself
        may already be connected to a restarted switch, which knows nothing of us."""
        return self._stream is not None and self._stream.ended

    def _rpc(self, call: Callable[[], T]) -> T:
        """``call()``; when the switch is found gone (UNAVAILABLE, or our StreamChannel
        ended), ``recover()`` and call once more."""
        if self._stream_lost() and self._may_recover(None):
            LOG.warning("switch %s: StreamChannel ended; reconnecting", self.address)
            self.recover()
        try:
            return call()
        except grpc.RpcError as error:
            if not (self._may_recover(error) or (self._stream_lost() and self._may_recover(None))):
                raise
            LOG.warning("switch %s: %s; reconnecting", self.address, error.details())  # type: ignore[attr-defined]
        self.recover()
        return call()

    def _connect(self, timeout: float) -> None:
        options: list[tuple[str, int | str]] = [
            ("grpc.min_reconnect_backoff_ms", 100),  # a restarted switch is found within 0.1-1 s
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 1000),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_metadata_size", MAX_METADATA_BYTES),
            ("grpc.absolute_max_metadata_size", MAX_METADATA_BYTES)]
        if self.tls is None:
            channel = grpc.insecure_channel(self.address, options=options)
        else:
            channel = grpc.secure_channel(self.address, self.tls.credentials(),
                                          options=options + self.tls.channel_options())
        self._channel = channel
        stub = p4r_grpc.P4RuntimeStub(channel)
        connected = True
        try:
            # The first call waits for the connection. Not grpc.channel_ready_future: its
            # connectivity polling makes every later channel.close() block ~0.2 s, which each
            # short-lived client (every `innet` control command) paid.
            stub.Capabilities(p4r.CapabilitiesRequest(), wait_for_ready=True, timeout=timeout)
        except grpc.RpcError as error:  # any answer (UNIMPLEMENTED: a switch without Capabilities) is connected
            connected = error.code() not in (grpc.StatusCode.DEADLINE_EXCEEDED,  # type: ignore[attr-defined]
                                             grpc.StatusCode.UNAVAILABLE)
        if not connected:
            hint = ("is innet-switch or simple_switch_grpc running on that address?" if self.tls is None else
                    "is the switch running there with --grpc-server-ssl, does its certificate chain to the "
                    "CA certificate and name the address, and does it want a client certificate?")
            raise SwitchUnreachableError(
                f"switch {self.address}: no {'TLS ' if self.tls else ''}gRPC connection within "
                f"{timeout:g} s ({hint})") from None
        self._stub = stub
        if self.election_id is None:
            return
        self._stream = _Stream(self._stub, self._arbitrated)
        update = p4r.MasterArbitrationUpdate(device_id=self.device_id, election_id=U128.encode(self.election_id))
        if self.role:
            update.role.name = self.role
        self._stream.send(p4r.StreamMessageRequest(arbitration=update))
        what = f"arbitration of device {self.device_id} with election id {self.election_id}"
        if self.role:
            what += f" role {self.role!r}"
        try:
            reply = self._take("arbitration", timeout, what)
        except RpcError as error:
            if error.code == grpc.StatusCode.INVALID_ARGUMENT and "already used" in str(error):
                raise RpcError(f"{error}: another live controller of device {self.device_id} role {self.role!r} "
                               f"has election id {self.election_id}; use another election id (above "
                               f"{self.election_id} to become primary) or another P4Runtime role "
                               f"(the innet commands without --election-id take a free id in role "
                               f"{CLI_ROLE!r})", error.code) from None
            raise
        if reply is None:
            raise SwitchUnreachableError(
                f"switch {self.address}: no arbitration answer within {timeout:g} s") from None
        self._arbitrated(reply.arbitration)
        LOG.debug("switch %s: arbitration %s", self.address, "primary" if self.is_primary else "backup")

    def _arbitrated(self, update: p4r.MasterArbitrationUpdate) -> None:
        """Our reply, or a later notice that the primary changed: status OK means primary."""
        self.is_primary = update.status.code == 0

    def close(self) -> None:
        """Leave the session; safe to call more than once."""
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()
        channel, self._channel = self._channel, None
        if channel is not None:
            _close_within(channel, CLOSE_SECONDS)
        self._stub = None

    def __enter__(self) -> "P4RuntimeClient":
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def stub(self) -> p4r_grpc.P4RuntimeStub:
        if self._stub is None:
            raise ControllerError(f"switch {self.address}: client is not connected (call connect() first)")
        return self._stub

    # -- RPCs ----------------------------------------------------------------------------

    def _election(self) -> p4r.Uint128:
        if self.election_id is None:
            raise NotPrimaryError(f"switch {self.address}: this session is read-only (no election id); "
                                  "connect with an election id to write", grpc.StatusCode.PERMISSION_DENIED)
        return U128.encode(self.election_id)

    def set_pipeline(self, p4info: p4i.P4Info, device_config: bytes, cookie: int = 0) -> None:
        """SetForwardingPipelineConfig with VERIFY_AND_COMMIT."""
        config = p4r.ForwardingPipelineConfig(p4info=p4info, p4_device_config=device_config)
        config.cookie.cookie = cookie
        request = p4r.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, role=self.role, election_id=self._election(), config=config,
            action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        try:
            self._rpc(lambda: self.stub.SetForwardingPipelineConfig(request, timeout=max(self.timeout, 60.0)))
        except grpc.RpcError as error:
            code: grpc.StatusCode = error.code()  # type: ignore[attr-defined]
            if code == grpc.StatusCode.RESOURCE_EXHAUSTED:  # the size, not gRPC's numbers alone
                raise RpcError(f"pipeline push on switch {self.address}: the switch refused the "
                               f"{request.ByteSize()}-byte request as too large ({error.details()}); device "  # type: ignore[attr-defined]
                               f"config: {describe(device_config)}: is it for this switch? (innet-switch runs "
                               "innet-p4c's config, simple_switch_grpc p4c-bm2-ss's JSON)", code) from None
            raise rpc_error(error, "pipeline push", self.address) from None

    def get_p4info(self) -> p4i.P4Info | None:
        """The P4Info of the pipeline on the device, None when it has none."""
        config = self._get_pipeline(p4r.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        return config.p4info if config is not None and config.HasField("p4info") else None

    def get_cookie(self) -> int | None:
        """The cookie of the pipeline on the device (0 when it was set without one), None
        when it has no pipeline."""
        config = self._get_pipeline(p4r.GetForwardingPipelineConfigRequest.COOKIE_ONLY)
        return None if config is None else int(config.cookie.cookie)

    def _get_pipeline(self, response_type: "p4r.GetForwardingPipelineConfigRequest.ResponseType.ValueType"
                      ) -> p4r.ForwardingPipelineConfig | None:
        request = p4r.GetForwardingPipelineConfigRequest(device_id=self.device_id, response_type=response_type)
        try:
            reply = self._rpc(lambda: self.stub.GetForwardingPipelineConfig(request, timeout=self.timeout))
        except grpc.RpcError as error:
            converted = rpc_error(error, "pipeline read", self.address)
            if isinstance(converted, NoPipelineError):
                return None
            raise converted from None
        return reply.config

    def write(self, updates: Sequence[p4r.Update], describe: Describe = describe_update,
              single_request: bool = False) -> None:
        """Apply ``updates`` in Write requests of at most MAX_WRITE_UPDATES updates and
        MAX_WRITE_BYTES; raises WriteError listing every failed update with its index in
        ``updates``.

        Not atomic: each request is CONTINUE_ON_ERROR (the updates that did not fail are
        applied), and when ``updates`` takes several requests the later ones are sent
        even after one failed, so every failure is reported. ``single_request=True``
        refuses (ControllerError, nothing sent) updates that do not fit one request,
        for callers that need all of them applied between the same two packets."""
        batches = list(_batches(updates))
        if single_request and len(batches) > 1:
            raise ControllerError(
                f"switch {self.address}: {len(updates)} updates need {len(batches)} Write requests (at most "
                f"{MAX_WRITE_UPDATES} updates and {MAX_WRITE_BYTES} bytes each), but single_request was asked: "
                "a write of several requests is not atomic; write fewer updates at once")
        failures: list[UpdateFailure] = []
        start = 0
        for batch in batches:
            failures.extend(self._write_batch(batch, start, describe))
            start += len(batch)
        if failures:
            raise WriteError(failures, len(updates), len(batches))

    def _write_batch(self, batch: list[p4r.Update], start: int, describe: Describe) -> list[UpdateFailure]:
        request = p4r.WriteRequest(device_id=self.device_id, role=self.role, election_id=self._election(),
                                   updates=batch)
        try:
            self._rpc(lambda: self.stub.Write(request, timeout=max(self.timeout, 1e-4 * len(batch) + self.timeout)))
        except grpc.RpcError as error:
            out = [UpdateFailure(start + i, status_code_of(e.canonical_code), e.message, describe(batch[i]))
                   for i, e in enumerate(_write_errors(error)[:len(batch)]) if e.canonical_code != 0]
            if not out:  # not a batch failure, or an UNKNOWN without per-update detail
                raise rpc_error(error, f"write of {len(batch)} updates", self.address) from None
            return out
        return []

    def read(self, entities: Iterable[p4r.Entity]) -> list[p4r.Entity]:
        """All entities matched by the (possibly wildcard) selectors, in one Read."""
        request = p4r.ReadRequest(device_id=self.device_id, role=self.role, entities=list(entities))
        def call() -> list[p4r.Entity]:
            out: list[p4r.Entity] = []
            for response in self.stub.Read(request, timeout=max(self.timeout, 30.0)):
                out.extend(response.entities)
            return out

        try:
            return self._rpc(call)
        except grpc.RpcError as error:
            raise rpc_error(error, "read", self.address) from None

    # -- StreamChannel -------------------------------------------------------------------

    def _open_stream(self) -> _Stream:
        if self._stream is None:
            raise ControllerError(f"switch {self.address}: no StreamChannel: " + (
                "the client is not connected" if self._stub is None
                else "this session is read-only (no election id)"))
        return self._stream

    def _take(self, kind: str | None, timeout: float, what: str) -> p4r.StreamMessageResponse | None:
        try:
            return self._open_stream().take(kind, timeout)
        except _StreamEnded as ended:
            if kind != "arbitration" and self._may_recover(ended.error):
                self.recover()
                return self._take(kind, timeout, what)
            if ended.error is None:
                raise RpcError(f"{what} on switch {self.address}: the switch closed the StreamChannel",
                               grpc.StatusCode.UNAVAILABLE) from None
            raise rpc_error(ended.error, what, self.address) from None

    @property
    def dropped_messages(self) -> int:
        """StreamChannel messages dropped because MAX_PENDING_MESSAGES of their kind were
        left untaken (e.g. digests nobody reads)."""
        return 0 if self._stream is None else self._stream.dropped

    def next_message(self, timeout: float | None = None, kind: str | None = None) -> p4r.StreamMessageResponse | None:
        """The oldest StreamChannel message not taken yet, None after ``timeout`` seconds
        (default: the client's timeout).  With ``kind`` (``"digest"``, ``"packet"``,
        ``"arbitration"``, ``"idle_timeout_notification"``, ``"error"``), the oldest of that
        kind; the others stay queued.  Raises when the stream has failed."""
        wait = self.timeout if timeout is None else timeout
        return self._take(kind, wait, "StreamChannel" if kind is None else f"StreamChannel ({kind})")

    def send(self, request: p4r.StreamMessageRequest) -> None:
        """Send any StreamChannel message (PacketOut, DigestListAck, arbitration)."""
        self._open_stream().send(request)

    def ack_digest(self, digest: p4r.DigestList) -> None:
        """Acknowledge a DigestList: the switch may report its data again."""
        self.send(p4r.StreamMessageRequest(digest_ack=p4r.DigestListAck(digest_id=digest.digest_id,
                                                                          list_id=digest.list_id)))

    def packet_out(self, payload: bytes, metadata: Sequence[tuple[int, bytes]] = ()) -> None:
        """Send a PacketOut on the stream (metadata as (id, bytestring) pairs)."""
        packet = p4r.PacketOut(payload=payload)
        for metadata_id, value in metadata:
            packet.metadata.add(metadata_id=metadata_id, value=value)
        self.send(p4r.StreamMessageRequest(packet=packet))

    def packet_in(self, timeout: float) -> p4r.PacketIn | None:
        """The next PacketIn, or None after ``timeout`` seconds (other messages stay queued)."""
        message = self.next_message(timeout, "packet")
        return None if message is None else message.packet


def _write_errors(error: grpc.RpcError) -> list[p4r.Error]:
    """The per-update errors of a failed batch Write (UNKNOWN with a google.rpc.Status
    of p4.v1.Errors in its trailers, as the P4Runtime spec says), [] for other failures."""
    if error.code() != grpc.StatusCode.UNKNOWN:  # type: ignore[attr-defined]
        return []
    trailers = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None  # type: ignore[attr-defined]
    status = status_details(trailers)
    if status is None:
        return []
    try:
        return decode_write_errors(status)
    except ValueError:  # a detail that is not a p4.v1.Error: no per-update reading
        return []


def _batches(updates: Sequence[p4r.Update]) -> Iterator[list[p4r.Update]]:
    batch: list[p4r.Update] = []
    size = 0
    for update in updates:
        n = update.ByteSize() + 4
        if batch and (size + n > MAX_WRITE_BYTES or len(batch) >= MAX_WRITE_UPDATES):
            yield batch
            batch, size = [], 0
        batch.append(update)
        size += n
    if batch:
        yield batch
