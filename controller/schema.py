"""The P4Info layer: names to ids and widths, and P4Runtime's bytestring rules.

Names may be given in full (``MyIngress.ipv4_lpm``) or by a dotted suffix
(``ipv4_lpm``) when that is unambiguous (:mod:`innet.names`), as p4runtime-shell and finsy allow.  An unknown
name raises :class:`UnknownNameError` with near matches.

Values are Python ints, or strings in the usual notations (``10.0.0.1``,
``00:00:0a:00:00:01``, ``0x1f``, ``42``).  A negative int is encoded in two's complement
of the field's width (P4's ``bit<32>`` holding a signed fixed-point number).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Generic, TypeVar

from finsy.proto import p4i, p4t

from innet.controller.errors import SchemaError, UnknownNameError, ValueRangeError
from innet.names import by_suffix, short_name
from innet.switch.p4rt_codec.bytestrings import bitstring_width, encode_bytes
from innet.switch.p4rt_codec.matches import MATCH_KINDS, PRIORITY_MATCH_TYPES
from innet.switch.p4rt_codec.status import P4RuntimeError

_PRIORITY_KINDS = frozenset(MATCH_KINDS[t] for t in PRIORITY_MATCH_TYPES)

Value = int | str


def parse_value(value: Value, what: str) -> int:
    """An int from an int or a string: IPv4 dotted quad, MAC (``aa:bb:..``), 0x-hex or decimal."""
    if isinstance(value, bool):
        raise ValueRangeError(f"{what}: expected an integer, got the bool {value!r}")
    if isinstance(value, int):
        return value
    text = value.strip()
    try:
        if text.count(".") == 3:
            return int(ipaddress.IPv4Address(text))
        if ":" in text and text.count(":") == 5:
            return int(text.replace(":", ""), 16)
        if ":" in text:
            return int(ipaddress.IPv6Address(text))
        return int(text, 0)
    except ValueError:
        raise ValueRangeError(f"{what}: cannot read {value!r} as a number, IPv4/IPv6 or MAC address") from None


def encode(value: Value, bitwidth: int, what: str) -> bytes:
    """The canonical P4Runtime bytestring (shortest, at least one byte) of ``value``;
    ValueRangeError when it does not fit ``bitwidth`` bits."""
    return encode_bytes(fit(value, bitwidth, what))


def fit(value: Value, bitwidth: int, what: str) -> int:
    """``value`` as the unsigned ``bitwidth``-bit number P4Runtime carries (a negative int
    in two's complement); ValueRangeError when it does not fit."""
    number = parse_value(value, what)
    if number < 0:
        if number < -(1 << (bitwidth - 1)):
            raise ValueRangeError(f"{what}: value {number} does not fit a signed {bitwidth}-bit field "
                                  f"(minimum {-(1 << (bitwidth - 1))})")
        number += 1 << bitwidth
    if number >= 1 << bitwidth:
        raise ValueRangeError(f"{what}: value {value!r} does not fit {bitwidth} bits (maximum {(1 << bitwidth) - 1})")
    return number


def decode(data: bytes) -> int:
    """The unsigned int of a bytestring."""
    return int.from_bytes(data, "big")


def to_signed(value: int, bitwidth: int) -> int:
    """Two's complement reading of an unsigned ``bitwidth``-bit value."""
    return value - (1 << bitwidth) if value >> (bitwidth - 1) & 1 else value


@dataclass(frozen=True)
class MatchFieldInfo:
    id: int
    name: str
    bitwidth: int
    kind: str
    """One of exact, lpm, ternary, range, optional."""


@dataclass(frozen=True)
class ParamInfo:
    id: int
    name: str
    bitwidth: int


@dataclass(frozen=True)
class ActionSignature:
    id: int
    name: str
    params: tuple[ParamInfo, ...]

    def param(self, name: str) -> ParamInfo:
        for p in self.params:
            if p.name == name:
                return p
        raise UnknownNameError("parameter", name, [p.name for p in self.params], f"action {self.name!r}")


@dataclass(frozen=True)
class TableInfo:
    id: int
    name: str
    match_fields: tuple[MatchFieldInfo, ...]
    action_ids: tuple[int, ...]
    size: int
    is_const: bool

    @property
    def needs_priority(self) -> bool:
        """P4Runtime: priority > 0 exactly when a key is ternary, range or optional."""
        return any(f.kind in _PRIORITY_KINDS for f in self.match_fields)

    def field(self, name: str) -> MatchFieldInfo:
        for f in self.match_fields:
            if f.name == name or short_name(f.name) == name:
                return f
        raise UnknownNameError("match field", name, [f.name for f in self.match_fields], f"table {self.name!r}")


@dataclass(frozen=True)
class RegisterInfo:
    id: int
    name: str
    size: int
    bitwidth: int


@dataclass(frozen=True)
class CounterInfo:
    id: int
    name: str
    size: int
    unit: str
    """bytes, packets or both."""


@dataclass(frozen=True)
class PacketMetadataInfo:
    id: int
    name: str
    bitwidth: int


T = TypeVar("T")


class _Index(Generic[T]):
    """Objects of one kind by full name, short name and id."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.by_name: dict[str, T] = {}
        self.by_id: dict[int, T] = {}

    def add(self, name: str, obj_id: int, obj: T) -> None:
        self.by_name[name] = obj
        self.by_id[obj_id] = obj

    def get(self, name: str) -> T:
        full = by_suffix(name, self.by_name)
        if len(full) == 1:
            return self.by_name[full[0]]
        if len(full) > 1:
            raise SchemaError(f"{self.kind} name {name!r} is ambiguous: " + ", ".join(sorted(full)))
        raise UnknownNameError(self.kind, name, self.by_name)

    def id(self, obj_id: int) -> T:
        try:
            return self.by_id[obj_id]
        except KeyError:
            raise SchemaError(f"no {self.kind} with id {obj_id} in the P4Info") from None

    def names(self) -> list[str]:
        return list(self.by_name)


def _bitwidth(type_spec: p4t.P4DataTypeSpec, what: str) -> int:
    try:
        return bitstring_width(type_spec, what)
    except P4RuntimeError as error:
        raise SchemaError(f"{error.message}; only bit<W>/int<W>/bool registers are supported") from None


class P4Schema:
    """An index over one P4Info."""

    def __init__(self, p4info: p4i.P4Info) -> None:
        self.p4info = p4info
        self.tables: _Index[TableInfo] = _Index("table")
        self.actions: _Index[ActionSignature] = _Index("action")
        self.registers: _Index[RegisterInfo] = _Index("register")
        self.counters: _Index[CounterInfo] = _Index("counter")
        for a in p4info.actions:
            params = tuple(ParamInfo(p.id, p.name, p.bitwidth) for p in a.params)
            self.actions.add(a.preamble.name, a.preamble.id, ActionSignature(a.preamble.id, a.preamble.name, params))
        for t in p4info.tables:
            fields = tuple(MatchFieldInfo(f.id, f.name, f.bitwidth, MATCH_KINDS.get(f.match_type, "exact"))
                           for f in t.match_fields)
            info = TableInfo(t.preamble.id, t.preamble.name, fields, tuple(r.id for r in t.action_refs),
                             int(t.size), bool(t.is_const_table))
            self.tables.add(t.preamble.name, t.preamble.id, info)
        for r in p4info.registers:
            self.registers.add(r.preamble.name, r.preamble.id, RegisterInfo(
                r.preamble.id, r.preamble.name, int(r.size), _bitwidth(r.type_spec, f"register {r.preamble.name!r}")))
        units = {1: "bytes", 2: "packets", 3: "both"}
        for c in p4info.counters:
            self.counters.add(c.preamble.name, c.preamble.id, CounterInfo(
                c.preamble.id, c.preamble.name, int(c.size), units.get(c.spec.unit, "both")))
        self.packet_out: tuple[PacketMetadataInfo, ...] = ()
        for h in p4info.controller_packet_metadata:
            if h.preamble.name == "packet_out":
                self.packet_out = tuple(PacketMetadataInfo(m.id, m.name, m.bitwidth) for m in h.metadata)

    def table(self, name: str) -> TableInfo:
        return self.tables.get(name)

    def action(self, name: str, table: TableInfo | None = None) -> ActionSignature:
        action = self.actions.get(name)
        if table is not None and table.action_ids and action.id not in table.action_ids:
            allowed = [self.actions.id(i).name for i in table.action_ids if i in self.actions.by_id]
            raise UnknownNameError("action", name, allowed, f"the actions of table {table.name!r}")
        return action

    def register(self, name: str) -> RegisterInfo:
        return self.registers.get(name)

    def counter(self, name: str) -> CounterInfo:
        return self.counters.get(name)

    def has_table(self, name: str) -> bool:
        try:
            self.tables.get(name)
            return True
        except SchemaError:
            return False
