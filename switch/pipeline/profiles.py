"""Action profiles and action selectors (v1model ``action_profile`` / ``action_selector``).

A table with ``implementation = action_profile(N)`` is *indirect*: its entries point to
**members** of the profile (member = action + action data). With ``action_selector(algo,
N, W)`` an entry may also point to a **group** of members; on a hit the data plane picks
one member of the group by hashing the table's ``selector`` keys. This follows BMv2
(``ActionProfile``, ``MatchTableIndirect``, ``MatchTableIndirectWS``):

- Every member gets a *handle* when it is created: the lowest handle not in use (BMv2's
  ``HandleMgr``), so a deleted member's handle is reused by the next one created.
- A group is a *set* of members ordered by handle, not by the order members were added
  (BMv2's ``RandAccessUIntSet``). A member with weight ``w`` (P4Runtime) takes ``w``
  consecutive places (BMv2's PI adds ``w`` copies of the member; innet keeps them next to
  each other).
- Selection: ``h = algo(selector fields packed MSB first, zero-padded to a byte) & 0xFFFFFFFF``
  (BMv2's ``hash_t`` is ``unsigned int``), member = ``group[h % len(group)]``. The
  selector's ``outputWidth`` argument does not enter BMv2's computation and is ignored.
- Deleting a member that an entry or a group references, or a group that an entry
  references, fails (``MBR_STILL_USED`` / ``GRP_STILL_USED``). An entry cannot point to an
  empty group (``EMPTY_GRP``); a group emptied later makes its entries run no action.
- Profile ``size`` is not enforced (BMv2 does not); the P4Runtime layer enforces it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from innet.names import by_suffix, did_you_mean

from .errors import ControlPlaneError, EntryExistsError, EntryNotFoundError, InUseError
from .hashing import HashFn
from .params import bind_params

@dataclass(slots=True)
class Member:
    """An action with its data, addressed by ``member_id``."""

    member_id: int
    handle: int
    action: str
    params: tuple[int, ...]


@dataclass(slots=True)
class Group:
    """A set of members with weights (member_id -> weight)."""

    group_id: int
    weights: dict[int, int] = field(default_factory=dict)


class ActionProfile:
    """Members and groups of one ``action_profile`` or ``action_selector`` instance.

    ``actions`` maps each action a member may run (the union of the actions of the tables
    that share this profile) to its parameter ``(name, width)`` list. Every mutation runs
    under ``lock`` (the pipeline's packet lock) and refreshes the tables using the profile.
    """

    def __init__(self, name: str, *, with_selector: bool, size: int,
                 hash_name: str | None = None, hash_fn: HashFn | None = None) -> None:
        self.name = name
        self.with_selector = with_selector
        self.size = size
        self.hash_name = hash_name
        self.hash_fn = hash_fn
        self.lock: Any = threading.RLock()
        self.actions: dict[str, tuple[tuple[str, int], ...]] = {}
        self.members: dict[int, Member] = {}
        self.groups: dict[int, Group] = {}
        self.refs: dict[tuple[str, int], int] = {}  # ("member"|"group", id) -> references
        self.tables: list[Any] = []  # Table objects using this profile
        self._handles: set[int] = set()

    # ------------------------------------------------------------------ helpers
    def _action_name(self, name: str) -> str:
        hits = by_suffix(name, self.actions)
        if len(hits) == 1:
            return hits[0]
        raise ControlPlaneError(
            f"action profile '{self.name}': no action named '{name}' (actions: {', '.join(self.actions)})."
            + did_you_mean(name, self.actions))

    def member(self, member_id: int) -> Member:
        m = self.members.get(member_id)
        if m is None:
            raise EntryNotFoundError(f"action profile '{self.name}': no member {member_id}")
        return m

    def group(self, group_id: int) -> Group:
        if not self.with_selector:
            raise ControlPlaneError(f"action profile '{self.name}' is not an action selector: it has no groups")
        g = self.groups.get(group_id)
        if g is None:
            raise EntryNotFoundError(f"action selector '{self.name}': no group {group_id}")
        return g

    def ref(self, kind: str, ident: int, delta: int) -> None:
        key = (kind, ident)
        self.refs[key] = self.refs.get(key, 0) + delta

    def _changed(self) -> None:
        for t in self.tables:
            t.refresh_indirect()

    def group_members(self, group_id: int) -> list[Member]:
        """The selection list of a group: members by handle, each repeated weight times."""
        g = self.group(group_id)
        out: list[Member] = []
        for m in sorted((self.members[i] for i in g.weights), key=lambda m: m.handle):
            out.extend([m] * g.weights[m.member_id])
        return out

    def select(self, values: tuple[int, ...], widths: tuple[int, ...], n: int) -> int:
        """Index into a group of ``n`` places for selector key ``values``."""
        from .hashing import pack_fields

        if self.hash_fn is None:
            return 0
        return (self.hash_fn(pack_fields(values, widths)) & 0xFFFFFFFF) % n

    # ------------------------------------------------------------------ members
    def add_member(self, member_id: int, action: str, params: Iterable[int] | dict[str, int] = ()) -> Member:
        """Create member ``member_id`` running ``action(params)``."""
        with self.lock:
            if member_id in self.members:
                raise EntryExistsError(f"action profile '{self.name}': member {member_id} already exists")
            name = self._action_name(action)
            handle = 0
            while handle in self._handles:
                handle += 1
            m = Member(member_id, handle, name, bind_params(name, self.actions[name], params))
            self._handles.add(handle)
            self.members[member_id] = m
            return m

    def next_member_id(self) -> int:
        """The lowest unused member id (what BMv2 would hand out as the next handle)."""
        i = 0
        while i in self.members:
            i += 1
        return i

    def modify_member(self, member_id: int, action: str, params: Iterable[int] | dict[str, int] = ()) -> Member:
        """Change the action and data of a member (entries and groups follow)."""
        with self.lock:
            m = self.member(member_id)
            name = self._action_name(action)
            p = bind_params(name, self.actions[name], params)
            for t in self.tables:
                t.check_member_action(name, member_id)
            m.action, m.params = name, p
            self._changed()
            return m

    def delete_member(self, member_id: int) -> None:
        """Remove a member no entry or group references."""
        with self.lock:
            m = self.member(member_id)
            n = self.refs.get(("member", member_id), 0)
            if n:
                raise InUseError(f"action profile '{self.name}': member {member_id} is still used "
                                 f"({n} reference(s) from table entries or groups)")
            del self.members[member_id]
            self._handles.discard(m.handle)
            self.refs.pop(("member", member_id), None)

    # ------------------------------------------------------------------ groups
    def _weights(self, members: Iterable[int | tuple[int, int]]) -> dict[int, int]:
        out: dict[int, int] = {}
        for spec in members:
            mid, w = (spec, 1) if isinstance(spec, int) else spec
            self.member(mid)
            if w < 1:
                raise ControlPlaneError(f"action selector '{self.name}': member {mid} has weight {w} (must be >= 1)")
            if mid in out:
                raise ControlPlaneError(f"action selector '{self.name}': member {mid} is listed twice in a group")
            out[mid] = w
        return out

    def create_group(self, group_id: int, members: Iterable[int | tuple[int, int]] = ()) -> Group:
        """Create group ``group_id`` with ``members`` (ids, or ``(id, weight)`` pairs)."""
        with self.lock:
            if not self.with_selector:
                raise ControlPlaneError(f"action profile '{self.name}' is not an action selector: it has no groups")
            if group_id in self.groups:
                raise EntryExistsError(f"action selector '{self.name}': group {group_id} already exists")
            weights = self._weights(members)
            g = Group(group_id, weights)
            self.groups[group_id] = g
            for mid in weights:
                self.ref("member", mid, 1)
            return g

    def next_group_id(self) -> int:
        """The lowest unused group id."""
        i = 0
        while i in self.groups:
            i += 1
        return i

    def set_group_members(self, group_id: int, members: Iterable[int | tuple[int, int]]) -> Group:
        """Replace the members of a group (P4Runtime MODIFY)."""
        with self.lock:
            g = self.group(group_id)
            weights = self._weights(members)
            for t in self.tables:
                t.check_group(group_id, list(weights))
            for mid in g.weights:
                self.ref("member", mid, -1)
            for mid in weights:
                self.ref("member", mid, 1)
            g.weights = weights
            self._changed()
            return g

    def add_member_to_group(self, group_id: int, member_id: int, weight: int = 1) -> None:
        """Add one member (BMv2 ``act_prof_add_member_to_group``)."""
        with self.lock:
            g = self.group(group_id)
            self.member(member_id)
            if member_id in g.weights:
                raise EntryExistsError(f"action selector '{self.name}': member {member_id} is already in group {group_id}")
            self.set_group_members(group_id, list(g.weights.items()) + [(member_id, weight)])

    def remove_member_from_group(self, group_id: int, member_id: int) -> None:
        """Remove one member (BMv2 ``act_prof_remove_member_from_group``)."""
        with self.lock:
            g = self.group(group_id)
            if member_id not in g.weights:
                raise EntryNotFoundError(f"action selector '{self.name}': member {member_id} is not in group {group_id}")
            self.set_group_members(group_id, [(m, w) for m, w in g.weights.items() if m != member_id])

    def delete_group(self, group_id: int) -> None:
        """Remove a group no entry references (its members stay)."""
        with self.lock:
            g = self.group(group_id)
            n = self.refs.get(("group", group_id), 0)
            if n:
                raise InUseError(f"action selector '{self.name}': group {group_id} is still used "
                                 f"by {n} table entr{'y' if n == 1 else 'ies'}")
            for mid in g.weights:
                self.ref("member", mid, -1)
            del self.groups[group_id]
            self.refs.pop(("group", group_id), None)

    def clear(self) -> None:
        """Remove every group and member (tables must hold no references)."""
        with self.lock:
            for gid in list(self.groups):
                self.delete_group(gid)
            for mid in list(self.members):
                self.delete_member(mid)

