"""The switch's innet dataplane in numpy, packet by packet (p4/innet.p4; docs/PROTOCOL.md).

A reference model of what ``p4/innet`` does with an innet packet addressed to the switch:
the ``innet_jobs`` and ``innet_owners`` lookups, the drop rules, STALE, the per-copy
registers (bitmap, count, epoch, accumulators), duplicates (RESULT, header-only RESULT or
STATUS by unicast), completion with the job's mode, the multicast to the job's group (or,
for REDUCE/BCAST, the owner's group) and egress (``innet_workers``, values stripped from
the replicas that only acknowledge). It follows the P4 statement by statement, widths and
wrap-arounds included (register accesses outside a register read 0 and write nothing, as on
BMv2), so tests can run the P4 program and this model on the same packets and compare every
output and register (tests/unit/test_switch_model.py). The arithmetic of the modes is
:mod:`innet.wire.switch_model`'s.

Packets are :class:`InnetPacket`: the innet header and all K values (None when the frame
carries none: ``HDRONLY``, or cut short). IPv4/UDP framing and ARP are not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from innet.wire import switch_model as sim
from innet import wire
from innet.wire import Flag, Mode, MsgType

MASK32 = 0xFFFFFFFF
COUNTERS = ("contributions", "completions", "duplicates", "drops", "stale")
"""Per-job packet counters (``MyIngress.innet_<name>``)."""


@dataclass(frozen=True)
class JobEntry:
    """``innet_jobs`` action data (``set_job``)."""

    mode: int
    num_workers: int
    mcast_grp: int
    slot_base: int
    slot_count: int
    param_base: int = 0
    param_chunks: int = 0
    lr: int = 0
    lr_shift: int = 0
    beta: int = 0
    beta_shift: int = 0
    epoch: int = 1


@dataclass(frozen=True)
class OwnerEntry:
    """An ``innet_owners`` entry: chunks matching ``prefix/prefix_len`` of ``job`` belong to
    ``rank``; REDUCE/BCAST results go to ``mcast_grp``."""

    job: int
    prefix: int
    prefix_len: int
    rank: int
    mcast_grp: int

    def matches(self, job: int, chunk: int) -> bool:
        shift = 32 - self.prefix_len
        return job == self.job and (chunk >> shift) == (self.prefix >> shift)


@dataclass(frozen=True)
class InnetPacket:
    """The innet header and the K values (None: not in the frame)."""

    msg_type: int
    flags: int
    job: int
    worker: int
    slot: int
    chunk: int
    count: int
    num_workers: int
    bitmap: int
    epoch: int
    values: npt.NDArray[np.int32] | None

    @classmethod
    def parse(cls, payload: bytes, k: int) -> "InnetPacket":
        """As p4/innet's parser takes a UDP payload: no values with HDRONLY, none when cut
        short; raises ValueError when even the header is cut short."""
        if len(payload) < wire.HEADER_LEN:
            raise ValueError(f"innet payload of {len(payload)} bytes: no complete header")
        msg_type, flags, job, worker, slot, chunk, count, num_workers, bitmap, epoch = \
            wire.HEADER.unpack_from(payload)
        values = None
        if not flags & Flag.HDRONLY and len(payload) >= wire.message_len(k):
            values = np.frombuffer(payload, wire.VALUE_DTYPE, k, wire.HEADER_LEN).astype(np.int32)
        return cls(msg_type, flags, job, worker, slot, chunk, count, num_workers, bitmap, epoch, values)

    def payload(self) -> bytes:
        head = wire.HEADER.pack(self.msg_type, self.flags, self.job, self.worker, self.slot,
                                self.chunk, self.count, self.num_workers, self.bitmap, self.epoch)
        return head if self.values is None else head + self.values.astype(wire.VALUE_DTYPE).tobytes()


@dataclass(frozen=True)
class Delivery:
    """A packet the switch sends: back to the sender (``rank`` None: a unicast reply out of
    the ingress port, addresses swapped) or a multicast replica to ``rank`` (its
    ``innet_workers`` address)."""

    rank: int | None
    packet: InnetPacket


def _registers(cells: int, k: int) -> npt.NDArray[np.int32]:
    return np.zeros((cells, k), np.int32)


@dataclass
class InnetDataplane:
    """The switch's innet state and per-packet behaviour (see module docstring)."""

    k: int = wire.DEFAULT_K
    slots: int = 1024
    """INNET_SLOTS: two copies each."""
    param_chunks: int = 4096
    """INNET_PARAM_CHUNKS."""
    max_jobs: int = 16
    """INNET_MAX_JOBS."""
    jobs: dict[int, JobEntry] = field(default_factory=dict)
    owners: list[OwnerEntry] = field(default_factory=list)
    groups: dict[int, list[int]] = field(default_factory=dict)
    """Multicast group -> replica rids (ranks), in the order they leave the switch."""
    workers: set[tuple[int, int]] = field(default_factory=set)
    """``innet_workers`` keys (job, rank) that have an entry (others are dropped in egress)."""

    def __post_init__(self) -> None:
        copies = 2 * self.slots
        self.bitmap = np.zeros(copies, np.uint32)
        self.count = np.zeros(copies, np.uint8)
        self.copy_epoch = np.zeros(copies, np.uint32)
        self.acc = _registers(copies, self.k)
        self.param = _registers(self.param_chunks, self.k)
        self.mom = _registers(self.param_chunks, self.k)
        self.counters = {name: np.zeros(self.max_jobs, np.int64) for name in COUNTERS}

    # -- control plane ------------------------------------------------------------------

    def owner_of(self, job: int, chunk: int) -> OwnerEntry | None:
        """The longest-prefix ``innet_owners`` match (None: miss)."""
        best = None
        for entry in self.owners:
            if entry.matches(job, chunk) and (best is None or entry.prefix_len > best.prefix_len):
                best = entry
        return best

    # -- data plane -----------------------------------------------------------------------

    def process(self, pkt: InnetPacket) -> list[Delivery]:
        """One innet packet addressed to the switch; what leaves the switch, in order."""
        job = self.jobs.get(pkt.job)
        owner_op = pkt.msg_type in (MsgType.REDUCE, MsgType.BCAST)
        owner = self.owner_of(pkt.job, pkt.chunk) if job is not None and owner_op else None
        is_owner = owner is not None and pkt.worker == owner.rank
        sends_values = (pkt.msg_type == MsgType.CONTRIB
                        or (pkt.msg_type == MsgType.REDUCE and not is_owner)
                        or (pkt.msg_type == MsgType.BCAST and is_owner))
        hdr_only = bool(pkt.flags & Flag.HDRONLY)
        if job is None or pkt.job >= self.max_jobs:
            self.counters["drops"][0] += 1
            return []
        if ((pkt.msg_type != MsgType.CONTRIB and not owner_op)
                or (owner_op and (owner is None or job.mode != Mode.SUM))
                or hdr_only == sends_values
                or (sends_values and pkt.values is None)
                or (pkt.worker >= job.num_workers and not is_owner)
                or pkt.slot >= job.slot_count
                or (job.mode != Mode.SUM and pkt.chunk >= job.param_chunks)):
            self.counters["drops"][pkt.job] += 1
            return []
        if pkt.epoch != job.epoch:
            self.counters["stale"][pkt.job] += 1
            return [Delivery(None, replace(pkt, msg_type=MsgType.STALE, num_workers=job.num_workers,
                                           bitmap=0, epoch=job.epoch))]
        idx = ((((job.slot_base + pkt.slot) & MASK32) << 1) & MASK32) | (pkt.flags & Flag.VER)
        wbit = (1 << pkt.worker) & MASK32 if pkt.worker < 32 else 0
        members = (job.num_workers + (1 if owner_op else 0)) & 0xFF
        bitmap, count = self._read(self.bitmap, idx), self._read(self.count, idx)
        if self._read(self.copy_epoch, idx) != job.epoch:
            bitmap = count = 0
        if bitmap & wbit:
            self.counters["duplicates"][pkt.job] += 1
            if count == members:
                if owner_op and sends_values:
                    reply = replace(pkt, flags=pkt.flags | Flag.HDRONLY, values=None)
                else:
                    flags = pkt.flags & ~int(Flag.HDRONLY) & 0xFF if hdr_only else pkt.flags
                    reply = replace(pkt, flags=flags, values=self._acc(idx))
                return [Delivery(None, replace(reply, msg_type=MsgType.RESULT,
                                               num_workers=job.num_workers, bitmap=bitmap))]
            if pkt.flags & Flag.RETRANS:
                return [Delivery(None, replace(pkt, msg_type=MsgType.STATUS,
                                               num_workers=job.num_workers, bitmap=bitmap))]
            return []
        self.counters["contributions"][pkt.job] += 1
        flags = pkt.flags
        values = pkt.values
        if hdr_only:
            flags &= ~int(Flag.HDRONLY) & 0xFF
            values = np.zeros(self.k, np.int32)
        assert values is not None
        self._write(self.bitmap, idx ^ 1, self._read(self.bitmap, idx ^ 1) & ~wbit & MASK32)
        if count == 0 or count == members:
            count, bitmap = 1, wbit
        else:
            values = sim.wrap32(values.astype(np.int64) + self._acc(idx))
            count = (count + 1) & 0xFF
            bitmap |= wbit
        self._write(self.count, idx, count)
        self._write(self.bitmap, idx, bitmap)
        self._write(self.copy_epoch, idx, job.epoch)
        out: list[Delivery] = []
        if count == members:
            self.counters["completions"][pkt.job] += 1
            values = self._complete(job, pkt.chunk, values)
            result = replace(pkt, msg_type=MsgType.RESULT, flags=flags, num_workers=job.num_workers,
                             bitmap=bitmap, values=values)
            group = owner.mcast_grp if owner_op and owner is not None else job.mcast_grp
            out = [d for rid in self.groups.get(group, [])
                   if (d := self._egress(pkt.job, rid, pkt.msg_type, owner, result)) is not None]
        self._write_acc(idx, values)
        return out

    def _complete(self, job: JobEntry, chunk: int, g: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
        """The mode's step on the completed sum ``g``: the values the RESULT carries."""
        if job.mode not in (Mode.SGD, Mode.MOMENTUM):
            return g
        lr, beta = int(sim.wrap32(job.lr)[()]), int(sim.wrap32(job.beta)[()])
        # an int<64> shifted right by 64 or more is all sign bits, as shifted by 63
        lr_shift, beta_shift = min(job.lr_shift, 63), min(job.beta_shift, 63)
        p = (job.param_base + chunk) & MASK32
        w = self._row(self.param, p)
        if job.mode == Mode.SGD:
            w = sim.sgd_step(w, g, lr, lr_shift)
        else:
            w, m = sim.momentum_step(w, self._row(self.mom, p), g, lr, lr_shift, beta, beta_shift)
            if p < self.param_chunks:
                self.mom[p] = m
        if p < self.param_chunks:
            self.param[p] = w
        return w

    def _egress(self, job: int, rid: int, kind: int, owner: OwnerEntry | None,
                result: InnetPacket) -> Delivery | None:
        if (job, rid) not in self.workers:
            return None  # innet_workers default: drop
        if kind != MsgType.CONTRIB:
            to_owner = owner is not None and rid == owner.rank
            if (kind == MsgType.REDUCE) != to_owner:
                result = replace(result, flags=result.flags | Flag.HDRONLY, values=None)
        return Delivery(rid, result)

    # -- registers (out of range: read 0, write nothing, as on BMv2) ----------------------

    @staticmethod
    def _read(reg: npt.NDArray[np.generic], i: int) -> int:
        return int(reg[i]) if i < reg.shape[0] else 0

    @staticmethod
    def _write(reg: npt.NDArray[np.generic], i: int, value: int) -> None:
        if i < reg.shape[0]:
            reg[i] = value

    def _acc(self, idx: int) -> npt.NDArray[np.int32]:
        return self._row(self.acc, idx)

    def _row(self, reg: npt.NDArray[np.int32], i: int) -> npt.NDArray[np.int32]:
        return reg[i].copy() if i < reg.shape[0] else np.zeros(self.k, np.int32)

    def _write_acc(self, idx: int, values: npt.NDArray[np.int32]) -> None:
        if idx < self.acc.shape[0]:
            self.acc[idx] = values
