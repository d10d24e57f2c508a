"""Calls: actions, functions, extern functions, extern/packet/header/stack methods,
``t.apply()`` and sub-parser/sub-control ``apply``, with argument binding.

Why separate: argument binding (positional and named arguments, directions, ``_`` for
out arguments, overloads by arity, inference of generic type parameters) is the
most intricate typing rule and is shared by every kind of call.
"""

from __future__ import annotations

from typing import Any

from . import ir
from .errors import P4Error
from .context import BuildContext
from .expressions import _SIZE_METHODS, Exprs, _Callable, children
from .lexer import Tok
from .symbols import ExternFnSym
from .tree import ParseNode


def subst(t: ir.Type, tv: dict[str, ir.Type]) -> ir.Type:
    """Replace bound type variables in ``t``."""
    if isinstance(t, ir.TypeVarT):
        return tv.get(t.name, t)
    if isinstance(t, ir.ExternT) and t.type_args:
        return ir.ExternT(t.name, tuple(subst(a, tv) for a in t.type_args))
    if isinstance(t, ir.TupleT):
        return ir.TupleT(tuple(subst(a, tv) for a in t.elems))
    return t


def _has_typevar(t: ir.Type) -> bool:
    if isinstance(t, ir.TypeVarT):
        return True
    if isinstance(t, ir.TupleT):
        return any(_has_typevar(e) for e in t.elems)
    return False


