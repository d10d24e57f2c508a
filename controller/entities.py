"""Typed entities: table entries, register cells, counters and multicast groups by
*name*, translated to and from P4Runtime protos through a :class:`P4Schema`.

    entry = TableEntry("ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm("10.0.1.0", 24)},
                       "ipv4_forward", {"mac": "00:00:00:00:01:01", "port": 1})
    update = insert(schema, entry)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence, Union

from finsy.proto import p4d, p4r

from innet.controller.errors import SchemaError, ValueRangeError
from innet.controller.schema import MatchFieldInfo, P4Schema, TableInfo, Value, decode, encode, fit, parse_value
from innet.switch.p4rt_codec.matches import (
    ExactMatch,
    FieldMatch,
    LpmMatch,
    OptionalMatch,
    RangeMatch,
    TernaryMatch,
    action_proto,
    field_match_proto,
    priority_problem,
)


@dataclass(frozen=True)
class Exact:
    value: Value


@dataclass(frozen=True)
class Lpm:
    value: Value
    prefix_len: int


@dataclass(frozen=True)
class Ternary:
    value: Value
    mask: Value


@dataclass(frozen=True)
class Range:
    low: Value
    high: Value


@dataclass(frozen=True)
class Optional:
    value: Value


Match = Union[Exact, Lpm, Ternary, Range, Optional, int, str]
"""A bare int or string is an exact value (or ``"ADDR/LEN"`` for an lpm field)."""


@dataclass(frozen=True)
class TableEntry:
    """One entry (or, with ``is_default``, the default action) of a table."""

    table: str
    """Table name, full or short."""
    match: Mapping[str, Match] = field(default_factory=dict)
    """Match field name (full or last component) to match; omitted fields are wildcards."""
    action: str = ""
    """Action name; empty only for reads and deletes."""
    params: Mapping[str, Value] = field(default_factory=dict)
    """Action parameter name to value."""
    priority: int = 0
    """Needed (> 0) exactly when the table has ternary/range/optional keys."""
    is_default: bool = False
    """The table's default action (written with MODIFY, no match)."""


@dataclass(frozen=True)
class Replica:
    port: int
    """Egress port of the copy."""
    rid: int
    """Replication id (``standard_metadata.egress_rid`` of the copy)."""


def _field_match(f: MatchFieldInfo, match: Match, what: str) -> p4r.FieldMatch | None:
    """The FieldMatch of one key field given by the user, None for a don't-care; values
    are checked against the field's width here, encoded by the switch layer's rules."""
    width = f.bitwidth
    if not isinstance(match, (Exact, Lpm, Ternary, Range, Optional)):
        if f.kind == "lpm" and isinstance(match, str) and "/" in match:
            addr, _, plen = match.partition("/")
            match = Lpm(addr, int(plen))
        elif f.kind == "lpm":
            match = Lpm(match, width)
        elif f.kind == "optional":
            match = Optional(match)
        elif f.kind == "exact":
            match = Exact(match)
        else:
            raise SchemaError(f"{what} is a {f.kind} field: give {f.kind.capitalize()}(...), not {match!r}")
    target: FieldMatch
    if f.kind == "exact" and isinstance(match, Exact):
        target = ExactMatch(fit(match.value, width, what))
    elif f.kind == "lpm" and isinstance(match, Lpm):
        if not 0 <= match.prefix_len <= width:
            raise ValueRangeError(f"{what}: prefix length {match.prefix_len} is outside 0..{width}")
        prefix = ((1 << width) - 1) ^ ((1 << (width - match.prefix_len)) - 1)
        value = parse_value(match.value, what) & prefix
        target = LpmMatch(fit(value, width, what), match.prefix_len)
    elif f.kind == "ternary" and isinstance(match, Ternary):
        mask = parse_value(match.mask, what + " mask")
        value = parse_value(match.value, what) & mask
        target = TernaryMatch(fit(value, width, what), fit(mask, width, what + " mask"))
    elif f.kind == "range" and isinstance(match, Range):
        low, high = parse_value(match.low, what), parse_value(match.high, what)
        if low > high:
            raise ValueRangeError(f"{what}: range low {low} is above high {high}")
        target = RangeMatch(fit(low, width, what), fit(high, width, what))
    elif f.kind == "optional" and isinstance(match, Optional):
        target = OptionalMatch(fit(match.value, width, what))
    else:
        raise SchemaError(f"{what} is a {f.kind} field, but the match given is {type(match).__name__}")
    return field_match_proto(f.id, width, target)


