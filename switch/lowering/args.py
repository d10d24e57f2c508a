"""Arguments of extern calls and the field lists they name, resolved once for both executors."""

from __future__ import annotations

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
