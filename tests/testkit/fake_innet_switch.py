"""TEST DOUBLE: a tiny pure-Python model of the switch side of docs/PROTOCOL.md.

For unit tests of the host agent only; the real switch is ``p4/innet.p4`` on innet's
embedded target. ``FakeInnetSwitch`` holds per-job slot state (bitmap, count, two copies,
accumulators), parameters and momentum, and answers CONTRIB messages with RESULT
(multicast to the job, or unicast for a duplicate of a complete copy) or STATUS, with the
arithmetic of ``innet.wire.switch_model``. Two adapters put it on a network:

- ``FakeUdpSwitch``: a UDP socket speaking innet messages as payloads (for
  ``UdpTransport``), learning each worker's address from its contributions;
- ``fake_frame_handler``: a ``handler(port, frame)`` for ``innet.switch.ports.PortSet``,
  so frame-tunnel agents can be tested through real (optionally lossy) UDP switch ports.
"""

from __future__ import annotations

import random
import selectors
import socket
import threading
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import numpy.typing as npt

from innet.wire import switch_model as sim
from innet.wire.dataplane_model import InnetDataplane, InnetPacket, JobEntry, OwnerEntry
from innet.wire.owners import OwnerRange, owner_group, prefixes
from innet import wire
from innet.wire.quantize import OptimizerParams
from innet.wire import Message, Mode, MsgType


@dataclass
class FakeJob:
    """One job's configuration and state in the fake switch."""

    num_workers: int
    slot_count: int
    k: int
    mode: Mode = Mode.SUM
    opt: OptimizerParams = field(default_factory=lambda: OptimizerParams(0, 0))
    params: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros((0, 1), np.int32))
    """Parameters as (param_chunks, K)."""
    bitmap: list[int] = field(default_factory=list)
    count: list[int] = field(default_factory=list)
    acc: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros((0, 1), np.int32))
    momentum: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros((0, 1), np.int32))
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("contributions", "completions", "duplicates", "drops", "stale"), 0))
    epoch: int = 1
    """The job's current incarnation (``set_job``'s ``epoch``); ``attach`` moves it on."""
    copy_epoch: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.copy_epoch = [0] * (2 * self.slot_count)
        self.bitmap = [0] * (2 * self.slot_count)
        self.count = [0] * (2 * self.slot_count)
        self.acc = np.zeros((2 * self.slot_count, self.k), np.int32)
        self.momentum = np.zeros(self.params.shape, np.int32)


Reply = tuple[str, Message]
"""("unicast", message) to the sender or ("multicast", message) to every worker of the job."""


