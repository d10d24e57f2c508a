"""How an agent's innet messages reach the switch: a plain UDP socket or a frame tunnel.

Both carry innet messages (header + values, ``innet.wire``) and share the protocol
logic of ``innet.host.agent.aggregator`` through the ``Transport`` interface:

- ``UdpTransport``: a UDP socket bound to the worker's address, sending to the switch's
  IP:18766. The kernel builds Ethernet/IPv4/UDP (Mininet hosts, real NICs).
- ``FrameTunnelTransport``: builds the whole Ethernet/IPv4/UDP frame itself and sends it
  as one UDP datagram to an ``innet-switch -u PORT@127.0.0.1:UDPPORT`` port (see
  ``innet.switch.ports``: the switch answers to the last sender). Received frames are
  parsed; frames not addressed to this worker's MAC/IP/UDP port are ignored.

Configurations are frozen dataclasses (picklable: the agent process builds the transport
from them). Worker plans carry them as JSON (``json_form``/``from_json_form``, which
``innet.plans`` calls), so a worker process receives the same object its parent built.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from innet import wire

MAX_DATAGRAM = 65535


class TransportError(OSError):
    """A transport could not be opened; names the address and the reason."""


class Transport(Protocol):
    """A datagram path to the switch carrying innet messages."""

    def fileno(self) -> int: ...

    def send(self, message: bytes) -> None:
        """Send one innet message (errors such as ICMP unreachable are ignored: loss)."""
        ...

    def receive(self) -> bytes | None:
        """One received innet message, or None (nothing pending or not ours)."""
        ...

    @property
    def local_address(self) -> tuple[str, int]:
        """The bound UDP (host, port) of the local socket."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class UdpTransportConfig:
    """Plain UDP to the switch (the kernel frames the messages)."""

    switch_ip: str
    """Switch address the messages go to."""
    switch_port: int = wire.UDP_PORT
    """Switch UDP port (18766)."""
    local_ip: str | None = None
    """Address to bind; the worker's IP in the job's ``innet_workers`` entry. None: the
    address of the interface the route to ``switch_ip`` leaves by (never every interface:
    a socket on 0.0.0.0 would take innet messages from any network the machine is on)."""
    local_port: int = 0
    """UDP port to bind (0: ephemeral); the ``udp_port`` of ``innet_workers``."""

    def json_form(self) -> dict[str, Any]:
        """The worker plans' JSON of this transport (``{"kind": "udp", ...}``; the switch port
        only when it is not 18766)."""
        form: dict[str, Any] = {"kind": "udp", "switch_ip": self.switch_ip, "local_ip": self.local_ip,
                                "local_port": self.local_port}
        if self.switch_port != wire.UDP_PORT:
            form["switch_port"] = self.switch_port
        return form

    @classmethod
    def from_json_form(cls, data: Any) -> UdpTransportConfig:
        """The configuration of :meth:`json_form`'s JSON; ValueError naming what does not fit."""
        return _of_kind(cls, data)


@dataclass(frozen=True)
class TunnelTransportConfig:
    """Whole frames tunnelled in UDP datagrams to a switch UDP port."""

    tunnel: tuple[str, int]
    """(host, UDP port) the switch port's socket is bound to."""
    local: wire.Endpoint
    """This worker's MAC, IP and UDP port as written into frames (and ``innet_workers``)."""
    switch: wire.Endpoint
    """The switch's MAC, IP and UDP port (18766)."""
    bind: tuple[str, int] = ("127.0.0.1", 0)
    """Local address of the tunnel socket."""

    def json_form(self) -> dict[str, Any]:
        """The worker plans' JSON of this transport (``{"kind": "tunnel", ...}``, endpoints as
        ``[mac, ip, port]``; the bind address only when it is not loopback)."""
        form: dict[str, Any] = {"kind": "tunnel", "tunnel": list(self.tunnel),
                                "local": [self.local.mac, self.local.ip, self.local.port],
                                "switch": [self.switch.mac, self.switch.ip, self.switch.port]}
        if self.bind != ("127.0.0.1", 0):
            form["bind"] = list(self.bind)
        return form

    @classmethod
    def from_json_form(cls, data: Any) -> TunnelTransportConfig:
        """The configuration of :meth:`json_form`'s JSON; ValueError naming what does not fit."""
        return _of_kind(cls, data)


TransportConfig = UdpTransportConfig | TunnelTransportConfig
_Config = TypeVar("_Config", UdpTransportConfig, TunnelTransportConfig)
_KINDS: dict[type, str] = {UdpTransportConfig: "udp", TunnelTransportConfig: "tunnel"}


def _of_kind(cls: type[_Config], data: Any) -> _Config:
    """``data`` read as a ``cls`` transport: a JSON form of the other kind is a ValueError."""
    config = transport_config(data)
    if not isinstance(config, cls):
        raise ValueError(f"worker transport kind {data.get('kind')!r}: expected {_KINDS[cls]!r}")
    return config


