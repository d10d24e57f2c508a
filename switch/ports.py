"""Switch ports: UDP sockets and Linux interfaces (AF_PACKET), a receive loop, pcap capture.

UDP port convention (``-u PORT@HOST:UDPPORT[@PEERHOST:PEERPORT]``): switch port PORT is a
UDP socket bound to HOST:UDPPORT. Every datagram received on it is one frame arriving on
the port (the datagram payload is the whole Ethernet frame). Frames the switch sends out
of the port go, as one datagram each, to the explicit peer when one is given, else to the
source address of the most recent datagram received on the port (dropped, with a debug
log, while nobody has sent anything yet). UDPPORT 0 binds an ephemeral port; the bound
address is ``UdpPort.address``.

Interface ports (``-i PORT@IFACE``) use a raw AF_PACKET socket on the Linux interface
(needs CAP_NET_RAW), like BMv2's ``-i``; frames the socket itself sent are ignored.

``--port-delay PORT=MS`` holds every frame sent out of PORT for MS milliseconds
(:class:`DelayedPort`): the one-way delay of an emulated WAN link on kernels without netem.
"""

from __future__ import annotations

import collections
import logging
import random
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Protocol

LOG = logging.getLogger(__name__)

MAX_FRAME = 65535
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
RECEIVE_BURST = 64
"""Frames read from one port per readiness event before the other ports get a turn."""


class PortError(Exception):
    """A port could not be opened or a port spec is malformed; names the port and value."""


