"""Expression typing: parse-tree expressions to typed ``ir`` expressions.

Why: this is where P4's typing rules live -- name resolution, implicit conversion of
unsized literals, the ban on every other implicit conversion, l-value rules, method
lookup on headers / stacks / externs / tables, and argument binding with directions and
generic type parameters.
"""

from __future__ import annotations

from typing import Any, Callable

from . import consteval as ce
from . import ir
from .context import BuildContext, CallTyper, Instantiator
from .lexer import Tok
from .parse import parse_int, unescape_string
from .symbols import BlockDecl, ConstSym, ExternFnSym, Scope, did_you_mean
from .tree import ParseNode

_BINOPS = {"lor": "||", "land": "&&", "bor": "|", "bxor": "^", "band": "&", "eq": "==",
           "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">=", "shl": "<<", "shr": ">>",
           "add": "+", "sub": "-", "sadd": "|+|", "ssub": "|-|", "concat": "++", "mul": "*",
           "div": "/", "mod": "%"}
_UNOPS = {"neg": "-", "lnot": "!", "bnot": "~"}
_CMP = {"==", "!=", "<", "<=", ">", ">="}
_SIZE_METHODS = {"minSizeInBits": 1, "minSizeInBytes": 8, "maxSizeInBits": 1,
                 "maxSizeInBytes": 8, "sizeInBits": 1, "sizeInBytes": 8}


def names_extern(t: ir.Type, name: str) -> bool:
    """Does ``t`` name the extern type ``name`` (itself or in a type argument)?"""
    return isinstance(t, ir.ExternT) and (t.name == name or any(names_extern(a, name) for a in t.type_args))


class _Callable:
    """A name that denotes something callable or applicable, not a value."""

    __slots__ = ("obj", "loc", "name")

    def __init__(self, obj: object, loc: ir.Loc, name: str) -> None:
        self.obj, self.loc, self.name = obj, loc, name


def children(t: ParseNode) -> list[Any]:
    """Children without the None placeholders of absent optional items."""
    return [c for c in t.children if c is not None]


