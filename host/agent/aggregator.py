"""The worker side of the aggregation protocol: chunks, a window of slots, retransmission.

One ``Aggregator`` per (job, worker), transport-independent. ``run(values)`` streams an
int32 vector through the job's slots and returns the switch's RESULT values:

- The vector is cut into chunks of K values; chunk ``c`` is sent with ``chunk = c`` (its
  index in the job's vector). Chunks take consecutive *stream positions* ``p`` that carry
  on across calls: position ``p`` uses slot ``p % window`` and copy ``VER = (p // window) % 2``,
  so the copy alternates at each reuse of a slot. All workers of a job make the same
  calls with the same lengths, so they agree on (slot, copy) for every chunk.
- Window: position ``p`` is sent only after the RESULT of ``p - window`` (the slot's
  previous use) arrived. This is what makes two copies enough (docs/PROTOCOL.md). Each
  slot is its own pipeline (as in SwitchML): the RESULT of a slot releases that slot's
  next chunk, so a chunk waiting for a retransmission holds up only its slot, not the
  window. Of the released chunks the lowest is sent first, at most ``Timing.max_outstanding``
  at a time (default: the whole window).
- Each outstanding chunk has a retransmission timer (``innet.host.agent.rto``): it starts at the
  RTO of RFC 6298 (SRTT + 4 RTTVAR, clamped to ``[min_rto, max_rto]``; samples from
  chunks sent once (Karn's rule) and from retransmitted chunks whose RESULT echoes this
  worker's original, i.e. spurious timeouts) and doubles per retransmission of that chunk; the next chunk of
  the slot starts afresh. An expiry of a chunk the switch has not acknowledged is loss
  evidence: it doubles the RTO of new chunks until the next valid RTT sample (TCP's
  back-off), at most once per timeout interval. Retransmissions carry ``RETRANS``; the
  switch answers a duplicate with the stored RESULT (copy complete) or a STATUS with its
  bitmap (incomplete), which names the missing workers.
- A STATUS shows the switch has this worker's contribution and waits for others (slower
  workers legitimately delay a RESULT): it is not loss evidence (a doubling caused by
  that chunk's expiry is undone) and the chunk keeps probing with its own back-off until
  the RESULT or its deadline.
- A RESULT/STATUS for a slot whose (chunk, copy) is not the outstanding one is late or
  duplicated and is ignored (counted).
- Every CONTRIB carries the job epoch the worker set attached with (``JobConfig.epoch``,
  from ``Controller.attach``). RESULT/STATUS of another epoch are late and ignored; a
  STALE whose epoch differs from ours (the switch's job moved on: another worker set
  attached) raises ``StaleEpochError`` at once. A new ``Aggregator`` starts at position 0:
  the switch treats slot copies of earlier epochs as empty, so it never gets their results.
- A chunk not complete ``chunk_deadline`` seconds after its first transmission raises
  ``AggregationError`` (at the deadline) naming the job, the chunk and the missing workers
  (from the last STATUS bitmap) or "no answer from switch".

Reduce-to and broadcast (``JobConfig.owners``: chunk ranges and the member ranks owning
them, as the controller installed them in ``innet_owners``): a worker's ``reduce_to(values,
first_chunk)`` sends REDUCE with values and gets header-only RESULTs; the owner's
``collect(size, first_chunk)`` sends header-only REDUCE requests for its chunks and gets
their sums. The owner's ``broadcast(values, first_chunk)`` sends BCAST with values and gets
header-only RESULTs; a worker's ``fetch(size, first_chunk)`` sends header-only BCAST
requests and gets the values. Each copy has the workers and the chunk's owner as members;
the slots are split into lanes (``innet.wire.owners.Lanes``: the plain lane for ``run``, one
per owner), each a stream of its own with the window rule above, so a copy is reused only
after all its members moved on. Chunks carry their number in the job (``first_chunk + c``),
which selects the owner. Loss recovery, STATUS, epochs and deadlines are as for ``run``; a
member that sent values accepts only a header-only RESULT as its acknowledgement, one that
sent a request only a RESULT with values.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import selectors
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import numpy.typing as npt

from innet import wire
from innet.wire.owners import Lanes, OwnerRange, OwnersError, check_owners
from innet.host.agent.rto import RtoBounds, RtoEstimator
from innet.host.agent.transport import Transport

LOG = logging.getLogger(__name__)


class AggregationError(RuntimeError):
    """A job's chunk could not complete within its deadline."""

    def __init__(self, message: str, job: int = 0, chunk: int = -1,
                 missing: tuple[int, ...] | None = None) -> None:
        super().__init__(message)
        self.job = job
        self.chunk = chunk
        self.missing = missing
        """Worker ranks the switch had no contribution from; None: no answer from switch."""

    def __reduce__(self) -> tuple[object, ...]:
        return (AggregationError, (str(self), self.job, self.chunk, self.missing))


