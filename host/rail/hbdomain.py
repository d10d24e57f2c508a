"""The HB-domain side of a hierarchical collective: the x GPUs of one HB domain (NVLink in a
real cluster; a fast host-side fabric in the testbed, docs/rail.md) exchange int32 shards.

    group = HbGroup(HbConfig(rank=g, peers=((ip, port), ...), names=("d1g1", ...)))
    with group:
        mine = group.reduce_scatter(vector, bounds)   # sum of everyone's bounds[g] slice
        full = group.all_gather(result, bounds)       # every member's result, in place

A full mesh of TCP connections: each member listens on ``peers[rank]``, connects to every
other member (retrying until ``connect_timeout``) and introduces itself with its rank. One
thread per incoming connection reads length-prefixed messages into a per-peer queue, so a
member's ``sendall`` never waits on a peer that is itself sending (no deadlock for any
message size). Each message carries the operation's sequence number: members must make the
same calls in the same order (as the agents of a job do). A peer that sends nothing within
``deadline`` seconds, or closes its connection, is an :class:`HbError` naming it.

Sums are int32 with wrapping, like the switch's accumulators, so reduce-scatter followed
by the switch's sum across domains equals the flat sum bit for bit.
"""

from __future__ import annotations

import queue
import socket
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import numpy.typing as npt

_HELLO = struct.Struct("!4sH")
_MAGIC = b"INHB"
_FRAME = struct.Struct("!IQ")
"""Operation sequence number, payload bytes."""


class HbError(RuntimeError):
    """An HB-domain exchange failed; names the member, its address and the operation."""


@dataclass(frozen=True)
class HbConfig:
    """One member of an HB domain."""

    rank: int
    """This member's index in the domain (its rail), 0..x-1."""
    peers: tuple[tuple[str, int], ...]
    """Listen address (host, TCP port) of every member, by rank."""
    names: tuple[str, ...] = ()
    """Member names for messages (e.g. host names); default ``gpu<rank>``."""
    domain: str = "hb"
    """Domain name for messages."""
    connect_timeout: float = 30.0
    """Seconds to wait for every member to be reachable."""
    deadline: float = 20.0
    """Seconds to wait for one peer's message in an operation."""
    bind: tuple[str, int] | None = None
    """Address to listen on when it is not ``peers[rank]`` (e.g. ``("0.0.0.0", port)`` for a
    member reached over several interfaces)."""

    def __post_init__(self) -> None:
        if not 0 <= self.rank < len(self.peers):
            raise ValueError(f"HB domain {self.domain}: rank {self.rank} is outside 0..{len(self.peers) - 1}")
        if self.names and len(self.names) != len(self.peers):
            raise ValueError(f"HB domain {self.domain}: {len(self.names)} names for {len(self.peers)} peers")

    def name(self, rank: int) -> str:
        who = self.names[rank] if self.names else f"gpu{rank}"
        host, port = self.peers[rank]
        return f"{who} ({host}:{port})"


