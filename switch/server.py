"""The switch process: a device, its ports and the P4Runtime gRPC server, with a lifecycle.

    with SwitchServer(SwitchOptions(udp_ports=(UdpPortSpec.parse("1@127.0.0.1:0"),)),
                      target) as switch:
        print(switch.grpc_address)

``start()`` opens ports, loads the optional program and binds gRPC; ``stop()`` (or
leaving the ``with`` block) undoes all of it, even after a partial start.
"""

from __future__ import annotations

import logging
import threading
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc

from innet.switch.p4runtime.ageing import DEFAULT_SWEEP_INTERVAL, AgeingSweeper
from innet.switch.p4runtime.device import Device
from innet.switch.p4runtime.errors import P4RuntimeError
from innet.switch.p4runtime.service import P4RuntimeService, add_to_server
from innet.switch.p4runtime.target_api import Target
from innet.switch.p4rt_codec.device_configs import MAX_PIPELINE_MESSAGE_BYTES
from innet.switch.tls import ServerTls, TlsConfigError
from innet.switch.native.portio import NativePortSet
from innet.switch.ports import (
    DelayedPort,
    IfacePort,
    IfacePortSpec,
    LossSpec,
    Port,
    PortSet,
    UdpPort,
    UdpPortSpec,
)

LOG = logging.getLogger(__name__)

DEFAULT_GRPC_ADDRESS = "127.0.0.1:9559"
PORT_LOOPS = ("auto", "native", "python")
"""Values of ``SwitchOptions.port_loop`` / ``innet-switch --port-loop``."""
DIGEST_IDLE_WAIT = 1.0
"""Seconds the digest timer sleeps when no list is open (it is woken when one opens)."""


class SwitchError(Exception):
    """The switch could not start; the message names the object and the reason."""


@dataclass(frozen=True)
class SwitchOptions:
    """Everything ``innet-switch`` is started with."""

    device_id: int = 1
    """P4Runtime device id (clients must send the same)."""
    udp_ports: tuple[UdpPortSpec, ...] = ()
    """Ports carried over UDP sockets."""
    iface_ports: tuple[IfacePortSpec, ...] = ()
    """Ports on Linux interfaces (AF_PACKET)."""
    cpu_port: int | None = None
    """Port whose traffic is PacketIn/PacketOut; None disables packet I/O."""
    grpc_address: str = DEFAULT_GRPC_ADDRESS
    """HOST:PORT the P4Runtime server binds; port 0 picks a free one."""
    pcap_dir: Path | None = None
    """Directory for per-port pcap captures; None disables capture."""
    program: Path | None = None
    """Device config or P4 source loaded at start; None starts without a pipeline."""
    loss: LossSpec | None = None
    """Impairments on UDP port output (tests of loss recovery)."""
    grpc_workers: int = 16
    """Threads serving gRPC (each open StreamChannel holds one)."""
    ageing_sweep_interval: float = DEFAULT_SWEEP_INTERVAL
    """Seconds between idle-timeout sweeps (IdleTimeoutNotification; BMv2 uses 1 s)."""
    tls: ServerTls | None = None
    """TLS of the P4Runtime server (``--grpc-server-ssl``); None: plaintext."""
    port_delays: tuple[tuple[int, float], ...] = ()
    """(port, ms): output of that port leaves ms later (``--port-delay``, WAN emulation)."""
    port_loop: str = "auto"
    """Who serves the ports: ``native`` (the C loop of ``innet.switch.native.portio``:
    batched socket I/O, packets run in C off the GIL), ``python`` (``PortSet``: a Python
    thread, one call per frame), ``auto``: native unless the target's executor is python,
    no C compiler is present, or pcap capture, loss impairments or port delays are asked for (which
    only ``PortSet`` does)."""


