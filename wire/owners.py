"""Chunk owners of a job and the lanes its slots are split into (docs/PROTOCOL.md, "Reduce-to
and broadcast").

A job's REDUCE/BCAST copies have the N workers *and the chunk's owner* as members. A slot
copy may be reused only when every member of its previous use is done with it, which each
member shows by moving on through the slot's other copy; so all uses of a slot must have the
same members. The job's ``window`` slots are therefore split into *lanes*: the plain lane
(slots ``0 .. plain_slots-1``, CONTRIB operations of the workers) and one lane of
``owner_slots`` slots per owner (in the order of ``owners``), used only by that owner's
chunks. Each lane is a stream of its own: a member's position in a lane advances by the
chunks of that lane in each operation, and every member of a lane makes the same
operations on it. The controller installs the same ranges in ``innet_owners`` (each range
as its aligned prefixes, :func:`prefixes`).
"""

from __future__ import annotations

from dataclasses import dataclass

from innet import wire

OWNER_GROUP_BASE = 0x4000
"""Multicast groups of owners are ``OWNER_GROUP_BASE | job << 5 | rank`` (a job's own group
stays below it). They end below 0x8000: P4Runtime servers built on p4lang's PI (BMv2's
simple_switch_grpc) refuse group ids from ``1 << 15`` (reserved for clone sessions)."""
MAX_OWNER_JOB = 1 << 9
"""Job ids with owner groups are below this (``job << 5`` stays clear of the base's bit)."""


class OwnersError(ValueError):
    """Owners or lanes of a job are inconsistent; names the job, rank or chunk."""


@dataclass(frozen=True)
class OwnerRange:
    """Chunks ``first_chunk .. first_chunk + chunks - 1`` of a job belong to member ``rank``
    (a rank outside the workers' ``0 .. N-1``): REDUCE sums of them go to it, BCASTs of
    them come from it."""

    rank: int
    first_chunk: int
    chunks: int

    def __post_init__(self) -> None:
        if not 0 <= self.rank < wire.MAX_WORKERS:
            raise OwnersError(f"owner rank {self.rank} is outside 0..{wire.MAX_WORKERS - 1} (bitmap bits)")
        if self.chunks < 1 or self.first_chunk < 0 or self.stop > 1 << 32:
            raise OwnersError(f"owner rank {self.rank}: chunks {self.first_chunk}+{self.chunks} are empty or "
                              "outside the 32-bit chunk field")

    @property
    def stop(self) -> int:
        return self.first_chunk + self.chunks

    def __contains__(self, chunk: object) -> bool:
        return isinstance(chunk, int) and self.first_chunk <= chunk < self.stop


def prefixes(first: int, count: int, bits: int = 32) -> list[tuple[int, int]]:
    """``[first, first + count)`` as the fewest aligned blocks ``(value, prefix_len)`` of a
    ``bits``-bit field (at most 2 * bits of them): the ``innet_owners`` lpm entries."""
    out: list[tuple[int, int]] = []
    at, stop = first, first + count
    while at < stop:
        size = at & -at if at else 1 << bits
        while size > stop - at:
            size >>= 1
        out.append((at, bits - size.bit_length() + 1))
        at += size
    return out


def owner_group(job: int, rank: int) -> int:
    """The multicast group of ``job``'s workers plus owner ``rank``."""
    if not 0 <= job < MAX_OWNER_JOB:
        raise OwnersError(f"job {job}: owner groups need a job id below {MAX_OWNER_JOB}")
    return OWNER_GROUP_BASE | job << 5 | rank


def check_owners(owners: tuple[OwnerRange, ...], num_workers: int, what: str) -> None:
    """OwnersError unless every owner is outside the workers, ranks are unique and the
    ranges are disjoint."""
    ranks = [o.rank for o in owners]
    if len(set(ranks)) != len(ranks):
        raise OwnersError(f"{what}: owner ranks {ranks} repeat (one range per owner)")
    for o in owners:
        if o.rank < num_workers:
            raise OwnersError(f"{what}: owner rank {o.rank} is a worker rank (0..{num_workers - 1}); owners "
                              f"are members {num_workers}..{wire.MAX_WORKERS - 1}")
    spans = sorted(owners, key=lambda o: o.first_chunk)
    for a, b in zip(spans, spans[1:]):
        if b.first_chunk < a.stop:
            raise OwnersError(f"{what}: chunks of owners {a.rank} ({a.first_chunk}+{a.chunks}) and {b.rank} "
                              f"({b.first_chunk}+{b.chunks}) overlap")


@dataclass(frozen=True)
class Lanes:
    """Slots of a job's window per lane (see module docstring)."""

    window: int
    owners: tuple[OwnerRange, ...] = ()
    owner_slots: int = 0
    """Slots of each owner's lane; 0 (with owners): as many as leave the plain lane one slot."""

    def __post_init__(self) -> None:
        if self.owners and not self.owner_slots:
            object.__setattr__(self, "owner_slots", (self.window - 1) // len(self.owners))
        if self.owners and (self.owner_slots < 1 or self.plain_slots < 1):
            raise OwnersError(f"window {self.window}: {len(self.owners)} owner lanes of {self.owner_slots} slots "
                              "leave no slot for the plain lane (need window >= owners * owner_slots + 1)")

    @property
    def plain_slots(self) -> int:
        """Slots ``0 .. plain_slots-1``: the workers' CONTRIB operations."""
        return self.window - len(self.owners) * self.owner_slots

    def owner(self, chunk: int) -> OwnerRange | None:
        return next((o for o in self.owners if chunk in o), None)

    def lane(self, rank: int) -> tuple[int, int]:
        """(first slot, slots) of owner ``rank``'s lane."""
        for i, o in enumerate(self.owners):
            if o.rank == rank:
                return self.plain_slots + i * self.owner_slots, self.owner_slots
        raise OwnersError(f"rank {rank} owns no chunks (owners {[o.rank for o in self.owners]})")
