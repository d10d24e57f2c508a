"""The adapter interface between the P4Runtime server and an executing P4 program.

The server speaks P4Runtime (ids, bytestrings, protobuf); a target speaks control-plane
*names* (the P4Info preamble names, e.g. ``MyIngress.ipv4_lpm``) and Python integers.
Everything P4Runtime-specific (id lookup, bytestring canonicalisation, default-field
handling, priority rules, duplicate detection) happens above this interface, so a target
only has to apply already-validated operations.

Conventions every target follows:

- A match key is a tuple with one element per match field of the table, in P4Info order.
  Don't-care fields are given explicitly (ternary mask 0, LPM prefix 0, full range,
  optional ``None``), so the target never has to know P4Runtime's omission rules.
- Priorities use the P4Runtime convention: a *higher* number wins. Tables without
  ternary/range/optional fields always get priority 0.
- Ports are integers as the P4 program sees them (``standard_metadata`` port numbers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Protocol, Sequence, Union, runtime_checkable

from finsy.proto import p4i

# A target matches on the codec's key values (shared with the controller).
from innet.switch.p4rt_codec.matches import (
    ExactMatch,
    FieldMatch,
    LpmMatch,
    MatchKey,
    OptionalMatch,
    RangeMatch,
    TernaryMatch,
)


@dataclass(frozen=True)
class BoundAction:
    """An action with its arguments.

    ``action`` is the P4Info name of the action (``MyIngress.forward``, ``NoAction``);
    ``args`` holds one integer per parameter, in P4Info order.
    """

    action: str
    args: tuple[int, ...] = ()


@dataclass(frozen=True)
class PreReplica:
    """One copy made by the packet replication engine."""

    port: int
    """Egress port of the copy."""
    instance: int
    """Replication id (``egress_rid``) of the copy."""


@dataclass(frozen=True)
class MeterRates:
    """Two-rate three-colour meter configuration in P4Runtime units.

    Rates are per second (bytes or packets, depending on the meter's unit), bursts in the
    same unit.
    """

    cir: int
    cburst: int
    pir: int
    pburst: int


@dataclass(frozen=True)
class ProgramEntry:
    """An entry declared with ``const entries`` (or ``entries``) in the P4 program."""

    key: MatchKey
    priority: int
    action: BoundAction


@dataclass(frozen=True)
class Digest:
    """One digest message emitted by the data plane."""

    name: str
    """P4Info name of the digest (the type name of the digested struct)."""
    values: tuple[int, ...]
    """One integer per struct member, in P4Info order."""


class TargetError(Exception):
    """A target refused an operation; the message names the object and the value."""


EntryHandle = Hashable
"""Opaque reference a target returns for an installed table entry."""


@runtime_checkable
class LoadedPipeline(Protocol):
    """One loaded P4 program with its state.

    Every method is called with the device lock held: a target does not need its own
    locking, and never sees a control-plane write interleaved with ``process``.
    """

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one packet received on ``port``; return ``(egress port, bytes)`` outputs."""
        ...

    def table_insert(
        self, table: str, key: MatchKey, priority: int, action: BoundAction
    ) -> EntryHandle:
        """Add an entry (uniqueness was checked above); return a handle for it."""
        ...

    def table_modify(self, table: str, handle: EntryHandle, action: BoundAction) -> None:
        """Change the action of an installed entry."""
        ...

    def table_delete(self, table: str, handle: EntryHandle) -> None:
        """Remove an installed entry."""
        ...

    def table_set_default(self, table: str, action: BoundAction | None) -> None:
        """Set the default action; None restores the program's initial default action."""
        ...

    def table_get_default(self, table: str) -> BoundAction:
        """The current default action of ``table``."""
        ...

    def table_const_entries(self, table: str) -> list[ProgramEntry]:
        """Entries the program declares for ``table`` (empty when none)."""
        ...

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        """(bytes, packets) of an indirect counter cell."""
        ...

    def counter_write(self, name: str, index: int, byte_count: int, packet_count: int) -> None:
        """Set an indirect counter cell."""
        ...

    def direct_counter_read(self, table: str, handle: EntryHandle) -> tuple[int, int]:
        """(bytes, packets) of the direct counter of an entry."""
        ...

    def direct_counter_write(
        self, table: str, handle: EntryHandle, byte_count: int, packet_count: int
    ) -> None:
        """Set the direct counter of an entry."""
        ...

    def meter_set(self, name: str, index: int, rates: MeterRates | None) -> None:
        """Configure a meter cell; None resets it to all-green (unconfigured)."""
        ...

    def direct_meter_set(self, table: str, handle: EntryHandle, rates: MeterRates | None) -> None:
        """Configure the direct meter of an entry; None resets it."""
        ...

    def register_read(self, name: str, index: int) -> int:
        """Value of a register cell (unsigned)."""
        ...

    def register_write(self, name: str, index: int, value: int) -> None:
        """Set a register cell."""
        ...

    def register_read_range(self, name: str, start: int, n: int) -> list[int]:
        """Cells ``start..start+n-1`` (unsigned) in one call."""
        ...

    def register_write_range(self, name: str, start: int, values: Sequence[int]) -> None:
        """Set cells ``start..`` to ``values`` in one call."""
        ...

    def multicast_group_set(self, group: int, replicas: Sequence[PreReplica]) -> None:
        """Create or replace a multicast group."""
        ...

    def multicast_group_delete(self, group: int) -> None:
        """Remove a multicast group."""
        ...

    def clone_session_set(
        self, session: int, replicas: Sequence[PreReplica], class_of_service: int, truncate: int
    ) -> None:
        """Create or replace a clone session; ``truncate`` 0 means whole packets."""
        ...

    def clone_session_delete(self, session: int) -> None:
        """Remove a clone session."""
        ...

    def take_digests(self) -> list[Digest]:
        """Digests emitted since the last call, oldest first."""
        ...


@dataclass(frozen=True)
class ProfileRef:
    """What an entry of an indirect table points to: an action-profile member or an
    action-selector group (exactly one of the two is set)."""

    member: int | None = None
    group: int | None = None


@runtime_checkable
class ProfilePipeline(Protocol):
    """Action profiles and selectors, for targets that support them (by P4Info name).

    Member and group ids are the controller's. Uniqueness, existence and reference checks
    were done above; a target may still refuse with ``TargetError``.
    """

    def profile_member_set(self, profile: str, member_id: int, action: BoundAction, *, insert: bool) -> None:
        """Create (``insert``) or change a member."""
        ...

    def profile_member_delete(self, profile: str, member_id: int) -> None:
        """Remove a member that nothing references."""
        ...

    def profile_group_set(self, profile: str, group_id: int, members: Sequence[tuple[int, int]],
                          *, insert: bool) -> None:
        """Create (``insert``) or replace a group; ``members`` are (member id, weight)."""
        ...

    def profile_group_delete(self, profile: str, group_id: int) -> None:
        """Remove a group that no entry references."""
        ...

    def table_insert_indirect(self, table: str, key: MatchKey, priority: int, ref: ProfileRef) -> EntryHandle:
        """Add an entry of an indirect table; return a handle for it."""
        ...

    def table_modify_indirect(self, table: str, handle: EntryHandle, ref: ProfileRef) -> None:
        """Point an entry to another member or group."""
        ...

    def table_set_default_indirect(self, table: str, ref: ProfileRef | None) -> None:
        """Run a member or group on a miss; None restores the program's default action."""
        ...


@runtime_checkable
class AgeingPipeline(Protocol):
    """Entry hit times of tables with idle timeout (``support_timeout = true``), for
    targets that track them. The server compares them with the entries'
    ``idle_timeout_ns`` in its ageing sweep and answers ``time_since_last_hit`` reads."""

    def clock_ns(self) -> int:
        """The target's monotonic clock in ns: the time base of ``table_last_hits``."""
        ...

    def table_last_hits(self, table: str, handles: Sequence[EntryHandle]) -> list[int]:
        """When each entry was last hit by a packet (its insertion when never), one
        ``clock_ns`` value per handle."""
        ...


@dataclass(frozen=True)
class LoadedConfig:
    """A verified pipeline: the P4Info the controller sees and the program to run."""

    p4info: p4i.P4Info
    pipeline: LoadedPipeline


class Target(Protocol):
    """Turns forwarding-pipeline configs into runnable pipelines."""

    def load(self, p4info: p4i.P4Info | None, device_config: bytes) -> LoadedConfig:
        """Verify and build a pipeline from device-config bytes.

        ``device_config`` is innet's device config (as produced by ``innet-p4c``) or P4
        source text; a ``p4.tmp.P4DeviceConfig`` wrapper has already been removed. When
        ``p4info`` is None (e.g. a program given on the command line) the target derives
        it from the program. Raises ``TargetError`` when the config is invalid or does not
        match ``p4info``.
        """
        ...
