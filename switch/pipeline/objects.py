"""The program's control-plane objects as the compiler meets them: extern instances
(``register``, ``counter``, ``meter``, ``direct_counter``/``direct_meter``,
``action_profile``/``action_selector``) and tables, with the glue that binds each table's
result cache and lookup into the generated module under fixed names.

Extern and profile state is created while the code is generated (its methods are bound
as globals); tables are built after the module is loaded, since their entries point to
the compiled action functions (``build_tables``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..frontend import ir
from ..lowering.errors import Unsupported
from ..lowering.instances import known_instance
from ..lowering.types import ERROR_WIDTH
from . import hashing
from .errors import UnsupportedError
from .externs import Counter, Meter, Register
from .profiles import ActionProfile
from .tables import ActionInfo, KeyDef, KeySpec, Table

if TYPE_CHECKING:
    from .context import CompileContext


@dataclass
class TableGlue:
    """Names under which a table's cache and lookup are bound in the generated module."""

    table: ir.Table
    cache: str
    lookup: str
    fns: list[str] = field(default_factory=list)
    state: Table | None = None


class ProgramObjects:
    """Extern instances and tables of one program, by identity and by control-plane name."""

    def __init__(self, prog: "CompileContext") -> None:
        self.prog = prog
        self.tables: dict[int, TableGlue] = {}
        self.states: dict[int, Any] = {}
        self.registers: dict[str, Register] = {}
        self.counters: dict[str, Counter] = {}
        self.meters: dict[str, Meter] = {}
        self.direct_counters: dict[str, Table] = {}
        self.direct_meters: dict[str, tuple[Meter, Table]] = {}
        self.profiles: dict[str, ActionProfile] = {}

    def instance_state(self, inst: ir.Instance) -> Any:
        """The (shared) state object of an extern instance, created at its first use."""
        st = self.states.get(id(inst))
        if st is not None:
            return st
        x = known_instance(inst, Unsupported(UnsupportedError), lambda kind: f"extern object {kind}")
        if x.kind == "register":
            assert x.value is not None
            st = Register(x.name, x.size, x.value.width, x.value.signed, cells=self.prog.state_cells)
            self.registers[x.name] = st
        elif x.kind == "counter":
            st = Counter(x.name, x.size, x.unit)
            self.counters[x.name] = st
        elif x.kind == "meter":
            st = Meter(x.name, x.size, x.unit)
            self.meters[x.name] = st
        elif x.kind == "direct_counter":
            st = Counter(x.name, 0, x.unit)
        elif x.kind == "direct_meter":
            st = Meter(x.name, 0, x.unit)
        else:
            return self.profile_state(inst)
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
        """The glue of table ``t``: its checks, action functions and generated names."""
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
            fn = self.prog.action_fn(r.action)
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
        name = self.prog.py_name(f"W{len(self.prog.sources)}", a.name)
        g = self.prog.codegen("action")
        dparams = [p for p in a.params if p.direction is None]
        nd = len(r.args)
        args = tuple(ir.Arg(x, p.direction, p) for x, p in zip(r.args, a.params))
        data_names = [f"d{p.uid}" for p in dparams]
        g.ctx.locals.update({p.uid: f"d{p.uid}" for p in dparams})
        dirs = a.params[: len(a.params) - len(dparams)]
        if nd < len(dirs):
            raise UnsupportedError(f"action {a.name}: directional parameters without arguments", r.loc)
        _, outs = g.bind_args(dirs, args[: len(dirs)], r)
        g.emit(f"{fn}(S{''.join(', ' + d for d in data_names)})")
        g.copy_out(outs)
        self.prog.define(f"def {name}(S{''.join(', ' + d for d in data_names)}):", g)
        return name

    def build_tables(self) -> dict[str, Table]:
        """The tables' state, bound into the loaded module (cache and lookup under the
        names the generated code uses); also fills ``direct_counters``/``direct_meters``."""
        ns = self.prog.ns
        tables: dict[str, Table] = {}
        for glue in self.tables.values():
            table = self._build_table(glue)
            glue.state = table
            ns[glue.cache] = table.cache
            ns[glue.lookup] = table.lookup
            tables[table.name] = table
            t = glue.table
            if t.direct_counter is not None:
                self.direct_counters[t.direct_counter.cp_name] = table
            if t.direct_meter is not None:
                m = self.states[id(t.direct_meter)]
                self.direct_meters[t.direct_meter.cp_name] = (m, table)
        return tables

    def _build_table(self, glue: TableGlue) -> Table:
        t = glue.table
        fns = [self.prog.ns[f] for f in glue.fns]
        actions = []
        for i, (r, fn) in enumerate(zip(_action_refs(t), fns)):
            params = tuple((p.name, _width(p.type)) for p in r.action.params if p.direction is None)
            actions.append(ActionInfo(r.action.cp_name, fn, params, i))
        keys = [KeyDef(k.name, k.match_kind, _width(k.expr.type)) for k in t.keys if k.match_kind != "selector"]
        sel_widths = tuple(_width(k.expr.type) for k in t.keys if k.match_kind == "selector")
        profile = self.profile_state(t.implementation) if t.implementation is not None else None
        d = t.default_action
        errs = self.prog.errors
        default = (d.action.cp_name, _data_args(d, errs))
        meter_factory = None
        if t.direct_meter is not None:
            from .externs import MeterCell

            meter_factory = MeterCell
        table = Table(t.cp_name, keys, actions, default, t.default_is_const, t.size, meter_factory,
                      profile, sel_widths, self.prog.clock if t.idle_timeout else None)
        if t.const_entries:
            entries = []
            ranks = [_bmv2_rank(i, ce) for i, ce in enumerate(t.const_entries)]
            top = max(ranks) + 1
            for ce, rank in zip(t.const_entries, ranks):
                specs = [_keyspec(x, k, errs) for x, k in zip(ce.keys, keys)]
                # BMv2: the smallest rank wins; innet: the largest priority wins
                entries.append((specs, ce.action.action.cp_name, _data_args(ce.action, errs), top - rank))
            table.add_const_entries(entries)
        return table


