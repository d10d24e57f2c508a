"""Where a named field stands inside a header, struct or union value, found by one walk for
both executors; each passes its own slot counts (a native wide scalar spans several limbs,
a Python one is one slot)."""

from __future__ import annotations

from typing import Callable, Sequence

from ..frontend import ir


def field_slot(t: ir.Type, name: str, header_offsets: Callable[[ir.HeaderT], Sequence[int]],
               nslots: Callable[[ir.Type], int]) -> tuple[int, ir.Type]:
    """Slot offset and type of field ``name`` of ``t``: a header's from ``header_offsets``
    (a struct-typed declared field is the run of its leaves), a struct's or union's summed
    from ``nslots``; KeyError naming the type and field when there is none."""
    if isinstance(t, ir.HeaderT):
        offs = header_offsets(t)
        for o, f in zip(offs, t.fields):
            if f.name == name:
                return o, f.type
        g = t.group(name)
        if g is not None:
            return offs[g[0]], g[1]
    elif isinstance(t, (ir.StructT, ir.HeaderUnionT)):
        off = 0
        for f in t.fields:
            if f.name == name:
                return off, f.type
            off += nslots(f.type)
    raise KeyError(f"type {t} has no field {name!r}")


def slot_count(t: ir.Type, leaf: Callable[[ir.Type], int]) -> int:
    """Slots a value of type ``t`` takes: ``leaf`` slots per scalar (and per header field),
    one more for a header's validity and a stack's next index."""
    if isinstance(t, ir.HeaderT):
        return 1 + sum(leaf(f.type) for f in t.fields)
    if isinstance(t, (ir.StructT, ir.HeaderUnionT)):
        return sum(slot_count(f.type, leaf) for f in t.fields)
    if isinstance(t, ir.StackT):
        return 1 + t.size * slot_count(t.elem, leaf)
    if isinstance(t, ir.TupleT):
        return sum(slot_count(e, leaf) for e in t.elems)
    return leaf(t)
