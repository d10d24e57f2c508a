"""Links between neighbouring stages: ordered, reliable byte messages in both directions.

- :class:`QueueChannel`: two ends in one process (unit tests, threads as sites).
- :class:`TcpChannel`: length-prefixed messages over TCP (processes on loopback or testbed hosts).
- :class:`ShapedChannel`: wraps either and emulates a WAN link on the sending side: a rate
  (each message occupies the link for ``bytes * 8 / rate`` after the previous one) and a
  one-way delay (a delay queue), both in user space. It is how geo mode emulates delay on
  this kernel, which has HTB but no netem (see docs/geo.md); it keeps messages in order.

Every channel counts what it sent and received, so benchmarks report bytes on the WAN.
"""

from __future__ import annotations

import abc
import heapq
import queue
import socket
import struct
import threading
import time
from dataclasses import dataclass

_LEN = struct.Struct(">Q")


class ChannelError(RuntimeError):
    """A link failed: peer closed, timed out, or could not connect; names the link."""


class Channel(abc.ABC):
    """One end of a link."""

    name = "link"

    def __init__(self) -> None:
        self.sent_bytes = 0
        self.received_bytes = 0
        self.sent_messages = 0

    def send(self, data: bytes) -> None:
        self.sent_bytes += len(data)
        self.sent_messages += 1
        self._send(data)

    def recv(self, timeout: float | None = 60.0) -> bytes:
        data = self._recv(timeout)
        self.received_bytes += len(data)
        return data

    @abc.abstractmethod
    def _send(self, data: bytes) -> None: ...

    @abc.abstractmethod
    def _recv(self, timeout: float | None) -> bytes: ...

    def close(self) -> None:
        """Release the link (idempotent)."""

    def __enter__(self) -> "Channel":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class QueueChannel(Channel):
    """An in-process end; :meth:`pair` makes two connected ends."""

    def __init__(self, tx: "queue.Queue[bytes]", rx: "queue.Queue[bytes]", name: str) -> None:
        super().__init__()
        self._tx, self._rx, self.name = tx, rx, name

    @classmethod
    def pair(cls, name: str = "queue") -> tuple["QueueChannel", "QueueChannel"]:
        a: queue.Queue[bytes] = queue.Queue()
        b: queue.Queue[bytes] = queue.Queue()
        return cls(a, b, name), cls(b, a, name)

    def _send(self, data: bytes) -> None:
        self._tx.put(data)

    def _recv(self, timeout: float | None) -> bytes:
        try:
            return self._rx.get(timeout=timeout)
        except queue.Empty:
            raise ChannelError(f"{self.name}: nothing received within {timeout:g} s") from None