class Exprs:
    """Types expressions in the context's current scope.  A call expression is handed to
    the call typer and a direct ``T.apply()`` to the instantiator (see :meth:`connect`)."""

    calls: CallTyper
    """Types call expressions (set by :meth:`connect`)."""
    blocks: Instantiator
    """Builds the instance of a direct ``T.apply()`` (set by :meth:`connect`)."""

    def __init__(self, cx: BuildContext) -> None:
        self.cx = cx

    def connect(self, calls: CallTyper, blocks: Instantiator) -> None:
        """The parts built on expression typing that it calls back into."""
        self.calls, self.blocks = calls, blocks

    # ------------------------------------------------------------------ types
    def resolve_type(self, t: ParseNode) -> ir.Type:
        d = t.data
        if d == "type_ref":
            return self.resolve_type(t.children[0])
        if d == "base_type":
            kw = str(t.children[0])
            return {"bool": ir.BoolT(), "error": ir.ErrorT(), "string": ir.StringT(),
                    "match_kind": ir.MatchKindT()}[kw]
        if d == "int_type":
            return ir.IntT()
        if d == "bit1_type":
            return ir.BitT(1)
        if d in ("bit_type", "sint_type", "varbit_type"):
            w_tree = next(c for c in t.children if isinstance(c, ParseNode) and c.data == "width")
            w = self.width_value(w_tree)
            if d == "varbit_type":
                return ir.VarBitT(w)
            if d == "sint_type" and w < 1:
                raise self.cx.err(self.cx.loc(t), f"int<{w}>: width must be at least 1")
            return ir.BitT(w, d == "sint_type")
        if d == "void_type":
            return ir.VoidT()
        if d == "dontcare_type":
            return ir.DontCareT()
        if d == "named_type":
            return self.named_type(t.children[0])
        if d == "spec_type":
            name_tok = t.children[0]
            base = self.named_type(name_tok, allow_generic=True)
            args = tuple(self.resolve_type(a) for a in children(t.children[1]))
            if isinstance(base, ir.ExternT):
                decl = self.cx.externs.get(base.name)
                if base.type_args or (decl is not None and len(decl.type_params) != len(args)):
                    have = len(decl.type_params) if decl is not None and not base.type_args else 0
                    raise self.cx.err(self.cx.loc(t), f"type {base} has {have} type parameter(s), but it is "
                                   f"specialized with {len(args)}")
                if any(names_extern(a, base.name) for a in args):
                    raise self.cx.err(self.cx.loc(t), f"{base.name}: contains itself as a type argument")
                return ir.ExternT(base.name, args)
            if isinstance(base, (ir.HeaderT, ir.StructT, ir.HeaderUnionT, ir.BitT, ir.BoolT, ir.VarBitT,
                                 ir.EnumT, ir.StackT, ir.TupleT)):
                raise self.cx.err(self.cx.loc(t), f"type {base} is not generic and cannot be specialized with "
                               "type arguments")
            return base
        if d == "stack_type":
            elem = self.resolve_type(t.children[0])
            size = self.const_int(t.children[1], "header stack size")
            if not isinstance(elem, (ir.HeaderT, ir.HeaderUnionT)):
                raise self.cx.err(self.cx.loc(t), f"header stack element type must be a header or "
                               f"header_union, not {elem}")
            if size < 1:
                raise self.cx.err(self.cx.loc(t), f"header stack size must be positive, not {size}")
            return ir.StackT(elem, size)
        if d == "tuple_type":
            elems = tuple(self.resolve_type(a) for a in children(t.children[0]))
            if any(isinstance(e, ir.StringT) for e in elems):
                raise self.cx.err(self.cx.loc(t), "a tuple element cannot have type string")
            return ir.TupleT(elems)
        raise self.cx.err(self.cx.loc(t), f"unexpected type syntax {d}")

    def width_value(self, w: ParseNode) -> int:
        c = w.children[0]
        if isinstance(c, Tok) and c.type == "INTEGER":
            v = self.int_literal(c)[0]
        elif isinstance(c, Tok):
            v = self.const_int(ParseNode.at("name_ref", [c], w), "width")
        else:
            v = self.const_int(c, "width")
        if v < 0:
            raise self.cx.err(self.cx.loc(w), f"width must not be negative, not {v}")
        if v > ce.MAX_WIDTH:
            raise self.cx.err(self.cx.loc(w), f"width {v} is too large: innet supports widths up to {ce.MAX_WIDTH}")
        return v

    def int_literal(self, tok: Tok) -> tuple[int, int | None, bool]:
        """``parse_int`` of a literal token, with a located error for a literal that is
        too long to convert or wider than innet's limits."""
        text = str(tok)
        try:
            v, w, s = parse_int(text)
        except ValueError:
            raise self.cx.err(self.cx.loc(tok), f"integer literal of {len(text)} characters is too large") from None
        if w is not None and w > ce.MAX_WIDTH:
            raise self.cx.err(self.cx.loc(tok), f"width {w} of literal is too large: innet supports widths up "
                           f"to {ce.MAX_WIDTH}")
        if w is None and v.bit_length() > ce.MAX_INT_BITS:
            raise self.cx.err(self.cx.loc(tok), f"integer literal of {v.bit_length()} bits is too large: "
                           f"int constants are limited to {ce.MAX_INT_BITS} bits (as in p4c)")
        return v, w, s

    def newtype_name(self, t: ParseNode) -> str | None:
        """The name of the ``type`` declaration the type tree ``t`` names, if it names one."""
        while t.data == "type_ref":
            t = t.children[0]
        if t.data == "named_type":
            name = str(t.children[0])
            return name if name in self.cx.newtypes else None
        return None

    def named_type(self, tok: Any, allow_generic: bool = False) -> ir.Type:
        name = str(tok)
        sym = self.cx.scope.lookup_type(name)
        if sym is None:
            raise self.cx.err(self.cx.loc(tok), f"unknown type '{name}'."
                           + did_you_mean(name, self.cx.scope.all_type_names()))
        if isinstance(sym, ir.Type):
            return sym
        if isinstance(sym, ir.ExternDecl):
            return ir.ExternT(sym.name, ())
        if isinstance(sym, BlockDecl):
            return ir.ParserT(name) if sym.kind == "parser" else ir.ControlT(name)
        kind = getattr(sym, "kind", None)
        if kind == "parser":
            return ir.ParserT(name)
        if kind == "control":
            return ir.ControlT(name)
        return ir.PackageT(name)

    def const_int(self, t: ParseNode | Tok, what: str) -> int:
        e = self.expr(t)
        if not isinstance(e, ir.Const) or isinstance(e.value, bool):
            raise self.cx.err(self.cx.loc(t), f"{what} must be a compile-time integer constant")
        return int(e.value)

    # ------------------------------------------------------------------ conversions
    def coerce(self, e: ir.Expr, t: ir.Type, what: str) -> ir.Expr:
        """Implicitly convert ``e`` to ``t`` or raise a located type error."""
        if e.type == t or isinstance(t, (ir.TypeVarT, ir.DontCareT)):
            return e
        if isinstance(e, ir.DefaultKey):
            return e
        if isinstance(e, ir.Const) and isinstance(e.type, ir.IntT) and not isinstance(e.value, bool):
            if isinstance(t, ir.BitT):
                if not ce.fits(int(e.value), t):
                    # p4c: a warning (WARN_OVERFLOW), and the value wraps to the width
                    self.cx.warn(e.loc, f"{what}: value {e.value} does not fit in {t}; "
                              f"it wraps to {ce.wrap(int(e.value), t)}")
                return ir.Const(ce.wrap(int(e.value), t), t, e.loc)
            if isinstance(t, ir.IntT):
                return e
        if isinstance(t, ir.HeaderT) and t.source_fields and isinstance(e, (ir.ListExpr, ir.StructInit)) \
                and not (isinstance(e, ir.StructInit) and e.type == t):
            # a header with struct fields: initialise its declared fields, then flatten
            view = self.coerce(e, ir.StructT(t.name, t.source_fields), what)
            assert isinstance(view, ir.StructInit)
            leaves = [x for _, x in _leaves(view)]
            return ir.StructInit(t, tuple((f.name, x) for f, x in zip(t.fields, leaves)), e.loc)
        if isinstance(e, ir.ListExpr):
            if isinstance(t, (ir.StructT, ir.HeaderT)):
                if len(e.elems) != len(t.fields):
                    raise self.cx.err(e.loc, f"{what}: {t} has {len(t.fields)} fields but the "
                                   f"list has {len(e.elems)} elements")
                return ir.StructInit(t, tuple(
                    (f.name, self.coerce(x, f.type, f"field '{f.name}' of {t}"))
                    for f, x in zip(t.fields, e.elems)), e.loc)
            if isinstance(t, ir.TupleT) and len(t.elems) == len(e.elems):
                elems = tuple(self.coerce(x, et, what) for x, et in zip(e.elems, t.elems))
                return ir.ListExpr(elems, ir.TupleT(tuple(x.type for x in elems)), e.loc)
        if isinstance(e, ir.StructInit) and isinstance(e.type, ir.StructT) and e.type.name == "" \
                and isinstance(t, (ir.StructT, ir.HeaderT)):
            given = dict(e.fields)
            want = [f.name for f in t.fields]
            for n in given:
                if n not in want:
                    raise self.cx.err(e.loc, f"{what}: {t} has no field '{n}'." + did_you_mean(n, want))
            for n in want:
                if n not in given:
                    raise self.cx.err(e.loc, f"{what}: field '{n}' of {t} is not initialised")
            return ir.StructInit(t, tuple((f.name, self.coerce(given[f.name], f.type,
                                                                f"field '{f.name}' of {t}"))
                                          for f in t.fields), e.loc)
        if ce.is_serializable_enum(e.type) and isinstance(t, ir.BitT) \
                and e.type.underlying == t:  # type: ignore
            return ir.Cast(t, e, e.loc)
        raise self.cx.err(e.loc, f"{what}: cannot convert {e.type} to {t} implicitly; "
                       "use a cast")

    # ------------------------------------------------------------------ expressions
    def expr(self, t: ParseNode | Tok) -> ir.Expr:
        r = self.value_or_callable(t)
        if isinstance(r, _Callable):
            raise self.cx.err(r.loc, f"'{r.name}' cannot be used as a value")
        return r

    def value_or_callable(self, t: ParseNode | Tok) -> ir.Expr | _Callable:
        if isinstance(t, Tok):
            return self.value_or_callable(ParseNode("name_ref", [t]))
        d = t.data
        loc = self.cx.loc(t)
        fn: Callable[[ParseNode, ir.Loc], ir.Expr | _Callable] | None = getattr(self, "_e_" + d, None)
        if fn is not None:
            return fn(t, loc)
        if d in _BINOPS:
            ch = children(t)
            rhs = ch[-1]
            return self.binary(_BINOPS[d], self.expr(ch[0]), self.expr(rhs), loc)
        if d in _UNOPS:
            return self.unary(_UNOPS[d], self.expr(t.children[0]), loc)
        if d == "pos":
            e = self.expr(t.children[0])
            if not isinstance(e.type, (ir.BitT, ir.IntT)):
                raise self.cx.err(loc, f"operator '+' needs a numeric operand, not {e.type}")
            return e
        if d in ("mask", "range", "default_key", "dontcare_key", "tuple_keyset"):
            raise self.cx.err(loc, "a keyset expression is only allowed in select cases and "
                           "table entries")
        raise self.cx.err(loc, f"unsupported expression syntax '{d}'")

    def _e_int_lit(self, t: ParseNode, loc: ir.Loc) -> ir.Expr:
        v, w, s = self.int_literal(t.children[0])
        if w is None:
            return ir.Const(v, ir.IntT(), loc)
        bt = ir.BitT(w, s)
        return ir.Const(ce.wrap(v, bt), bt, loc)

    def _e_string_lit(self, t: ParseNode, loc: ir.Loc) -> ir.Expr:
        return ir.StringLit(unescape_string(str(t.children[0])), ir.StringT(), loc)

    def _e_true_lit(self, t: ParseNode, loc: ir.Loc) -> ir.Expr:
        return ir.Const(True, ir.BoolT(), loc)

    def _e_false_lit(self, t: ParseNode, loc: ir.Loc) -> ir.Expr:
        return ir.Const(False, ir.BoolT(), loc)

    def _e_name_ref(self, t: ParseNode, loc: ir.Loc) -> ir.Expr | _Callable:
        return self._named(t, loc, self.cx.scope)

    def _e_global_ref(self, t: ParseNode, loc: ir.Loc) -> ir.Expr | _Callable:
        """``.name``: the top-level declaration, whatever a local one of the name hides."""
        return self._named(t, loc, self.cx.scope.root())

    def _named(self, t: ParseNode, loc: ir.Loc, scope: Scope) -> ir.Expr | _Callable:
        name = self.cx.name_of(t.children[0])
        sym = scope.lookup(name)
        if sym is None:
            if scope.lookup_type(name) is not None:
                raise self.cx.err(loc, f"'{name}' is a type, not a value")
            raise self.cx.err(loc, f"undefined name '{name}'."
                           + did_you_mean(name, scope.all_value_names()))
        if isinstance(sym, (ir.Param, ir.VarDecl)):
            return ir.VarRef(sym, sym.type, loc)
        if isinstance(sym, ConstSym):
            return self._copy_const(sym.value, loc)
        if isinstance(sym, ir.Instance):
            return ir.InstanceRef(sym, sym.type, loc)
        return _Callable(sym, loc, name)

    @staticmethod
    def _copy_const(v: ir.Expr, loc: ir.Loc) -> ir.Expr:
        if isinstance(v, ir.Const):
            return ir.Const(v.value, v.type, loc)
        if isinstance(v, ir.EnumMember):
            return ir.EnumMember(v.enum, v.member, loc=loc)
        if isinstance(v, ir.ErrorMember):
            return ir.ErrorMember(v.name, loc=loc)
        if isinstance(v, ir.StringLit):
            return ir.StringLit(v.value, v.type, loc)
        return v

    def _e_error_member(self, t: ParseNode, loc: ir.Loc) -> ir.Expr:
        name = self.cx.name_of(children(t)[-1])
        if name not in self.cx.errors:
            raise self.cx.err(loc, f"error.{name} is not declared." + did_you_mean(name, self.cx.errors))
        return ir.ErrorMember(name, ir.ErrorT(), loc)

    def _e_type_member(self, t: ParseNode, loc: ir.Loc) -> ir.Expr | _Callable:
        tname = str(t.children[0])
        member = self.cx.name_of(t.children[1])
        ty = self.named_type(t.children[0])
        decl = self.cx.scope.lookup_type(tname)
        if isinstance(ty, (ir.ControlT, ir.ParserT)) and isinstance(decl, BlockDecl):
            if member != "apply":
                raise self.cx.err(loc, f"'{tname}.{member}': a {decl.kind} type can only be applied "
                               f"directly ({tname}.apply(...))")
            inst = self.blocks.direct_instance(decl, loc)
            return _Callable((ir.InstanceRef(inst, inst.type, loc), member), loc, f"{tname}.{member}")
        if isinstance(ty, ir.EnumT):
            if member not in ty.members:
                raise self.cx.err(loc, f"enum {tname} has no member '{member}'."
                               + did_you_mean(member, ty.members))
            return ir.EnumMember(ty, member, loc=loc)
        raise self.cx.err(loc, f"'{tname}.{member}': {tname} is not an enum")

    def _e_call(self, t: ParseNode, loc: ir.Loc) -> ir.Expr:
        ch = t.children
        return self.calls.call(ch[0], (), ch[1], loc)

    def _e_generic_call(self, t: ParseNode, loc: ir.Loc) -> ir.Expr:
        ch = t.children
        targs = tuple(self.resolve_type(a) for a in children(ch[1]))
        return self.calls.call(ch[0], targs, ch[2], loc)

    def _e_list_expr(self, t: ParseNode, loc: ir.Loc) -> ir.Expr:
        ch = children(t)
        elems = tuple(self.expr(x) for x in (children(ch[0]) if ch else []))
        return ir.ListExpr(elems, ir.TupleT(tuple(e.type for e in elems)), loc)

    def _e_struct_expr(self, t: ParseNode, loc: ir.Loc) -> ir.Expr:
        fields: list[tuple[str, ir.Expr]] = []
        for kv in children(t):
            n = self.cx.name_of(kv.children[0])
            if any(n == f for f, _ in fields):
                raise self.cx.err(self.cx.loc(kv), f"field '{n}' initialised twice")
            fields.append((n, self.expr(kv.children[1])))
        anon = ir.StructT("", tuple(ir.Field(n, e.type) for n, e in fields))
        return ir.StructInit(anon, tuple(fields), loc)

    def _e_ctor_call(self, t: ParseNode, loc: ir.Loc) -> ir.Expr:
        raise self.cx.err(loc, "constructor call is only allowed in an instantiation or a "
                       "table 'implementation' property")

    def _e_cast(self, t: ParseNode, loc: ir.Loc) -> ir.Expr:
        ty = self.resolve_type(t.children[0])
        e = self.expr(t.children[1])
        target = t.children[0]
        while isinstance(target, ParseNode) and target.data == "type_ref":
            target = target.children[0]
        name = str(target.children[0]) if isinstance(target, ParseNode) and target.data == "named_type" else ""
        if name in self.cx.newtypes and e.type != ty and not (isinstance(e, ir.Const) and isinstance(e.type, ir.IntT)):
            raise self.cx.err(loc, f"cannot cast {e.type} to type {name}: a 'type' is cast only from its "
                           f"underlying type {ty}")
        return self.cast(ty, e, loc)

    def cast(self, ty: ir.Type, e: ir.Expr, loc: ir.Loc) -> ir.Expr:
        src = e.type
        if src == ty:  # kept only where it turns a 'type' back into its base type
            return ir.Cast(ty, e, loc) if _declared_type_name(e) is not None else e
        ok = False
        if isinstance(ty, ir.BitT) and isinstance(src, ir.BitT) and ty.signed != src.signed \
                and ty.width != src.width:
            raise self.cx.err(loc, f"cannot cast {src} to {ty}: a cast may change the width or the signedness, "
                           "not both (cast in two steps)")
        if isinstance(ty, ir.BitT):
            ok = isinstance(src, (ir.BitT, ir.IntT)) or (isinstance(src, ir.BoolT) and ty.width == 1) \
                or (ce.is_serializable_enum(src) and src.underlying == ty)  # type: ignore
            if ce.is_serializable_enum(src) and not ok:
                ok = True  # cast through the underlying type
                e = ir.Cast(src.underlying, e, loc)  # type: ignore
        elif isinstance(ty, ir.BoolT):
            ok = isinstance(src, ir.BitT) and src.width == 1
        elif isinstance(ty, ir.IntT):
            ok = isinstance(src, (ir.BitT, ir.IntT)) and isinstance(e, ir.Const)
        elif ce.is_serializable_enum(ty):
            ok = isinstance(src, (ir.BitT, ir.IntT)) or src == ty
            if isinstance(src, ir.BitT) and src != ty.underlying:  # type: ignore
                e = self.cast(ty.underlying, e, loc)  # type: ignore
            elif isinstance(src, ir.IntT):
                e = self.coerce(e, ty.underlying, "cast")  # type: ignore
        elif isinstance(ty, (ir.StructT, ir.HeaderT)) and isinstance(e, (ir.ListExpr, ir.StructInit)):
            return self.coerce(e, ty, "cast")
        if not ok:
            raise self.cx.err(loc, f"cannot cast {src} to {ty}")
        if isinstance(e, ir.Const):
            f = ce.fold_cast(ty, e, loc)
            if f is not None:
                return f
        return ir.Cast(ty, e, loc)

    def _check_division(self, op: str, a: ir.Expr, b: ir.Expr, loc: ir.Loc) -> None:
        """p4c's rules for '/' and '%': unsigned operands only, no constant zero divisor."""
        what = "division" if op == "/" else "modulo"
        if isinstance(b, ir.Const) and int(b.value) == 0:
            raise self.cx.err(loc, f"{what} by zero")
        if isinstance(a.type, ir.BitT) and a.type.signed:
            raise self.cx.err(loc, f"operator '{op}' cannot operate on signed values ({a.type}); p4c allows "
                           "it only on unsigned bit<W> and int constants")

    def unary(self, op: str, e: ir.Expr, loc: ir.Loc) -> ir.Expr:
        t = e.type
        if op == "!":
            if not isinstance(t, ir.BoolT):
                raise self.cx.err(loc, f"operator '!' needs a bool operand, not {t}")
        elif op == "~":
            if not isinstance(t, ir.BitT):
                raise self.cx.err(loc, f"operator '~' needs a bit<W> or int<W> operand, not {t}"
                               + ("; give the literal a width (e.g. 8w0)" if isinstance(t, ir.IntT) else ""))
        elif not isinstance(t, (ir.BitT, ir.IntT)):
            raise self.cx.err(loc, f"operator '{op}' needs a numeric operand, not {t}")
        if isinstance(e, ir.Const):
            f = ce.fold_unary(op, e, loc)
            if f is not None:
                return f
        return ir.Unary(op, e, t, loc)

    def unify(self, op: str, a: ir.Expr, b: ir.Expr, loc: ir.Loc) -> tuple[ir.Expr, ir.Expr]:
        ta, tb = a.type, b.type
        if ta == tb:
            return a, b
        if isinstance(ta, ir.IntT) and isinstance(a, ir.Const):
            return self.coerce(a, tb, f"operand of '{op}'"), b
        if isinstance(tb, ir.IntT) and isinstance(b, ir.Const):
            return a, self.coerce(b, ta, f"operand of '{op}'")
        if isinstance(a, (ir.ListExpr, ir.StructInit)) and isinstance(tb, (ir.StructT, ir.HeaderT)):
            return self.coerce(a, tb, f"operand of '{op}'"), b
        if isinstance(b, (ir.ListExpr, ir.StructInit)) and isinstance(ta, (ir.StructT, ir.HeaderT)):
            return a, self.coerce(b, ta, f"operand of '{op}'")
        if ce.is_serializable_enum(ta) and ta.underlying == tb:  # type: ignore
            return ir.Cast(tb, a, a.loc), b
        if ce.is_serializable_enum(tb) and tb.underlying == ta:  # type: ignore
            return a, ir.Cast(ta, b, b.loc)
        raise self.cx.err(loc, f"operands of '{op}' have different types: {ta} and {tb}; "
                       "use a cast")

    def binary(self, op: str, a: ir.Expr, b: ir.Expr, loc: ir.Loc) -> ir.Expr:
        if op in ("&&", "||"):
            for x in (a, b):
                if not isinstance(x.type, ir.BoolT):
                    raise self.cx.err(x.loc, f"operator '{op}' needs bool operands, not {x.type}")
            t: ir.Type = ir.BoolT()
        elif op in ("<<", ">>"):
            if not isinstance(a.type, (ir.BitT, ir.IntT)):
                raise self.cx.err(a.loc, f"left operand of '{op}' must be numeric, not {a.type}")
            if isinstance(b.type, ir.BitT) and b.type.signed or not isinstance(b.type, (ir.BitT, ir.IntT)):
                raise self.cx.err(b.loc, f"shift amount must be an unsigned bit<W> or int, not {b.type}")
            declared = _declared_type_name(b)
            if declared is not None:
                raise self.cx.err(b.loc, f"shift amount must be an unsigned bit<W> or int, not {declared} (a 'type' "
                                  f"over {b.type}); cast it to {b.type}")
            if isinstance(b, ir.Const) and int(b.value) < 0:
                raise self.cx.err(b.loc, f"shift amount must not be negative, not {b.value}")
            if op == "<<" and isinstance(a.type, ir.IntT) and isinstance(b, ir.Const) \
                    and int(b.value) > ce.MAX_INT_BITS:
                raise self.cx.err(loc, f"int constant shifted left by {b.value}: int constants are limited "
                               f"to {ce.MAX_INT_BITS} bits (as in p4c)")
            if isinstance(a.type, ir.IntT) and not isinstance(b, ir.Const):
                raise self.cx.err(a.loc, "left operand of a shift by a run-time amount needs a width")
            t = a.type
        elif op == "++":
            for x in (a, b):
                if not isinstance(x.type, ir.BitT):
                    raise self.cx.err(x.loc, f"operands of '++' need a width (bit<W>/int<W>), not {x.type}")
            t = ir.BitT(a.type.width + b.type.width, a.type.signed)  # type: ignore
        else:
            if op in ("/", "%"):
                for x in (a, b):  # before unify turns -1 into 255
                    if isinstance(x, ir.Const) and not isinstance(x.value, bool) and int(x.value) < 0:
                        raise self.cx.err(x.loc, f"operator '{op}' is not defined on negative numbers ({x.value})")
            a, b = self.unify(op, a, b, loc)
            ty = a.type
            if op in ("==", "!="):
                if isinstance(ty, ir.ExternT):
                    raise self.cx.err(loc, f"operator '{op}' on two {ty} instances: externs cannot be compared")
                if not isinstance(ty, (ir.BitT, ir.IntT, ir.BoolT, ir.EnumT, ir.ErrorT,
                                       ir.StructT, ir.HeaderT, ir.HeaderUnionT, ir.StackT,
                                       ir.TupleT, ir.VarBitT)):
                    raise self.cx.unsupported(loc, f"comparison of {ty} values")
                t = ir.BoolT()
            else:
                if not isinstance(ty, (ir.BitT, ir.IntT)):
                    raise self.cx.err(loc, f"operator '{op}' needs numeric operands, not {ty}")
                if op in ("/", "%"):
                    self._check_division(op, a, b, loc)
                t = ir.BoolT() if op in _CMP else ty
        if isinstance(a, ir.Const) and isinstance(b, ir.Const):
            f = ce.fold_binary(op, a, b, t, loc)
            if f is not None and isinstance(t, ir.IntT) and abs(int(f.value)).bit_length() > ce.MAX_INT_BITS:
                raise self.cx.err(loc, f"the value of this '{op}' is wider than {ce.MAX_INT_BITS} bits: int "
                               f"constants are limited to {ce.MAX_INT_BITS} bits (as in p4c)")
            if f is not None:
                return f
        return ir.Binary(op, a, b, t, loc)

    def _e_mux(self, t: ParseNode, loc: ir.Loc) -> ir.Expr:
        c, a, b = (self.expr(x) for x in children(t))
        if not isinstance(c.type, ir.BoolT):
            raise self.cx.err(c.loc, f"condition of '?:' must be bool, not {c.type}")
        if isinstance(c, ir.Const):
            return a if c.value else b
        a, b = self.unify("?:", a, b, loc)
        if isinstance(a.type, ir.IntT):
            raise self.cx.err(loc, "the branches of '?:' need a width (e.g. 8w1 : 8w0)")
        return ir.Mux(c, a, b, a.type, loc)

    # ------------------------------------------------------------------ members
    def _e_member(self, t: ParseNode, loc: ir.Loc) -> ir.Expr | _Callable:
        base_t, name_t = t.children[0], t.children[1]
        name = self.cx.name_of(name_t)
        base = self.value_or_callable(base_t)
        if isinstance(base, _Callable):
            return _Callable((base, name), loc, f"{base.name}.{name}")
        return self.member(base, name, loc)

    def member(self, base: ir.Expr, name: str, loc: ir.Loc) -> ir.Expr | _Callable:
        bt = base.type
        if isinstance(bt, (ir.HeaderT, ir.StructT, ir.HeaderUnionT)):
            f = bt.field(name)
            if f is not None:
                return ir.Member(base, name, f.type, loc)
            g = bt.group(name) if isinstance(bt, ir.HeaderT) else None
            if g is not None:
                return ir.Member(base, name, g[1], loc)
            if name in ("isValid", "setValid", "setInvalid") or name in _SIZE_METHODS:
                return _Callable((base, name), loc, name)
            declared = bt.source_fields if isinstance(bt, ir.HeaderT) and bt.source_fields else bt.fields
            raise self.cx.err(loc, f"{bt} has no field '{name}'."
                           + did_you_mean(name, [f.name for f in declared]))
        if isinstance(bt, ir.StackT):
            if name in ("next", "last", "lastIndex") and self.cx.block_kind != "parser":
                raise self.cx.err(loc, f"'{name}' of a header stack can only be used in a parser")
            if name in ("next", "last"):
                return ir.StackProp(base, name, bt.elem, loc)
            if name == "lastIndex":
                return ir.StackProp(base, name, ir.BitT(32), loc)
            if name == "size":
                return ir.Const(bt.size, ir.IntT(), loc)
            if name in ("push_front", "pop_front"):
                return _Callable((base, name), loc, name)
            raise self.cx.err(loc, f"header stack has no member '{name}'."
                           + did_you_mean(name, ["next", "last", "lastIndex", "size",
                                                 "push_front", "pop_front"]))
        if isinstance(bt, ir.TableApplyT):
            if name in ("hit", "miss"):
                return ir.Member(base, name, ir.BoolT(), loc)
            if name == "action_run":
                return ir.Member(base, name, ir.ActionEnumT(bt.table_name), loc)
            raise self.cx.err(loc, f"table apply result has no member '{name}' "
                           "(expected hit, miss or action_run)")
        if isinstance(bt, (ir.ExternT, ir.ControlT, ir.ParserT)):
            return _Callable((base, name), loc, name)
        raise self.cx.err(loc, f"{bt} has no member '{name}'")

    def _e_index(self, t: ParseNode, loc: ir.Loc) -> ir.Expr:
        base = self.expr(t.children[0])
        idx = self.expr(t.children[1])
        if not isinstance(base.type, ir.StackT):
            raise self.cx.err(loc, f"cannot index a value of type {base.type} (only header "
                           "stacks can be indexed; use [hi:lo] for a bit slice)")
        if isinstance(idx, ir.Const):
            v = int(idx.value)
            if not 0 <= v < base.type.size:
                raise self.cx.err(idx.loc, f"index {v} out of range for a header stack of size "
                               f"{base.type.size}")
            idx = ir.Const(v, ir.BitT(32), idx.loc)
        elif not isinstance(idx.type, ir.BitT):
            raise self.cx.err(idx.loc, f"stack index must be bit<W> or int<W>, not {idx.type}")
        return ir.StackElem(base, idx, base.type.elem, loc)

    def _e_slice(self, t: ParseNode, loc: ir.Loc) -> ir.Expr:
        base = self.expr(t.children[0])
        hi = self.const_int(t.children[1], "slice bound")
        lo = self.const_int(t.children[2], "slice bound")
        if lo < 0 or hi < lo or hi >= ce.MAX_WIDTH:
            raise self.cx.err(loc, f"slice [{hi}:{lo}]: bounds must be in 0..{ce.MAX_WIDTH - 1} with the high "
                           "bound first")
        bt = base.type
        if ce.is_serializable_enum(bt):
            base = ir.Cast(bt.underlying, base, base.loc)  # type: ignore
            bt = base.type
        if isinstance(bt, ir.IntT) and isinstance(base, ir.Const):
            return ir.Const((int(base.value) >> lo) & ((1 << (hi - lo + 1)) - 1),
                            ir.BitT(hi - lo + 1), loc)
        if not isinstance(bt, ir.BitT):
            raise self.cx.err(loc, f"cannot slice a value of type {bt}")
        if not (0 <= lo <= hi < bt.width):
            raise self.cx.err(loc, f"slice [{hi}:{lo}] out of range for {bt}")
        if isinstance(base, ir.Const):
            return ir.Const((int(base.value) >> lo) & ((1 << (hi - lo + 1)) - 1),
                            ir.BitT(hi - lo + 1), loc)
        return ir.Slice(base, hi, lo, ir.BitT(hi - lo + 1), loc)

    def _e_call_member(self, t: ParseNode, loc: ir.Loc) -> ir.Expr | _Callable:
        call = self.calls.call(t.children[0], (), t.children[1], loc)
        return self.member(call, self.cx.name_of(t.children[2]), loc)

    # ------------------------------------------------------------------ l-values
    def check_lvalue(self, e: ir.Expr, what: str) -> None:
        """Raise unless ``e`` may be written."""
        x = e
        while True:
            if isinstance(x, ir.VarRef):
                d = x.decl
                if isinstance(d, ir.Param) and d.direction in ("in", None):
                    kind = "an 'in' parameter" if d.direction == "in" else \
                        "a directionless parameter (read-only)"
                    raise self.cx.err(e.loc, f"cannot {what} '{d.name}': it is {kind}")
                if isinstance(d, ir.VarDecl) and d.is_const:
                    raise self.cx.err(e.loc, f"cannot {what} constant '{d.name}'")
                return
            if isinstance(x, (ir.Member, ir.StackElem, ir.Slice)):
                if isinstance(x, ir.Member) and isinstance(x.base.type, ir.TableApplyT):
                    break
                x = x.base
                continue
            if isinstance(x, ir.StackProp) and x.prop in ("next", "last"):
                x = x.base
                continue
            break
        if isinstance(e, (ir.Const, ir.StringLit)):
            raise self.cx.err(e.loc, f"cannot {what} a literal or constant value")
        raise self.cx.err(e.loc, f"cannot {what} this expression: it is not an l-value")


def _leaves(e: ir.StructInit) -> list[tuple[str, ir.Expr]]:
    """Scalar leaves of a struct initializer whose nested struct fields are initializers
    too or struct-typed expressions (read field by field)."""
    out: list[tuple[str, ir.Expr]] = []
    for n, x in e.fields:
        if isinstance(x, ir.StructInit) and isinstance(x.type, ir.StructT):
            out += _leaves(x)
        elif isinstance(x.type, ir.StructT):
            out += _leaves(ir.StructInit(x.type, tuple(
                (f.name, ir.Member(x, f.name, f.type, x.loc)) for f in x.type.fields), x.loc))
        else:
            out.append((n, x))
    return out


def _declared_type_name(e: ir.Expr) -> str | None:
    """The ``type`` name the field, variable or parameter ``e`` reads was declared with
    (None if ``e`` reads none of those, or one of another type)."""
    if isinstance(e, ir.Member) and isinstance(e.base.type, (ir.HeaderT, ir.StructT, ir.HeaderUnionT)):
        return next((f.type_name for f in e.base.type.fields if f.name == e.name), None)
    if isinstance(e, ir.VarRef):
        return e.decl.type_name
    return None
