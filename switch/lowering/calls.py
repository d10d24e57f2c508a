"""Which call a call statement makes: one dispatch for both executors' statement emitters."""

from __future__ import annotations

import dataclasses
from typing import Protocol

from ..frontend import ir
from .errors import Unsupported
from .places import Place
from .types import is_scalar


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


class TableResults(Protocol):
    """How an executor's expression emitter reads the result of a table apply."""

    unsupported: Unsupported

    def table_apply(self, e: ir.TableApply) -> str:
        """Emit the apply of ``e``'s table; the text of its result."""
        ...

    def negate(self, cond: str) -> str:
        """The boolean negation of ``cond``."""
        ...

    def apply_result(self, r: str, action: bool) -> str:
        """Of the apply result ``r``: whether an entry was hit, or (``action``) the number
        of the action that ran."""
        ...


def table_result(e: ir.Member, out: TableResults) -> str:
    """The value of ``t.apply().hit``, ``.miss`` or ``.action_run`` (``e.base`` is the
    apply, emitted first): ``miss`` is the negation of ``hit``."""
    assert isinstance(e.base, ir.TableApply), "table_result of a member of no table apply"
    r = out.table_apply(e.base)
    if e.name == "hit":
        return out.apply_result(r, action=False)
    if e.name == "miss":
        return out.negate(out.apply_result(r, action=False))
    if e.name == "action_run":
        return out.apply_result(r, action=True)
    raise out.unsupported(f"table apply result member {e.name!r}", e)


class ArgumentBinder(Protocol):
    """What binding a call's arguments to its parameters (P4_16 6.8: copy-in/copy-out)
    needs of an executor's emitter."""

    unsupported: Unsupported

    def data_argument(self, e: ir.Expr, p: ir.Param) -> list[str]:
        """The value(s) of a directionless (action data) argument."""
        ...

    def param_place(self, p: ir.Param) -> Place:
        """The slots of the callee's parameter ``p``."""
        ...

    def copy_in(self, dst: Place, e: ir.Expr) -> None:
        """Copy the scalar value of ``e`` into the parameter's slot."""
        ...

    def assign_agg(self, dst: Place, rhs: ir.Expr) -> None:
        """Copy the aggregate value of ``rhs`` into the parameter's slots."""
        ...

    def reset(self, p: Place) -> None:
        """Give an ``out`` parameter its initial value."""
        ...


def bind_arguments(params: tuple[ir.Param, ...], args: tuple[ir.Arg, ...], node: object, out: ArgumentBinder
                   ) -> tuple[list[str], list[tuple[ir.Expr, Place]]]:
    """Copy-in of a call's arguments, in parameter order (an omitted one takes the
    parameter's default): the directionless (data) argument values, and the copy-out
    list of (argument l-value, parameter place) for ``out``/``inout`` parameters."""
    data: list[str] = []
    outs: list[tuple[ir.Expr, Place]] = []
    for i, p in enumerate(params):
        a = args[i] if i < len(args) else None
        expr = a.expr if a is not None else p.default
        if p.direction is None:
            if expr is None:
                raise out.unsupported(f"missing argument for {p.name}", node)
            data += out.data_argument(expr, p)
            continue
        pp = out.param_place(p)
        if p.direction in ("in", "inout"):
            if expr is None:
                raise out.unsupported(f"missing argument for {p.name}", node)
            if is_scalar(p.type):
                out.copy_in(pp, expr)
            else:
                out.assign_agg(pp, expr)
        else:
            out.reset(pp)
        if p.direction in ("out", "inout") and expr is not None:
            outs.append((expr, pp))
    return data, outs


class SubparserBinder(Protocol):
    """What inlining a sub-parser's call needs of an executor's parser emitter."""

    unsupported: Unsupported

    def place(self, e: ir.Expr) -> Place: ...

    def reset(self, p: Place) -> None:
        """Give an ``out`` parameter's slots their initial value."""
        ...

    def copy_in_param(self, prm: ir.Param, a: ir.Expr) -> None:
        """Emit: the scalar ``in`` argument ``a`` copied into ``prm``'s own slot."""
        ...

    def copy_unaliased(self, prm: ir.Param, a: ir.Expr) -> bool:
        """Whether ``a`` has no slots the sub-parser could alias (a local the emitter keeps
        elsewhere); if so, emit its copy-in through ``prm``'s own slot."""
        ...


def subparser_bindings(decl: ir.Parser, e: ir.MethodCall, out: SubparserBinder
                       ) -> tuple[dict[int, int], list[tuple[ir.Param, ir.Expr]]]:
    """Bind the arguments of sub-parser call ``e`` (as p4c inlines it): the first slot of
    the argument each parameter aliases by uid, an ``out`` one reset first; a scalar
    ``in`` argument is copied into its parameter's slot instead, and the (parameter,
    argument) pairs ``copy_unaliased`` copied, which the caller copies back after."""
    bindings: dict[int, int] = {}
    copied: list[tuple[ir.Param, ir.Expr]] = []
    for i, prm in enumerate(decl.params):
        if isinstance(prm.type, ir.ExternT):
            continue
        a = e.args[i].expr if i < len(e.args) else None
        if a is None:
            raise out.unsupported(f"sub-parser argument {prm.name} left out", e)
        if is_scalar(prm.type) and prm.direction in (None, "in"):
            out.copy_in_param(prm, a)
            continue
        if out.copy_unaliased(prm, a):
            copied.append((prm, a))
            continue
        place = out.place(a)
        if not isinstance(place.base, int):
            raise out.unsupported(f"sub-parser argument {prm.name} at a runtime stack index", e)
        bindings[prm.uid] = place.base
        if prm.direction == "out":
            out.reset(place)
    return bindings, copied
