"""Walking IR in both generators: the visitor dispatch and left-to-right operand reads."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Protocol

from ..frontend import ir
from .calls import has_call
from .errors import Unsupported
from .types import is_scalar


def visit(gen: Any, prefix: str, node: Any, what: str, unsupported: Unsupported) -> Any:
    """Call ``gen``'s method ``<prefix><node's class name>`` on ``node``; a class without
    one is refused as an unsupported ``what`` (e.g. "statement For")."""
    m = getattr(gen, prefix + type(node).__name__, None)
    if m is None:
        raise unsupported(f"{what} {type(node).__name__}", node)
    return m(node)


class ExprVisitor(Protocol):
    """What reading an expression's value needs of an executor's expression emitter: its
    ``x_<Node>`` methods (found by :func:`visit`), the operands it holds in temporaries
    and its refusal."""

    pinned: "Pinned"
    unsupported: Unsupported


def value_of(gen: ExprVisitor, e: ir.Expr) -> str:
    """The text of ``e``'s scalar value: the temporary a pinned operand was read into (so
    it is not read again after a call may have written it), else ``gen.x_<Node>(e)``."""
    pin = gen.pinned.get(e)
    if pin is not None:
        return pin
    return visit(gen, "x_", e, "expression", gen.unsupported)  # type: ignore[no-any-return]


def reads_left_first(e: ir.Binary) -> bool:
    """Whether the left operand of ``e`` must be read into a temporary before its right
    one is evaluated: a call on the right may write it (an inout argument), and P4_16
    evaluates left to right. Short-circuit operators and constants need no temporary."""
    return e.op not in ("&&", "||") and is_scalar(e.left.type) and not isinstance(e.left, ir.Const) \
        and has_call(e.right)


class Pinned:
    """Operands already read into temporaries: while held, an expression's value is the
    temporary's name instead of a fresh read."""

    def __init__(self) -> None:
        self._held: dict[int, tuple[ir.Expr, str]] = {}

    def get(self, e: ir.Expr) -> str | None:
        """The temporary holding ``e``'s value, or None."""
        held = self._held.get(id(e))
        return held[1] if held is not None and held[0] is e else None

    @contextmanager
    def holding(self, e: ir.Expr, value: str) -> Iterator[None]:
        """Within the block, ``e`` reads as ``value``."""
        self._held[id(e)] = (e, value)
        try:
            yield
        finally:
            del self._held[id(e)]


def captured(lines: list[str], produce: Callable[[], str]) -> tuple[str, list[str]]:
    """The value ``produce`` returns and the lines it emitted to get it, taken back out
    of ``lines`` (an arm of ``?:`` whose preparation may only run when it is chosen)."""
    n = len(lines)
    value = produce()
    pre = lines[n:]
    del lines[n:]
    return value, pre
