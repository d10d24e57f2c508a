"""LuWu model-in-network data parallelism over innet's reduce-to and broadcast: the plan every
member shares.

One ``sum`` job on the switch whose chunks have **owners** (docs/PROTOCOL.md, "Reduce-to and
broadcast"): the N workers (ranks ``0..N-1``) and the S optimizer nodes (ranks
``N..N+S-1``; node ``s`` owns shard ``s`` of a :class:`ShardPlan` over the model's chunks
and the job's chunks that carry it). Per layer and step:

- ``push`` of layer ``i``: the workers agree on a bound of the layer's gradients (one
  CONTRIB chunk on the plain lane: every worker's max |g| at its rank) and quantize with
  ``quantize.sum_frac_bits(bound, N)``; then they send the layer as REDUCE. Each chunk's sum
  goes to its owner only, which divides it by N and applies Adam to its shard. The scale
  reaches the owner inside the sum: every *segment* (the part of a layer one node owns)
  starts with one header value that rank 0 sets to ``f * 2**-f`` (so ``f`` after
  quantization) and the others to 0.
- ``pull`` of layer ``i``: the owners BCAST the float32 *bits* of their segments and the
  workers fetch them (header-only requests): parameters reach the workers bit for bit.

So a worker sends the model once and receives it once per step (plus one header-only frame
per chunk each way), and a node only its shard: the wire of LuWu's design. The job's
vector (the *wire* layout): the model's segments in model order, each ``1 + n`` values padded
to whole chunks of K; a layer's segments are consecutive chunks, and so are a node's
(its ``innet_owners`` range, :meth:`LuwuPlan.owner_ranges`).

The order of operations, the same on every member: pulls of layers ``0..L-1`` (initial
parameters), then per step the pushes of layers ``L-1..0`` (the order backward produces
them) and the pulls of ``0..L-1`` (the order forward needs them). See docs/luwu.md.

**Duplex plans** (``pull_job`` set): one agent carries one operation at a time, so on one
job a member's pushes and pulls take turns on its link, and a step costs the model's bytes
up *plus* down. A duplex plan puts the pulls on a second job (``pull_job``, its own slots,
every member a second agent on its own UDP port): the pushes walk layers ``L-1..0`` on the
push job while the pulls walk the segments in the same order on the pull job, each pull
right after its node updated the segment (:func:`pull_order`). Uplink and downlink then
carry a step at once and a step costs about the bytes of one direction. ``piece`` cuts the
segments into pieces of at most that many chunks, so a pull trails its push by a piece, not
by a whole layer.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import Any, Iterator, Literal

from innet import wire
from innet.host.agent.aggregator import Timing
from innet.wire.owners import Lanes, OwnerRange, OwnersError

Op = tuple[Literal["pull", "push"], int]
"""(kind, layer index)."""


class LuwuPlanError(ValueError):
    """A LuWu plan is inconsistent; names the field and the value."""


@dataclass(frozen=True)
class Segment:
    """The part of layer ``layer`` that node ``node`` owns, on the wire: ``chunks`` chunks
    from job chunk ``first_chunk``, value 0 the header (the scale of a push), values
    ``1..n`` the layer's elements ``at..at+n-1`` (the node's shard elements ``local..``)."""

    layer: int
    node: int
    at: int
    local: int
    n: int
    first_chunk: int
    chunks: int


@dataclass(frozen=True)
class LuwuPlan:
    """What every member of a LuWu job knows (JSON on node and worker command lines)."""

    job: int
    """Job id of the sum job."""
    num_workers: int
    """Workers N (ranks 0..N-1)."""
    nodes: tuple[str, ...]
    """Optimizer node names; node ``s`` has rank ``N + s`` and shard ``s``."""
    layer_sizes: tuple[int, ...]
    """Elements per layer, in forward order."""
    epoch: int
    """The job epoch the member set attached with (``Controller.attach``)."""
    layer_names: tuple[str, ...] = ()
    window: int = 64
    k: int = wire.DEFAULT_K
    shards: tuple[tuple[int, int], ...] = ()
    """Element range ``[start, stop)`` of each node; empty: ``ShardPlan.contiguous`` over
    the model's chunks of K (see :func:`shard_ranges`)."""
    pull_job: int | None = None
    """Job id of the pulls in a duplex plan (module docstring); None: pulls share ``job``."""
    pull_epoch: int = 1
    """The pull job's epoch (``Controller.attach``)."""
    piece: int = 0
    """Chunks per segment at most (a longer part of a layer is several segments); 0: no limit."""
    outstanding: int = 0
    """Chunks in flight per agent at most; 0: the job's window. A duplex plan's links carry
    both directions at once, so every chunk in flight is a frame queued in front of the
    other direction's acknowledgements: a window of 64 jumbo frames queues ~40 ms at 100
    Mbit/s, RTTs swing with it and a quarter of the chunks were sent twice (measured)."""

    def __post_init__(self) -> None:
        if not self.nodes:
            raise LuwuPlanError("luwu plan: needs at least one optimizer node")
        if self.num_workers < 1 or self.members > wire.MAX_WORKERS:
            raise LuwuPlanError(f"luwu plan: {self.num_workers} workers + {len(self.nodes)} nodes must be "
                                f"1..{wire.MAX_WORKERS} members of the job")
        if not self.layer_sizes or any(s < 1 for s in self.layer_sizes):
            raise LuwuPlanError(f"luwu plan: layer sizes {list(self.layer_sizes)} must be positive, at least one")
        if self.layer_names and len(self.layer_names) != len(self.layer_sizes):
            raise LuwuPlanError(f"luwu plan: {len(self.layer_names)} layer names for {len(self.layer_sizes)} layers")
        if not self.shards:
            object.__setattr__(self, "shards", shard_ranges(self.total, self.k, self.nodes))
        if len(self.shards) != len(self.nodes):
            raise LuwuPlanError(f"luwu plan: {len(self.shards)} shards for {len(self.nodes)} nodes")
        expected = 0
        for (a, b), name in zip(self.shards, self.nodes):
            if a != expected or b < a:
                raise LuwuPlanError(f"luwu plan: shard of node {name} is {a}..{b}, expected to start at {expected}")
            expected = b
        if self.pull_job is not None and self.pull_job == self.job:
            raise LuwuPlanError(f"luwu plan: pull job {self.pull_job} is the push job; a duplex plan needs two jobs")
        if self.outstanding < 0:
            raise LuwuPlanError(f"luwu plan: outstanding {self.outstanding} chunks must be >= 0")
        if self.piece < 0 or self.piece == 1:
            raise LuwuPlanError(f"luwu plan: piece {self.piece} chunks: 0 (no limit) or at least 2 (header + values)")
        if expected != self.total:
            raise LuwuPlanError(f"luwu plan: shards cover {expected} of {self.total} elements")
        empty = [name for (a, b), name in zip(self.shards, self.nodes) if a == b]
        if empty:
            raise LuwuPlanError(f"luwu plan: node(s) {', '.join(empty)} own no parameters ({self.total} "
                                f"parameters in chunks of {self.k} for {len(self.nodes)} nodes): use fewer nodes")
        try:
            Lanes(self.window, self.owner_ranges())
        except OwnersError as error:
            raise LuwuPlanError(f"luwu plan: {error}") from None

    def timing(self, timing: Timing) -> Timing:
        """``timing`` with the plan's limit of chunks in flight."""
        return replace(timing, max_outstanding=self.outstanding) if self.outstanding else timing

    @property
    def duplex(self) -> bool:
        return self.pull_job is not None

    @property
    def members(self) -> int:
        return self.num_workers + len(self.nodes)

    @property
    def total(self) -> int:
        return sum(self.layer_sizes)

    @property
    def offsets(self) -> tuple[int, ...]:
        out, at = [], 0
        for s in self.layer_sizes:
            out.append(at)
            at += s
        return tuple(out)

    def node_rank(self, index: int) -> int:
        return self.num_workers + index

    def node_name(self, rank: int) -> str | None:
        """The node with job rank ``rank``, or None for a worker rank."""
        i = rank - self.num_workers
        return self.nodes[i] if 0 <= i < len(self.nodes) else None

    def overlap(self, layer: int, node: int) -> tuple[int, int, int] | None:
        """(offset in the layer, offset in the node's shard, length) of the part of ``layer``
        that node ``node`` owns; None when it owns none."""
        a = self.offsets[layer]
        b = a + self.layer_sizes[layer]
        s0, s1 = self.shards[node]
        lo, hi = max(a, s0), min(b, s1)
        if lo >= hi:
            return None
        return lo - a, lo - s0, hi - lo

    @cached_property
    def segments(self) -> tuple[Segment, ...]:
        """Every (layer, node) part of the model on the wire, in model order (module docstring)."""
        out: list[Segment] = []
        chunk = 0
        for layer in range(len(self.layer_sizes)):
            for node in range(len(self.nodes)):
                part = self.overlap(layer, node)
                if part is None:
                    continue
                at, local, n = part
                most = self.piece * self.k - 1 if self.piece else n
                for lo in range(0, n, most):
                    m = min(most, n - lo)
                    chunks = -(-(1 + m) // self.k)
                    out.append(Segment(layer, node, at + lo, local + lo, m, chunk, chunks))
                    chunk += chunks
        return tuple(out)

    def layer_segments(self, layer: int) -> tuple[Segment, ...]:
        """The segments of ``layer``: consecutive chunks, by node."""
        return tuple(s for s in self.segments if s.layer == layer)

    def owner_ranges(self) -> tuple[OwnerRange, ...]:
        """The job's chunk owners (``JobConfig.owners``, the controller's ``innet_owners``)."""
        out = []
        for node in range(len(self.nodes)):
            mine = [s for s in self.segments if s.node == node]
            if mine:
                out.append(OwnerRange(self.node_rank(node), mine[0].first_chunk,
                                      mine[-1].first_chunk + mine[-1].chunks - mine[0].first_chunk))
        return tuple(out)

    @property
    def wire_chunks(self) -> int:
        """Chunks of the job's vector."""
        last = self.segments[-1]
        return last.first_chunk + last.chunks

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LuwuPlan":
        d = dict(data)
        for key in ("nodes", "layer_sizes", "layer_names"):
            d[key] = tuple(d.get(key, ()))
        d["shards"] = tuple(tuple(s) for s in d.get("shards", ()))
        return cls(**d)


def shard_ranges(total: int, k: int, nodes: tuple[str, ...]) -> tuple[tuple[int, int], ...]:
    """Element ranges of ``ShardPlan.contiguous`` over the ``ceil(total / K)`` chunks."""
    from innet.wire.shard import ShardPlan

    plan = ShardPlan.contiguous(-(-total // k), list(nodes))
    return tuple((min(s.first_chunk * k, total), min((s.first_chunk + s.chunks) * k, total))
                 for s in plan.shards)


def pull_order(plan: LuwuPlan) -> tuple[Segment, ...]:
    """The segments in the order a duplex plan pulls them, every version: layers ``L-1..0``
    (the order of the pushes, so each pull follows its node's update), each layer's segments
    in chunk order. Per node (lane) this is the order the node collects and broadcasts them."""
    return tuple(s for layer in reversed(range(len(plan.layer_sizes))) for s in plan.layer_segments(layer))


def schedule(layers: int, steps: int | None) -> Iterator[Op]:
    """The members' common sequence of operations (``steps`` None: without end)."""
    yield from (("pull", i) for i in range(layers))
    step = 0
    while steps is None or step < steps:
        yield from (("push", i) for i in reversed(range(layers)))
        yield from (("pull", i) for i in range(layers))
        step += 1
