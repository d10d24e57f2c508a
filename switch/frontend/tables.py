"""Table declarations: keys, action lists, default action, const entries, properties.

Why separate: table properties have their own rules (actions bound to the list,
default action must be in the list, entries must match the key, direct resources and
implementations must be the right extern types) that nothing else shares.
"""

from __future__ import annotations

import re
from typing import Any

from . import ir
from .errors import P4Error
from .annotations import Annotator
from .calls import Calls
from .context import BuildContext, Instantiator
from .expressions import Exprs, children
from .keysets import Keysets
from .lexer import Tok
from .symbols import did_you_mean
from .tree import ParseNode
from .walk import contains, same_code


_KEY_NODES = frozenset({"name_ref", "global_ref", "member", "index", "int_lit", "slice", "band", "type_member", "error_member"})


def _simple_key(t: Any) -> bool:
    """A key expression p4c names itself (a path, member, index, slice, constant, '&' of
    those, or ``h.isValid()``); anything else needs ``@name`` (p4c's KeyNameGenerator)."""
    if not isinstance(t, ParseNode):
        return True
    if t.data == "call":  # only h.isValid()
        fn, args = t.children[0], t.children[1]
        return isinstance(fn, ParseNode) and fn.data == "member" and isinstance(fn.children[-1], ParseNode) \
            and str(fn.children[-1].children[0]) == "isValid" and (args is None or not children(args))
    if t.data not in _KEY_NODES:
        return False
    if t.data in ("member", "slice", "index"):
        return _simple_key(t.children[0])
    return t.data != "band" or all(_simple_key(c) for c in t.children)


BMV2_REJECTS = "BMv2 rejects this"
"""Words of every warning about a program innet runs but p4c's BMv2 back end refuses
(``innet.p4c_errors`` counts them as accepted-with-warning; docs/p4c-compat.md lists them)."""


def _reads(code: object, inst: ir.Instance) -> bool:
    """Does ``code`` (and the actions it calls) use the instance ``inst``?"""
    return contains(code, lambda n: isinstance(n, ir.InstanceRef) and n.inst is inst)


def _const(e: ir.Expr) -> int | None:
    return int(e.value) if isinstance(e, ir.Const) else None


def _width(t: ir.Type) -> int | None:
    return t.width if isinstance(t, ir.BitT) else None


def _match_ident(table: ir.Table, entry: ir.ConstEntry) -> tuple[object, ...] | None:
    """What an exact/LPM entry matches, to find two entries with the same key (the
    executor refuses them); None when a part is not a constant."""
    out: list[object] = []
    for k, ks in zip(table.keys, entry.keys):
        w = _width(k.expr.type)
        if isinstance(ks, ir.DefaultKey):
            out.append((0, 0))
        elif isinstance(ks, ir.Mask):
            v, m = _const(ks.value), _const(ks.mask)
            if v is None or m is None:
                return None
            if w is not None:
                m &= (1 << w) - 1
            out.append((v & m, bin(m).count("1")))
        else:
            v = _const(ks)
            if v is None:
                return None
            out.append((v, w))
    return tuple(out)


