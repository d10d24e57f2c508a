"""Arguments of extern calls and the field lists they name, resolved once for both executors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Protocol

from ..frontend import ir


class SlotRange(Protocol):
    """What :func:`field_slots` reads of a resolved l-value: its first slot and its type."""

    @property
    def base(self) -> int | str: ...

    @property
    def type(self) -> ir.Type: ...


def call_arg(e: Any, name: str, pos: int) -> ir.Expr:
    """The argument of call ``e`` for parameter ``name``: by name when the call names it,
    else the ``pos``-th (the front-end binds every argument to its parameter)."""
    for a in e.args:
        if a.param is not None and a.param.name == name and a.expr is not None:
            return a.expr  # type: ignore[no-any-return]
    a = e.args[pos]
    assert a.expr is not None, f"argument {pos} of {getattr(e, 'name', e)} has no expression"
    return a.expr  # type: ignore[no-any-return]


def const_int(e: ir.Expr, unsupported: Callable[[str, Any], Exception]) -> int:
    """The value of a constant field-list index (``clone_preserving_field_list``'s)."""
    if isinstance(e, ir.Const):
        return int(e.value)
    raise unsupported("a non-constant field list index", e)


def field_slots(e: ir.Expr, place: Callable[[ir.Expr], SlotRange], nslots: Callable[[ir.Type], int],
                unsupported: Callable[[str, Any], Exception]) -> tuple[int, ...]:
    """Static slot indexes of the l-values in a field list (clone3/resubmit/recirculate
    data), in the executor's own layout (``place`` and ``nslots`` are its)."""
    items = e.elems if isinstance(e, ir.ListExpr) else (e,)
    out: list[int] = []
    for x in items:
        if isinstance(x, ir.ListExpr):
            out += field_slots(x, place, nslots, unsupported)
            continue
        p = place(x)
        if not isinstance(p.base, int):
            raise unsupported("a field list element at a runtime index", x)
        out += range(p.base, p.base + nslots(p.type))
    return tuple(out)


def annotated_field_list(index: int, meta: ir.Type, base: int, consts: Mapping[str, object],
                         nslots: Callable[[ir.Type], int], unsupported: Callable[[str, Any], Exception]
                         ) -> tuple[int, ...]:
    """Slots of the user metadata fields (struct ``meta`` at slot ``base``) annotated
    ``@field_list(.., index, ..)``, in layout order; a nested struct is searched when it is
    not annotated itself."""
    out: list[int] = []

    def walk(t: ir.Type, at: int) -> None:
        if not isinstance(t, ir.StructT):
            return
        off = at
        for f in t.fields:
            ann = f.annotations.get("field_list")
            if ann is not None and index in [field_list_id(v, f.name, consts, unsupported) for v in ann.body]:
                out.extend(range(off, off + nslots(f.type)))
            elif isinstance(f.type, ir.StructT):
                walk(f.type, off)
            off += nslots(f.type)

    walk(meta, base)
    return tuple(out)


def field_list_id(v: object, field_name: str, consts: Mapping[str, object],
                  unsupported: Callable[[str, Any], Exception]) -> int:
    """A ``@field_list`` argument: an integer literal or the name of a constant (p4c
    evaluates the annotation's expressions, so ``@field_list(FL)`` means FL's value)."""
    if isinstance(v, int):
        return v
    c = consts.get(v.lstrip(".")) if isinstance(v, str) else None
    if isinstance(c, ir.Const) and not isinstance(c.value, bool):
        return int(c.value)
    raise unsupported(f"@field_list({v}) on metadata field '{field_name}': "
                      "the index must be an integer literal or a constant", None)
