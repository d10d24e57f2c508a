"""Match keys and actions: the typed values both ends use, and their P4Runtime form.

A key field is one of :class:`ExactMatch`, :class:`TernaryMatch`, :class:`LpmMatch`,
:class:`RangeMatch`, :class:`OptionalMatch` (plain integers). On the wire, a don't-care
field (ternary mask 0, lpm /0, the full range, an unset optional) is omitted, and a
table with ternary, range or optional keys needs priority > 0 (P4Runtime spec,
"TableEntry"): :func:`field_match_proto` and :func:`priority_problem` hold those rules,
:func:`decode_field_match` checks an incoming FieldMatch against them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Union

import grpc
from finsy.proto import p4i, p4r

from innet.switch.p4rt_codec.bytestrings import decode_bytes, encode_bytes
from innet.switch.p4rt_codec.status import P4RuntimeError, invalid


@dataclass(frozen=True)
class ExactMatch:
    """Field equals ``value``."""

    value: int


@dataclass(frozen=True)
class TernaryMatch:
    """``field & mask == value``; mask 0 is a don't-care."""

    value: int
    mask: int


@dataclass(frozen=True)
class LpmMatch:
    """The ``prefix_len`` most significant bits of the field equal those of ``value``."""

    value: int
    prefix_len: int


@dataclass(frozen=True)
class RangeMatch:
    """``low <= field <= high`` (inclusive)."""

    low: int
    high: int


@dataclass(frozen=True)
class OptionalMatch:
    """Field equals ``value``, or anything when ``value`` is None."""

    value: int | None


FieldMatch = Union[ExactMatch, TernaryMatch, LpmMatch, RangeMatch, OptionalMatch]
"""One field of a match key."""

MatchKey = tuple[FieldMatch, ...]
"""A full key: one element per match field, in P4Info order."""

MATCH_KINDS = {p4i.MatchField.EXACT: "exact", p4i.MatchField.LPM: "lpm", p4i.MatchField.TERNARY: "ternary",
               p4i.MatchField.RANGE: "range", p4i.MatchField.OPTIONAL: "optional"}
"""P4Info match types by the name of their FieldMatch oneof member."""

PRIORITY_MATCH_TYPES = frozenset({p4i.MatchField.TERNARY, p4i.MatchField.RANGE, p4i.MatchField.OPTIONAL})
"""Match kinds that make a table's entries need a priority (P4Runtime spec, TableEntry)."""


def priority_problem(table: str, needs_priority: bool, priority: int) -> str | None:
    """What is wrong with ``priority`` for an entry of ``table`` (P4Runtime: > 0 exactly
    when some key is ternary, range or optional), None when it is right."""
    if needs_priority and priority <= 0:
        return f"table {table!r} has ternary/range/optional keys: priority must be > 0, got {priority}"
    if not needs_priority and priority != 0:
        return f"table {table!r} has only exact/lpm keys: priority must be 0, got {priority}"
    return None


def dont_care(field: p4i.MatchField) -> FieldMatch:
    """The value of an omitted field; INVALID_ARGUMENT for an exact field (never omitted)."""
    width = int(field.bitwidth)
    match field.match_type:
        case p4i.MatchField.TERNARY:
            return TernaryMatch(0, 0)
        case p4i.MatchField.LPM:
            return LpmMatch(0, 0)
        case p4i.MatchField.RANGE:
            return RangeMatch(0, (1 << width) - 1)
        case p4i.MatchField.OPTIONAL:
            return OptionalMatch(None)
    raise invalid(f"match field {field.name!r} (exact) has no don't-care value; it must be given")


