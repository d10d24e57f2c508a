"""The state one function body's generator parts share: output lines, indentation, temps.

The expression, extern and statement parts (:mod:`.exprgen`, :mod:`.externgen`,
:mod:`.stmtgen`) are composed over one context instead of stacked by inheritance, so each
part names the others it uses and the output position has one owner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..frontend import ir
from ..lowering.errors import Unsupported
from ..lowering.order import Pinned
from ..lowering.places import Place
from .errors import UnsupportedError
from .ranges import Range

if TYPE_CHECKING:
    from .context import CompileContext


class GenContext:
    """Mutable state of the generation of one Python function body."""

    def __init__(self, prog: CompileContext, locals_: dict[int, str] | None = None) -> None:
        self.prog = prog
        self.unsupported = Unsupported(UnsupportedError)
        self.lines: list[str] = []
        self.ind = 1
        self.ntmp = 0
        self.locals: dict[int, str] = dict(locals_ or {})  # uid -> Python local (action data)
        self.in_parser = False
        self.packet_uid: int | None = None
        # value ranges of Python locals written only by their initializer (see .ranges);
        # ``written`` (uids written anywhere in the function) is set by the compiler
        self.ranges: dict[int, Range] = {}
        self.written: set[int] | None = None
        self._vr: dict[int, tuple[ir.Expr, Range | None]] = {}
        self.place_memo: tuple[ir.Expr, Place] | None = None  # an l-value already evaluated
        self.pinned = Pinned()

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.ind + line)

    def tmp(self) -> str:
        self.ntmp += 1
        return f"_t{self.ntmp}"
