"""Fused register layout: register arrays a program always indexes together share one
block of memory, element-major.

Why: a program that keeps element i of a vector in its own register array (``p4/innet``:
``innet_acc_<i>``, ``innet_param_<i>``, ``innet_mom_<i>``) reads and writes all of them
at one index per packet. As separate arrays, element i of that row lives in array i, far
from element i+1; laid out together, cell ``j`` of member ``m`` of a group of ``G`` arrays
is word ``j * G + m`` of the group's block, so the row a packet touches is ``G``
contiguous words, and the per-element statements (rerolled into a loop by ``reroll``)
become a loop over contiguous memory that the C compiler vectorises.

Which arrays form a group is found from the program, not from names: registers with the
same element type and size whose accesses have the same *signature*, the set of
(statement list, index expression) pairs they are read or written with. Two arrays with
equal signatures are only ever touched in the same places at the same index. Any grouping
is correct (the layout only changes where a cell lives; every access, and the control
plane's ``NativeRegister``, goes through the same cell arithmetic); the analysis only
decides which grouping pays.

Modes (``fuse=`` of ``cgen.generate``/``NativePipeline``, or ``$INNET_NATIVE_FUSE``):
``auto`` (the analysis above; the default), ``off`` (every register its own block, the
layout before fusion), ``all`` (every register with the same element type and size in one
group, regardless of accesses: forces the fused layout onto programs the analysis leaves
alone, for tests).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..frontend import ir

FUSE_MODES = ("auto", "all", "off")
"""Values of ``fuse`` / ``$INNET_NATIVE_FUSE``."""
FUSE_ENV = "INNET_NATIVE_FUSE"
"""Environment variable choosing the mode when none is passed."""


class FuseModeError(ValueError):
    """An unknown fusion mode."""


@dataclass(frozen=True)
class CellLayout:
    """Where a register's cells live: cell ``j`` is word ``j * stride + member`` of ``block``."""

    block: int
    """Index of the C block (``sw_blk_(c, block)``)."""
    member: int
    """Column of this register in the block."""
    stride: int
    """Registers in the block (words per row)."""


def fuse_mode(mode: str | None = None) -> str:
    """``mode``, else ``$INNET_NATIVE_FUSE``, else ``auto``; raises FuseModeError."""
    chosen = mode if mode is not None else (os.environ.get(FUSE_ENV) or "auto")
    if chosen not in FUSE_MODES:
        source = "fuse" if mode is not None else f"${FUSE_ENV}"
        raise FuseModeError(f"{source}={chosen!r}: expected one of {', '.join(FUSE_MODES)}")
    return chosen


def _register(inst: ir.Instance) -> tuple[int, bool, int] | None:
    """(width, signed, size) of a register instance with a constant size, else None."""
    t = inst.type
    if not (isinstance(t, ir.ExternT) and t.name == "register") or inst.decl is not None:
        return None
    vt = t.type_args[0] if t.type_args else ir.BitT(32)
    if isinstance(vt, ir.BoolT):
        vt = ir.BitT(1)
    size = inst.ctor_args[0] if inst.ctor_args else None
    if not isinstance(vt, ir.BitT) or vt.width > 64 or not isinstance(size, ir.Const):
        return None
    return vt.width, vt.signed, int(size.value)


def _key(e: Any) -> Any:
    """A value equal for structurally equal index expressions (same variables, fields,
    operators and constants); unknown shapes are unique."""
    if isinstance(e, ir.Const):
        return ("const", int(e.value), str(e.type))
    if isinstance(e, ir.VarRef):
        return ("var", e.decl.uid)
    if isinstance(e, ir.Member):
        return ("member", _key(e.base), e.name)
    if isinstance(e, ir.Binary):
        return ("binary", e.op, _key(e.left), _key(e.right))
    if isinstance(e, ir.Unary):
        return ("unary", e.op, _key(e.e))
    if isinstance(e, ir.Cast):
        return ("cast", str(e.type), _key(e.e))
    if isinstance(e, ir.Slice):
        return ("slice", _key(e.base), e.hi, e.lo)
    return ("node", id(e))


def _stmt_lists(program: ir.Program) -> Iterator[tuple[Any, ...]]:
    """Every statement list of the program's reachable parsers and controls, their
    actions, and the program's top-level actions and functions."""
    for blk in program.reachable_blocks():
        if isinstance(blk, ir.Parser):
            for st in blk.states.values():
                yield from _nested(st.body)
        else:
            yield from _nested(blk.body.stmts)
            for a in blk.actions:
                yield from _nested(a.body.stmts)
    for a in program.actions.values():
        yield from _nested(a.body.stmts)
    for f in program.functions.values():
        yield from _nested(f.body.stmts)


def _nested(stmts: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    yield stmts
    for s in stmts:
        if isinstance(s, ir.Block):
            yield from _nested(s.stmts)
        elif isinstance(s, ir.If):
            yield from _nested(s.then.stmts)
            if s.else_ is not None:
                yield from _nested(s.else_.stmts)
        elif isinstance(s, ir.Switch):
            for case in s.cases:
                if case.body is not None:
                    yield from _nested(case.body.stmts)


def _declared(program: ir.Program) -> list[ir.Instance]:
    """Register instances in declaration order (controls reachable from main)."""
    out = []
    for blk in program.reachable_blocks():
        for loc in blk.locals:
            if isinstance(loc, ir.Instance) and _register(loc) is not None:
                out.append(loc)
    return out


def register_groups(program: ir.Program, mode: str) -> dict[str, tuple[str, ...]]:
    """Control-plane name of every register in a group of two or more -> the group's
    members (control-plane names, declaration order). Registers left out keep a block
    of their own."""
    regs = _declared(program)
    if mode == "off" or len(regs) < 2:
        return {}
    sig: dict[str, set[tuple[int, Any]]] = {r.cp_name: set() for r in regs}
    if mode == "auto":
        for stmts in _stmt_lists(program):
            for s in stmts:
                call = s.call if isinstance(s, ir.CallStmt) else None
                if not (isinstance(call, ir.MethodCall) and isinstance(call.target, ir.InstanceRef)
                        and call.method in ("read", "write")):
                    continue
                name = call.target.inst.cp_name
                if name not in sig:
                    continue
                pos = 1 if call.method == "read" else 0
                arg = call.args[pos].expr if pos < len(call.args) else None
                sig[name].add((id(stmts), _key(arg)))
    by: dict[Any, list[str]] = {}
    for r in regs:
        kind = _register(r)
        s = sig[r.cp_name]
        if mode == "auto" and not s:
            continue
        by.setdefault((kind, frozenset(s)), []).append(r.cp_name)
    out: dict[str, tuple[str, ...]] = {}
    for members in by.values():
        if len(members) >= 2:
            group = tuple(dict.fromkeys(members))
            for m in group:
                out[m] = group
    return out
