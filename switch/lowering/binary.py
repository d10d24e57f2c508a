"""A binary expression walked once for both executors: operand order, short-circuit
arms whose preparation may only run when taken, and aggregate equality; the emitter
writes the scalar operators and the guarded forms in its own language."""

from __future__ import annotations

from typing import Any, Protocol

from ..frontend import ir
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
