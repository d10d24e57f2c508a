"""The wire layer: a small synchronous P4Runtime client over finsy's generated protos.

Why not finsy's asyncio ``Switch``: the controller and the ``innet`` CLI are short
sequential programs (connect, push, write, read, leave); a blocking client keeps every
layer above plain functions that tests call directly.  Only the StreamChannel needs a
thread (arbitration and PacketIn).

Every ``grpc.RpcError`` is turned into a :mod:`innet.controller.errors` exception here
and nowhere else.  Every RPC carries a deadline, so an unreachable or stuck switch
becomes ``SwitchUnreachableError`` instead of a hang.

    with P4RuntimeClient("127.0.0.1:9559", device_id=1, election_id=1) as client:
        client.write([update, ...])
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Callable, Iterable, Iterator, Sequence

import grpc
from finsy.proto import U128, p4i, p4r, p4r_grpc, rpc_status

from innet.controller.errors import (
    ControllerError,
    NoPipelineError,
    NotPrimaryError,
    RpcError,
    SwitchUnreachableError,
    UnsupportedError,
    UpdateFailure,
    WriteError,
)

LOG = logging.getLogger(__name__)

STATUS_DETAILS_KEY = "grpc-status-details-bin"
MAX_MESSAGE_BYTES = 256 << 20
"""Receive limit of the client channel (large register reads)."""
MAX_WRITE_BYTES = 3 << 20
"""Updates per Write request are cut so a request stays under gRPC's default 4 MiB."""
MAX_WRITE_UPDATES = 20000
"""And at most this many updates per request."""

Describe = Callable[[p4r.Update], str]


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


def _status_details(error: grpc.RpcError) -> rpc_status.Status | None:
    trailers = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None  # type: ignore[attr-defined]
    for key, value in trailers or ():
        if key == STATUS_DETAILS_KEY:
            status = rpc_status.Status()
            status.ParseFromString(value)
            return status
    return None


def rpc_error(error: grpc.RpcError, what: str, address: str) -> ControllerError:
    """The controller exception for a failed RPC ``what`` on the switch at ``address``."""
    code: grpc.StatusCode = error.code()  # type: ignore[attr-defined]
    details: str = error.details() or ""  # type: ignore[attr-defined]
    text = f"{what} on switch {address}: {code.name}: {details}"
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return SwitchUnreachableError(f"{what}: switch {address} did not answer ({code.name}: {details})")
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return NotPrimaryError(text + " (this client is not the primary controller: "
                               "another one holds a higher election id)", code)
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return UnsupportedError(text, code)
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return NoPipelineError(text + " (push a pipeline first)", code)
    return RpcError(text, code)


def _code(number: int) -> grpc.StatusCode:
    for code in grpc.StatusCode:
        if code.value[0] == number:
            return code
    return grpc.StatusCode.UNKNOWN


class _Stream:
    """The StreamChannel: a request queue, a reader thread, queues for arbitration
    replies and PacketIns."""

    def __init__(self, stub: p4r_grpc.P4RuntimeStub) -> None:
        self._out: "queue.Queue[p4r.StreamMessageRequest | None]" = queue.Queue()
        self.arbitration: "queue.Queue[p4r.MasterArbitrationUpdate | grpc.RpcError]" = queue.Queue()
        self.packets: "queue.Queue[p4r.PacketIn]" = queue.Queue()
        self._call = stub.StreamChannel(self._requests())
        self._thread = threading.Thread(target=self._read, name="p4rt-stream", daemon=True)
        self._thread.start()

    def _requests(self) -> Iterator[p4r.StreamMessageRequest]:
        while (item := self._out.get()) is not None:
            yield item

    def _read(self) -> None:
        try:
            for response in self._call:
                kind = response.WhichOneof("update")
                if kind == "arbitration":
                    self.arbitration.put(response.arbitration)
                elif kind == "packet":
                    self.packets.put(response.packet)
                else:
                    LOG.debug("stream message %s ignored", kind)
        except grpc.RpcError as error:
            self.arbitration.put(error)

    def send(self, request: p4r.StreamMessageRequest) -> None:
        self._out.put(request)

    def close(self) -> None:
        self._out.put(None)
        self._call.cancel()
        self._thread.join(timeout=2)


