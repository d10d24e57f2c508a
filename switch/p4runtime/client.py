"""A small blocking P4Runtime client over finsy's protos, for tests, benchmarks and scripts.

    with P4RuntimeClient("127.0.0.1:9559", device_id=1) as client:
        client.set_pipeline(p4info, device_config)
        names = P4Names(p4info)
        client.write([names.insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000001, 32)},
                                   "MyIngress.ipv4_forward", {"dstAddr": 1, "port": 1})])

It opens the StreamChannel and becomes primary on entering; every ``grpc.RpcError`` is
turned into ``P4RuntimeClientError`` once, here, with the per-update errors of a failed
batch Write. Controllers with many switches should use finsy's asyncio ``Switch``.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence, Union

import grpc
from finsy.proto import U128, p4i, p4r, p4r_grpc, rpc_status

from innet.switch.p4runtime.errors import STATUS_DETAILS_KEY, decode_write_errors
from innet.switch.p4runtime.schema import encode_bytes

MatchValue = Union[int, tuple[int, int]]
"""Exact/optional: value; LPM: (value, prefix_len); ternary: (value, mask); range: (low, high)."""


@dataclass(frozen=True)
class UpdateError:
    """One failed update of a batch Write."""

    index: int
    code: str
    message: str


class P4RuntimeClientError(Exception):
    """An RPC failed; ``updates`` lists the failed updates of a batch Write."""

    def __init__(self, what: str, code: grpc.StatusCode, message: str,
                 updates: Sequence[UpdateError] = ()) -> None:
        detail = "; ".join(f"update {u.index}: {u.code}: {u.message}" for u in updates[:3])
        super().__init__(f"{what}: {code.name}: {message}" + (f" ({detail})" if detail else ""))
        self.code = code
        self.updates = list(updates)


_CODES = {c.value[0]: c for c in grpc.StatusCode}


def _wrap(what: str, error: grpc.RpcError) -> P4RuntimeClientError:
    code = error.code() if isinstance(error, grpc.Call) else grpc.StatusCode.UNKNOWN
    message = error.details() if isinstance(error, grpc.Call) else str(error)
    updates: list[UpdateError] = []
    if isinstance(error, grpc.Call):
        for key, value in error.trailing_metadata() or ():
            if key == STATUS_DETAILS_KEY:
                status = rpc_status.Status.FromString(value)
                for i, e in enumerate(decode_write_errors(status)):
                    if e.canonical_code != 0:
                        name = _CODES.get(e.canonical_code, grpc.StatusCode.UNKNOWN).name
                        updates.append(UpdateError(i, name, e.message))
    return P4RuntimeClientError(what, code, message or "", updates)


class P4Names:
    """P4Info name -> id lookups and entity builders for one program."""

    def __init__(self, p4info: p4i.P4Info) -> None:
        self.p4info = p4info
        self._tables = {t.preamble.name: t for t in p4info.tables}
        self._actions = {a.preamble.name: a for a in p4info.actions}
        self._registers = {r.preamble.name: r for r in p4info.registers}

    @staticmethod
    def _get(kind: str, objects: Mapping[str, object], name: str) -> object:
        try:
            return objects[name]
        except KeyError:
            raise KeyError(f"no {kind} named {name!r}; known: {', '.join(sorted(objects))}") from None

    def table(self, name: str) -> p4i.Table:
        return self._get("table", self._tables, name)  # type: ignore[return-value]

    def action(self, name: str) -> p4i.Action:
        return self._get("action", self._actions, name)  # type: ignore[return-value]

    def register(self, name: str) -> p4i.Register:
        return self._get("register", self._registers, name)  # type: ignore[return-value]

    def table_entry(self, table: str, match: Mapping[str, MatchValue], action: str,
                    params: Mapping[str, int], priority: int = 0) -> p4r.TableEntry:
        """A TableEntry; fields left out of ``match`` are don't-care (omitted)."""
        info = self.table(table)
        fields = {f.name: f for f in info.match_fields}
        entry = p4r.TableEntry(table_id=info.preamble.id, priority=priority)
        for name, value in match.items():
            field = self._get(f"match field of {table}", fields, name)
            assert isinstance(field, p4i.MatchField)
            m = entry.match.add(field_id=field.id)
            kind = field.match_type
            if kind == p4i.MatchField.EXACT:
                assert isinstance(value, int)
                m.exact.value = encode_bytes(value)
            elif kind == p4i.MatchField.OPTIONAL:
                assert isinstance(value, int)
                m.optional.value = encode_bytes(value)
            else:
                assert isinstance(value, tuple), f"{table}.{name}: {kind} match needs a pair"
                if kind == p4i.MatchField.LPM:
                    m.lpm.value, m.lpm.prefix_len = encode_bytes(value[0]), value[1]
                elif kind == p4i.MatchField.TERNARY:
                    m.ternary.value, m.ternary.mask = encode_bytes(value[0]), encode_bytes(value[1])
                else:
                    m.range.low, m.range.high = encode_bytes(value[0]), encode_bytes(value[1])
        act = self.action(action)
        entry.action.action.action_id = act.preamble.id
        known = {p.name: p for p in act.params}
        for pname, pvalue in params.items():
            param = self._get(f"parameter of {action}", known, pname)
            assert isinstance(param, p4i.Action.Param)
            entry.action.action.params.add(param_id=param.id, value=encode_bytes(pvalue))
        return entry

    def insert(self, table: str, match: Mapping[str, MatchValue], action: str,
               params: Mapping[str, int], priority: int = 0) -> p4r.Update:
        """An INSERT update of ``table_entry(...)``."""
        entry = self.table_entry(table, match, action, params, priority)
        return p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(table_entry=entry))