class Tables:
    """Builds table declarations; their keys, actions and entries are typed by the parts
    it is given, and an extern a property instantiates by the instantiator."""

    def __init__(self, cx: BuildContext, exprs: Exprs, calls: Calls, keys: Keysets, annotator: Annotator,
                 blocks: Instantiator) -> None:
        self.cx = cx
        self.exprs = exprs
        self.calls = calls
        self.keys = keys
        self.annotator = annotator
        self.blocks = blocks

    def build(self, t: ParseNode) -> ir.Table:
        annos_t, name_t, *props = t.children
        name = self.cx.name_of(name_t)
        annos = self.annotator.annotations(annos_t)
        loc = self.cx.loc(name_t)
        cp = self.cx.cp_name(name, annos)
        keys: list[ir.Key] = []
        refs: list[ir.ActionRef] = []
        generic: list[ParseNode] = []
        entries_t: ParseNode | None = None
        seen: set[str] = set()
        for p in props:
            pname = {"key_prop": "key", "actions_prop": "actions", "entries_prop": "entries"}.get(
                p.data) or self.cx.name_of(p.children[2])
            if pname in seen:
                raise self.cx.err(self.cx.loc(p), f"table '{name}': property '{pname}' given twice")
            if pname in ("default_action", "entries") and "actions" not in seen:
                raise self.cx.err(self.cx.loc(p), f"table '{name}' has no action list before its '{pname}' (p4c reads the "
                            "properties in order: give 'actions' first)")
            seen.add(pname)
            if p.data == "key_prop":
                for k in children(p)[1:] if p.children[0] is not None else children(p):
                    if k.data != "key_elem":
                        continue
                    e = self.exprs.expr(k.children[0])
                    if contains(e, lambda n: isinstance(n, ir.FunctionCall)):
                        raise self.cx.err(e.loc, f"table '{name}': no function calls are allowed in a table key")
                    mk = self.cx.name_of(k.children[1])
                    if mk not in self.cx.match_kinds:
                        raise self.cx.err(self.cx.loc(k.children[1]), f"unknown match kind '{mk}'."
                                    + did_you_mean(mk, self.cx.match_kinds))
                    if not isinstance(e.type, (ir.BitT, ir.BoolT, ir.EnumT, ir.ErrorT)):
                        raise self.cx.err(e.loc, f"table key of type {e.type} is not supported")
                    kan = self.annotator.annotations(k.children[2])
                    if "name" not in kan and not _simple_key(k.children[0]):
                        raise self.cx.err(e.loc, f"table '{name}': complex key expression '{self.expr_text(k.children[0])}' "
                                    "requires a @name annotation")
                    kname = kan["name"].body[0] if "name" in kan and kan["name"].body else \
                        self.expr_text(k.children[0])
                    keys.append(ir.Key(e, mk, str(kname), kan, self.cx.loc(k)))
            elif p.data == "actions_prop":
                for it in children(p):
                    if it.data != "action_item":
                        continue
                    ia, an, args_t = it.children
                    act = self._action_named(an)
                    if any(r.action is act for r in refs):
                        raise self.cx.err(self.cx.loc(an), f"action '{act.name}' listed twice in table '{name}'")
                    nargs = len(self.calls.arg_list(args_t))
                    dirp = tuple(x for x in act.params if x.direction is not None)
                    if nargs > len(dirp):
                        raise self.cx.err(self.cx.loc(an), f"table '{name}': action '{act.name}' in the actions "
                                    "list may only bind its directional parameters")
                    args = self._bind_prefix(act, act.params[:nargs], args_t, self.cx.loc(an))
                    refs.append(ir.ActionRef(act, args, self.annotator.annotations(ia), self.cx.loc(an)))
            elif p.data == "entries_prop":
                if p.children[1] is None:
                    raise self.cx.unsupported(self.cx.loc(p), "non-const table 'entries'")
                entries_t = p
            else:
                generic.append(p)
        if "actions" not in seen:
            raise self.cx.err(loc, f"table '{name}' has no 'actions' property (every table needs one, as in p4c)")
        table = ir.Table(name, cp, tuple(keys), tuple(refs), ir.ActionRef(self.cx.actions_global["NoAction"])
                         if "NoAction" in self.cx.actions_global else ir.ActionRef(refs[0].action) if refs
                         else ir.ActionRef(ir.Action("NoAction", "NoAction", (), ir.Block(())), ()),
                         annotations=annos, loc=loc)
        for p in generic:
            self._generic_prop(table, p)
        if not table.default_action_given:
            self._check_no_action(table)
        self._check_direct_meters(table)
        lpm = [k for k in table.keys if k.match_kind == "lpm"]
        if len(lpm) > 1:
            self.cx.warn(loc, f"table '{name}' has {len(lpm)} lpm keys: {BMV2_REJECTS} (one lpm key per table); innet "
                   "matches such a table by entry priority, as it matches ternary keys")
        if entries_t is not None:
            table.const_entries = tuple(self._entry(table, e) for e in children(entries_t)
                                        if isinstance(e, ParseNode) and e.data == "entry")
            self._check_unique(table)
        return self._declare(table, loc)

    def _action_named(self, name_t: Any) -> ir.Action:
        """The action ``name_t`` names (a ``global_ref`` node, ``.a``, names the top-level one)."""
        scope = self.cx.scope
        if isinstance(name_t, ParseNode) and name_t.data == "global_ref":
            scope, name_t = scope.root(), name_t.children[0]
        name = self.cx.name_of(name_t)
        sym = scope.lookup(name)
        if not isinstance(sym, ir.Action):
            cands = [n for n in self.cx.scope.all_value_names() if isinstance(self.cx.scope.lookup(n), ir.Action)]
            raise self.cx.err(self.cx.loc(name_t), f"'{name}' is not an action." + did_you_mean(name, cands)
                        if sym is not None else f"undefined action '{name}'." + did_you_mean(name, cands))
        return sym

    def _bind_prefix(self, act: ir.Action, params: tuple[ir.Param, ...],
                     args_t: ParseNode | None, loc: ir.Loc) -> tuple[ir.Expr, ...]:
        args = self.calls.arg_list(args_t)
        if len(args) != len(params):
            raise self.cx.err(loc, f"wrong number of arguments for action '{act.name}': expected "
                        f"{len(params)}, got {len(args)}")
        out: list[ir.Expr] = []
        for p, (n, a) in zip(params, args):
            if n is not None:
                raise self.cx.err(loc, "named arguments are not supported here")
            e = self.exprs.coerce(self.exprs.expr(a), p.type, f"argument '{p.name}' of action '{act.name}'")
            if contains(e, lambda n: isinstance(n, ir.TableApply)):
                raise self.cx.err(e.loc, f"argument '{p.name}' of action '{act.name}': a table cannot be applied in an "
                            "action argument")
            if p.direction in ("out", "inout"):
                self.exprs.check_lvalue(e, "pass as out argument")
            out.append(e)
        return tuple(out)

    def _ref_args(self, ref: ir.ActionRef, args_t: ParseNode | None,
                  loc: ir.Loc) -> tuple[ir.Expr, ...]:
        """Full argument list for a default action / entry action given the list binding."""
        act = ref.action
        nargs = len(self.calls.arg_list(args_t))
        if nargs == len(act.params):
            args = self._bind_prefix(act, act.params, args_t, loc)
            for p, listed, given in zip(act.params, ref.args, args):
                if not same_code(listed, given):
                    raise self.cx.err(given.loc, f"argument '{p.name}' of action '{act.name}' does not match the one "
                                "its actions list binds")
            return args
        rest = act.params[len(ref.args):]
        return ref.args + self._bind_prefix(act, rest, args_t, loc)

    def _call_parts(self, t: ParseNode) -> tuple[Any, ParseNode | None]:
        if t.data == "call":
            fn = t.children[0]
            return (fn if fn.data == "global_ref" else fn.children[0]), t.children[1]
        if t.data == "name_ref":
            return t.children[0], None
        if t.data == "global_ref":
            return t, None
        raise self.cx.err(self.cx.loc(t), "expected an action call like a(1, 2)")

    def _direct_meter_reads(self, ref: ir.ActionRef) -> list[ir.Instance]:
        """The direct_meter instances of the current scope that the action reads."""
        out = []
        for n in self.cx.scope.all_value_names():
            sym = self.cx.scope.lookup(n)
            if isinstance(sym, ir.Instance) and isinstance(sym.type, ir.ExternT) and sym.type.name == "direct_meter" \
                    and _reads(ref.action, sym):
                out.append(sym)
        return out

    def _check_direct_meters(self, table: ir.Table) -> None:
        """A direct meter is read only by actions of the table it is attached to (innet and
        BMv2 refuse the read elsewhere: it has no table entry to read); one attached but read
        by none of the table's actions is run by innet, with a warning, as BMv2 refuses it."""
        for ref in table.actions:
            for meter in self._direct_meter_reads(ref):
                if table.direct_meter is not meter:
                    raise self.cx.err(ref.loc, f"action '{ref.action.name}' of table '{table.name}' reads direct_meter "
                                f"'{meter.name}', which the table does not list as 'meters'")
        listed = table.direct_meter
        if listed is not None and not any(_reads(ref.action, listed) for ref in table.actions):
            self.cx.warn(table.loc, f"table '{table.name}': direct_meter '{listed.name}' is read by none of its actions: "
                   f"{BMV2_REJECTS}; innet meters the packets and the control plane can read the meter")

    def _check_no_action(self, table: ir.Table) -> None:
        """A table without ``default_action`` runs ``NoAction``: core.p4's action without
        parameters must be what that name denotes (p4c: "did you include core.p4?")."""
        sym = self.cx.scope.lookup("NoAction")
        if sym is None:
            raise self.cx.err(table.loc, f"table '{table.name}' has no default_action, so its default is NoAction, "
                        "but no action NoAction is declared (did you include core.p4?)")
        if not isinstance(sym, ir.Action) or sym.params:
            raise self.cx.err(table.loc, f"table '{table.name}' has no default_action, so its default is NoAction, "
                        "but NoAction is not an action without parameters (did you include core.p4?)")

    def _declare(self, table: ir.Table, loc: ir.Loc) -> ir.Table:
        self.cx.declare(table.name, table, loc)
        return table

    def _find_ref(self, table: ir.Table, name_t: Any, what: str) -> ir.ActionRef:
        act = self._action_named(name_t)
        ref = next((r for r in table.actions if r.action is act), None)
        if ref is None:
            raise self.cx.err(self.cx.loc(name_t), f"{what} '{act.name}' is not in the actions list of "
                        f"table '{table.name}'")
        return ref

    def _generic_prop(self, table: ir.Table, p: ParseNode) -> None:
        pa, const_t, pn, val_t = p.children
        pname = self.cx.name_of(pn)
        ploc = self.cx.loc(p)
        if pname == "default_action":
            an, args_t = self._call_parts(val_t)
            ref = self._find_ref(table, an, "default action")
            args = self._ref_args(ref, args_t, self.cx.loc(val_t))
            table.default_action = ir.ActionRef(ref.action, args, ref.annotations, self.cx.loc(val_t))
            table.default_is_const = const_t is not None
            table.default_action_given = True
            if "tableonly" in ref.annotations:
                raise self.cx.err(self.cx.loc(val_t), f"action '{ref.action.name}' is @tableonly and cannot be "
                            "the default action")
            return
        if pname == "size":
            table.size = self.exprs.const_int(val_t, f"size of table '{table.name}'")
            return
        if pname in ("implementation", "counters", "meters"):
            want = {"implementation": ("action_profile", "action_selector"),
                    "counters": ("direct_counter",), "meters": ("direct_meter",)}[pname]
            if isinstance(val_t, ParseNode) and val_t.data == "ctor_call":
                inst = self.blocks.make_instance(ParseNode.at("named_type", [val_t.children[0]], val_t)
                                       if len(val_t.children) == 2 else
                                       ParseNode.at("spec_type", val_t.children[:2], val_t),
                                       val_t.children[-1], table.name, {}, self.cx.loc(val_t), table.cp_name)
            else:
                inst_e = self.exprs.expr(val_t)
                if not isinstance(inst_e, ir.InstanceRef):
                    raise self.cx.err(self.cx.loc(val_t), f"table property '{pname}' must name an instance of "
                                + " or ".join(want))
                inst = inst_e.inst
            if not isinstance(inst.type, ir.ExternT) or inst.type.name not in want:
                raise self.cx.err(self.cx.loc(val_t), f"table property '{pname}' must be an instance of "
                            f"{' or '.join(want)}, not {inst.type}")
            if pname == "implementation":
                table.implementation = inst
            elif pname == "counters":
                table.direct_counter = inst
            else:
                table.direct_meter = inst
            return
        if pname == "support_timeout":
            v = self.exprs.expr(val_t)
            if not isinstance(v, ir.Const) or not isinstance(v.type, ir.BoolT):
                raise self.cx.err(self.cx.loc(val_t), "support_timeout must be true or false")
            table.idle_timeout = bool(v.value)
            return
        try:
            table.properties[pname] = self.exprs.expr(val_t)
        except P4Error as error:  # only the program's fault; anything else is a bug and propagates
            raise self.cx.err(ploc, f"table '{table.name}': cannot evaluate property '{pname}': {error.message}") from None

    def _check_lpm_mask(self, k: ir.Key, ks: ir.Mask) -> None:
        """An LPM mask is a prefix: ones from the top bit, then zeros (p4c: "invalid mask for
        LPM key")."""
        v, m, w = _const(ks.value), _const(ks.mask), _width(k.expr.type)
        if v is None or m is None or w is None:
            return
        m &= (1 << w) - 1
        inverse = ~m & ((1 << w) - 1)
        if inverse & (inverse + 1):
            raise self.cx.err(ks.loc, f"invalid mask for LPM key '{k.name}': {m:#x} is not a prefix of {k.expr.type} "
                        "(ones from the top bit, then zeros)")

    def _check_unique(self, table: ir.Table) -> None:
        """Two const entries of an exact/LPM table (no priorities) with the same key: p4c-bm2-ss
        and the executor refuse the second, so the front-end does, located."""
        kinds = [k.match_kind for k in table.keys]
        if any(k not in ("exact", "lpm") for k in kinds) or kinds.count("lpm") > 1:  # a priority table
            return
        seen: dict[tuple[object, ...], ir.ConstEntry] = {}
        for entry in table.const_entries or ():
            ident = _match_ident(table, entry)
            if ident is None:
                continue
            first = seen.setdefault(ident, entry)
            if first is not entry:
                raise self.cx.err(entry.loc, f"entry of table '{table.name}' has the same key as the entry at "
                            f"line {first.loc.line}")

    def _entry(self, table: ir.Table, e: ParseNode) -> ir.ConstEntry:
        const_t, prio_t, ks_t, act_t, annos_t = e.children
        if not table.keys:
            raise self.cx.err(self.cx.loc(e), f"table '{table.name}' has entries but no key")
        keys = self.keys.keysets(ks_t, [k.expr.type for k in table.keys], f"entry of table '{table.name}'")
        for k, ks in zip(table.keys, keys):
            if isinstance(ks, ir.Mask) and k.match_kind not in ("ternary", "lpm"):
                raise self.cx.err(ks.loc, f"'&&&' is not allowed for a {k.match_kind} key '{k.name}'")
            if isinstance(ks, ir.Mask) and k.match_kind == "lpm":
                self._check_lpm_mask(k, ks)
            if isinstance(ks, ir.Range) and k.match_kind != "range":
                raise self.cx.err(ks.loc, f"'..' is only allowed for a range key, '{k.name}' is "
                            f"{k.match_kind}")
            if isinstance(ks, ir.DefaultKey) and k.match_kind == "exact":
                raise self.cx.err(ks.loc, f"'_' / default is not allowed for exact key '{k.name}'")
        prio = None
        if prio_t is not None:
            # p4c (EntryPriorities): only non-const 'entries' take 'priority=' (innet has none);
            # const entries are ordered by position or by the @priority annotation
            raise self.cx.err(self.cx.loc(prio_t), f"table '{table.name}': a table with 'const' entries cannot "
                        "have priorities (drop 'priority=N:'; earlier entries win, or use @priority(N))")
        ach = [c for c in act_t.children if c is not None]
        ref = self._find_ref(table, ach[0], "entry action")
        args_t = ach[1] if len(ach) > 1 else None
        args = self._ref_args(ref, args_t, self.cx.loc(act_t))
        if "defaultonly" in ref.annotations:
            raise self.cx.err(self.cx.loc(act_t), f"action '{ref.action.name}' is @defaultonly and cannot be "
                        "used in an entry")
        return ir.ConstEntry(keys, ir.ActionRef(ref.action, args, self.annotator.annotations(annos_t),
                                                self.cx.loc(act_t)), prio, self.cx.loc(e))

    def expr_text(self, t: ParseNode | Tok) -> str:
        """Key expression as p4c prints it (``hdr.ipv4.dstAddr``)."""
        if isinstance(t, Tok):
            return str(t)
        d = t.data
        if d == "name_ref":
            return self.cx.name_of(t.children[0])
        if d == "global_ref":
            return "." + self.cx.name_of(t.children[0])
        if d == "member":
            return f"{self.expr_text(t.children[0])}.{self.cx.name_of(t.children[1])}"
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
            return re.sub(r"\s+", " ", self.cx.pp.text[t.meta.start_pos:t.meta.end_pos]).strip()
        return d
