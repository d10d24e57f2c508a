"""STF control-plane lines as ``simple_switch_CLI`` commands, read against the program's BMv2 JSON.

An STF ``add`` names keys by field and parameters by name, in any order and by dotted
suffix; the CLI wants the table's keys in order with each match kind's syntax and the
parameters in the action's order. So each line is resolved against the JSON p4c-bm2-ss wrote
(tables, actions, key widths). The rules follow p4c's BMv2 STF driver, which is the
reference for what an STF file means on BMv2: a priority ``p`` becomes ``10000 - p`` (BMv2
prefers lower values, STF higher ones), ``*`` digits of a ternary value become its mask, of
an lpm value its prefix length; commands the driver passes through unchanged
(``mc_*``, ``mirroring_*``, ``register_*``, ``counter_*``, ``meter_*``) go as written.
Two places where innet is more exact than the driver: a ternary or lpm value without ``*``
matches the key's full width (the driver masks only the digits written), and range keys,
which the driver refuses, become the CLI's ``lo->hi``.

A line BMv2 cannot express raises :class:`Bmv2Unsupported` naming the file, line and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from innet.switch.stf import StfTest, parse_value

__all__ = ["Bmv2Unsupported", "CliCommand", "cli_commands", "counter_name"]

_PASS_THROUGH = {"mc_mgrp_create", "mc_node_create", "mc_node_associate", "mirroring_add", "mirroring_add_mc",
                 "register_write"}


class Bmv2Unsupported(Exception):
    """An STF line BMv2 (through simple_switch_CLI) cannot express; the message names file:line."""


@dataclass(frozen=True)
class CliCommand:
    """One simple_switch_CLI command and the STF line it came from."""

    line: int
    text: str


@dataclass(frozen=True)
class _Key:
    name: str
    kind: str
    width: int | None


@dataclass(frozen=True)
class _Table:
    name: str
    keys: tuple[_Key, ...]
    match_type: str
    actions: tuple[tuple[str, int], ...]
    """(name, JSON action id) of each action the table may run."""


def _widths(program: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    types = {t["name"]: {f[0]: int(f[1]) for f in t.get("fields", []) if isinstance(f[1], int)}
             for t in program.get("header_types", [])}
    out: dict[tuple[str, str], int] = {}
    for h in program.get("headers", []):
        for field, width in types.get(h["header_type"], {}).items():
            out[(h["name"], field)] = width
        out[(h["name"], "$valid$")] = 1
    return out


def _tables(program: Mapping[str, Any]) -> list[_Table]:
    widths = _widths(program)
    tables = []
    for pipe in program.get("pipelines", []):
        for t in pipe.get("tables", []):
            keys = []
            for k in t.get("key", []):
                target = k.get("target")
                name = k.get("name") or (".".join(target) if isinstance(target, list) else str(target))
                width = widths.get((target[0], target[1])) if isinstance(target, list) and len(target) == 2 else None
                keys.append(_Key(name, k["match_type"], width))
            tables.append(_Table(t["name"], tuple(keys), t.get("match_type", "exact"), tuple(zip(t.get("actions", []), t.get("action_ids", [])))))
    return tables


def _by_name(name: str, names: list[str]) -> list[str]:
    """Exact name, else names ending in ``.name`` (or equal to it after a dotted prefix)."""
    if name in names:
        return [name]
    return [n for n in names if n.endswith("." + name) or n.split(".")[-1] == name]


class _Resolver:
    def __init__(self, program: Mapping[str, Any], where: str) -> None:
        self.tables = _tables(program)
        self.params = {a["id"]: [p["name"] for p in a.get("runtime_data", [])] for a in program.get("actions", [])}
        self.shapes: dict[str, set[tuple[str, ...]]] = {}
        for a in program.get("actions", []):
            self.shapes.setdefault(a["name"], set()).add(tuple(p["name"] for p in a.get("runtime_data", [])))
        self.counters = [c["name"] for c in program.get("counter_arrays", []) if not c.get("is_direct")]
        self.where = where

    def unsupported(self, line: int, why: str) -> Bmv2Unsupported:
        return Bmv2Unsupported(f"{self.where}:{line}: unsupported on BMv2: {why}")

    def table(self, line: int, name: str) -> _Table:
        hits = _by_name(name, [t.name for t in self.tables])
        if len(hits) != 1:
            raise self.unsupported(line, f"table {name!r} is {'ambiguous' if hits else 'not'} in p4c's BMv2 JSON")
        return next(t for t in self.tables if t.name == hits[0])

    def action(self, line: int, table: _Table, name: str, given: dict[str, str]) -> tuple[str, str]:
        """The action's JSON name and its parameter values in the JSON's order."""
        hits = _by_name(name, [n for n, _ in table.actions])
        if len(hits) != 1:
            raise self.unsupported(line, f"action {name!r} of table {table.name} is "
                                         f"{'ambiguous' if hits else 'not'} in p4c's BMv2 JSON")
        if len(self.shapes.get(hits[0], ())) > 1:
            raise self.unsupported(line, f"p4c's BMv2 JSON has actions named {hits[0]} with different "
                                         "parameters (the program also calls it outside a table), and "
                                         "simple_switch_CLI looks actions up by name")
        params = self.params.get(dict(table.actions)[hits[0]], [])
        values = []
        for p in params:
            found = [v for k, v in given.items() if k == p or p.endswith("." + k)]
            if len(found) != 1:
                raise self.unsupported(line, f"action {hits[0]} wants parameter {p!r}")
            values.append(str(int(found[0], 0)))
        extra = [k for k in given if not any(k == p or p.endswith("." + k) for p in params)]
        if extra:
            raise self.unsupported(line, f"action {hits[0]} has no parameter {extra[0]!r}")
        return hits[0], " ".join(values)

    def key_value(self, line: int, key: _Key, text: str) -> str:
        if "&&&" in text or ".." in text:
            if key.kind == "ternary" and "&&&" in text:
                v, m = text.split("&&&")
                return f"{int(v, 0)}&&&{int(m, 0)}"
            if key.kind == "range" and ".." in text:
                lo, hi = text.split("..")
                return f"{int(lo, 0)}->{int(hi, 0)}"
            raise self.unsupported(line, f"key {key.name}: {text!r} does not fit a {key.kind} key")
        if key.kind == "exact" or key.kind == "valid":
            if "*" in text or "/" in text:
                raise self.unsupported(line, f"exact key {key.name} takes no '*' digits or prefix")
            return str(int(text, 0))
        if key.kind == "lpm" and "/" in text:
            v, given = text.split("/")
            return f"{int(v, 0)}/{int(given, 0)}"
        if key.width is None:
            raise self.unsupported(line, f"key {key.name} is an expression whose width p4c's JSON does not give, "
                                         f"so the {key.kind} value {text!r} cannot be masked")
        value, mask, _ = parse_value(text, key.width)
        full = (1 << key.width) - 1
        if key.kind == "ternary":
            return f"{value}&&&{mask}"
        if key.kind == "lpm":
            plen = bin(mask).count("1")
            if mask != full ^ ((1 << (key.width - plen)) - 1):
                raise self.unsupported(line, f"lpm key {key.name}: {text!r} is not a prefix")
            return f"{value}/{plen}"
        if key.kind == "range":
            return f"{value & mask}->{(value & mask) | (full ^ mask)}"
        raise self.unsupported(line, f"key {key.name}: match kind {key.kind!r} has no simple_switch_CLI form")


def _split_action(line: int, text: str, res: _Resolver) -> tuple[str, str, dict[str, str]]:
    """``(head, action, {param: value})`` of ``head action(p:v, ...)`` (STF order kept in head)."""
    text = text.strip()
    if not text.endswith(")") or "(" not in text:
        raise res.unsupported(line, f"no action call at the end of {text!r}")
    call_start = text.rindex("(")
    head_and_name = text[:call_start].rstrip()
    head, _, action = head_and_name.rpartition(" ")
    given: dict[str, str] = {}
    for arg in filter(None, (a.strip() for a in text[call_start + 1:-1].split(","))):
        name, sep, value = arg.partition(":")
        if not sep:
            raise res.unsupported(line, f"action argument {arg!r} is not name:value")
        given[name.strip()] = value.strip()
    return head, action, given


def _add(line: int, text: str, res: _Resolver) -> str:
    head, action, given = _split_action(line, text, res)
    toks = head.split()
    if not toks:
        raise res.unsupported(line, "add without a table")
    table = res.table(line, toks[0])
    toks = toks[1:]
    prio: int | None = None
    if toks and toks[0].isdigit():
        prio = int(toks.pop(0))
    values: dict[int, str] = {}
    names = [k.name for k in table.keys]
    for tok in toks:
        kname, sep, value = tok.rpartition(":")
        if not sep:
            raise res.unsupported(line, f"key {tok!r} is not name:value")
        kname = re.sub(r"\$(\d+)", r"[\1]", kname)  # p4c's STF spells stack element i as stack$i
        hits = [i for i, n in enumerate(names)
                if n == kname or n.endswith("." + kname)
                or n in (kname + ".$valid$", kname.removesuffix(".valid") + ".$valid$")]
        if len(hits) != 1:
            raise res.unsupported(line, f"table {table.name} has {'several keys' if hits else 'no key'} "
                                        f"named {kname!r} (keys: {', '.join(names)})")
        values[hits[0]] = value
    keys = []
    for i, key in enumerate(table.keys):
        if i in values:
            keys.append(res.key_value(line, key, values[i]))
        elif key.kind == "ternary":
            keys.append("0&&&0")
        elif key.kind == "lpm":
            keys.append("0/0")
        elif key.kind == "range" and key.width is not None:
            keys.append(f"0->{(1 << key.width) - 1}")
        else:
            raise res.unsupported(line, f"no value for {key.kind} key {key.name} of table {table.name}")
    name, params = res.action(line, table, action, given)
    cmd = f"table_add {table.name} {name} {' '.join(keys)} => {params}".rstrip()
    if table.match_type in ("ternary", "range"):
        cmd += f" {10000 - (prio if prio is not None else 1)}"
    return cmd


def _setdefault(line: int, text: str, res: _Resolver) -> str:
    head, action, given = _split_action(line, text, res)
    table = res.table(line, head.strip())
    name, params = res.action(line, table, action, given)
    return f"table_set_default {table.name} {name} {params}".rstrip()


def counter_name(program: Mapping[str, Any], name: str) -> str | None:
    """The indexed counter array ``name`` names in p4c's BMv2 JSON (exactly or by dotted suffix)."""
    hits = _by_name(name, [c["name"] for c in program.get("counter_arrays", []) if not c.get("is_direct")])
    return hits[0] if len(hits) == 1 else None


def cli_commands(test: StfTest, program: Mapping[str, Any], where: str) -> list[CliCommand]:
    """The CLI session for ``test``'s control-plane lines, in file order."""
    res = _Resolver(program, where)
    out = []
    for line, cmd, args in test.control:
        if cmd == "add":
            out.append(CliCommand(line, _add(line, args[0], res)))
        elif cmd == "setdefault":
            out.append(CliCommand(line, _setdefault(line, args[0], res)))
        elif cmd in _PASS_THROUGH:
            out.append(CliCommand(line, " ".join([cmd] + args)))
        else:
            raise res.unsupported(line, f"{cmd} has no simple_switch_CLI command p4c's driver would send")
    return out
