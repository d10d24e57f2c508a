"""What both executors check before they walk a parser's states, decided once: its locals
are variables (sub-parser instances are reached through their calls) and it has a start."""

from __future__ import annotations

from typing import Callable

from ..frontend import ir
from .errors import Unsupported


def declare_parser_locals(p: ir.Parser, declare: Callable[[ir.VarDeclStmt], None],
                          unsupported: Unsupported) -> None:
    """Declare ``p``'s local variables through ``declare``; refuse value sets and extern
    objects (neither executor has them as parser locals) and a parser without ``start``."""
    for loc in p.locals:
        if isinstance(loc, ir.VarDeclStmt):
            declare(loc)
        elif not (isinstance(loc, ir.Instance) and isinstance(loc.decl, ir.Parser)):
            raise unsupported(f"parser local {getattr(loc, 'name', loc)} (value sets, extern objects)", loc)
    if "start" not in p.states:
        raise unsupported(f"parser {p.name} has no start state", p)
