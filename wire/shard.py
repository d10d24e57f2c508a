"""Sharding the parameter vector across switches: contiguous ranges of chunks.

Element ``e`` of a job's vector is in global chunk ``e // K``; the switch owning that
chunk stores it as local chunk ``chunk - shard.first_chunk`` (register index
``param_base + local``), and agents send it with that local chunk number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


class ShardPlanError(ValueError):
    """A shard plan that does not tile its chunks (the controller reports it as a JobError)."""


@dataclass(frozen=True)
class Shard:
    """The chunks one switch owns."""

    switch: str
    """Switch name (SwitchEndpoint.name)."""
    first_chunk: int
    """First global chunk of the shard."""
    chunks: int
    """Number of chunks (may be 0 for a switch that gets none)."""

    @property
    def range(self) -> range:
        return range(self.first_chunk, self.first_chunk + self.chunks)


@dataclass(frozen=True)
class ShardPlan:
    """Contiguous, ordered, non-overlapping shards covering chunks 0..total-1."""

    shards: tuple[Shard, ...]

    def __post_init__(self) -> None:
        expected = 0
        names = [s.switch for s in self.shards]
        if len(set(names)) != len(names):
            raise ShardPlanError(f"shard plan names a switch twice: {names}")
        for s in self.shards:
            if s.first_chunk != expected or s.chunks < 0:
                raise ShardPlanError(f"shard plan: shard of {s.switch!r} starts at chunk {s.first_chunk}, "
                               f"expected {expected} (shards must be contiguous and in order)")
            expected += s.chunks

    @property
    def total_chunks(self) -> int:
        return sum(s.chunks for s in self.shards)

    @classmethod
    def contiguous(cls, total_chunks: int, switches: Sequence[str],
                   weights: Sequence[float] | None = None) -> "ShardPlan":
        """Split ``total_chunks`` over ``switches`` in order, proportionally to ``weights``
        (equal by default); earlier switches get the remainder."""
        if not switches:
            raise ShardPlanError("shard plan needs at least one switch")
        w = list(weights) if weights is not None else [1.0] * len(switches)
        if len(w) != len(switches) or any(x < 0 for x in w) or sum(w) <= 0:
            raise ShardPlanError(f"shard weights {w} do not fit switches {list(switches)}")
        total_w = sum(w)
        sizes = [int(total_chunks * x // total_w) for x in w]
        for i in range(total_chunks - sum(sizes)):
            sizes[i % len(sizes)] += 1
        shards, first = [], 0
        for name, n in zip(switches, sizes):
            shards.append(Shard(name, first, n))
            first += n
        return cls(tuple(shards))

    def shard(self, switch: str) -> Shard:
        for s in self.shards:
            if s.switch == switch:
                return s
        raise ShardPlanError(f"shard plan has no switch {switch!r}; it has {[s.switch for s in self.shards]}")

    def owner(self, chunk: int) -> tuple[str, int]:
        """(switch, local chunk) of global ``chunk``."""
        for s in self.shards:
            if chunk in s.range:
                return s.switch, chunk - s.first_chunk
        raise ShardPlanError(f"chunk {chunk} is outside the plan's 0..{self.total_chunks - 1}")