def decode_field_match(table: str, field: p4i.MatchField,
                       fm: p4r.FieldMatch) -> tuple[FieldMatch, p4r.FieldMatch]:
    """The typed value of ``fm`` for ``field`` of ``table`` and its canonical FieldMatch;
    INVALID_ARGUMENT when the kind, widths, masks, prefixes or ranges are wrong,
    UNIMPLEMENTED for match kinds outside P4Runtime's five."""
    what = f"table {table!r} field {field.name!r}"
    width = int(field.bitwidth)
    expected = MATCH_KINDS.get(field.match_type)
    kind = fm.WhichOneof("field_match_type")
    if expected is None:
        raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED,
                             f"{what}: match type {field.other_match_type or field.match_type!r}")
    if kind != expected:
        raise invalid(f"{what}: is a {expected} field but the entry gives a {kind} match")
    out = p4r.FieldMatch(field_id=field.id)
    if kind == "exact":
        v = decode_bytes(fm.exact.value, width, what)
        out.exact.value = encode_bytes(v)
        return ExactMatch(v), out
    if kind == "optional":
        v = decode_bytes(fm.optional.value, width, what)
        out.optional.value = encode_bytes(v)
        return OptionalMatch(v), out
    if kind == "ternary":
        v = decode_bytes(fm.ternary.value, width, what + " value")
        m = decode_bytes(fm.ternary.mask, width, what + " mask")
        if m == 0:
            raise invalid(f"{what}: ternary mask 0 is a don't-care; omit the field instead")
        if v & ~m:
            raise invalid(f"{what}: value {v:#x} has bits outside mask {m:#x}")
        out.ternary.value, out.ternary.mask = encode_bytes(v), encode_bytes(m)
        return TernaryMatch(v, m), out
    if kind == "lpm":
        v = decode_bytes(fm.lpm.value, width, what)
        plen = int(fm.lpm.prefix_len)
        if plen < 0 or plen > width:
            raise invalid(f"{what}: prefix length {plen} is outside 1..{width}")
        if plen == 0:
            raise invalid(f"{what}: prefix length 0 is a don't-care; omit the field instead")
        if v & ((1 << (width - plen)) - 1):
            raise invalid(f"{what}: value {v:#x} has bits set beyond the /{plen} prefix")
        out.lpm.value, out.lpm.prefix_len = encode_bytes(v), plen
        return LpmMatch(v, plen), out
    low = decode_bytes(fm.range.low, width, what + " low")
    high = decode_bytes(fm.range.high, width, what + " high")
    if low > high:
        raise invalid(f"{what}: range low {low:#x} is greater than high {high:#x}")
    if low == 0 and high == (1 << width) - 1:
        raise invalid(f"{what}: the full range is a don't-care; omit the field instead")
    out.range.low, out.range.high = encode_bytes(low), encode_bytes(high)
    return RangeMatch(low, high), out


def field_match_proto(field_id: int, bitwidth: int, match: FieldMatch) -> p4r.FieldMatch | None:
    """The canonical FieldMatch of one field of a key, None for a don't-care. Values must
    already fit ``bitwidth`` (the server checked them on the way in, the controller's
    entities check them by name)."""
    fm = p4r.FieldMatch(field_id=field_id)
    if isinstance(match, ExactMatch):
        fm.exact.value = encode_bytes(match.value)
    elif isinstance(match, TernaryMatch):
        if match.mask == 0:
            return None
        fm.ternary.value, fm.ternary.mask = encode_bytes(match.value), encode_bytes(match.mask)
    elif isinstance(match, LpmMatch):
        if match.prefix_len == 0:
            return None
        fm.lpm.value, fm.lpm.prefix_len = encode_bytes(match.value), match.prefix_len
    elif isinstance(match, RangeMatch):
        if match.low == 0 and match.high == (1 << bitwidth) - 1:
            return None
        fm.range.low, fm.range.high = encode_bytes(match.low), encode_bytes(match.high)
    else:
        if match.value is None:
            return None
        fm.optional.value = encode_bytes(match.value)
    return fm


def action_proto(action_id: int, params: Iterable[tuple[int, int]]) -> p4r.Action:
    """The canonical P4Runtime Action: ``params`` are (param id, value) in P4Info order."""
    out = p4r.Action(action_id=action_id)
    for param_id, value in params:
        out.params.add(param_id=param_id, value=encode_bytes(value))
    return out
