"""Compiles an ``ir.Program`` (v1model) into Python functions, once per pipeline load.

The generated module holds one function per parser, control, action and P4 function;
all of them take the per-packet slot list ``S`` (see :mod:`.layout`). State objects
(registers, table caches and lookups, counters) are bound as module globals, so that the
per-packet code does no name resolution beyond a global load and does not allocate.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..frontend import ir
from . import guards, hashing
from .errors import UnsupportedError
from .externs import Counter, DigestMessage, Meter, Register
from .layout import Layout, nslots
from .profiles import ActionProfile
from .ranges import written_locals
from .stmtgen import StmtGen
from .tables import ActionInfo, KeyDef, KeySpec, Table

log = logging.getLogger("innet.switch.pipeline")

CORE_ERRORS = ("NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort",
               "ParserTimeout", "ParserInvalidArgument")
INLINE_STATE_LIMIT = 64
DUMP_ENV = "INNET_PIPELINE_DUMP"  # directory to write the generated source to (debugging)


class Exit(Exception):
    """``exit`` statement: ends the current top-level control."""


class ParserErr(Exception):
    """A parser error: ends parsing, sets ``standard_metadata.parser_error``."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code
        self.pos: int | None = None  # position at the error when raised inside a sub-parser


class AssertFail(Exception):
    """A failed ``assert``/``assume`` (or a runtime fault): the packet is dropped."""


def _shl(a: int, b: int, w: int, s: int) -> int:
    if b >= w:
        return 0
    v = (a << b) & ((1 << w) - 1)
    if s and v >> (w - 1):
        v -= 1 << w
    return v


def _div(a: int, b: int) -> int:
    return a // b if b else 0


def _mod(a: int, b: int) -> int:
    return a % b if b else 0


def _wrap(v: int, w: int, s: bool) -> int:
    v &= (1 << w) - 1
    if s and v >> (w - 1):
        v -= 1 << w
    return v


def _log_msg(msg: str, values: tuple[Any, ...]) -> None:
    if log.isEnabledFor(logging.DEBUG):
        parts = msg.split("{}")
        text = parts[0] + "".join(str(v) + p for v, p in zip(values, parts[1:]))
        log.debug("log_msg: %s", text)


@dataclass
class TableGlue:
    """Names under which a table's cache and lookup are bound in the generated module."""

    table: ir.Table
    cache: str
    lookup: str
    fns: list[str] = field(default_factory=list)
    state: Table | None = None


@dataclass
class Compiled:
    """Everything the architecture needs to run packets through the compiled program."""

    template: list[Any]
    parser: Callable[..., int]
    verify: Callable[..., None]
    ingress: Callable[..., None]
    egress: Callable[..., None]
    compute: Callable[..., None]
    deparser: Callable[..., None]
    sm: dict[str, int]
    slots: dict[str, int]
    header_slots: tuple[int, int]  # slot range of the headers struct
    meta_slots: tuple[int, int]
    tables: dict[str, Table]
    registers: dict[str, Register]
    counters: dict[str, Counter]
    direct_counters: dict[str, Table]
    meters: dict[str, Meter]
    direct_meters: dict[str, tuple[Meter, Table]]
    profiles: dict[str, ActionProfile]
    digests: list[DigestMessage]
    rng: random.Random
    source: str


