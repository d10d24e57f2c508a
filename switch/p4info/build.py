"""Build a ``p4.config.v1.P4Info`` message from the IR, the way p4c does for v1model.

Two passes like p4c's serializer: every control-plane name goes into a
:class:`~innet.switch.p4info.ids.SymbolTable` (ids and aliases depend on the whole set),
then the message is filled block by block in the order of
:mod:`innet.switch.p4info.collect`.
"""

from __future__ import annotations

from typing import Any, Mapping, cast

from finsy.proto import p4i

from innet.switch.frontend import ir

from .collect import BlockContents, TableUse, collect
from .ids import Prefix, SymbolTable
from .typespec import TypeSpecConverter, bitwidth, encode_value

DEFAULT_TABLE_SIZE = 1024

MATCH_TYPES = {
    "exact": p4i.MatchField.EXACT,
    "lpm": p4i.MatchField.LPM,
    "ternary": p4i.MatchField.TERNARY,
    "range": p4i.MatchField.RANGE,
    "optional": p4i.MatchField.OPTIONAL,
}

COUNTER_UNITS = {
    "packets": p4i.CounterSpec.PACKETS,
    "bytes": p4i.CounterSpec.BYTES,
    "packets_and_bytes": p4i.CounterSpec.BOTH,
}
METER_UNITS = {"packets": p4i.MeterSpec.PACKETS, "bytes": p4i.MeterSpec.BYTES}

#: annotations never copied into P4Info 'annotations' lists (represented elsewhere)
_NOT_COPIED = frozenset({"name", "id", "brief", "description", "hidden"})
#: action-profile annotations turned into fields instead
_PROFILE_FIELDS = frozenset({"max_group_size", "selector_size_semantics", "max_member_weight"})


class P4InfoError(ValueError):
    """The program uses something P4Runtime cannot express (names the object)."""


# ----------------------------------------------------------------------------- helpers


def format_annotation(ann: ir.Annotation) -> str:
    """``@name`` or ``@name(body)`` as p4c prints it into P4Info."""
    text = ann.text.strip()
    if text:
        return f"@{ann.name}({text})"
    if ann.body:
        return f"@{ann.name}(" + ", ".join(_format_body_item(b) for b in ann.body) + ")"
    return f"@{ann.name}"


def _format_body_item(item: object) -> str:
    if isinstance(item, str):
        return '"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(item, tuple) and len(item) == 2:
        return f"{item[0]}={_format_body_item(item[1])}"
    return str(item)


def _annotation_texts(annotations: ir.Annotations, skip: frozenset[str] = frozenset()) -> list[str]:
    return [format_annotation(a) for n, a in annotations.items() if n not in _NOT_COPIED and n not in skip]


def _string_annotation(annotations: ir.Annotations, name: str) -> str | None:
    ann = annotations.get(name)
    if ann is None:
        return None
    if ann.body and isinstance(ann.body[0], str):
        return ann.body[0]
    return ann.text.strip().strip('"')


def _int_annotation(annotations: ir.Annotations, name: str, owner: str) -> int | None:
    ann = annotations.get(name)
    if ann is None:
        return None
    value = ann.body[0] if ann.body else ann.text.strip()
    try:
        return int(value, 0) if isinstance(value, str) else int(cast(int, value))
    except (TypeError, ValueError):
        raise P4InfoError(f"@{name} on {owner} must be an integer, got {ann.text or ann.body!r}") from None


def _user_id(annotations: ir.Annotations, owner: str) -> int | None:
    return _int_annotation(annotations, "id", owner)


def _set_doc(msg: object, annotations: ir.Annotations) -> None:
    brief = _string_annotation(annotations, "brief")
    description = _string_annotation(annotations, "description")
    if brief is not None:
        msg.doc.brief = brief  # type: ignore[attr-defined]
    if description is not None:
        msg.doc.description = description  # type: ignore[attr-defined]


def _is_hidden(annotations: ir.Annotations) -> bool:
    return "hidden" in annotations


def _const_int(expr: ir.Expr | None, what: str) -> int:
    if isinstance(expr, ir.Const) and not isinstance(expr.value, bool):
        return int(expr.value)
    raise P4InfoError(f"{what} must be a compile-time integer constant")


def _enum_member(expr: ir.Expr | None) -> str | None:
    return expr.member if isinstance(expr, ir.EnumMember) else None