class TcpChannel(Channel):
    """Messages framed by an 8-byte length over one TCP connection."""

    def __init__(self, sock: socket.socket, name: str) -> None:
        super().__init__()
        self.sock, self.name = sock, name
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._send_lock = threading.Lock()

    @classmethod
    def connect(cls, address: tuple[str, int], timeout: float = 30.0, name: str | None = None) -> "TcpChannel":
        """Connect, retrying until ``timeout`` while the peer is not listening yet."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                sock = socket.create_connection(address, timeout=max(0.1, deadline - time.monotonic()))
                sock.settimeout(None)
                return cls(sock, name or f"tcp {address[0]}:{address[1]}")
            except OSError as error:
                if time.monotonic() > deadline:
                    raise ChannelError(f"link to {address[0]}:{address[1]}: could not connect within "
                                       f"{timeout:g} s: {error}") from None
                time.sleep(0.02)

    @staticmethod
    def listen(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
        """A listening socket (port 0: ephemeral; read it from ``getsockname``)."""
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((host, port))
        srv.listen(1)
        return srv

    @classmethod
    def accept(cls, srv: socket.socket, timeout: float = 30.0, name: str = "tcp") -> "TcpChannel":
        srv.settimeout(timeout)
        try:
            sock, _ = srv.accept()
        except socket.timeout:
            raise ChannelError(f"{name}: no peer connected within {timeout:g} s") from None
        sock.settimeout(None)
        return cls(sock, name)

    def _send(self, data: bytes) -> None:
        with self._send_lock:
            try:
                self.sock.sendall(_LEN.pack(len(data)) + data)
            except (ConnectionResetError, BrokenPipeError) as error:
                raise ChannelError(f"{self.name}: peer closed the link ({error.strerror})") from None
            except OSError as error:
                raise ChannelError(f"{self.name}: send failed: {error}") from None

    def _read(self, n: int) -> bytes:
        chunks = []
        while n:
            try:
                chunk = self.sock.recv(min(n, 1 << 20))
            except socket.timeout:
                raise ChannelError(f"{self.name}: nothing received within the timeout") from None
            except ConnectionResetError as error:
                # A peer that dies with unread data in its buffer resets rather than closes.
                raise ChannelError(f"{self.name}: peer closed the link ({error.strerror})") from None
            except OSError as error:
                raise ChannelError(f"{self.name}: receive failed: {error}") from None
            if not chunk:
                raise ChannelError(f"{self.name}: peer closed the link")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _recv(self, timeout: float | None) -> bytes:
        self.sock.settimeout(timeout)
        (n,) = _LEN.unpack(self._read(_LEN.size))
        return self._read(n)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


@dataclass(frozen=True)
class LinkShape:
    """A WAN link's emulated properties (one direction; both ends shape their own sends)."""

    bw_mbps: float | None = None
    """Rate in Mbit/s; None: unlimited."""
    delay_ms: float = 0.0
    """One-way delay in ms."""

    def __post_init__(self) -> None:
        if self.bw_mbps is not None and not self.bw_mbps > 0:
            raise ValueError(f"link shape bw_mbps={self.bw_mbps!r}: must be > 0 or None")
        if not self.delay_ms >= 0:
            raise ValueError(f"link shape delay_ms={self.delay_ms!r}: must be >= 0")

    def transfer_s(self, nbytes: int) -> float:
        """Serialisation plus propagation time of one message of ``nbytes``."""
        tx = 0.0 if self.bw_mbps is None else nbytes * 8 / (self.bw_mbps * 1e6)
        return tx + self.delay_ms / 1e3


class ShapedChannel(Channel):
    """Rate and delay on the sending side; a thread releases each message at its due time."""

    def __init__(self, inner: Channel, shape: LinkShape) -> None:
        super().__init__()
        self.inner, self.shape, self.name = inner, shape, f"{inner.name} ({shape.bw_mbps} Mbit/s, {shape.delay_ms} ms)"
        self._busy_until = 0.0
        self._heap: list[tuple[float, int, bytes]] = []
        self._seq = 0
        self._cond = threading.Condition()
        self._closed = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._pump, name=f"shaper {inner.name}", daemon=True)
        self._thread.start()

    def _send(self, data: bytes) -> None:
        if self._error is not None:
            raise ChannelError(f"{self.name}: {self._error}")
        now = time.monotonic()
        tx = 0.0 if self.shape.bw_mbps is None else len(data) * 8 / (self.shape.bw_mbps * 1e6)
        with self._cond:
            self._busy_until = max(now, self._busy_until) + tx
            due = self._busy_until + self.shape.delay_ms / 1e3
            heapq.heappush(self._heap, (due, self._seq, data))
            self._seq += 1
            self._cond.notify()

    def _pump(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (not self._heap or self._heap[0][0] > time.monotonic()):
                    wait = None if not self._heap else max(0.0, self._heap[0][0] - time.monotonic())
                    self._cond.wait(wait)
                if not self._heap:  # closed and drained
                    return
                _, _, data = heapq.heappop(self._heap)
            try:
                self.inner.send(data)
            except BaseException as error:  # reported on the next send
                self._error = error
                return

    def _recv(self, timeout: float | None) -> bytes:
        return self.inner.recv(timeout)

    def flush(self, timeout: float = 60.0) -> None:
        """Wait until every queued message has left."""
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                if not self._heap:
                    return
            if time.monotonic() > deadline:
                raise ChannelError(f"{self.name}: queued messages not sent within {timeout:g} s")
            time.sleep(0.005)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout=5.0)
        self.inner.close()
