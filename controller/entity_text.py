"""Table entries as the words of ``simple_switch_CLI``, against any program's P4Info.

    entry = parse_entry(schema, "MyIngress.ipv4_lpm", ["10.0.1.1/32"], "ipv4_forward",
                        ["00:00:00:00:01:01", "1"])
    format_entry(entry)   # 'MyIngress.ipv4_lpm 10.0.1.1/32 => MyIngress.ipv4_forward(dstAddr=..., port=1)'

Why a text layer: ``innet table add``/``dump`` take and print entries the way users of
BMv2's CLI and the P4 tutorials write them, for whatever program runs, with names and
widths checked by :mod:`innet.controller.entities` (one error line naming the table,
field and value). Key words, in the table's key order: ``V`` (exact or optional), ``V/LEN``
(lpm), ``V&&&MASK`` (ternary), ``LOW->HIGH`` (range); any word may also be ``FIELD=...``
naming its field, and a field left out is a wildcard. Action parameters are ``V`` in the
action's order or ``NAME=V``. Values are decimal, ``0x`` hex, IPv4, IPv6 or MAC.
"""

from __future__ import annotations

import ipaddress
from typing import Mapping, Sequence

from innet.controller.entities import Exact, Lpm, Match, Optional, Range, TableEntry, Ternary
from innet.controller.errors import SchemaError
from innet.controller.schema import MatchFieldInfo, P4Schema, TableInfo, Value


def _named(words: Sequence[str], names: Sequence[str], what: str) -> dict[str, str]:
    """Words in order (``V``) or by name (``NAME=V``; a MAC or IPv6 value has no ``=``)."""
    out: dict[str, str] = {}
    for i, word in enumerate(words):
        name, sep, value = word.partition("=")
        if sep and name and not name[0].isdigit():
            out[name] = value
        elif i < len(names):
            out[names[i]] = word
        else:
            raise SchemaError(f"{what}: {len(words)} values for {len(names)} "
                              f"({', '.join(names) or 'none'}): {word!r} is one too many")
    return out


def _match(f: MatchFieldInfo, text: str, what: str) -> Match:
    if f.kind == "lpm":
        value, sep, plen = text.partition("/")
        if sep and not plen.isdigit():
            raise SchemaError(f"{what}: prefix length {plen!r} of {text!r} is not a number")
        return Lpm(value, int(plen) if sep else f.bitwidth)
    if f.kind == "ternary":
        value, sep, mask = text.partition("&&&")
        return Ternary(value, mask if sep else (1 << f.bitwidth) - 1)
    if f.kind == "range":
        low, sep, high = text.partition("->")
        if not sep:
            raise SchemaError(f"{what}: a range field takes LOW->HIGH, not {text!r}")
        return Range(low, high)
    if f.kind == "optional":
        return Optional(text)
    return Exact(text)


def parse_match(table: TableInfo, words: Sequence[str]) -> dict[str, Match]:
    """The key of an entry of ``table`` from its words (see module docstring)."""
    names = [f.name for f in table.match_fields]
    given = _named(words, names, f"table {table.name!r} key")
    return {table.field(name).name: _match(table.field(name), text, f"table {table.name!r} field {name!r}")
            for name, text in given.items()}


def parse_entry(schema: P4Schema, table: str, key: Sequence[str], action: str = "",
                params: Sequence[str] = (), priority: int = 0) -> TableEntry:
    """A TableEntry of ``table`` from ``simple_switch_CLI`` words (names resolved, values
    checked when it is turned into a P4Runtime entity)."""
    info = schema.table(table)
    values: dict[str, Value] = {}
    if action:
        signature = schema.action(action, info)
        values = dict(_named(params, [p.name for p in signature.params], f"action {signature.name!r} parameters"))
        action = signature.name
    elif params:
        raise SchemaError(f"table {info.name!r}: action parameters {' '.join(params)!r} given without an action")
    return TableEntry(info.name, parse_match(info, key), action, values, priority)


def show_value(value: object, bitwidth: int | None = None, name: str = "") -> str:
    """A value as a user writes it back: 48 bits as a MAC, 32 bits of an address-like name
    (``ip``, ``addr``) as IPv4, other numbers in decimal."""
    if not isinstance(value, int):
        return str(value)
    if bitwidth == 48:
        return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))
    if bitwidth == 32 and any(w in name.lower() for w in ("ip", "addr")):
        return str(ipaddress.IPv4Address(value))
    return str(value)


def _widths(schema: P4Schema | None, entry: TableEntry) -> tuple[dict[str, int], dict[str, int]]:
    """Bit widths of the entry's key fields and action parameters (empty without a schema)."""
    if schema is None:
        return {}, {}
    table = schema.table(entry.table)
    fields = {f.name: f.bitwidth for f in table.match_fields}
    params = {p.name: p.bitwidth for p in schema.action(entry.action).params} if entry.action else {}
    return fields, params


def format_match(match: Mapping[str, Match], widths: Mapping[str, int] | None = None) -> str:
    """The key words of an entry read back (``*``: no key given, every field a wildcard)."""
    words = []
    for name, m in match.items():
        short = name.rpartition(".")[2]

        def show(v: object) -> str:
            return show_value(v, (widths or {}).get(name), short)

        if isinstance(m, Lpm):
            words.append(f"{short}={show(m.value)}/{m.prefix_len}")
        elif isinstance(m, Ternary):
            words.append(f"{short}={show(m.value)}&&&{show(m.mask)}")
        elif isinstance(m, Range):
            words.append(f"{short}={show(m.low)}->{show(m.high)}")
        elif isinstance(m, (Exact, Optional)):
            words.append(f"{short}={show(m.value)}")
        else:
            words.append(f"{short}={show(m)}")
    return " ".join(words) or "*"


def format_entry(entry: TableEntry, schema: P4Schema | None = None, with_action: bool = True) -> str:
    """One line: table, key, priority, ``=>`` action(parameters); values shown by their
    widths in ``schema`` (MAC, IPv4) when given."""
    fields, widths = _widths(schema, entry)
    params = ", ".join(f"{k}={show_value(v, widths.get(k), k)}" for k, v in entry.params.items())
    key = "(default)" if entry.is_default else format_match(entry.match, fields)
    priority = f" priority {entry.priority}" if entry.priority else ""
    action = f" => {entry.action or '(none)'}({params})" if with_action else ""
    return f"{entry.table} {key}{priority}{action}"