class ProgramCompiler:
    """Generates and loads the Python code of one program."""

    def __init__(self, program: ir.Program, seed: int | None = None,
                 clock: Callable[[], int] = time.monotonic_ns) -> None:
        if program.main is None or program.main.type_name != "V1Switch":
            raise UnsupportedError("a program whose main package is not V1Switch",
                                   program.main.loc if program.main else None)
        self.program = program
        self.layout = Layout()
        self.ns: dict[str, Any] = {}
        self._refs: dict[int, str] = {}
        self._nref = 0
        self.sources: list[str] = []
        self._fns: dict[int, str] = {}
        self._ret: dict[int, int] = {}
        self.tables: dict[int, TableGlue] = {}
        self.states: dict[int, Any] = {}
        self.registers: dict[str, Register] = {}
        self.counters: dict[str, Counter] = {}
        self.meters: dict[str, Meter] = {}
        self.direct_counters: dict[str, Table] = {}
        self.direct_meters: dict[str, tuple[Meter, Table]] = {}
        self.profiles: dict[str, ActionProfile] = {}
        self.digests: list[DigestMessage] = []
        self.rng = random.Random(seed)
        self.clock = clock
        user = [e for e in program.errors if e not in CORE_ERRORS]
        self.errors = {n: i for i, n in enumerate(CORE_ERRORS + tuple(user))}
        self._sm_fields: dict[str, int] = {}
        self._slot_now: int | None = None

    # ------------------------------------------------------------------ naming
    def ref(self, obj: Any, hint: str) -> str:
        """A module-global name bound to ``obj``."""
        key = id(obj)
        if not isinstance(obj, tuple) and key in self._refs:
            return self._refs[key]
        self._nref += 1
        name = f"{hint}{self._nref}"
        self.ns[name] = obj
        if not isinstance(obj, tuple):
            self._refs[key] = name
        return name

    def error_number(self, name: str, node: Any = None) -> int:
        n = self.errors.get(name)
        if n is None:
            raise UnsupportedError(f"unknown error member {name}", getattr(node, "loc", None))
        return n

    def sm_slot(self, name: str) -> int:
        return self._sm_fields[name]

    # ------------------------------------------------------------------ layout
    def _setup_layout(self) -> None:
        assert self.program.main is not None
        blocks = [a.decl for a in self.program.main.args]
        if len(blocks) != 6 or any(b is None for b in blocks):
            raise UnsupportedError("V1Switch needs six parser/control instances", self.program.main.loc)
        self.blocks = blocks
        parser = blocks[0]
        assert isinstance(parser, ir.Parser)
        ptypes = [p.type for p in parser.params]
        if len(ptypes) != 4:
            raise UnsupportedError("a v1model parser must have 4 parameters", parser.loc)
        H, M, SM = ptypes[1], ptypes[2], ptypes[3]
        L = self.layout
        self.h_base = L.alloc(H, "hdr")
        self.m_base = L.alloc(M, "meta")
        self.sm_base = L.alloc(SM, "standard_metadata")
        self.H, self.M, self.SM = H, M, SM
        assert isinstance(SM, ir.StructT)
        off = self.sm_base
        for f in SM.fields:
            self._sm_fields[f.name] = off
            off += nslots(f.type)
        bases = {id(H): self.h_base, id(M): self.m_base, id(SM): self.sm_base}
        by_type = {H: self.h_base, M: self.m_base, SM: self.sm_base}
        for b in blocks:
            assert b is not None
            for p in b.params:
                base = by_type.get(p.type)
                if base is not None:
                    L.bind(p.uid, base)
        del bases
        self.slot_clone = L.alloc_scalar("clone", None)
        self.slot_resubmit = L.alloc_scalar("resubmit", None)
        self.slot_recirculate = L.alloc_scalar("recirculate", None)
        self.slot_truncate = L.alloc_scalar("truncate", 0)
        self.slot_payload = L.alloc_scalar("payload", b"")
        self.slot_entry = L.alloc_scalar("entry", None)
        self.slot_digests = L.alloc_scalar("digests", None)

    def now_slot(self) -> int:
        """The slot holding this pass's clock reading (None until the first hit of an
        ageing entry); allocated only for programs with ``support_timeout`` tables."""
        if self._slot_now is None:
            self._slot_now = self.layout.alloc_scalar("now", None)
        return self._slot_now

    def field_list(self, index: int) -> tuple[int, ...]:
        """Slots of the user metadata fields annotated ``@field_list(.., index, ..)``."""
        out: list[int] = []

        def walk(t: ir.Type, base: int) -> None:
            if not isinstance(t, ir.StructT):
                return
            off = base
            for f in t.fields:
                ann = f.annotations.get("field_list")
                if ann is not None and index in [v for v in ann.body if isinstance(v, int)]:
                    out.extend(range(off, off + nslots(f.type)))
                elif isinstance(f.type, ir.StructT):
                    walk(f.type, off)
                off += nslots(f.type)

        walk(self.M, self.m_base)
        return tuple(out)

    # ------------------------------------------------------------------ functions
    def _gen(self, kind: str, locals_: dict[int, str] | None = None) -> StmtGen:
        g = StmtGen(self, locals_)
        g.kind = kind
        return g

    def _define(self, header: str, g: StmtGen) -> None:
        if not g.lines:
            g.emit("pass")
        self.sources.append(header + "\n" + "\n".join(guards.hoist(g.lines)) + "\n")

    def action_fn(self, a: ir.Action) -> str:
        name = self._fns.get(id(a))
        if name is not None:
            return name
        name = f"A{len(self._fns)}_{_ident(a.name)}"
        self._fns[id(a)] = name
        data = {p.uid: f"d{p.uid}" for p in a.params if p.direction is None}
        g = self._gen("action", data)
        g.written = written_locals(a.body)
        g.block(a.body)
        self._define(f"def {name}(S{''.join(', ' + n for n in data.values())}):", g)
        return name

    def function_fn(self, f: ir.Function) -> str:
        name = self._fns.get(id(f))
        if name is not None:
            return name
        name = f"F{len(self._fns)}_{_ident(f.name)}"
        self._fns[id(f)] = name
        g = self._gen("function")
        g.func = f
        g.written = written_locals(f.body)
        g.block(f.body)
        self._define(f"def {name}(S):", g)
        return name

    def function_ret(self, f: ir.Function) -> int:
        """Slot base where function ``f`` leaves a struct/header result (P4 has no recursion,
        so one region per function suffices; callers copy it out right after the call)."""
        base = self._ret.get(id(f))
        if base is None:
            base = self._ret[id(f)] = self.layout.alloc(f.return_type, f"{f.name}.return")
        return base

    def control_fn(self, c: ir.Control) -> str:
        name = self._fns.get(id(c))
        if name is not None:
            return name
        name = f"C{len(self._fns)}_{_ident(c.name)}"
        self._fns[id(c)] = name
        g = self._gen("control")
        g.written = written_locals(c.locals, c.body)
        for loc in c.locals:
            if isinstance(loc, ir.VarDeclStmt):
                g.s_VarDeclStmt(loc, shared=True)
            elif isinstance(loc, ir.Instance) and loc.decl is None:
                self.instance_state(loc)
        g.block(c.body)
        self._define(f"def {name}(S):", g)
        return name

    def deparser_fn(self, c: ir.Control) -> str:
        name = f"D_{_ident(c.name)}"
        g = self._gen("deparser")
        for loc in c.locals:
            if isinstance(loc, ir.VarDeclStmt):
                g.stmt(loc)
        g.block(c.body)
        self._define(f"def {name}(S, out):", g)
        return name

    # ------------------------------------------------------------------ state objects
    def instance_state(self, inst: ir.Instance) -> Any:
        st = self.states.get(id(inst))
        if st is not None:
            return st
        t = inst.type
        kind = t.name if isinstance(t, ir.ExternT) else ""
        args = inst.ctor_args

        def const(i: int) -> int:
            a = args[i]
            if not isinstance(a, ir.Const):
                raise UnsupportedError(f"non-constant constructor argument of {inst.name}", inst.loc)
            return int(a.value)

        def enum(i: int) -> str:
            a = args[i]
            return a.member if isinstance(a, ir.EnumMember) else "packets"

        if kind == "register":
            assert isinstance(t, ir.ExternT)
            vt = t.type_args[0] if t.type_args else ir.BitT(32)
            if isinstance(vt, ir.BoolT):
                vt = ir.BitT(1)
            if not isinstance(vt, ir.BitT):
                raise UnsupportedError(f"register of {vt} (only bit<W>/int<W> values)", inst.loc)
            st = Register(inst.cp_name, const(0), vt.width, vt.signed)
            self.registers[inst.cp_name] = st
        elif kind == "counter":
            st = Counter(inst.cp_name, const(0), enum(1))
            self.counters[inst.cp_name] = st
        elif kind == "meter":
            st = Meter(inst.cp_name, const(0), enum(1))
            self.meters[inst.cp_name] = st
        elif kind == "direct_counter":
            st = Counter(inst.cp_name, 0, enum(0))
        elif kind == "direct_meter":
            st = Meter(inst.cp_name, 0, enum(0))
        elif kind in ("action_profile", "action_selector"):
            return self.profile_state(inst)
        else:
            raise UnsupportedError(f"extern object {kind or t}", inst.loc)
        self.states[id(inst)] = st
        return st

    def profile_state(self, inst: ir.Instance) -> ActionProfile:
        """The (shared) state of an ``action_profile``/``action_selector`` instance."""
        st = self.states.get(id(inst))
        if st is not None:
            return st  # type: ignore[no-any-return]
        assert isinstance(inst.type, ir.ExternT)
        selector = inst.type.name == "action_selector"
        args = inst.ctor_args
        size_arg = args[1 if selector else 0] if len(args) > (1 if selector else 0) else None
        if not isinstance(size_arg, ir.Const):
            raise UnsupportedError(f"size of {inst.type.name} {inst.name} is not a constant", inst.loc)
        hash_name = None
        if selector:
            algo = args[0]
            if not isinstance(algo, ir.EnumMember):
                raise UnsupportedError(f"hash algorithm of action_selector {inst.name} is not a HashAlgorithm member",
                                       inst.loc)
            hash_name = algo.member
            if hash_name not in hashing.ALGORITHMS:
                raise UnsupportedError(f"action_selector {inst.name}: hash algorithm {hash_name}", inst.loc)
        st = ActionProfile(inst.cp_name, with_selector=selector, size=int(size_arg.value), hash_name=hash_name,
                           hash_fn=hashing.ALGORITHMS[hash_name] if hash_name else None)
        self.states[id(inst)] = st
        self.profiles[inst.cp_name] = st
        return st

    def table_info(self, t: ir.Table) -> TableGlue:
        glue = self.tables.get(id(t))
        if glue is not None:
            return glue
        impl = t.implementation
        selector = impl is not None and isinstance(impl.type, ir.ExternT) and impl.type.name == "action_selector"
        for k in t.keys:
            if k.match_kind == "selector" and selector:
                continue
            if k.match_kind == "selector":
                raise UnsupportedError(f"table {t.name}: a 'selector' key needs implementation = action_selector(...)",
                                       k.loc)
            if k.match_kind not in ("exact", "lpm", "ternary", "range", "optional"):
                raise UnsupportedError(f"table {t.name}: match kind {k.match_kind}", k.loc)
        if impl is not None:
            if t.const_entries:
                raise UnsupportedError(f"table {t.name}: const entries in a table with an action profile", t.loc)
            self.profile_state(impl)
        n = len(self.tables)
        glue = TableGlue(t, f"T{n}_cache", f"T{n}_lookup")
        self.tables[id(t)] = glue
        for r in _action_refs(t):
            fn = self.action_fn(r.action)
            dirs = [p for p in r.action.params if p.direction is not None]
            if dirs:
                fn = self._wrapper(r, fn)
            glue.fns.append(fn)
        if t.direct_counter is not None:
            self.instance_state(t.direct_counter)
        if t.direct_meter is not None:
            self.instance_state(t.direct_meter)
        return glue

    def _wrapper(self, r: ir.ActionRef, fn: str) -> str:
        a = r.action
        name = f"W{len(self.sources)}_{_ident(a.name)}"
        g = self._gen("action")
        dparams = [p for p in a.params if p.direction is None]
        nd = len(r.args)
        args = tuple(ir.Arg(x, p.direction, p) for x, p in zip(r.args, a.params))
        data_names = [f"d{p.uid}" for p in dparams]
        g.locals.update({p.uid: f"d{p.uid}" for p in dparams})
        dirs = a.params[: len(a.params) - len(dparams)]
        if nd < len(dirs):
            raise UnsupportedError(f"action {a.name}: directional parameters without arguments", r.loc)
        _, outs = g.bind_args(dirs, args[: len(dirs)], r)
        g.emit(f"{fn}(S{''.join(', ' + d for d in data_names)})")
        g.copy_out(outs)
        self._define(f"def {name}(S{''.join(', ' + d for d in data_names)}):", g)
        return name

    def _build_table(self, glue: TableGlue) -> Table:
        t = glue.table
        fns = [self.ns[f] for f in glue.fns]
        actions = []
        for i, (r, fn) in enumerate(zip(_action_refs(t), fns)):
            params = tuple((p.name, _width(p.type)) for p in r.action.params if p.direction is None)
            actions.append(ActionInfo(r.action.cp_name, fn, params, i))
        keys = [KeyDef(k.name, k.match_kind, _width(k.expr.type)) for k in t.keys if k.match_kind != "selector"]
        sel_widths = tuple(_width(k.expr.type) for k in t.keys if k.match_kind == "selector")
        profile = self.profile_state(t.implementation) if t.implementation is not None else None
        d = t.default_action
        default = (d.action.cp_name, _data_args(d))
        meter_factory = None
        if t.direct_meter is not None:
            from .externs import MeterCell

            meter_factory = MeterCell
        table = Table(t.cp_name, keys, actions, default, t.default_is_const, t.size, meter_factory,
                      profile, sel_widths, self.clock if t.idle_timeout else None)
        if t.const_entries:
            entries = []
            for ce in t.const_entries:
                specs = [_keyspec(x, k) for x, k in zip(ce.keys, keys)]
                entries.append((specs, ce.action.action.cp_name, _data_args(ce.action), ce.priority))
            table.add_const_entries(entries)
        return table

    # ------------------------------------------------------------------ parser
    def parser_fn(self, p: ir.Parser) -> str:
        name = f"P_{_ident(p.name)}"
        g = self._gen("parser")
        g.in_parser = True
        g.ind = 2
        self._parser_body(g, p)
        body = "\n".join(g.lines)
        pe = self.sm_slot("parser_error")
        self.sources.append(
            f"def {name}(S, data):\n    L = len(data)\n    pos = 0\n    try:\n{body or '        pass'}\n"
            f"    except _PErr as _e:\n        S[{pe}] = _e.code\n"
            f"        if _e.pos is not None: pos = _e.pos\n    return pos\n")
        return name

    def _parser_body(self, g: StmtGen, p: ir.Parser) -> None:
        for loc in p.locals:
            if isinstance(loc, ir.VarDeclStmt):
                g.stmt(loc)
            elif not (isinstance(loc, ir.Instance) and isinstance(loc.decl, ir.Parser)):
                raise UnsupportedError(f"parser local {getattr(loc, 'name', loc)} (value sets, extern objects)",
                                       getattr(loc, "loc", None))
        if "start" not in p.states:
            raise UnsupportedError(f"parser {p.name} has no start state", p.loc)
        cyclic = _has_cycle(p.states)
        if not cyclic and _tree_size(p.states, "start") <= INLINE_STATE_LIMIT:
            self._inline_state(g, p.states, "start")
        else:
            ids = {n: i for i, n in enumerate(p.states)}
            g.emit(f"st = {ids['start']}")
            g.emit("while True:")
            g.ind += 1
            first = True
            for n, s in p.states.items():
                g.emit(f"{'if' if first else 'elif'} st == {ids[n]}:")
                first = False
                g.ind += 1
                for x in s.body:
                    g.stmt(x)
                self._transition(g, s.transition, lambda tgt: g.emit(
                    "break" if tgt in ("accept", "reject") else f"st = {ids[tgt]}"))
                g.ind -= 1
            g.ind -= 1

    def subparser_fn(self, p: ir.Parser, bindings: dict[int, int]) -> str:
        """A sub-parser compiled for one call site: its parameters alias the arguments'
        slots (p4c inlines sub-parsers); returns the new position, errors carry ``pos``."""
        name = f"SP{len(self.sources)}_{_ident(p.name)}"
        saved = {uid: self.layout.by_uid.get(uid) for uid in bindings}
        self.layout.by_uid.update(bindings)
        try:
            g = self._gen("parser")
            g.in_parser = True
            g.ind = 2
            self._parser_body(g, p)
        finally:
            for uid, base in saved.items():
                if base is None:
                    self.layout.by_uid.pop(uid, None)
                else:
                    self.layout.by_uid[uid] = base
        body = "\n".join(g.lines)
        self.sources.append(f"def {name}(S, data, pos, L):\n    try:\n{body or '        pass'}\n"
                            f"    except _PErr as _e:\n        if _e.pos is None: _e.pos = pos\n        raise\n"
                            f"    return pos\n")
        return name

    def _inline_state(self, g: StmtGen, states: dict[str, ir.ParserState], name: str) -> None:
        if name in ("accept", "reject"):
            g.emit("pass")
            return
        s = states.get(name)
        if s is None:
            raise UnsupportedError(f"transition to unknown state {name}")
        for x in s.body:
            g.stmt(x)
        self._transition(g, s.transition, lambda tgt: self._inline_state(g, states, tgt))

    def _transition(self, g: StmtGen, tr: ir.Goto | ir.Select, go: Callable[[str], None]) -> None:
        if isinstance(tr, ir.Goto):
            go(tr.state)
            return
        keys = [g.simple(g.expr(k)) for k in tr.keys]
        first = True
        for case in tr.cases:
            conds = []
            for kx, ks, key in zip(keys, case.keys, tr.keys):
                c = self._keyset(g, kx, ks)
                if c is not None:
                    conds.append(c)
            cond = " and ".join(conds) if conds else "True"
            g.emit(f"{'if' if first else 'elif'} {cond}:")
            first = False
            g.ind += 1
            go(case.state)
            g.ind -= 1
            if cond == "True":
                return
        if first:
            go("accept")
            return
        g.emit("else:")
        g.ind += 1
        go("accept")  # BMv2: no match and no default ends parsing without an error
        g.ind -= 1

    def _keyset(self, g: StmtGen, kx: str, ks: ir.Expr) -> str | None:
        if isinstance(ks, ir.DefaultKey):
            return None
        if isinstance(ks, ir.Mask):
            m = g.expr(ks.mask)
            return f"({kx} & {m}) == ({g.expr(ks.value)} & {m})"
        if isinstance(ks, ir.Range):
            return f"{g.expr(ks.lo)} <= {kx} <= {g.expr(ks.hi)}"
        if isinstance(ks, ir.ListExpr):
            raise UnsupportedError("a tuple keyset inside a select case", ks.loc)
        return f"{kx} == {g.expr(ks)}"

    # ------------------------------------------------------------------ build
    def compile(self) -> Compiled:
        self._setup_layout()
        P, VC, IG, EG, CC, DP = self.blocks
        assert isinstance(P, ir.Parser)
        for b in (VC, IG, EG, CC, DP):
            if not isinstance(b, ir.Control):
                raise UnsupportedError("V1Switch arguments 2..6 must be controls", self.program.main.loc)  # type: ignore[union-attr]
        names = [self.parser_fn(P), self.control_fn(VC), self.control_fn(IG),  # type: ignore[arg-type]
                 self.control_fn(EG), self.control_fn(CC), self.deparser_fn(DP)]  # type: ignore[arg-type]
        self.ns.update(_HELPERS)
        self.ns["_rng"] = self.rng
        self.ns["_digest"] = self._digest_fn()
        self.ns["_stamp"] = self._stamp_fn()
        source = "\n".join(self.sources)
        code = compile(source, self._dump(source), "exec")
        exec(code, self.ns)  # noqa: S102 - our own generated code
        tables: dict[str, Table] = {}
        for glue in self.tables.values():
            table = self._build_table(glue)
            glue.state = table
            self.ns[glue.cache] = table.cache
            self.ns[glue.lookup] = table.lookup
            tables[table.name] = table
            t = glue.table
            if t.direct_counter is not None:
                self.direct_counters[t.direct_counter.cp_name] = table
            if t.direct_meter is not None:
                m = self.states[id(t.direct_meter)]
                self.direct_meters[t.direct_meter.cp_name] = (m, table)
        return Compiled(
            template=list(self.layout.template),
            parser=self.ns[names[0]], verify=self.ns[names[1]], ingress=self.ns[names[2]],
            egress=self.ns[names[3]], compute=self.ns[names[4]], deparser=self.ns[names[5]],
            sm=dict(self._sm_fields),
            slots={"clone": self.slot_clone, "resubmit": self.slot_resubmit,
                   "recirculate": self.slot_recirculate, "truncate": self.slot_truncate,
                   "payload": self.slot_payload, "entry": self.slot_entry, "digests": self.slot_digests},
            header_slots=(self.h_base, self.h_base + nslots(self.H)),
            meta_slots=(self.m_base, self.m_base + nslots(self.M)),
            tables=tables, registers=self.registers, counters=self.counters,
            direct_counters=self.direct_counters, meters=self.meters, direct_meters=self.direct_meters,
            profiles=self.profiles, digests=self.digests, rng=self.rng, source=source,
        )

    def _dump(self, source: str) -> str:
        """The generated module's file name. With ``INNET_PIPELINE_DUMP=<dir>`` in the
        environment the source is written to ``<dir>/<program>-<hash>.py`` and compiled
        under that name, so tracebacks, cProfile and line profilers show its lines."""
        out = os.environ.get(DUMP_ENV)
        if not out:
            return "<innet-pipeline>"
        files = self.program.source_files
        stem = _ident(os.path.splitext(os.path.basename(files[0]))[0]) if files else "program"
        digest = hashlib.sha1(source.encode()).hexdigest()[:10]
        path = os.path.abspath(os.path.join(out, f"{stem}-{digest}.py"))
        os.makedirs(out, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        log.info("generated pipeline source written to %s", path)
        return path

    def _stamp_fn(self) -> Callable[[list[Any]], int] | None:
        """``_stamp(S)``: reads the clock once per pass, at the first hit of an entry of a
        ``support_timeout`` table, and keeps it in the pass's ``now`` slot for later hits
        (BMv2 stamps entries with the packet's time). Other tables never call it."""
        slot, clock = self._slot_now, self.clock
        if slot is None:
            return None

        def stamp(S: list[Any]) -> int:
            now = S[slot] = clock()
            return now

        return stamp

    def _digest_fn(self) -> Callable[..., None]:
        slot = self.slot_digests

        def digest(S: list[Any], name: str, receiver: int, names: tuple[str, ...], values: tuple[int, ...]) -> None:
            msg = DigestMessage(name, receiver, dict(zip(names, values)))
            if S[slot] is None:
                S[slot] = [msg]
            else:
                S[slot].append(msg)

        return digest


_HELPERS: dict[str, Any] = {
    "_shl": _shl, "_div": _div, "_mod": _mod, "_wrap": _wrap, "_log_msg": _log_msg,
    "_csum16_int": hashing.csum16_int, "_crc16": hashing.crc16, "_crc32": hashing.crc32,
    "_csum16": hashing.csum16, "_xor16": hashing.xor16, "_identity": hashing.identity,
    "_hash_result": hashing.hash_result, "_Exit": Exit, "_PErr": ParserErr, "_AssertFail": AssertFail,
}


def _action_refs(t: ir.Table) -> tuple[ir.ActionRef, ...]:
    """The table's actions, plus the default action when it is not listed (an implicit
    ``NoAction`` default, as p4c adds it)."""
    if any(r.action is t.default_action.action for r in t.actions):
        return t.actions
    return t.actions + (ir.ActionRef(t.default_action.action, (), loc=t.loc),)


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _width(t: ir.Type) -> int:
    if isinstance(t, ir.BitT):
        return t.width
    if isinstance(t, ir.BoolT):
        return 1
    if isinstance(t, ir.EnumT) and t.underlying is not None:
        return t.underlying.width
    raise UnsupportedError(f"table key or action parameter of type {t}")


def _const(e: ir.Expr) -> int:
    if isinstance(e, ir.Const):
        v = int(e.value)
        if isinstance(e.type, ir.BitT) and e.type.signed:
            v &= (1 << e.type.width) - 1
        return v
    if isinstance(e, ir.EnumMember) and e.enum.values is not None:
        return e.enum.value_of(e.member) & ((1 << e.enum.underlying.width) - 1)  # type: ignore[union-attr]
    raise UnsupportedError(f"non-constant value {type(e).__name__} in a table entry", e.loc)


def _data_args(r: ir.ActionRef) -> tuple[int, ...]:
    a = r.action
    ndir = len([p for p in a.params if p.direction is not None])
    return tuple(_const(x) for x in r.args[ndir:])


def _keyspec(x: ir.Expr, k: KeyDef) -> KeySpec:
    full = (1 << k.width) - 1
    if isinstance(x, ir.DefaultKey):
        if k.kind == "range":
            return KeySpec(0, hi=full)
        if k.kind == "lpm":
            return KeySpec(0, prefix_len=0)
        if k.kind == "exact":
            raise UnsupportedError("'_' / default for an exact key", x.loc)
        return KeySpec(0, mask=0)
    if isinstance(x, ir.Mask):
        v, m = _const(x.value), _const(x.mask)
        if k.kind == "lpm":
            plen = bin(m).count("1")
            return KeySpec(v & m, prefix_len=plen)
        return KeySpec(v & m, mask=m)
    if isinstance(x, ir.Range):
        return KeySpec(_const(x.lo), hi=_const(x.hi))
    v = _const(x)
    if k.kind == "range":
        return KeySpec(v, hi=v)
    return KeySpec(v)


def _has_cycle(states: dict[str, ir.ParserState]) -> bool:
    color: dict[str, int] = {}

    def succ(n: str) -> list[str]:
        tr = states[n].transition
        return [tr.state] if isinstance(tr, ir.Goto) else [c.state for c in tr.cases]

    def visit(n: str) -> bool:
        if n not in states:
            return False
        c = color.get(n, 0)
        if c == 1:
            return True
        if c == 2:
            return False
        color[n] = 1
        if any(visit(m) for m in succ(n)):
            return True
        color[n] = 2
        return False

    return visit("start")


def _tree_size(states: dict[str, ir.ParserState], n: str) -> int:
    if n not in states:
        return 0
    tr = states[n].transition
    nxt = [tr.state] if isinstance(tr, ir.Goto) else [c.state for c in tr.cases] + ["accept"]
    return 1 + sum(_tree_size(states, m) for m in nxt)
