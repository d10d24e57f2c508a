"""Table entries: P4Runtime ``TableEntry`` <-> target calls, with the spec's checks.

The installed entries are kept here in canonical P4Runtime form (what a Read returns),
keyed by (match key, priority), next to the handle the target returned for each. That is
what makes INSERT-of-existing ALREADY_EXISTS and MODIFY/DELETE-of-missing NOT_FOUND
independent of the target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import grpc
from finsy.proto import p4i, p4r

from innet.switch.p4runtime.errors import (
    P4RuntimeError,
    already_exists,
    invalid,
    not_found,
    permission_denied,
    unimplemented,
)
from innet.switch.p4rt_codec.bytestrings import decode_bytes
from innet.switch.p4rt_codec.matches import action_proto, decode_field_match, dont_care, field_match_proto, priority_problem
from innet.switch.p4runtime.schema import Schema, IndexedTable
from innet.switch.p4runtime.target_api import (
    BoundAction,
    AgeingPipeline,
    ProfilePipeline,
    ProfileRef,
    EntryHandle,
    FieldMatch,
    LoadedPipeline,
    MatchKey,
    MeterRates,
)

if TYPE_CHECKING:
    from innet.switch.p4runtime.action_profiles import ProfileState


@dataclass
class Installed:
    """One entry: its canonical form (without counter/meter data) and target handle."""

    entry: p4r.TableEntry
    handle: EntryHandle | None
    """None for const entries declared by the program."""
    meter: MeterRates | None = None
    ref: ProfileRef | None = None
    """The member or group an entry of an indirect table points to."""
    notified_at: int | None = None
    """Target clock (``AgeingPipeline.clock_ns``) of the last IdleTimeoutNotification
    about this entry; its timer restarts there (``innet.switch.p4runtime.ageing``)."""


def parse_match(info: IndexedTable, entry: p4r.TableEntry) -> tuple[MatchKey, list[p4r.FieldMatch]]:
    """The target key of ``entry`` and its canonical FieldMatch list (P4Info order)."""
    given: dict[int, p4r.FieldMatch] = {}
    for fm in entry.match:
        if fm.field_id not in info.fields:
            raise invalid(f"table {info.name!r} has no match field with id {fm.field_id}")
        if fm.field_id in given:
            raise invalid(f"table {info.name!r}: match field id {fm.field_id} given twice")
        given[fm.field_id] = fm
    key: list[FieldMatch] = []
    canonical: list[p4r.FieldMatch] = []
    for field in info.table.match_fields:
        fm = given.get(field.id)
        if fm is None:
            if field.match_type == p4i.MatchField.EXACT:
                raise invalid(f"table {info.name!r}: exact match field {field.name!r} is missing")
            key.append(dont_care(field))
            continue
        value, out = decode_field_match(info.name, field, fm)
        key.append(value)
        canonical.append(out)
    return tuple(key), canonical


def key_to_proto(info: IndexedTable, key: MatchKey) -> list[p4r.FieldMatch]:
    """Canonical FieldMatch list of a target key (don't-care fields omitted)."""
    out: list[p4r.FieldMatch] = []
    for field, value in zip(info.table.match_fields, key):
        fm = field_match_proto(field.id, int(field.bitwidth), value)
        if fm is not None:
            out.append(fm)
    return out


def _check_idle_timeout(info: IndexedTable, entry: p4r.TableEntry) -> None:
    """Spec: ``idle_timeout_ns`` != 0 or ``time_since_last_hit`` on a table without idle
    timeout support is INVALID_ARGUMENT."""
    if info.table.idle_timeout_behavior != p4i.Table.NO_TIMEOUT:
        return
    if entry.idle_timeout_ns:
        raise invalid(f"table {info.name!r} does not support idle timeout (idle_timeout_ns "
                      f"{entry.idle_timeout_ns}); its P4 table needs support_timeout = true")
    if entry.HasField("time_since_last_hit"):
        raise invalid(f"table {info.name!r} does not support idle timeout: time_since_last_hit "
                      "cannot be read; its P4 table needs support_timeout = true")


def parse_action(
    schema: Schema, info: IndexedTable, action: p4r.Action, *, default: bool
) -> tuple[BoundAction, p4r.Action]:
    """Validate an action for ``info`` (scope, params, widths); return it and its canonical form."""
    ref = info.actions.get(action.action_id)
    if ref is None:
        known = ", ".join(
            schema.actions[a].preamble.name for a in info.actions if a in schema.actions
        )
        raise invalid(
            f"action id {action.action_id} is not an action of table {info.name!r} "
            f"(its actions: {known})"
        )
    p4action = schema.action(action.action_id)
    name = p4action.preamble.name
    if default and ref.scope == p4i.ActionRef.TABLE_ONLY:
        raise invalid(f"action {name!r} is @tableonly in table {info.name!r}: not a default action")
    if not default and ref.scope == p4i.ActionRef.DEFAULT_ONLY:
        raise invalid(f"action {name!r} is @defaultonly in table {info.name!r}: not for entries")
    params = {p.id: p for p in p4action.params}
    values: dict[int, int] = {}
    for param in action.params:
        spec = params.get(param.param_id)
        if spec is None:
            raise invalid(f"action {name!r} has no parameter with id {param.param_id}")
        if param.param_id in values:
            raise invalid(f"action {name!r}: parameter {spec.name!r} given twice")
        values[param.param_id] = decode_bytes(
            param.value, int(spec.bitwidth), f"action {name!r} parameter {spec.name!r}"
        )
    missing = [p.name for p in p4action.params if p.id not in values]
    if missing:
        raise invalid(f"action {name!r}: missing parameter(s) {', '.join(missing)}")
    canonical = action_proto(action.action_id, ((p.id, values[p.id]) for p in p4action.params))
    return BoundAction(name, tuple(values[p.id] for p in p4action.params)), canonical


def action_to_proto(schema: Schema, call: BoundAction) -> p4r.Action:
    """The P4Runtime Action of a target BoundAction (looked up by name)."""
    for action in schema.actions.values():
        if action.preamble.name == call.action:
            return action_proto(action.preamble.id, ((p.id, v) for p, v in zip(action.params, call.args)))
    raise P4RuntimeError(
        grpc.StatusCode.INTERNAL, f"target reported action {call.action!r} absent from the P4Info"
    )


def meter_rates(config: p4r.MeterConfig) -> MeterRates | None:
    if config.ByteSize() == 0:
        return None
    return MeterRates(int(config.cir), int(config.cburst), int(config.pir), int(config.pburst))


class TableState:
    """Entries and default actions of every table of one pipeline."""

    def __init__(self, schema: Schema, pipeline: LoadedPipeline) -> None:
        self.schema = schema
        self.pipeline = pipeline
        self.entries: dict[int, dict[tuple[MatchKey, int], Installed]] = {}
        self.default_modified: dict[int, p4r.Action] = {}
        self.const_count: dict[int, int] = {}
        """Entries per table that the program declares (not counted against the size)."""
        self.profiles: ProfileState | None = None
        """Action profiles of the pipeline (set by the device); None: indirect tables fail."""
        self.default_indirect: dict[int, ProfileRef] = {}
        """Default member/group set on indirect tables."""
        for info in schema.tables.values():
            table = self.entries.setdefault(info.id, {})
            consts = pipeline.table_const_entries(info.name)
            self.const_count[info.id] = len(consts)
            for const in consts:
                entry = p4r.TableEntry(
                    table_id=info.id, priority=const.priority, is_const=True,
                    match=key_to_proto(info, const.key),
                )
                entry.action.action.CopyFrom(action_to_proto(schema, const.action))
                table[(const.key, const.priority)] = Installed(entry, None)

    # -- write ---------------------------------------------------------------------------

    def write(self, kind: int, entry: p4r.TableEntry) -> None:
        """Apply one INSERT/MODIFY/DELETE of a TableEntry."""
        info = self.schema.table(entry.table_id)
        if entry.HasField("time_since_last_hit"):
            raise invalid(f"table {info.name!r}: time_since_last_hit is read-only; leave it unset in writes")
        if entry.is_default_action:
            if entry.idle_timeout_ns:
                raise invalid(f"table {info.name!r}: a default entry has no idle timeout "
                              f"(idle_timeout_ns {entry.idle_timeout_ns})")
            self._write_default(kind, info, entry)
            return
        if info.table.is_const_table:
            raise permission_denied(
                f"table {info.name!r} is const (its entries are fixed by the P4 program)"
            )
        self._check_priority(info, entry)
        key, canonical_match = parse_match(info, entry)
        ident = (key, int(entry.priority))
        table = self.entries[info.id]
        existing = table.get(ident)
        self._check_resources(info, entry)
        if kind != p4r.Update.DELETE:
            _check_idle_timeout(info, entry)
        if kind == p4r.Update.INSERT:
            call, action = self._entry_action(info, entry)
            if existing is not None:
                raise already_exists(f"table {info.name!r}: an entry with this match key and "
                                     f"priority {entry.priority} already exists")
            size = int(info.table.size)
            if size and len(table) - self.const_count[info.id] >= size:
                raise P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                     f"table {info.name!r} is full ({size} entries)")
            ref = self._resolve(info, call)
            try:
                if ref is None:
                    handle = self.pipeline.table_insert(info.name, key, int(entry.priority), call)  # type: ignore[arg-type]
                else:
                    handle = self._profile_target().table_insert_indirect(info.name, key, int(entry.priority), ref)
            except Exception:
                self._release(info, ref)
                raise
            stored = p4r.TableEntry(table_id=info.id, match=canonical_match, priority=entry.priority,
                                    idle_timeout_ns=entry.idle_timeout_ns, metadata=entry.metadata)
            stored.action.CopyFrom(action)
            installed = Installed(stored, handle, ref=ref)
            table[ident] = installed
            self._apply_resources(info, installed, entry)
            return
        if kind == p4r.Update.MODIFY and entry.HasField("action"):
            self._entry_action(info, entry)  # an invalid action is reported before NOT_FOUND
        if existing is None:
            raise not_found(f"table {info.name!r}: no entry with this match key and priority "
                            f"{entry.priority}")
        if existing.handle is None:
            raise permission_denied(f"table {info.name!r}: entry is const (declared in the program)")
        if kind == p4r.Update.MODIFY:
            if entry.HasField("action"):
                call, action = self._entry_action(info, entry)
                ref = self._resolve(info, call)
                try:
                    if ref is None:
                        self.pipeline.table_modify(info.name, existing.handle, call)  # type: ignore[arg-type]
                    else:
                        self._profile_target().table_modify_indirect(info.name, existing.handle, ref)
                except Exception:
                    self._release(info, ref)
                    raise
                old, existing.ref = existing.ref, ref
                existing.entry.action.CopyFrom(action)
                self._release(info, old)
            existing.entry.idle_timeout_ns = entry.idle_timeout_ns
            existing.notified_at = None  # the (new) TTL counts from the last hit
            existing.entry.metadata = entry.metadata
            self._apply_resources(info, existing, entry)
            return
        if kind == p4r.Update.DELETE:
            self.pipeline.table_delete(info.name, existing.handle)
            del table[ident]
            self._release(info, existing.ref)
            return
        raise invalid(f"update type {kind} is not INSERT, MODIFY or DELETE")

    def _check_priority(self, info: IndexedTable, entry: p4r.TableEntry) -> None:
        problem = priority_problem(info.name, info.needs_priority, entry.priority)
        if problem is not None:
            raise invalid(problem)

    def _entry_action(self, info: IndexedTable, entry: p4r.TableEntry
                      ) -> tuple[BoundAction | ProfileRef | p4r.ActionProfileActionSet, p4r.TableAction]:
        """What the entry runs (an action, or for indirect tables a member/group reference
        or a one-shot action set, resolved by ``_resolve``) and its canonical TableAction."""
        kind = entry.action.WhichOneof("type")
        if kind is None:
            raise invalid(f"table {info.name!r}: the entry has no action")
        indirect = bool(info.table.implementation_id)
        if kind == "action":
            if indirect:
                raise invalid(f"table {info.name!r} has an action profile: entries give a member id, "
                              "a group id or a one-shot action set, not an action")
            call, action = parse_action(self.schema, info, entry.action.action, default=False)
            return call, p4r.TableAction(action=action)
        if self.profiles is None:
            raise unimplemented(f"table {info.name!r}: {kind} (action profiles) is not supported")
        if not indirect:
            raise invalid(f"table {info.name!r} has no action profile: {kind} is not allowed")
        canonical = p4r.TableAction()
        canonical.CopyFrom(entry.action)
        if kind == "action_profile_action_set":
            canonical.ClearField("action_profile_action_set")
            for a in entry.action.action_profile_action_set.action_profile_actions:
                _, action = parse_action(self.schema, info, a.action, default=False)
                out = canonical.action_profile_action_set.action_profile_actions.add(weight=a.weight)
                out.action.CopyFrom(action)
            return entry.action.action_profile_action_set, canonical
        return self.profiles.entry_ref(info, entry.action), canonical

    def _resolve(self, info: IndexedTable, call: object) -> ProfileRef | None:
        """None for a direct action; the member/group (one-shot: a new hidden group) otherwise."""
        if isinstance(call, BoundAction):
            return None
        assert self.profiles is not None
        if isinstance(call, ProfileRef):
            return call
        return self.profiles.oneshot(info, call)  # type: ignore[arg-type]

    def _release(self, info: IndexedTable, ref: ProfileRef | None) -> None:
        if self.profiles is not None:
            self.profiles.release_oneshot(info, ref)

    def _profile_target(self) -> ProfilePipeline:
        if not isinstance(self.pipeline, ProfilePipeline):
            raise unimplemented("this target does not support action profiles")
        return self.pipeline

    @staticmethod
    def _check_resources(info: IndexedTable, entry: p4r.TableEntry) -> None:
        if entry.HasField("counter_data") and info.direct_counter is None:
            raise invalid(f"table {info.name!r} has no direct counter (counter_data given)")
        if entry.HasField("meter_config") and info.direct_meter is None:
            raise invalid(f"table {info.name!r} has no direct meter (meter_config given)")

    def _apply_resources(self, info: IndexedTable, installed: Installed, entry: p4r.TableEntry) -> None:
        if entry.HasField("counter_data"):
            self.pipeline.direct_counter_write(info.name, installed.handle,
                                               int(entry.counter_data.byte_count),
                                               int(entry.counter_data.packet_count))
        if entry.HasField("meter_config"):
            rates = meter_rates(entry.meter_config)
            self.pipeline.direct_meter_set(info.name, installed.handle, rates)
            installed.meter = rates

    def _write_default(self, kind: int, info: IndexedTable, entry: p4r.TableEntry) -> None:
        if kind != p4r.Update.MODIFY:
            raise invalid(f"table {info.name!r}: the default entry can only be modified "
                          "(MODIFY with is_default_action), not inserted or deleted")
        if entry.match or entry.priority:
            raise invalid(f"table {info.name!r}: a default entry has no match fields and no priority")
        if info.table.const_default_action_id:
            raise permission_denied(f"table {info.name!r} has a const default action")
        if info.table.implementation_id:
            self._write_default_indirect(info, entry)
            return
        if not entry.HasField("action"):
            self.pipeline.table_set_default(info.name, None)
            self.default_modified.pop(info.id, None)
            return
        if entry.action.WhichOneof("type") != "action":
            raise invalid(f"table {info.name!r} has no action profile: its default entry takes an action")
        call, action = parse_action(self.schema, info, entry.action.action, default=True)
        self.pipeline.table_set_default(info.name, call)
        self.default_modified[info.id] = action

    def _write_default_indirect(self, info: IndexedTable, entry: p4r.TableEntry) -> None:
        """Default entry of an indirect table: a member or a group (BMv2's
        ``set_default_member``/``set_default_group``), or back to the program's default."""
        if self.profiles is None:
            raise unimplemented(f"table {info.name!r}: default entries of indirect tables")
        if not entry.HasField("action"):
            self._profile_target().table_set_default_indirect(info.name, None)
            self.default_indirect.pop(info.id, None)
            self.default_modified.pop(info.id, None)
            return
        if entry.action.WhichOneof("type") not in ("action_profile_member_id", "action_profile_group_id"):
            raise invalid(f"table {info.name!r} has an action profile: its default entry gives a member "
                          "id or a group id")
        ref = self.profiles.entry_ref(info, entry.action)
        self._profile_target().table_set_default_indirect(info.name, ref)
        self.default_indirect[info.id] = ref
        self.default_modified.pop(info.id, None)

    # -- read ----------------------------------------------------------------------------

    def read(self, request: p4r.TableEntry) -> Iterator[p4r.TableEntry]:
        """Entries selected by ``request`` (table_id 0: all tables), in canonical form."""
        infos = list(self.schema.tables.values()) if request.table_id == 0 else [
            self.schema.table(request.table_id)]
        hits = request.HasField("time_since_last_hit")
        if hits and request.table_id:
            _check_idle_timeout(infos[0], request)
            if request.is_default_action:
                raise invalid(f"table {infos[0].name!r}: a default entry has no time_since_last_hit")
        for info in infos:
            if request.is_default_action:
                yield self._default_entry(info)
                continue
            table = self.entries[info.id]
            if request.match:
                key, _ = parse_match(info, request)
                found = table.get((key, int(request.priority)))
                selected = [] if found is None else [found]
            else:
                selected = list(table.values())
            out = [self._with_resources(info, installed, request) for installed in selected]
            if hits and info.table.idle_timeout_behavior == p4i.Table.NOTIFY_CONTROL:
                self._time_since_last_hit(info, selected, out)
            yield from out

    def _default_entry(self, info: IndexedTable) -> p4r.TableEntry:
        out = p4r.TableEntry(table_id=info.id, is_default_action=True)
        ref = self.default_indirect.get(info.id)
        if ref is not None:
            if ref.member is not None:
                out.action.action_profile_member_id = ref.member
            else:
                out.action.action_profile_group_id = ref.group  # type: ignore[assignment]
            return out
        action = self.default_modified.get(info.id)
        if action is None:
            action = action_to_proto(self.schema, self.pipeline.table_get_default(info.name))
        out.action.action.CopyFrom(action)
        return out

    def _with_resources(self, info: IndexedTable, installed: Installed,
                        request: p4r.TableEntry) -> p4r.TableEntry:
        out = p4r.TableEntry()
        out.CopyFrom(installed.entry)
        if request.HasField("counter_data") and info.direct_counter is not None:
            if installed.handle is not None:
                nbytes, npackets = self.pipeline.direct_counter_read(info.name, installed.handle)
                out.counter_data.byte_count, out.counter_data.packet_count = nbytes, npackets
        if request.HasField("meter_config") and installed.meter is not None:
            m = installed.meter
            out.meter_config.cir, out.meter_config.cburst = m.cir, m.cburst
            out.meter_config.pir, out.meter_config.pburst = m.pir, m.pburst
        return out

    def _time_since_last_hit(self, info: IndexedTable, selected: list[Installed],
                             out: list[p4r.TableEntry]) -> None:
        """Set ``time_since_last_hit.elapsed_ns`` of the entries read (spec: whenever the
        request sets it, whatever the TTL). Const entries are not tracked: left unset."""
        target = self.pipeline
        if not isinstance(target, AgeingPipeline):
            raise unimplemented(f"table {info.name!r}: this target does not report time_since_last_hit")
        pairs = [(i, o) for i, o in zip(selected, out) if i.handle is not None]
        if not pairs:
            return
        now = target.clock_ns()
        hits = target.table_last_hits(info.name, [i.handle for i, _ in pairs])
        for (_, entry), last_hit in zip(pairs, hits):
            entry.time_since_last_hit.elapsed_ns = max(0, now - last_hit)

    def find(self, entry: p4r.TableEntry) -> tuple[IndexedTable, Installed]:
        """The installed entry a DirectCounterEntry/DirectMeterEntry names, or NOT_FOUND."""
        info = self.schema.table(entry.table_id)
        key, _ = parse_match(info, entry)
        found = self.entries[info.id].get((key, int(entry.priority)))
        if found is None:
            raise not_found(f"table {info.name!r}: no entry with this match key and priority "
                            f"{entry.priority}")
        return info, found