class StaleEpochError(AggregationError):
    """The switch's job is at another epoch: another worker set attached to it since."""

    def __init__(self, message: str, job: int = 0, chunk: int = -1, epoch: int = 0,
                 switch_epoch: int = 0) -> None:
        super().__init__(message, job, chunk, None)
        self.epoch = epoch
        self.switch_epoch = switch_epoch

    def __reduce__(self) -> tuple[object, ...]:
        return (StaleEpochError, (str(self), self.job, self.chunk, self.epoch, self.switch_epoch))


@dataclass(frozen=True)
class JobConfig:
    """What a worker's agent knows about its job (set up by the controller)."""

    job: int
    """Job id (``innet_jobs`` key)."""
    rank: int
    """This worker's rank, 0..num_workers-1."""
    num_workers: int
    """Workers in the job."""
    window: int = 64
    """Slots of the job (``slot_count``): outstanding chunks at most."""
    k: int = wire.DEFAULT_K
    """Values per packet (P4 ``INNET_K``)."""
    epoch: int = field(kw_only=True)
    """The job incarnation this worker set attached with (``Controller.attach``): every
    worker of the set has the same one, and the switch accepts only the job's current one.
    Required: a default would let a second worker set reuse the first one's slot state."""
    owners: tuple[OwnerRange, ...] = field(default=(), kw_only=True)
    """Chunk ranges and their owners (``innet_owners``), for REDUCE/BCAST; every member of
    the job has the same. ``rank`` may be one of these owners' ranks."""
    owner_slots: int = field(default=0, kw_only=True)
    """Slots of each owner's lane (:class:`innet.wire.owners.Lanes`; 0: the default)."""

    def __post_init__(self) -> None:
        if not 1 <= self.num_workers <= wire.MAX_WORKERS:
            raise ValueError(f"job {self.job}: num_workers {self.num_workers} is outside 1..32")
        try:
            check_owners(self.owners, self.num_workers, f"job {self.job}")
        except OwnersError as error:
            raise ValueError(str(error)) from None
        if not (0 <= self.rank < self.num_workers or self.is_owner):
            raise ValueError(f"job {self.job}: rank {self.rank} is outside 0..{self.num_workers - 1} "
                             "and owns no chunks")
        if not 1 <= self.window <= 0xFFFF:
            raise ValueError(f"job {self.job}: window {self.window} is outside 1..65535")
        try:
            self.lanes
        except OwnersError as error:
            raise ValueError(f"job {self.job}: {error}") from None
        if self.k < 1:
            raise ValueError(f"job {self.job}: K {self.k} must be positive")
        if not 1 <= self.epoch <= 0xFFFFFFFF:
            raise ValueError(f"job {self.job}: epoch {self.epoch} is outside 1..2^32-1 "
                             "(attach the worker set with Controller.attach to get one)")

    @property
    def is_owner(self) -> bool:
        """This member owns chunks (it is not a worker)."""
        return any(o.rank == self.rank for o in self.owners)

    @property
    def lanes(self) -> Lanes:
        """How the window's slots are split between the plain lane and the owners' lanes."""
        return Lanes(self.window, self.owners, self.owner_slots)


