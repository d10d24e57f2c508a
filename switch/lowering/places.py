"""Which slots an l-value denotes: one resolution for both executors.

Both executors keep a packet's state in one flat slot array; an l-value (a variable, a
field, a stack element, ``next``/``last``, a non-scalar ``lookahead``) is a :class:`Place`,
a first slot and a type. Walking the expression to its place is the same for both; the
executor's own parts are passed in: its slot layout (``SlotLayout``: the native one gives
values wider than 64 bits more slots) and the text it emits where the place is known only
at run time (``PlaceEmitter``: a run-time stack index, ``next``/``last``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

from ..frontend import ir
from .errors import Unsupported
from .types import is_scalar


@dataclass
class Place:
    """A slot range: ``base`` is a constant slot index or an expression of the emitted
    language (a run-time index)."""

    base: int | str
    type: ir.Type
    union_siblings: tuple[int | str, ...] = ()
    """Bases of the other members of a header union (setting one valid invalidates them)."""

    def at(self, off: int = 0) -> str:
        """The slot ``off`` after the first, as an index expression."""
        if isinstance(self.base, int):
            return str(self.base + off)
        return f"{self.base}+{off}" if off else str(self.base)

    def sub(self, off: int, t: ir.Type) -> "Place":
        """The place of a part of type ``t`` that starts ``off`` slots in."""
        if isinstance(self.base, int):
            return Place(self.base + off, t)
        return Place(f"{self.base}+{off}" if off else self.base, t)


@dataclass(frozen=True)
class SlotLayout:
    """An executor's slot layout: the slots a type takes and where a field starts."""

    nslots: Callable[[ir.Type], int]
    field_offset: Callable[[ir.Type, str], tuple[int, ir.Type]]


class PlaceEmitter(Protocol):
    """What place resolution needs of an executor's generator."""

    unsupported: Unsupported

    def place(self, e: ir.Expr) -> Place:
        """The place of ``e`` (the generator's entry, which may remember l-values it
        already evaluated; the resolution of a part goes through it)."""
        ...

    def var_slot(self, e: ir.VarRef) -> int | None:
        """The first slot of a variable; None for action data (no slots: refused here)."""
        ...

    def stack_index(self, e: ir.StackElem, base: Place, esz: int) -> Place:
        """The element of stack ``base`` at a run-time index (``esz`` slots an element),
        emitting the index's evaluation and bounds check."""
        ...

    def stack_end(self, e: ir.StackProp, base: Place, esz: int) -> Place:
        """``base.next`` or ``base.last``, emitting the index's bounds check."""
        ...

    def lookahead_place(self, e: ir.MethodCall) -> Place:
        """The place holding a non-scalar ``lookahead``'s value."""
        ...


def resolve_place(e: ir.Expr, out: PlaceEmitter, layout: SlotLayout) -> Place:
    """The slot range the l-value or aggregate expression ``e`` denotes."""
    if isinstance(e, ir.VarRef):
        slot = out.var_slot(e)
        if slot is None:
            raise out.unsupported(f"'{e.decl.name}' (action data) used as an l-value or aggregate", e)
        return Place(slot, e.decl.type)
    if isinstance(e, ir.Member):
        bt = e.base.type
        base = out.place(e.base)
        off, ft = layout.field_offset(bt, e.name)
        p = base.sub(off, ft)
        if isinstance(bt, ir.HeaderUnionT):
            sibs = []
            o = 0
            for f in bt.fields:
                if f.name != e.name:
                    sibs.append(base.sub(o, f.type).base)
                o += layout.nslots(f.type)
            p.union_siblings = tuple(sibs)
        return p
    if isinstance(e, ir.StackElem):
        st = e.base.type
        assert isinstance(st, ir.StackT), f"stack element of a {st}"
        base = out.place(e.base)
        esz = layout.nslots(st.elem)
        if isinstance(e.index, ir.Const):
            i = int(e.index.value)
            if not 0 <= i < st.size:
                raise out.unsupported(f"stack index {i} out of range 0..{st.size - 1}", e)
            return base.sub(1 + i * esz, st.elem)
        return out.stack_index(e, base, esz)
    if isinstance(e, ir.StackProp) and e.prop in ("next", "last"):
        assert isinstance(e.base.type, ir.StackT), f"stack property of a {e.base.type}"
        return out.stack_end(e, out.place(e.base), layout.nslots(e.base.type.elem))
    if isinstance(e, ir.MethodCall) and e.method == "lookahead" and not is_scalar(e.type):
        return out.lookahead_place(e)
    raise out.unsupported(f"expression {type(e).__name__} as an l-value", e)


def runtime_index(e: ir.Expr) -> bool:
    """``e`` reaches its slot through a stack index computed at run time (its place is
    known only when the code runs)."""
    while isinstance(e, (ir.Member, ir.StackElem, ir.Slice)):
        if isinstance(e, ir.StackElem) and not isinstance(e.index, ir.Const):
            return True
        e = e.base
    return False


def members(p: Place, t: ir.StructT | ir.HeaderUnionT | ir.StackT, layout: SlotLayout) -> list[Place]:
    """The places of the fields of a struct or union, or of the elements of a stack, in order."""
    if isinstance(t, ir.StackT):
        esz = layout.nslots(t.elem)
        return [p.sub(1 + i * esz, t.elem) for i in range(t.size)]
    out = []
    off = 0
    for f in t.fields:
        out.append(p.sub(off, f.type))
        off += layout.nslots(f.type)
    return out


def scalar_leaves(p: Place, t: ir.Type, layout: SlotLayout, unsupported: Unsupported, node: object
                  ) -> list[tuple[Place, bool]]:
    """The scalar fields of the aggregate at ``p`` in field-list order (a header's fields,
    a struct's or union's recursively, a stack's elements), each with whether it is a
    header's field (a header's ``bool`` field is stored as an int already)."""
    if isinstance(t, ir.HeaderT):
        return [(p.sub(layout.field_offset(t, f.name)[0], f.type), True) for f in t.fields]
    if isinstance(t, (ir.StructT, ir.HeaderUnionT, ir.StackT)):
        out: list[tuple[Place, bool]] = []
        for m in members(p, t, layout):
            out += [(m, False)] if is_scalar(m.type) else scalar_leaves(m, m.type, layout, unsupported, node)
        return out
    raise unsupported(f"field list element of type {t}", node)
