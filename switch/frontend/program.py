"""Top-level declarations and the ``main`` package instance: parse tree to ``ir.Program``.

Why: global declarations are processed in source order (P4 requires declaration before
use); parser and control declarations are kept as trees and specialised when they are
instantiated (see ``blocks.py``), starting from the six blocks given to ``V1Switch``.
"""

from __future__ import annotations

from typing import Any

from . import ir
from .annotations import Annotator
from .blocks import Blocks
from .calls import Calls
from .context import BuildContext
from .expressions import Exprs, children, names_extern
from .keysets import Keysets
from .parse import ParseResult
from .symbols import (BlockDecl, BlockTypeDecl, ConstSym, DuplicateError, ExternFnSym,
                      PackageDecl, Scope, decl_loc)
from .statements import Stmts
from .tables import BMV2_REJECTS
from .tree import ParseNode

V1MODEL_VERSIONS = (20180101, 20200408)
"""The first and the latest v1model version p4c accepts (``V1Model::versionInitial/Current``)."""
_HEADER_FIELD_TYPES = (ir.BitT, ir.BoolT, ir.VarBitT)


def _header_field_type(t: ir.Type) -> bool:
    return isinstance(t, _HEADER_FIELD_TYPES) or (isinstance(t, ir.EnumT) and t.underlying is not None)


def _flat_struct(t: ir.StructT) -> bool:
    """A struct that may be a header field: its leaves are fixed-width header field types."""
    return all((_header_field_type(f.type) and not isinstance(f.type, ir.VarBitT))
               or (isinstance(f.type, ir.StructT) and _flat_struct(f.type)) for f in t.fields)


def _flatten_fields(fs: tuple[ir.Field, ...]) -> tuple[ir.Field, ...]:
    """A header's declared fields with struct-typed ones replaced by their leaves, named
    as p4c's FlattenHeaders names them (``row.e`` -> ``_row_e0``, numbered by leaf)."""
    out: list[ir.Field] = []

    def walk(f: ir.Field, path: list[str]) -> None:
        if isinstance(f.type, ir.StructT):
            for g in f.type.fields:
                walk(g, path + [g.name])
            return
        name = f.name if len(path) == 1 else "_" + "_".join(path) + str(len(out))
        out.append(ir.Field(name, f.type, f.annotations))

    for f in fs:
        walk(f, [f.name])
    return tuple(out)


