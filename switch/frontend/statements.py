"""Statements: assignments, calls, if, switch, blocks, local declarations, exit/return.

Why: statement rules are where l-value checks (no writes to constants, ``in`` params,
literals), bool conditions (``bit<1>`` is not ``bool``), and ``switch`` on
``t.apply().action_run`` labels are enforced.
"""

from __future__ import annotations

from . import ir
from .annotations import Annotator
from .calls import Calls
from .context import BuildContext
from .expressions import Exprs, children
from .symbols import ConstSym
from .tree import ParseNode


class Stmts:
    """Builds statements and blocks of statements in the context's current scope; their
    expressions and calls are typed by the expression and call parts."""

    def __init__(self, cx: BuildContext, exprs: Exprs, calls: Calls, annotator: Annotator) -> None:
        self.cx = cx
        self.exprs = exprs
        self.calls = calls
        self.annotator = annotator
        self.loop_depth = 0
        """How many for loops enclose the statement being built (break/continue need one)."""

    def block(self, t: ParseNode) -> ir.Block:
        outer = self.cx.scope
        self.cx.scope = outer.child()
        try:
            stmts = tuple(self.stmt(s) for s in children(t) if s.data != "annos")
        finally:
            self.cx.scope = outer
        return ir.Block(stmts, self.cx.loc(t))

    def as_block(self, t: ParseNode) -> ir.Block:
        if t.data == "block":
            return self.block(t)
        outer = self.cx.scope
        self.cx.scope = outer.child()
        try:
            s = self.stmt(t)
        finally:
            self.cx.scope = outer
        return ir.Block((s,), s.loc)

    def stmt(self, t: ParseNode) -> ir.Stmt:
        d = t.data
        loc = self.cx.loc(t)
        if d == "assign":
            return self.assign(t, loc)
        if d == "op_assign":
            return self.op_assign(t, loc)
        if d == "call_stmt":
            ch = t.children
            if len(ch) == 2:
                call = self.calls.call(ch[0], (), ch[1], loc)
            else:
                targs = tuple(self.exprs.resolve_type(a) for a in children(ch[1]))
                call = self.calls.call(ch[0], targs, ch[2], loc)
            return ir.CallStmt(call, loc)
        if d == "if_stmt":
            c = self.exprs.expr(t.children[0])
            if not isinstance(c.type, ir.BoolT):
                raise self.cx.err(c.loc, f"if condition must be bool, not {c.type}"
                               + (" (compare with == 1)" if isinstance(c.type, ir.BitT) else ""))
            then = self.as_block(t.children[1])
            els = self.as_block(t.children[2]) if t.children[2] is not None else None
            return ir.If(c, then, els, loc)
        if d == "block":
            return self.block(t)
        if d == "switch_stmt":
            return self.switch(t, loc)
        if d == "var_decl":
            return self.var_decl(t)
        if d == "const_decl":
            self.const_decl(t)
            return ir.EmptyStmt(loc)
        if d in ("for_stmt", "for_in_stmt"):
            return self.for_stmt(t, loc)
        if d in ("break_stmt", "continue_stmt"):
            if not self.loop_depth:
                raise self.cx.err(loc, f"'{d[:-5]}' outside a for loop")
            return ir.Break(loc) if d == "break_stmt" else ir.Continue(loc)
        if d == "exit_stmt":
            return ir.Exit(loc)
        if d == "return_stmt":
            return self.return_stmt(t, loc)
        if d == "empty_stmt":
            return ir.EmptyStmt(loc)
        raise self.cx.err(loc, f"unsupported statement '{d}'")

    def for_stmt(self, t: ParseNode, loc: ir.Loc) -> ir.Stmt:
        """``for`` loops (P4_16 1.2.5); the loop's own scope holds its init variables."""
        outer = self.cx.scope
        self.cx.scope = outer.child()
        try:
            if t.data == "for_in_stmt":
                type_t, name_t, lo_t, hi_t, body_t = t.children
                ty = self.exprs.resolve_type(type_t)
                if not isinstance(ty, ir.BitT):
                    raise self.cx.err(self.cx.loc(type_t), f"the variable of a range loop must be bit<W> or int<W>, "
                                   f"not {ty}")
                name = self.cx.name_of(name_t)
                lo = self.exprs.coerce(self.exprs.expr(lo_t), ty, "range start")
                hi = self.exprs.coerce(self.exprs.expr(hi_t), ty, "range end")
                decl = ir.VarDecl(name, ty, self.cx.new_uid(), self.cx.loc(name_t))
                self.cx.declare(name, decl, decl.loc)
                return ir.ForIn(decl, lo, hi, self._loop_body(body_t), loc)
            init_t, cond_t, upd_t, body_t = t.children
            init = tuple(self._for_item(i, True) for i in (children(init_t) if init_t is not None else ()))
            cond = None
            if cond_t is not None:
                cond = self.exprs.expr(cond_t)
                if not isinstance(cond.type, ir.BoolT):
                    raise self.cx.err(cond.loc, f"for loop condition must be bool, not {cond.type}")
            upd = tuple(self._for_item(i, False) for i in (children(upd_t) if upd_t is not None else ()))
            return ir.For(init, cond, upd, self._loop_body(body_t), loc)
        finally:
            self.cx.scope = outer

    def _loop_body(self, t: ParseNode) -> ir.Block:
        self.loop_depth += 1
        try:
            return self.as_block(t)
        finally:
            self.loop_depth -= 1

    def _for_item(self, t: ParseNode, init: bool) -> ir.Stmt:
        """An item of a for loop's init or update list, as the statement it stands for."""
        ch = t.children
        if t.data == "for_var":
            if not init:
                raise self.cx.err(self.cx.loc(t), "a variable declaration is only allowed in a for loop's initializer")
            return self.stmt(ParseNode.at("var_decl", [None, *ch], t))
        kind = {"for_assign": "assign", "for_op_assign": "op_assign", "for_call": "call_stmt"}[t.data]
        return self.stmt(ParseNode.at(kind, list(ch), t))

    def return_stmt(self, t: ParseNode, loc: ir.Loc) -> ir.Stmt:
        if self.cx.block_kind == "parser":
            raise self.cx.err(loc, "return is not allowed in a parser state")
        val = t.children[0]
        rt = self.cx.return_type
        if val is None:
            if rt is not None and not isinstance(rt, ir.VoidT):
                raise self.cx.err(loc, f"function must return a value of type {rt}")
            return ir.Return(None, loc)
        if rt is None or isinstance(rt, ir.VoidT):
            raise self.cx.err(loc, "return with a value is only allowed in a non-void function")
        return ir.Return(self.exprs.coerce(self.exprs.expr(val), rt, "return value"), loc)

    def assign(self, t: ParseNode, loc: ir.Loc) -> ir.Stmt:
        lhs_t, rhs_t = t.children
        if isinstance(lhs_t, ParseNode) and lhs_t.data == "name_ref":
            sym = self.cx.scope.lookup(self.cx.name_of(lhs_t.children[0]))
            if isinstance(sym, ConstSym):
                raise self.cx.err(self.cx.loc(lhs_t), f"cannot assign to constant '{sym.name}'")
        if isinstance(lhs_t, ParseNode) and lhs_t.data in ("int_lit", "true_lit", "false_lit"):
            raise self.cx.err(self.cx.loc(lhs_t), "cannot assign to a literal")
        lhs = self.exprs.expr(lhs_t)
        self.exprs.check_lvalue(lhs, "assign to")
        rhs = self.exprs.coerce(self.exprs.expr(rhs_t), lhs.type, "assignment")
        return ir.Assign(lhs, rhs, loc)

    def op_assign(self, t: ParseNode, loc: ir.Loc) -> ir.Stmt:
        """``a op= b`` (P4_16 1.2.4) is ``a = a op b`` with ``a`` evaluated once."""
        lhs_t, op_t, rhs_t = t.children
        lhs = self.exprs.expr(lhs_t)
        self.exprs.check_lvalue(lhs, "assign to")
        if isinstance(lhs.type, ir.BoolT):
            raise self.cx.err(loc, f"compound assignment '{op_t}' needs a bit<W> or int<W> target, not bool")
        value = self.exprs.binary(str(op_t)[:-1], lhs, self.exprs.expr(rhs_t), loc)
        return ir.Assign(lhs, self.exprs.coerce(value, lhs.type, "assignment"), loc)

    def var_decl(self, t: ParseNode) -> ir.VarDeclStmt:
        annos_t, type_t, name_t, init_t = t.children
        ty = self.exprs.resolve_type(type_t)
        name = self.cx.name_of(name_t)
        loc = self.cx.loc(name_t)
        init = None
        if init_t is not None:
            init = self.exprs.coerce(self.exprs.expr(init_t), ty, f"initializer of '{name}'")
        decl = ir.VarDecl(name, ty, self.cx.new_uid(), loc, self.annotator.annotations(annos_t),
                          type_name=self.exprs.newtype_name(type_t))
        self.cx.declare(name, decl, loc)
        return ir.VarDeclStmt(decl, init, self.cx.loc(t))

    def const_decl(self, t: ParseNode) -> ConstSym:
        annos_t, type_t, name_t, val_t = t.children
        self.annotator.annotations(annos_t)  # checked, as p4c checks them; a constant keeps none
        ty = self.exprs.resolve_type(type_t)
        name = self.cx.name_of(name_t)
        loc = self.cx.loc(name_t)
        v = self.exprs.coerce(self.exprs.expr(val_t), ty, f"constant '{name}'")
        if not isinstance(v, (ir.Const, ir.EnumMember, ir.ErrorMember, ir.StringLit)):
            raise self.cx.err(v.loc, f"initializer of constant '{name}' is not a compile-time "
                           "constant")
        sym = ConstSym(name, v, loc)
        self.cx.declare(name, sym, loc)
        return sym

    def switch(self, t: ParseNode, loc: ir.Loc) -> ir.Stmt:
        if self.cx.block_kind == "action":
            raise self.cx.err(loc, "switch statements are not allowed in actions (p4c's v1model targets do not "
                           "support them); use if/else")
        e = self.exprs.expr(t.children[0])
        table: ir.Table | None = None
        if isinstance(e, ir.Member) and isinstance(e.type, ir.ActionEnumT):
            assert isinstance(e.base, ir.TableApply)
            table = e.base.table
        elif not isinstance(e.type, (ir.BitT, ir.EnumT, ir.ErrorT)):
            raise self.cx.err(e.loc, f"cannot switch on a value of type {e.type}")
        cases: list[ir.SwitchCase] = []
        seen_default = False
        seen_labels: set[tuple[str, object]] = set()
        for c in children(t)[1:]:
            label_t, body_t = c.children
            lloc = self.cx.loc(label_t)
            if seen_default:
                raise self.cx.err(lloc, "'default' must be the last switch label")
            label: ir.Expr
            if label_t.data == "default_key":
                label = ir.DefaultKey(ir.DontCareT(), lloc, True)
                seen_default = True
            elif table is not None:
                if label_t.data != "name_ref":
                    raise self.cx.err(lloc, "labels of a switch on action_run must be action names")
                an = self.cx.name_of(label_t.children[0])
                names = [r.action.name for r in table.actions]
                ref = next((r for r in table.actions if r.action.name == an), None)
                if ref is None:
                    from .symbols import did_you_mean
                    raise self.cx.err(lloc, f"'{an}' is not an action of table '{table.name}'."
                                   + did_you_mean(an, names))
                label = ir.ActionLabel(ref.action, ir.VoidT(), lloc)
            else:
                label = self.exprs.coerce(self.exprs.expr(label_t), e.type, "switch label")
                if not isinstance(label, (ir.Const, ir.EnumMember, ir.ErrorMember)):
                    raise self.cx.err(lloc, "switch label must be a compile-time constant")
            key = _label_key(label)
            if key in seen_labels:
                raise self.cx.err(lloc, f"duplicate case label '{key[1]}' in this switch")
            seen_labels.add(key)
            body = self.block(body_t) if body_t is not None else None
            cases.append(ir.SwitchCase((label,), body, lloc))
        # merge fall-through labels into the case that has the body
        merged: list[ir.SwitchCase] = []
        pending: list[ir.Expr] = []
        for sc in cases:
            pending.extend(sc.labels)
            if sc.body is not None:
                merged.append(ir.SwitchCase(tuple(pending), sc.body, sc.loc))
                pending = []
        if pending:
            merged.append(ir.SwitchCase(tuple(pending), None, cases[-1].loc))
        return ir.Switch(e, tuple(merged), loc)


def _label_key(label: ir.Expr) -> tuple[str, object]:
    """What a switch label matches, to find a label given twice."""
    if isinstance(label, ir.ActionLabel):
        return ("action", label.action.name)
    if isinstance(label, ir.EnumMember):
        return ("enum", label.member)
    if isinstance(label, ir.ErrorMember):
        return ("error", label.name)
    if isinstance(label, ir.Const):
        return ("value", label.value)
    return ("default", None)
