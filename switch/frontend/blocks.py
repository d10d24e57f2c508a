"""Parsers, controls, actions and tables, specialised per instance.

Why specialise: p4c gives every entity inside an instantiated sub-control the name
``<outer>.<instance>.<local>`` and its own state.  Building a fresh ``ir.Control`` /
``ir.Parser`` per instance (fresh uids, own tables and extern instances) gives the
executor independent state and gives P4Info final control-plane names.
"""

from __future__ import annotations

import re
from typing import Any

from . import ir
from .expressions import children
from .lexer import Tok
from .statements import StmtBuilder
from .symbols import BlockDecl, BlockTypeDecl, ConstSym, did_you_mean
from .tree import ParseNode
from .walk import contains


class BlockBuilder(StmtBuilder):
    path: str
    global_scope: Any
    actions_global: dict[str, ir.Action]
    direct: list[ir.Instance] | None = None
    """Instances the direct invocations (``T.apply()``) in the body being built create."""
    action_cp_names: dict[str, ir.Loc]
    """Control-plane name of every action declaration built so far -> its location."""
    specialising: tuple[str, ...] = ()
    """Names of the blocks being specialised, outermost first (a block that instantiates
    itself, directly or through others, is an error, as in p4c)."""

    # ------------------------------------------------------------------ names
    def cp_name(self, local: str, annos: ir.Annotations) -> str:
        a = annos.get("name")
        if a is not None and a.body and isinstance(a.body[0], str):
            n = a.body[0]
            if n.startswith("."):
                return n[1:]
            local = n
        return f"{self.path}.{local}" if self.path else local

    def params(self, t: ParseNode | None, fresh: bool = True) -> tuple[ir.Param, ...]:
        out: list[ir.Param] = []
        if t is None:
            return ()
        seen: set[str] = set()
        for p in children(t):
            annos_t, dir_t, type_t, name_t, default_t = p.children
            name = self.name_of(name_t)
            if name in seen:
                raise self.err(self.loc(name_t), f"duplicate parameter '{name}'")
            seen.add(name)
            direction = str(dir_t.children[0]) if dir_t is not None else None
            ty = self.resolve_type(type_t)
            annos = self.annotations(annos_t)
            default = self.expr(default_t) if default_t is not None else None
            self._check_param(name, direction, ty, annos, default, self.loc(name_t), type_t)
            out.append(ir.Param(name, direction, ty, self.new_uid(), self.loc(name_t), annos, default))
        return tuple(out)

    def _check_param(self, name: str, direction: str | None, ty: ir.Type, annos: ir.Annotations,
                     default: ir.Expr | None, loc: ir.Loc, type_t: ParseNode) -> None:
        """p4c's rules for one parameter, whatever declares it."""
        if default is not None:
            if direction in ("out", "inout"):
                raise self.err(loc, f"parameter '{name}': {direction} parameters cannot have default values")
            if "optional" in annos:
                raise self.err(loc, f"parameter '{name}': optional parameters cannot have default values")
            if not isinstance(default, (ir.Const, ir.StringLit, ir.EnumMember, ir.ErrorMember)):
                raise self.err(default.loc, f"default value of parameter '{name}' must be a compile-time "
                               "constant")
        if isinstance(ty, ir.ExternT) and not ty.type_args and ty.name in self.externs \
                and self.externs[ty.name].type_params:
            raise self.err(loc, f"parameter '{name}': type parameters needed for extern {ty.name}")
        if direction is not None and isinstance(ty, ir.ExternT):
            raise self.err(loc, f"parameter '{name}': a parameter of extern type {ty.name} cannot have a "
                           "direction")
        while type_t.data == "type_ref" and isinstance(type_t.children[0], ParseNode):
            type_t = type_t.children[0]
        sym = self.scope.lookup_type(self.name_of(type_t.children[0])) if type_t.data == "named_type" else None
        if isinstance(sym, BlockDecl):
            raise self.err(loc, f"parameter '{name}' cannot have type {sym.kind} {sym.name}: a "
                           f"{sym.kind} declaration is not a type (declare a {sym.kind} type for it)")

    def _fresh(self, ps: tuple[ir.Param, ...]) -> tuple[ir.Param, ...]:
        return tuple(ir.Param(p.name, p.direction, p.type, self.new_uid(), p.loc,
                              p.annotations, p.default) for p in ps)

    # ------------------------------------------------------------------ specialisation
    def specialise(self, decl: BlockDecl, ctor_args: tuple[ir.Expr, ...], path: str,
                   loc: ir.Loc) -> ir.Parser | ir.Control:
        if len(ctor_args) != len(decl.ctor_params):
            raise self.err(loc, f"wrong number of constructor arguments for {decl.kind} "
                           f"{decl.name}: expected {len(decl.ctor_params)}, got {len(ctor_args)}")
        if decl.name in self.specialising:
            chain = " -> ".join(self.specialising[self.specialising.index(decl.name):] + (decl.name,))
            raise self.err(loc, f"{decl.kind} {decl.name} instantiates itself ({chain}); a parser or "
                           "control cannot contain an instance of itself")
        saved = (self.scope, self.path, self.block_kind, self.return_type)
        outer, self.specialising = self.specialising, self.specialising + (decl.name,)
        self.scope = self.global_scope.child()
        self.path = path
        self.block_kind = decl.kind
        self.return_type = None
        try:
            params = self._fresh(decl.params)
            for p in params:
                self.declare(p.name, p, p.loc)
            for p, a in zip(decl.ctor_params, ctor_args):
                what = f"constructor argument '{p.name}' of {decl.name}"
                v = self.block_arg(a, p.type, what) if isinstance(p.type, (ir.ControlT, ir.ParserT)) \
                    else self.coerce(a, p.type, what)
                self.declare(p.name, ConstSym(p.name, v, p.loc), p.loc)
            body_items = [c for c in decl.tree.children if isinstance(c, ParseNode)]
            if decl.kind == "control":
                return self._control(decl, params, body_items, path)
            return self._parser(decl, params, body_items, path)
        finally:
            self.scope, self.path, self.block_kind, self.return_type = saved
            self.specialising = outer

    def block_arg(self, a: ir.Expr, t: ir.ControlT | ir.ParserT, what: str) -> ir.Expr:
        """A parser/control instance passed for a constructor parameter of parser/control
        type: the same kind, and apply parameters of the same directions and types as
        the parameter's type declares (p4c's type unification, without generics)."""
        kind = "control" if isinstance(t, ir.ControlT) else "parser"
        if not isinstance(a, ir.InstanceRef) or not isinstance(a.inst.decl, ir.Control if kind == "control"
                                                                 else ir.Parser):
            raise self.err(a.loc, f"{what}: expected a {kind} instance of type {t}, not {a.type}")
        want = self.scope.lookup_type(t.name)
        got = a.inst.decl.params
        if isinstance(want, (BlockTypeDecl, BlockDecl)) and (
                len(want.params) != len(got)
                or any(w.direction != g.direction or w.type != g.type for w, g in zip(want.params, got))):
            sig = ", ".join(f"{p.direction or ''} {p.type}".strip() for p in want.params)
            raise self.err(a.loc, f"{what}: {a.inst.name} ({a.type}) does not match {t}({sig})")
        return a

    def _locals(self, items: list[ParseNode]) -> list[Any]:
        out: list[Any] = []
        for it in items:
            d = it.data
            if d == "const_decl":
                self.const_decl(it)
            elif d == "var_decl":
                out.append(self.var_decl(it))
            elif d == "instantiation":
                out.append(self.instantiation(it))
            elif d == "action_decl":
                out.append(self.action(it))
            elif d == "table_decl":
                out.append(self.table(it))
            elif d == "value_set_decl":
                raise self.unsupported(self.loc(it), "value_set")
        return out

    def _control(self, decl: BlockDecl, params: tuple[ir.Param, ...], items: list[ParseNode],
                 path: str) -> ir.Control:
        local_items = [i for i in items if i.data in ("const_decl", "var_decl", "instantiation",
                                                      "action_decl", "table_decl")]
        locs = self._locals(local_items)
        body_t = next(i for i in items if i.data == "block")
        self.block_kind = "control"
        saved, self.direct = self.direct, []
        try:
            body = self.block(body_t)
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
            n = self.name_of(st.children[1])
            if n in names or n in ("accept", "reject"):
                raise self.err(self.loc(st.children[1]), f"duplicate parser state '{n}'")
            names[n] = self.loc(st.children[1])
        if "start" not in names:
            raise self.err(decl.loc, f"parser {decl.name} has no 'start' state")
        states: dict[str, ir.ParserState] = {}
        saved, self.direct = self.direct, []
        try:
            for st in state_ts:
                states[self.name_of(st.children[1])] = self._state(st, names)
            locs += self.direct
        finally:
            self.direct = saved
        _check_reaches_an_end(self, decl, states)
        return ir.Parser(decl.name, params, decl.ctor_params, tuple(locs), states,
                         decl.annotations, decl.loc, path)

    def _state(self, st: ParseNode, names: dict[str, ir.Loc]) -> ir.ParserState:
        annos_t, name_t, *rest = st.children
        outer = self.scope
        self.scope = outer.child()
        try:
            body = tuple(self.stmt(s) for s in rest[:-1])
            tr = self._transition(rest[-1], names)
        finally:
            self.scope = outer
        return ir.ParserState(self.name_of(name_t), body, tr, self.loc(st),
                              self.annotations(annos_t))

    def _target_state(self, t: ParseNode | Tok, names: dict[str, ir.Loc]) -> str:
        n = self.name_of(t)
        if n not in names and n not in ("accept", "reject"):
            raise self.err(self.loc(t), f"transition to undefined state '{n}'."
                           + did_you_mean(n, list(names) + ["accept", "reject"]))
        return n

    def _transition(self, t: ParseNode, names: dict[str, ir.Loc]) -> ir.Goto | ir.Select:
        loc = self.loc(t)
        if t.data == "goto":
            return ir.Goto(self._target_state(t.children[0], names), loc)
        keys = tuple(self.expr(k) for k in children(t.children[0]))
        for k in keys:
            if isinstance(k.type, ir.IntT):
                raise self.err(k.loc, "select key needs a width")
        cases: list[ir.SelectCase] = []
        for c in children(t)[1:]:
            ks_t, st_t = c.children
            ks = self.keysets(ks_t, [k.type for k in keys], "select case")
            cases.append(ir.SelectCase(ks, self._target_state(st_t, names), self.loc(c)))
        return ir.Select(keys, tuple(cases), loc)

    def _keysets(self, t: ParseNode | Tok, types: list[ir.Type], what: str) -> tuple[ir.Expr, ...]:
        loc = self.loc(t)
        if isinstance(t, ParseNode) and t.data == "tuple_keyset":
            items = children(t)
            if len(items) != len(types):
                raise self.err(loc, f"{what} has {len(items)} keyset elements but there are "
                               f"{len(types)} keys")
            return tuple(self.keyset(i, ty, what) for i, ty in zip(items, types))
        if isinstance(t, ParseNode) and t.data in ("default_key", "dontcare_key"):
            return tuple(self.keyset(t, ty, what) for ty in types)
        if len(types) != 1:
            raise self.err(loc, f"{what} has 1 keyset element but there are {len(types)} keys")
        return (self.keyset(t, types[0], what),)

    def keysets(self, t: ParseNode | Tok, types: list[ir.Type], what: str) -> tuple[ir.Expr, ...]:
        """One keyset per key type (a select case's or a table entry's); p4c's rule that a
        keyset holds no function call is checked here."""
        out = self._keysets(t, types, what)
        for k in out:
            if contains(k, lambda n: isinstance(n, ir.FunctionCall)):
                raise self.err(k.loc, f"{what}: no function calls are allowed in a keyset")
        return out

    def keyset(self, t: ParseNode | Tok, ty: ir.Type, what: str) -> ir.Expr:
        loc = self.loc(t)
        if isinstance(t, ParseNode):
            if t.data == "default_key":
                return ir.DefaultKey(ir.DontCareT(), loc, True)
            if t.data == "dontcare_key":
                return ir.DefaultKey(ir.DontCareT(), loc, False)
            if t.data == "mask":
                v = self.coerce(self.expr(t.children[0]), ty, f"{what} value")
                me = self.expr(t.children[1])
                # a mask on a serializable enum key is a bit pattern of its underlying type
                # (p4c accepts 'E.A &&& 0xff00')
                mt = ty.underlying if isinstance(ty, ir.EnumT) and ty.underlying is not None \
                    and not isinstance(me.type, ir.EnumT) else ty
                m = self.coerce(me, mt, f"{what} mask")
                return ir.Mask(v, m, ty, loc)
            if t.data == "range":
                lo = self.coerce(self.expr(t.children[0]), ty, f"{what} range")
                hi = self.coerce(self.expr(t.children[1]), ty, f"{what} range")
                return ir.Range(lo, hi, ty, loc)
        return self.coerce(self.expr(t), ty, what)

    # ------------------------------------------------------------------ instances
    def direct_instance(self, decl: BlockDecl, loc: ir.Loc) -> ir.Instance:
        """``T.apply(...)`` in a body: a fresh instance of ``T`` local to the enclosing
        block, named as p4c's InstantiateDirectCalls names it (``@name("T")``: its
        control-plane prefix is ``<block>.T``); every direct call is its own instance."""
        if self.block_kind not in ("control", "parser") or self.direct is None:
            raise self.err(loc, f"{decl.kind} {decl.name} can only be applied directly in a "
                           "control's apply block or a parser state")
        name = f"{decl.name}_inst"
        n = sum(1 for i in self.direct if i.name.startswith(name))
        cp = self.cp_name(decl.name, {})
        blk = self.specialise(decl, (), cp, loc)
        ty: ir.Type = ir.ParserT(decl.name) if decl.kind == "parser" else ir.ControlT(decl.name)
        inst = ir.Instance(name if n == 0 else f"{name}_{n - 1}", cp, ty, blk, (), {}, loc)
        self.direct.append(inst)
        return inst

    def instantiation(self, t: ParseNode) -> ir.Instance:
        annos_t, type_t, args_t, name_t = t.children
        name = self.name_of(name_t)
        annos = self.annotations(annos_t)
        inst = self.make_instance(type_t, args_t, name, annos, self.loc(name_t),
                                  self.cp_name(name, annos))
        self.declare(name, inst, self.loc(name_t))
        return inst

    def make_instance(self, type_t: ParseNode, args_t: ParseNode | None, name: str,
                      annos: ir.Annotations, loc: ir.Loc, cp_name: str) -> ir.Instance:
        ty = self.resolve_type(type_t)
        args = self.arg_list(args_t)
        if isinstance(ty, ir.ExternT):
            decl = self.externs[ty.name]
            if len(ty.type_args) != len(decl.type_params):
                raise self.err(loc, f"extern {ty.name} takes {len(decl.type_params)} type "
                               f"arguments, got {len(ty.type_args)}")
            if not decl.ctors:
                raise self.err(loc, f"extern {ty.name} cannot be instantiated")
            sig = self.choose_overload(decl.ctors, len(args), loc, f"constructor of {ty.name}")
            tv = dict(zip(decl.type_params, ty.type_args))
            bound = self.bind(sig.params, args, loc, f"constructor of {ty.name}", tv, ())
            return ir.Instance(name, cp_name, ty, None,
                               tuple(a.expr for a in bound if a.expr is not None), annos, loc)
        if isinstance(ty, (ir.ControlT, ir.ParserT)):
            bdecl = self.scope.lookup_type(ty.name)
            if not isinstance(bdecl, BlockDecl):
                raise self.err(loc, f"{ty.name} is a {ty.__class__.__name__[:-1].lower()} type "
                               "declaration without a body and cannot be instantiated")
            ctor = tuple(self.expr(a) for _, a in args)
            blk = self.specialise(bdecl, ctor, cp_name, loc)
            return ir.Instance(name, cp_name, ty, blk, ctor, annos, loc)
        raise self.err(loc, f"cannot instantiate a value of type {ty}")

    # ------------------------------------------------------------------ actions
    def action(self, t: ParseNode) -> ir.Action:
        annos_t, name_t, params_t, body_t = t.children
        name = self.name_of(name_t)
        annos = self.annotations(annos_t)
        loc = self.loc(name_t)
        params = self.params(params_t)
        seen_data = False
        for p in params:
            if isinstance(p.type, ir.IntT):
                raise self.err(p.loc, f"action '{name}': parameter '{p.name}' cannot have type int "
                               "(give it a width: bit<W> or int<W>)")
            if p.direction is None:
                seen_data = True
            elif seen_data:
                raise self.err(p.loc, f"action '{name}': directional parameter '{p.name}' "
                               "must come before the directionless (action data) parameters")
        cp = name if not self.path else self.cp_name(name, annos)
        if not self.path and "name" in annos and isinstance(annos["name"].body[0], str):
            cp = str(annos["name"].body[0]).lstrip(".")
        self._check_action_name(name, annos, loc)
        saved = (self.scope, self.block_kind, self.return_type)
        self.scope = self.scope.child()
        self.block_kind = "action"
        self.return_type = None
        try:
            for p in params:
                self.declare(p.name, p, p.loc)
            body = self.block(body_t)
        finally:
            self.scope, self.block_kind, self.return_type = saved
        act = ir.Action(name, cp, params, body, annos, loc)
        self.declare(name, act, loc)
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
        first = self.action_cp_names.setdefault(full, loc)
        if first != loc:
            raise self.err(loc, f"action '{name}': conflicting control plane name '{full}' (the action at "
                           f"{first.file}:{first.line} has it too)")

    # ------------------------------------------------------------------ tables
    def expr_text(self, t: ParseNode | Tok) -> str:
        """Key expression as p4c prints it (``hdr.ipv4.dstAddr``)."""
        if isinstance(t, Tok):
            return str(t)
        d = t.data
        if d == "name_ref":
            return self.name_of(t.children[0])
        if d == "global_ref":
            return "." + self.name_of(t.children[0])
        if d == "member":
            return f"{self.expr_text(t.children[0])}.{self.name_of(t.children[1])}"
        if d == "index":
            return f"{self.expr_text(t.children[0])}[{self.expr_text(t.children[1])}]"
        if d == "slice":
            return (f"{self.expr_text(t.children[0])}[{self.expr_text(t.children[1])}:"
                    f"{self.expr_text(t.children[2])}]")
        if d == "call" and not children(t.children[1]):
            return f"{self.expr_text(t.children[0])}()"
        if d == "int_lit":
            return str(t.children[0])
        if not t.meta.empty:
            return re.sub(r"\s+", " ", self.pp.text[t.meta.start_pos:t.meta.end_pos]).strip()
        return d

    def table(self, t: ParseNode) -> ir.Table:
        from .tables import build_table
        return build_table(self, t)


def _check_reaches_an_end(b: BlockBuilder, decl: BlockDecl, states: dict[str, ir.ParserState]) -> None:
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
    raise b.err(decl.loc, f"parser {decl.name} never reaches the accept or reject state")
