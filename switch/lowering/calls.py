"""Which call a call statement makes: one dispatch for both executors' statement emitters."""

from __future__ import annotations

import dataclasses
from typing import Protocol

from ..frontend import ir
from .errors import Unsupported


class CallValues(Protocol):
    """The calls with a value an executor's emitter writes (each returns its value's
    expression; None for a void call)."""

    unsupported: Unsupported

    def table_apply(self, e: ir.TableApply) -> str: ...

    def method_call(self, e: ir.MethodCall) -> str | None: ...

    def extern_call(self, e: ir.ExternCall) -> str | None: ...

    def function_call(self, e: ir.FunctionCall) -> str | None: ...


class CallEmitter(CallValues, Protocol):
    """The calls an executor's statement emitter writes (a value is unused in a statement)."""

    def action_call(self, e: ir.ActionCall) -> None: ...


def call_statement(s: ir.CallStmt, out: CallEmitter) -> None:
    """Emit call statement ``s`` through ``out`` (``t.apply().hit`` as a statement applies
    ``t``); any other call is refused."""
    c = s.call
    if isinstance(c, ir.TableApply):
        out.table_apply(c)
    elif isinstance(c, ir.MethodCall):
        out.method_call(c)
    elif isinstance(c, ir.ExternCall):
        out.extern_call(c)
    elif isinstance(c, ir.ActionCall):
        out.action_call(c)
    elif isinstance(c, ir.FunctionCall):
        out.function_call(c)
    elif isinstance(c, ir.Member) and isinstance(c.base, ir.TableApply):
        out.table_apply(c.base)
    else:
        raise out.unsupported(f"call statement {type(c).__name__}", s)


def has_call(e: ir.Expr) -> bool:
    """``e`` contains a call (function, action, extern, method, table apply) that may write
    state, so operands to its left must be read before it (P4_16 8.1: left to right)."""
    if isinstance(e, (ir.FunctionCall, ir.ExternCall, ir.ActionCall, ir.TableApply)):
        return True
    if isinstance(e, ir.MethodCall):
        return e.method not in ("isValid",)
    for f in dataclasses.fields(e):  # type: ignore[arg-type]
        v = getattr(e, f.name)
        if isinstance(v, ir.Expr) and has_call(v):
            return True
        if isinstance(v, tuple) and any(isinstance(x, ir.Expr) and has_call(x) for x in v):
            return True
    return False


def call_value(e: ir.TableApply | ir.MethodCall | ir.FunctionCall | ir.ExternCall, out: CallValues) -> str:
    """The value expression of a call used as an expression; a call without a value (a
    void method, function or extern) is refused there."""
    if isinstance(e, ir.TableApply):
        return out.table_apply(e)
    if isinstance(e, ir.MethodCall):
        r = out.method_call(e)
        what = f"method {e.method!r} has no value"
    elif isinstance(e, ir.FunctionCall):
        r = out.function_call(e)
        what = f"function {e.func.name!r} returns no value"
    else:
        r = out.extern_call(e)
        what = f"extern {e.name!r} returns no value"
    if r is None:
        raise out.unsupported(what, e)
    return r