@dataclass(frozen=True)
class Timing:
    """Retransmission, deadline and flow-control settings (seconds)."""

    initial_rto: float = 0.05
    """Retransmission timeout before any RTT sample."""
    min_rto: float = 0.02
    """Lower bound of the timeout. The switch and the agents are user processes on shared
    cores: RTTs of 2-8 ms spike to 20-60 ms when a process waits for a CPU, spikes too rare
    for 4 RTTVAR to cover (RFC 6298's 1 s and Linux's 200 ms floors exist for the same
    reason). 20 ms keeps spurious retransmissions near zero on loopback; 5 ms gave ~1%."""
    max_rto: float = 1.0
    """Upper bound of the timeout (after back-off)."""
    chunk_deadline: float = 10.0
    """A chunk not complete this long after its first transmission is an error."""
    max_outstanding: int | None = None
    """Chunks in flight at most; None: the job's window (every slot busy)."""

    def __post_init__(self) -> None:
        self.bounds()  # validates the RTO constants
        if not self.chunk_deadline > 0:
            raise ValueError(f"timing: chunk_deadline {self.chunk_deadline} must be positive")
        if self.max_outstanding is not None and self.max_outstanding < 1:
            raise ValueError(f"timing: max_outstanding {self.max_outstanding} must be >= 1")

    def bounds(self) -> RtoBounds:
        """The RTO estimator's constants."""
        return RtoBounds(initial_rto=self.initial_rto, min_rto=self.min_rto, max_rto=self.max_rto)


@dataclass
class AggregatorStats:
    """Counters of one aggregator (cumulative)."""

    sent: int = 0
    retransmitted: int = 0
    """Retransmissions, all causes (``probes`` included)."""
    probes: int = 0
    """Retransmissions of chunks the switch had acknowledged with a STATUS (waiting for other
    workers, or for a lost RESULT): not loss of this worker's contribution."""
    spurious: int = 0
    """Retransmitted chunks whose RESULT answered this worker's original transmission (the
    timeout was spurious; seen only when this worker's contribution completed the copy)."""
    backoffs: int = 0
    """Doublings of the shared RTO back-off (loss evidence; each undone or reset later)."""
    results: int = 0
    statuses: int = 0
    late: int = 0
    """RESULT/STATUS messages for a chunk that is not outstanding (duplicates, stale)."""
    foreign: int = 0
    """Messages for another job or malformed."""
    rtt_samples: int = 0
    """Valid RTT samples (chunks completed without retransmission)."""
    srtt_us: int = 0
    """Smoothed RTT at the end of the last operation, in microseconds."""
    rto_us: int = 0
    """RTO a new chunk would start with at the end of the last operation, in microseconds."""

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class _Chunk:
    """An outstanding chunk (one per busy slot)."""

    item: int
    """Index of the chunk in its operation (``_Run.items``)."""
    chunk: int
    """The ``chunk`` field on the wire."""
    slot: int
    ver: int
    message: bytes
    count: int
    receives: bool
    """The RESULT carries values for this member (else it acknowledges this member's values)."""
    members: tuple[int, ...]
    """Ranks whose contributions complete the copy (for naming the missing ones)."""
    first_sent: float
    deadline: float
    rto: float
    """This chunk's current timeout (doubled per retransmission)."""
    generation: int
    retries: int = 0
    acked: bool = False
    """A STATUS showed the switch has this worker's contribution."""
    backed_off: bool = False
    """An expiry of this chunk doubled the shared back-off (undone by a STATUS)."""
    bitmap: int | None = None
    num_workers: int = 0


@dataclass
class _Run:
    """The state of one operation: its chunks (``items``), each with its slot and copy."""

    kind: int
    """CONTRIB, REDUCE or BCAST."""
    first_chunk: int
    n: int
    """Elements of the operation's vector."""
    raw: bytes
    """The vector padded to whole chunks, big-endian (empty when this member sends none)."""
    out: npt.NDArray[np.int32]
    items: list[int]
    """Chunk index in the vector of each chunk this member takes part in, in order."""
    slot: list[int]
    ver: list[int]
    following: list[int]
    """The item that uses the same slot next in this operation, or -1."""
    owner: list[int]
    """Owner rank per item (-1: CONTRIB, no owner)."""
    slots: list[_Chunk | None]
    ready: list[int]
    """Heap of items whose slot is free (the previous use of the slot completed)."""
    timers: list[tuple[float, int, int]] = field(default_factory=list)
    """Heap of (expiry, slot, generation); stale entries are skipped."""
    outstanding: int = 0
    done: int = 0
    tokens: "itertools.count[int]" = field(default_factory=itertools.count)


@dataclass(frozen=True)
class LanePlan:
    """A REDUCE/BCAST operation of one member: the chunks it takes part in (``items``, chunk
    index in the operation's vector, ascending), each with its owner, slot and copy, and how
    far it moves each owner lane (``taken``). Shared by the python and the C loop."""

    items: npt.NDArray[np.int64]
    owner: npt.NDArray[np.int32]
    slot: npt.NDArray[np.uint32]
    ver: npt.NDArray[np.uint32]
    taken: dict[int, int]

    def advance(self, positions: dict[int, int]) -> None:
        """Move the lanes' positions past this operation (after it completed)."""
        for rank, n in self.taken.items():
            positions[rank] = positions.get(rank, 0) + n