class Calls:
    """Types calls: of actions, functions, extern functions and methods, and table
    ``apply()``; binds their arguments to parameters (directions, defaults, type
    variables).  The arguments are typed by the expression part."""

    def __init__(self, cx: BuildContext, exprs: Exprs) -> None:
        self.cx = cx
        self.exprs = exprs

    def arg_list(self, args_tree: ParseNode | None) -> list[tuple[str | None, Any]]:
        out: list[tuple[str | None, Any]] = []
        if args_tree is None:
            return out
        for a in children(args_tree):
            if a.data == "named_arg":
                out.append((self.cx.name_of(a.children[0]), a.children[1]))
            elif a.data == "dontcare_arg":
                out.append((None, "_"))
            else:
                out.append((None, a.children[0]))
        return out

    # ------------------------------------------------------------------ dispatch
    def call(self, target: ParseNode, targs: tuple[ir.Type, ...], args_tree: ParseNode | None,
              loc: ir.Loc) -> ir.Expr:
        args = self.arg_list(args_tree)
        tgt = self.exprs.value_or_callable(target)
        if not isinstance(tgt, _Callable):
            raise self.cx.err(loc, f"a value of type {tgt.type} cannot be called")
        obj = tgt.obj
        if isinstance(obj, tuple):
            base, name = obj
            if isinstance(base, _Callable):
                inner = base.obj
                if isinstance(inner, ir.Table):
                    if name != "apply":
                        raise self.cx.err(loc, f"table '{inner.name}' has no method '{name}' "
                                       "(only apply())")
                    if args:
                        raise self.cx.err(loc, f"table '{inner.name}'.apply() takes no arguments")
                    if self.cx.block_kind != "control":
                        raise self.cx.err(loc, f"table '{inner.name}'.apply() cannot be called from "
                                       f"{'an' if self.cx.block_kind == 'action' else 'a'} {self.cx.block_kind}; "
                                       "tables are applied in a control's apply block")
                    return ir.TableApply(inner, ir.TableApplyT(inner.name), loc)
                raise self.cx.err(loc, f"'{base.name}' has no method '{name}'")
            return self.method_call(base, name, targs, args, loc)
        if isinstance(obj, ir.Action):
            if targs:
                raise self.cx.err(loc, f"action '{obj.name}' takes no type arguments")
            if self.cx.block_kind in ("function", "parser"):
                raise self.cx.err(loc, f"action '{obj.name}' cannot be called from a {self.cx.block_kind}; "
                               "actions are called from controls and other actions")
            bound = self.bind(obj.params, args, loc, f"action '{obj.name}'", {}, (), action=True)
            return ir.ActionCall(obj, bound, ir.VoidT(), loc)
        if isinstance(obj, ir.Function):
            bound = self.bind(obj.params, args, loc, f"function '{obj.name}'", {}, ())
            return ir.FunctionCall(obj, bound, obj.return_type, loc)
        if isinstance(obj, ExternFnSym):
            return self.extern_fn_call(obj.decl, targs, args, loc)
        if isinstance(obj, ir.Table):
            raise self.cx.err(loc, f"a table cannot be called; use {obj.name}.apply()")
        raise self.cx.err(loc, f"'{tgt.name}' is not callable")

    def choose_overload(self, sigs: tuple[ir.MethodSig, ...], nargs: int, loc: ir.Loc,
                        what: str) -> ir.MethodSig:
        for s in sigs:
            required = sum(1 for p in s.params if p.default is None)
            if required <= nargs <= len(s.params):
                return s
        counts = sorted({len(s.params) for s in sigs})
        exp = " or ".join(str(c) for c in counts)
        raise self.cx.err(loc, f"wrong number of arguments for {what}: expected {exp}, got {nargs}")

    def extern_fn_call(self, decl: ir.ExternDecl, targs: tuple[ir.Type, ...],
                       args: list[tuple[str | None, Any]], loc: ir.Loc) -> ir.Expr:
        sig = self.choose_overload(decl.methods, len(args), loc, f"'{decl.name}'")
        tv = self._explicit_typevars(sig, targs, loc)
        bound = self.bind(sig.params, args, loc, f"'{decl.name}'", tv, sig.type_params)
        rt = subst(sig.return_type, tv)
        if decl.name == "static_assert":
            cond = bound[0].expr
            if not isinstance(cond, ir.Const):
                raise self.cx.err(loc, "static_assert needs a compile-time condition")
            if not cond.value:
                msg = bound[1].expr.value if len(bound) > 1 and isinstance(
                    bound[1].expr, ir.StringLit) else "static_assert failed"
                raise self.cx.err(loc, f"static assertion failed: {msg}")
            return ir.Const(True, ir.BoolT(), loc)
        if decl.name == "verify" and self.cx.block_kind != "parser":
            raise self.cx.err(loc, "verify() may only be called in a parser")
        call = ir.ExternCall(decl.name, bound, tuple(tv.get(p, ir.TypeVarT(p))
                                                     for p in sig.type_params), rt, loc)
        if decl.name == "digest":
            self.cx.digest_calls.append(call)
        return call

    def _explicit_typevars(self, sig: ir.MethodSig, targs: tuple[ir.Type, ...],
                           loc: ir.Loc) -> dict[str, ir.Type]:
        tv: dict[str, ir.Type] = {}
        if targs:
            if len(targs) != len(sig.type_params):
                raise self.cx.err(loc, f"'{sig.name}' takes {len(sig.type_params)} type "
                               f"arguments, got {len(targs)}")
            for n, t in zip(sig.type_params, targs):
                if not isinstance(t, ir.DontCareT):
                    tv[n] = t
        return tv

    # ------------------------------------------------------------------ methods
    def _check_packet_in(self, name: str, bound: tuple[ir.Arg, ...], rt: ir.Type, loc: ir.Loc) -> None:
        """p4c's rules for what ``extract`` and ``lookahead`` take."""
        if name == "extract" and bound and bound[0].expr is not None:
            t = bound[0].expr.type
            if not isinstance(t, ir.HeaderT):
                raise self.cx.err(bound[0].expr.loc, f"argument of extract must be a header, not {t}")
            if len(bound) == 1 and any(isinstance(f.type, ir.VarBitT) for f in t.fields):
                raise self.cx.err(bound[0].expr.loc, f"extract with one argument cannot take header {t.name}, "
                               "which has a varbit field (give its size in bits as the second argument)")
        if name == "lookahead" and _has_varbit(rt):
            raise self.cx.err(loc, f"lookahead<{rt}>: the type argument must be a fixed-width type (no varbit)")

    def method_call(self, base: ir.Expr, name: str, targs: tuple[ir.Type, ...],
                    args: list[tuple[str | None, Any]], loc: ir.Loc) -> ir.Expr:
        bt = base.type
        if isinstance(bt, (ir.HeaderT, ir.HeaderUnionT, ir.StructT)) and (
                name in ("isValid", "setValid", "setInvalid") or name in _SIZE_METHODS):
            if args:
                raise self.cx.err(loc, f"{name}() takes no arguments, got {len(args)}")
            if name in _SIZE_METHODS:
                if not isinstance(bt, (ir.HeaderT, ir.StructT)):
                    raise self.cx.err(loc, f"{name}() is not defined for {bt}")
                bits = ir.type_width(bt)
                div = _SIZE_METHODS[name]
                return ir.Const(bits // div if div == 1 else (bits + 7) // 8, ir.IntT(), loc)
            if isinstance(bt, ir.StructT):
                raise self.cx.err(loc, f"{name}() is only defined for headers and header unions")
            if name == "isValid":
                return ir.MethodCall(base, name, (), (), ir.BoolT(), loc)
            if isinstance(bt, ir.HeaderUnionT):
                raise self.cx.err(loc, f"{name}() is not defined for a header_union; call it "
                               "on one of its members")
            self._writable(base, f"call {name}() on")
            return ir.MethodCall(base, name, (), (), ir.VoidT(), loc)
        if isinstance(bt, ir.StackT) and name in ("push_front", "pop_front"):
            if len(args) != 1:
                raise self.cx.err(loc, f"{name}() takes 1 argument, got {len(args)}")
            n = self.exprs.expr(args[0][1])
            if not isinstance(n, ir.Const) or isinstance(n.value, bool) or int(n.value) < 0:
                raise self.cx.err(n.loc, f"{name}() needs a non-negative compile-time integer")
            self._writable(base, f"call {name}() on")
            arg = ir.Arg(ir.Const(int(n.value), ir.IntT(), n.loc), "in", None)
            return ir.MethodCall(base, name, (arg,), (), ir.VoidT(), loc)
        if isinstance(bt, ir.ExternT):
            decl = self.cx.externs.get(bt.name)
            if decl is None:
                raise self.cx.err(loc, f"unknown extern type {bt.name}")
            sigs = tuple(m for m in decl.methods if m.name == name)
            if not sigs:
                raise self.cx.err(loc, f"extern {bt.name} has no method '{name}'."
                               + self._suggest(name, [m.name for m in decl.methods]))
            tv: dict[str, ir.Type] = {}
            for pname, targ in zip(decl.type_params, bt.type_args):
                tv[pname] = targ
            sig = self.choose_overload(sigs, len(args), loc, f"{bt.name}.{name}")
            tv.update(self._explicit_typevars(sig, targs, loc))
            what = f"{bt.name}.{name}"
            bound = self.bind(sig.params, args, loc, what, tv, sig.type_params)
            rt = subst(sig.return_type, tv)
            if bt.name == "packet_in":
                self._check_packet_in(name, bound, rt, loc)
            if isinstance(rt, ir.TypeVarT):
                raise self.cx.err(loc, f"cannot infer the result type of {what}; give it as "
                               f"a type argument, e.g. {name}<bit<8>>()")
            return ir.MethodCall(base, name, bound, tuple(tv.get(p, ir.TypeVarT(p))
                                                          for p in sig.type_params), rt, loc)
        if isinstance(bt, (ir.ControlT, ir.ParserT)) and isinstance(base, ir.InstanceRef):
            if name != "apply":
                raise self.cx.err(loc, f"{bt.name} instance '{base.inst.name}' has no method "
                               f"'{name}' (only apply)")
            blk = base.inst.decl
            assert blk is not None
            bound = self.bind(blk.params, args, loc, f"{base.inst.name}.apply", {}, ())
            return ir.MethodCall(base, "apply", bound, (), ir.VoidT(), loc)
        raise self.cx.err(loc, f"{bt} has no method '{name}'")

    @staticmethod
    def _suggest(name: str, cands: list[str]) -> str:
        from .symbols import did_you_mean
        return did_you_mean(name, cands)

    def _writable(self, e: ir.Expr, what: str) -> None:
        self.exprs.check_lvalue(e, what)

    # ------------------------------------------------------------------ binding
    def bind(self, params: tuple[ir.Param, ...], args: list[tuple[str | None, Any]],
             loc: ir.Loc, callee: str, tv: dict[str, ir.Type],
             tparams: tuple[str, ...], action: bool = False) -> tuple[ir.Arg, ...]:
        """Arguments to parameters. A directionless parameter takes a compile-time constant
        (p4c's type unification), except in a direct action call, where it acts as ``in``."""
        if len(args) > len(params):
            raise self.cx.err(loc, f"too many arguments for {callee}: expected {len(params)}, "
                           f"got {len(args)}")
        given: dict[int, Any] = {}
        for i, (n, a) in enumerate(args):
            if n is None:
                given[i] = a
                continue
            idx = next((k for k, p in enumerate(params) if p.name == n), None)
            if idx is None:
                raise self.cx.err(loc, f"{callee} has no parameter named '{n}'."
                               + self._suggest(n, [p.name for p in params]))
            given[idx] = a
        for k, p in enumerate(params):
            if k not in given and p.default is None:
                raise self.cx.err(loc, f"wrong number of arguments for {callee}: missing "
                               f"argument for parameter '{p.name}' (expected {len(params)}, "
                               f"got {len(args)})")
        evaluated: dict[int, ir.Expr | None] = {}
        for k, a in given.items():
            evaluated[k] = None if isinstance(a, str) and a == "_" else self.exprs.expr(a)
        # infer type variables from sized arguments
        for k, e in evaluated.items():
            pt = params[k].type
            if e is not None and isinstance(pt, ir.TypeVarT) and pt.name not in tv \
                    and not isinstance(e.type, ir.IntT):
                tv[pt.name] = e.type
        out: list[ir.Arg] = []
        for k, p in enumerate(params):
            if k not in given:
                out.append(ir.Arg(p.default, p.direction, p))
                continue
            e = evaluated[k]
            pt = subst(p.type, tv)
            if e is None:
                if p.direction not in ("out", "inout"):
                    raise self.cx.err(loc, f"'_' is only allowed for an out argument; parameter "
                                   f"'{p.name}' of {callee} is '{p.direction or 'in'}'")
                out.append(ir.Arg(None, p.direction, p))
                continue
            if _has_typevar(pt):
                if isinstance(e.type, ir.IntT):
                    raise self.cx.err(e.loc, f"cannot infer a width for argument '{p.name}' of "
                                   f"{callee} from an unsized integer; write e.g. 32w{getattr(e, 'value', 0)} "
                                   "or cast it")
                pt = e.type
            e = self.exprs.coerce(e, pt, f"argument '{p.name}' of {callee}")
            if p.direction is None and not action and not _compile_time(e):
                raise self.cx.err(e.loc, f"argument for directionless parameter '{p.name}' of {callee} "
                               "must be a compile-time constant (give the parameter a direction, "
                               "e.g. 'in')")
            if p.direction in ("out", "inout"):
                try:
                    self.exprs.check_lvalue(e, "write")
                except P4Error:
                    raise self.cx.err(e.loc, f"argument for '{p.direction}' parameter '{p.name}' "
                                   f"of {callee} must be a writable l-value") from None
            if isinstance(e, ir.ListExpr) and p.direction in ("in", None):
                for x in e.elems:
                    if isinstance(x.type, ir.IntT):
                        raise self.cx.err(x.loc, f"list element in argument '{p.name}' of "
                                       f"{callee} needs a width (e.g. 8w{getattr(x, 'value', 0)})"
                                       if isinstance(x, ir.Const) else "list element needs a width")
            out.append(ir.Arg(e, p.direction, p))
        return tuple(out)

    def call_target_tree(self, t: ParseNode | Tok) -> ParseNode | Tok:
        return t


def _compile_time(e: ir.Expr) -> bool:
    """A value known at compile time: a literal or constant (folded), an extern instance
    (``packet_in``...), or a list/struct of them."""
    if isinstance(e, (ir.Const, ir.EnumMember, ir.ErrorMember, ir.StringLit, ir.MatchKindMember,
                      ir.InstanceRef)) or isinstance(e.type, ir.ExternT):
        return True
    if isinstance(e, ir.ListExpr):
        return all(_compile_time(x) for x in e.elems)
    if isinstance(e, ir.StructInit):
        return all(_compile_time(x) for _, x in e.fields)
    return False


def _has_varbit(t: ir.Type) -> bool:
    if isinstance(t, ir.VarBitT):
        return True
    if isinstance(t, (ir.HeaderT, ir.StructT, ir.HeaderUnionT)):
        return any(_has_varbit(f.type) for f in t.fields)
    return isinstance(t, ir.StackT) and _has_varbit(t.elem)
