"""``NativePortSet``: innet-switch's ports served by a C datapath loop (``portio.c``).

Why: with the native executor, a Python receive loop (one socket call and one Python call
per frame) is what bounds innet-switch, not the generated C. Here one C thread owns the
port sockets (the fds of the same ``UdpPort``/``IfacePort`` objects the Python
``PortSet`` uses), receives batches (``recvmmsg``, or a ring: below), runs each batch through the
pipeline's ``sw_process_v`` (each frame where it was received: ring frames are not copied)
holding the switch mutex (the mutex ``NativePipeline.lock`` takes: a control-plane batch
is applied whole between two packet batches), and sends each port's outputs with one
``sendmmsg``. cffi releases the GIL for ``pio_run``, so Python
never runs per packet.

What still needs Python goes through one queue in C, drained by a second thread here:

- frames to the CPU port and the pipeline's digests (``deliver(cpu_frames)``: the device
  turns them into PacketIn/DigestList for the controller);
- while the bound pipeline is not native (the ``auto`` executor fell back to python for a
  program), every received frame: ``handler(port, frame)`` runs it and the outputs are
  sent through C (``send``), like ``PortSet``.

Same interface as ``innet.switch.ports.PortSet`` (``ports``, ``start``, ``send``,
``close``) plus ``bind(pipeline)`` (the device calls it when its pipeline changes) and
``stats()``. Interface ports receive through a TPACKET_V2 ``PACKET_MMAP`` ring (no
syscall or kernel copy per frame) whose frames fit the larger of the MTU at start and
9000 (longer frames are counted in ``drop_truncated``), and send with ``sendmmsg``. UDP
ports learn their peer from the latest datagram of a batch (``PortSet``: of each
datagram; the same unless two senders share a port). Not handled here (the server
then keeps ``PortSet``): pcap capture and UDP loss impairments.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from innet import native_build

from ..ports import IfacePort, Port, PortError, UdpPort

LOG = logging.getLogger(__name__)

CDEF = """
typedef struct pio pio_t;
pio_t *pio_new(int cpu_port);
void pio_free(pio_t *io);
int pio_add_port(pio_t *io, int fd, uint32_t num, int kind);
int pio_ring(pio_t *io, uint32_t num, uint32_t mtu);
int pio_set_peer(pio_t *io, uint32_t num, int family, const char *addr, uint32_t port, int fixed);
int pio_get_peer(pio_t *io, uint32_t num, uint8_t *addr, uint32_t *port);
void pio_bind(pio_t *io, int mode, void *sw, void *lock, void *unlock, void *process, void *recs, void *data,
              void *digests);
int pio_pop(pio_t *io, uint8_t *buf, uint32_t cap, uint32_t *kind, uint32_t *port);
int pio_wait(pio_t *io);
int pio_take_digest_flag(pio_t *io);
int pio_send(pio_t *io, uint32_t num, const char *data, uint32_t len);
int pio_run(pio_t *io);
void pio_stop(pio_t *io);
void pio_stats(pio_t *io, uint64_t *out, uint32_t n);
void pio_port_stats(pio_t *io, uint32_t num, uint64_t *rx, uint64_t *tx);
"""

MODE_DROP, MODE_PYTHON, MODE_NATIVE = 0, 1, 2
KIND_UDP, KIND_PACKET = 0, 1
Q_RX, Q_CPU = 0, 1
MAX_FRAME = 65536
STAT_NAMES = ("batches", "rx", "tx", "to_python", "drop_no_peer", "drop_no_port", "drop_queue_full",
              "drop_send", "drop_no_pipeline", "ns_recv", "ns_lock", "ns_process", "ns_send", "ns_wait",
              "wakeups", "drop_truncated")
"""``pio_stats`` in order: frames and batches, drops by reason, and nanoseconds the loop
spent per stage (receive, waiting for the switch mutex, pipeline, send, idle in epoll)."""
RING_MTU = 9000
"""Smallest MTU an interface port's receive ring is sized for (jumbo frames)."""
STOP_TIMEOUT = 5.0
"""Seconds ``close`` waits for each thread (the loop polls its stop flag every 50 ms)."""

Handler = Callable[[int, bytes], list[tuple[int, bytes]]]
Deliver = Callable[[list[bytes]], None]


