"""Facts of IR types that both executors lower the same way: a scalar's width and sign."""

from __future__ import annotations

from ..frontend import ir

ERROR_WIDTH = 32
"""An ``error`` value as a table key or field-list field: BMv2's 32-bit number."""


def bits(t: ir.Type) -> tuple[int, bool]:
    """(width, signed) of a scalar serializable type; ``TypeError`` for any other type."""
    if isinstance(t, ir.BitT):
        return t.width, t.signed
    if isinstance(t, ir.BoolT):
        return 1, False
    if isinstance(t, ir.EnumT) and t.underlying is not None:
        return t.underlying.width, t.underlying.signed
    if isinstance(t, ir.ErrorT):
        return ERROR_WIDTH, False
    raise TypeError(f"type {t} has no fixed width")


def is_scalar(t: ir.Type) -> bool:
    """Whether a value of ``t`` fits one slot (not a header, struct, union, stack or tuple)."""
    return not isinstance(t, (ir.HeaderT, ir.StructT, ir.HeaderUnionT, ir.StackT, ir.TupleT))
