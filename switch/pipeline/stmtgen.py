"""Statement code generation: assignments, control flow, calls, methods, table applies.

The statement part is composed with the expression part (:mod:`.exprgen`) and the extern
part (:mod:`.externgen`) over one :class:`.gencontext.GenContext`; it is also their
``StatementHooks``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable

from ..frontend import ir
from ..lowering.assign import assign_aggregate
from ..lowering.branches import switch_branches
from ..lowering.calls import bind_arguments, call_statement, subparser_bindings
from ..lowering.methods import method_call
from ..lowering.order import visit
from ..lowering.places import Place, runtime_index
from ..lowering.types import bits, is_scalar
from .exprgen import SLOTS, ExprGen, span, wrap_expr
from .externgen import ExternGen
from .gencontext import GenContext
from .layout import default_values, nslots

if TYPE_CHECKING:
    from .context import CompileContext

PACKET_TOO_SHORT = 1
STACK_OUT_OF_BOUNDS = 3


class StmtGen:
    """Generates the body of one Python function from IR statements; owns the context and the
    expression and extern parts, and answers their calls back (``StatementHooks``)."""

    kind = "control"  # control | action | function | parser | deparser
    func: ir.Function | None = None  # the function being generated (kind == "function")

    def __init__(self, prog: CompileContext, locals_: dict[int, str] | None = None) -> None:
        self.ctx = GenContext(prog, locals_)
        self.exprs = ExprGen(self.ctx, self)
        self.externs = ExternGen(self.ctx, self.exprs, self)
        self.unsupported = self.ctx.unsupported

    # ------------------------------------------------------------------ the other parts
    # Callers and the lowering helpers handed this generator (``MethodEmitter``,
    # ``AggregateEmitter``, ``StatementHooks``) reach the other parts through these.
    def emit(self, line: str) -> None:
        self.ctx.emit(line)

    def expr(self, e: ir.Expr) -> str:
        return self.exprs.expr(e)

    def simple(self, x: str) -> str:
        return self.exprs.simple(x)

    def place(self, e: ir.Expr) -> Place:
        return self.exprs.place(e)

    def extern_call(self, e: ir.ExternCall) -> str | None:
        return self.externs.extern_call(e)

    def lookahead_place(self, e: ir.MethodCall) -> Place:
        return self.externs.lookahead_place(e)

    def extern_method(self, inst: ir.Instance, e: ir.MethodCall) -> str | None:
        return self.externs.extern_method(inst, e)

    def packet_in_method(self, e: ir.MethodCall) -> str | None:
        return self.externs.packet_in_method(e)

    def emit_varbit_header(self, p: Place, t: ir.HeaderT, at: Any) -> None:
        self.externs.emit_varbit_header(p, t, at)

    def emit_header(self, p: Place, t: ir.HeaderT, at: Any) -> None:
        self.externs.emit_header(p, t, at)

    def extract_into(self, p: Place, ht: ir.HeaderT, advance: bool, node: Any = None) -> None:
        self.externs.extract_into(p, ht, advance, node)

    # ------------------------------------------------------------------ statements
    def block(self, b: ir.Block | None) -> None:
        n = len(self.ctx.lines)
        if b is not None:
            for s in b.stmts:
                self.stmt(s)
        if len(self.ctx.lines) == n:
            self.ctx.emit("pass")

    def stmt(self, s: Any) -> None:
        visit(self, "s_", s, "statement", self.unsupported)

    def s_Block(self, s: ir.Block) -> None:
        for x in s.stmts:
            self.stmt(x)

    def s_EmptyStmt(self, s: ir.EmptyStmt) -> None:
        pass

    def s_Exit(self, s: ir.Exit) -> None:
        if self.kind == "function":
            raise self.unsupported("exit inside a function", s)
        self.ctx.emit("raise _Exit()")

    def s_Return(self, s: ir.Return) -> None:
        if s.value is not None:
            if not is_scalar(s.value.type):
                # struct/header results travel through the function's return slots
                if self.func is None:
                    raise self.unsupported("return of an aggregate value outside a function", s)
                ret = Place(self.ctx.prog.function_ret(self.func), self.func.return_type)
                self.assign_agg(ret, s.value)
                self.ctx.emit("return")
                return
            self.ctx.emit(f"return {self.exprs.expr(s.value)}")
        else:
            self.ctx.emit("return")

    def s_If(self, s: ir.If) -> None:
        c = self.exprs.expr(s.cond)
        self.ctx.emit(f"if {c}:")
        self.ctx.ind += 1
        self.block(s.then)
        self.ctx.ind -= 1
        if s.else_ is not None and s.else_.stmts:
            self.ctx.emit("else:")
            self.ctx.ind += 1
            self.block(s.else_)
            self.ctx.ind -= 1

    def s_For(self, s: ir.For) -> None:
        """``while True`` with a first-iteration flag, so that ``continue`` (a Python
        continue) still runs the update before the next condition test."""
        for x in s.init:
            self.stmt(x)
        first = self.ctx.tmp()
        self.ctx.emit(f"{first} = True")
        self.ctx.emit("while True:")
        self.ctx.ind += 1
        if s.update:
            self.ctx.emit(f"if not {first}:")
            self.ctx.ind += 1
            for x in s.update:
                self.stmt(x)
            self.ctx.ind -= 1
        self.ctx.emit(f"{first} = False")
        if s.cond is not None:
            self.ctx.emit(f"if not {self.exprs.expr(s.cond)}: break")
        self.block(s.body)
        self.ctx.ind -= 1

    def s_ForIn(self, s: ir.ForIn) -> None:
        d = s.var
        lo = self.exprs.simple(self.exprs.expr(s.lo))
        hi = self.exprs.simple(self.exprs.expr(s.hi))
        name = f"v{d.uid}"
        self.ctx.locals[d.uid] = name
        self.ctx.emit(f"for {name} in range({lo}, {hi} + 1):")
        self.ctx.ind += 1
        self.block(s.body)
        self.ctx.ind -= 1

    def s_Break(self, s: ir.Break) -> None:
        self.ctx.emit("break")

    def s_Continue(self, s: ir.Continue) -> None:
        self.ctx.emit("continue")

    def s_Switch(self, s: ir.Switch) -> None:
        branches = switch_branches(s, self.unsupported)
        v = self.exprs.simple(self.exprs.expr(s.expr))
        first = True
        for br in branches:
            conds = [f"{v} == {lab if isinstance(lab, int) else self.exprs.expr(lab)}" for lab in br.labels]
            if br.default:
                self.ctx.emit("else:" if not first else "if True:")
            else:
                self.ctx.emit(f"{'if' if first else 'elif'} {' or '.join(conds)}:")
            first = False
            self.ctx.ind += 1
            self.block(br.body)
            self.ctx.ind -= 1

    def s_VarDeclStmt(self, s: ir.VarDeclStmt, shared: bool = False) -> None:
        """A local variable. Scalars that only this function sees become Python locals;
        ``shared`` ones (control locals visible to actions) live in slots."""
        d = s.decl
        if not shared and is_scalar(d.type):
            name = f"v{d.uid}"
            self.ctx.locals[d.uid] = name
            if s.init is not None:
                self.ctx.emit(f"{name} = {self.exprs.expr(s.init)}")
                if self.ctx.written is not None and d.uid not in self.ctx.written and s.init.type == d.type:
                    r = self.exprs.vrange(s.init)
                    if r is not None:
                        self.ctx.ranges[d.uid] = r
            else:
                self.ctx.emit(f"{name} = {'False' if isinstance(d.type, ir.BoolT) else '0'}")
            return
        if s.init is not None:
            self.assign(ir.VarRef(d, d.type, s.loc), s.init)
            return
        p = Place(self.ctx.prog.layout.var(d.uid, d.type, d.name), d.type)
        self.reset(p)

    def reset(self, p: Place) -> None:
        vals = default_values(p.type)
        if len(vals) == 1:
            self.ctx.emit(f"S[{p.at()}] = {vals[0]!r}")
        else:
            self.ctx.emit(f"S[{span(p)}] = {self.ctx.prog.ref(tuple(vals), 'DEF')}")

    def s_CallStmt(self, s: ir.CallStmt) -> None:
        call_statement(s, self)

    # ------------------------------------------------------------------ assignment
    def s_Assign(self, s: ir.Assign) -> None:
        self.assign(s.lhs, s.rhs)

    def assign(self, lhs: ir.Expr, rhs: ir.Expr) -> None:
        if is_scalar(lhs.type) and isinstance(lhs, (ir.Member, ir.StackElem)) and runtime_index(lhs):
            # P4_16: the left side is evaluated first, so a call on the right side that
            # writes the index does not move the target; the index is read into a temp
            p = self.exprs.place(lhs)
            if isinstance(p.base, str) and not p.base.isidentifier():
                b = self.ctx.tmp()
                self.ctx.emit(f"{b} = {p.base}")
                p = Place(b, p.type)
            # 'a op= b' reads the same l-value node: it must not evaluate the index again
            self.ctx.place_memo = (lhs, p)
            try:
                value = self.exprs.expr(rhs)
            finally:
                self.ctx.place_memo = None
            self.ctx.emit(f"S[{p.at()}] = {value}")
            return
        if is_scalar(lhs.type):
            self.store(lhs, self.exprs.expr(rhs))
        else:
            self.assign_agg(self.exprs.place(lhs), rhs)

    def store(self, lhs: ir.Expr, value: str) -> None:
        """Assign the Python expression ``value`` to the scalar l-value ``lhs``."""
        while isinstance(lhs, ir.Slice) and isinstance(lhs.base, ir.Slice):
            # a[h1:l1][h2:l2] is a[l1+h2 : l1+l2]: fold nested slices into one of the base
            inner = lhs.base
            lhs = ir.Slice(inner.base, inner.lo + lhs.hi, inner.lo + lhs.lo, lhs.type, lhs.loc)
        if isinstance(lhs, ir.Slice):
            base = lhs.base
            w, s = bits(base.type)
            m = ((1 << (lhs.hi - lhs.lo + 1)) - 1) << lhs.lo
            if isinstance(base, ir.VarRef) and base.decl.uid in self.ctx.locals:
                tgt = self.ctx.locals[base.decl.uid]  # a local kept in a Python variable
            else:
                tgt = f"S[{self.exprs.place(base).at()}]"
            x = f"({tgt} & {((1 << w) - 1) ^ m}) | (({value}) << {lhs.lo} & {m})"
            self.ctx.emit(f"{tgt} = {wrap_expr(x, w, True) if s else x}")
            return
        if isinstance(lhs, ir.VarRef) and lhs.decl.uid in self.ctx.locals:
            self.ctx.emit(f"{self.ctx.locals[lhs.decl.uid]} = {value}")
            return
        self.ctx.emit(f"S[{self.exprs.place(lhs).at()}] = {value}")

    def assign_agg(self, dst: Place, rhs: ir.Expr) -> None:
        assign_aggregate(dst, rhs, self, SLOTS)

    def set_valid(self, dst: Place) -> None:
        self.ctx.emit(f"S[{dst.at()}] = True")

    def if_else(self, cond: ir.Expr, then: Callable[[], None], else_: Callable[[], None]) -> None:
        self.ctx.emit(f"if {self.exprs.expr(cond)}:")
        self.ctx.ind += 1
        then()
        self.ctx.ind -= 1
        self.ctx.emit("else:")
        self.ctx.ind += 1
        else_()
        self.ctx.ind -= 1

    def function_ret_place(self, f: ir.Function) -> Place:
        return Place(self.ctx.prog.function_ret(f), f.return_type)

    def copy_slots(self, dst: Place, src: Place, n: int) -> None:
        if n == 1:
            self.ctx.emit(f"S[{dst.at()}] = S[{src.at()}]")
        else:
            self.ctx.emit(f"S[{span(dst)}] = S[{span(src)}]")

    def invalidate_siblings_when_valid(self, dst: Place) -> None:
        self.ctx.emit(f"if S[{dst.at()}]:")
        self.ctx.ind += 1
        for sb in dst.union_siblings:
            self.ctx.emit(f"S[{sb}] = False")
        self.ctx.ind -= 1

    # ------------------------------------------------------------------ methods
    def method_call(self, e: ir.MethodCall) -> str | None:
        return method_call(e, self, SLOTS)

    def instance_apply(self, inst: ir.Instance, e: ir.MethodCall) -> str | None:
        if e.method != "apply":
            raise self.unsupported(f"method {e.method} of {inst.name}", e)
        return self.sub_apply(inst, e)

    def set_invalid(self, slot: str) -> None:
        self.ctx.emit(f"S[{slot}] = False")

    def number(self, value: int) -> str:
        return str(value)

    def any_valid(self, slots: list[str]) -> str:
        return "(" + " or ".join(f"S[{s}]" for s in slots) + ")"

    def stack_shift(self, p: Place, st: ir.StackT, m: str, e: ir.MethodCall) -> None:
        arg = e.args[0].expr
        if not isinstance(arg, ir.Const):
            raise self.unsupported(f"{m} with a non-constant count", e)
        n = int(arg.value)
        size = st.size
        esz = nslots(st.elem)
        b = p.at(1)
        nb = p.at()
        if not isinstance(p.base, int):
            raise self.unsupported(f"{m} on a stack at a runtime index", e)
        first = p.base + 1
        if n >= size:
            for i in range(size):
                self.reset(p.sub(1 + i * esz, st.elem))
        elif m == "push_front":
            self.ctx.emit(f"S[{first + n * esz}:{first + size * esz}] = S[{first}:{first + (size - n) * esz}]")
            for i in range(n):
                self.reset(p.sub(1 + i * esz, st.elem))
        else:
            self.ctx.emit(f"S[{first}:{first + (size - n) * esz}] = S[{first + n * esz}:{first + size * esz}]")
            for i in range(size - n, size):
                self.reset(p.sub(1 + i * esz, st.elem))
        del b
        if m == "push_front":
            self.ctx.emit(f"S[{nb}] = min({size}, S[{nb}] + {n})")
        else:
            self.ctx.emit(f"S[{nb}] = max(0, S[{nb}] - {n})")

    # ------------------------------------------------------------------ calls
    def bind_args(self, params: tuple[ir.Param, ...], args: tuple[ir.Arg, ...], node: Any) -> tuple[list[str], list[tuple[ir.Expr, Place]]]:
        """Copy-in of directional args into the callee's parameter slots.

        Returns the directionless (data) argument expressions and the copy-out list."""
        return bind_arguments(params, args, node, self)

    def data_argument(self, e: ir.Expr, p: ir.Param) -> list[str]:
        return [self.exprs.expr(e)]

    def param_place(self, p: ir.Param) -> Place:
        return Place(self.ctx.prog.layout.var(p.uid, p.type, p.name), p.type)

    def copy_in(self, dst: Place, e: ir.Expr) -> None:
        self.ctx.emit(f"S[{dst.at()}] = {self.exprs.expr(e)}")

    def copy_out(self, outs: list[tuple[ir.Expr, Place]]) -> None:
        for expr, pp in outs:
            if is_scalar(pp.type):
                self.store(expr, f"S[{pp.at()}]")
            else:
                dst = self.exprs.place(expr)
                self.ctx.emit(f"S[{span(dst)}] = S[{span(pp)}]")

    def call_with_copy_out(self, call: str, outs: list[tuple[ir.Expr, Place]]) -> None:
        """``call`` then the copy-out. An ``exit`` inside the callee still copies the out and
        inout arguments back (P4_16 12.5: exit runs the copy-out of every active call)."""
        if not outs:
            self.ctx.emit(call)
            return
        self.ctx.emit("try:")
        self.ctx.emit(f"    {call}")
        self.ctx.emit("except _Exit:")
        self.ctx.ind += 1
        self.copy_out(outs)
        self.ctx.emit("raise")
        self.ctx.ind -= 1
        self.copy_out(outs)

    def action_call(self, e: ir.ActionCall) -> None:
        fn = self.ctx.prog.action_fn(e.action)
        data, outs = self.bind_args(e.action.params, e.args, e)
        self.call_with_copy_out(f"{fn}(S{''.join(', ' + d for d in data)})", outs)

    def function_call(self, e: ir.FunctionCall) -> str | None:
        fn = self.ctx.prog.function_fn(e.func)
        # a directionless function parameter behaves as 'in' (P4_16 6.8): copy it in too
        params = tuple(p if p.direction is not None else dataclasses.replace(p, direction="in")
                       for p in e.func.params)
        data, outs = self.bind_args(params, e.args, e)
        if isinstance(e.func.return_type, ir.VoidT):
            self.ctx.emit(f"{fn}(S)")
            self.copy_out(outs)
            return None
        t = self.ctx.tmp()
        self.ctx.emit(f"{t} = {fn}(S)")
        self.copy_out(outs)
        return t

    def sub_apply(self, inst: ir.Instance, e: ir.MethodCall) -> str | None:
        decl = inst.decl
        if isinstance(decl, ir.Parser):
            self.subparser_apply(decl, e)
            return None
        if not isinstance(decl, ir.Control):
            raise self.unsupported(f"apply of {inst.name}", e)
        fn = self.ctx.prog.control_fn(decl)
        _, outs = self.bind_args(decl.params, e.args, e)
        self.call_with_copy_out(f"{fn}(S)", outs)
        return None

    def subparser_apply(self, decl: ir.Parser, e: ir.MethodCall) -> None:
        if not self.ctx.in_parser:
            raise self.unsupported("a parser applied outside a parser", e)
        bindings, copied = subparser_bindings(decl, e, self)
        fn = self.ctx.prog.parsers.subparser_fn(decl, bindings)
        self.ctx.emit(f"pos = {fn}(S, data, pos, L)")
        for p, a in copied:
            assert isinstance(a, ir.VarRef)
            self.ctx.emit(f"{self.ctx.locals[a.decl.uid]} = S[{self.ctx.prog.layout.var(p.uid, p.type, p.name)}]")

    def copy_in_param(self, prm: ir.Param, a: ir.Expr) -> None:
        pp = self.ctx.prog.layout.var(prm.uid, prm.type, prm.name)
        self.ctx.emit(f"S[{pp}] = {self.exprs.expr(a)}")

    def copy_unaliased(self, prm: ir.Param, a: ir.Expr) -> bool:
        """A parser local kept in a Python variable: copied in and out through the
        parameter's own slot (the sub-parser's function cannot see the local)."""
        if not (isinstance(a, ir.VarRef) and a.decl.uid in self.ctx.locals):
            return False
        pp = self.ctx.prog.layout.var(prm.uid, prm.type, prm.name)
        init = self.ctx.locals[a.decl.uid] if prm.direction == "inout" else repr(default_values(prm.type)[0])
        self.ctx.emit(f"S[{pp}] = {init}")
        return True

    def table_apply(self, e: ir.TableApply) -> str:
        t = e.table
        info = self.ctx.prog.objects.table_info(t)
        keys: list[str] = []
        sels: list[str] = []
        for k in t.keys:
            x = self.exprs.expr(k.expr)
            kt = k.expr.type
            if isinstance(kt, ir.BitT) and kt.signed:
                x = f"({x} & {(1 << kt.width) - 1})"
            elif isinstance(kt, ir.BoolT):
                x = f"int({x})"
            (sels if k.match_kind == "selector" else keys).append(x)
        if len(keys) == 1:
            kx = keys[0]
        else:
            kx = "(" + "".join(k + ", " for k in keys) + ")"
        r = self.ctx.tmp()
        kv = self.exprs.simple(kx) if len(keys) <= 1 else self.simple_tuple(kx)
        self.ctx.emit(f"{r} = {info.cache}.get({kv})")
        self.ctx.emit(f"if {r} is None: {r} = {info.lookup}({kv})")
        if sels:  # a group entry: pick the member from the selector keys' hash
            self.ctx.emit(f"if {r}[0] is None: {r} = {r}[1](({''.join(x + ', ' for x in sels)}))")
        if t.direct_counter is not None:
            self.ctx.emit(f"if {r}[3]:")
            self.ctx.emit(f"    {r}[4].packets += 1; {r}[4].bytes += S[{self.ctx.prog.sm_slot('packet_length')}]")
        if t.idle_timeout:  # ageing: the hit entry's last-hit time (one clock read per pass)
            self.ctx.emit(f"if {r}[3]: {r}[4].last_hit = S[{self.ctx.prog.now_slot()}] or _stamp(S)")
        if t.direct_meter is not None:
            self.ctx.emit(f"S[{self.ctx.prog.slot_entry}] = {r}[4]")
        self.ctx.emit(f"{r}[0](S, *{r}[1])")
        return r

    def simple_tuple(self, kx: str) -> str:
        t = self.ctx.tmp()
        self.ctx.emit(f"{t} = {kx}")
        return t
