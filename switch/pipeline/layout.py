"""Storage layout: every runtime value of a packet lives in one flat Python list ``S``.

Each storage object (a header, struct, stack, local variable, parameter) gets a contiguous
range of slots, so that generated code uses constant indexes (``S[17]``) and whole-header
or whole-struct copies are list slice assignments.

Slot shapes per type:

- scalar (bit/int/bool/enum/error): one slot; ``varbit<N>`` holds a ``(width, value)`` tuple,
  so that copies and ``==`` (same width and bits) work on the slot as it is;
- header: ``[valid, field_1, ..., field_n]``;
- struct / header union: the fields' slots one after the other;
- stack ``H[n]``: ``[next_index, elem_0 ..., elem_n-1 ...]``;
- tuple: the elements' slots one after the other.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ..frontend import ir
from ..lowering.fields import field_slot, slot_count


def nslots(t: ir.Type) -> int:
    """Number of slots a value of type ``t`` occupies."""
    return slot_count(t, _one_slot)


def _one_slot(t: ir.Type) -> int:
    """Every Python scalar, however wide, is one slot (an int)."""
    return 1


_BIG = 32
"""Aggregates with more fields than this get a field index (``_field_index``)."""
_INDEXES: "OrderedDict[int, tuple[ir.Type, dict[str, tuple[int, ir.Type]]]]" = OrderedDict()


def _field_index(t: ir.Type) -> dict[str, tuple[int, ir.Type]]:
    """Field name -> (offset, type) of a big aggregate, built once: a program with
    thousands of fields in one header (p4/innet at INNET_K=2048) would otherwise scan
    them for every field access. Keyed by identity and holding the type (so an id is
    never reused while its entry lives); the last 64 aggregates are kept."""
    hit = _INDEXES.get(id(t))
    if hit is not None and hit[0] is t:
        _INDEXES.move_to_end(id(t))
        return hit[1]
    index: dict[str, tuple[int, ir.Type]] = {}
    fields = t.fields  # type: ignore[attr-defined]
    off = 1 if isinstance(t, ir.HeaderT) else 0
    for f in fields:
        index.setdefault(f.name, (off, f.type))
        off += 1 if isinstance(t, ir.HeaderT) else nslots(f.type)
    _INDEXES[id(t)] = (t, index)
    if len(_INDEXES) > 64:
        _INDEXES.popitem(last=False)
    return index


def field_offset(t: ir.Type, name: str) -> tuple[int, ir.Type]:
    """Slot offset and type of field ``name`` inside a header/struct/union value."""
    if isinstance(t, (ir.HeaderT, ir.StructT, ir.HeaderUnionT)) and len(t.fields) > _BIG:
        hit = _field_index(t).get(name)
        if hit is None:
            raise KeyError(f"type {t} has no field {name!r}")
        return hit
    return field_slot(t, name, _header_offsets, nslots)


def _header_offsets(t: ir.HeaderT) -> range:
    """A header's fields stand one slot each after its validity slot."""
    return range(1, 1 + len(t.fields))


def default_values(t: ir.Type) -> list[Any]:
    """Initial slot values: 0 / False, headers invalid, stacks empty."""
    if isinstance(t, ir.HeaderT):
        return [False] + [v for f in t.fields for v in default_values(f.type)]
    if isinstance(t, (ir.StructT, ir.HeaderUnionT)):
        out: list[Any] = []
        for f in t.fields:
            out += default_values(f.type)
        return out
    if isinstance(t, ir.StackT):
        return [0] + default_values(t.elem) * t.size
    if isinstance(t, ir.TupleT):
        out = []
        for e in t.elems:
            out += default_values(e)
        return out
    if isinstance(t, ir.BoolT):
        return [False]
    if isinstance(t, ir.VarBitT):
        return [(0, 0)]
    return [0]


def header_paths(t: ir.Type, base: int) -> list[tuple[int, ir.HeaderT]]:
    """(slot base, header type) of every header inside a value of type ``t`` at ``base``."""
    if isinstance(t, ir.HeaderT):
        return [(base, t)]
    out: list[tuple[int, ir.HeaderT]] = []
    if isinstance(t, (ir.StructT, ir.HeaderUnionT)):
        off = base
        for f in t.fields:
            out += header_paths(f.type, off)
            off += nslots(f.type)
    elif isinstance(t, ir.StackT):
        esz = nslots(t.elem)
        for i in range(t.size):
            out += header_paths(t.elem, base + 1 + i * esz)
    return out


class Layout:
    """Allocates slot ranges and builds the per-packet template list."""

    def __init__(self) -> None:
        self.template: list[Any] = []
        self.by_uid: dict[int, int] = {}
        self.names: list[str] = []  # slot index -> debug name

    @property
    def size(self) -> int:
        return len(self.template)

    def alloc(self, t: ir.Type, name: str = "") -> int:
        """A fresh slot range for a value of type ``t``; returns its base."""
        base = len(self.template)
        vals = self.defaults(t)
        self.template.extend(vals)
        self.names.extend([name] * len(vals))
        return base

    def defaults(self, t: ir.Type) -> list[Any]:
        """The initial slot values of a ``t`` value; a layout whose scalars take several
        slots (the native one's wide limbs) says its own here."""
        return default_values(t)

    def alloc_scalar(self, name: str, init: Any = 0) -> int:
        """One hidden slot (architecture state such as the clone session)."""
        self.template.append(init)
        self.names.append(name)
        return len(self.template) - 1

    def bind(self, uid: int, base: int) -> None:
        """Make parameter/variable ``uid`` an alias of an existing slot range."""
        self.by_uid[uid] = base

    def var(self, uid: int, t: ir.Type, name: str = "") -> int:
        """The slot base of variable/parameter ``uid`` (allocated on first use)."""
        base = self.by_uid.get(uid)
        if base is None:
            base = self.alloc(t, name)
            self.by_uid[uid] = base
        return base
