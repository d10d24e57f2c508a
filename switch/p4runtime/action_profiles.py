"""Action profiles: P4Runtime ``ActionProfileMember`` / ``ActionProfileGroup`` <-> target.

Members and groups are kept here in canonical form (what a Read returns), so the spec's
checks do not depend on the target:

- INSERT of an existing member/group: ALREADY_EXISTS; MODIFY/DELETE of a missing one:
  NOT_FOUND; a group naming a member that does not exist: NOT_FOUND.
- DELETE of a member that a group or a table entry references, or of a group that a table
  entry references: FAILED_PRECONDITION.
- More members than the profile's ``size``, or a group larger than ``max_group_size``
  (sum of weights, or number of members with ``sum_of_members``): RESOURCE_EXHAUSTED.
- Groups only exist in action selectors; weights must be positive; ``watch``/``watch_port``
  is UNIMPLEMENTED (no port-status tracking).

Table entries of indirect tables point to a member (``action_profile_member_id``) or a
group (``action_profile_group_id``). A one-shot ``action_profile_action_set`` (selectors
only, as BMv2's PI allows) is realised as hidden members and a hidden group with ids above
the 32-bit range, released when the entry is modified or deleted; a profile is programmed
either one-shot or through members/groups, not both (P4Runtime spec).
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator, Mapping, Protocol

import grpc
from finsy.proto import p4i, p4r

from innet.switch.p4runtime.errors import P4RuntimeError, already_exists, invalid, not_found, unimplemented
from innet.switch.p4runtime.schema import Schema, IndexedTable
from innet.switch.p4runtime.target_api import LoadedPipeline, ProfilePipeline, ProfileRef

HIDDEN_BASE = 1 << 32
"""Member and group ids of one-shot entries start here (never a P4Runtime uint32 id)."""


def failed_precondition(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION, message)


def exhausted(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED, message)


class TableEntries(Protocol):
    """What profiles need of the table state: which installed entries point at a member or
    group (``innet.switch.p4runtime.tables.TableState`` provides it; a protocol keeps the two
    modules from importing each other)."""

    @property
    def entries(self) -> Mapping[int, Mapping[Any, Any]]: ...

    @property
    def default_indirect(self) -> Mapping[int, Any]: ...


class ProfileState:
    """Members and groups of every action profile of one pipeline."""

    def __init__(self, schema: Schema, pipeline: LoadedPipeline, tables: TableEntries) -> None:
        self.schema = schema
        self.pipeline = pipeline
        self.tables = tables
        self.members: dict[int, dict[int, p4r.ActionProfileMember]] = {i: {} for i in schema.action_profiles}
        self.groups: dict[int, dict[int, p4r.ActionProfileGroup]] = {i: {} for i in schema.action_profiles}
        self.mode: dict[int, str] = {}  # profile id -> "members" | "oneshot" once programmed
        self._hidden = itertools.count(HIDDEN_BASE)
        self._hidden_members: dict[int, list[int]] = {}  # hidden group -> its hidden members

    # -- helpers -------------------------------------------------------------------------

    def _target(self) -> ProfilePipeline:
        if not isinstance(self.pipeline, ProfilePipeline):
            raise unimplemented("this target does not support action profiles")
        return self.pipeline

    def profile(self, profile_id: int) -> p4i.ActionProfile:
        return self.schema.lookup("action profile", self.schema.action_profiles, profile_id)

    def profile_of(self, info: IndexedTable) -> p4i.ActionProfile:
        impl = int(info.table.implementation_id)
        if not impl:
            raise invalid(f"table {info.name!r} has no action profile: its entries take an action")
        return self.profile(impl)

    def _set_mode(self, prof: p4i.ActionProfile, mode: str) -> None:
        have = self.mode.get(prof.preamble.id)
        if have is not None and have != mode:
            raise invalid(f"action profile {prof.preamble.name!r} is programmed "
                          f"{'one-shot' if have == 'oneshot' else 'with members and groups'}; "
                          "the two cannot be mixed")
        self.mode[prof.preamble.id] = mode

    def _release_mode(self, prof: p4i.ActionProfile) -> None:
        pid = prof.preamble.id
        if not self.members[pid] and not self.groups[pid]:
            self.mode.pop(pid, None)

    def _member_action(self, prof: p4i.ActionProfile, action: p4r.Action) -> tuple[object, p4r.Action]:
        from innet.switch.p4runtime.tables import parse_action

        tables = [self.schema.tables[t] for t in prof.table_ids if t in self.schema.tables]
        for info in tables:
            if action.action_id in info.actions:
                return parse_action(self.schema, info, action, default=False)
        raise invalid(f"action id {action.action_id} is not an action of the tables of action profile "
                      f"{prof.preamble.name!r}")

    def _entry_refs(self, prof: p4i.ActionProfile, kind: str, ident: int) -> int:
        field = "action_profile_member_id" if kind == "member" else "action_profile_group_id"
        n = 0
        for tid in prof.table_ids:
            for installed in self.tables.entries.get(tid, {}).values():
                action = installed.entry.action
                if action.WhichOneof("type") == field and getattr(action, field) == ident:
                    n += 1
            default = self.tables.default_indirect.get(tid)
            if default is not None and default == ProfileRef(**{kind: ident}):
                n += 1
        return n

    # -- members -------------------------------------------------------------------------

    def write_member(self, kind: int, member: p4r.ActionProfileMember) -> None:
        self._target()
        prof = self.profile(member.action_profile_id)
        name, pid, mid = prof.preamble.name, prof.preamble.id, int(member.member_id)
        members = self.members[pid]
        existing = members.get(mid)
        if kind == p4r.Update.DELETE:
            if existing is None:
                raise not_found(f"action profile {name!r}: no member {mid}")
            groups = [g for g, grp in self.groups[pid].items() if any(m.member_id == mid for m in grp.members)]
            if groups:
                raise failed_precondition(f"action profile {name!r}: member {mid} is still in group(s) "
                                          f"{', '.join(map(str, sorted(groups)))}")
            n = self._entry_refs(prof, "member", mid)
            if n:
                raise failed_precondition(f"action profile {name!r}: member {mid} is still used by {n} "
                                          "table entr" + ("y" if n == 1 else "ies"))
            self._target().profile_member_delete(name, mid)
            del members[mid]
            self._release_mode(prof)
            return
        if not member.HasField("action"):
            raise invalid(f"action profile {name!r}: member {mid} has no action")
        call, action = self._member_action(prof, member.action)
        if kind == p4r.Update.INSERT:
            if existing is not None:
                raise already_exists(f"action profile {name!r}: member {mid} already exists")
            if prof.size and len(members) >= prof.size:
                raise exhausted(f"action profile {name!r} is full ({prof.size} members)")
            self._set_mode(prof, "members")
            self._target().profile_member_set(name, mid, call, insert=True)  # type: ignore[arg-type]
        elif kind == p4r.Update.MODIFY:
            if existing is None:
                raise not_found(f"action profile {name!r}: no member {mid}")
            self._target().profile_member_set(name, mid, call, insert=False)  # type: ignore[arg-type]
        else:
            raise invalid(f"update type {kind} is not INSERT, MODIFY or DELETE")
        members[mid] = p4r.ActionProfileMember(action_profile_id=pid, member_id=mid, action=action)

    def read_member(self, request: p4r.ActionProfileMember) -> Iterator[p4r.ActionProfileMember]:
        pids = [request.action_profile_id] if request.action_profile_id else list(self.members)
        for pid in pids:
            self.profile(pid)
            members = self.members[pid]
            if request.member_id:
                found = members.get(request.member_id)
                selected = [] if found is None else [found]
            else:
                selected = [members[m] for m in sorted(members)]
            for m in selected:
                out = p4r.ActionProfileMember()
                out.CopyFrom(m)
                yield out

    # -- groups --------------------------------------------------------------------------

    def _group_members(self, prof: p4i.ActionProfile, group: p4r.ActionProfileGroup) -> list[tuple[int, int]]:
        name, pid = prof.preamble.name, prof.preamble.id
        out: list[tuple[int, int]] = []
        seen: set[int] = set()
        for m in group.members:
            mid, weight = int(m.member_id), int(m.weight)
            if mid in seen:
                raise invalid(f"action profile {name!r}: member {mid} is listed twice in group {group.group_id}")
            seen.add(mid)
            if mid not in self.members[pid]:
                raise not_found(f"action profile {name!r}: group {group.group_id} names member {mid}, "
                                "which does not exist")
            if weight <= 0:
                raise invalid(f"action profile {name!r}: member {mid} of group {group.group_id} has weight "
                              f"{weight}; weights must be positive")
            if m.WhichOneof("watch_kind") is not None:
                raise unimplemented(f"action profile {name!r}: watch ports are not supported")
            out.append((mid, weight))
        sum_of_members = prof.WhichOneof("selector_size_semantics") == "sum_of_members"
        size = len(out) if sum_of_members else sum(w for _, w in out)
        if prof.max_group_size and size > prof.max_group_size:
            raise exhausted(f"action profile {name!r}: group {group.group_id} has size {size}, more than "
                            f"max_group_size {prof.max_group_size}")
        if sum_of_members and prof.sum_of_members.max_member_weight:
            heavy = [(m, w) for m, w in out if w > prof.sum_of_members.max_member_weight]
            if heavy:
                raise exhausted(f"action profile {name!r}: member {heavy[0][0]} has weight {heavy[0][1]}, "
                                f"more than max_member_weight {prof.sum_of_members.max_member_weight}")
        return out

    def write_group(self, kind: int, group: p4r.ActionProfileGroup) -> None:
        self._target()
        prof = self.profile(group.action_profile_id)
        name, pid, gid = prof.preamble.name, prof.preamble.id, int(group.group_id)
        if not prof.with_selector:
            raise invalid(f"action profile {name!r} is not an action selector: it has no groups")
        groups = self.groups[pid]
        existing = groups.get(gid)
        if kind == p4r.Update.DELETE:
            if existing is None:
                raise not_found(f"action profile {name!r}: no group {gid}")
            n = self._entry_refs(prof, "group", gid)
            if n:
                raise failed_precondition(f"action profile {name!r}: group {gid} is still used by {n} "
                                          "table entr" + ("y" if n == 1 else "ies"))
            self._target().profile_group_delete(name, gid)
            del groups[gid]
            self._release_mode(prof)
            return
        members = self._group_members(prof, group)
        if kind == p4r.Update.INSERT:
            if existing is not None:
                raise already_exists(f"action profile {name!r}: group {gid} already exists")
            self._set_mode(prof, "members")
            self._target().profile_group_set(name, gid, members, insert=True)
        elif kind == p4r.Update.MODIFY:
            if existing is None:
                raise not_found(f"action profile {name!r}: no group {gid}")
            self._target().profile_group_set(name, gid, members, insert=False)
        else:
            raise invalid(f"update type {kind} is not INSERT, MODIFY or DELETE")
        stored = p4r.ActionProfileGroup(action_profile_id=pid, group_id=gid, max_size=group.max_size)
        for mid, weight in members:
            stored.members.add(member_id=mid, weight=weight)
        groups[gid] = stored

    def read_group(self, request: p4r.ActionProfileGroup) -> Iterator[p4r.ActionProfileGroup]:
        pids = [request.action_profile_id] if request.action_profile_id else list(self.groups)
        for pid in pids:
            self.profile(pid)
            groups = self.groups[pid]
            if request.group_id:
                found = groups.get(request.group_id)
                selected = [] if found is None else [found]
            else:
                selected = [groups[g] for g in sorted(groups)]
            for g in selected:
                out = p4r.ActionProfileGroup()
                out.CopyFrom(g)
                yield out

    # -- table entries -------------------------------------------------------------------

    def entry_ref(self, info: IndexedTable, action: p4r.TableAction) -> ProfileRef:
        """The member/group a TableEntry of an indirect table points to (checked)."""
        prof = self.profile_of(info)
        name, pid = prof.preamble.name, prof.preamble.id
        kind = action.WhichOneof("type")
        self._target()
        if kind == "action_profile_member_id":
            mid = int(action.action_profile_member_id)
            if mid not in self.members[pid]:
                raise not_found(f"table {info.name!r}: action profile {name!r} has no member {mid}")
            return ProfileRef(member=mid)
        if kind == "action_profile_group_id":
            gid = int(action.action_profile_group_id)
            if not prof.with_selector:
                raise invalid(f"table {info.name!r}: action profile {name!r} is not a selector (group {gid} given)")
            if gid not in self.groups[pid]:
                raise not_found(f"table {info.name!r}: action selector {name!r} has no group {gid}")
            return ProfileRef(group=gid)
        raise invalid(f"table {info.name!r}: expected a member id, a group id or an action set, got {kind}")

    def oneshot(self, info: IndexedTable, action_set: p4r.ActionProfileActionSet) -> ProfileRef:
        """Hidden members and group for a one-shot action set; returns the group."""
        prof = self.profile_of(info)
        name = prof.preamble.name
        if not prof.with_selector:
            raise invalid(f"table {info.name!r}: one-shot action sets need an action selector; "
                          f"{name!r} is an action profile")
        if not action_set.action_profile_actions:
            raise invalid(f"table {info.name!r}: empty one-shot action set")
        calls = []
        for a in action_set.action_profile_actions:
            if a.weight <= 0:
                raise invalid(f"table {info.name!r}: one-shot action weight {a.weight}; weights must be positive")
            if a.WhichOneof("watch_kind") is not None:
                raise unimplemented(f"table {info.name!r}: watch ports are not supported")
            from innet.switch.p4runtime.tables import parse_action

            call, _ = parse_action(self.schema, info, a.action, default=False)
            calls.append((call, int(a.weight)))
        size = sum(w for _, w in calls)
        if prof.max_group_size and size > prof.max_group_size:
            raise exhausted(f"table {info.name!r}: one-shot action set has size {size}, more than "
                            f"max_group_size {prof.max_group_size}")
        self._set_mode(prof, "oneshot")
        target = self._target()
        members = []
        for call, weight in calls:
            mid = next(self._hidden)
            target.profile_member_set(name, mid, call, insert=True)
            members.append((mid, weight))
        gid = next(self._hidden)
        target.profile_group_set(name, gid, members, insert=True)
        self._hidden_members[gid] = [m for m, _ in members]
        return ProfileRef(group=gid)

    def release_oneshot(self, info: IndexedTable, ref: ProfileRef | None) -> None:
        """Free the hidden group and members of a one-shot entry that no longer uses them."""
        if ref is None or ref.group is None or ref.group < HIDDEN_BASE:
            return
        prof = self.profile_of(info)
        target = self._target()
        name = prof.preamble.name
        member_ids = self._hidden_members.pop(ref.group, [])
        target.profile_group_delete(name, ref.group)
        for mid in member_ids:
            target.profile_member_delete(name, mid)
        if not any(i.entry.action.WhichOneof("type") == "action_profile_action_set"
                   for t in prof.table_ids for i in self.tables.entries.get(t, {}).values()):
            self.mode.pop(prof.preamble.id, None)
