"""Match-action tables: entries, default action and the match engine.

Keys are normalised per match kind:

- ``exact``: the value;
- ``lpm``: ``(value & mask, prefix_len)``;
- ``ternary``/``optional``: ``(value & mask, mask)`` (an optional wildcard has mask 0);
- ``range``: ``(lo, hi)`` inclusive.

Selection: an all-exact table is a dict; a table with one ``lpm`` key (others exact) picks
the longest prefix; any ternary/range/optional key makes it a priority table where the
numerically larger priority wins (P4Runtime/STF), ties going to the earlier entry.
Compile-time ``const entries`` get priorities by position (earlier wins).

Lookups return a *result* tuple ``(action_fn, args, action_index, hit, entry)`` that the
generated code calls directly; results are cached per key value and the cache is cleared
on every change.
"""

from __future__ import annotations

import bisect
import functools
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from innet.names import by_suffix, did_you_mean

from .errors import ControlPlaneError, EntryExistsError, EntryNotFoundError
from .params import bind_params

if TYPE_CHECKING:
    from .profiles import ActionProfile

CACHE_LIMIT = 1 << 16

F = TypeVar("F", bound=Callable[..., Any])


def _locked(method: F) -> F:
    """Run a control-plane mutation under the table's lock (the pipeline's packet lock),
    so that no packet sees, or caches, a half-applied change."""

    @functools.wraps(method)
    def wrapper(self: "Table", *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]

Result = tuple[Callable[..., Any], tuple[int, ...], int, bool, "Entry | None"]


@dataclass(slots=True)
class ActionInfo:
    """An action a table may run: its compiled function and control-plane parameters."""

    name: str
    fn: Callable[..., Any]
    params: tuple[tuple[str, int], ...]  # (name, width) of the directionless parameters
    index: int  # position in the table's action list (action_run value)


@dataclass(frozen=True, slots=True)
class KeySpec:
    """A control-plane key value for one table key.

    ``kind`` is one of exact, lpm, ternary, range, optional; ``value`` with ``mask``
    (ternary), ``prefix_len`` (lpm) or ``hi`` (range: ``value`` is the low bound).
    For optional, ``mask`` is 0 for the wildcard, else all ones.
    """

    value: int
    mask: int | None = None
    prefix_len: int | None = None
    hi: int | None = None


@dataclass(slots=True, eq=False)
class Entry:
    """An installed table entry (or the default entry when ``match`` is None)."""

    match: tuple[Any, ...] | None
    priority: int
    action: str
    params: tuple[int, ...]
    handle: int = 0
    packets: int = 0
    bytes: int = 0
    meter: Any = None
    result: Any = None
    members: Any = None  # action-profile member/group reference (set by the profile glue)
    last_hit: int = 0  # clock value of the last hit (or the insertion); ageing tables only


@dataclass
class KeyDef:
    """A table key as the executor sees it."""

    name: str
    kind: str
    width: int