class ProgramBuilder:
    """Builds the program's top-level declarations in source order and composes the parts
    that build what is inside them (expressions, calls, annotations, statements, keysets,
    blocks and their tables), all sharing one :class:`BuildContext`."""

    def __init__(self, pr: ParseResult) -> None:
        self.cx = cx = BuildContext(pr.pp, pr.annotations)
        self.exprs = Exprs(cx)
        self.calls = Calls(cx, self.exprs)
        self.annotator = Annotator(cx, self.exprs)
        self.stmts = Stmts(cx, self.exprs, self.calls, self.annotator)
        self.keys = Keysets(cx, self.exprs)
        self.blocks = Blocks(cx, self.exprs, self.calls, self.stmts, self.keys, self.annotator)
        self.exprs.connect(self.calls, self.blocks)
        self.types: dict[str, ir.Type] = {}
        self.functions: dict[str, ir.Function] = {}
        self.consts: dict[str, ir.Expr] = {}
        self.block_decls: dict[str, BlockDecl] = {}
        self.main: ir.PackageInstance | None = None
        self.tree = pr.tree
        self.type_locs: dict[str, ir.Loc] = {}

    def declare_type(self, name: str, sym: object, loc: ir.Loc) -> None:
        if name == "main" and not isinstance(sym, PackageDecl):
            raise self.cx.err(loc, "'main' must be an instance of a package, not a type name")
        if name in self.cx.global_scope.values:
            raise self.cx.err(loc, f"re-declaration of '{name}' with a different kind: '{name}' is already "
                           "declared as a value")
        try:
            self.cx.global_scope.add_type(name, sym)
        except DuplicateError as e:
            prev = self.type_locs.get(name, decl_loc(e.previous))
            where = f" (previous declaration at {prev})" if prev != ir.NOLOC else ""
            raise self.cx.err(loc, f"duplicate declaration of type '{name}'{where}") from None
        self.type_locs[name] = loc
        if isinstance(sym, ir.Type):
            self.types[name] = sym

    # ------------------------------------------------------------------ entry
    def build(self) -> ir.Program:
        for d in self.tree.children:
            fn = getattr(self, "_d_" + d.data, None)
            if fn is None:
                raise self.cx.unsupported(self.cx.loc(d), f"declaration '{d.data}'")
            fn(d)
        parsers: dict[str, ir.Parser] = {}
        controls: dict[str, ir.Control] = {}
        if self.main is not None:
            self._check_table_names(self.main)
            for inst in self.main.args:
                if isinstance(inst.decl, ir.Parser):
                    parsers.setdefault(inst.decl.name, inst.decl)
                elif isinstance(inst.decl, ir.Control):
                    controls.setdefault(inst.decl.name, inst.decl)
        for name, bd in self.block_decls.items():
            if name in parsers or name in controls or bd.ctor_params:
                continue
            blk = self.blocks.specialise(bd, (), self._ext_name(bd), bd.loc)
            if isinstance(blk, ir.Parser):
                parsers[name] = blk
            else:
                controls[name] = blk
        return ir.Program(dict(self.types), tuple(self.cx.errors), tuple(self.cx.match_kinds),
                          parsers, controls, dict(self.cx.actions_global), dict(self.functions),
                          dict(self.cx.externs), dict(self.consts), self.main,
                          self.cx.pp.files(), list(self.cx.digest_calls), tuple(self.cx.warnings))

    def _check_table_names(self, main: ir.PackageInstance) -> None:
        """Every table the package instantiates has its own control-plane name (p4c: "Name
        't0' is used for multiple table objects in the P4Info message"); two instances of
        a control whose table has an absolute ``@name`` would share one."""
        seen: dict[str, ir.Table] = {}
        todo: list[object] = [inst.decl for inst in main.args]
        while todo:
            blk = todo.pop(0)
            if not isinstance(blk, (ir.Control, ir.Parser)):
                continue
            for x in blk.locals:
                if isinstance(x, ir.Instance):
                    todo.append(x.decl)
                elif isinstance(x, ir.Table):
                    first = seen.setdefault(x.cp_name, x)
                    if first is not x:
                        raise self.cx.err(x.loc, f"table '{x.name}': control-plane name '{x.cp_name}' is used for "
                                       f"more than one table (also the one at {first.loc.file}:{first.loc.line}); "
                                       "P4Info names must be unique")

    @staticmethod
    def _ext_name(bd: BlockDecl) -> str:
        a = bd.annotations.get("name")
        if a is not None and a.body and isinstance(a.body[0], str):
            return a.body[0].lstrip(".")
        return bd.name

    # ------------------------------------------------------------------ simple decls
    def _d_empty_decl(self, t: ParseNode) -> None:
        pass

    def _d_const_decl(self, t: ParseNode) -> None:
        if self.cx.name_of(t.children[2]) == "__v1model_version":
            self._check_v1model_version(t.children[3])
        sym = self.stmts.const_decl(t)
        self.consts[sym.name] = sym.value

    def _check_v1model_version(self, val_t: ParseNode) -> None:
        """v1model.p4's ``__v1model_version`` (``V1MODEL_VERSION``) must be one p4c knows."""
        v = self.exprs.expr(val_t)
        if not isinstance(v, ir.Const) or isinstance(v.value, bool) or int(v.value) < 0:
            raise self.cx.err(v.loc, f"V1MODEL_VERSION: expected the v1model version to be a non-negative number, "
                           f"not {v.value if isinstance(v, ir.Const) else 'a non-constant'}")
        if not V1MODEL_VERSIONS[0] <= int(v.value) <= V1MODEL_VERSIONS[1]:
            raise self.cx.err(v.loc, f"V1MODEL_VERSION {v.value}: unknown v1model version; the initial supported "
                           f"version is {V1MODEL_VERSIONS[0]}, the latest {V1MODEL_VERSIONS[1]}")

    def _fields(self, items: list[ParseNode], kind: str, tname: str) -> tuple[ir.Field, ...]:
        out: list[ir.Field] = []
        for f in items:
            annos_t, type_t, name_t = f.children
            fname = self.cx.name_of(name_t)
            if any(x.name == fname for x in out):
                raise self.cx.err(self.cx.loc(name_t), f"duplicate field '{fname}' in {kind} {tname}")
            ft = self.exprs.resolve_type(type_t)
            if kind == "header" and not (_header_field_type(ft) or (
                    isinstance(ft, ir.StructT) and _flat_struct(ft))):
                raise self.cx.err(self.cx.loc(type_t), f"field '{fname}' of header {tname} has type "
                               f"{ft}; header fields must be bit<W>, int<W>, varbit<W>, bool, "
                               "a serializable enum or a struct of such fields")
            if kind == "header_union" and not isinstance(ft, ir.HeaderT):
                raise self.cx.err(self.cx.loc(type_t), f"field '{fname}' of header_union {tname} "
                               f"must be a header, not {ft}")
            annos = self.annotator.annotations(annos_t)
            if kind == "header" and isinstance(ft, ir.VarBitT) and any(isinstance(x.type, ir.VarBitT) for x in out):
                raise self.cx.err(self.cx.loc(name_t), f"header {tname}: multiple varbit fields in a header")
            match = annos.get("match")
            if match is not None and not (len(match.body) == 1 and match.body[0] in self.cx.match_kinds):
                raise self.cx.err(self.cx.loc(name_t), f"field '{fname}' of {kind} {tname}: the value of @match must "
                               f"be a match_kind ({', '.join(self.cx.match_kinds)}), not '{match.text.strip()}'")
            out.append(ir.Field(fname, ft, annos, self.exprs.newtype_name(type_t)))
        return tuple(out)

    def _aggregate(self, t: ParseNode, kind: str) -> None:
        annos_t, name_t, *fields = t.children
        name = self.cx.name_of(name_t)
        annos = self.annotator.annotations(annos_t)
        fs = self._fields([f for f in fields if f is not None], kind, name)
        cls = {"header": ir.HeaderT, "struct": ir.StructT, "header_union": ir.HeaderUnionT}[kind]
        if kind == "header" and any(isinstance(f.type, ir.StructT) for f in fs):
            leaves = _flatten_fields(fs)
            self.declare_type(name, ir.HeaderT(name, leaves, annos, fs), self.cx.loc(name_t))
            return
        self.declare_type(name, cls(name, fs, annos), self.cx.loc(name_t))

    def _d_header_decl(self, t: ParseNode) -> None:
        self._aggregate(t, "header")

    def _d_struct_decl(self, t: ParseNode) -> None:
        self._aggregate(t, "struct")

    def _d_union_decl(self, t: ParseNode) -> None:
        self._aggregate(t, "header_union")

    def _d_enum_decl(self, t: ParseNode) -> None:
        annos_t, name_t, *members = t.children
        names = [self.cx.name_of(m) for m in members if m is not None]
        self._dup_check(names, t, "enum member")
        name = self.cx.name_of(name_t)
        self.declare_type(name, ir.EnumT(name, tuple(names)), self.cx.loc(name_t))

    def _dup_check(self, names: list[str], t: ParseNode, what: str) -> None:
        seen: set[str] = set()
        for n in names:
            if n in seen:
                raise self.cx.err(self.cx.loc(t), f"duplicate {what} '{n}'")
            seen.add(n)

    def _d_ser_enum_decl(self, t: ParseNode) -> None:
        annos_t, type_t, name_t, *members = t.children
        under = self.exprs.resolve_type(type_t)
        name = self.cx.name_of(name_t)
        if not isinstance(under, ir.BitT):
            raise self.cx.err(self.cx.loc(type_t), f"underlying type of enum {name} must be bit<W> "
                           f"or int<W>, not {under}")
        names: list[str] = []
        values: list[int] = []
        for m in members:
            if m is None:
                continue
            names.append(self.cx.name_of(m.children[0]))
            v = self.exprs.coerce(self.exprs.expr(m.children[1]), under, f"value of {name}.{names[-1]}")
            if not isinstance(v, ir.Const):
                raise self.cx.err(self.cx.loc(m), f"value of {name}.{names[-1]} must be a constant")
            values.append(int(v.value))
        self._dup_check(names, t, "enum member")
        self.declare_type(name, ir.EnumT(name, tuple(names), under, tuple(values)),
                          self.cx.loc(name_t))

    def _d_typedef_decl(self, t: ParseNode) -> None:
        annos_t, type_t, name_t = t.children
        self.annotator.annotations(annos_t)  # checked; a typedef keeps none
        self.declare_type(self.cx.name_of(name_t), self.exprs.resolve_type(type_t), self.cx.loc(name_t))

    def _d_newtype_decl(self, t: ParseNode) -> None:
        annos_t, type_t, name_t = t.children
        self.annotator.annotations(annos_t)  # checked (@p4runtime_translation); the type keeps none
        under = self.exprs.resolve_type(type_t)
        if not isinstance(under, (ir.BitT, ir.BoolT)):
            raise self.cx.err(self.cx.loc(type_t), f"type {self.cx.name_of(name_t)}: 'type' can only be applied to "
                           f"base types (bit<W>, int<W>, bool), not {under}")
        self.cx.newtypes[self.cx.name_of(name_t)] = under
        self.declare_type(self.cx.name_of(name_t), under, self.cx.loc(name_t))

    def _d_error_decl(self, t: ParseNode) -> None:
        for n in children(t):
            name = self.cx.name_of(n)
            if name in self.cx.errors:
                raise self.cx.err(self.cx.loc(n), f"duplicate error member '{name}'")
            self.cx.errors.append(name)

    def _d_match_kind_decl(self, t: ParseNode) -> None:
        for n in children(t):
            name = self.cx.name_of(n)
            if name in self.cx.match_kinds:
                raise self.cx.err(self.cx.loc(n), f"duplicate match_kind '{name}'")
            self.cx.match_kinds.append(name)

    # ------------------------------------------------------------------ externs
    def _with_typevars(self, names: list[str]) -> Scope:
        s = self.cx.global_scope.child()
        for n in names:
            s.types[n] = ir.TypeVarT(n)
        return s

    def _type_param_names(self, t: ParseNode | None) -> list[str]:
        names = [self.cx.name_of(c) for c in children(t)] if t is not None else []
        if t is not None and len(set(names)) != len(names):
            dup = next(n for i, n in enumerate(names) if n in names[:i])
            raise self.cx.err(self.cx.loc(t), f"duplicate type parameter '{dup}'")
        return names

    def _fn_proto(self, t: ParseNode, annos: ir.Annotations, outer_tv: list[str]) -> ir.MethodSig:
        rt_t, name_t, tp_t, params_t = t.children
        tps = self._type_param_names(tp_t)
        saved = self.cx.scope
        self.cx.scope = self._with_typevars(outer_tv + tps)
        try:
            rt = self.exprs.resolve_type(rt_t.children[0]) if rt_t.data == "type_or_void" else ir.VoidT()
            ps = self.blocks.params(params_t)
        finally:
            self.cx.scope = saved
        return ir.MethodSig(self.cx.name_of(name_t), ps, rt, tuple(tps), annos, self.cx.loc(name_t))

    def _d_extern_obj(self, t: ParseNode) -> None:
        annos_t, type_t, *methods = t.children
        if type_t.data == "named_type":
            name_tok, tps = type_t.children[0], []
        elif type_t.data == "spec_type":
            name_tok = type_t.children[0]
            tps = [str(c.children[0]) for c in children(type_t.children[1])]
        else:
            raise self.cx.err(self.cx.loc(type_t), "expected an extern type name")
        name = str(name_tok)
        loc = self.cx.loc(name_tok)
        decl = ir.ExternDecl(name, tuple(tps), (), (), False, self.annotator.annotations(annos_t), loc)
        self.declare_type(name, decl, loc)
        self.types.pop(name, None)
        sigs: list[ir.MethodSig] = []
        ctors: list[ir.MethodSig] = []
        for m in methods:
            if m is None:
                continue
            annos = self.annotator.annotations(m.children[0])
            if m.data == "ctor_proto":
                saved = self.cx.scope
                self.cx.scope = self._with_typevars(tps)
                try:
                    ps = self.blocks.params(m.children[2])
                finally:
                    self.cx.scope = saved
                ctors.append(ir.MethodSig(str(m.children[1]), ps, ir.VoidT(), (), annos,
                                          self.cx.loc(m.children[1])))
            elif m.data == "abstract_proto":
                raise self.cx.unsupported(self.cx.loc(m), "abstract extern methods")
            else:
                sig = self._fn_proto(m.children[1], annos, tps)
                if sig.name == name:
                    raise self.cx.err(sig.loc, f"extern {name}: invalid constructor; a constructor cannot have a "
                                   "return type")
                sigs.append(sig)
        for group in (ctors, sigs):
            for i, sig in enumerate(group):
                if any(o.name == sig.name and len(o.params) == len(sig.params) for o in group[:i]):
                    raise self.cx.err(sig.loc, f"extern {name}: duplicate declaration of '{sig.name}' with "
                                   f"{len(sig.params)} parameters")
                if any(names_extern(p.type, name) for p in sig.params) or names_extern(sig.return_type, name):
                    raise self.cx.err(sig.loc, f"extern {name}: self-referencing types are not supported "
                                   f"('{name}' within '{name}.{sig.name}')")
        decl.methods = tuple(sigs)
        decl.ctors = tuple(ctors)
        self.cx.externs[name] = decl

    def _d_extern_fn(self, t: ParseNode) -> None:
        annos_t, proto_t = t.children
        sig = self._fn_proto(proto_t, self.annotator.annotations(annos_t), [])
        existing = self.cx.global_scope.values.get(sig.name)
        if isinstance(existing, ExternFnSym):
            if any(len(m.params) == len(sig.params) for m in existing.decl.methods):
                raise self.cx.err(sig.loc, f"duplicate declaration of extern function "
                               f"'{sig.name}' with {len(sig.params)} parameters")
            existing.decl.methods = existing.decl.methods + (sig,)
            return
        decl = ir.ExternDecl(sig.name, (), (sig,), (), True, sig.annotations, sig.loc)
        self.cx.declare(sig.name, ExternFnSym(decl, sig.loc), sig.loc)
        self.cx.externs[sig.name] = decl

    # ------------------------------------------------------------------ blocks
    def _block_type(self, t: ParseNode, kind: str) -> None:
        annos_t, name_t, tp_t, params_t = t.children
        tps = self._type_param_names(tp_t)
        saved = self.cx.scope
        self.cx.scope = self._with_typevars(tps)
        try:
            ps = self.blocks.params(params_t)
        finally:
            self.cx.scope = saved
        name = self.cx.name_of(name_t)
        cls = PackageDecl if kind == "package" else None
        loc = self.cx.loc(name_t)
        sym: object = cls(name, tuple(tps), ps, loc) if cls else \
            BlockTypeDecl(kind, name, tuple(tps), ps, loc)
        self.declare_type(name, sym, loc)

    def _d_parser_type_decl(self, t: ParseNode) -> None:
        self._block_type(t, "parser")

    def _d_control_type_decl(self, t: ParseNode) -> None:
        self._block_type(t, "control")

    def _d_package_decl(self, t: ParseNode) -> None:
        self._block_type(t, "package")

    def _block_decl(self, t: ParseNode, kind: str) -> None:
        annos_t, name_t, tp_t, params_t, ctor_t = t.children[:5]
        name = self.cx.name_of(name_t)
        if tp_t is not None:
            raise self.cx.unsupported(self.cx.loc(tp_t), f"generic {kind} declarations")
        ps = self.blocks.params(params_t)
        cps = self.blocks.params(ctor_t.children[0]) if ctor_t is not None else ()
        for p in cps:
            if p.direction is not None:
                raise self.cx.err(p.loc, f"constructor parameter '{p.name}' must be directionless")
            if any(q.name == p.name for q in ps):
                raise self.cx.err(p.loc, f"{kind} {name}: constructor parameter '{p.name}' duplicates an apply "
                               "parameter")
        bd = BlockDecl(kind, name, t, self.annotator.annotations(annos_t), ps, cps, self.cx.loc(name_t))
        self.declare_type(name, bd, bd.loc)
        self.block_decls[name] = bd

    def _d_parser_decl(self, t: ParseNode) -> None:
        self._block_decl(t, "parser")

    def _d_control_decl(self, t: ParseNode) -> None:
        self._block_decl(t, "control")

    def _d_action_decl(self, t: ParseNode) -> None:
        act = self.blocks.action(t)
        self.cx.actions_global[act.name] = act

    def _d_function_decl(self, t: ParseNode) -> None:
        annos_t, rt_t, name_t, tp_t, params_t, body_t = t.children
        if tp_t is not None:
            raise self.cx.unsupported(self.cx.loc(tp_t), "generic functions")
        rt = self.exprs.resolve_type(rt_t.children[0]) if rt_t.data == "type_or_void" else ir.VoidT()
        name = self.cx.name_of(name_t)
        params = self.blocks.params(params_t)
        saved = (self.cx.scope, self.cx.block_kind, self.cx.return_type)
        self.cx.scope = self.cx.global_scope.child()
        self.cx.block_kind, self.cx.return_type = "function", rt
        try:
            for p in params:
                self.cx.declare(p.name, p, p.loc)
            body = self.stmts.block(body_t)
        finally:
            self.cx.scope, self.cx.block_kind, self.cx.return_type = saved
        fn = ir.Function(name, params, rt, body, self.cx.loc(name_t), self.annotator.annotations(annos_t))
        self.cx.declare(name, fn, fn.loc)
        self.functions[name] = fn

    # ------------------------------------------------------------------ instances
    def _d_instantiation(self, t: ParseNode) -> None:
        annos_t, type_t, args_t, name_t = t.children
        ty = self.exprs.resolve_type(type_t)
        name = self.cx.name_of(name_t)
        loc = self.cx.loc(name_t)
        if isinstance(ty, ir.PackageT):
            self._package(ty, args_t, name, loc)
            return
        if name == "main":
            raise self.cx.err(loc, f"'main' must be an instance of a package, not of {ty}")
        if isinstance(ty, (ir.ControlT, ir.ParserT)):
            kind = "control" if isinstance(ty, ir.ControlT) else "parser"
            raise self.cx.err(loc, f"{name}: a {kind} cannot be instantiated at the top level (only externs "
                           "and the package)")
        self.blocks.instantiation(t)

    def _package(self, ty: ir.PackageT, args_t: ParseNode | None, name: str, loc: ir.Loc) -> None:
        pkg = self.cx.global_scope.lookup_type(ty.name)
        assert isinstance(pkg, PackageDecl)
        args = [a for a in (children(args_t) if args_t is not None else [])]
        if len(args) != len(pkg.params):
            raise self.cx.err(loc, f"wrong number of arguments for package {ty.name}: expected "
                           f"{len(pkg.params)}, got {len(args)}")
        insts: list[ir.Instance] = []
        for p, a in zip(pkg.params, args):
            insts.append(self._package_arg(p, a))
        if self.main is not None:
            raise self.cx.err(loc, "only one package instance is supported")
        if ty.name == "V1Switch" and insts and insts[0].decl is not None and len(insts[0].decl.params) > 1:
            hp = insts[0].decl.params[1]
            if isinstance(hp.type, ir.HeaderT):
                self.cx.warn(hp.loc, f"the headers type of V1Switch is header {hp.type.name}, not a struct: "
                          f"{BMV2_REJECTS} (its headers type is a struct of headers, stacks and unions); innet "
                          "parses and deparses the header itself")
        self.main = ir.PackageInstance(name, ty.name, tuple(insts), loc)
        self.cx.declare(name, self.main, loc)

    def _package_arg(self, p: ir.Param, a: ParseNode) -> ir.Instance:
        loc = self.cx.loc(a)
        e = a.children[0] if a.data in ("arg", "named_arg") else a
        if a.data == "named_arg":
            e = a.children[1]
        if isinstance(e, ParseNode) and e.data == "ctor_call":
            tname = str(e.children[0])
            bd = self.cx.global_scope.lookup_type(tname)
            if not isinstance(bd, BlockDecl):
                raise self.cx.err(loc, f"'{tname}' is not a parser or control declaration")
            ctor = tuple(self.exprs.expr(x) for _, x in self.calls.arg_list(e.children[-1]))
            self._check_block_sig(p, bd, loc)
            path = self._ext_name(bd)
            blk = self.blocks.specialise(bd, ctor, path, loc)
            ity: ir.Type = ir.ParserT(bd.name) if bd.kind == "parser" else ir.ControlT(bd.name)
            return ir.Instance(bd.name, path, ity, blk, ctor, bd.annotations, loc)
        inst = self.exprs.expr(e)
        if not isinstance(inst, ir.InstanceRef) or inst.inst.decl is None:
            raise self.cx.err(loc, f"argument '{p.name}' of the package must be a parser or "
                           "control instance")
        return inst.inst

    def _check_block_sig(self, p: ir.Param, bd: BlockDecl, loc: ir.Loc) -> None:
        want_kind = "parser" if isinstance(p.type, ir.ParserT) else "control"
        if bd.kind != want_kind:
            raise self.cx.err(loc, f"package parameter '{p.name}' expects a {want_kind}, but "
                           f"{bd.name} is a {bd.kind}")
        tname = getattr(p.type, "name", "")
        td = self.cx.global_scope.lookup_type(tname)
        if isinstance(td, BlockTypeDecl):
            if len(td.params) != len(bd.params):
                raise self.cx.err(bd.loc, f"{bd.kind} {bd.name} has {len(bd.params)} parameters "
                               f"but package parameter '{p.name}' ({tname}) needs "
                               f"{len(td.params)}")
            for want, got in zip(td.params, bd.params):
                if want.direction != got.direction:
                    raise self.cx.err(got.loc, f"parameter '{got.name}' of {bd.name} must be "
                                   f"'{want.direction or 'directionless'}' to match {tname}")
                if not isinstance(want.type, ir.TypeVarT) and want.type != got.type:
                    raise self.cx.err(got.loc, f"parameter '{got.name}' of {bd.name} has type "
                                   f"{got.type}, but {tname} needs {want.type}")


def build_program(pr: ParseResult) -> ir.Program:
    """Type-check and lower a parse result to ``ir.Program``."""
    return ProgramBuilder(pr).build()


__all__ = ["build_program", "ProgramBuilder", "ConstSym", "Any"]