def table_entry_proto(schema: P4Schema, entry: TableEntry) -> p4r.TableEntry:
    """The P4Runtime TableEntry for ``entry`` (names and values checked)."""
    table = schema.table(entry.table)
    out = p4r.TableEntry(table_id=table.id)
    if entry.is_default:
        out.is_default_action = True
        if entry.match:
            raise SchemaError(f"default entry of table {table.name!r} cannot have a match")
    else:
        fields = [(table.field(name), m) for name, m in entry.match.items()]
        for info, m in sorted(fields, key=lambda x: x[0].id):
            fm = _field_match(info, m, f"table {table.name!r} field {info.name!r}")
            if fm is not None:
                out.match.append(fm)
        problem = priority_problem(table.name, table.needs_priority, entry.priority)
        if problem is not None:
            raise ValueRangeError(problem)
        out.priority = entry.priority
    if entry.action:
        action = schema.action(entry.action, table)
        out.action.action.action_id = action.id
        for name in entry.params:
            action.param(name)  # unknown parameter names fail with suggestions
        missing = [p.name for p in action.params if p.name not in entry.params]
        if missing:
            raise SchemaError(f"action {action.name!r} of table {table.name!r}: missing parameter(s) "
                              + ", ".join(repr(m) for m in missing))
        out.action.action.CopyFrom(action_proto(action.id, (
            (p.id, fit(entry.params[p.name], p.bitwidth, f"action {action.name!r} parameter {p.name!r}"))
            for p in action.params)))
    return out


def table_entry_from_proto(schema: P4Schema, proto: p4r.TableEntry) -> TableEntry:
    """A read-back entry, values as ints (lpm as Lpm, ternary as Ternary, ...)."""
    table = schema.tables.id(proto.table_id)
    by_id = {f.id: f for f in table.match_fields}
    match: dict[str, Match] = {}
    for fm in proto.match:
        name = by_id[fm.field_id].name if fm.field_id in by_id else str(fm.field_id)
        kind = fm.WhichOneof("field_match_type")
        if kind == "exact":
            match[name] = decode(fm.exact.value)
        elif kind == "lpm":
            match[name] = Lpm(decode(fm.lpm.value), fm.lpm.prefix_len)
        elif kind == "ternary":
            match[name] = Ternary(decode(fm.ternary.value), decode(fm.ternary.mask))
        elif kind == "range":
            match[name] = Range(decode(fm.range.low), decode(fm.range.high))
        elif kind == "optional":
            match[name] = Optional(decode(fm.optional.value))
    action_name, params = "", {}
    if proto.action.WhichOneof("type") == "action":
        action = schema.actions.id(proto.action.action.action_id)
        action_name = action.name
        pnames = {p.id: p.name for p in action.params}
        params = {pnames.get(p.param_id, str(p.param_id)): decode(p.value) for p in proto.action.action.params}
    return TableEntry(table.name, match, action_name, params, proto.priority, proto.is_default_action)


def _update(kind: int, entity: p4r.Entity) -> p4r.Update:
    return p4r.Update(type=kind, entity=entity)  # type: ignore[arg-type]


def insert(schema: P4Schema, entry: TableEntry) -> p4r.Update:
    kind = p4r.Update.MODIFY if entry.is_default else p4r.Update.INSERT
    return _update(kind, p4r.Entity(table_entry=table_entry_proto(schema, entry)))


def modify(schema: P4Schema, entry: TableEntry) -> p4r.Update:
    return _update(p4r.Update.MODIFY, p4r.Entity(table_entry=table_entry_proto(schema, entry)))


def delete(schema: P4Schema, entry: TableEntry) -> p4r.Update:
    proto = table_entry_proto(schema, TableEntry(entry.table, entry.match, "", {}, entry.priority))
    return _update(p4r.Update.DELETE, p4r.Entity(table_entry=proto))


def table_read(schema: P4Schema, table: str | None = None) -> p4r.Entity:
    """Selector for all entries of ``table`` (all tables when None)."""
    return p4r.Entity(table_entry=p4r.TableEntry(table_id=schema.table(table).id if table else 0))