class HbGroup:
    """Full-mesh TCP among the members of one HB domain (see module docstring)."""

    def __init__(self, config: HbConfig) -> None:
        self.config = config
        self._listener: socket.socket | None = None
        self._out: dict[int, socket.socket] = {}
        self._in: dict[int, socket.socket] = {}
        self._queues: dict[int, queue.Queue[tuple[int, bytes] | BaseException]] = {
            r: queue.Queue() for r in range(len(config.peers)) if r != config.rank}
        self._threads: list[threading.Thread] = []
        self._seq = 0
        self._closed = threading.Event()
        self._pool: ThreadPoolExecutor | None = None
        self._count = threading.Lock()
        self.bytes_sent = 0
        """Payload bytes this member sent to its peers so far."""

    @property
    def size(self) -> int:
        return len(self.config.peers)

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> "HbGroup":
        cfg = self.config
        try:
            self._listener = socket.create_server(cfg.bind or cfg.peers[cfg.rank], backlog=self.size)
        except OSError as error:
            raise HbError(f"HB domain {cfg.domain}: cannot listen on {cfg.name(cfg.rank)}: "
                          f"{error.strerror}") from None
        try:
            accept = threading.Thread(target=self._accept_all, daemon=True, name="hb-accept")
            accept.start()
            deadline = time.monotonic() + cfg.connect_timeout
            for peer in self._queues:
                self._out[peer] = self._connect(peer, deadline)
            if len(self._queues) > 1:
                self._pool = ThreadPoolExecutor(len(self._queues), thread_name_prefix=f"hb-send-{cfg.domain}")
            accept.join(max(0.0, deadline - time.monotonic()))
            if len(self._in) < self.size - 1:
                missing = [cfg.name(r) for r in self._queues if r not in self._in]
                raise HbError(f"HB domain {cfg.domain}: {cfg.name(cfg.rank)} got no connection from "
                              f"{', '.join(missing)} within {cfg.connect_timeout:g} s")
        except BaseException:
            self.close()
            raise
        return self

    def _connect(self, peer: int, deadline: float) -> socket.socket:
        address = self.config.peers[peer]
        while True:
            try:
                sock = socket.create_connection(address, timeout=max(0.1, deadline - time.monotonic()))
            except OSError as error:
                if time.monotonic() >= deadline or self._closed.is_set():
                    raise HbError(f"HB domain {self.config.domain}: cannot reach {self.config.name(peer)}: "
                                  f"{error.strerror or error}") from None
                time.sleep(0.05)
                continue
            if sock.getsockname() == sock.getpeername():
                # TCP simultaneous open with itself: the kernel picked the peer's port as this
                # connection's source port. Holding it would keep the peer from listening, and so
                # would a graceful close (FIN to itself, then TIME_WAIT): reset it instead.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()
                time.sleep(0.05)
                continue
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(_HELLO.pack(_MAGIC, self.config.rank))
            return sock

    def _accept_all(self) -> None:
        assert self._listener is not None
        self._listener.settimeout(0.2)
        while len(self._in) < self.size - 1 and not self._closed.is_set():
            try:
                sock, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            sock.settimeout(self.config.connect_timeout)
            try:
                magic, rank = _HELLO.unpack(_recv_exact(sock, _HELLO.size))
            except (OSError, EOFError, struct.error):
                sock.close()
                continue
            if magic != _MAGIC or rank not in self._queues or rank in self._in:
                sock.close()
                continue
            sock.settimeout(None)
            self._in[rank] = sock
            reader = threading.Thread(target=self._read, args=(rank, sock), daemon=True, name=f"hb-read-{rank}")
            reader.start()
            self._threads.append(reader)

    def _read(self, rank: int, sock: socket.socket) -> None:
        q = self._queues[rank]
        try:
            while True:
                seq, length = _FRAME.unpack(_recv_exact(sock, _FRAME.size))
                q.put((seq, _recv_exact(sock, length)))
        except (OSError, EOFError) as error:
            if not self._closed.is_set():
                q.put(HbError(f"HB domain {self.config.domain}: {self.config.name(rank)} closed its "
                              f"connection ({error or 'EOF'})"))

    def close(self) -> None:
        self._closed.set()
        if self._pool is not None:  # a send blocked on a peer ends when its socket closes below
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        for sock in [*self._out.values(), *self._in.values()] + ([self._listener] if self._listener else []):
            try:
                sock.close()
            except OSError:
                pass
        self._out, self._in, self._listener = {}, {}, None

    def __enter__(self) -> "HbGroup":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- messages -------------------------------------------------------------------------

    def send(self, peer: int, payload: bytes | memoryview) -> None:
        """Send one message of the current operation to ``peer``."""
        try:
            self._out[peer].sendall(_FRAME.pack(self._seq, len(payload)))
            self._out[peer].sendall(payload)
        except OSError as error:
            raise HbError(f"HB domain {self.config.domain}: sending to {self.config.name(peer)} failed: "
                          f"{error.strerror or error}") from None
        with self._count:
            self.bytes_sent += len(payload)

    def receive(self, peer: int, what: str) -> bytes:
        """The current operation's message from ``peer``."""
        try:
            item = self._queues[peer].get(timeout=self.config.deadline)
        except queue.Empty:
            raise HbError(f"HB domain {self.config.domain}: {self.config.name(self.config.rank)} got nothing "
                          f"from {self.config.name(peer)} within {self.config.deadline:g} s during {what}") from None
        if isinstance(item, BaseException):
            raise item
        seq, payload = item
        if seq != self._seq:
            raise HbError(f"HB domain {self.config.domain}: {self.config.name(peer)} is at operation {seq}, "
                          f"{self.config.name(self.config.rank)} at {self._seq} (members must make the same calls)")
        return payload

    def exchange(self, outgoing: Mapping[int, bytes | memoryview], what: str) -> dict[int, bytes]:
        """One operation: send ``outgoing[peer]`` to each peer, receive one message from each.

        The sends to different peers run at once (one thread each, started in ``r+1, r+2,
        ...`` order): one after the other in rank order, every member sent to the lowest rank
        first, so a few members' links carried several senders while the others idled, and a
        sender whose message to one peer was slow left its link to the others unused (the
        all-to-all took 1.6-1.9x its link time, docs/rail.md)."""
        rank, size = self.config.rank, self.size
        peers = sorted(self._queues, key=lambda p: (p - rank) % size)
        if self._pool is not None:  # started with two or more peers
            for sent in [self._pool.submit(self.send, peer, outgoing.get(peer, b"")) for peer in peers]:
                sent.result()  # an HbError of any send is raised here
        else:
            for peer in peers:
                self.send(peer, outgoing.get(peer, b""))
        received = {peer: self.receive(peer, what) for peer in sorted(self._queues)}
        self._seq += 1
        return received

    # -- collectives ----------------------------------------------------------------------

    def reduce_scatter(self, vector: npt.ArrayLike, bounds: Sequence[tuple[int, int]]) -> npt.NDArray[np.int32]:
        """The wrapping int32 sum over the members of their ``bounds[rank]`` slices."""
        vec = np.ascontiguousarray(vector, dtype=np.int32)
        self._check_bounds(bounds, vec.size)
        out = {p: vec[a:b].data.cast("B") for p, (a, b) in enumerate(bounds) if p != self.config.rank}
        a, b = bounds[self.config.rank]
        total = vec[a:b].copy()
        for peer, payload in self.exchange(out, "reduce-scatter").items():
            part = np.frombuffer(payload, dtype=np.int32)
            if part.size != total.size:
                raise HbError(f"HB domain {self.config.domain}: {self.config.name(peer)} sent {part.size} "
                              f"values for a {total.size}-value shard")
            total += part  # int32: wraps like the switch
        return total

    def all_gather(self, shard: npt.ArrayLike, bounds: Sequence[tuple[int, int]]) -> npt.NDArray[np.int32]:
        """The whole vector: every member's ``shard`` at its ``bounds``."""
        mine = np.ascontiguousarray(shard, dtype=np.int32)
        size = bounds[-1][1] if bounds else 0
        self._check_bounds(bounds, size)
        out = np.zeros(size, dtype=np.int32)
        a, b = bounds[self.config.rank]
        out[a:b] = mine
        payload = mine.data.cast("B")
        got = self.exchange({p: payload for p in self._queues}, "all-gather")
        for peer, data in got.items():
            a, b = bounds[peer]
            part = np.frombuffer(data, dtype=np.int32)
            if part.size != b - a:
                raise HbError(f"HB domain {self.config.domain}: {self.config.name(peer)} sent {part.size} "
                              f"values for its {b - a}-value shard")
            out[a:b] = part
        return out

    def _check_bounds(self, bounds: Sequence[tuple[int, int]], size: int) -> None:
        if len(bounds) != self.size or (bounds and (bounds[0][0] != 0 or bounds[-1][1] != size)) or any(
                bounds[i][1] != bounds[i + 1][0] for i in range(len(bounds) - 1)):
            raise ValueError(f"HB domain {self.config.domain}: shard bounds {list(bounds)} must cover "
                             f"0..{size} contiguously, one per member ({self.size})")


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise EOFError("connection closed")
        got += k
    return bytes(buf)
