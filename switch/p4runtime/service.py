"""The ``p4.v1.P4Runtime`` gRPC service over a ``Device``.

Every handler turns ``P4RuntimeError`` into the gRPC status it names and any other
exception into INTERNAL: a malformed request gets an error reply, never a dead server.
Streams are served with one reader thread each; messages to a stream (arbitration
notifications, PacketIn, DigestList, StreamError) go through its queue.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterator

import grpc
from finsy.proto import U128, p4r, p4r_grpc

from innet.switch.p4runtime.arbitration import Arbitrator, Notification
from innet.switch.p4runtime.device import Device
from innet.switch.p4rt_codec.status import STATUS_DETAILS_KEY
from innet.switch.p4runtime.errors import (
    P4RuntimeError,
    permission_denied,
    rpc_code_of,
    write_error_status,
)

LOG = logging.getLogger(__name__)

P4RUNTIME_API_VERSION = "1.5.0"
"""Version of the protos (finsy's generated P4Runtime 1.5) this server implements."""

READ_CHUNK = 1000
"""Entities per ReadResponse message."""

PACKET_QUEUE_LIMIT = 4096
"""PacketIn/DigestList messages buffered per stream before new ones are dropped."""

OutputSink = Callable[[list[tuple[int, bytes]]], None]

_END = object()


@dataclass(eq=False)
class _Stream:
    """One StreamChannel RPC (hashable by identity: the arbitration client key)."""

    peer: str
    queue: "queue.Queue[object]" = field(default_factory=queue.Queue)
    closed: bool = False

    def __hash__(self) -> int:
        return id(self)


def _abort(context: grpc.ServicerContext, error: P4RuntimeError) -> None:
    context.set_code(error.code)
    context.set_details(error.message)


class P4RuntimeService(p4r_grpc.P4RuntimeServicer):
    """Serves one device; ``send_outputs`` transmits packets produced by PacketOut."""

    def __init__(self, device: Device, send_outputs: OutputSink | None = None) -> None:
        self.device = device
        self.send_outputs = send_outputs
        self.arbitrator = Arbitrator(device.device_id)
        self._lock = threading.Lock()
        device.controller_sink = self.to_primaries

    # -- helpers -------------------------------------------------------------------------

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device.device_id:
            raise P4RuntimeError(grpc.StatusCode.NOT_FOUND,
                                 f"no device with id {device_id} (this switch is device "
                                 f"{self.device.device_id})")

    def _check_primary(self, what: str, role: str, election: p4r.Uint128 | None) -> None:
        """The spec's checks of Write and SetForwardingPipelineConfig, in its order: an
        unknown role is NOT_FOUND, a non-primary PERMISSION_DENIED."""
        election_id = None if election is None else U128.decode(election)
        with self._lock:
            known = self.arbitrator.has_role(role)
            ok = self.arbitrator.is_primary(role, election_id)
        if not known:
            raise P4RuntimeError(grpc.StatusCode.NOT_FOUND,
                                 f"{what}: no role {role!r} on device {self.device.device_id} (a role "
                                 "exists once a controller arbitrated for it; the default role is '')")
        if not ok:
            shown = "unset" if election_id is None else str(election_id)
            raise permission_denied(f"{what} from a controller that is not primary "
                                    f"(election id {shown}, role {role!r})")

    def _send(self, notifications: list[Notification]) -> None:
        for client, update in notifications:
            assert isinstance(client, _Stream)
            client.queue.put(p4r.StreamMessageResponse(arbitration=update))

    def to_primaries(self, message: p4r.StreamMessageResponse) -> None:
        """Deliver a PacketIn/DigestList to the primary of each role (dropped if none)."""
        with self._lock:
            primaries = {self.arbitrator.primary(role) for role in self._roles()}
        for stream in primaries:
            if isinstance(stream, _Stream) and not stream.closed:
                if stream.queue.qsize() < PACKET_QUEUE_LIMIT:
                    stream.queue.put(message)
                else:
                    LOG.debug("stream %s: queue full, dropped %s", stream.peer,
                              message.WhichOneof("update"))

    def _roles(self) -> list[str]:
        return list(self.arbitrator._roles)

    # -- unary RPCs ----------------------------------------------------------------------

    def Write(self, request: p4r.WriteRequest, context: grpc.ServicerContext) -> p4r.WriteResponse:
        try:
            self._check_device(request.device_id)
            election = request.election_id if request.HasField("election_id") else None
            self._check_primary("Write", request.role, election)
            results = self.device.write(request.updates, request.atomicity)
        except P4RuntimeError as error:
            _abort(context, error)
            return p4r.WriteResponse()
        except Exception as error:
            LOG.exception("Write failed")
            _abort(context, P4RuntimeError(grpc.StatusCode.INTERNAL, f"Write: {error}"))
            return p4r.WriteResponse()
        if any(r is not None for r in results):
            status = write_error_status(results)
            context.set_trailing_metadata(((STATUS_DETAILS_KEY, status.SerializeToString()),))
            context.set_code(grpc.StatusCode.UNKNOWN)
            context.set_details(status.message)
        return p4r.WriteResponse()

    def Read(self, request: p4r.ReadRequest, context: grpc.ServicerContext) -> Iterator[p4r.ReadResponse]:
        try:
            self._check_device(request.device_id)
            entities = self.device.read(request.entities)
        except P4RuntimeError as error:
            _abort(context, error)
            return
        except Exception as error:
            LOG.exception("Read failed")
            _abort(context, P4RuntimeError(grpc.StatusCode.INTERNAL, f"Read: {error}"))
            return
        for start in range(0, len(entities), READ_CHUNK):
            yield p4r.ReadResponse(entities=entities[start : start + READ_CHUNK])
        if not entities:
            yield p4r.ReadResponse()

    def SetForwardingPipelineConfig(self, request: p4r.SetForwardingPipelineConfigRequest,
                                    context: grpc.ServicerContext
                                    ) -> p4r.SetForwardingPipelineConfigResponse:
        try:
            self._check_device(request.device_id)
            election = request.election_id if request.HasField("election_id") else None
            self._check_primary("SetForwardingPipelineConfig", request.role, election)
            self.device.set_pipeline(request.action, request.config)
        except P4RuntimeError as error:
            _abort(context, error)
        except Exception as error:
            LOG.exception("SetForwardingPipelineConfig failed")
            _abort(context, P4RuntimeError(grpc.StatusCode.INTERNAL,
                                           f"SetForwardingPipelineConfig: {error}"))
        return p4r.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request: p4r.GetForwardingPipelineConfigRequest,
                                    context: grpc.ServicerContext
                                    ) -> p4r.GetForwardingPipelineConfigResponse:
        try:
            self._check_device(request.device_id)
            config = self.device.get_pipeline(request.response_type)
        except P4RuntimeError as error:
            _abort(context, error)
            return p4r.GetForwardingPipelineConfigResponse()
        return p4r.GetForwardingPipelineConfigResponse(config=config)

    def Capabilities(self, request: p4r.CapabilitiesRequest,
                     context: grpc.ServicerContext) -> p4r.CapabilitiesResponse:
        return p4r.CapabilitiesResponse(p4runtime_api_version=P4RUNTIME_API_VERSION)

    # -- stream --------------------------------------------------------------------------

    def StreamChannel(self, request_iterator: Iterator[p4r.StreamMessageRequest],
                      context: grpc.ServicerContext) -> Iterator[p4r.StreamMessageResponse]:
        stream = _Stream(peer=context.peer())
        context.add_callback(lambda: stream.queue.put(_END))

        def reader() -> None:
            try:
                for request in request_iterator:
                    if stream.closed:
                        break
                    self._handle(stream, request)
            except grpc.RpcError as error:  # cancelled RPC or client gone: the normal end
                LOG.debug("stream %s reader ended: %s", stream.peer, error)
            except Exception:
                LOG.warning("stream %s: reading requests failed; stream ended", stream.peer, exc_info=True)
            finally:
                stream.queue.put(_END)

        threading.Thread(target=reader, name=f"p4rt-stream-{stream.peer}", daemon=True).start()
        try:
            while True:
                item = stream.queue.get()
                if item is _END:
                    return
                if isinstance(item, P4RuntimeError):
                    _abort(context, item)
                    return
                assert isinstance(item, p4r.StreamMessageResponse)
                yield item
        finally:
            stream.closed = True
            with self._lock:
                notifications = self.arbitrator.leave(stream)
            self._send(notifications)

    def _handle(self, stream: _Stream, request: p4r.StreamMessageRequest) -> None:
        """One stream request; a failure of the server itself goes back to the client as a
        StreamError (INTERNAL, with the PacketOut that caused it) and the stream lives on,
        so a controller is never left with a stream that silently stopped."""
        try:
            self._on_request(stream, request)
        except Exception as error:
            which = request.WhichOneof("update")
            what = "PacketOut" if which == "packet" else f"stream message {which}"
            LOG.warning("stream %s: %s failed", stream.peer, what, exc_info=True)
            self._stream_error(stream, grpc.StatusCode.INTERNAL, f"{what}: {type(error).__name__}: {error}",
                               request.packet if which == "packet" else None)

    def _on_request(self, stream: _Stream, request: p4r.StreamMessageRequest) -> None:
        which = request.WhichOneof("update")
        if which == "arbitration":
            try:
                with self._lock:
                    notifications = self.arbitrator.arbitrate(stream, request.arbitration)
            except P4RuntimeError as error:
                stream.closed = True
                stream.queue.put(error)
                return
            self._send(notifications)
            return
        with self._lock:
            member = self.arbitrator.is_member(stream)
            primary = self.arbitrator.is_primary_client(stream)
        if which == "packet":
            self._packet_out(stream, request.packet, member, primary)
        elif which == "digest_ack":
            ack = request.digest_ack
            if not primary:  # lists go to primaries only, so only they can ack them
                LOG.debug("digest ack %d for digest %d from a non-primary ignored", ack.list_id, ack.digest_id)
            elif not self.device.digest_ack(ack):
                LOG.debug("digest ack %d for digest %d: no such unacknowledged list", ack.list_id,
                          ack.digest_id)
        else:
            self._stream_error(stream, grpc.StatusCode.UNIMPLEMENTED,
                               f"stream message {which} is not supported")

    def _packet_out(self, stream: _Stream, packet: p4r.PacketOut, member: bool, primary: bool) -> None:
        if not member:
            self._stream_error(stream, grpc.StatusCode.FAILED_PRECONDITION,
                               "PacketOut before a MasterArbitrationUpdate on this stream", packet)
            return
        if not primary:
            self._stream_error(stream, grpc.StatusCode.PERMISSION_DENIED,
                               "PacketOut from a controller that is not primary", packet)
            return
        try:
            outputs = self.device.packet_out(packet)
            if outputs and self.send_outputs is not None:
                self.send_outputs(outputs)
        except P4RuntimeError as error:
            LOG.warning("stream %s: PacketOut refused: %s", stream.peer, error.message)
            self._stream_error(stream, error.code, error.message, packet)

    def _stream_error(self, stream: _Stream, code: grpc.StatusCode, message: str,
                      packet: p4r.PacketOut | None = None) -> None:
        error = p4r.StreamError(canonical_code=rpc_code_of(code), message=message)
        if packet is not None:
            error.packet_out.packet_out.CopyFrom(packet)
        stream.queue.put(p4r.StreamMessageResponse(error=error))


def add_to_server(service: P4RuntimeService, server: grpc.Server) -> None:
    """Register ``service`` on ``server``."""
    p4r_grpc.add_P4RuntimeServicer_to_server(service, server)
