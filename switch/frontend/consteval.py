"""Compile-time evaluation and implicit conversions.

Why: P4 folds ``int`` arithmetic at compile time (widths like ``bit<(W*2)>``, constants),
gives unsized literals the width of the other operand, and forbids every other implicit
conversion.  Keeping these rules in one module keeps the expression builder readable.
"""

from __future__ import annotations

from typing import TypeGuard

from . import ir


MAX_WIDTH = 65536
"""Widest bit<W>/int<W>/varbit<W> innet accepts (p4c stops at 2048; innet's Python
executor runs wider fields, so the bound is only what keeps compile-time arithmetic and
messages finite)."""
MAX_INT_BITS = 2048
"""Widest value of an unsized ``int`` constant, p4c's ``maximumWidthSupported``: beyond it
p4c says "Compiler only supports widths up to 2048" (``1 << 903012108``)."""


def wrap(value: int, t: ir.BitT) -> int:
    """Two's-complement wrap of ``value`` into ``t``."""
    mask = (1 << t.width) - 1
    v = value & mask
    if t.signed and t.width > 0 and v >> (t.width - 1):
        v -= 1 << t.width
    return v


def fits(value: int, t: ir.BitT) -> bool:
    """Does an int literal fit ``t`` without loss (unsigned: 0..2^W-1; negative values
    are accepted for unsigned types as their two's complement, like p4c)?"""
    if t.signed:
        return -(1 << (t.width - 1)) <= value < (1 << (t.width - 1)) if t.width else value == 0
    return -(1 << t.width) < value < (1 << t.width)


def is_serializable_enum(t: ir.Type) -> TypeGuard[ir.EnumT]:
    return isinstance(t, ir.EnumT) and t.underlying is not None


def same_type(a: ir.Type, b: ir.Type) -> bool:
    return a == b


def _sat(v: int, t: ir.BitT) -> int:
    if t.signed:
        lo, hi = -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
    else:
        lo, hi = 0, (1 << t.width) - 1
    return max(lo, min(hi, v))


def fold_binary(op: str, a: ir.Const, b: ir.Const, t: ir.Type, loc: ir.Loc) -> ir.Const | None:
    """Fold ``a op b`` of constants with result type ``t``; None if not foldable."""
    x, y = a.value, b.value
    if isinstance(x, bool) or isinstance(y, bool):
        if op == "&&":
            return ir.Const(bool(x and y), ir.BoolT(), loc)
        if op == "||":
            return ir.Const(bool(x or y), ir.BoolT(), loc)
        if op == "==":
            return ir.Const(x == y, ir.BoolT(), loc)
        if op == "!=":
            return ir.Const(x != y, ir.BoolT(), loc)
        return None
    x, y = int(x), int(y)
    cmp = {"==": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}
    if op in cmp:
        return ir.Const(cmp[op], ir.BoolT(), loc)
    bt = t if isinstance(t, ir.BitT) else None
    if op == "++":
        assert isinstance(a.type, ir.BitT) and isinstance(b.type, ir.BitT)
        ux = x & ((1 << a.type.width) - 1)
        uy = y & ((1 << b.type.width) - 1)
        v = (ux << b.type.width) | uy
        return ir.Const(wrap(v, bt) if bt else v, t, loc)
    if op in ("/", "%"):
        if y == 0:
            return None
        if x < 0 or y < 0:
            return None
        v = x // y if op == "/" else x % y
    elif op == "+":
        v = x + y
    elif op == "-":
        v = x - y
    elif op == "*":
        v = x * y
    elif op == "&":
        v = x & y
    elif op == "|":
        v = x | y
    elif op == "^":
        v = x ^ y
    elif op == "<<":
        if y < 0:
            return None
        if bt and y >= bt.width:
            v = 0
        else:
            v = x << y
    elif op == ">>":
        if y < 0:
            return None
        if bt and not bt.signed:
            v = (x & ((1 << bt.width) - 1)) >> y
        else:
            v = x >> y
    elif op in ("|+|", "|-|"):
        if bt is None:
            v = x + y if op == "|+|" else x - y
        else:
            v = _sat(x + y if op == "|+|" else x - y, bt)
    else:
        return None
    return ir.Const(wrap(v, bt) if bt else v, t, loc)


def fold_unary(op: str, a: ir.Const, loc: ir.Loc) -> ir.Const | None:
    t = a.type
    if op == "!" and isinstance(a.value, bool):
        return ir.Const(not a.value, t, loc)
    if isinstance(a.value, bool):
        return None
    if op == "-":
        v = -int(a.value)
    elif op == "~":
        v = ~int(a.value)
    else:
        return None
    return ir.Const(wrap(v, t) if isinstance(t, ir.BitT) else v, t, loc)


def fold_cast(t: ir.Type, a: ir.Const, loc: ir.Loc) -> ir.Const | None:
    if isinstance(t, ir.BitT):
        if isinstance(a.value, bool):
            return ir.Const(int(a.value), t, loc) if t.width == 1 else None
        return ir.Const(wrap(int(a.value), t), t, loc)
    if isinstance(t, ir.BoolT) and isinstance(a.type, ir.BitT) and a.type.width == 1:
        return ir.Const(bool(a.value), t, loc)
    if isinstance(t, ir.IntT) and not isinstance(a.value, bool):
        return ir.Const(int(a.value), t, loc)
    return None