def plan_owner_op(job: JobConfig, positions: dict[int, int], kind: wire.MsgType, chunks: int, first_chunk: int,
                  worker: bool) -> LanePlan:
    """The chunks of a ``kind`` operation over ``chunks`` chunks from ``first_chunk`` that
    this member (a worker, or an owner) takes part in, on the lanes at ``positions``: a
    lane's position advances by one per chunk of it, in chunk order. Raises ValueError for a
    member on the wrong side or a chunk without an owner."""
    role = "worker" if worker else "owner"
    if worker == job.is_owner:
        raise ValueError(f"job {job.job}: rank {job.rank} is {'an owner' if job.is_owner else 'a worker'}; "
                         f"this is the {role}'s side of {kind.name}")
    lanes = job.lanes
    if first_chunk < 0 or first_chunk + chunks > 1 << 32:
        raise ValueError(f"job {job.job}: chunks {first_chunk}+{chunks} are outside the 32-bit chunk field")
    chunk = first_chunk + np.arange(chunks, dtype=np.int64)
    owner_of = np.full(chunks, -1, np.int32)
    for o in lanes.owners:
        owner_of[(chunk >= o.first_chunk) & (chunk < o.stop)] = o.rank
    orphans = np.flatnonzero(owner_of < 0)
    if orphans.size:
        raise ValueError(f"job {job.job}: chunk {int(chunk[orphans[0]])} has no owner "
                         f"(owners {[(x.rank, x.first_chunk, x.chunks) for x in lanes.owners]})")
    items = np.arange(chunks, dtype=np.int64)
    if not worker:
        items = items[owner_of == job.rank]
    owner = owner_of[items]
    slot = np.zeros(items.size, np.uint32)
    ver = np.zeros(items.size, np.uint32)
    taken: dict[int, int] = {}
    for rank in np.unique(owner).tolist():
        mine = owner == rank
        first, slots = lanes.lane(rank)
        pos = positions.get(rank, 0) + np.arange(int(mine.sum()), dtype=np.int64)
        slot[mine] = first + pos % slots
        ver[mine] = (pos // slots) % 2
        taken[rank] = int(mine.sum())
    return LanePlan(items, owner, slot, ver, taken)


def lane_order(owner: npt.ArrayLike, lane_slots: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(following, ready) of a run's items: item ``i`` follows the item of its lane
    ``lane_slots`` before it (the slot's previous use: -1 where none does); the first
    ``lane_slots`` of each lane are ready at once (ascending)."""
    lanes = np.asarray(owner, np.int64)
    n = lanes.size
    order = np.argsort(lanes, kind="stable")  # each lane's items together, in item order
    grouped = lanes[order]
    at = np.arange(n)
    starts = np.r_[0, np.flatnonzero(np.diff(grouped)) + 1] if n else np.zeros(0, np.int64)
    rank_in_lane = at - np.repeat(starts, np.diff(np.r_[starts, n]))
    following = np.full(n, -1, np.int64)
    later = at + lane_slots
    same = later < n
    same[same] = grouped[later[same]] == grouped[same]
    following[order[same]] = order[later[same]]
    ready = np.sort(order[rank_in_lane < lane_slots])
    return following, ready


@dataclass
class Aggregator:
    """Streams vectors through a job's slots over one transport (see module docstring)."""

    job: JobConfig
    transport: Transport
    timing: Timing = field(default_factory=Timing)
    clock: Callable[[], float] = time.monotonic
    position: int = 0
    """Next stream position of the plain lane (slot = position % plain slots, copy =
    (position // plain slots) % 2)."""
    stats: AggregatorStats = field(default_factory=AggregatorStats)
    wait: Callable[[float], bool] | None = None
    """Block until the transport may have a message or ``timeout`` seconds passed (True if
    readable); None: a selector on ``transport.fileno()``. Tests pass a simulated network's."""
    rto: RtoEstimator = field(init=False)
    """RTT estimate and shared back-off; kept across calls."""
    lane_positions: dict[int, int] = field(default_factory=dict)
    """Next stream position in each owner's lane (owner rank -> position)."""

    def __post_init__(self) -> None:
        self.rto = RtoEstimator(self.timing.bounds())

    # -- operations ---------------------------------------------------------------------

    def run(self, values: npt.ArrayLike, out: npt.NDArray[np.int32] | None = None) -> npt.NDArray[np.int32]:
        """Aggregate ``values`` (int32) over the workers (CONTRIB, plain lane); the RESULT
        values, also written into ``out`` when given (contiguous int32 of the same size).
        Raises AggregationError."""
        if self.job.is_owner:
            raise ValueError(f"job {self.job.job}: rank {self.job.rank} is an owner, not a worker: "
                             "it takes part in REDUCE/BCAST only")
        vec = np.ascontiguousarray(values, dtype=np.int32).ravel()
        chunks = self._chunks(vec.size)
        window = self.job.lanes.plain_slots
        base = self.position
        positions = [base + c for c in range(chunks)]
        run = self._plan(wire.MsgType.CONTRIB, 0, vec, vec.size, list(range(chunks)), [-1] * chunks,
                         [p % window for p in positions], [(p // window) % 2 for p in positions], window)
        target = result_buffer(out, vec.size, self.job.job) if out is not None else None
        result = self._execute(run)
        self.position = base + chunks
        if target is None:
            return result
        target.reshape(-1)[:] = result
        return target

    def reduce_to(self, values: npt.ArrayLike, first_chunk: int = 0) -> None:
        """Worker: send ``values`` (int32; chunk ``c`` of it is chunk ``first_chunk + c`` of
        the job) as REDUCE; each chunk's sum goes to its owner. Returns once every chunk's
        copy is complete (its header-only RESULT). Raises AggregationError."""
        vec = np.ascontiguousarray(values, dtype=np.int32).ravel()
        self._owner_op(wire.MsgType.REDUCE, vec, vec.size, first_chunk, worker=True)

    def collect(self, size: int, first_chunk: int = 0) -> npt.NDArray[np.int32]:
        """Owner: the REDUCE sums of this owner's chunks among the ``size`` elements from
        chunk ``first_chunk`` (the same operation the workers send with ``reduce_to``);
        elements of other owners' chunks are 0. Raises AggregationError."""
        return self._owner_op(wire.MsgType.REDUCE, None, size, first_chunk, worker=False)

    def broadcast(self, values: npt.ArrayLike, first_chunk: int = 0) -> None:
        """Owner: send this owner's chunks of ``values`` (int32, chunk ``c`` is chunk
        ``first_chunk + c`` of the job; other owners' chunks are not read) as BCAST to the
        workers. Returns once every copy is complete. Raises AggregationError."""
        vec = np.ascontiguousarray(values, dtype=np.int32).ravel()
        self._owner_op(wire.MsgType.BCAST, vec, vec.size, first_chunk, worker=False)

    def fetch(self, size: int, first_chunk: int = 0) -> npt.NDArray[np.int32]:
        """Worker: the owners' BCAST values of ``size`` elements from chunk ``first_chunk``
        (header-only requests). Raises AggregationError."""
        return self._owner_op(wire.MsgType.BCAST, None, size, first_chunk, worker=True)

    def _chunks(self, n: int) -> int:
        chunks = -(-n // self.job.k)
        if chunks > 0xFFFFFFFF:
            raise ValueError(f"job {self.job.job}: {chunks} chunks exceed the 32-bit chunk field")
        return chunks

    def _owner_op(self, kind: wire.MsgType, vec: npt.NDArray[np.int32] | None, size: int, first_chunk: int,
                  worker: bool) -> npt.NDArray[np.int32]:
        lane_plan = plan_owner_op(self.job, self.lane_positions, kind, self._chunks(size), first_chunk, worker)
        run = self._plan(kind, first_chunk, vec, size, lane_plan.items.tolist(), lane_plan.owner.tolist(),
                         lane_plan.slot.tolist(), lane_plan.ver.tolist(), self.job.lanes.owner_slots)
        out = self._execute(run)
        lane_plan.advance(self.lane_positions)
        return out

    def _plan(self, kind: int, first_chunk: int, vec: npt.NDArray[np.int32] | None, size: int, items: list[int],
              owner: list[int], slot: list[int], ver: list[int], lane_slots: int) -> _Run:
        """The run of ``items`` (chunks of this member)."""
        k = self.job.k
        raw = b""
        if vec is not None:
            padded = np.zeros(-(-size // k) * k, dtype=wire.VALUE_DTYPE)
            padded[:size] = vec
            raw = padded.tobytes()
        following, ready = lane_order(owner, lane_slots)
        return _Run(kind, first_chunk, size, raw, np.zeros(-(-size // k) * k, dtype=np.int32), items, slot, ver,
                    following.tolist(), owner, [None] * self.job.window, ready.tolist())

    def _execute(self, run: _Run) -> npt.NDArray[np.int32]:
        limit = min(self.job.window, self.timing.max_outstanding or self.job.window)
        selector = None
        wait = self.wait
        if wait is None:
            selector = sel = selectors.DefaultSelector()
            sel.register(self.transport.fileno(), selectors.EVENT_READ)
            wait = lambda timeout: bool(sel.select(timeout))  # noqa: E731
        try:
            self._fill(run, limit)
            while run.done < len(run.items):
                timeout = (max(0.0, run.timers[0][0] - self.clock()) if run.timers
                           else self.timing.max_rto)
                if wait(timeout):
                    for _ in range(256):
                        data = self.transport.receive()
                        if data is None:
                            break
                        if self._receive(run, data):
                            self._fill(run, limit)
                self._expire(run, self.clock())
        finally:
            if selector is not None:
                selector.close()
            self.stats.srtt_us = round((self.rto.srtt or 0.0) * 1e6)
            self.stats.rto_us = round(self.rto.rto * 1e6)
        return run.out[:run.n]

    def _fill(self, run: _Run, limit: int) -> None:
        """Send released chunks, lowest first, while fewer than ``limit`` are outstanding."""
        now = self.clock()
        while run.ready and run.outstanding < limit:
            self._send(run, heapq.heappop(run.ready), now)

    def _send(self, run: _Run, item: int, now: float) -> None:
        k, job = self.job.k, self.job
        c = run.items[item]
        slot, ver = run.slot[item], run.ver[item]
        count = min(k, run.n - c * k)
        carries = (run.kind == wire.MsgType.CONTRIB
                   or (run.kind == wire.MsgType.REDUCE) != job.is_owner)
        flags = ver if carries else ver | wire.Flag.HDRONLY
        chunk = run.first_chunk + c
        header = wire.HEADER.pack(run.kind, flags, job.job, job.rank, slot, chunk, count, 0, 0, job.epoch)
        message = header + run.raw[c * k * 4:(c + 1) * k * 4] if carries else header
        workers = tuple(range(job.num_workers))
        members = workers if run.owner[item] < 0 else workers + (run.owner[item],)
        state = _Chunk(item, chunk, slot, ver, message, count, run.kind == wire.MsgType.CONTRIB or not carries,
                       members, now, now + self.timing.chunk_deadline, self.rto.rto, next(run.tokens))
        run.slots[slot] = state
        run.outstanding += 1
        self.transport.send(message)
        self.stats.sent += 1
        self._arm(run, state, now)

    @staticmethod
    def _arm(run: _Run, state: _Chunk, now: float) -> None:
        heapq.heappush(run.timers, (min(now + state.rto, state.deadline), state.slot, state.generation))

    def _receive(self, run: _Run, data: bytes) -> bool:
        """Handle one message; True if it completed an outstanding chunk."""
        try:
            msg_type, flags, job, sender, slot, chunk, count, num_workers, bitmap, epoch = \
                wire.HEADER.unpack_from(data)
        except Exception:
            self.stats.foreign += 1
            return False
        if job != self.job.job or msg_type not in (wire.MsgType.RESULT, wire.MsgType.STATUS,
                                                   wire.MsgType.STALE):
            self.stats.foreign += 1
            return False
        if msg_type == wire.MsgType.STALE:
            if epoch == self.job.epoch:  # answers a packet of another (older) worker set
                self.stats.late += 1
                return False
            why = ("the job has no worker set attached (created or re-created since: attach "
                   "with Controller.attach)" if epoch == 0 else
                   "another worker set attached to the job since (Controller.attach)")
            raise StaleEpochError(
                f"job {job}, worker {self.job.rank}: the switch's job is at epoch {epoch}, this "
                f"worker set attached at epoch {self.job.epoch}: {why}, so this one's "
                "contributions are refused", job, chunk, self.job.epoch, epoch)
        state = run.slots[slot] if slot < len(run.slots) else None
        if (state is None or state.chunk != chunk or state.ver != flags & wire.Flag.VER
                or epoch != self.job.epoch):
            self.stats.late += 1
            return False
        if msg_type == wire.MsgType.STATUS:
            self.stats.statuses += 1
            state.bitmap, state.num_workers = bitmap, num_workers
            if bitmap >> self.job.rank & 1:  # the switch has our contribution: not a loss
                state.acked = True
                if state.backed_off:
                    self.rto.undo()
                    state.backed_off = False
            return False
        header_only = bool(flags & wire.Flag.HDRONLY)
        if state.receives:
            if header_only or count != state.count or len(data) < wire.HEADER_LEN + 4 * count:
                self.stats.foreign += 1
                LOG.debug("job %d chunk %d: RESULT with count %d (header only: %s), expected %d values",
                          job, chunk, count, header_only, state.count)
                return False
            k = self.job.k
            c = run.items[state.item]
            run.out[c * k:c * k + count] = np.frombuffer(data, wire.VALUE_DTYPE, count, wire.HEADER_LEN)
        elif not header_only:
            # we sent values: the acknowledgement is header-only; a RESULT with values on this
            # copy answers another member's operation (e.g. a late REDUCE sum during a BCAST)
            self.stats.late += 1
            return False
        self.stats.results += 1
        # Karn: a retransmitted chunk's RESULT is ambiguous, unless it echoes our own
        # original (no RETRANS, completed by this worker): then the timeout was spurious and
        # the sample is the long RTT that caused it (as TCP timestamps allow, RFC 7323).
        if state.retries == 0 or (sender == self.job.rank and not flags & wire.Flag.RETRANS):
            self.rto.sample(self.clock() - state.first_sent)
            self.stats.rtt_samples += 1
            if state.retries:
                self.stats.spurious += 1
        run.slots[slot] = None
        run.outstanding -= 1
        run.done += 1
        following = run.following[state.item]  # the slot's next use
        if following >= 0:
            heapq.heappush(run.ready, following)
        return True

    def _expire(self, run: _Run, now: float) -> None:
        """Retransmit the chunks whose timer expired; raise at a chunk's deadline."""
        while run.timers and run.timers[0][0] <= now:
            _, slot, generation = heapq.heappop(run.timers)
            state = run.slots[slot]
            if state is None or state.generation != generation:
                continue
            if now >= state.deadline:
                raise self._error(state, now)
            self._retransmit(state, now)
            state.generation = next(run.tokens)
            self._arm(run, state, now)

    def _retransmit(self, state: _Chunk, now: float) -> None:
        retrans = bytearray(state.message)
        retrans[1] |= wire.Flag.RETRANS
        self.transport.send(bytes(retrans))
        state.retries += 1
        self.stats.retransmitted += 1
        self.stats.sent += 1
        if state.acked:
            self.stats.probes += 1
        elif self.rto.timed_out(now):
            state.backed_off = True
            self.stats.backoffs += 1
        state.rto = min(max(2 * state.rto, self.rto.rto), self.timing.max_rto)

    def _error(self, state: _Chunk, now: float) -> AggregationError:
        job = self.job
        where = (f"job {job.job}, worker {job.rank}: chunk {state.chunk} (slot {state.slot}, "
                 f"copy {state.ver}) not complete after {now - state.first_sent:.2f} s "
                 f"({state.retries} retransmissions)")
        if state.bitmap is None:
            return AggregationError(f"{where}: no answer from switch", job.job, state.chunk, None)
        workers = state.num_workers or job.num_workers
        owners = state.members[job.num_workers:]  # REDUCE/BCAST: the chunk's owner
        members = tuple(range(workers)) + owners
        missing = tuple(w for w in members if not state.bitmap >> w & 1)
        of = f"{workers} workers" + "".join(f" and owner {o}" for o in owners)
        return AggregationError(
            f"{where}: missing workers {list(missing)} (switch bitmap {state.bitmap:#x} "
            f"of {of})", job.job, state.chunk, missing)


def result_buffer(out: npt.NDArray[np.int32] | None, n: int, job: int) -> npt.NDArray[np.int32]:
    """``out`` checked as a run's result buffer of ``n`` values, or a new zeroed one."""
    if out is None:
        return np.zeros(n, dtype=np.int32)
    if out.dtype != np.int32 or not out.flags.c_contiguous or out.size != n:
        raise ValueError(f"job {job}: a result buffer must be contiguous int32 of {n} values, "
                         f"got {out.dtype} {out.shape}")
    return out
