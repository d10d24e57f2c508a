"""The worker side of the aggregation protocol: chunks, a window of slots, retransmission.

One ``Aggregator`` per (job, worker), transport-independent. ``run(values)`` streams an
int32 vector through the job's slots and returns the switch's RESULT values:

- The vector is cut into chunks of K values; chunk ``c`` is sent with ``chunk = c`` (its
  index in the job's vector). Chunks take consecutive *stream positions* ``p`` that carry
  on across calls: position ``p`` uses slot ``p % window`` and copy ``VER = (p // window) % 2``,
  so the copy alternates at each reuse of a slot. All workers of a job make the same
  calls with the same lengths, so they agree on (slot, copy) for every chunk.
- Window: position ``p`` is sent only after the RESULT of ``p - window`` (the slot's
  previous use) arrived. This is what makes two copies enough (docs/PROTOCOL.md).
- Each outstanding slot has a retransmission timer: RTO from a smoothed RTT estimate
  (Jacobson/Karels, samples only from chunks sent once, Karn's rule), clamped to
  ``[min_rto, max_rto]``, doubled per retransmission of that chunk and scaled by a shared
  back-off factor that grows on timer expiries and decays on timely results. Retransmissions
  carry ``RETRANS``; the switch answers a duplicate with the stored RESULT (copy complete)
  or a STATUS with its bitmap (incomplete), which names the missing workers.
- A RESULT/STATUS for a slot whose (chunk, copy) is not the outstanding one is late or
  duplicated and is ignored (counted).
- A chunk not complete ``chunk_deadline`` seconds after its first transmission raises
  ``AggregationError`` naming the job, the chunk and the missing workers (from the last
  STATUS bitmap) or "no answer from switch".
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

from innet.host import wire
from innet.host.transport import Transport

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

    def __post_init__(self) -> None:
        if not 1 <= self.num_workers <= wire.MAX_WORKERS:
            raise ValueError(f"job {self.job}: num_workers {self.num_workers} is outside 1..32")
        if not 0 <= self.rank < self.num_workers:
            raise ValueError(f"job {self.job}: rank {self.rank} is outside 0..{self.num_workers - 1}")
        if not 1 <= self.window <= 0xFFFF:
            raise ValueError(f"job {self.job}: window {self.window} is outside 1..65535")
        if self.k < 1:
            raise ValueError(f"job {self.job}: K {self.k} must be positive")


@dataclass(frozen=True)
class Timing:
    """Retransmission and deadline settings (seconds)."""

    initial_rto: float = 0.05
    """Retransmission timeout before any RTT sample."""
    min_rto: float = 0.005
    """Lower bound of the timeout."""
    max_rto: float = 1.0
    """Upper bound of the timeout (after back-off)."""
    chunk_deadline: float = 10.0
    """A chunk not complete this long after its first transmission is an error."""


@dataclass
class AggregatorStats:
    """Counters of one aggregator (cumulative)."""

    sent: int = 0
    retransmitted: int = 0
    results: int = 0
    statuses: int = 0
    late: int = 0
    """RESULT/STATUS messages for a chunk that is not outstanding (duplicates, stale)."""
    foreign: int = 0
    """Messages for another job or malformed."""

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class _Slot:
    position: int
    chunk: int
    ver: int
    message: bytes
    count: int
    first_sent: float
    last_sent: float
    rto: float
    retries: int = 0
    generation: int = 0
    bitmap: int | None = None
    num_workers: int = 0


@dataclass
class _Rtt:
    """Smoothed RTT (Jacobson/Karels) and a shared back-off factor.

    Every timer expiry doubles the factor (at most once per timeout interval, so one burst
    of expiries counts once); every RESULT of a chunk sent once decays it by 5%. New chunks
    and retransmissions use ``rto * backoff``, so a stalled switch or worker is not flooded."""

    srtt: float | None = None
    rttvar: float = 0.0
    backoff: float = 1.0
    last_backoff: float = float("-inf")

    def sample(self, rtt: float) -> None:
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        self.backoff = max(1.0, self.backoff * 0.95)

    def base(self, timing: Timing) -> float:
        if self.srtt is None:
            return timing.initial_rto
        return min(max(self.srtt + 4 * self.rttvar, timing.min_rto), timing.max_rto)

    def rto(self, timing: Timing) -> float:
        return min(self.base(timing) * self.backoff, timing.max_rto)

    def expired(self, now: float, timing: Timing) -> None:
        if now - self.last_backoff >= self.rto(timing):
            self.backoff = min(self.backoff * 2, 64.0)
            self.last_backoff = now


@dataclass
class Aggregator:
    """Streams vectors through a job's slots over one transport (see module docstring)."""

    job: JobConfig
    transport: Transport
    timing: Timing = field(default_factory=Timing)
    clock: Callable[[], float] = time.monotonic
    position: int = 0
    """Next stream position (slot = position % window, copy = (position // window) % 2)."""
    stats: AggregatorStats = field(default_factory=AggregatorStats)
    _rtt: _Rtt = field(default_factory=_Rtt)

    def run(self, values: npt.ArrayLike) -> npt.NDArray[np.int32]:
        """Aggregate ``values`` (int32); the RESULT values. Raises AggregationError."""
        vec = np.ascontiguousarray(values, dtype=np.int32).ravel()
        k, window = self.job.k, self.job.window
        n = vec.size
        chunks = -(-n // k)
        if chunks > 0xFFFFFFFF:
            raise ValueError(f"job {self.job.job}: {chunks} chunks exceed the 32-bit chunk field")
        padded = np.zeros(chunks * k, dtype=wire.VALUE_DTYPE)
        padded[:n] = vec
        raw = padded.tobytes()
        out = np.zeros(chunks * k, dtype=np.int32)
        base = self.position
        slots: list[_Slot | None] = [None] * window
        timers: list[tuple[float, int, int]] = []
        next_chunk = 0
        done = 0
        tokens = itertools.count()

        def send(chunk: int, now: float) -> None:
            pos = base + chunk
            slot, ver = pos % window, (pos // window) % 2
            count = min(k, n - chunk * k)
            header = wire.HEADER.pack(wire.MsgType.CONTRIB, ver, self.job.job, self.job.rank,
                                      slot, chunk, count, 0, 0)
            message = header + raw[chunk * k * 4:(chunk + 1) * k * 4]
            rto = self._rtt.rto(self.timing)
            state = _Slot(pos, chunk, ver, message, count, now, now, rto, 0, next(tokens))
            slots[slot] = state
            self.transport.send(message)
            self.stats.sent += 1
            heapq.heappush(timers, (now + rto, slot, state.generation))

        selector = selectors.DefaultSelector()
        selector.register(self.transport.fileno(), selectors.EVENT_READ)
        try:
            now = self.clock()
            while next_chunk < min(chunks, window):
                send(next_chunk, now)
                next_chunk += 1
            while done < chunks:
                timeout = max(0.0, timers[0][0] - self.clock()) if timers else self.timing.max_rto
                if selector.select(timeout):
                    for _ in range(256):
                        data = self.transport.receive()
                        if data is None:
                            break
                        finished = self._receive(data, slots, out, k)
                        if finished is not None:
                            done += 1
                            now = self.clock()
                            while (next_chunk < chunks
                                   and slots[(base + next_chunk) % window] is None):
                                send(next_chunk, now)
                                next_chunk += 1
                now = self.clock()
                while timers and timers[0][0] <= now:
                    _, slot, generation = heapq.heappop(timers)
                    state = slots[slot]
                    if state is None or state.generation != generation:
                        continue
                    self._retransmit(state, now)
                    state.generation = next(tokens)
                    heapq.heappush(timers, (now + state.rto, slot, state.generation))
        finally:
            selector.close()
        self.position = base + chunks
        return out[:n]

    def _receive(self, data: bytes, slots: list[_Slot | None], out: npt.NDArray[np.int32],
                 k: int) -> int | None:
        """Handle one message; the slot index freed by a matching RESULT, else None."""
        try:
            msg_type, flags, job, _, slot, chunk, count, num_workers, bitmap = \
                wire.HEADER.unpack_from(data)
        except Exception:
            self.stats.foreign += 1
            return None
        if job != self.job.job or msg_type not in (wire.MsgType.RESULT, wire.MsgType.STATUS):
            self.stats.foreign += 1
            return None
        state = slots[slot] if slot < len(slots) else None
        if state is None or state.chunk != chunk or state.ver != flags & wire.Flag.VER:
            self.stats.late += 1
            return None
        if msg_type == wire.MsgType.STATUS:
            self.stats.statuses += 1
            state.bitmap, state.num_workers = bitmap, num_workers
            return None
        if count != state.count or len(data) < wire.HEADER_LEN + 4 * count:
            self.stats.foreign += 1
            LOG.debug("job %d chunk %d: RESULT with count %d, expected %d", job, chunk, count,
                      state.count)
            return None
        out[chunk * k:chunk * k + count] = np.frombuffer(data, wire.VALUE_DTYPE, count,
                                                         wire.HEADER_LEN)
        self.stats.results += 1
        if state.retries == 0:
            self._rtt.sample(self.clock() - state.first_sent)
        slots[slot] = None
        return slot

    def _retransmit(self, state: _Slot, now: float) -> None:
        if now - state.first_sent >= self.timing.chunk_deadline:
            raise self._error(state, now)
        retrans = bytearray(state.message)
        retrans[1] |= wire.Flag.RETRANS
        self.transport.send(bytes(retrans))
        state.retries += 1
        state.last_sent = now
        self._rtt.expired(now, self.timing)
        state.rto = min(max(state.rto * 2, self._rtt.rto(self.timing)), self.timing.max_rto)
        self.stats.retransmitted += 1
        self.stats.sent += 1

    def _error(self, state: _Slot, now: float) -> AggregationError:
        job = self.job
        where = (f"job {job.job}, worker {job.rank}: chunk {state.chunk} (slot {state.position % job.window}, "
                 f"copy {state.ver}) not complete after {now - state.first_sent:.2f} s "
                 f"({state.retries} retransmissions)")
        if state.bitmap is None:
            return AggregationError(f"{where}: no answer from switch", job.job, state.chunk, None)
        workers = state.num_workers or job.num_workers
        missing = tuple(w for w in range(workers) if not state.bitmap >> w & 1)
        return AggregationError(
            f"{where}: missing workers {list(missing)} (switch bitmap {state.bitmap:#x} "
            f"of {workers} workers)", job.job, state.chunk, missing)
