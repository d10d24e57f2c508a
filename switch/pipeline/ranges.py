"""Value ranges of generated expressions, so that wraps which cannot change a value are left out.

Generated code keeps every value canonical (``bit<W>`` in ``[0, 2**W)``, ``int<W>`` in the
two's complement range), so a value's *type* bounds it. Some expressions are bounded
more tightly: a sign-extended ``int<32>`` held in an ``int<64>``, a product of two such
values, a slice, ``x & const``. When the exact (unbounded) result of ``+``, ``-`` or ``*``
lies inside the result type, the wrap that BMv2 semantics asks for is the identity and
the generator omits it: ``(int<64>)a * (int<64>)b`` for 32-bit ``a``, ``b`` is one Python
multiplication instead of a multiplication plus three masking operations.

Ranges of locals: a scalar local that is written only by its declaration's initializer
(never assigned, never an ``out``/``inout`` argument) has the range of that initializer;
:func:`written_locals` finds the written ones.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..frontend import ir

Range = tuple[int, int]
"""Inclusive (lowest, highest) Python int value."""


def type_range(t: ir.Type) -> Range | None:
    """The canonical range of a scalar type; None when unbounded (``int``) or not numeric."""
    if isinstance(t, ir.BitT):
        if t.signed:
            return -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
        return 0, (1 << t.width) - 1
    if isinstance(t, ir.BoolT):
        return 0, 1
    if isinstance(t, ir.EnumT) and t.underlying is not None:
        return type_range(t.underlying)
    return None


def within(r: Range | None, outer: Range | None) -> bool:
    """``r`` lies inside ``outer`` (False when either is unknown)."""
    return r is not None and outer is not None and outer[0] <= r[0] and r[1] <= outer[1]


def arith(op: str, a: Range, b: Range) -> Range:
    """Range of the exact result of ``a op b`` for ``+``, ``-`` and ``*``."""
    if op == "+":
        return a[0] + b[0], a[1] + b[1]
    if op == "-":
        return a[0] - b[1], a[1] - b[0]
    products = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return min(products), max(products)


def shift_right(a: Range, amount: int | None) -> Range:
    """Range of ``a >> n`` (floor shift) for a constant ``n``, or any ``n >= 0`` when None:
    the result lies between ``a``'s value and 0 (or -1)."""
    if amount is not None:
        return a[0] >> amount, a[1] >> amount
    return min(a[0], 0), max(a[1], 0)


def union(a: Range | None, b: Range | None) -> Range | None:
    if a is None or b is None:
        return None
    return min(a[0], b[0]), max(a[1], b[1])


#: dataclass field names per IR class (``dataclasses.fields`` per node was a third of the walk)
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def written_locals(*roots: Any) -> set[int]:
    """uids of the variables that the statements under ``roots`` write: left-hand sides of
    assignments (anything under them, conservatively), ``out``/``inout`` arguments of
    calls (actions, functions, extern functions and methods, sub-controls) and the
    variables of range ``for`` loops."""
    out: set[int] = set()
    for r in roots:
        _walk(r, out, False)
    return out


def _walk(node: Any, out: set[int], writing: bool) -> None:
    if isinstance(node, (tuple, list)):
        for x in node:
            _walk(x, out, writing)
        return
    if isinstance(node, ir.VarRef):
        if writing:
            out.add(node.decl.uid)
        return
    if isinstance(node, ir.Assign):
        _walk(node.lhs, out, True)
        _walk(node.rhs, out, writing)
        return
    if isinstance(node, ir.ForIn):  # the loop writes its variable each iteration
        out.add(node.var.uid)
    if isinstance(node, ir.Arg):
        _walk(node.expr, out, writing or node.direction in ("out", "inout"))
        return
    if isinstance(node, (ir.Stmt, ir.Expr, ir.SwitchCase)) and dataclasses.is_dataclass(node):
        names = _FIELD_NAMES.get(type(node))
        if names is None:
            names = _FIELD_NAMES[type(node)] = tuple(f.name for f in dataclasses.fields(node))
        for name in names:
            v = getattr(node, name)
            if isinstance(v, (ir.Stmt, ir.Expr, ir.Arg, ir.SwitchCase, tuple, list)):
                _walk(v, out, writing)