def _allocate_field_ids(items: list[ir.Annotations], owner: str) -> list[int]:
    """p4c's FieldIdAllocator: ``@id`` values first, the rest 1..n by position, skipping
    ids already taken."""
    ids: list[int | None] = [_user_id(a, owner) for a in items]
    taken = {i for i in ids if i is not None}
    if 0 in taken:
        raise P4InfoError(f"{owner}: 0 is not a valid @id value")
    index = 1
    out: list[int] = []
    for value in ids:
        if value is not None:
            index += 1
            out.append(value)
            continue
        while index in taken:
            index += 1
        taken.add(index)
        out.append(index)
    return out


# ----------------------------------------------------------------------------- builder


class _Builder:
    def __init__(self, program: ir.Program) -> None:
        self.program = program
        self.blocks = collect(program)
        self.info = p4i.P4Info()
        self.info.type_info.SetInParent()
        self.types = TypeSpecConverter(self.info.type_info, program.errors)
        self.symbols = SymbolTable()
        self.tables_by_profile: dict[str, set[str]] = {}
        self.digest_names: dict[int, str] = {}

    # -- pass 1: symbols
    def collect_symbols(self) -> None:
        for block in self.blocks:
            for action in block.actions:
                self.symbols.add(Prefix.ACTION, action.cp_name, _user_id(action.annotations, action.cp_name))
            for item in block.items:
                if isinstance(item, TableUse):
                    self._collect_table(item.table)
                else:
                    self._collect_extern(item)
            for call in block.digests:
                self.symbols.add(Prefix.DIGEST, self._digest_name(call))
        for header in self._controller_headers():
            self.symbols.add(Prefix.CONTROLLER_HEADER, header.name, _user_id(header.annotations, header.name))
        self.symbols.compute_ids()

    def _collect_table(self, table: ir.Table) -> None:
        self.symbols.add(Prefix.TABLE, table.cp_name, _user_id(table.annotations, table.cp_name))
        impl = table.implementation
        if impl is not None:
            self.tables_by_profile.setdefault(impl.cp_name, set()).add(table.cp_name)
            self.symbols.add(Prefix.ACTION_PROFILE, impl.cp_name, _user_id(impl.annotations, impl.cp_name))
        if table.direct_counter is not None:
            inst = table.direct_counter
            self.symbols.add(Prefix.DIRECT_COUNTER, inst.cp_name, _user_id(inst.annotations, inst.cp_name))
        if table.direct_meter is not None:
            inst = table.direct_meter
            self.symbols.add(Prefix.DIRECT_METER, inst.cp_name, _user_id(inst.annotations, inst.cp_name))

    def _collect_extern(self, inst: ir.Instance) -> None:
        assert isinstance(inst.type, ir.ExternT)
        prefix = {
            "counter": Prefix.COUNTER,
            "direct_counter": Prefix.DIRECT_COUNTER,
            "meter": Prefix.METER,
            "direct_meter": Prefix.DIRECT_METER,
            "action_profile": Prefix.ACTION_PROFILE,
            "action_selector": Prefix.ACTION_PROFILE,
            "register": Prefix.REGISTER,
        }[inst.type.name]
        self.symbols.add(prefix, inst.cp_name, _user_id(inst.annotations, inst.cp_name))

    def _digest_name(self, call: ir.ExternCall) -> str:
        known = self.digest_names.get(id(call))
        if known is not None:
            return known
        data_type = call.type_args[0] if call.type_args else None
        if isinstance(data_type, (ir.StructT, ir.HeaderT, ir.HeaderUnionT)):
            name = data_type.name
        else:
            name = f"digest_{len(self.digest_names)}"
        self.digest_names[id(call)] = name
        return name

    def _controller_headers(self) -> list[ir.HeaderT]:
        return [h for h in self.program.header_types() if "controller_header" in h.annotations]

    # -- pass 2: message
    def preamble(self, msg: p4i.Preamble, prefix: Prefix, name: str, annotations: ir.Annotations,
                 skip: frozenset[str] = frozenset()) -> None:
        msg.id = self.symbols.id_of(prefix, name)
        msg.name = name
        msg.alias = self.symbols.alias_of(name)
        msg.annotations.extend(_annotation_texts(annotations, skip))
        _set_doc(msg, annotations)

    def build(self) -> p4i.P4Info:
        self.collect_symbols()
        self.info.pkg_info.arch = "v1model"
        done_actions: set[int] = set()
        done_digests: set[int] = set()
        for block in self.blocks:
            for action in block.actions:
                self._add_action(action, done_actions)
            for call in block.digests:
                self._add_digest(call, done_digests)
        for block in self.blocks:
            self._add_block_items(block)
        for header in self._controller_headers():
            self._add_controller_header(header)
        return self.info

    def _add_block_items(self, block: BlockContents) -> None:
        for item in block.items:
            if isinstance(item, TableUse):
                self._add_table(item)
            else:
                self._add_extern(item)

    def _add_action(self, action: ir.Action, done: set[int]) -> None:
        if _is_hidden(action.annotations):
            return
        action_id = self.symbols.id_of(Prefix.ACTION, action.cp_name)
        if action_id in done:
            return
        done.add(action_id)
        msg = self.info.actions.add()
        self.preamble(msg.preamble, Prefix.ACTION, action.cp_name, action.annotations)
        params = action.data_params
        ids = _allocate_field_ids([p.annotations for p in params], f"action {action.cp_name}")
        for param, param_id in zip(params, ids):
            pmsg = msg.params.add()
            pmsg.id = param_id
            pmsg.name = _string_annotation(param.annotations, "name") or param.name
            pmsg.annotations.extend(_annotation_texts(param.annotations))
            _set_doc(pmsg, param.annotations)
            ptype = param.type
            if isinstance(ptype, ir.EnumT) and ptype.underlying is None:
                pmsg.type_name.name = ptype.name
                self.types.convert(ptype)
                continue
            if not isinstance(ptype, (ir.BitT, ir.BoolT, ir.EnumT)):
                raise P4InfoError(
                    f"{param.loc}: action parameter {param.name} of {action.cp_name} has type {ptype}; "
                    "P4Runtime needs bit<>, int<>, bool or a serializable enum"
                )
            pmsg.bitwidth = bitwidth(ptype)
            if isinstance(ptype, ir.EnumT):
                self.types.convert(ptype)

    def _add_digest(self, call: ir.ExternCall, done: set[int]) -> None:
        name = self._digest_name(call)
        digest_id = self.symbols.id_of(Prefix.DIGEST, name)
        if digest_id in done:
            return
        done.add(digest_id)
        msg = self.info.digests.add()
        self.preamble(msg.preamble, Prefix.DIGEST, name, {})
        msg.type_spec.CopyFrom(self.types.convert(call.type_args[0]))

    def _add_table(self, use: TableUse) -> None:
        table = use.table
        if _is_hidden(table.annotations):
            return
        msg = self.info.tables.add()
        self.preamble(msg.preamble, Prefix.TABLE, table.cp_name, table.annotations)
        key_ids = _allocate_field_ids([k.annotations for k in table.keys], f"table {table.cp_name}")
        for key, key_id in zip(table.keys, key_ids):
            if key.match_kind == "selector":
                continue
            fmsg = msg.match_fields.add()
            fmsg.id = key_id
            fmsg.name = key.name
            fmsg.annotations.extend(_annotation_texts(key.annotations))
            fmsg.bitwidth = bitwidth(key.expr.type)
            if key.match_kind in MATCH_TYPES:
                fmsg.match_type = MATCH_TYPES[key.match_kind]
            else:
                fmsg.other_match_type = key.match_kind
            _set_doc(fmsg, key.annotations)
            if isinstance(key.expr.type, ir.EnumT):
                self.types.convert(key.expr.type)
        for ref in use.action_refs:
            rmsg = msg.action_refs.add()
            rmsg.id = self.symbols.id_of(Prefix.ACTION, ref.action.cp_name)
            table_only, default_only = "tableonly" in ref.annotations, "defaultonly" in ref.annotations
            if table_only and default_only:
                raise P4InfoError(
                    f"table {table.cp_name}: action {ref.action.cp_name} is annotated with both "
                    "@tableonly and @defaultonly"
                )
            rmsg.scope = (
                p4i.ActionRef.TABLE_ONLY if table_only
                else p4i.ActionRef.DEFAULT_ONLY if default_only
                else p4i.ActionRef.TABLE_AND_DEFAULT
            )
            rmsg.annotations.extend(_annotation_texts(ref.annotations))
        default = table.default_action
        default_id = self.symbols.id_of(Prefix.ACTION, default.action.cp_name)
        if table.default_is_const:
            msg.const_default_action_id = default_id
        msg.initial_default_action.action_id = default_id
        self._default_arguments(msg.initial_default_action, default, table)
        if table.implementation is not None:
            impl = table.implementation
            msg.implementation_id = self.symbols.id_of(Prefix.ACTION_PROFILE, impl.cp_name)
            if impl.decl is None and impl not in self._declared_instances():
                self._add_action_profile(impl)
        for inst, prefix in ((table.direct_counter, Prefix.DIRECT_COUNTER), (table.direct_meter, Prefix.DIRECT_METER)):
            if inst is None:
                continue
            msg.direct_resource_ids.append(self.symbols.id_of(prefix, inst.cp_name))
            self._add_direct_resource(inst, prefix, msg.preamble.id)
        size = table.size if table.size else DEFAULT_TABLE_SIZE
        msg.size = size
        msg.idle_timeout_behavior = (
            p4i.Table.NOTIFY_CONTROL if table.idle_timeout else p4i.Table.NO_TIMEOUT
        )
        if table.const_entries is not None:
            msg.is_const_table = True
            msg.has_initial_entries = True

    def _declared_instances(self) -> set[ir.Instance]:
        cached: set[ir.Instance] | None = getattr(self, "_declared", None)
        if cached is None:
            cached = {i for b in self.blocks for i in b.externs}
            self._declared = cached
        return cached

    def _default_arguments(self, call: p4i.TableActionCall, ref: ir.ActionRef, table: ir.Table) -> None:
        action = ref.action
        n_directional = len(action.params) - len(action.data_params)
        given = list(ref.args[n_directional:]) if len(ref.args) > n_directional else []
        ids = _allocate_field_ids([p.annotations for p in action.data_params], f"action {action.cp_name}")
        for index, (param, param_id) in enumerate(zip(action.data_params, ids)):
            expr = given[index] if index < len(given) else param.default
            if isinstance(expr, ir.Const):
                value = int(expr.value)
            elif isinstance(expr, ir.EnumMember) and expr.enum.underlying is not None:
                value = expr.enum.value_of(expr.member)
            else:
                continue
            arg = call.arguments.add()
            arg.param_id = param_id
            arg.value = encode_value(value, bitwidth(param.type))

    def _add_extern(self, inst: ir.Instance) -> None:
        if _is_hidden(inst.annotations):
            return
        assert isinstance(inst.type, ir.ExternT)
        kind = inst.type.name
        if kind in ("action_profile", "action_selector"):
            self._add_action_profile(inst)
        elif kind == "counter":
            msg = self.info.counters.add()
            self.preamble(msg.preamble, Prefix.COUNTER, inst.cp_name, inst.annotations)
            msg.spec.unit = self._unit(inst, 1, COUNTER_UNITS, p4i.CounterSpec.UNSPECIFIED)
            msg.size = _const_int(inst.ctor_args[0] if inst.ctor_args else None, f"size of counter {inst.cp_name}")
        elif kind == "meter":
            msg = self.info.meters.add()
            self.preamble(msg.preamble, Prefix.METER, inst.cp_name, inst.annotations)
            msg.spec.unit = self._unit(inst, 1, METER_UNITS, p4i.MeterSpec.UNSPECIFIED)
            msg.size = _const_int(inst.ctor_args[0] if inst.ctor_args else None, f"size of meter {inst.cp_name}")
        elif kind == "register":
            msg = self.info.registers.add()
            self.preamble(msg.preamble, Prefix.REGISTER, inst.cp_name, inst.annotations)
            if not inst.type.type_args:
                raise P4InfoError(f"{inst.loc}: register {inst.cp_name} has no element type")
            msg.type_spec.CopyFrom(self.types.convert(inst.type.type_args[0]))
            msg.size = _const_int(inst.ctor_args[0] if inst.ctor_args else None, f"size of register {inst.cp_name}")
        # direct_counter / direct_meter are described with the table that owns them

    @staticmethod
    def _unit(inst: ir.Instance, index: int, units: Mapping[str, Any], unspecified: Any) -> Any:
        arg = inst.ctor_args[index] if len(inst.ctor_args) > index else None
        member = _enum_member(arg)
        return units.get(member, unspecified) if member is not None else unspecified

    def _add_direct_resource(self, inst: ir.Instance, prefix: Prefix, table_id: int) -> None:
        if _is_hidden(inst.annotations):
            return
        if prefix is Prefix.DIRECT_COUNTER:
            cmsg = self.info.direct_counters.add()
            self.preamble(cmsg.preamble, prefix, inst.cp_name, inst.annotations)
            cmsg.spec.unit = self._unit(inst, 0, COUNTER_UNITS, p4i.CounterSpec.UNSPECIFIED)
            cmsg.direct_table_id = table_id
        else:
            mmsg = self.info.direct_meters.add()
            self.preamble(mmsg.preamble, prefix, inst.cp_name, inst.annotations)
            mmsg.spec.unit = self._unit(inst, 0, METER_UNITS, p4i.MeterSpec.UNSPECIFIED)
            mmsg.direct_table_id = table_id

    def _add_action_profile(self, inst: ir.Instance) -> None:
        assert isinstance(inst.type, ir.ExternT)
        selector = inst.type.name == "action_selector"
        msg = self.info.action_profiles.add()
        self.preamble(msg.preamble, Prefix.ACTION_PROFILE, inst.cp_name, inst.annotations, _PROFILE_FIELDS)
        for table_name in sorted(self.tables_by_profile.get(inst.cp_name, ())):
            msg.table_ids.append(self.symbols.id_of(Prefix.TABLE, table_name))
        msg.with_selector = selector
        size_arg = inst.ctor_args[1 if selector else 0] if len(inst.ctor_args) > (1 if selector else 0) else None
        msg.size = _const_int(size_arg, f"size of action profile {inst.cp_name}")
        if selector:
            owner = f"action selector {inst.cp_name}"
            max_group = _int_annotation(inst.annotations, "max_group_size", owner)
            if max_group is not None:
                msg.max_group_size = max_group
            semantics = _string_annotation(inst.annotations, "selector_size_semantics") or "sum_of_weights"
            if semantics == "sum_of_members":
                weight = _int_annotation(inst.annotations, "max_member_weight", owner)
                msg.sum_of_members.SetInParent()
                if weight is not None:
                    msg.sum_of_members.max_member_weight = weight
            elif semantics == "sum_of_weights":
                msg.sum_of_weights.SetInParent()
            else:
                raise P4InfoError(
                    f"{owner}: @selector_size_semantics must be sum_of_weights or sum_of_members, got {semantics!r}"
                )

    def _add_controller_header(self, header: ir.HeaderT) -> None:
        if _is_hidden(header.annotations):
            return
        controller_name = _string_annotation(header.annotations, "controller_header")
        if not controller_name:
            raise P4InfoError(f"@controller_header on header {header.name} needs a string argument")
        msg = self.info.controller_packet_metadata.add()
        msg.preamble.id = self.symbols.id_of(Prefix.CONTROLLER_HEADER, header.name)
        msg.preamble.name = controller_name
        msg.preamble.alias = controller_name
        msg.preamble.annotations.extend(_annotation_texts(header.annotations))
        _set_doc(msg.preamble, header.annotations)
        ids = _allocate_field_ids([f.annotations for f in header.fields], f"header {header.name}")
        for fld, field_id in zip(header.fields, ids):
            if _is_hidden(fld.annotations):
                continue
            if not isinstance(fld.type, (ir.BitT, ir.EnumT)):
                raise P4InfoError(
                    f"controller header {header.name}: field {fld.name} has type {fld.type}; "
                    "P4Runtime needs bit<>, int<> or a serializable enum"
                )
            mmsg = msg.metadata.add()
            mmsg.id = field_id
            mmsg.name = _string_annotation(fld.annotations, "name") or fld.name
            mmsg.annotations.extend(_annotation_texts(fld.annotations))
            mmsg.bitwidth = bitwidth(fld.type)
            if isinstance(fld.type, ir.EnumT):
                self.types.convert(fld.type)


def build_p4info(program: ir.Program) -> p4i.P4Info:
    """The P4Info p4c would emit for ``program`` (v1model), as a protobuf message."""
    return _Builder(program).build()
