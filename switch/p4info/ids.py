"""P4Runtime ids and aliases, computed exactly as p4c's control-plane back end does.

Every P4Info object id is ``(prefix << 24) | (jenkins_one_at_a_time(name) & 0xFFFFFF)``
(docs/design.md, "P4Info ids").  Names with an ``@id`` annotation are reserved first; the others get
their hashed id per resource type in sorted name order, probing the 32-bit hash value
upward on a collision.  Because ids depend only on the names, a P4Info published for the
same program by p4c is an oracle for ours.

The alias of an object is the shortest dot-separated suffix of its name that no other
control-plane name (of *any* resource type) shares.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

MASK32 = 0xFFFFFFFF


class Prefix(enum.IntEnum):
    """Resource-type prefixes (the top byte of an id), as in p4info.proto's P4Ids."""

    ACTION = 0x01
    TABLE = 0x02
    VALUE_SET = 0x03
    CONTROLLER_HEADER = 0x04
    ACTION_PROFILE = 0x11
    COUNTER = 0x12
    DIRECT_COUNTER = 0x13
    METER = 0x14
    DIRECT_METER = 0x15
    REGISTER = 0x16
    DIGEST = 0x17


def jenkins_one_at_a_time(data: bytes | str) -> int:
    """Bob Jenkins' one-at-a-time hash over the bytes of ``data`` (32-bit)."""
    raw = data.encode() if isinstance(data, str) else data
    h = 0
    for b in raw:
        h = (h + b) & MASK32
        h = (h + (h << 10)) & MASK32
        h ^= h >> 6
    h = (h + (h << 3)) & MASK32
    h ^= h >> 11
    h = (h + (h << 15)) & MASK32
    return h


def make_id(prefix: int, value: int) -> int:
    """The id for a resource type ``prefix`` and a 32-bit (hash) value."""
    return (prefix << 24) | (value & 0xFFFFFF)


def hashed_id(prefix: int, name: str) -> int:
    """The id p4c gives ``name`` when nothing collides with it."""
    return make_id(prefix, jenkins_one_at_a_time(name))


class IdError(ValueError):
    """An ``@id`` annotation that P4Runtime cannot accept."""


@dataclass
class _SuffixNode:
    instances: int = 0
    edges: dict[str, "_SuffixNode"] = field(default_factory=dict)


class SuffixSet:
    """All control-plane names, as a tree of reversed dot components, to find aliases."""

    def __init__(self) -> None:
        self._root = _SuffixNode()
        self._names: set[str] = set()

    def add(self, name: str) -> None:
        if not name:
            raise ValueError("control-plane names must not be empty")
        if name in self._names:
            return
        self._names.add(name)
        node = self._root
        for component in reversed(name.split(".")):
            node = node.edges.setdefault(component, _SuffixNode())
            node.instances += 1

    def shortest_unique_suffix(self, name: str) -> str:
        components = name.split(".")
        node = self._root
        needed = 0
        for component in reversed(components):
            child = node.edges.get(component)
            if child is None:
                raise KeyError(f"control-plane name {name!r} was never added to the suffix set")
            node = child
            needed += 1
            if node.instances < 2:
                break
        return ".".join(components[len(components) - needed :])


class SymbolTable:
    """Control-plane names per resource type, their ids and aliases.

    Use: :meth:`add` every symbol (duplicates of the same type are ignored, as p4c
    does for actions localised into several controls), then :meth:`compute_ids`, then
    :meth:`id_of` / :meth:`alias_of`.
    """

    def __init__(self) -> None:
        self._ids: dict[Prefix, dict[str, int | None]] = {}
        self._assigned: set[int] = set()
        self._suffixes = SuffixSet()
        self._computed = False

    def add(self, prefix: Prefix, name: str, user_id: int | None = None) -> None:
        """Register ``name`` of type ``prefix``; ``user_id`` is its ``@id`` value if any."""
        table = self._ids.setdefault(prefix, {})
        if name in table:
            return
        table[name] = self._reserve(prefix, name, user_id) if user_id is not None else None
        self._suffixes.add(name)

    def _reserve(self, prefix: Prefix, name: str, user_id: int) -> int:
        if not 0 <= user_id <= MASK32:
            raise IdError(f"@id of {name!r} must be an unsigned 32-bit integer, got {user_id}")
        type_prefix = prefix << 24
        if user_id & 0xFF000000 and user_id & 0xFF000000 != type_prefix:
            raise IdError(
                f"@id {user_id:#x} of {name!r} has the wrong 8-bit prefix for a "
                f"{prefix.name.lower()} (expected {int(prefix):#04x})"
            )
        value = user_id | type_prefix
        if value in self._assigned:
            raise IdError(f"@id {value} of {name!r} is assigned to multiple declarations")
        self._assigned.add(value)
        return value

    def compute_ids(self) -> None:
        """Give every symbol without ``@id`` its hashed id (sorted names, linear probing)."""
        for prefix in sorted(self._ids):
            table = self._ids[prefix]
            for name in sorted(n for n, i in table.items() if i is None):
                start = jenkins_one_at_a_time(name)
                value = start
                while make_id(prefix, value) in self._assigned:
                    value = (value + 1) & MASK32
                    if value == start:
                        raise IdError(f"no id left to represent {name!r} in P4Runtime")
                new_id = make_id(prefix, value)
                self._assigned.add(new_id)
                table[name] = new_id
        self._computed = True

    def id_of(self, prefix: Prefix, name: str) -> int:
        if not self._computed:
            raise RuntimeError("SymbolTable.compute_ids() must run before ids are read")
        try:
            value = self._ids[prefix][name]
        except KeyError:
            raise KeyError(f"no {prefix.name.lower()} named {name!r} in the symbol table") from None
        assert value is not None
        return value

    def alias_of(self, name: str) -> str:
        return self._suffixes.shortest_unique_suffix(name)

    def names(self, prefix: Prefix) -> list[str]:
        return list(self._ids.get(prefix, {}))
