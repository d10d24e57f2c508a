"""Extern entities: counters, meters, registers, the replication engine and digests.

RegisterEntry reads and writes are an innet extension: BMv2's PI server answers them
with UNIMPLEMENTED (docs/p4runtime.md, "Registers over P4Runtime").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from finsy.proto import p4d, p4i, p4r, p4t

from innet.switch.p4runtime.errors import (
    already_exists,
    invalid,
    not_found,
    out_of_range,
    unimplemented,
)
from innet.switch.p4rt_codec import register_range
from innet.switch.p4rt_codec.bytestrings import bitstring_width, decode_bytes, encode_bytes
from innet.switch.p4runtime.schema import Schema
from innet.switch.p4runtime.tables import TableState, meter_rates
from innet.switch.p4runtime.target_api import Digest, LoadedPipeline, MeterRates, PreReplica

PORT_WIDTH = 32
"""Width of a P4Runtime (SDN) port bytestring in replicas."""


@dataclass(frozen=True)
class PreLimits:
    """What the architecture's packet replication engine can address. An id beyond it
    would be accepted and stored but could never be selected by the program (a
    ``bit<16>`` ``mcast_grp`` cannot hold 70000), so it is refused up front."""

    max_group: int = (1 << 16) - 1
    """v1model ``standard_metadata.mcast_grp`` is ``bit<16>``; 0 means "no multicast"."""
    max_session: int = (1 << 15) - 1
    """BMv2 simple_switch's ``MAX_MIRROR_SESSION_ID``; 0 is reserved."""
    max_port: int = (1 << 9) - 1
    """v1model ports are ``bit<9>``."""
    drop_port: int | None = (1 << 9) - 1
    """BMv2's drop port (511): a replica sent there would vanish."""
    max_instance: int = (1 << 16) - 1
    """v1model ``egress_rid`` is ``bit<16>``."""


V1MODEL_PRE = PreLimits()


def _check_modify(kind: int, what: str) -> None:
    if kind != p4r.Update.MODIFY:
        raise invalid(f"{what} can only be modified (MODIFY), not inserted or deleted")


def _check_range(start: int, count: int, size: int, what: str) -> None:
    if start < 0 or count < 0 or start + count > size:
        raise out_of_range(f"{what}: cells {start}..{start + count - 1} are outside 0..{size - 1}")


def _indexes(has_index: bool, index: int, size: int, what: str) -> range:
    if not has_index:
        return range(size)
    if index < 0 or index >= size:
        raise out_of_range(f"{what}: index {index} is outside 0..{size - 1}")
    return range(index, index + 1)


def _meter_proto(rates: MeterRates) -> p4r.MeterConfig:
    return p4r.MeterConfig(cir=rates.cir, cburst=rates.cburst, pir=rates.pir, pburst=rates.pburst)


def parse_replicas(replicas: list[p4r.Replica], what: str,
                   limits: PreLimits = V1MODEL_PRE) -> list[PreReplica]:
    """Replicas from ``port`` (bytes) or deprecated ``egress_port``; no duplicates, ports
    and instances within ``limits``."""
    out: list[PreReplica] = []
    for r in replicas:
        kind = r.WhichOneof("port_kind")
        if kind == "port":
            port = decode_bytes(r.port, PORT_WIDTH, f"{what} replica port")
        elif kind == "egress_port":
            port = int(r.egress_port)
        else:
            port = 0
        if port > limits.max_port:
            raise out_of_range(f"{what}: replica port {port} is outside 0..{limits.max_port} "
                               f"(ports are bit<{limits.max_port.bit_length()}>)")
        if port == limits.drop_port:
            raise invalid(f"{what}: replica port {port} is the drop port")
        if r.instance > limits.max_instance:
            raise out_of_range(f"{what}: replica instance {r.instance} is outside 0..{limits.max_instance} "
                               f"(egress_rid is bit<{limits.max_instance.bit_length()}>)")
        replica = PreReplica(port, int(r.instance))
        if replica in out:
            raise invalid(f"{what}: replica (port {port}, instance {r.instance}) given twice")
        out.append(replica)
    return out


def replicas_proto(replicas: list[PreReplica]) -> list[p4r.Replica]:
    """Replicas as read back: ``port`` bytestring (canonical)."""
    return [p4r.Replica(port=encode_bytes(r.port), instance=r.instance) for r in replicas]