def _parse_hostport(text: str, what: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise PortError(f"{what}: expected HOST:UDPPORT, got {text!r}")
    try:
        number = int(port)
    except ValueError:
        raise PortError(f"{what}: UDP port {port!r} is not a number") from None
    if not 0 <= number <= 65535:
        raise PortError(f"{what}: UDP port {number} is outside 0..65535")
    return host, number


def _parse_port_number(text: str, what: str) -> int:
    try:
        number = int(text, 0)
    except ValueError:
        raise PortError(f"{what}: switch port {text!r} is not a number") from None
    if not 0 <= number < 511:
        raise PortError(f"{what}: switch port {number} is outside 0..510 (511 is drop)")
    return number


@dataclass(frozen=True)
class UdpPortSpec:
    """``PORT@HOST:UDPPORT[@PEERHOST:PEERPORT]``."""

    port: int
    """Switch port number."""
    local: tuple[str, int]
    """Address the socket binds to."""
    peer: tuple[str, int] | None = None
    """Fixed destination of output frames; None: the last sender."""

    @classmethod
    def parse(cls, text: str) -> "UdpPortSpec":
        parts = text.split("@")
        if len(parts) not in (2, 3):
            raise PortError(f"UDP port {text!r}: expected PORT@HOST:UDPPORT[@PEERHOST:PEERPORT]")
        what = f"UDP port {text!r}"
        port = _parse_port_number(parts[0], what)
        local = _parse_hostport(parts[1], what)
        peer = _parse_hostport(parts[2], what) if len(parts) == 3 else None
        return cls(port, local, peer)


@dataclass(frozen=True)
class IfacePortSpec:
    """``PORT@IFACE``."""

    port: int
    """Switch port number."""
    iface: str
    """Linux interface name."""

    @classmethod
    def parse(cls, text: str) -> "IfacePortSpec":
        number, sep, iface = text.partition("@")
        if not sep or not iface:
            raise PortError(f"interface port {text!r}: expected PORT@IFACE")
        return cls(_parse_port_number(number, f"interface port {text!r}"), iface)


@dataclass(frozen=True)
class LossSpec:
    """Impairments applied to frames sent out of UDP ports (for loss-recovery tests)."""

    drop: float = 0.0
    """Probability that a frame is dropped."""
    duplicate: float = 0.0
    """Probability that a frame is sent twice."""
    reorder: float = 0.0
    """Probability that a frame is held back and sent after the next one."""
    seed: int = 0
    """Seed of the random generator, for reproducible runs."""


class Port(Protocol):
    """One switch port."""

    number: int

    def fileno(self) -> int: ...

    def receive(self) -> bytes | None:
        """One received frame, or None when the readable event carried no frame for us."""
        ...

    def send(self, frame: bytes) -> None: ...

    def close(self) -> None: ...


class UdpPort:
    """A switch port carried over UDP datagrams (see the module docstring)."""

    def __init__(self, spec: UdpPortSpec, loss: LossSpec | None = None) -> None:
        self.number = spec.port
        self.peer = spec.peer
        self._fixed_peer = spec.peer is not None
        family = socket.AF_INET6 if ":" in spec.local[0] else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            self._sock.bind(spec.local)
        except OSError as error:
            self._sock.close()
            raise PortError(f"port {spec.port}: cannot bind UDP {spec.local[0]}:{spec.local[1]}: "
                            f"{error.strerror}") from None
        self._sock.setblocking(False)
        self._loss = loss
        self._rng = random.Random(loss.seed) if loss else None
        self._held: bytes | None = None

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port)."""
        host, port = self._sock.getsockname()[:2]
        return host, port

    def fileno(self) -> int:
        return self._sock.fileno()

    def receive(self) -> bytes | None:
        try:
            data, sender = self._sock.recvfrom(MAX_FRAME)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as error:  # ICMP port unreachable from an earlier send, etc.
            LOG.debug("port %d: receive error %s", self.number, error)
            return None
        if not self._fixed_peer:
            self.peer = sender[:2]
        return data

    def send(self, frame: bytes) -> None:
        if self.peer is None:
            LOG.debug("port %d: no peer yet, dropped %d-byte frame", self.number, len(frame))
            return
        for out in self._impair(frame):
            try:
                self._sock.sendto(out, self.peer)
            except OSError as error:
                LOG.debug("port %d: send to %s failed: %s", self.number, self.peer, error)

    def _impair(self, frame: bytes) -> list[bytes]:
        if self._loss is None or self._rng is None:
            return [frame]
        rng, loss = self._rng, self._loss
        if rng.random() < loss.drop:
            return []
        frames = [frame, frame] if rng.random() < loss.duplicate else [frame]
        if self._held is not None:
            frames.append(self._held)
            self._held = None
        elif rng.random() < loss.reorder:
            self._held = frames.pop(0)
        return frames

    def close(self) -> None:
        self._sock.close()


class IfacePort:
    """A switch port on a Linux interface through an AF_PACKET raw socket."""

    def __init__(self, spec: IfacePortSpec) -> None:
        self.number = spec.port
        self.iface = spec.iface
        try:
            self._sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except PermissionError:
            raise PortError(f"port {spec.port}: raw socket on interface {spec.iface!r} needs root "
                            "(CAP_NET_RAW)") from None
        try:
            self._sock.bind((spec.iface, 0))
        except OSError as error:
            self._sock.close()
            reason = "no such interface" if error.errno == 19 else error.strerror
            raise PortError(f"port {spec.port}: interface {spec.iface!r}: {reason}") from None
        try:  # Linux >= 4.20: the kernel does not loop our own output back to us
            self._sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        except OSError:
            pass  # older kernels: receive() skips PACKET_OUTGOING frames instead
        self._sock.setblocking(False)

    def fileno(self) -> int:
        return self._sock.fileno()

    def receive(self) -> bytes | None:
        try:
            data, address = self._sock.recvfrom(MAX_FRAME)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as error:  # e.g. ENETDOWN once when the link goes down; it may come back up
            LOG.warning("port %d (%s): receive failed: %s", self.number, self.iface, error)
            return None
        if address[2] == PACKET_OUTGOING:
            return None
        return data

    def send(self, frame: bytes) -> None:
        try:
            self._sock.send(frame)
        except OSError as error:
            LOG.debug("port %d (%s): send failed: %s", self.number, self.iface, error)

    def close(self) -> None:
        self._sock.close()


class DelayedPort:
    """A port whose output leaves ``delay_ms`` after the switch sends it (a WAN link's one-way
    delay where the kernel has no netem; docs/geo.md). Frames keep their order; a thread
    releases each at its due time. Input is not delayed (the peer's port delays its own output)."""

    def __init__(self, inner: Port, delay_ms: float) -> None:
        if not delay_ms >= 0:
            raise PortError(f"port {inner.number}: delay {delay_ms!r} ms must be >= 0")
        self.inner, self.number, self.delay_s = inner, inner.number, delay_ms / 1e3
        self._queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._release, name=f"delay port {inner.number}", daemon=True)
        self._thread.start()

    def fileno(self) -> int:
        return self.inner.fileno()

    def receive(self) -> bytes | None:
        return self.inner.receive()

    def send(self, frame: bytes) -> None:
        with self._cond:
            self._queue.append((time.monotonic() + self.delay_s, frame))
            self._cond.notify()

    def _release(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (not self._queue or self._queue[0][0] > time.monotonic()):
                    self._cond.wait(self._queue[0][0] - time.monotonic() if self._queue else None)
                if self._closed:
                    return
                _, frame = self._queue.popleft()
            self.inner.send(frame)

    def close(self) -> None:
        """Stop releasing (frames still queued are dropped, as on a link taken down) and close."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout=5)
        self.inner.close()


class PcapWriter:
    """A minimal libpcap file writer (Ethernet link type, microsecond timestamps)."""

    def __init__(self, path: Path) -> None:
        self._file: BinaryIO = open(path, "wb")
        self._file.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, MAX_FRAME, 1))
        self._lock = threading.Lock()

    def write(self, frame: bytes) -> None:
        now = time.time()
        with self._lock:
            self._file.write(struct.pack("<IIII", int(now), int(now % 1 * 1e6), len(frame), len(frame)))
            self._file.write(frame)
            self._file.flush()

    def close(self) -> None:
        self._file.close()


Handler = Callable[[int, bytes], list[tuple[int, bytes]]]


class PortSet:
    """The ports of a switch and the thread that receives on them.

    Each received frame goes to ``handler(port, frame)``; the frames it returns are sent
    out of their ports. With ``pcap_dir``, every frame in and out of port N is recorded
    in ``port<N>_in.pcap`` / ``port<N>_out.pcap`` (BMv2 names them after the interface).
    """

    def __init__(self, ports: Iterable[Port], handler: Handler, pcap_dir: Path | None = None) -> None:
        self.ports = {p.number: p for p in ports}
        self.handler = handler
        self._pcap: dict[tuple[int, str], PcapWriter] = {}
        if pcap_dir is not None:
            pcap_dir.mkdir(parents=True, exist_ok=True)
            for n in self.ports:
                for direction in ("in", "out"):
                    self._pcap[(n, direction)] = PcapWriter(pcap_dir / f"port{n}_{direction}.pcap")
        self._wake_r, self._wake_w = socket.socketpair()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the receive thread."""
        self._thread = threading.Thread(target=self._loop, name="innet-ports", daemon=True)
        self._thread.start()

    def send(self, outputs: list[tuple[int, bytes]]) -> None:
        """Send frames out of their ports; frames to unknown ports are dropped."""
        for number, frame in outputs:
            port = self.ports.get(number)
            if port is None:
                LOG.debug("egress port %d does not exist: dropped %d bytes", number, len(frame))
                continue
            LOG.debug("port %d: out %d bytes", number, len(frame))
            pcap = self._pcap.get((number, "out"))
            if pcap is not None:
                pcap.write(frame)
            port.send(frame)

    def _loop(self) -> None:
        selector = selectors.DefaultSelector()
        for port in self.ports.values():
            selector.register(port.fileno(), selectors.EVENT_READ, port)
        selector.register(self._wake_r, selectors.EVENT_READ, None)
        try:
            while not self._stop.is_set():
                for key, _ in selector.select():
                    if key.data is None:
                        return
                    self._receive(key.data)
        finally:
            selector.close()

    def _receive(self, port: Port) -> None:
        """Process up to RECEIVE_BURST frames waiting on ``port`` (one select per burst)."""
        for _ in range(RECEIVE_BURST):
            frame = port.receive()
            if frame is None:
                return
            self._process(port, frame)

    def _process(self, port: Port, frame: bytes) -> None:
        LOG.debug("port %d: in %d bytes", port.number, len(frame))
        pcap = self._pcap.get((port.number, "in"))
        if pcap is not None:
            pcap.write(frame)
        try:
            outputs = self.handler(port.number, frame)
        except Exception:  # the data plane must survive a bad packet
            LOG.exception("port %d: processing a %d-byte frame failed", port.number, len(frame))
            return
        self.send(outputs)

    def close(self) -> None:
        """Stop the thread and close ports and capture files."""
        self._stop.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        for port in self.ports.values():
            port.close()
        for pcap in self._pcap.values():
            pcap.close()
        self._wake_r.close()
        self._wake_w.close()
