"""Parser code generation: a v1model parser (and each sub-parser call site) as one
Python function over the slot list ``S`` and the packet bytes.

An acyclic parser whose state tree is small is inlined into nested ``if``s following its
``select`` transitions; any other runs as a ``while`` loop over a state number. Parser
errors raise ``_PErr`` (``runtime.ParserErr``); a top-level parser turns them into
``standard_metadata.parser_error`` and the position reached, as BMv2 does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..frontend import ir
from ..lowering.parsers import declare_parser_locals
from .errors import UnsupportedError

if TYPE_CHECKING:
    from .context import CompileContext
    from .stmtgen import StmtGen

INLINE_STATE_LIMIT = 64
"""Acyclic parsers with at most this many states along their tree are inlined."""


class ParserGen:
    """Generates the parser functions of one program into ``prog.sources``."""

    def __init__(self, prog: "CompileContext") -> None:
        self.prog = prog

    def parser_fn(self, p: ir.Parser) -> str:
        """The top-level parser: ``P_<name>(S, data)`` returns the payload's offset."""
        name = self.prog.py_name("P", p.name)
        g = self.prog.codegen("parser")
        g.ctx.in_parser = True
        g.ctx.ind = 2
        self._parser_body(g, p)
        body = "\n".join(g.ctx.lines)
        pe = self.prog.sm_slot("parser_error")
        self.prog.sources.append(
            f"def {name}(S, data):\n    L = len(data)\n    pos = 0\n    try:\n{body or '        pass'}\n"
            f"    except _PErr as _e:\n        S[{pe}] = _e.code\n"
            f"        if _e.pos is not None: pos = _e.pos\n    return pos\n")
        return name

    def _parser_body(self, g: StmtGen, p: ir.Parser) -> None:
        declare_parser_locals(p, g.stmt, g.unsupported)
        cyclic = _has_cycle(p.states)
        if not cyclic and _tree_size(p.states, "start") <= INLINE_STATE_LIMIT:
            self._inline_state(g, p.states, "start")
        else:
            ids = {n: i for i, n in enumerate(p.states)}
            g.emit(f"st = {ids['start']}")
            g.emit("while True:")
            g.ctx.ind += 1
            first = True
            for n, s in p.states.items():
                g.emit(f"{'if' if first else 'elif'} st == {ids[n]}:")
                first = False
                g.ctx.ind += 1
                for x in s.body:
                    g.stmt(x)
                self._transition(g, s.transition, lambda tgt: g.emit(
                    "break" if tgt in ("accept", "reject") else f"st = {ids[tgt]}"))
                g.ctx.ind -= 1
            g.ctx.ind -= 1

    def subparser_fn(self, p: ir.Parser, bindings: dict[int, int]) -> str:
        """A sub-parser compiled for one call site: its parameters alias the arguments'
        slots (p4c inlines sub-parsers); returns the new position, errors carry ``pos``."""
        name = self.prog.py_name(f"SP{len(self.prog.sources)}", p.name)
        saved = {uid: self.prog.layout.by_uid.get(uid) for uid in bindings}
        self.prog.layout.by_uid.update(bindings)
        try:
            g = self.prog.codegen("parser")
            g.ctx.in_parser = True
            g.ctx.ind = 2
            self._parser_body(g, p)
        finally:
            for uid, base in saved.items():
                if base is None:
                    self.prog.layout.by_uid.pop(uid, None)
                else:
                    self.prog.layout.by_uid[uid] = base
        body = "\n".join(g.ctx.lines)
        self.prog.sources.append(f"def {name}(S, data, pos, L):\n    try:\n{body or '        pass'}\n"
                            f"    except _PErr as _e:\n        if _e.pos is None: _e.pos = pos\n        raise\n"
                            f"    return pos\n")
        return name

    def _inline_state(self, g: StmtGen, states: dict[str, ir.ParserState], name: str) -> None:
        if name in ("accept", "reject"):
            g.emit("pass")
            return
        s = states.get(name)
        if s is None:
            raise UnsupportedError(f"transition to unknown state {name}")
        for x in s.body:
            g.stmt(x)
        self._transition(g, s.transition, lambda tgt: self._inline_state(g, states, tgt))

    def _transition(self, g: StmtGen, tr: ir.Goto | ir.Select, go: Callable[[str], None]) -> None:
        if isinstance(tr, ir.Goto):
            go(tr.state)
            return
        keys = [g.simple(g.expr(k)) for k in tr.keys]
        first = True
        for case in tr.cases:
            conds = []
            for kx, ks, key in zip(keys, case.keys, tr.keys):
                c = self._keyset(g, kx, ks)
                if c is not None:
                    conds.append(c)
            cond = " and ".join(conds) if conds else "True"
            g.emit(f"{'if' if first else 'elif'} {cond}:")
            first = False
            g.ctx.ind += 1
            go(case.state)
            g.ctx.ind -= 1
            if cond == "True":
                return
        if first:
            go("accept")
            return
        g.emit("else:")
        g.ctx.ind += 1
        go("accept")  # BMv2: no match and no default ends parsing without an error
        g.ctx.ind -= 1

    def _keyset(self, g: StmtGen, kx: str, ks: ir.Expr) -> str | None:
        if isinstance(ks, ir.DefaultKey):
            return None
        if isinstance(ks, ir.Mask):
            m = g.expr(ks.mask)
            return f"({kx} & {m}) == ({g.expr(ks.value)} & {m})"
        if isinstance(ks, ir.Range):
            return f"{g.expr(ks.lo)} <= {kx} <= {g.expr(ks.hi)}"
        if isinstance(ks, ir.ListExpr):
            raise UnsupportedError("a tuple keyset inside a select case", ks.loc)
        return f"{kx} == {g.expr(ks)}"


def _has_cycle(states: dict[str, ir.ParserState]) -> bool:
    color: dict[str, int] = {}

    def succ(n: str) -> list[str]:
        tr = states[n].transition
        return [tr.state] if isinstance(tr, ir.Goto) else [c.state for c in tr.cases]

    def visit(n: str) -> bool:
        if n not in states:
            return False
        c = color.get(n, 0)
        if c == 1:
            return True
        if c == 2:
            return False
        color[n] = 1
        if any(visit(m) for m in succ(n)):
            return True
        color[n] = 2
        return False

    return visit("start")


def _tree_size(states: dict[str, ir.ParserState], n: str) -> int:
    if n not in states:
        return 0
    tr = states[n].transition
    nxt = [tr.state] if isinstance(tr, ir.Goto) else [c.state for c in tr.cases] + ["accept"]
    return 1 + sum(_tree_size(states, m) for m in nxt)
