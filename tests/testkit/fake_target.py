"""An in-memory target that records control-plane state and runs a scripted packet function.

TEST DOUBLE for tests of the P4Runtime layer and the switch process, independent of the
real executor. ``sample_p4info()`` is a small hand-written P4Info exercising every entity kind.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable, Sequence

from finsy.proto import p4i

from innet.switch.p4runtime.target_api import (
    BoundAction,
    ProgramEntry,
    Digest,
    EntryHandle,
    LoadedConfig,
    MatchKey,
    MeterRates,
    PreReplica,
    TargetError,
)

PacketFunction = Callable[["FakePipeline", int, bytes], list[tuple[int, bytes]]]


def echo(pipeline: "FakePipeline", port: int, data: bytes) -> list[tuple[int, bytes]]:
    """Default packet function: send the packet back out of the port it came from."""
    return [(port, data)]


@dataclass
class FakePipeline:
    """State of one loaded fake program."""

    p4info: p4i.P4Info
    packet_function: PacketFunction = echo
    entries: dict[EntryHandle, tuple[str, MatchKey, int, BoundAction]] = field(default_factory=dict)
    defaults: dict[str, BoundAction] = field(default_factory=dict)
    const: dict[str, list[ProgramEntry]] = field(default_factory=dict)
    counters: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    direct_counters: dict[EntryHandle, tuple[int, int]] = field(default_factory=dict)
    meters: dict[tuple[str, int], MeterRates | None] = field(default_factory=dict)
    registers: dict[tuple[str, int], int] = field(default_factory=dict)
    groups: dict[int, list[PreReplica]] = field(default_factory=dict)
    sessions: dict[int, tuple[list[PreReplica], int, int]] = field(default_factory=dict)
    digests: list[Digest] = field(default_factory=list)
    processed: list[tuple[int, bytes]] = field(default_factory=list)
    _handles: itertools.count = field(default_factory=lambda: itertools.count(1))

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        self.processed.append((port, data))
        return self.packet_function(self, port, data)

    def table_insert(self, table: str, key: MatchKey, priority: int, action: BoundAction) -> EntryHandle:
        handle = next(self._handles)
        self.entries[handle] = (table, key, priority, action)
        return handle

    def table_modify(self, table: str, handle: EntryHandle, action: BoundAction) -> None:
        t, key, prio, _ = self.entries[handle]
        self.entries[handle] = (t, key, prio, action)

    def table_delete(self, table: str, handle: EntryHandle) -> None:
        del self.entries[handle]
        self.direct_counters.pop(handle, None)

    def table_set_default(self, table: str, action: BoundAction | None) -> None:
        if action is None:
            self.defaults.pop(table, None)
        else:
            self.defaults[table] = action

    def table_get_default(self, table: str) -> BoundAction:
        return self.defaults.get(table, BoundAction("NoAction"))

    def table_const_entries(self, table: str) -> list[ProgramEntry]:
        return list(self.const.get(table, []))

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        return self.counters.get((name, index), (0, 0))

    def counter_write(self, name: str, index: int, byte_count: int, packet_count: int) -> None:
        self.counters[(name, index)] = (byte_count, packet_count)

    def direct_counter_read(self, table: str, handle: EntryHandle) -> tuple[int, int]:
        return self.direct_counters.get(handle, (0, 0))

    def direct_counter_write(self, table: str, handle: EntryHandle, byte_count: int,
                             packet_count: int) -> None:
        self.direct_counters[handle] = (byte_count, packet_count)

    def meter_set(self, name: str, index: int, rates: MeterRates | None) -> None:
        self.meters[(name, index)] = rates

    def direct_meter_set(self, table: str, handle: EntryHandle, rates: MeterRates | None) -> None:
        self.meters[(table, -int(str(handle)))] = rates

    def register_read(self, name: str, index: int) -> int:
        return self.registers.get((name, index), 0)

    def register_write(self, name: str, index: int, value: int) -> None:
        self.registers[(name, index)] = value

    def register_read_range(self, name: str, start: int, n: int) -> list[int]:
        return [self.register_read(name, i) for i in range(start, start + n)]

    def register_write_range(self, name: str, start: int, values: Sequence[int]) -> None:
        for i, value in enumerate(values):
            self.register_write(name, start + i, value)

    def multicast_group_set(self, group: int, replicas: Sequence[PreReplica]) -> None:
        self.groups[group] = list(replicas)

    def multicast_group_delete(self, group: int) -> None:
        del self.groups[group]

    def clone_session_set(self, session: int, replicas: Sequence[PreReplica], class_of_service: int,
                          truncate: int) -> None:
        self.sessions[session] = (list(replicas), class_of_service, truncate)

    def clone_session_delete(self, session: int) -> None:
        del self.sessions[session]

    def take_digests(self) -> list[Digest]:
        out, self.digests = self.digests, []
        return out


class FakeTarget:
    """Loads any non-empty device config that is not ``b"bad"``; needs a P4Info."""

    def __init__(self, packet_function: PacketFunction = echo) -> None:
        self.packet_function = packet_function
        self.loaded: list[FakePipeline] = []

    @property
    def pipeline(self) -> FakePipeline:
        """The most recently loaded pipeline."""
        return self.loaded[-1]

    def load(self, p4info: p4i.P4Info | None, device_config: bytes) -> LoadedConfig:
        if device_config == b"bad":
            raise TargetError("fake target: device config b'bad' is invalid by definition")
        if p4info is None:
            raise TargetError("fake target: cannot derive a P4Info from a device config")
        pipeline = FakePipeline(p4info, self.packet_function)
        self.loaded.append(pipeline)
        return LoadedConfig(p4info, pipeline)


def sample_p4info() -> p4i.P4Info:
    """A P4Info with exact/lpm and ternary tables, counters, meter, register, digest, packet I/O."""
    info = p4i.P4Info()
    info.pkg_info.arch = "v1model"
    noaction = info.actions.add()
    noaction.preamble.id, noaction.preamble.name = 21257015, "NoAction"
    forward = info.actions.add()
    forward.preamble.id, forward.preamble.name = 0x01000001, "MyIngress.forward"
    forward.params.add(id=1, name="port", bitwidth=9)
    forward.params.add(id=2, name="mac", bitwidth=48)
    drop = info.actions.add()
    drop.preamble.id, drop.preamble.name = 0x01000002, "MyIngress.drop"

    lpm = info.tables.add()
    lpm.preamble.id, lpm.preamble.name = 0x02000001, "MyIngress.ipv4_lpm"
    lpm.match_fields.add(id=1, name="hdr.ethernet.etherType", bitwidth=16, match_type=p4i.MatchField.EXACT)
    lpm.match_fields.add(id=2, name="hdr.ipv4.dstAddr", bitwidth=32, match_type=p4i.MatchField.LPM)
    lpm.action_refs.add(id=forward.preamble.id)
    lpm.action_refs.add(id=drop.preamble.id)
    lpm.action_refs.add(id=noaction.preamble.id, scope=p4i.ActionRef.DEFAULT_ONLY)
    lpm.size = 4
    lpm.direct_resource_ids.append(0x13000001)

    acl = info.tables.add()
    acl.preamble.id, acl.preamble.name = 0x02000002, "MyIngress.acl"
    acl.match_fields.add(id=1, name="hdr.ipv4.srcAddr", bitwidth=32, match_type=p4i.MatchField.TERNARY)
    acl.match_fields.add(id=2, name="hdr.udp.dstPort", bitwidth=16, match_type=p4i.MatchField.RANGE)
    acl.match_fields.add(id=3, name="meta.flag", bitwidth=1, match_type=p4i.MatchField.OPTIONAL)
    acl.action_refs.add(id=drop.preamble.id)
    acl.action_refs.add(id=noaction.preamble.id)
    acl.size = 1024

    fixed = info.tables.add()
    fixed.preamble.id, fixed.preamble.name = 0x02000003, "MyIngress.fixed"
    fixed.match_fields.add(id=1, name="hdr.ethernet.dstAddr", bitwidth=48, match_type=p4i.MatchField.EXACT)
    fixed.action_refs.add(id=drop.preamble.id)
    fixed.const_default_action_id = drop.preamble.id
    fixed.is_const_table = True

    dc = info.direct_counters.add()
    dc.preamble.id, dc.preamble.name = 0x13000001, "MyIngress.lpm_hits"
    dc.direct_table_id = lpm.preamble.id
    counter = info.counters.add()
    counter.preamble.id, counter.preamble.name = 0x12000001, "MyIngress.port_packets"
    counter.size = 8
    meter = info.meters.add()
    meter.preamble.id, meter.preamble.name = 0x14000001, "MyIngress.port_meter"
    meter.size = 4
    register = info.registers.add()
    register.preamble.id, register.preamble.name = 0x16000001, "MyIngress.accum"
    register.type_spec.bitstring.bit.bitwidth = 32
    register.size = 16
    digest = info.digests.add()
    digest.preamble.id, digest.preamble.name = 0x17000001, "learn_t"
    digest.type_spec.struct.name = "learn_t"
    members = info.type_info.structs["learn_t"].members
    m = members.add(name="mac")
    m.type_spec.bitstring.bit.bitwidth = 48
    m = members.add(name="port")
    m.type_spec.bitstring.bit.bitwidth = 9

    packet_in = info.controller_packet_metadata.add()
    packet_in.preamble.id, packet_in.preamble.name = 0x04000001, "packet_in"
    packet_in.metadata.add(id=1, name="ingress_port", bitwidth=9)
    packet_in.metadata.add(id=2, name="_pad", bitwidth=7)
    packet_out = info.controller_packet_metadata.add()
    packet_out.preamble.id, packet_out.preamble.name = 0x04000002, "packet_out"
    packet_out.metadata.add(id=1, name="egress_port", bitwidth=9)
    packet_out.metadata.add(id=2, name="_pad", bitwidth=7)
    for group in (info.tables, info.actions, info.counters, info.direct_counters, info.meters,
                  info.registers, info.digests, info.controller_packet_metadata):
        for obj in group:
            obj.preamble.alias = obj.preamble.name.split(".")[-1]
    return info
