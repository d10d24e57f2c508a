"""Parsers, controls, actions and tables, specialised per instance.

Why specialise: p4c gives every entity inside an instantiated sub-control the name
``<outer>.<instance>.<local>`` and its own state.  Building a fresh ``ir.Control`` /
``ir.Parser`` per instance (fresh uids, own tables and extern instances) gives the
executor independent state and gives P4Info final control-plane names.
"""

from __future__ import annotations

from typing import Any

from . import ir
from .annotations import Annotator
from .calls import Calls
from .context import BuildContext
from .expressions import Exprs, children
from .keysets import Keysets
from .lexer import Tok
from .statements import Stmts
from .tables import Tables
from .symbols import BlockDecl, BlockTypeDecl, ConstSym, did_you_mean
from .tree import ParseNode


class Blocks:
    """Builds parsers, controls, actions and instances, specialising a block declaration
    per instance; the statements, expressions, keysets and tables in them are built by
    the parts this one is given (its table part is its own: a table property may
    instantiate an extern, which is this part's job)."""

    def __init__(self, cx: BuildContext, exprs: Exprs, calls: Calls, stmts: Stmts, keys: Keysets,
                 annotator: Annotator) -> None:
        self.cx = cx
        self.exprs = exprs
        self.calls = calls
        self.stmts = stmts
        self.keys = keys
        self.annotator = annotator
        self.tables = Tables(cx, exprs, calls, keys, annotator, self)
        self.direct: list[ir.Instance] | None = None
        """Instances the direct invocations (``T.apply()``) in the body being built create."""
        self.specialising: tuple[str, ...] = ()
        """Names of the blocks being specialised, outermost first (a block that instantiates
        itself, directly or through others, is an error, as in p4c)."""

    # ------------------------------------------------------------------ names
    def params(self, t: ParseNode | None, fresh: bool = True) -> tuple[ir.Param, ...]:
        out: list[ir.Param] = []
        if t is None:
            return ()
        seen: set[str] = set()
        for p in children(t):
            annos_t, dir_t, type_t, name_t, default_t = p.children
            name = self.cx.name_of(name_t)
            if name in seen:
                raise self.cx.err(self.cx.loc(name_t), f"duplicate parameter '{name}'")
            seen.add(name)
            direction = str(dir_t.children[0]) if dir_t is not None else None
            ty = self.exprs.resolve_type(type_t)
            annos = self.annotator.annotations(annos_t)
            default = self.exprs.expr(default_t) if default_t is not None else None
            self._check_param(name, direction, ty, annos, default, self.cx.loc(name_t), type_t)
            out.append(ir.Param(name, direction, ty, self.cx.new_uid(), self.cx.loc(name_t), annos, default,
                                self.exprs.newtype_name(type_t)))
        return tuple(out)

    def _check_param(self, name: str, direction: str | None, ty: ir.Type, annos: ir.Annotations,
                     default: ir.Expr | None, loc: ir.Loc, type_t: ParseNode) -> None:
        """p4c's rules for one parameter, whatever declares it."""
        if default is not None:
            if direction in ("out", "inout"):
                raise self.cx.err(loc, f"parameter '{name}': {direction} parameters cannot have default values")
            if "optional" in annos:
                raise self.cx.err(loc, f"parameter '{name}': optional parameters cannot have default values")
            if not isinstance(default, (ir.Const, ir.StringLit, ir.EnumMember, ir.ErrorMember)):
                raise self.cx.err(default.loc, f"default value of parameter '{name}' must be a compile-time "
                               "constant")
        if isinstance(ty, ir.ExternT) and not ty.type_args and ty.name in self.cx.externs \
                and self.cx.externs[ty.name].type_params:
            raise self.cx.err(loc, f"parameter '{name}': type parameters needed for extern {ty.name}")
        if direction is not None and isinstance(ty, ir.ExternT):
            raise self.cx.err(loc, f"parameter '{name}': a parameter of extern type {ty.name} cannot have a "
                           "direction")
        while type_t.data == "type_ref" and isinstance(type_t.children[0], ParseNode):
            type_t = type_t.children[0]
        sym = self.cx.scope.lookup_type(self.cx.name_of(type_t.children[0])) if type_t.data == "named_type" else None
        if isinstance(sym, BlockDecl):
            raise self.cx.err(loc, f"parameter '{name}' cannot have type {sym.kind} {sym.name}: a "
                           f"{sym.kind} declaration is not a type (declare a {sym.kind} type for it)")

    def _fresh(self, ps: tuple[ir.Param, ...]) -> tuple[ir.Param, ...]:
        return tuple(ir.Param(p.name, p.direction, p.type, self.cx.new_uid(), p.loc,
                              p.annotations, p.default, p.type_name) for p in ps)

    # ------------------------------------------------------------------ specialisation
    def specialise(self, decl: BlockDecl, ctor_args: tuple[ir.Expr, ...], path: str,
                   loc: ir.Loc) -> ir.Parser | ir.Control:
        if len(ctor_args) != len(decl.ctor_params):
            raise self.cx.err(loc, f"wrong number of constructor arguments for {decl.kind} "
                           f"{decl.name}: expected {len(decl.ctor_params)}, got {len(ctor_args)}")
        if decl.name in self.specialising:
            chain = " -> ".join(self.specialising[self.specialising.index(decl.name):] + (decl.name,))
            raise self.cx.err(loc, f"{decl.kind} {decl.name} instantiates itself ({chain}); a parser or "
                           "control cannot contain an instance of itself")
        saved = (self.cx.scope, self.cx.path, self.cx.block_kind, self.cx.return_type)
        outer, self.specialising = self.specialising, self.specialising + (decl.name,)
        self.cx.scope = self.cx.global_scope.child()
        self.cx.path = path
        self.cx.block_kind = decl.kind
        self.cx.return_type = None
        try:
            params = self._fresh(decl.params)
            for p in params:
                self.cx.declare(p.name, p, p.loc)
            for p, a in zip(decl.ctor_params, ctor_args):
                what = f"constructor argument '{p.name}' of {decl.name}"
                v = self.block_arg(a, p.type, what) if isinstance(p.type, (ir.ControlT, ir.ParserT)) \
                    else self.exprs.coerce(a, p.type, what)
                self.cx.declare(p.name, ConstSym(p.name, v, p.loc), p.loc)
            body_items = [c for c in decl.tree.children if isinstance(c, ParseNode)]
            if decl.kind == "control":
                return self._control(decl, params, body_items, path)
            return self._parser(decl, params, body_items, path)
        finally:
            self.cx.scope, self.cx.path, self.cx.block_kind, self.cx.return_type = saved
            self.specialising = outer

    def block_arg(self, a: ir.Expr, t: ir.ControlT | ir.ParserT, what: str) -> ir.Expr:
        """A parser/control instance passed for a constructor parameter of parser/control
        type: the same kind, and apply parameters of the same directions and types as
        the parameter's type declares (p4c's type unification, without generics)."""
        kind = "control" if isinstance(t, ir.ControlT) else "parser"
        if not isinstance(a, ir.InstanceRef) or not isinstance(a.inst.decl, ir.Control if kind == "control"
                                                                 else ir.Parser):
            raise self.cx.err(a.loc, f"{what}: expected a {kind} instance of type {t}, not {a.type}")
        want = self.cx.scope.lookup_type(t.name)
        got = a.inst.decl.params
        if isinstance(want, (BlockTypeDecl, BlockDecl)) and (
                len(want.params) != len(got)
                or any(w.direction != g.direction or w.type != g.type for w, g in zip(want.params, got))):
            sig = ", ".join(f"{p.direction or ''} {p.type}".strip() for p in want.params)
            raise self.cx.err(a.loc, f"{what}: {a.inst.name} ({a.type}) does not match {t}({sig})")
        return a

    def _locals(self, items: list[ParseNode]) -> list[Any]:
        out: list[Any] = []
        for it in items:
            d = it.data
            if d == "const_decl":
                self.stmts.const_decl(it)
            elif d == "var_decl":
                out.append(self.stmts.var_decl(it))
            elif d == "instantiation":
                out.append(self.instantiation(it))
            elif d == "action_decl":
                out.append(self.action(it))
            elif d == "table_decl":
                out.append(self.tables.build(it))
            elif d == "value_set_decl":
                raise self.cx.unsupported(self.cx.loc(it), "value_set")
        return out

    def _control(self, decl: BlockDecl, params: tuple[ir.Param, ...], items: list[ParseNode],
                 path: str) -> ir.Control:
        local_items = [i for i in items if i.data in ("const_decl", "var_decl", "instantiation",
                                                      "action_decl", "table_decl")]
        locs = self._locals(local_items)
        body_t = next(i for i in items if i.data == "block")
        self.cx.block_kind = "control"
        saved, self.direct = self.direct, []
        try:
            body = self.stmts.block(body_t)
            locs += self.direct
        finally:
            self.direct = saved
        return ir.Control(decl.name, params, decl.ctor_params, tuple(locs), body,
                          decl.annotations, decl.loc, path)

    def _parser(self, decl: BlockDecl, params: tuple[ir.Param, ...], items: list[ParseNode],
                path: str) -> ir.Parser:
        local_items = [i for i in items if i.data in ("const_decl", "var_decl", "instantiation",
                                                      "value_set_decl")]
        locs = self._locals(local_items)
        state_ts = [i for i in items if i.data == "parser_state"]
        names: dict[str, ir.Loc] = {}
        for st in state_ts:
            n = self.cx.name_of(st.children[1])
            if n in names or n in ("accept", "reject"):
                raise self.cx.err(self.cx.loc(st.children[1]), f"duplicate parser state '{n}'")
            names[n] = self.cx.loc(st.children[1])
        if "start" not in names:
            raise self.cx.err(decl.loc, f"parser {decl.name} has no 'start' state")
        states: dict[str, ir.ParserState] = {}
        saved, self.direct = self.direct, []
        try:
            for st in state_ts:
                states[self.cx.name_of(st.children[1])] = self._state(st, names)
            locs += self.direct
        finally:
            self.direct = saved
        _check_reaches_an_end(self.cx, decl, states)
        return ir.Parser(decl.name, params, decl.ctor_params, tuple(locs), states,
                         decl.annotations, decl.loc, path)

    def _state(self, st: ParseNode, names: dict[str, ir.Loc]) -> ir.ParserState:
        annos_t, name_t, *rest = st.children
        outer = self.cx.scope
        self.cx.scope = outer.child()
        try:
            body = tuple(self.stmts.stmt(s) for s in rest[:-1])
            tr = self._transition(rest[-1], names)
        finally:
            self.cx.scope = outer
        return ir.ParserState(self.cx.name_of(name_t), body, tr, self.cx.loc(st),
                              self.annotator.annotations(annos_t))

    def _target_state(self, t: ParseNode | Tok, names: dict[str, ir.Loc]) -> str:
        n = self.cx.name_of(t)
        if n not in names and n not in ("accept", "reject"):
            raise self.cx.err(self.cx.loc(t), f"transition to undefined state '{n}'."
                           + did_you_mean(n, list(names) + ["accept", "reject"]))
        return n

    def _transition(self, t: ParseNode, names: dict[str, ir.Loc]) -> ir.Goto | ir.Select:
        loc = self.cx.loc(t)
        if t.data == "goto":
            return ir.Goto(self._target_state(t.children[0], names), loc)
        keys = tuple(self.exprs.expr(k) for k in children(t.children[0]))
        for k in keys:
            if isinstance(k.type, ir.IntT):
                raise self.cx.err(k.loc, "select key needs a width")
        cases: list[ir.SelectCase] = []
        for c in children(t)[1:]:
            ks_t, st_t = c.children
            ks = self.keys.keysets(ks_t, [k.type for k in keys], "select case")
            cases.append(ir.SelectCase(ks, self._target_state(st_t, names), self.cx.loc(c)))
        return ir.Select(keys, tuple(cases), loc)

    # ------------------------------------------------------------------ instances
    def direct_instance(self, decl: BlockDecl, loc: ir.Loc) -> ir.Instance:
        """``T.apply(...)`` in a body: a fresh instance of ``T`` local to the enclosing
        block, named as p4c's InstantiateDirectCalls names it (``@name("T")``: its
        control-plane prefix is ``<block>.T``); every direct call is its own instance."""
        if self.cx.block_kind not in ("control", "parser") or self.direct is None:
            raise self.cx.err(loc, f"{decl.kind} {decl.name} can only be applied directly in a "
                           "control's apply block or a parser state")
        name = f"{decl.name}_inst"
        n = sum(1 for i in self.direct if i.name.startswith(name))
        cp = self.cx.cp_name(decl.name, {})
        blk = self.specialise(decl, (), cp, loc)
        ty: ir.Type = ir.ParserT(decl.name) if decl.kind == "parser" else ir.ControlT(decl.name)
        inst = ir.Instance(name if n == 0 else f"{name}_{n - 1}", cp, ty, blk, (), {}, loc)
        self.direct.append(inst)
        return inst

    def instantiation(self, t: ParseNode) -> ir.Instance:
        annos_t, type_t, args_t, name_t = t.children
        name = self.cx.name_of(name_t)
        annos = self.annotator.annotations(annos_t)
        inst = self.make_instance(type_t, args_t, name, annos, self.cx.loc(name_t),
                                  self.cx.cp_name(name, annos))
        self.cx.declare(name, inst, self.cx.loc(name_t))
        return inst

    def make_instance(self, type_t: ParseNode, args_t: ParseNode | None, name: str,
                      annos: ir.Annotations, loc: ir.Loc, cp_name: str) -> ir.Instance:
        ty = self.exprs.resolve_type(type_t)
        args = self.calls.arg_list(args_t)
        if isinstance(ty, ir.ExternT):
            decl = self.cx.externs[ty.name]
            if len(ty.type_args) != len(decl.type_params):
                raise self.cx.err(loc, f"extern {ty.name} takes {len(decl.type_params)} type "
                               f"arguments, got {len(ty.type_args)}")
            if not decl.ctors:
                raise self.cx.err(loc, f"extern {ty.name} cannot be instantiated")
            sig = self.calls.choose_overload(decl.ctors, len(args), loc, f"constructor of {ty.name}")
            tv = dict(zip(decl.type_params, ty.type_args))
            bound = self.calls.bind(sig.params, args, loc, f"constructor of {ty.name}", tv, ())
            return ir.Instance(name, cp_name, ty, None,
                               tuple(a.expr for a in bound if a.expr is not None), annos, loc)
        if isinstance(ty, (ir.ControlT, ir.ParserT)):
            bdecl = self.cx.scope.lookup_type(ty.name)
            if not isinstance(bdecl, BlockDecl):
                raise self.cx.err(loc, f"{ty.name} is a {ty.__class__.__name__[:-1].lower()} type "
                               "declaration without a body and cannot be instantiated")
            ctor = tuple(self.exprs.expr(a) for _, a in args)
            blk = self.specialise(bdecl, ctor, cp_name, loc)
            return ir.Instance(name, cp_name, ty, blk, ctor, annos, loc)
        raise self.cx.err(loc, f"cannot instantiate a value of type {ty}")

    # ------------------------------------------------------------------ actions
    def action(self, t: ParseNode) -> ir.Action:
        annos_t, name_t, params_t, body_t = t.children
        name = self.cx.name_of(name_t)
        annos = self.annotator.annotations(annos_t)
        loc = self.cx.loc(name_t)
        params = self.params(params_t)
        seen_data = False
        for p in params:
            if isinstance(p.type, ir.IntT):
                raise self.cx.err(p.loc, f"action '{name}': parameter '{p.name}' cannot have type int "
                               "(give it a width: bit<W> or int<W>)")
            if p.direction is None:
                seen_data = True
            elif seen_data:
                raise self.cx.err(p.loc, f"action '{name}': directional parameter '{p.name}' "
                               "must come before the directionless (action data) parameters")
        cp = name if not self.cx.path else self.cx.cp_name(name, annos)
        if not self.cx.path and "name" in annos and isinstance(annos["name"].body[0], str):
            cp = str(annos["name"].body[0]).lstrip(".")
        self._check_action_name(name, annos, loc)
        saved = (self.cx.scope, self.cx.block_kind, self.cx.return_type)
        self.cx.scope = self.cx.scope.child()
        self.cx.block_kind = "action"
        self.cx.return_type = None
        try:
            for p in params:
                self.cx.declare(p.name, p, p.loc)
            body = self.stmts.block(body_t)
        finally:
            self.cx.scope, self.cx.block_kind, self.cx.return_type = saved
        act = ir.Action(name, cp, params, body, annos, loc)
        self.cx.declare(name, act, loc)
        return act

    def _check_action_name(self, name: str, annos: ir.Annotations, loc: ir.Loc) -> None:
        """Two action declarations may not have one control-plane name (p4c's
        DuplicateActionControlPlaneNameCheck: top-level actions and ``@name``d ones, named
        by the enclosing control *declaration*; one declaration specialised per instance is
        one action)."""
        a = annos.get("name")
        given = str(a.body[0]) if a is not None and a.body and isinstance(a.body[0], str) else None
        if given is None and self.specialising:
            return
        local = given or name
        full = local if local.startswith(".") else "." + ".".join(self.specialising[-1:] + (local,))
        first = self.cx.action_cp_names.setdefault(full, loc)
        if first != loc:
            raise self.cx.err(loc, f"action '{name}': conflicting control plane name '{full}' (the action at "
                           f"{first.file}:{first.line} has it too)")

def _check_reaches_an_end(cx: BuildContext, decl: BlockDecl, states: dict[str, ir.ParserState]) -> None:
    """p4c: "Parser never reaches accept or reject state" (every path from start loops)."""
    seen, todo = {"start"}, ["start"]
    while todo:
        st = states.get(todo.pop())
        if st is None:
            return  # accept, reject, or a state p4c reports itself
        t = st.transition
        for nxt in [t.state] if isinstance(t, ir.Goto) else [c.state for c in t.cases]:
            if nxt in ("accept", "reject"):
                return
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    raise cx.err(decl.loc, f"parser {decl.name} never reaches the accept or reject state")