class P4RuntimeClient:
    """One connection to one device, primary with ``election_id`` while open."""

    def __init__(self, address: str, device_id: int = 1, election_id: int = 1,
                 timeout: float = 10.0) -> None:
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.timeout = timeout
        self._channel = grpc.insecure_channel(address)
        self.stub = p4r_grpc.P4RuntimeStub(self._channel)
        self._requests: "queue.Queue[p4r.StreamMessageRequest | None]" = queue.Queue()
        self.responses: "queue.Queue[p4r.StreamMessageResponse | grpc.RpcError]" = queue.Queue()
        self._call: grpc.Future | None = None

    def __enter__(self) -> "P4RuntimeClient":
        try:
            self.connect()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> None:
        """Wait for the server, open the stream and become primary (or raise)."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=self.timeout)
        except grpc.FutureTimeoutError:
            raise P4RuntimeClientError("connect", grpc.StatusCode.UNAVAILABLE,
                                       f"no P4Runtime server at {self.address} "
                                       f"within {self.timeout} s") from None
        self._call = self.stub.StreamChannel(self._outgoing())
        threading.Thread(target=self._incoming, name="p4rt-stream", daemon=True).start()
        update = p4r.MasterArbitrationUpdate(device_id=self.device_id,
                                             election_id=U128.encode(self.election_id))
        self._requests.put(p4r.StreamMessageRequest(arbitration=update))
        reply = self.next_message(self.timeout)
        if reply.WhichOneof("update") != "arbitration":
            raise P4RuntimeClientError("arbitration", grpc.StatusCode.UNKNOWN,
                                       f"expected an arbitration reply, got {reply}")
        if reply.arbitration.status.code != 0:
            raise P4RuntimeClientError("arbitration", grpc.StatusCode.PERMISSION_DENIED,
                                       f"not primary: {reply.arbitration.status.message}")

    def _outgoing(self) -> Iterator[p4r.StreamMessageRequest]:
        while (item := self._requests.get()) is not None:
            yield item

    def _incoming(self) -> None:
        assert self._call is not None
        try:
            for response in self._call:  # type: ignore[attr-defined]
                self.responses.put(response)
        except grpc.RpcError as error:
            self.responses.put(error)

    def next_message(self, timeout: float | None = None) -> p4r.StreamMessageResponse:
        """The next StreamChannel message (PacketIn, digest, ...); raises on stream errors."""
        try:
            item = self.responses.get(timeout=self.timeout if timeout is None else timeout)
        except queue.Empty:
            raise TimeoutError(f"no StreamChannel message from {self.address}") from None
        if isinstance(item, grpc.RpcError):
            raise _wrap("StreamChannel", item)
        return item

    def send(self, request: p4r.StreamMessageRequest) -> None:
        """Send a StreamChannel message (PacketOut, digest ack)."""
        self._requests.put(request)

    def set_pipeline(self, p4info: p4i.P4Info, device_config: bytes, cookie: int = 0) -> None:
        """VERIFY_AND_COMMIT a program (``innet-p4c`` output or P4 source)."""
        config = p4r.ForwardingPipelineConfig(p4info=p4info, p4_device_config=device_config)
        config.cookie.cookie = cookie
        request = p4r.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, election_id=U128.encode(self.election_id), config=config,
            action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        try:
            self.stub.SetForwardingPipelineConfig(request, timeout=self.timeout)
        except grpc.RpcError as error:
            raise _wrap("SetForwardingPipelineConfig", error) from None

    def write(self, updates: Sequence[p4r.Update]) -> None:
        """One batch Write; raises with the failed updates' index, code and message."""
        request = p4r.WriteRequest(device_id=self.device_id,
                                   election_id=U128.encode(self.election_id), updates=updates)
        try:
            self.stub.Write(request, timeout=self.timeout)
        except grpc.RpcError as error:
            raise _wrap(f"Write of {len(updates)} updates", error) from None

    def read(self, *entities: p4r.Entity) -> list[p4r.Entity]:
        """All entities matching the (wildcard) ``entities``."""
        out: list[p4r.Entity] = []
        try:
            for response in self.stub.Read(p4r.ReadRequest(device_id=self.device_id,
                                                            entities=entities), timeout=self.timeout):
                out.extend(response.entities)
        except grpc.RpcError as error:
            raise _wrap("Read", error) from None
        return out

    def close(self) -> None:
        """Close the stream and the channel; safe to call more than once."""
        self._requests.put(None)
        if self._call is not None:
            self._call.cancel()
            self._call = None
        self._channel.close()
