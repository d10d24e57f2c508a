"""Which IR objects p4c exposes to the control plane, and in which order.

p4c builds P4Info from its front-end output, in which (a) unused tables and unused
control-local actions are removed (extern instances are kept), (b) sub-controls are
inlined into the top-level control at the place of their instance declaration, (c)
actions called directly are inlined, and then top-level actions still referenced by a
table are *localised*: a copy is prepended to each control using them, in order of first
use.  It then visits the blocks breadth first from ``main`` (parser, verifyChecksum,
ingress, egress, computeChecksum, deparser), emitting each control's actions, then the
tables and extern instances of each block in declaration order.  This module reproduces
that order from our IR, whose sub-control instances are specialised copies with final
``cp_name`` values.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Iterator

from innet.switch.frontend import ir

EXTERN_KINDS = frozenset(
    {"counter", "direct_counter", "meter", "direct_meter", "action_profile", "action_selector", "register"}
)


@dataclass
class TableUse:
    """A table as P4Info describes it: its action refs include a synthesised
    ``@defaultonly NoAction`` when the program gave no default action."""

    table: ir.Table
    action_refs: list[ir.ActionRef]


@dataclass
class BlockContents:
    """What one top-level parser/control contributes, in p4c's order."""

    block: ir.Parser | ir.Control
    actions: list[ir.Action] = field(default_factory=list)
    tables: list[TableUse] = field(default_factory=list)
    externs: list[ir.Instance] = field(default_factory=list)  # declared extern instances
    digests: list[ir.ExternCall] = field(default_factory=list)
    # locals in order, tables and externs interleaved (for action-profile order)
    items: list[TableUse | ir.Instance] = field(default_factory=list)


_DECLS = (ir.Action, ir.Table, ir.Instance, ir.Function, ir.Control, ir.Parser)
#: per class: the field names of a node that may hold sub-nodes (() for a non-node or a type)
_FIELDS: dict[type, tuple[str, ...]] = {}
#: per class of a field's value: 0 not a child, 1 a child, 2 a tuple/list of candidates
_VALUE: dict[type, int] = {}
#: per class of a tuple/list item: whether it is a child
_ITEM: dict[type, bool] = {}


def _is_node_class(cls: type) -> bool:
    """Instances of ``cls`` are dataclass instances (a class object is not: its class is a
    metaclass)."""
    return dataclasses.is_dataclass(cls) and not issubclass(cls, type)


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        node = _is_node_class(cls) and not issubclass(cls, ir.Type)
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls)) if node else ()
    return names


def _value_kind(cls: type) -> int:
    if issubclass(cls, _DECLS):
        kind = 0
    elif issubclass(cls, (tuple, list)):
        kind = 2
    else:
        kind = int(_is_node_class(cls) and not issubclass(cls, (ir.Type, ir.Loc, ir.Param, ir.VarDecl)))
    _VALUE[cls] = kind
    return kind


def _item_kind(cls: type) -> bool:
    ok = _ITEM[cls] = _is_node_class(cls) and not issubclass(cls, (ir.Type, ir.Loc))
    return ok


def children_of(node: object) -> list[object]:
    """Direct sub-nodes (expressions, statements, args, cases) of an IR node; never
    descends into declarations referenced by name (actions, tables, instances).  The
    per-class answers are cached: a K=2048 ``innet.p4`` walks ~850,000 nodes."""
    out: list[object] = []
    value_kind, item_kind = _VALUE.get, _ITEM.get
    for name in _FIELDS.get(type(node)) or _fields(type(node)):
        value = getattr(node, name)
        kind = value_kind(type(value))
        if kind is None:
            kind = _value_kind(type(value))
        if kind == 1:
            out.append(value)
        elif kind == 2:
            for item in value:
                ok = item_kind(type(item))
                if ok is None:
                    ok = _item_kind(type(item))
                if ok:
                    out.append(item)
    return out


def iter_children(node: object) -> Iterator[object]:
    """``children_of`` as an iterator."""
    return iter(children_of(node))


def walk(node: object, into_calls: bool = False) -> Iterator[object]:
    """Pre-order walk of ``node``; with ``into_calls`` also the bodies of directly called
    actions and functions (p4c inlines those before building P4Info)."""
    stack = [node]
    pop, extend = stack.pop, stack.extend
    while stack:
        current = pop()
        yield current
        children = children_of(current)
        if into_calls:
            if isinstance(current, ir.ActionCall):
                children.append(current.action.body)
            elif isinstance(current, ir.FunctionCall):
                children.append(current.func.body)
        children.reverse()
        extend(children)


def _instance_is_applied(inst: ir.Instance, body: ir.Block, control: ir.Control | None = None) -> bool:
    """``inst`` is applied by ``body``, or (with ``control``, its owner) passed as a
    constructor argument to an applied sibling instance, which applies it (p4c inlines
    it there)."""
    for node in walk(body):
        if (
            isinstance(node, ir.MethodCall)
            and node.method == "apply"
            and isinstance(node.target, ir.InstanceRef)
            and node.target.inst is inst
        ):
            return True
    if control is not None:
        for other in control.locals:
            if (isinstance(other, ir.Instance) and other is not inst and isinstance(other.decl, ir.Control)
                    and any(isinstance(a, ir.InstanceRef) and a.inst is inst for a in other.ctor_args)
                    and _instance_is_applied(other, body, control)):
                return True
    return False