def _bmv2_rank(index: int, ce: ir.ConstEntry) -> int:
    """The priority p4c's BMv2 back end gives const entry number ``index``: its
    ``@priority(N)`` annotation, else its position counted from 1. The smallest wins."""
    ann = ce.action.annotations.get("priority")
    if ann is None:
        return index + 1
    if len(ann.body) != 1 or not isinstance(ann.body[0], int) or isinstance(ann.body[0], bool):
        raise UnsupportedError(f"@priority({ann.text}) on a const entry: the priority must be an integer literal",
                               ce.loc)
    return ann.body[0]


def _action_refs(t: ir.Table) -> tuple[ir.ActionRef, ...]:
    """The table's actions, plus the default action when it is not listed (an implicit
    ``NoAction`` default, as p4c adds it)."""
    if any(r.action is t.default_action.action for r in t.actions):
        return t.actions
    return t.actions + (ir.ActionRef(t.default_action.action, (), loc=t.loc),)




def _width(t: ir.Type) -> int:
    if isinstance(t, ir.BitT):
        return t.width
    if isinstance(t, ir.BoolT):
        return 1
    if isinstance(t, ir.EnumT) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, ir.ErrorT):
        return ERROR_WIDTH
    raise UnsupportedError(f"table key or action parameter of type {t}")


def _const(e: ir.Expr, errors: dict[str, int] | None = None) -> int:
    """A table entry's constant; ``error.X`` is its number (``errors``: the program's)."""
    if isinstance(e, ir.ErrorMember) and errors is not None and e.name in errors:
        return errors[e.name]
    if isinstance(e, ir.Const):
        v = int(e.value)
        if isinstance(e.type, ir.BitT) and e.type.signed:
            v &= (1 << e.type.width) - 1
        return v
    if isinstance(e, ir.EnumMember) and e.enum.values is not None:
        return e.enum.value_of(e.member) & ((1 << e.enum.underlying.width) - 1)  # type: ignore[union-attr]
    raise UnsupportedError(f"non-constant value {type(e).__name__} in a table entry", e.loc)


def _data_args(r: ir.ActionRef, errors: dict[str, int] | None = None) -> tuple[int, ...]:
    a = r.action
    ndir = len([p for p in a.params if p.direction is not None])
    return tuple(_const(x, errors) for x in r.args[ndir:])


def _keyspec(x: ir.Expr, k: KeyDef, errors: dict[str, int] | None = None) -> KeySpec:
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
        v, m = _const(x.value, errors), _const(x.mask, errors)
        if k.kind == "lpm":
            plen = bin(m).count("1")
            return KeySpec(v & m, prefix_len=plen)
        return KeySpec(v & m, mask=m)
    if isinstance(x, ir.Range):
        return KeySpec(_const(x.lo, errors), hi=_const(x.hi, errors))
    v = _const(x, errors)
    if k.kind == "range":
        return KeySpec(v, hi=v)
    return KeySpec(v)