def library() -> native_build.NativeLibrary:
    """The compiled port loop (built once, cached by content hash). Raises NativeBuildError."""
    source = resources.files("innet.switch.native").joinpath("portio.c").read_text()
    return native_build.load_library("innet_portio", source, CDEF)


@dataclass(frozen=True)
class PortLoopStats:
    """Counters of the C loop since start (see ``STAT_NAMES``)."""

    values: dict[str, int]
    """Totals by name."""
    ports: dict[int, tuple[int, int]]
    """Frames received and sent per switch port (``pio_send`` included)."""


class NativePortSet:
    """The ports of a switch served by the C loop (see the module docstring)."""

    def __init__(self, ports: Iterable[Port], handler: Handler, deliver: Deliver,
                 cpu_port: int | None = None, rx_ring: bool = True) -> None:
        loaded = library()
        self._ffi, self._lib = loaded.ffi, loaded.lib
        self.ports = {p.number: p for p in ports}
        self.handler = handler
        self.deliver = deliver
        io = self._lib.pio_new(-1 if cpu_port is None else cpu_port)
        if io == self._ffi.NULL:
            raise PortError("C port loop: out of memory or file descriptors")
        self._io = io
        self._bound: Any = None
        self._threads: list[threading.Thread] = []
        self.rings: set[int] = set()
        """Interface ports received through a PACKET_MMAP ring (the others use recvmmsg)."""
        for number, port in self.ports.items():
            if isinstance(port, UdpPort):
                kind = KIND_UDP
            elif isinstance(port, IfacePort):
                kind = KIND_PACKET
            else:
                raise PortError(f"port {number}: the C port loop serves UDP and interface ports, "
                                f"not {type(port).__name__}")
            if self._lib.pio_add_port(io, port.fileno(), number, kind) < 0:
                raise PortError(f"port {number}: the C port loop takes at most 64 ports numbered 0..511")
            if isinstance(port, UdpPort) and port.peer is not None:
                self._set_peer(number, port.peer, fixed=True)
            if isinstance(port, IfacePort) and rx_ring:
                self._ring(number, port.iface)

    def _ring(self, number: int, iface: str) -> None:
        """A PACKET_MMAP (TPACKET_V2) receive ring on an interface port, its frames sized
        for the larger of the interface's MTU and ``RING_MTU`` (testbeds raise the MTU of
        switch interfaces after the switch started); without one (old kernel, no memory)
        the port keeps ``recvmmsg``."""
        try:
            mtu = int((Path("/sys/class/net") / iface / "mtu").read_text())
        except (OSError, ValueError):
            mtu = 9000
        error = self._lib.pio_ring(self._io, number, max(mtu, RING_MTU))
        if error == 0:
            self.rings.add(number)
        else:
            LOG.info("port %d (%s): no receive ring (%s), using recvmmsg", number, iface, os.strerror(-error))

    def _set_peer(self, number: int, peer: tuple[str, int], fixed: bool) -> None:
        host, udp = peer
        try:
            info = socket.getaddrinfo(host, udp, type=socket.SOCK_DGRAM)[0]
        except socket.gaierror as error:
            raise PortError(f"port {number}: peer {host}:{udp}: {error.strerror}") from None
        family, address = info[0], str(info[4][0])
        packed = socket.inet_pton(family, address)
        self._lib.pio_set_peer(self._io, number, 4 if family == socket.AF_INET else 6, packed, udp, int(fixed))

    # ------------------------------------------------------------------ pipeline binding
    def bind(self, pipeline: Any) -> None:
        """Run ``pipeline``'s packets: in C when it is a ``NativePipeline``, through
        ``handler`` when it is another executor, dropped when None (no pipeline set)."""
        from .pipeline import NativePipeline

        lib = self._lib
        if isinstance(pipeline, NativePipeline):
            plib, pffi = pipeline.lib, pipeline.ffi

            def fn(name: str) -> Any:
                return self._ffi.cast("void *", int(pffi.cast("uintptr_t", getattr(plib, name))))

            sw = self._ffi.cast("void *", int(pffi.cast("uintptr_t", pipeline.sw)))
            lib.pio_bind(self._io, MODE_NATIVE, sw, fn("sw_lock"), fn("sw_unlock"), fn("sw_process_v"),
                         fn("sw_out_recs"), fn("sw_out_data"), fn("sw_digests"))
        else:
            null = self._ffi.NULL
            lib.pio_bind(self._io, MODE_DROP if pipeline is None else MODE_PYTHON, null, null, null, null, null,
                         null, null)
        self._bound = pipeline  # keeps the bound C state alive while the loop may use it

    @property
    def native(self) -> bool:
        """True while packets run in C (a native pipeline is bound)."""
        from .pipeline import NativePipeline

        return isinstance(self._bound, NativePipeline)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Start the datapath thread and the thread that serves its queue to Python."""
        for target, name in ((self._lib.pio_run, "innet-datapath"), (self._serve_queue, "innet-datapath-py")):
            thread = threading.Thread(target=target, args=(self._io,) if name == "innet-datapath" else (),
                                      name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve_queue(self) -> None:
        ffi, lib, io = self._ffi, self._lib, self._io
        buf = ffi.new("uint8_t[]", MAX_FRAME)
        kind, port = ffi.new("uint32_t *"), ffi.new("uint32_t *")
        while lib.pio_wait(io):
            cpu: list[bytes] = []
            while True:
                n = lib.pio_pop(io, buf, MAX_FRAME, kind, port)
                if n < 0:
                    break
                frame = ffi.buffer(buf, n)[:]
                if kind[0] == Q_CPU:
                    cpu.append(frame)
                    continue
                try:
                    outputs = self.handler(port[0], frame)
                except Exception:  # the data plane must survive a bad packet
                    LOG.exception("port %d: processing a %d-byte frame failed", port[0], n)
                    continue
                self.send(outputs)
            if lib.pio_take_digest_flag(io) or cpu:
                try:
                    self.deliver(cpu)
                except Exception:
                    LOG.exception("delivering %d PacketIn frames and digests failed", len(cpu))

    def send(self, outputs: list[tuple[int, bytes]]) -> None:
        """Send frames out of their ports (PacketOut results); unknown ports drop them."""
        for number, frame in outputs:
            if number not in self.ports:
                LOG.debug("egress port %d does not exist: dropped %d bytes", number, len(frame))
                continue
            if self._lib.pio_send(self._io, number, frame, len(frame)) < 0:
                LOG.debug("port %d: send of %d bytes failed or no peer yet", number, len(frame))

    def peer(self, number: int) -> tuple[str, int] | None:
        """The UDP peer port ``number`` sends to now (learned or fixed), None if none yet."""
        addr, udp = self._ffi.new("uint8_t[16]"), self._ffi.new("uint32_t *")
        family = self._lib.pio_get_peer(self._io, number, addr, udp)
        if family == 0:
            return None
        raw = bytes(self._ffi.buffer(addr, 4 if family == 4 else 16))
        return socket.inet_ntop(socket.AF_INET if family == 4 else socket.AF_INET6, raw), int(udp[0])

    def stats(self) -> PortLoopStats:
        """The loop's counters now."""
        out = self._ffi.new("uint64_t[]", len(STAT_NAMES))
        self._lib.pio_stats(self._io, out, len(STAT_NAMES))
        rx, tx = self._ffi.new("uint64_t *"), self._ffi.new("uint64_t *")
        ports = {}
        for number in self.ports:
            self._lib.pio_port_stats(self._io, number, rx, tx)
            ports[number] = (int(rx[0]), int(tx[0]))
        return PortLoopStats(dict(zip(STAT_NAMES, (int(v) for v in out))), ports)

    def close(self) -> None:
        """Stop both threads (within ``STOP_TIMEOUT``), then close the ports."""
        if self._io is None:
            return
        self._lib.pio_stop(self._io)
        alive = False
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(STOP_TIMEOUT)
                alive = alive or thread.is_alive()
        LOG.info("C port loop stats: %s", json.dumps(self.stats().values))
        for port in self.ports.values():
            port.close()
        if alive:  # freeing memory a stuck thread still uses would be worse than leaking it
            LOG.error("C port loop did not stop within %.0f s", STOP_TIMEOUT)
        else:
            self._lib.pio_free(self._io)
        self._io = None
        self._bound = None


__all__ = ["CDEF", "NativePortSet", "PortLoopStats", "STAT_NAMES", "library"]
