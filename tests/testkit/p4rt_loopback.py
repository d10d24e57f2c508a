"""A bare P4Runtime client for loopback tests of innet-switch: raw finsy protos, no
innet.controller in between, so the server's wire behaviour is what gets checked.

``Client(address)`` opens a channel; ``client.stream(election_id)`` a StreamChannel whose
responses queue up (``stream.next()``); ``arbitration(stream)`` takes the arbitration
reply; ``lpm_entry``/``insert`` build updates for the fake target's sample P4Info.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Iterator

import grpc
from finsy.proto import U128, p4r, p4r_grpc

from testkit.fake_target import sample_p4info

Set = p4r.SetForwardingPipelineConfigRequest
LPM, FORWARD = 0x02000001, 0x01000001


def wait_for(condition, timeout: float = 5.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


class Stream:
    """A StreamChannel with a queue of outgoing requests and one of responses."""

    def __init__(self, stub: p4r_grpc.P4RuntimeStub) -> None:
        self._out: "queue.Queue[p4r.StreamMessageRequest | None]" = queue.Queue()
        self.responses: "queue.Queue[p4r.StreamMessageResponse | grpc.RpcError]" = queue.Queue()
        self._call = stub.StreamChannel(self._requests())
        threading.Thread(target=self._read, daemon=True).start()

    def _requests(self) -> Iterator[p4r.StreamMessageRequest]:
        while (item := self._out.get()) is not None:
            yield item

    def _read(self) -> None:
        try:
            for response in self._call:
                self.responses.put(response)
        except grpc.RpcError as error:
            self.responses.put(error)

    def send(self, request: p4r.StreamMessageRequest) -> None:
        self._out.put(request)

    def arbitrate(self, election_id: int, device_id: int = 1) -> None:
        update = p4r.MasterArbitrationUpdate(device_id=device_id, election_id=U128.encode(election_id))
        self.send(p4r.StreamMessageRequest(arbitration=update))

    def next(self, timeout: float = 5.0):
        return self.responses.get(timeout=timeout)

    def close(self) -> None:
        self._out.put(None)
        self._call.cancel()


class Client:
    def __init__(self, address: str) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = p4r_grpc.P4RuntimeStub(self.channel)
        self.streams: list[Stream] = []

    def stream(self, election_id: int | None = None) -> Stream:
        s = Stream(self.stub)
        self.streams.append(s)
        if election_id is not None:
            s.arbitrate(election_id)
        return s

    def set_pipeline(self, election_id: int = 1, action=Set.VERIFY_AND_COMMIT, device_config=b"prog",
                     cookie: int = 42):
        config = p4r.ForwardingPipelineConfig(p4info=sample_p4info(), p4_device_config=device_config)
        config.cookie.cookie = cookie
        return self.stub.SetForwardingPipelineConfig(p4r.SetForwardingPipelineConfigRequest(
            device_id=1, election_id=U128.encode(election_id), action=action, config=config))

    def write(self, *updates: p4r.Update, election_id: int = 1, device_id: int = 1):
        return self.stub.Write(p4r.WriteRequest(device_id=device_id, election_id=U128.encode(election_id),
                                                updates=updates))

    def read(self, *entities: p4r.Entity) -> list[p4r.Entity]:
        out = []
        for response in self.stub.Read(p4r.ReadRequest(device_id=1, entities=entities)):
            out.extend(response.entities)
        return out

    def close(self) -> None:
        for s in self.streams:
            s.close()
        self.channel.close()


def lpm_entry(dst: int = 0x0A000100, port: int = 2) -> p4r.TableEntry:
    e = p4r.TableEntry(table_id=LPM)
    e.match.add(field_id=1).exact.value = b"\x08\x00"
    m = e.match.add(field_id=2)
    m.lpm.value, m.lpm.prefix_len = dst.to_bytes(4, "big"), 24
    e.action.action.action_id = FORWARD
    e.action.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    e.action.action.params.add(param_id=2, value=b"\x00\x00\x00\x00\x00\x01")
    return e


def insert(entry: p4r.TableEntry, kind=p4r.Update.INSERT) -> p4r.Update:
    return p4r.Update(type=kind, entity=p4r.Entity(table_entry=entry))


def arbitration(stream: Stream) -> tuple[int, int]:
    msg = stream.next()
    assert isinstance(msg, p4r.StreamMessageResponse), msg
    assert msg.WhichOneof("update") == "arbitration"
    return msg.arbitration.status.code, U128.decode(msg.arbitration.election_id)