class FakeInnetSwitch:
    """TEST DOUBLE of the switch's aggregation logic (see module docstring)."""

    def __init__(self, k: int = wire.DEFAULT_K) -> None:
        self.k = k
        self.jobs: dict[int, FakeJob] = {}
        self.lock = threading.Lock()
        self.unknown_drops = 0

    def add_job(self, job: int, num_workers: int, slot_count: int, mode: Mode = Mode.SUM,
                params: npt.ArrayLike | None = None, opt: OptimizerParams | None = None,
                epoch: int = 1) -> FakeJob:
        """Create a job at ``epoch``; ``params`` (int32, padded to whole chunks) for sgd/momentum."""
        table = np.zeros((0, self.k), np.int32)
        if params is not None:
            flat = np.asarray(params, dtype=np.int32).ravel()
            table = np.zeros((-(-flat.size // self.k), self.k), np.int32)
            table.ravel()[:flat.size] = flat
        state = FakeJob(num_workers, slot_count, self.k, mode, opt or OptimizerParams(0, 0), table,
                        epoch=epoch)
        self.jobs[job] = state
        return state

    def attach(self, job: int) -> int:
        """A new worker set for ``job``: the next epoch (what ``Controller.attach`` does)."""
        with self.lock:
            state = self.jobs[job]
            state.epoch += 1
            return state.epoch

    def handle(self, msg: Message) -> Reply | None:
        with self.lock:
            return self._handle(msg)

    def _handle(self, msg: Message) -> Reply | None:
        if msg.msg_type != MsgType.CONTRIB:
            return None
        job = self.jobs.get(msg.job)
        if job is None:
            self.unknown_drops += 1
            return None
        if (msg.worker >= job.num_workers or msg.slot >= job.slot_count
                or (job.mode != Mode.SUM and msg.chunk >= job.params.shape[0])):
            job.counters["drops"] += 1
            return None
        if msg.epoch != job.epoch:
            job.counters["stale"] += 1
            return "unicast", Message(MsgType.STALE, msg.job, msg.worker, msg.slot, msg.chunk,
                                      msg.flags, job.num_workers, 0, job.epoch,
                                      np.array(msg.values, np.int32))
        idx = msg.slot * 2 + (msg.flags & wire.Flag.VER)
        bit = 1 << msg.worker
        n = job.num_workers
        if job.copy_epoch[idx] != job.epoch:  # left by an earlier worker set
            job.copy_epoch[idx] = job.epoch
            job.bitmap[idx] = job.count[idx] = 0
        if job.bitmap[idx] & bit:
            job.counters["duplicates"] += 1
            if job.count[idx] == n:
                return "unicast", self._message(MsgType.RESULT, msg, job, idx, job.acc[idx])
            if msg.flags & wire.Flag.RETRANS:
                return "unicast", self._message(MsgType.STATUS, msg, job, idx, msg.values)
            return None
        job.counters["contributions"] += 1
        job.bitmap[idx] |= bit
        job.bitmap[idx ^ 1] &= ~bit
        values = np.zeros(self.k, np.int32)
        values[:msg.count] = msg.values
        if job.count[idx] in (0, n):
            job.acc[idx] = values
            job.count[idx] = 1
            job.bitmap[idx] = bit
        else:
            job.acc[idx] = sim.wrap32(job.acc[idx].astype(np.int64) + values)
            job.count[idx] += 1
        if job.count[idx] != n:
            return None
        job.counters["completions"] += 1
        g = job.acc[idx]
        if job.mode == Mode.SGD:
            job.params[msg.chunk] = sim.sgd_step(job.params[msg.chunk], g, job.opt.lr,
                                                 job.opt.lr_shift)
            job.acc[idx] = job.params[msg.chunk]
        elif job.mode == Mode.MOMENTUM:
            w, m = sim.momentum_step(job.params[msg.chunk], job.momentum[msg.chunk], g, job.opt.lr,
                                     job.opt.lr_shift, job.opt.beta, job.opt.beta_shift)
            job.params[msg.chunk], job.momentum[msg.chunk] = w, m
            job.acc[idx] = w
        return "multicast", self._message(MsgType.RESULT, msg, job, idx, job.acc[idx])

    def _message(self, kind: MsgType, msg: Message, job: FakeJob, idx: int,
                 values: npt.NDArray[np.int32]) -> Message:
        return Message(kind, msg.job, msg.worker, msg.slot, msg.chunk, msg.flags,
                       job.num_workers, job.bitmap[idx], msg.epoch, np.array(values[:msg.count], np.int32))


class _Impair:
    def __init__(self, drop: float, duplicate: float, reorder: float, seed: int) -> None:
        self.drop, self.duplicate, self.reorder = drop, duplicate, reorder
        self.rng = random.Random(seed)
        self.held: tuple[bytes, tuple[str, int]] | None = None

    def __call__(self, data: bytes, dest: tuple[str, int]) -> list[tuple[bytes, tuple[str, int]]]:
        if self.rng.random() < self.drop:
            return []
        out = [(data, dest)] * (2 if self.rng.random() < self.duplicate else 1)
        if self.held is not None:
            out.append(self.held)
            self.held = None
        elif self.rng.random() < self.reorder:
            self.held = out.pop(0)
        return out


class FakeUdpSwitch:
    """TEST DOUBLE: ``FakeInnetSwitch`` behind one UDP socket (innet messages as payloads).

    ``impair=(drop, duplicate, reorder, seed)`` degrades what it sends; ``silent`` makes it
    swallow everything (a dead switch)."""

    def __init__(self, switch: FakeInnetSwitch, bind: tuple[str, int] = ("127.0.0.1", 0),
                 impair: tuple[float, float, float, int] | None = None) -> None:
        self.switch = switch
        self.silent = False
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(bind)
        self._sock.setblocking(False)
        self._addresses: dict[tuple[int, int], tuple[str, int]] = {}
        self._impair = _Impair(*impair) if impair else None
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._loop, name="fake-innet-switch", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._sock.getsockname()[:2]
        return host, port

    def __enter__(self) -> "FakeUdpSwitch":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._wake_w.send(b"x")
        self._thread.join(timeout=5)
        for s in (self._sock, self._wake_r, self._wake_w):
            s.close()

    def _send(self, data: bytes, dest: tuple[str, int]) -> None:
        for out, to in (self._impair(data, dest) if self._impair else [(data, dest)]):
            self._sock.sendto(out, to)

    def _loop(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._sock, selectors.EVENT_READ, "sock")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        try:
            while True:
                for key, _ in sel.select():
                    if key.data == "wake":
                        return
                    self._receive()
        finally:
            sel.close()

    def _receive(self) -> None:
        try:
            data, sender = self._sock.recvfrom(65535)
        except (BlockingIOError, ConnectionRefusedError):
            return
        if self.silent:
            return
        for payload, dest in self._replies(data, sender):
            self._send(payload, dest)

    def _replies(self, data: bytes, sender: tuple[str, int]) -> list[tuple[bytes, tuple[str, int]]]:
        """What the switch sends for ``data`` from ``sender``: (payload, address) pairs."""
        try:
            msg = wire.unpack(data, self.switch.k)
        except wire.WireError:
            return []
        self._addresses[(msg.job, msg.worker)] = sender
        reply = self.switch.handle(msg)
        if reply is None:
            return []
        kind, out = reply
        payload = wire.pack(out, self.switch.k)
        if kind == "unicast":
            return [(payload, sender)]
        return [(payload, address) for (job, _), address in list(self._addresses.items()) if job == msg.job]


class DataplaneUdpSwitch(FakeUdpSwitch):
    """TEST DOUBLE: ``innet.wire.dataplane_model.InnetDataplane`` (the switch's numpy model,
    REDUCE/BCAST and owners included) behind one UDP socket; multicast replicas go to the
    addresses members last sent from (a member not heard from yet misses them and is answered
    when it asks)."""

    def __init__(self, k: int, bind: tuple[str, int] = ("127.0.0.1", 0),
                 impair: tuple[float, float, float, int] | None = None) -> None:
        super().__init__(FakeInnetSwitch(k), bind, impair)
        self.dataplane = InnetDataplane(k=k, slots=256)
        self.k = k

    def add_job(self, job: int, num_workers: int, slot_count: int, owners: tuple[OwnerRange, ...] = (),
                epoch: int = 1, slot_base: int = 0) -> None:
        """A sum job of ``num_workers`` workers whose chunks ``owners`` own (as the controller
        installs it: owner groups of the workers and the owner, every member addressed)."""
        dp = self.dataplane
        with self.switch.lock:
            dp.jobs[job] = JobEntry(mode=int(Mode.SUM), num_workers=num_workers, mcast_grp=job,
                                    slot_base=slot_base, slot_count=slot_count, epoch=epoch)
            dp.groups[job] = list(range(num_workers))
            dp.workers |= {(job, r) for r in range(num_workers)}
            dp.owners = [o for o in dp.owners if o.job != job]
            for o in owners:
                group = owner_group(job, o.rank)
                dp.groups[group] = [*range(num_workers), o.rank]
                dp.workers.add((job, o.rank))
                dp.owners += [OwnerEntry(job, value, length, o.rank, group)
                              for value, length in prefixes(o.first_chunk, o.chunks)]

    def attach(self, job: int) -> int:
        """A new member set for ``job``: the next epoch (what ``Controller.attach`` does)."""
        with self.switch.lock:
            entry = self.dataplane.jobs[job]
            self.dataplane.jobs[job] = replace(entry, epoch=entry.epoch + 1)
            return entry.epoch + 1

    def _replies(self, data: bytes, sender: tuple[str, int]) -> list[tuple[bytes, tuple[str, int]]]:
        try:
            pkt = InnetPacket.parse(data, self.k)
        except ValueError:
            return []
        with self.switch.lock:
            self._addresses[(pkt.job, pkt.worker)] = sender
            out = []
            for d in self.dataplane.process(pkt):
                dest = sender if d.rank is None else self._addresses.get((pkt.job, d.rank))
                if dest is not None:
                    out.append((d.packet.payload(), dest))
        return out


def fake_frame_handler(switch: FakeInnetSwitch, switch_ep: wire.Endpoint,
                       workers: dict[tuple[int, int], tuple[int, wire.Endpoint]]
                       ) -> Callable[[int, bytes], list[tuple[int, bytes]]]:
    """TEST DOUBLE: a PortSet handler; ``workers[(job, rank)] = (switch port, endpoint)``
    plays the multicast group plus ``innet_workers``."""

    def handler(port: int, data: bytes) -> list[tuple[int, bytes]]:
        parsed = wire.parse_frame(data)
        if parsed is None or parsed.dst_port != wire.UDP_PORT:
            return []
        try:
            msg = wire.unpack(parsed.payload, switch.k)
        except wire.WireError:
            return []
        reply = switch.handle(msg)
        if reply is None:
            return []
        kind, out = reply
        payload = wire.pack(out, switch.k)
        if kind == "unicast":
            src = wire.Endpoint(":".join(f"{b:02x}" for b in parsed.src_mac),
                                socket.inet_ntoa(parsed.src_ip), parsed.src_port)
            return [(port, wire.frame(switch_ep, src, payload))]
        return [(p, wire.frame(switch_ep, ep, payload))
                for (job, _), (p, ep) in sorted(workers.items()) if job == msg.job]

    return handler