class Table:
    """State and matcher of one table, addressed by its control-plane name."""

    def __init__(
        self,
        name: str,
        keys: Sequence[KeyDef],
        actions: Sequence[ActionInfo],
        default: tuple[str, tuple[int, ...]],
        default_is_const: bool = False,
        size: int | None = None,
        meter_factory: Callable[[], Any] | None = None,
        profile: "ActionProfile | None" = None,
        selector_widths: tuple[int, ...] = (),
        clock: Callable[[], int] | None = None,
    ) -> None:
        self.name = name
        self.clock = clock
        """The pipeline's monotonic clock (ns) for tables with ``support_timeout = true``;
        None for the others, whose entries carry no hit time."""
        self.profile = profile
        self.selector_widths = selector_widths
        self.default_ref: tuple[str, int] | None = None  # control-plane default member/group
        self.keys = list(keys)
        self.actions = {a.name: a for a in actions}
        self.actions_by_index = list(actions)
        self.size = size
        self.default_is_const = default_is_const
        self.meter_factory = meter_factory
        kinds = [k.kind for k in self.keys]
        unknown = [k for k in kinds if k not in ("exact", "lpm", "ternary", "range", "optional")]
        if unknown:
            raise ControlPlaneError(f"table '{name}': unsupported match kind {unknown[0]!r}")
        self.needs_priority = any(k in ("ternary", "range", "optional") for k in kinds)
        self.is_lpm = not self.needs_priority and kinds.count("lpm") == 1
        if kinds.count("lpm") > 1:
            self.needs_priority = True
            self.is_lpm = False
        self.single = len(self.keys) == 1
        self.lock: Any = threading.RLock()  # replaced by the pipeline's packet lock
        self.entries: dict[tuple[Any, ...], Entry] = {}
        self.const = False
        self.cache: dict[Any, Result] = {}
        self._next_handle = 0
        # match indexes, updated in place by insert/delete (see _index_add/_index_remove)
        self._sorted: list[Entry] = []  # priority tables: by (-priority, handle)
        self._order: list[tuple[int, int]] = []  # the sort keys of _sorted, for bisect
        self._lpm: list[tuple[int, dict[tuple[Any, ...], Entry]]] = []  # by prefix length, longest first
        self._lpm_by_len: dict[int, dict[tuple[Any, ...], Entry]] = {}
        self._lpm_index = [k.kind for k in self.keys].index("lpm") if self.is_lpm else -1
        self.default_entry = Entry(None, 0, "", ())
        self.set_default(default[0], default[1], _initial=True)
        if profile is not None:
            for a in actions:
                profile.actions.setdefault(a.name, a.params)
            profile.tables.append(self)

    # ------------------------------------------------------------------ control plane
    def action(self, name: str) -> ActionInfo:
        """The action named ``name`` (exactly or by dotted suffix)."""
        hits = by_suffix(name, self.actions)
        if len(hits) == 1:
            return self.actions[hits[0]]
        raise ControlPlaneError(
            f"table '{self.name}': no action named '{name}' (actions: {', '.join(self.actions)})."
            + did_you_mean(name, self.actions)
        )

    @_locked
    def set_default(self, action: str, params: Sequence[int] | dict[str, int] = (), *, _initial: bool = False) -> None:
        """Replace the default (miss) action."""
        if self.default_is_const and not _initial:
            raise ControlPlaneError(f"table '{self.name}': the default action is const")
        if self.profile is not None and not _initial:
            raise ControlPlaneError(f"table '{self.name}' uses action profile '{self.profile.name}': "
                                    "set a default member or group instead of a direct action")
        info = self.action(action)
        e = self.default_entry
        e.action, e.params = info.name, bind_params(info.name, info.params, params)
        e.result = (info.fn, e.params, info.index, False, None)
        self.cache.clear()

    def _normalise(self, keys: Sequence[KeySpec]) -> tuple[Any, ...]:
        if len(keys) != len(self.keys):
            raise ControlPlaneError(f"table '{self.name}': expects {len(self.keys)} keys, got {len(keys)}")
        out: list[Any] = []
        for kd, ks in zip(self.keys, keys):
            full = (1 << kd.width) - 1
            if ks.value < 0 or ks.value > full:
                raise ControlPlaneError(f"table '{self.name}': key {kd.name} value {ks.value:#x} does not fit bit<{kd.width}>")
            if kd.kind == "exact":
                out.append(ks.value)
            elif kd.kind == "lpm":
                plen = kd.width if ks.prefix_len is None else ks.prefix_len
                if not 0 <= plen <= kd.width:
                    raise ControlPlaneError(f"table '{self.name}': key {kd.name} prefix length {plen} not in 0..{kd.width}")
                m = full ^ ((1 << (kd.width - plen)) - 1)
                out.append((ks.value & m, plen))
            elif kd.kind in ("ternary", "optional"):
                m = full if ks.mask is None else ks.mask
                if kd.kind == "optional" and m not in (0, full):
                    raise ControlPlaneError(f"table '{self.name}': optional key {kd.name} mask must be 0 or all ones")
                out.append((ks.value & m, m))
            else:  # range
                hi = ks.value if ks.hi is None else ks.hi
                if hi > full or hi < ks.value:
                    raise ControlPlaneError(f"table '{self.name}': key {kd.name} range {ks.value}..{hi} is empty or too wide")
                out.append((ks.value, hi))
        return tuple(out)

    def _ident(self, match: tuple[Any, ...], priority: int) -> tuple[Any, ...]:
        return match + (priority,) if self.needs_priority else match

    @_locked
    def insert(self, keys: Sequence[KeySpec], action: str, params: Sequence[int] | dict[str, int] = (), priority: int = 0,
               *, _ref: tuple[str, int] | None = None) -> Entry:
        """Add an entry; raises EntryExistsError if the same match (and priority) exists."""
        if self.const:
            raise ControlPlaneError(f"table '{self.name}' has const entries and cannot be changed")
        if not self.keys:
            raise ControlPlaneError(f"table '{self.name}' has no key: only its default action can be set")
        if self.needs_priority and priority <= 0:
            raise ControlPlaneError(f"table '{self.name}': ternary/range/optional keys need a priority > 0, got {priority}")
        if self.profile is not None and _ref is None:
            raise ControlPlaneError(f"table '{self.name}' uses action profile '{self.profile.name}': "
                                    "its entries point to members or groups, not to direct actions")
        match = self._normalise(keys)
        ident = self._ident(match, priority if self.needs_priority else 0)
        if ident in self.entries:
            raise EntryExistsError(f"table '{self.name}': an entry with this key already exists")
        if self.size is not None and len(self.entries) >= self.size and self.size > 0:
            raise ControlPlaneError(f"table '{self.name}' is full ({self.size} entries)")
        if _ref is None:
            info = self.action(action)
            p = bind_params(info.name, info.params, params)
            e = Entry(match, priority if self.needs_priority else 0, info.name, p, self._next_handle)
            e.result = (info.fn, p, info.index, True, e)
        else:
            e = Entry(match, priority if self.needs_priority else 0, "", (), self._next_handle)
            self._point(e, _ref)
        e.meter = self.meter_factory() if self.meter_factory else None
        if self.clock is not None:
            e.last_hit = self.clock()  # BMv2: an entry's ageing starts at its insertion
        self._next_handle += 1
        self.entries[ident] = e
        self._index_add(e)
        return e

    def _find(self, keys: Sequence[KeySpec], priority: int) -> tuple[tuple[Any, ...], Entry]:
        ident = self._ident(self._normalise(keys), priority if self.needs_priority else 0)
        e = self.entries.get(ident)
        if e is None:
            raise EntryNotFoundError(f"table '{self.name}': no entry with this key")
        return ident, e

    @_locked
    def modify(self, keys: Sequence[KeySpec], action: str, params: Sequence[int] | dict[str, int] = (), priority: int = 0) -> Entry:
        """Change the action of an existing entry (counters are kept)."""
        if self.const:
            raise ControlPlaneError(f"table '{self.name}' has const entries and cannot be changed")
        _, e = self._find(keys, priority)
        if self.profile is not None:
            raise ControlPlaneError(f"table '{self.name}' uses action profile '{self.profile.name}': "
                                    "its entries point to members or groups, not to direct actions")
        info = self.action(action)
        e.action, e.params = info.name, bind_params(info.name, info.params, params)
        e.result = (info.fn, e.params, info.index, True, e)
        self.cache.clear()
        return e

    @_locked
    def delete(self, keys: Sequence[KeySpec], priority: int = 0) -> None:
        """Remove an entry."""
        if self.const:
            raise ControlPlaneError(f"table '{self.name}' has const entries and cannot be changed")
        ident, e = self._find(keys, priority)
        self._unpoint(e)
        del self.entries[ident]
        self._index_remove(e)

    @_locked
    def clear(self) -> None:
        """Remove every (non-const) entry."""
        if not self.const:
            for e in self.entries.values():
                self._unpoint(e)
            self.entries.clear()
            self._rebuild()

    # ------------------------------------------------------------------ indirect tables
    def _profile(self) -> "ActionProfile":
        if self.profile is None:
            raise ControlPlaneError(f"table '{self.name}' has no action profile: its entries take direct actions")
        return self.profile

    @staticmethod
    def _ref_of(member: int | None, group: int | None) -> tuple[str, int]:
        if (member is None) == (group is None):
            raise ControlPlaneError("give exactly one of member= and group=")
        return ("member", member) if member is not None else ("group", group)  # type: ignore[return-value]

    def check_member_action(self, action: str, member_id: int) -> None:
        """Raise unless this table can run ``action`` for a member it references."""
        if action in self.actions:
            return
        users = [e for e in list(self.entries.values()) + [self.default_entry] if e.members == ("member", member_id)]
        if users or self._group_uses(member_id):
            raise ControlPlaneError(f"table '{self.name}' has no action '{action}' (member {member_id})")

    def check_group(self, group_id: int, member_ids: Sequence[int]) -> None:
        """Raise unless this table can run every member of a group it references."""
        prof = self._profile()
        if not any(e.members == ("group", group_id) for e in list(self.entries.values()) + [self.default_entry]):
            return
        for mid in member_ids:
            action = prof.member(mid).action
            if action not in self.actions:
                raise ControlPlaneError(f"table '{self.name}' has no action '{action}' (member {mid} "
                                        f"of group {group_id})")

    def _group_uses(self, member_id: int) -> bool:
        prof = self._profile()
        gids = {e.members[1] for e in list(self.entries.values()) + [self.default_entry]
                if e.members is not None and e.members[0] == "group"}
        return any(member_id in prof.groups[g].weights for g in gids if g in prof.groups)

    def _member_result(self, m: Any, hit: bool, e: Entry | None) -> Result:
        info = self.actions.get(m.action)
        if info is None:
            raise ControlPlaneError(f"table '{self.name}' has no action '{m.action}' "
                                    f"(member {m.member_id} of action profile '{self._profile().name}')")
        return (info.fn, m.params, info.index, hit, e)

    def _ref_result(self, ref: tuple[str, int], hit: bool, e: Entry | None) -> Result:
        prof = self._profile()
        if ref[0] == "member":
            return self._member_result(prof.member(ref[1]), hit, e)
        places = [self._member_result(m, hit, e) for m in prof.group_members(ref[1])]
        if not places:  # BMv2: "Lookup in table yielded empty group" -> no action
            return (_no_action, (), -1, hit, e)
        if len(places) == 1:
            return places[0]
        widths, n, select = self.selector_widths, len(places), prof.select

        def pick(values: tuple[int, ...]) -> Result:
            return places[select(values, widths, n)]

        return (None, pick, -1, hit, e)  # type: ignore[return-value]

    def _point(self, e: Entry, ref: tuple[str, int]) -> None:
        prof = self._profile()
        if ref[0] == "member":
            prof.member(ref[1])
        else:
            if not prof.group(ref[1]).weights:
                raise ControlPlaneError(f"table '{self.name}': group {ref[1]} of action selector "
                                        f"'{prof.name}' is empty (BMv2 EMPTY_GRP)")
        e.result = self._ref_result(ref, e.match is not None, e)
        e.members = ref
        prof.ref(ref[0], ref[1], 1)

    def _unpoint(self, e: Entry) -> None:
        if e.members is not None and self.profile is not None:
            self.profile.ref(e.members[0], e.members[1], -1)
            e.members = None

    @_locked
    def insert_indirect(self, keys: Sequence[KeySpec], *, member: int | None = None, group: int | None = None,
                        priority: int = 0) -> Entry:
        """Add an entry pointing to a member or (action selectors) a group."""
        self._profile()
        return self.insert(keys, "", (), priority, _ref=self._ref_of(member, group))

    @_locked
    def modify_indirect(self, keys: Sequence[KeySpec], *, member: int | None = None, group: int | None = None,
                        priority: int = 0) -> Entry:
        """Point an existing entry to another member or group."""
        self._profile()
        ref = self._ref_of(member, group)
        _, e = self._find(keys, priority)
        old = e.members
        self._unpoint(e)
        try:
            self._point(e, ref)
        except ControlPlaneError:
            if old is not None:
                self._point(e, old)
            raise
        self.cache.clear()
        return e

    @_locked
    def set_default_indirect(self, *, member: int | None = None, group: int | None = None) -> None:
        """Run a member (or a group's pick) on a miss (BMv2 ``set_default_member/group``)."""
        prof = self._profile()
        if self.default_is_const:
            raise ControlPlaneError(f"table '{self.name}': the default action is const")
        ref = self._ref_of(member, group)
        if ref[0] == "member":
            prof.member(ref[1])
        else:
            prof.group(ref[1])
        old = self.default_entry.members
        self._unpoint(self.default_entry)
        try:
            self._point_default(ref)
        except ControlPlaneError:
            if old is not None:
                self._point_default(old)
            raise

    def _point_default(self, ref: tuple[str, int]) -> None:
        e = self.default_entry
        e.result = self._ref_result(ref, False, None)
        e.members = ref
        self._profile().ref(ref[0], ref[1], 1)
        self.cache.clear()

    @_locked
    def reset_default(self) -> None:
        """Back to the program's default action."""
        self._unpoint(self.default_entry)
        info = self.action(self.default_entry.action)
        self.default_entry.result = (info.fn, self.default_entry.params, info.index, False, None)
        self.cache.clear()

    def refresh_indirect(self) -> None:
        """Recompute entry results after the profile's members or groups changed."""
        for e in self.entries.values():
            if e.members is not None:
                e.result = self._ref_result(e.members, True, e)
        d = self.default_entry
        if d.members is not None:
            d.result = self._ref_result(d.members, False, None)
        self.cache.clear()

    def idle_ns(self, e: Entry, now: int | None = None) -> int:
        """Nanoseconds since ``e`` was last hit or inserted (``now`` defaults to the
        clock); raises for a table without ``support_timeout``."""
        if self.clock is None:
            raise ControlPlaneError(f"table '{self.name}' does not support idle timeout "
                                    "(declare support_timeout = true)")
        return max(0, (self.clock() if now is None else now) - e.last_hit)

    def list_entries(self) -> list[Entry]:
        """Installed entries in insertion order."""
        return sorted(self.entries.values(), key=lambda e: e.handle)

    @_locked
    def add_const_entries(self, entries: Sequence[tuple[Sequence[KeySpec], str, Sequence[int], int | None]]) -> None:
        """Install ``const entries``: explicit priorities, else earlier entries win."""
        n = len(entries)
        for i, (keys, action, params, prio) in enumerate(entries):
            p = prio if prio is not None else n - i
            self.insert(keys, action, params, p if self.needs_priority else 0)
        self.const = True

    # ------------------------------------------------------------------ match indexes
    # Priority tables keep the entries sorted by (-priority, handle) (bisect insertion and
    # removal); LPM tables keep one dict per prefix length (the masked key -> entry) and
    # the list of lengths, longest first; exact tables use ``entries`` itself. Every
    # change costs O(log n) comparisons plus a list shift, not a rebuild.
    def _lpm_key(self, e: Entry) -> tuple[int, tuple[Any, ...]]:
        assert e.match is not None
        li = self._lpm_index
        val, plen = e.match[li]
        return plen, e.match[:li] + (val,) + e.match[li + 1:]

    def _index_add(self, e: Entry) -> None:
        self.cache.clear()
        if self.needs_priority:
            order = (-e.priority, e.handle)
            i = bisect.bisect_right(self._order, order)
            self._order.insert(i, order)
            self._sorted.insert(i, e)
        elif self.is_lpm:
            plen, k = self._lpm_key(e)
            d = self._lpm_by_len.get(plen)
            if d is None:
                d = self._lpm_by_len[plen] = {}
                self._lpm = sorted(self._lpm_by_len.items(), reverse=True)
            d[k] = e

    def _index_remove(self, e: Entry) -> None:
        self.cache.clear()
        if self.needs_priority:
            i = bisect.bisect_left(self._order, (-e.priority, e.handle))
            if i == len(self._sorted) or self._sorted[i] is not e:
                raise AssertionError(f"table '{self.name}': priority index lost entry {e.handle}")
            del self._order[i]
            del self._sorted[i]
        elif self.is_lpm:
            plen, k = self._lpm_key(e)
            d = self._lpm_by_len[plen]
            del d[k]
            if not d:
                del self._lpm_by_len[plen]
                self._lpm = sorted(self._lpm_by_len.items(), reverse=True)

    def _rebuild(self) -> None:
        """All indexes from ``entries`` (after clear)."""
        self._sorted, self._order, self._lpm, self._lpm_by_len = [], [], [], {}
        self.cache.clear()
        for e in sorted(self.entries.values(), key=lambda x: x.handle):
            self._index_add(e)

    # ------------------------------------------------------------------ data plane

    def lookup(self, key: Any) -> Result:
        """The result for key value(s) ``key`` (an int for one key, else a tuple); cached."""
        r = self._lookup(key if not self.single else (key,))
        if len(self.cache) >= CACHE_LIMIT:
            self.cache.clear()
        self.cache[key] = r
        return r

    def _lookup(self, key: tuple[Any, ...]) -> Result:
        if self.needs_priority:
            for e in self._sorted:
                if _matches(self.keys, e.match, key):  # type: ignore[arg-type]
                    return e.result  # type: ignore[no-any-return]
            return self.default_entry.result  # type: ignore[no-any-return]
        if self.is_lpm:
            li = self._lpm_index
            w = self.keys[li].width
            full = (1 << w) - 1
            for plen, d in self._lpm:
                m = full ^ ((1 << (w - plen)) - 1)
                k = key[:li] + (key[li] & m,) + key[li + 1:]
                hit = d.get(k)
                if hit is not None:
                    return hit.result  # type: ignore[no-any-return]
            return self.default_entry.result  # type: ignore[no-any-return]
        found = self.entries.get(key)
        return (found.result if found is not None else self.default_entry.result)  # type: ignore[no-any-return]


def _no_action(S: Any) -> None:
    """What an entry pointing to an emptied group runs (nothing)."""


def _matches(keys: Sequence[KeyDef], match: tuple[Any, ...], key: tuple[Any, ...]) -> bool:
    for kd, m, k in zip(keys, match, key):
        kind = kd.kind
        if kind == "exact":
            if k != m:
                return False
        elif kind == "range":
            if not m[0] <= k <= m[1]:
                return False
        elif kind == "lpm":
            w = kd.width
            mask = ((1 << w) - 1) ^ ((1 << (w - m[1])) - 1)
            if k & mask != m[0]:
                return False
        else:
            if k & m[1] != m[0]:
                return False
    return True
