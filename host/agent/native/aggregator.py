"""``NativeAggregator``: ``innet.host.agent.aggregator.Aggregator``'s loop, run in C.

Same protocol, same decisions in the same order (docs/PROTOCOL.md and the module docstring
of ``innet.host.agent.aggregator``), same ``run(values)``/``stats``/``position`` interface and the
same exceptions; the C loop (``agent.c``) packs, sends with ``sendmmsg``, receives with
``recvmmsg``, keeps the RFC 6298 estimator and the per-chunk timers, and retransmits,
all without the GIL. It works on the socket of a ``UdpTransport`` or a
``FrameTunnelTransport`` (it builds and parses the tunnel's Ethernet/IPv4/UDP frames
itself); other transports (test doubles) need the Python ``Aggregator``.

The agent process watches its control pipe during an operation: ``control`` returns the
descriptor to watch (or -1) and ``on_control`` is called when it is readable; it may raise
to end the operation. A signal that interrupts the C wait returns to Python (so its handler
runs), then the loop resumes.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import numpy.typing as npt

from innet import wire
from innet.host.agent.native import agentlib
from innet.native_build import NativeLibrary
from innet.host.agent.aggregator import (AggregationError, AggregatorStats, JobConfig, LanePlan, StaleEpochError,
                                         Timing, lane_order, plan_owner_op, result_buffer)
from innet.host.agent.rto import RtoBounds
from innet.host.agent.transport import FrameTunnelTransport, Transport, UdpTransport


class NativeTransportUnsupported(ValueError):
    """The transport is not one the C loop can drive (names its type)."""


def supports(transport: object) -> bool:
    """True if the C loop can drive ``transport`` (UDP or frame tunnel)."""
    return isinstance(transport, (UdpTransport, FrameTunnelTransport))


def _resolve(host: str, what: str) -> bytes:
    try:
        return socket.inet_aton(socket.gethostbyname(host))
    except OSError as error:
        raise NativeTransportUnsupported(f"{what} {host!r}: cannot resolve it ({error})") from None


def _config(lib: NativeLibrary, job: JobConfig, transport: Transport, timing: Timing) -> Any:
    ffi = lib.ffi
    cfg = ffi.new("innet_agg_config *")
    cfg.job, cfg.rank, cfg.num_workers = job.job, job.rank, job.num_workers
    cfg.window, cfg.k, cfg.epoch = job.window, job.k, job.epoch
    bounds = RtoBounds(timing.initial_rto, timing.min_rto, timing.max_rto)
    cfg.initial_rto, cfg.min_rto, cfg.max_rto = bounds.initial_rto, bounds.min_rto, bounds.max_rto
    cfg.granularity = bounds.granularity
    cfg.chunk_deadline = timing.chunk_deadline
    cfg.max_outstanding = timing.max_outstanding or 0
    cfg.fd = transport.fileno()
    if isinstance(transport, UdpTransport):
        cfg.tunnel = 0
        dest_ip = _resolve(transport.config.switch_ip, "switch address")
        dest_port = transport.config.switch_port
    elif isinstance(transport, FrameTunnelTransport):
        c = transport.config
        cfg.tunnel = 1
        dest_ip = _resolve(c.tunnel[0], "switch tunnel address")
        dest_port = c.tunnel[1]
        ffi.memmove(cfg.local_mac, wire.mac_bytes(c.local.mac), 6)
        ffi.memmove(cfg.switch_mac, wire.mac_bytes(c.switch.mac), 6)
        ffi.memmove(cfg.local_ip, wire.ip_bytes(c.local.ip), 4)
        ffi.memmove(cfg.switch_ip, wire.ip_bytes(c.switch.ip), 4)
        cfg.local_port, cfg.switch_port = c.local.port, c.switch.port
    else:
        raise NativeTransportUnsupported(f"native datapath: transport {type(transport).__name__} is neither "
                                "UdpTransport nor FrameTunnelTransport")
    ffi.memmove(cfg.dest_ip, dest_ip, 4)
    cfg.dest_port = dest_port
    return cfg


@dataclass
class NativeAggregator:
    """Streams vectors through a job's slots with the C loop (see module docstring)."""

    job: JobConfig
    transport: Transport
    timing: Timing = field(default_factory=Timing)
    lib: NativeLibrary = field(default_factory=agentlib.load)
    control: Callable[[], int] | None = None
    """The descriptor to watch besides the transport (-1: none); None: none."""
    on_control: Callable[[], None] | None = None
    """Called when ``control()`` is readable; may raise to end the operation."""
    stats: AggregatorStats = field(default_factory=AggregatorStats)
    lane_positions: dict[int, int] = field(default_factory=dict)
    """Next stream position in each owner's lane (owner rank -> position)."""

    def __post_init__(self) -> None:
        cfg = _config(self.lib, self.job, self.transport, self.timing)
        handle = self.lib.lib.innet_agg_new(cfg)
        if handle == self.lib.ffi.NULL:
            raise MemoryError(f"job {self.job.job}: native aggregator state (window "
                              f"{self.job.window}, K {self.job.k}) could not be allocated")
        self._agg = self.lib.ffi.gc(handle, self.lib.lib.innet_agg_free)

    @property
    def position(self) -> int:
        """Next stream position (slot = position % window, copy = (position // window) % 2)."""
        return int(self.lib.lib.innet_agg_position(self._agg))

    @position.setter
    def position(self, value: int) -> None:
        self.lib.lib.innet_agg_set_position(self._agg, value)

    @property
    def srtt(self) -> float | None:
        """Smoothed RTT in seconds; None before the first sample."""
        rto = self.lib.lib.innet_agg_rto_of(self._agg)
        return float(rto.srtt) if rto.has_srtt else None

    @property
    def rto(self) -> float:
        """The timeout a new chunk would start with."""
        return float(self.lib.lib.innet_agg_rto_now(self._agg))

    def run(self, values: npt.ArrayLike, out: npt.NDArray[np.int32] | None = None) -> npt.NDArray[np.int32]:
        """Aggregate ``values`` (int32); the RESULT values, written into ``out`` when given
        (contiguous int32 of the same size, not overlapping ``values``). Raises AggregationError."""
        vec = np.ascontiguousarray(values, dtype=np.int32).ravel()
        n = vec.size
        if -(-n // self.job.k) > 0xFFFFFFFF:
            raise ValueError(f"job {self.job.job}: {-(-n // self.job.k)} chunks exceed the 32-bit chunk field")
        out = result_buffer(out, n, self.job.job)
        ffi = self.lib.ffi
        self._drive(lambda: self.lib.lib.innet_agg_begin(self._agg, ffi.from_buffer("int32_t[]", vec), n,
                                                         ffi.from_buffer("int32_t[]", out)))
        return out

    # -- REDUCE/BCAST on owner lanes (the python Aggregator's methods, same plan)
    def reduce_to(self, values: npt.ArrayLike, first_chunk: int = 0) -> None:
        vec = np.ascontiguousarray(values, dtype=np.int32).ravel()
        self._owner_op(wire.MsgType.REDUCE, vec, vec.size, first_chunk, worker=True)

    def collect(self, size: int, first_chunk: int = 0) -> npt.NDArray[np.int32]:
        return self._owner_op(wire.MsgType.REDUCE, None, size, first_chunk, worker=False)

    def broadcast(self, values: npt.ArrayLike, first_chunk: int = 0) -> None:
        vec = np.ascontiguousarray(values, dtype=np.int32).ravel()
        self._owner_op(wire.MsgType.BCAST, vec, vec.size, first_chunk, worker=False)

    def fetch(self, size: int, first_chunk: int = 0) -> npt.NDArray[np.int32]:
        return self._owner_op(wire.MsgType.BCAST, None, size, first_chunk, worker=True)

    def _owner_op(self, kind: wire.MsgType, vec: npt.NDArray[np.int32] | None, size: int, first_chunk: int,
                  worker: bool) -> npt.NDArray[np.int32]:
        job, k = self.job, self.job.k
        chunks = -(-size // k)
        plan: LanePlan = plan_owner_op(job, self.lane_positions, kind, chunks, first_chunk, worker)
        following, ready = lane_order(plan.owner, job.lanes.owner_slots)
        carries = (kind == wire.MsgType.REDUCE) != job.is_owner
        padded = np.zeros(chunks * k, np.int32)
        if vec is not None:
            padded[:size] = vec
        out = np.zeros(chunks * k, np.int32)
        arrays = (plan.items, plan.slot, plan.ver, following, plan.owner, ready.astype(np.uint32))
        ffi = self.lib.ffi
        c_item, c_slot, c_ver, c_following, c_owner, c_ready = (
            ffi.from_buffer(t, a) for t, a in zip(("int64_t[]", "uint32_t[]", "uint32_t[]", "int64_t[]", "int32_t[]",
                                                    "uint32_t[]"), arrays))
        self._drive(lambda: self.lib.lib.innet_agg_begin_plan(
            self._agg, int(kind), first_chunk, int(carries), int(not carries), ffi.from_buffer("int32_t[]", padded),
            size, ffi.from_buffer("int32_t[]", out), len(plan.items), c_item, c_slot, c_ver, c_following, c_owner,
            c_ready, len(ready)))
        plan.advance(self.lane_positions)
        return out[:size]

    def _drive(self, begin: Callable[[], int]) -> None:
        """Start a run with ``begin`` and step it to its end; raises its error."""
        lib = self.lib.lib
        tunnel = self.transport if isinstance(self.transport, FrameTunnelTransport) else None
        if tunnel is not None:
            lib.innet_agg_set_ident(self._agg, tunnel._ident)
        before = int(lib.innet_agg_stats_of(self._agg).ignored)
        code = begin()
        try:
            while code in (agentlib.DONE, agentlib.CONTROL, agentlib.INTR):
                if code == agentlib.CONTROL and self.on_control is not None:
                    self.on_control()
                fd = self.control() if self.control is not None else -1
                code = lib.innet_agg_step(self._agg, fd)
                if code == agentlib.DONE:
                    break
        except BaseException:
            lib.innet_agg_abort(self._agg)
            raise
        finally:
            self._sync_stats()
            if tunnel is not None:
                tunnel._ident = int(lib.innet_agg_ident(self._agg))
                tunnel.ignored += int(lib.innet_agg_stats_of(self._agg).ignored) - before
        if code != agentlib.DONE:
            raise self._error(code)

    def _sync_stats(self) -> None:
        c = self.lib.lib.innet_agg_stats_of(self._agg)
        s = self.stats
        for name in ("sent", "retransmitted", "probes", "spurious", "backoffs", "results",
                     "statuses", "late", "foreign", "rtt_samples"):
            setattr(s, name, int(getattr(c, name)))
        srtt = self.srtt
        s.srtt_us = round((srtt or 0.0) * 1e6)
        s.rto_us = round(self.rto * 1e6)

    def _error(self, code: int) -> Exception:
        e = self.lib.lib.innet_agg_error_of(self._agg)
        job = self.job
        if code == agentlib.ERR_STALE:
            epoch = int(e.switch_epoch)
            why = ("the job has no worker set attached (created or re-created since: attach "
                   "with Controller.attach)" if epoch == 0 else
                   "another worker set attached to the job since (Controller.attach)")
            return StaleEpochError(
                f"job {job.job}, worker {job.rank}: the switch's job is at epoch {epoch}, this "
                f"worker set attached at epoch {job.epoch}: {why}, so this one's "
                "contributions are refused", job.job, int(e.chunk), job.epoch, epoch)
        if code == agentlib.ERR_DEADLINE:
            where = (f"job {job.job}, worker {job.rank}: chunk {e.chunk} (slot {e.slot}, "
                     f"copy {e.ver}) not complete after {e.elapsed:.2f} s "
                     f"({e.retries} retransmissions)")
            if not e.has_bitmap:
                return AggregationError(f"{where}: no answer from switch", job.job, int(e.chunk), None)
            bitmap = int(e.bitmap)
            workers = int(e.num_workers) or job.num_workers
            owners = (int(e.owner),) if e.owner >= 0 else ()  # REDUCE/BCAST: the chunk's owner
            missing = tuple(w for w in (*range(workers), *owners) if not bitmap >> w & 1)
            of = f"{workers} workers" + "".join(f" and owner {o}" for o in owners)
            return AggregationError(
                f"{where}: missing workers {list(missing)} (switch bitmap {bitmap:#x} "
                f"of {of})", job.job, int(e.chunk), missing)
        if code == agentlib.ERR_OS:
            errno = int(e.os_errno)
            reason = os.strerror(errno) if errno else "out of memory"
            return OSError(errno, f"job {job.job}, worker {job.rank}: native datapath socket "
                                  f"error: {reason}")
        return RuntimeError(f"job {job.job}, worker {job.rank}: native aggregator returned {code}")