@dataclass
class ExternState:
    """State kept for reads of objects a target cannot describe back by itself."""

    schema: Schema
    pipeline: LoadedPipeline
    tables: TableState
    meters: dict[tuple[int, int], MeterRates] = field(default_factory=dict)
    groups: dict[int, p4r.MulticastGroupEntry] = field(default_factory=dict)
    sessions: dict[int, p4r.CloneSessionEntry] = field(default_factory=dict)
    digest_configs: dict[int, p4r.DigestEntry.Config] = field(default_factory=dict)
    limits: PreLimits = V1MODEL_PRE

    # -- counters ------------------------------------------------------------------------

    def write_counter(self, kind: int, entry: p4r.CounterEntry) -> None:
        counter = self.schema.lookup("counter", self.schema.counters, entry.counter_id)
        what = f"counter {counter.preamble.name!r}"
        _check_modify(kind, what)
        for i in _indexes(entry.HasField("index"), entry.index.index, int(counter.size), what):
            self.pipeline.counter_write(counter.preamble.name, i, int(entry.data.byte_count),
                                        int(entry.data.packet_count))

    def read_counter(self, request: p4r.CounterEntry) -> Iterator[p4r.CounterEntry]:
        counters = list(self.schema.counters.values()) if request.counter_id == 0 else [
            self.schema.lookup("counter", self.schema.counters, request.counter_id)]
        for counter in counters:
            what = f"counter {counter.preamble.name!r}"
            for i in _indexes(request.HasField("index"), request.index.index, int(counter.size), what):
                nbytes, npackets = self.pipeline.counter_read(counter.preamble.name, i)
                out = p4r.CounterEntry(counter_id=counter.preamble.id)
                out.index.index = i
                out.data.byte_count, out.data.packet_count = nbytes, npackets
                yield out

    def write_direct_counter(self, kind: int, entry: p4r.DirectCounterEntry) -> None:
        _check_modify(kind, "a direct counter entry")
        info, installed = self.tables.find(entry.table_entry)
        if info.direct_counter is None:
            raise invalid(f"table {info.name!r} has no direct counter")
        self.pipeline.direct_counter_write(info.name, installed.handle,
                                           int(entry.data.byte_count), int(entry.data.packet_count))

    def read_direct_counter(self, request: p4r.DirectCounterEntry) -> Iterator[p4r.DirectCounterEntry]:
        selector = p4r.TableEntry()
        selector.CopyFrom(request.table_entry)
        selector.counter_data.SetInParent()
        for entry in self.tables.read(selector):
            if self.schema.table(entry.table_id).direct_counter is None or entry.is_const:
                continue
            out = p4r.DirectCounterEntry(data=entry.counter_data)
            entry.ClearField("counter_data")
            out.table_entry.CopyFrom(entry)
            yield out

    # -- meters --------------------------------------------------------------------------

    def write_meter(self, kind: int, entry: p4r.MeterEntry) -> None:
        meter = self.schema.lookup("meter", self.schema.meters, entry.meter_id)
        what = f"meter {meter.preamble.name!r}"
        _check_modify(kind, what)
        rates = meter_rates(entry.config)
        for i in _indexes(entry.HasField("index"), entry.index.index, int(meter.size), what):
            self.pipeline.meter_set(meter.preamble.name, i, rates)
            if rates is None:
                self.meters.pop((meter.preamble.id, i), None)
            else:
                self.meters[(meter.preamble.id, i)] = rates

    def read_meter(self, request: p4r.MeterEntry) -> Iterator[p4r.MeterEntry]:
        meters = list(self.schema.meters.values()) if request.meter_id == 0 else [
            self.schema.lookup("meter", self.schema.meters, request.meter_id)]
        for meter in meters:
            what = f"meter {meter.preamble.name!r}"
            for i in _indexes(request.HasField("index"), request.index.index, int(meter.size), what):
                out = p4r.MeterEntry(meter_id=meter.preamble.id)
                out.index.index = i
                rates = self.meters.get((meter.preamble.id, i))
                if rates is not None:
                    out.config.CopyFrom(_meter_proto(rates))
                yield out

    def write_direct_meter(self, kind: int, entry: p4r.DirectMeterEntry) -> None:
        _check_modify(kind, "a direct meter entry")
        info, installed = self.tables.find(entry.table_entry)
        if info.direct_meter is None:
            raise invalid(f"table {info.name!r} has no direct meter")
        rates = meter_rates(entry.config)
        self.pipeline.direct_meter_set(info.name, installed.handle, rates)
        installed.meter = rates

    def read_direct_meter(self, request: p4r.DirectMeterEntry) -> Iterator[p4r.DirectMeterEntry]:
        selector = p4r.TableEntry()
        selector.CopyFrom(request.table_entry)
        selector.meter_config.SetInParent()
        for entry in self.tables.read(selector):
            if self.schema.table(entry.table_id).direct_meter is None or entry.is_const:
                continue
            out = p4r.DirectMeterEntry()
            if entry.HasField("meter_config"):
                out.config.CopyFrom(entry.meter_config)
            entry.ClearField("meter_config")
            out.table_entry.CopyFrom(entry)
            yield out

    # -- registers (innet extension) -----------------------------------------------------

    def write_register(self, kind: int, entry: p4r.RegisterEntry) -> None:
        register = self.schema.lookup("register", self.schema.registers, entry.register_id)
        what = f"register {register.preamble.name!r}"
        _check_modify(kind, what)
        width = bitstring_width(register.type_spec, what)
        if entry.data.WhichOneof("data") != "bitstring":
            raise invalid(f"{what}: data must be a bitstring of {width} bits")
        value = decode_bytes(entry.data.bitstring, width, what)
        for i in _indexes(entry.HasField("index"), entry.index.index, int(register.size), what):
            self.pipeline.register_write(register.preamble.name, i, value)

    def read_register(self, request: p4r.RegisterEntry) -> Iterator[p4r.RegisterEntry]:
        registers = list(self.schema.registers.values()) if request.register_id == 0 else [
            self.schema.lookup("register", self.schema.registers, request.register_id)]
        for register in registers:
            what = f"register {register.preamble.name!r}"
            for i in _indexes(request.HasField("index"), request.index.index, int(register.size), what):
                value = self.pipeline.register_read(register.preamble.name, i)
                out = p4r.RegisterEntry(register_id=register.preamble.id,
                                        data=p4d.P4Data(bitstring=encode_bytes(value)))
                out.index.index = i
                yield out

    # -- register ranges (innet extension: ``innet.switch.p4rt_codec.register_range``) -----

    def _range_register(self, entry: p4r.ExternEntry) -> tuple[p4i.Register, str, int]:
        if entry.extern_type_id != register_range.EXTERN_TYPE_ID:
            raise unimplemented(f"extern entries of type {entry.extern_type_id:#x} are not supported by innet's "
                                f"target (only register ranges, {register_range.EXTERN_TYPE_ID:#x})")
        register = self.schema.lookup("register", self.schema.registers, entry.extern_id)
        what = f"register {register.preamble.name!r}"
        return register, what, bitstring_width(register.type_spec, what)

    def write_extern(self, kind: int, entry: p4r.ExternEntry) -> None:
        register, what, width = self._range_register(entry)
        _check_modify(kind, what)
        try:
            start, count, cells = register_range.parse(entry, width)
        except register_range.RegisterRangeError as error:
            raise invalid(f"{what}: {error}") from None
        if cells is None:
            raise invalid(f"{what}: a register range write needs the cells, not only a count")
        _check_range(start, count, int(register.size), what)
        self.pipeline.register_write_range(register.preamble.name, start, cells.tolist())

    def read_extern(self, request: p4r.ExternEntry) -> Iterator[p4r.ExternEntry]:
        register, what, width = self._range_register(request)
        try:
            start, count, _ = register_range.parse(request, width)
        except register_range.RegisterRangeError as error:
            raise invalid(f"{what}: {error}") from None
        _check_range(start, count, int(register.size), what)
        values = self.pipeline.register_read_range(register.preamble.name, start, count)
        yield register_range.write_entity(register.preamble.id, start, values, width).extern_entry

    # -- packet replication engine -------------------------------------------------------

    def write_pre(self, kind: int, entry: p4r.PacketReplicationEngineEntry) -> None:
        which = entry.WhichOneof("type")
        if which == "multicast_group_entry":
            self._write_group(kind, entry.multicast_group_entry)
        elif which == "clone_session_entry":
            self._write_session(kind, entry.clone_session_entry)
        else:
            raise invalid("packet replication engine entry without a multicast group or clone session")

    def _write_group(self, kind: int, group: p4r.MulticastGroupEntry) -> None:
        gid = int(group.multicast_group_id)
        what = f"multicast group {gid}"
        if gid == 0:
            raise invalid("multicast group id 0 is reserved (no multicast)")
        if gid > self.limits.max_group:
            raise out_of_range(f"{what}: id is outside 1..{self.limits.max_group} "
                               f"(mcast_grp is bit<{self.limits.max_group.bit_length()}>)")
        exists = gid in self.groups
        if kind == p4r.Update.INSERT and exists:
            raise already_exists(f"{what} already exists")
        if kind in (p4r.Update.MODIFY, p4r.Update.DELETE) and not exists:
            raise not_found(f"{what} does not exist")
        if kind == p4r.Update.DELETE:
            self.pipeline.multicast_group_delete(gid)
            del self.groups[gid]
            return
        if kind not in (p4r.Update.INSERT, p4r.Update.MODIFY):
            raise invalid(f"{what}: update type {kind} is not INSERT, MODIFY or DELETE")
        replicas = parse_replicas(list(group.replicas), what, self.limits)
        self.pipeline.multicast_group_set(gid, replicas)
        self.groups[gid] = p4r.MulticastGroupEntry(
            multicast_group_id=gid, replicas=replicas_proto(replicas), metadata=group.metadata)

    def _write_session(self, kind: int, session: p4r.CloneSessionEntry) -> None:
        sid = int(session.session_id)
        what = f"clone session {sid}"
        if sid == 0:
            raise invalid("clone session id 0 is reserved")
        if sid > self.limits.max_session:
            raise out_of_range(f"{what}: id is outside 1..{self.limits.max_session}")
        if session.packet_length_bytes < 0:
            raise invalid(f"{what}: packet_length_bytes {session.packet_length_bytes} is negative")
        exists = sid in self.sessions
        if kind == p4r.Update.INSERT and exists:
            raise already_exists(f"{what} already exists")
        if kind in (p4r.Update.MODIFY, p4r.Update.DELETE) and not exists:
            raise not_found(f"{what} does not exist")
        if kind == p4r.Update.DELETE:
            self.pipeline.clone_session_delete(sid)
            del self.sessions[sid]
            return
        if kind not in (p4r.Update.INSERT, p4r.Update.MODIFY):
            raise invalid(f"{what}: update type {kind} is not INSERT, MODIFY or DELETE")
        replicas = parse_replicas(list(session.replicas), what, self.limits)
        self.pipeline.clone_session_set(sid, replicas, int(session.class_of_service),
                                        int(session.packet_length_bytes))
        self.sessions[sid] = p4r.CloneSessionEntry(
            session_id=sid, replicas=replicas_proto(replicas),
            class_of_service=session.class_of_service,
            packet_length_bytes=session.packet_length_bytes)

    def read_pre(self, request: p4r.PacketReplicationEngineEntry) -> Iterator[p4r.PacketReplicationEngineEntry]:
        which = request.WhichOneof("type")
        if which == "multicast_group_entry":
            gid = request.multicast_group_entry.multicast_group_id
            for g in sorted(self.groups):
                if gid in (0, g):
                    yield p4r.PacketReplicationEngineEntry(multicast_group_entry=self.groups[g])
        elif which == "clone_session_entry":
            sid = request.clone_session_entry.session_id
            for s in sorted(self.sessions):
                if sid in (0, s):
                    yield p4r.PacketReplicationEngineEntry(clone_session_entry=self.sessions[s])
        else:
            raise invalid("read of a packet replication engine entry needs a multicast group "
                          "or clone session (id 0 for all)")

    # -- digests -------------------------------------------------------------------------

    def write_digest(self, kind: int, entry: p4r.DigestEntry) -> None:
        digest = self.schema.lookup("digest", self.schema.digests, entry.digest_id)
        what = f"digest {digest.preamble.name!r}"
        exists = entry.digest_id in self.digest_configs
        if kind == p4r.Update.INSERT and exists:
            raise already_exists(f"{what} is already configured")
        if kind in (p4r.Update.MODIFY, p4r.Update.DELETE) and not exists:
            raise not_found(f"{what} is not configured")
        if kind == p4r.Update.DELETE:
            del self.digest_configs[entry.digest_id]
        else:
            self.digest_configs[entry.digest_id] = entry.config

    def read_digest(self, request: p4r.DigestEntry) -> Iterator[p4r.DigestEntry]:
        for did in sorted(self.digest_configs):
            if request.digest_id in (0, did):
                yield p4r.DigestEntry(digest_id=did, config=self.digest_configs[did])

    def digest_data(self, digest: Digest) -> tuple[int, p4d.P4Data] | None:
        """(digest id, P4Data) of a data-plane digest, or None when not configured."""
        for info in self.schema.digests.values():
            if info.preamble.name == digest.name:
                if info.preamble.id not in self.digest_configs:
                    return None
                return info.preamble.id, self._p4data(info, digest.values)
        return None

    def _p4data(self, info: p4i.Digest, values: tuple[int, ...]) -> p4d.P4Data:
        spec = info.type_spec
        if spec.HasField("struct"):
            out = p4d.P4Data()
            out.struct.SetInParent()
            members = self.schema.p4info.type_info.structs[spec.struct.name].members \
                if spec.struct.name in self.schema.p4info.type_info.structs else []
            for i, value in enumerate(values):
                if value < 0 and i < len(members):  # an int<W> member: its W-bit two's complement
                    value &= (1 << _bitwidth(members[i].type_spec)) - 1
                out.struct.members.add(bitstring=encode_bytes(value))
            return out
        value = values[0] if values else 0
        if value < 0:
            value &= (1 << _bitwidth(spec)) - 1
        return p4d.P4Data(bitstring=encode_bytes(value))


def _bitwidth(spec: p4t.P4DataTypeSpec) -> int:
    """The width of a bitstring type spec (bit<W>/int<W>/varbit; 64 when it names none)."""
    if spec.HasField("bitstring"):
        bs = spec.bitstring
        for kind in ("bit", "int", "varbit"):
            if bs.HasField(kind):
                return getattr(bs, kind).bitwidth if kind != "varbit" else bs.varbit.max_bitwidth
    return 64
