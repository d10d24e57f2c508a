"""Does a controller's P4Info describe the program it is pushed with?

The P4Runtime layer validates every request against the controller's P4Info (widths of
match fields and parameters, sizes, match kinds), while the executor runs the program
compiled from the device config. When the two disagree, a request the P4Runtime layer
accepts can be silently truncated or misapplied by the executor (a register claimed
100,000 bits wide accepted a 21-byte value and read it back cut to 32 bits). So every
field the executor depends on must be equal, and the P4Info must be consistent in itself
(unique ids, references to objects it declares). Objects of the program that the P4Info
leaves out are allowed: the controller just cannot use them.

Raises ``TargetError`` naming the object, the field and both values; the device answers
it as INVALID_ARGUMENT.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from finsy.proto import p4i
from google.protobuf import text_format

from innet.switch.p4runtime.target_api import TargetError

_KINDS = (
    ("table", "tables"), ("action", "actions"), ("action profile", "action_profiles"),
    ("counter", "counters"), ("direct counter", "direct_counters"), ("meter", "meters"),
    ("direct meter", "direct_meters"), ("register", "registers"), ("digest", "digests"),
    ("controller packet metadata", "controller_packet_metadata"), ("value set", "value_sets"),
)
"""(kind in messages, P4Info field) of every object with a preamble."""


def _show(value: Any) -> str:
    if hasattr(value, "DESCRIPTOR"):
        return "{" + text_format.MessageToString(value, as_one_line=True) + "}"
    return repr(value)


def _enum(message: Any, field: str) -> str:
    """An enum field of ``message`` by name (the number when the proto has no name)."""
    number = getattr(message, field)
    enum = message.DESCRIPTOR.fields_by_name[field].enum_type
    value = enum.values_by_number.get(number)
    return value.name if value is not None else str(number)


class _Compare:
    def __init__(self, given: p4i.P4Info, program: p4i.P4Info) -> None:
        self.given, self.program = given, program
        self.given_names = self._names(given)
        self.program_names = self._names(program)

    @staticmethod
    def _names(info: p4i.P4Info) -> dict[int, str]:
        return {o.preamble.id: o.preamble.name for _, field in _KINDS for o in getattr(info, field)}

    def differ(self, what: str, field: str, given: Any, program: Any) -> None:
        if given != program:
            raise TargetError(f"P4Info {what}: {field} {_show(given)} differs from the program's "
                              f"{_show(program)} (P4Info and device config do not match)")

    def name_of(self, object_id: int, what: str, field: str) -> str:
        """The name of an object the given P4Info references by id."""
        name = self.given_names.get(object_id)
        if name is None:
            raise TargetError(f"P4Info {what}: {field} references id {object_id:#x}, which the "
                              "P4Info does not declare")
        return name

    def program_name_of(self, object_id: int) -> str:
        return self.program_names.get(object_id, f"{object_id:#x}")

    def check(self) -> None:
        self.check_ids()
        for kind, field in _KINDS:
            known = {o.preamble.name: o for o in getattr(self.program, field)}
            for obj in getattr(self.given, field):
                name = obj.preamble.name
                if name not in known:
                    raise TargetError(f"P4Info {kind} {name!r} does not exist in the program "
                                      "(P4Info and device config do not match)")
                compare: Callable[[str, Any, Any], None] | None = getattr(
                    self, "compare_" + field, None)
                if compare is not None:
                    compare(f"{kind} {name!r}", obj, known[name])

    # -- the P4Info in itself ------------------------------------------------------------

    def check_ids(self) -> None:
        seen: dict[int, str] = {}
        for kind, field in _KINDS:
            for obj in getattr(self.given, field):
                what = f"{kind} {obj.preamble.name!r}"
                if obj.preamble.id in seen:
                    raise TargetError(f"P4Info {what}: id {obj.preamble.id:#x} is also the id of "
                                      f"{seen[obj.preamble.id]}")
                seen[obj.preamble.id] = what
        for table in self.given.tables:
            what = f"table {table.preamble.name!r}"
            _unique((m.id for m in table.match_fields), f"P4Info {what}: match field id")
            for ref in table.action_refs:
                self.name_of(ref.id, what, "action_refs")
            for rid in table.direct_resource_ids:
                self.name_of(rid, what, "direct_resource_ids")
            if table.implementation_id:
                self.name_of(table.implementation_id, what, "implementation_id")
        for action in self.given.actions:
            _unique((p.id for p in action.params), f"P4Info action {action.preamble.name!r}: param id")
        for prof in self.given.action_profiles:
            for tid in prof.table_ids:
                self.name_of(tid, f"action profile {prof.preamble.name!r}", "table_ids")
        for kind, field in (("direct counter", "direct_counters"), ("direct meter", "direct_meters")):
            for obj in getattr(self.given, field):
                self.name_of(obj.direct_table_id, f"{kind} {obj.preamble.name!r}", "direct_table_id")

    # -- per kind, against the program ---------------------------------------------------

    def compare_tables(self, what: str, given: p4i.Table, program: p4i.Table) -> None:
        self.differ(what, "number of match fields", len(given.match_fields), len(program.match_fields))
        for g, p in zip(given.match_fields, program.match_fields):
            self.differ(what, f"match field {g.id} name", g.name, p.name)
            field = f"match field {g.name!r}"
            self.differ(what, f"{field} bitwidth", g.bitwidth, p.bitwidth)
            self.differ(what, f"{field} match_type", _enum(g, "match_type"), _enum(p, "match_type"))
            self.differ(what, f"{field} other_match_type", g.other_match_type, p.other_match_type)
        actions = {self.program_name_of(r.id) for r in program.action_refs}
        for ref in given.action_refs:
            name = self.name_of(ref.id, what, "action_refs")
            if name not in actions:
                raise TargetError(f"P4Info {what}: action {name!r} is not an action of the program's "
                                  f"table (it has {', '.join(sorted(actions)) or 'none'})")
        self.differ(what, "size", given.size, program.size)
        self.differ(what, "implementation",
                    self.given_names.get(given.implementation_id, "") if given.implementation_id else "",
                    self.program_name_of(program.implementation_id) if program.implementation_id else "")
        self.differ(what, "direct resources",
                    sorted(self.name_of(r, what, "direct_resource_ids") for r in given.direct_resource_ids),
                    sorted(self.program_name_of(r) for r in program.direct_resource_ids))
        self.differ(what, "idle_timeout_behavior", _enum(given, "idle_timeout_behavior"),
                    _enum(program, "idle_timeout_behavior"))
        self.differ(what, "is_const_table", given.is_const_table, program.is_const_table)

    def compare_actions(self, what: str, given: p4i.Action, program: p4i.Action) -> None:
        self.differ(what, "number of params", len(given.params), len(program.params))
        for g, p in zip(given.params, program.params):
            self.differ(what, f"param {g.id} name", g.name, p.name)
            self.differ(what, f"param {g.name!r} bitwidth", g.bitwidth, p.bitwidth)

    def compare_action_profiles(self, what: str, given: p4i.ActionProfile, program: p4i.ActionProfile) -> None:
        self.differ(what, "tables", sorted(self.name_of(t, what, "table_ids") for t in given.table_ids),
                    sorted(self.program_name_of(t) for t in program.table_ids))
        self.differ(what, "with_selector", given.with_selector, program.with_selector)
        self.differ(what, "size", given.size, program.size)
        self.differ(what, "max_group_size", given.max_group_size, program.max_group_size)

    def compare_counters(self, what: str, given: p4i.Counter, program: p4i.Counter) -> None:
        self.differ(what, "unit", _enum(given.spec, "unit"), _enum(program.spec, "unit"))
        self.differ(what, "size", given.size, program.size)

    def compare_direct_counters(self, what: str, given: p4i.DirectCounter, program: p4i.DirectCounter) -> None:
        self.differ(what, "unit", _enum(given.spec, "unit"), _enum(program.spec, "unit"))
        self.differ(what, "direct table", self.name_of(given.direct_table_id, what, "direct_table_id"),
                    self.program_name_of(program.direct_table_id))

    def compare_meters(self, what: str, given: p4i.Meter, program: p4i.Meter) -> None:
        self.differ(what, "unit", _enum(given.spec, "unit"), _enum(program.spec, "unit"))
        self.differ(what, "size", given.size, program.size)

    def compare_direct_meters(self, what: str, given: p4i.DirectMeter, program: p4i.DirectMeter) -> None:
        self.differ(what, "unit", _enum(given.spec, "unit"), _enum(program.spec, "unit"))
        self.differ(what, "direct table", self.name_of(given.direct_table_id, what, "direct_table_id"),
                    self.program_name_of(program.direct_table_id))

    def compare_registers(self, what: str, given: p4i.Register, program: p4i.Register) -> None:
        self.differ(what, "type_spec", given.type_spec, program.type_spec)
        self.differ(what, "size", given.size, program.size)

    def compare_digests(self, what: str, given: p4i.Digest, program: p4i.Digest) -> None:
        self.differ(what, "type_spec", given.type_spec, program.type_spec)
        struct = given.type_spec.struct.name if given.type_spec.HasField("struct") else None
        if struct is not None and struct in self.given.type_info.structs:
            self.differ(what, f"struct {struct!r}", self.given.type_info.structs[struct],
                        self.program.type_info.structs[struct])

    def compare_controller_packet_metadata(self, what: str, given: p4i.ControllerPacketMetadata,
                                           program: p4i.ControllerPacketMetadata) -> None:
        self.differ(what, "fields", [(m.id, m.name, m.bitwidth) for m in given.metadata],
                    [(m.id, m.name, m.bitwidth) for m in program.metadata])

    def compare_value_sets(self, what: str, given: p4i.ValueSet, program: p4i.ValueSet) -> None:
        self.differ(what, "match", list(given.match), list(program.match))
        self.differ(what, "size", given.size, program.size)


def _unique(ids: Iterable[int], what: str) -> None:
    seen: set[int] = set()
    for i in ids:
        if i in seen:
            raise TargetError(f"{what} {i} is given twice")
        seen.add(i)


def check_p4info_matches(given: p4i.P4Info, program: p4i.P4Info) -> None:
    """Raise TargetError unless ``given`` (the controller's P4Info) is consistent in itself
    and agrees with ``program`` (derived from the device config) on every object it names."""
    _Compare(given, program).check()
