"""Assignment of an aggregate value (header, struct, tuple) walked once for both executors:
which slots get which part of the right side; the emitter writes the copies."""

from __future__ import annotations

from typing import Callable, Protocol

from ..frontend import ir
from .errors import Unsupported
from .places import Place, SlotLayout
from .types import is_scalar


class AggregateEmitter(Protocol):
    """What an aggregate assignment needs of an executor's statement emitter."""

    unsupported: Unsupported

    def place(self, e: ir.Expr) -> Place: ...

    def copy_in(self, dst: Place, e: ir.Expr) -> None:
        """Store the scalar value of ``e`` into ``dst``."""
        ...

    def set_valid(self, dst: Place) -> None:
        """Mark the header at ``dst`` valid (an initializer makes a header valid)."""
        ...

    def copy_slots(self, dst: Place, src: Place, n: int) -> None:
        """Copy the ``n`` slots at ``src`` to ``dst``."""
        ...

    def invalidate_siblings_when_valid(self, dst: Place) -> None:
        """When the header at ``dst`` is valid, mark its union siblings invalid."""
        ...

    def if_else(self, cond: ir.Expr, then: Callable[[], None], else_: Callable[[], None]) -> None:
        """Emit ``then`` when ``cond`` holds, else ``else_``."""
        ...

    def extract_into(self, p: Place, ht: ir.HeaderT, advance: bool, node: object = None) -> None:
        """Read header ``ht`` from the packet into ``p`` (``lookahead``: without advancing)."""
        ...

    def function_call(self, e: ir.FunctionCall) -> str | None: ...

    def function_ret_place(self, f: ir.Function) -> Place:
        """Where function ``f`` leaves its (aggregate) return value."""
        ...


def assign_aggregate(dst: Place, rhs: ir.Expr, out: AggregateEmitter, layout: SlotLayout) -> None:
    """Emit ``dst = rhs`` for a non-scalar ``dst``: part by part for an initializer (a list,
    a struct/header initializer), branch by branch for ``?:``, a whole copy for an l-value
    or a function's result, a packet read for ``lookahead``."""
    t = dst.type
    if isinstance(rhs, ir.ListExpr) and isinstance(t, ir.TupleT):
        off = 0
        for et, item in zip(t.elems, rhs.elems):
            part(dst.sub(off, et), item, out, layout)
            off += layout.nslots(et)
        return
    if isinstance(rhs, ir.StructInit) or (isinstance(rhs, ir.ListExpr) and not isinstance(t, ir.TupleT)):
        if isinstance(t, ir.HeaderT):
            out.set_valid(dst)
        elif not isinstance(t, ir.StructT):
            raise out.unsupported(f"initializer for {t}", rhs)
        fields = t.fields
        if isinstance(rhs, ir.StructInit):
            byname = dict(rhs.fields)
        else:
            byname = {f.name: x for f, x in zip(fields, rhs.elems)}
        for f in fields:
            x = byname.get(f.name)
            if x is not None:
                part(dst.sub(layout.field_offset(t, f.name)[0], f.type), x, out, layout)
        return
    if isinstance(rhs, ir.MethodCall) and rhs.method == "lookahead":
        if not isinstance(t, ir.HeaderT):
            raise out.unsupported(f"lookahead of {t}", rhs)
        out.extract_into(dst, t, advance=False, node=rhs)
        return
    if isinstance(rhs, ir.Mux):
        mux = rhs
        out.if_else(mux.cond, lambda: assign_aggregate(dst, mux.then, out, layout),
                    lambda: assign_aggregate(dst, mux.else_, out, layout))
        return
    if isinstance(rhs, ir.FunctionCall) and not isinstance(rhs.func.return_type, ir.VoidT):
        out.function_call(rhs)
        copy_whole(dst, out.function_ret_place(rhs.func), t, out, layout)
        return
    if isinstance(rhs, (ir.VarRef, ir.Member, ir.StackElem, ir.StackProp)):
        copy_whole(dst, out.place(rhs), t, out, layout)
        return
    raise out.unsupported(f"assignment of {type(rhs).__name__} to a {t} value", rhs)


def copy_whole(dst: Place, src: Place, t: ir.Type, out: AggregateEmitter, layout: SlotLayout) -> None:
    """Copy a whole value of ``t`` slot by slot; a valid header copied into a member of a
    header union leaves the union's other members invalid."""
    out.copy_slots(dst, src, layout.nslots(t))
    if isinstance(t, ir.HeaderT) and dst.union_siblings:
        out.invalidate_siblings_when_valid(dst)


def part(dst: Place, x: ir.Expr, out: AggregateEmitter, layout: SlotLayout) -> None:
    """Assign one part of an initializer: a scalar by a store, an aggregate recursively."""
    if is_scalar(dst.type):
        out.copy_in(dst, x)
    else:
        assign_aggregate(dst, x, out, layout)
