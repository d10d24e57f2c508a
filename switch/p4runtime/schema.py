"""The server's index over one P4Info message, by id (names are the controller's
business); the wire rules it applies live in :mod:`innet.switch.p4rt_codec`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from finsy.proto import p4i, p4t

from innet.switch.p4rt_codec.matches import PRIORITY_MATCH_TYPES
from innet.switch.p4runtime.errors import invalid, not_found

T = TypeVar("T")


@dataclass
class IndexedTable:
    """One table with its match fields and action references by id."""

    table: p4i.Table
    fields: dict[int, p4i.MatchField]
    actions: dict[int, p4i.ActionRef]
    needs_priority: bool
    """True when some field is ternary, range or optional (P4Runtime priority rule)."""
    direct_counter: p4i.DirectCounter | None = None
    direct_meter: p4i.DirectMeter | None = None

    @property
    def name(self) -> str:
        return str(self.table.preamble.name)

    @property
    def id(self) -> int:
        return int(self.table.preamble.id)


@dataclass
class Schema:
    """P4Info objects indexed by id; lookups raise P4Runtime errors naming the id."""

    p4info: p4i.P4Info
    tables: dict[int, IndexedTable] = field(default_factory=dict)
    actions: dict[int, p4i.Action] = field(default_factory=dict)
    counters: dict[int, p4i.Counter] = field(default_factory=dict)
    direct_counters: dict[int, p4i.DirectCounter] = field(default_factory=dict)
    meters: dict[int, p4i.Meter] = field(default_factory=dict)
    direct_meters: dict[int, p4i.DirectMeter] = field(default_factory=dict)
    registers: dict[int, p4i.Register] = field(default_factory=dict)
    digests: dict[int, p4i.Digest] = field(default_factory=dict)
    action_profiles: dict[int, p4i.ActionProfile] = field(default_factory=dict)
    controller_headers: dict[str, p4i.ControllerPacketMetadata] = field(default_factory=dict)

    @classmethod
    def build(cls, p4info: p4i.P4Info) -> "Schema":
        """Index ``p4info``; raises INVALID_ARGUMENT on duplicate ids."""
        schema = cls(p4info)
        seen: dict[int, str] = {}

        def add(kind: str, table: dict[int, T], obj: T, preamble: p4i.Preamble) -> None:
            if preamble.id in seen:
                raise invalid(
                    f"P4Info: id {preamble.id:#x} of {kind} {preamble.name!r} is already used "
                    f"by {seen[preamble.id]!r}"
                )
            seen[preamble.id] = preamble.name
            table[preamble.id] = obj

        for action in p4info.actions:
            add("action", schema.actions, action, action.preamble)
        for counter in p4info.counters:
            add("counter", schema.counters, counter, counter.preamble)
        for dcounter in p4info.direct_counters:
            add("direct counter", schema.direct_counters, dcounter, dcounter.preamble)
        for meter in p4info.meters:
            add("meter", schema.meters, meter, meter.preamble)
        for dmeter in p4info.direct_meters:
            add("direct meter", schema.direct_meters, dmeter, dmeter.preamble)
        for register in p4info.registers:
            add("register", schema.registers, register, register.preamble)
        for digest in p4info.digests:
            add("digest", schema.digests, digest, digest.preamble)
        for profile in p4info.action_profiles:
            add("action profile", schema.action_profiles, profile, profile.preamble)
        for table in p4info.tables:
            info = IndexedTable(
                table=table,
                fields={f.id: f for f in table.match_fields},
                actions={a.id: a for a in table.action_refs},
                needs_priority=any(f.match_type in PRIORITY_MATCH_TYPES for f in table.match_fields),
            )
            for rid in table.direct_resource_ids:
                if rid in schema.direct_counters:
                    info.direct_counter = schema.direct_counters[rid]
                elif rid in schema.direct_meters:
                    info.direct_meter = schema.direct_meters[rid]
            add("table", schema.tables, info, table.preamble)
        for header in p4info.controller_packet_metadata:
            schema.controller_headers[header.preamble.name] = header
        return schema

    def table(self, table_id: int) -> IndexedTable:
        """The table with ``table_id``, or NOT_FOUND."""
        try:
            return self.tables[table_id]
        except KeyError:
            raise not_found(f"no table with id {table_id:#x} ({table_id}) in the P4Info") from None

    def action(self, action_id: int) -> p4i.Action:
        """The action with ``action_id``, or NOT_FOUND."""
        try:
            return self.actions[action_id]
        except KeyError:
            raise not_found(f"no action with id {action_id:#x} ({action_id}) in the P4Info") from None

    def lookup(self, kind: str, objects: dict[int, T], object_id: int) -> T:
        """``objects[object_id]`` or NOT_FOUND naming ``kind``."""
        try:
            return objects[object_id]
        except KeyError:
            raise not_found(f"no {kind} with id {object_id:#x} ({object_id}) in the P4Info") from None

    def packet_header(self, kind: str) -> p4i.ControllerPacketMetadata | None:
        """The ``packet_in`` or ``packet_out`` controller header, if the program has one."""
        return self.controller_headers.get(kind)