class _ControlAnalysis:
    """Usage of tables / actions / sub-controls inside one specialised control."""

    def __init__(self, control: ir.Control) -> None:
        self.control = control
        applied = {id(n.table) for n in walk(control.body) if isinstance(n, ir.TableApply)}
        self.used_tables = [t for t in control.tables if id(t) in applied]
        used: dict[int, ir.Action] = {}
        pending: list[ir.Block] = [control.body]
        for table in self.used_tables:
            for ref in _table_action_refs(table):
                used.setdefault(id(ref.action), ref.action)
            for entry in table.const_entries or ():
                used.setdefault(id(entry.action.action), entry.action.action)
        pending.extend(a.body for a in list(used.values()))
        while pending:
            for node in walk(pending.pop()):
                if isinstance(node, ir.ActionCall) and id(node.action) not in used:
                    used[id(node.action)] = node.action
                    pending.append(node.action.body)
        self.used_actions = used


def _table_action_refs(table: ir.Table) -> list[ir.ActionRef]:
    refs = list(table.actions)
    if all(ref.action is not table.default_action.action for ref in refs):
        refs.append(
            ir.ActionRef(
                table.default_action.action,
                (),
                {"defaultonly": ir.Annotation("defaultonly")},
                table.default_action.loc,
            )
        )
    return refs


def _flatten_control(control: ir.Control) -> Iterator[tuple[object, _ControlAnalysis]]:
    """Locals of ``control`` with applied sub-control instances inlined in place."""
    analysis = _ControlAnalysis(control)
    for local in control.locals:
        if isinstance(local, ir.Instance) and isinstance(local.decl, ir.Control):
            if _instance_is_applied(local, control.body, control):
                yield from _flatten_control(local.decl)
            continue
        yield local, analysis


def _flatten_parser(parser: ir.Parser) -> Iterator[object]:
    for local in parser.locals:
        if isinstance(local, ir.Instance) and isinstance(local.decl, ir.Parser):
            yield from _flatten_parser(local.decl)
            continue
        yield local


def is_extern_instance(local: object) -> bool:
    return (
        isinstance(local, ir.Instance)
        and isinstance(local.type, ir.ExternT)
        and local.type.name in EXTERN_KINDS
    )


def collect_block(block: ir.Parser | ir.Control, global_actions: set[int]) -> BlockContents:
    contents = BlockContents(block)
    if isinstance(block, ir.Parser):
        for local in _flatten_parser(block):
            if is_extern_instance(local):
                assert isinstance(local, ir.Instance)
                contents.externs.append(local)
                contents.items.append(local)
        return contents

    localized: dict[int, ir.Action] = {}
    own: list[ir.Action] = []
    for local, analysis in _flatten_control(block):
        if isinstance(local, ir.Table):
            if local not in analysis.used_tables:
                continue
            use = TableUse(local, _table_action_refs(local))
            for ref in use.action_refs:
                if id(ref.action) in global_actions:
                    localized.setdefault(id(ref.action), ref.action)
            contents.tables.append(use)
            contents.items.append(use)
        elif isinstance(local, ir.Action):
            if id(local) in analysis.used_actions and id(local) not in global_actions:
                own.append(local)
        elif is_extern_instance(local):
            assert isinstance(local, ir.Instance)
            contents.externs.append(local)
            contents.items.append(local)
    contents.actions = list(localized.values()) + own

    for action in contents.actions:
        contents.digests.extend(_digest_calls(action.body))
    contents.digests.extend(_digest_calls(_inlined_body(block)))
    return contents


def _inlined_body(control: ir.Control) -> ir.Block:
    """The apply body with applied sub-control bodies appended (for digest search; the
    relative order of digests only matters between calls of different data types)."""
    stmts: list[ir.Stmt] = [control.body]
    for local in control.locals:
        if isinstance(local, ir.Instance) and isinstance(local.decl, ir.Control):
            if _instance_is_applied(local, control.body, control):
                stmts.append(_inlined_body(local.decl))
    return ir.Block(tuple(stmts))


def _digest_calls(body: ir.Block) -> list[ir.ExternCall]:
    return [n for n in walk(body, into_calls=True) if isinstance(n, ir.ExternCall) and n.name == "digest"]


def collect(program: ir.Program) -> list[BlockContents]:
    """Contents of every block given to ``main``, in ``main``'s argument order."""
    if program.main is None:
        return []
    global_actions = {id(a) for a in program.actions.values()}
    out: list[BlockContents] = []
    seen: set[int] = set()
    for arg in program.main.args:
        if arg.decl is None or id(arg.decl) in seen:
            continue
        seen.add(id(arg.decl))
        out.append(collect_block(arg.decl, global_actions))
    return out