def check_indexes(size: int, indexes: range | Sequence[int], what: str) -> None:
    if len(indexes) and (min(indexes) < 0 or max(indexes) >= size):
        bad = min(indexes) if min(indexes) < 0 else max(indexes)
        raise ValueRangeError(f"{what}: index {bad} is outside 0..{size - 1}")


def register_writes(schema: P4Schema, register: str, cells: Iterable[tuple[int, int]]) -> list[p4r.Update]:
    """MODIFY updates writing ``value`` at ``index`` for each (index, value)."""
    info = schema.register(register)
    what = f"register {info.name!r}"
    out = []
    for index, value in cells:
        if not 0 <= index < info.size:
            raise ValueRangeError(f"{what}: index {index} is outside 0..{info.size - 1}")
        entry = p4r.RegisterEntry(register_id=info.id, data=p4d.P4Data(bitstring=encode(int(value), info.bitwidth, what)))
        entry.index.index = index
        out.append(_update(p4r.Update.MODIFY, p4r.Entity(register_entry=entry)))
    return out


def register_reads(schema: P4Schema, register: str, indexes: range) -> list[p4r.Entity]:
    """Selectors for cells ``indexes`` of ``register``: one wildcard read when the range
    covers most of the register, else one selector per index."""
    info = schema.register(register)
    check_indexes(info.size, indexes, f"register {info.name!r}")
    if len(indexes) * 4 >= info.size:
        return [p4r.Entity(register_entry=p4r.RegisterEntry(register_id=info.id))]
    out = []
    for i in indexes:
        entry = p4r.RegisterEntry(register_id=info.id)
        entry.index.index = i
        out.append(p4r.Entity(register_entry=entry))
    return out


def counter_read(schema: P4Schema, counter: str, index: int | None = None) -> p4r.Entity:
    info = schema.counter(counter)
    entry = p4r.CounterEntry(counter_id=info.id)
    if index is not None:
        check_indexes(info.size, [index], f"counter {info.name!r}")
        entry.index.index = index
    return p4r.Entity(counter_entry=entry)


def counter_write(schema: P4Schema, counter: str, index: int, packets: int = 0, nbytes: int = 0) -> p4r.Update:
    info = schema.counter(counter)
    check_indexes(info.size, [index], f"counter {info.name!r}")
    entry = p4r.CounterEntry(counter_id=info.id)
    entry.index.index = index
    entry.data.packet_count, entry.data.byte_count = packets, nbytes
    return _update(p4r.Update.MODIFY, p4r.Entity(counter_entry=entry))


def multicast_group(group_id: int, replicas: Sequence[Replica], kind: int = p4r.Update.INSERT) -> p4r.Update:
    """A multicast group write.  Replicas use the uint32 ``egress_port`` form (deprecated
    in P4Runtime 1.5 for the ``port`` bytestring, but the one every server reads, BMv2
    included)."""
    if not 1 <= group_id < (1 << 16):
        raise ValueRangeError(f"multicast group id {group_id} is outside 1..65535")
    entry = p4r.MulticastGroupEntry(multicast_group_id=group_id)
    for r in replicas:
        entry.replicas.add(egress_port=r.port, instance=r.rid)
    return _update(kind, p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
        multicast_group_entry=entry)))


def describer(schema: P4Schema):  # type: ignore[no-untyped-def]
    """A ``describe(update)`` for write errors that names the P4 object."""

    def describe(update: p4r.Update) -> str:
        e = update.entity
        which = e.WhichOneof("entity")
        verb = p4r.Update.Type.Name(update.type)
        try:
            if which == "table_entry":
                return f"{verb} table {schema.tables.id(e.table_entry.table_id).name!r}"
            if which == "register_entry":
                return (f"{verb} register {schema.registers.id(e.register_entry.register_id).name!r}"
                        f"[{e.register_entry.index.index}]")
            if which == "counter_entry":
                return f"{verb} counter {schema.counters.id(e.counter_entry.counter_id).name!r}"
        except SchemaError:
            pass
        if which == "packet_replication_engine_entry":
            return f"{verb} multicast group {e.packet_replication_engine_entry.multicast_group_entry.multicast_group_id}"
        return f"{verb} {which}"

    return describe
