"""Action profiles and selectors of innet's executor behind the ``ProfilePipeline`` protocol.

A mixin of ``InnetPipeline`` (``embedded_target``): it needs ``self.pipeline`` (a
``Pipeline``), ``self._table(name)``, ``self._fix_optional``, ``self._entry`` and ``self._entries``. The
executor's errors become ``TargetError``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar, cast

from innet.switch.p4runtime.target_api import (BoundAction, EntryHandle, ExactMatch, LpmMatch, MatchKey, ProfileRef, RangeMatch,
                                              TargetError, TernaryMatch)

if TYPE_CHECKING:
    from innet.switch.pipeline import KeySpec

F = TypeVar("F", bound=Callable[..., Any])


def _target_errors(method: F) -> F:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from innet.switch.pipeline import PipelineError

        try:
            return method(*args, **kwargs)
        except PipelineError as error:
            raise TargetError(str(error)) from None

    return wrapper  # type: ignore[return-value]


def _ref(ref: ProfileRef) -> dict[str, int]:
    return {"member": ref.member} if ref.member is not None else {"group": ref.group}  # type: ignore[dict-item]



def unpack_handle(handle: EntryHandle) -> tuple[str, tuple[KeySpec, ...], int]:
    """Entry handles this target hands out are ``(table, key specs, priority)`` tuples."""
    return cast("tuple[str, tuple[KeySpec, ...], int]", handle)



def key_specs(key: MatchKey) -> list[Any]:
    """The executor's key specs of a P4Runtime match key (one per field)."""
    from innet.switch.pipeline import KeySpec

    out = []
    for f in key:
        if isinstance(f, ExactMatch):
            out.append(KeySpec(f.value))
        elif isinstance(f, TernaryMatch):
            out.append(KeySpec(f.value, mask=f.mask))
        elif isinstance(f, LpmMatch):
            out.append(KeySpec(f.value, prefix_len=f.prefix_len))
        elif isinstance(f, RangeMatch):
            out.append(KeySpec(f.low, hi=f.high))
        else:
            out.append(KeySpec(0, mask=0) if f.value is None else KeySpec(f.value, mask=-1))
    return out


class InnetProfiles:
    """``ProfilePipeline`` methods over ``innet.switch.pipeline``."""

    pipeline: Any
    _entries: dict[EntryHandle, Any]
    _table: Callable[[str], Any]
    _fix_optional: Callable[[Any, list[Any]], list[Any]]

    @_target_errors
    def profile_member_set(self, profile: str, member_id: int, action: BoundAction, *, insert: bool) -> None:
        prof = self.pipeline.action_profile(profile)
        if insert:
            prof.add_member(member_id, action.action, action.args)
        else:
            prof.modify_member(member_id, action.action, action.args)

    @_target_errors
    def profile_member_delete(self, profile: str, member_id: int) -> None:
        self.pipeline.action_profile(profile).delete_member(member_id)

    @_target_errors
    def profile_group_set(self, profile: str, group_id: int, members: Sequence[tuple[int, int]],
                          *, insert: bool) -> None:
        prof = self.pipeline.action_profile(profile)
        if insert:
            prof.create_group(group_id, list(members))
        else:
            prof.set_group_members(group_id, list(members))

    @_target_errors
    def profile_group_delete(self, profile: str, group_id: int) -> None:
        self.pipeline.action_profile(profile).delete_group(group_id)

    @_target_errors
    def table_insert_indirect(self, table: str, key: MatchKey, priority: int, ref: ProfileRef) -> EntryHandle:

        t = self._table(table)
        specs = self._fix_optional(t, key_specs(key))
        handle = (table, tuple(specs), priority)
        self._entries[handle] = t.insert_indirect(specs, priority=priority, **_ref(ref))
        return handle

    @_target_errors
    def table_modify_indirect(self, table: str, handle: EntryHandle, ref: ProfileRef) -> None:
        _, specs, priority = unpack_handle(handle)
        self._table(table).modify_indirect(list(specs), priority=priority, **_ref(ref))

    @_target_errors
    def table_set_default_indirect(self, table: str, ref: ProfileRef | None) -> None:
        t = self._table(table)
        if ref is None:
            t.reset_default()
        else:
            t.set_default_indirect(**_ref(ref))