class P4RuntimeClient:
    """One P4Runtime session with one device: channel, arbitration, RPCs."""

    def __init__(self, address: str, device_id: int = 1, election_id: int | None = 1,
                 timeout: float = 10.0) -> None:
        self.address = address
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
            self._connect()
        except BaseException:
            self.close()
            raise
        return self

    def _connect(self) -> None:
        channel = grpc.insecure_channel(self.address, options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)])
        self._channel = channel
        try:
            grpc.channel_ready_future(channel).result(timeout=self.timeout)
        except grpc.FutureTimeoutError:
            raise SwitchUnreachableError(
                f"switch {self.address}: no gRPC connection within {self.timeout:g} s "
                "(is innet-switch or simple_switch_grpc running on that address?)") from None
        self._stub = p4r_grpc.P4RuntimeStub(channel)
        if self.election_id is None:
            return
        self._stream = _Stream(self._stub)
        update = p4r.MasterArbitrationUpdate(device_id=self.device_id, election_id=U128.encode(self.election_id))
        self._stream.send(p4r.StreamMessageRequest(arbitration=update))
        try:
            reply = self._stream.arbitration.get(timeout=self.timeout)
        except queue.Empty:
            raise SwitchUnreachableError(
                f"switch {self.address}: no arbitration answer within {self.timeout:g} s") from None
        if isinstance(reply, grpc.RpcError):
            raise rpc_error(reply, f"arbitration of device {self.device_id} with election id {self.election_id}",
                            self.address) from None
        self.is_primary = reply.status.code == 0
        LOG.debug("switch %s: arbitration %s", self.address, "primary" if self.is_primary else "backup")

    def close(self) -> None:
        """Leave the session; safe to call more than once."""
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()
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
            device_id=self.device_id, election_id=self._election(), config=config,
            action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        try:
            self.stub.SetForwardingPipelineConfig(request, timeout=max(self.timeout, 60.0))
        except grpc.RpcError as error:
            raise rpc_error(error, "pipeline push", self.address) from None

    def get_p4info(self) -> p4i.P4Info | None:
        """The P4Info of the pipeline on the device, None when it has none."""
        request = p4r.GetForwardingPipelineConfigRequest(
            device_id=self.device_id, response_type=p4r.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        try:
            reply = self.stub.GetForwardingPipelineConfig(request, timeout=self.timeout)
        except grpc.RpcError as error:
            converted = rpc_error(error, "pipeline read", self.address)
            if isinstance(converted, NoPipelineError):
                return None
            raise converted from None
        if not reply.config.HasField("p4info"):
            return None
        return reply.config.p4info

    def write(self, updates: Sequence[p4r.Update], describe: Describe = describe_update) -> None:
        """Apply ``updates`` in as few Write requests as fit the message size; raises
        WriteError listing every failed update with its index in ``updates``."""
        failures: list[UpdateFailure] = []
        start = 0
        for batch in _batches(updates):
            failures.extend(self._write_batch(batch, start, describe))
            start += len(batch)
        if failures:
            raise WriteError(failures, len(updates))

    def _write_batch(self, batch: list[p4r.Update], start: int, describe: Describe) -> list[UpdateFailure]:
        request = p4r.WriteRequest(device_id=self.device_id, election_id=self._election(),
                                   updates=batch)
        try:
            self.stub.Write(request, timeout=max(self.timeout, 1e-4 * len(batch) + self.timeout))
        except grpc.RpcError as error:
            status = _status_details(error) if error.code() == grpc.StatusCode.UNKNOWN else None  # type: ignore[attr-defined]
            if status is None or not status.details:
                raise rpc_error(error, f"write of {len(batch)} updates", self.address) from None
            out = []
            for i, detail in enumerate(status.details):
                err = p4r.Error()
                if detail.Unpack(err) and err.canonical_code != 0 and i < len(batch):
                    out.append(UpdateFailure(start + i, _code(err.canonical_code), err.message, describe(batch[i])))
            if not out:  # an UNKNOWN without per-update detail
                raise rpc_error(error, f"write of {len(batch)} updates", self.address) from None
            return out
        return []

    def read(self, entities: Iterable[p4r.Entity]) -> list[p4r.Entity]:
        """All entities matched by the (possibly wildcard) selectors, in one Read."""
        request = p4r.ReadRequest(device_id=self.device_id, entities=list(entities))
        out: list[p4r.Entity] = []
        try:
            for response in self.stub.Read(request, timeout=max(self.timeout, 30.0)):
                out.extend(response.entities)
        except grpc.RpcError as error:
            raise rpc_error(error, "read", self.address) from None
        return out

    def packet_out(self, payload: bytes, metadata: Sequence[tuple[int, bytes]] = ()) -> None:
        """Send a PacketOut on the stream (metadata as (id, bytestring) pairs)."""
        if self._stream is None:
            raise ControllerError(f"switch {self.address}: client is not connected")
        packet = p4r.PacketOut(payload=payload)
        for metadata_id, value in metadata:
            packet.metadata.add(metadata_id=metadata_id, value=value)
        self._stream.send(p4r.StreamMessageRequest(packet=packet))

    def packet_in(self, timeout: float) -> p4r.PacketIn | None:
        """The next PacketIn, or None after ``timeout`` seconds."""
        if self._stream is None:
            raise ControllerError(f"switch {self.address}: client is not connected")
        try:
            return self._stream.packets.get(timeout=timeout)
        except queue.Empty:
            return None


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