class SwitchServer:
    """One running switch."""

    def __init__(self, options: SwitchOptions, target: Target) -> None:
        self.options = options
        self.device = Device(options.device_id, target, options.cpu_port)
        self.ports: PortSet | NativePortSet | None = None
        self._server: grpc.Server | None = None
        self._bound_port: int | None = None
        self._stopped = threading.Event()
        self._digest_wake = threading.Event()
        self._digest_thread: threading.Thread | None = None
        self._ageing: AgeingSweeper | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> "SwitchServer":
        """Open ports, load the program, start serving; raises SwitchError."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        opts = self.options
        numbers = [s.port for s in opts.udp_ports] + [s.port for s in opts.iface_ports]
        duplicates = sorted({n for n in numbers if numbers.count(n) > 1})
        if duplicates:
            raise SwitchError(f"switch port {duplicates[0]} is given more than once")
        if opts.cpu_port is not None and opts.cpu_port in numbers:
            raise SwitchError(f"CPU port {opts.cpu_port} is also given as a data port")
        if not opts.ageing_sweep_interval > 0:
            raise SwitchError(f"ageing sweep interval must be > 0 seconds, got {opts.ageing_sweep_interval}")
        ports: list[Port] = []
        try:
            for spec in opts.udp_ports:
                ports.append(UdpPort(spec, opts.loss))
            for ispec in opts.iface_ports:
                ports.append(IfacePort(ispec))
            delays = dict(opts.port_delays)
            unknown = sorted(set(delays) - set(numbers))
            if unknown:
                raise SwitchError(f"--port-delay: switch port {unknown[0]} is not a data port")
            ports = [DelayedPort(p, delays[p.number]) if delays.get(p.number) else p for p in ports]
        except Exception:
            for port in ports:
                port.close()
            raise
        try:
            self.ports = self._port_set(ports)
        except Exception:
            for port in ports:
                port.close()
            raise
        if opts.program is not None:
            self._load_program(opts.program)
        service = P4RuntimeService(self.device, self.ports.send)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=opts.grpc_workers,
                                                        thread_name_prefix="p4rt"),
                             options=[("grpc.so_reuseport", 0),  # a busy address is an error
                                      # a wrong kind of config (a 10 MB BMv2 JSON) gets the target's
                                      # message, not gRPC's RESOURCE_EXHAUSTED at 4 MiB
                                      ("grpc.max_receive_message_length", MAX_PIPELINE_MESSAGE_BYTES)])
        add_to_server(service, server)
        try:
            if opts.tls is None:
                bound = server.add_insecure_port(opts.grpc_address)
            else:
                bound = server.add_secure_port(opts.grpc_address, opts.tls.credentials())
        except TlsConfigError as error:
            raise SwitchError(str(error)) from None
        except RuntimeError as error:
            raise SwitchError(f"gRPC address {opts.grpc_address!r}: cannot bind ({error})") from None
        if bound == 0:
            raise SwitchError(f"gRPC address {opts.grpc_address!r}: cannot bind (in use or invalid)")
        self._server, self._bound_port = server, bound
        server.start()
        self.ports.start()
        self.device.digest_wakeup = self._digest_wake.set
        self._digest_thread = threading.Thread(target=self._digest_timer, name="innet-digests", daemon=True)
        self._digest_thread.start()
        self._ageing = AgeingSweeper(self.device.sweep_idle_timeouts, opts.ageing_sweep_interval).start()
        LOG.info("P4Runtime listening on %s (%s), device id %d", self.grpc_address,
                 "plaintext" if opts.tls is None else
                 "TLS" + (" with client auth" if opts.tls.client_auth else ""), opts.device_id)

    def _native_loop_refusal(self) -> str | None:
        """Why the C port loop cannot serve this switch (None: it can)."""
        from innet import native_build

        opts = self.options
        if getattr(self.device.target, "executor", "python") == "python":
            return "the executor is python"
        if opts.pcap_dir is not None:
            return "pcap capture (--pcap) is done by the python port loop only"
        if opts.loss is not None:
            return "loss impairments are done by the python port loop only"
        if opts.port_delays:
            return "port delays (--port-delay) are done by the python port loop only"
        if native_build.compiler_path() is None:
            return "no C compiler found (install gcc or set CC)"
        return None

    def _port_set(self, ports: list[Port]) -> PortSet | NativePortSet:
        opts = self.options
        if opts.port_loop not in PORT_LOOPS:
            raise SwitchError(f"port loop {opts.port_loop!r}: expected one of {', '.join(PORT_LOOPS)}")
        refusal = None if opts.port_loop == "python" else self._native_loop_refusal()
        if opts.port_loop == "native" and refusal is not None:
            raise SwitchError(f"port loop native: {refusal}")
        if opts.port_loop == "python" or refusal is not None:
            return PortSet(ports, self.device.process, opts.pcap_dir)
        from innet.native_build import NativeBuildError

        try:
            native = NativePortSet(ports, self.device.process, self.device.deliver_from_ports, opts.cpu_port)
        except NativeBuildError as error:
            if opts.port_loop == "native":
                raise SwitchError(f"port loop native: {error}") from None
            LOG.warning("python port loop (C port loop not built: %s)", error)
            return PortSet(ports, self.device.process, opts.pcap_dir)
        self.device.pipeline_listener = lambda loaded: native.bind(getattr(loaded, "pipeline", loaded))
        LOG.info("ports served by the C port loop")
        return native

    def _load_program(self, path: Path) -> None:
        try:
            data = path.read_bytes()
        except OSError as error:
            raise SwitchError(f"program {str(path)!r}: {error.strerror}") from None
        try:
            self.device.load(data)
        except P4RuntimeError as error:
            raise SwitchError(f"program {str(path)!r}: {error.message}") from None

    @property
    def grpc_address(self) -> str:
        """The bound address, with the real port when started on port 0."""
        host = self.options.grpc_address.rpartition(":")[0]
        return f"{host}:{self._bound_port}"

    def wait(self, timeout: float | None = None) -> bool:
        """Block until ``stop()``; True when stopped."""
        return self._stopped.wait(timeout)

    def _digest_timer(self) -> None:
        """Send digest lists when their ``max_timeout_ns`` passes (P4Runtime batching)."""
        while not self._stopped.is_set():
            delay = self.device.flush_digests()
            self._digest_wake.wait(DIGEST_IDLE_WAIT if delay is None else min(delay, DIGEST_IDLE_WAIT))
            self._digest_wake.clear()

    def stop(self) -> None:
        """Stop serving and release ports and files; safe to call more than once."""
        server, self._server = self._server, None
        if server is not None:
            server.stop(grace=0.5).wait(5)
        ports, self.ports = self.ports, None
        if ports is not None:
            self.device.pipeline_listener = None
            ports.close()
        self._stopped.set()
        ageing, self._ageing = self._ageing, None
        if ageing is not None:
            ageing.stop()
        self._digest_wake.set()
        thread, self._digest_thread = self._digest_thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def __enter__(self) -> "SwitchServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