def udp_transport(switch_ip: str, local_ip: str, local_port: int) -> UdpTransportConfig:
    """Transport of a Mininet worker (kernel UDP to the switch's IP)."""
    return UdpTransportConfig(switch_ip=switch_ip, local_ip=local_ip, local_port=local_port)


def tunnel_transport(tunnel: tuple[str, int], local: wire.Endpoint, switch: wire.Endpoint) -> TunnelTransportConfig:
    """Transport of a loopback worker (frames in UDP to a switch UDP port)."""
    return TunnelTransportConfig(tunnel=tunnel, local=local, switch=switch)


def transport_config(data: Any) -> TransportConfig:
    """The host agent's transport config from its JSON form (:meth:`UdpTransportConfig.json_form`,
    :meth:`TunnelTransportConfig.json_form`); ValueError naming what does not fit."""
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind not in ("udp", "tunnel"):
        raise ValueError(f"worker transport kind {kind!r}: expected 'udp' or 'tunnel'")
    try:
        if kind == "udp":
            return UdpTransportConfig(switch_ip=data["switch_ip"], local_ip=data["local_ip"],
                                      local_port=int(data["local_port"]),
                                      switch_port=int(data.get("switch_port", wire.UDP_PORT)))
        bind = data.get("bind", ("127.0.0.1", 0))  # a tunnel to another machine binds beyond loopback
        return TunnelTransportConfig(tunnel=(data["tunnel"][0], int(data["tunnel"][1])),
                                     local=wire.Endpoint(*data["local"]), switch=wire.Endpoint(*data["switch"]),
                                     bind=(bind[0], int(bind[1])))
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise ValueError(f"worker transport {data!r}: {type(error).__name__}: {error}") from None


def route_source(destination: str) -> str:
    """The local address the kernel uses to reach ``destination`` (a connected UDP socket
    sends nothing); TransportError when there is no route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((destination, wire.UDP_PORT))
        except OSError as error:
            raise TransportError(f"no route to switch {destination}: {error.strerror}") from None
        address: str = probe.getsockname()[0]
    return address


def _socket(bind: tuple[str, int], what: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        sock.bind(bind)
    except OSError as error:
        sock.close()
        raise TransportError(f"{what}: cannot bind UDP {bind[0]}:{bind[1]}: "
                             f"{error.strerror}") from None
    sock.setblocking(False)
    return sock


class _DatagramSocket:
    """The non-blocking UDP socket both transports send through."""

    _sock: socket.socket

    def fileno(self) -> int:
        return self._sock.fileno()

    @property
    def local_address(self) -> tuple[str, int]:
        host, port = self._sock.getsockname()[:2]
        return host, port

    def _sendto(self, data: bytes, dest: tuple[str, int]) -> None:
        try:
            self._sock.sendto(data, dest)
        except (BlockingIOError, InterruptedError, ConnectionRefusedError):
            pass  # a full buffer or an ICMP error is a lost datagram; retransmission covers it

    def _recv(self) -> bytes | None:
        try:
            data, _ = self._sock.recvfrom(MAX_DATAGRAM)
        except (BlockingIOError, InterruptedError, ConnectionRefusedError):
            return None
        return data

    def close(self) -> None:
        self._sock.close()


class UdpTransport(_DatagramSocket):
    """innet messages as UDP payloads to the switch's IP:18766."""

    def __init__(self, config: UdpTransportConfig) -> None:
        self.config = config
        self._dest = (config.switch_ip, config.switch_port)
        local_ip = config.local_ip if config.local_ip is not None else route_source(config.switch_ip)
        self._sock = _socket((local_ip, config.local_port), "UDP transport")

    def send(self, message: bytes) -> None:
        self._sendto(message, self._dest)

    def receive(self) -> bytes | None:
        return self._recv()


class FrameTunnelTransport(_DatagramSocket):
    """Ethernet/IPv4/UDP frames in UDP datagrams to an innet-switch UDP port."""

    def __init__(self, config: TunnelTransportConfig) -> None:
        self.config = config
        self._sock = _socket(config.bind, "frame tunnel")
        self._mac = wire.mac_bytes(config.local.mac)
        self._ip = wire.ip_bytes(config.local.ip)
        self._ident = 0
        self.ignored = 0
        """Frames received that were not innet messages for this worker."""

    def send(self, message: bytes) -> None:
        self._ident = (self._ident + 1) & 0xFFFF
        data = wire.frame(self.config.local, self.config.switch, message, ident=self._ident)
        self._sendto(data, self.config.tunnel)

    def receive(self) -> bytes | None:
        data = self._recv()
        if data is None:
            return None
        parsed = wire.parse_frame(data)
        if (parsed is None or parsed.dst_mac != self._mac or parsed.dst_ip != self._ip
                or parsed.dst_port != self.config.local.port):
            self.ignored += 1
            return None
        return parsed.payload


def open_transport(config: TransportConfig) -> Transport:
    """The transport a configuration describes; raises TransportError."""
    if isinstance(config, UdpTransportConfig):
        return UdpTransport(config)
    if isinstance(config, TunnelTransportConfig):
        return FrameTunnelTransport(config)
    raise TypeError(f"transport config {config!r} is neither UDP nor frame tunnel")
