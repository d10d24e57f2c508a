"""Operator expressions walked once for both executors. A binary one: operand order,
short-circuit arms whose preparation may only run when taken, and aggregate equality;
a unary one: its operand read, then ``!`` as the boolean negation. The emitter writes the
scalar operators and the guarded forms in its own language."""

from __future__ import annotations

from typing import Any, Protocol

from ..frontend import ir
from .errors import Unsupported
from .order import Pinned, captured, reads_left_first
from .places import Place
from .types import is_scalar


class BinaryEmitter(Protocol):
    """What a binary expression needs of an executor's expression emitter."""

    lines: list[str]
    ind: int
    pinned: Pinned

    def expr(self, e: ir.Expr) -> str: ...

    def place(self, e: ir.Expr) -> Place: ...

    def agg_equal(self, a: Place, b: Place, t: ir.Type, node: Any) -> str: ...

    def read_left(self, e: ir.Expr) -> str:
        """Emit a read of ``e`` into a temporary and name it."""
        ...

    def short_circuit(self, op: str, a: str, b: str, pre: list[str]) -> str:
        """``a op b`` for ``&&``/``||``; ``pre`` (lines, indented one level) prepares ``b``
        and may only run when ``b`` is evaluated; empty when it needs none."""
        ...

    def negate(self, cond: str) -> str:
        """The boolean negation of ``cond``."""
        ...

    def scalar_binary(self, e: ir.Binary) -> str:
        """Any other binary operator, on scalar operands."""
        ...


def lower_binary(gen: BinaryEmitter, e: ir.Binary) -> str:
    """The value of ``e``: the left operand read first when a call on the right may
    write it (P4_16 evaluates left to right)."""
    if reads_left_first(e):
        with gen.pinned.holding(e.left, gen.read_left(e.left)):
            return _binary(gen, e)
    return _binary(gen, e)


def _binary(gen: BinaryEmitter, e: ir.Binary) -> str:
    op = e.op
    if op in ("&&", "||"):
        a = gen.expr(e.left)
        gen.ind += 1
        b, pre = captured(gen.lines, lambda: gen.expr(e.right))
        gen.ind -= 1
        return gen.short_circuit(op, a, b, pre)
    if op in ("==", "!=") and not is_scalar(e.left.type):
        eq = gen.agg_equal(gen.place(e.left), gen.place(e.right), e.left.type, e)
        return eq if op == "==" else gen.negate(eq)
    return gen.scalar_binary(e)


class UnaryEmitter(Protocol):
    """What a unary expression needs of an executor's expression emitter."""

    unsupported: Unsupported

    def expr(self, e: ir.Expr) -> str: ...

    def negate(self, cond: str) -> str:
        """The boolean negation of ``cond``."""
        ...

    def scalar_unary(self, e: ir.Unary, x: str) -> str:
        """``~`` or ``-`` (``e.op``) of the operand value ``x``, as of type ``e.type``."""
        ...


def lower_unary(gen: UnaryEmitter, e: ir.Unary) -> str:
    """The value of ``e`` (``!``, ``~`` or ``-``: the front-end builds no other)."""
    x = gen.expr(e.e)
    if e.op == "!":
        return gen.negate(x)
    if e.op in ("~", "-"):
        return gen.scalar_unary(e, x)
    raise gen.unsupported(f"unary operator {e.op!r}", e)


class ScalarOperators(Protocol):
    """How an executor's expression emitter writes each family of arithmetic operators
    on scalar ``bit<w>``/``int<w>`` operands (``a``, ``b``: their value texts; ``s``:
    signed), once the operands are read."""

    unsupported: Unsupported
    zero: str
    """The text of the number 0."""

    def arith(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        """``+ - *`` wrapped to ``w`` bits."""
        ...

    def shift_left(self, e: ir.Binary, a: str, b: str, w: int, s: bool, n: int | None) -> str:
        """``<<`` by the constant ``n`` (below ``w``), or by ``b`` (``n`` None)."""
        ...

    def shift_right(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str: ...

    def div_mod(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        """``/`` or ``%`` (a zero divisor gives 0, as BMv2)."""
        ...

    def concat(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        """``++``: ``a`` above ``b``'s width."""
        ...

    def saturating(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        """``|+|`` or ``|-|``, clamped to the range of ``w`` bits."""
        ...


def scalar_operator(gen: ScalarOperators, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
    """The value of arithmetic operator ``e`` of ``w`` bits (not a comparison): which
    family it is, decided once. ``& | ^`` of two canonical values is canonical and reads
    the same in Python and C; a constant left shift by ``w`` or more bits is 0."""
    op = e.op
    if op in ("+", "-", "*"):
        return gen.arith(e, a, b, w, s)
    if op in ("&", "|", "^"):
        return f"({a} {op} {b})"
    if op == "<<":
        n = int(e.right.value) if isinstance(e.right, ir.Const) else None
        if n is not None and n >= w:
            return gen.zero
        return gen.shift_left(e, a, b, w, s, n)
    if op == ">>":
        return gen.shift_right(e, a, b, w, s)
    if op in ("/", "%"):
        return gen.div_mod(e, a, b, w, s)
    if op == "++":
        return gen.concat(e, a, b, w, s)
    if op in ("|+|", "|-|"):
        return gen.saturating(e, a, b, w, s)
    raise gen.unsupported(f"binary operator {op!r}", e)
