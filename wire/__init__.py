"""The innet aggregation wire format: the one place for protocol constants (docs/PROTOCOL.md).

A message is the 24-byte innet header followed by K big-endian int32 values (K is the P4
program's ``INNET_K``; the header's ``count`` says how many are valid, the rest is zero
padding), or the header alone when ``flags`` has ``HDRONLY`` (REDUCE/BCAST requests and
acknowledgements; ``count`` still gives the chunk's valid values). It travels in
Ethernet/IPv4/UDP with UDP port ``UDP_PORT`` on the switch side.

    msg = Message(MsgType.CONTRIB, job=3, worker=1, slot=0, chunk=7, epoch=1, values=np.arange(5))
    data = pack(msg, k=64)            # 24 + 4*64 bytes
    assert unpack(data, k=64) == msg

Ethernet/IPv4/UDP framing for transports that build whole frames is in ``frame``/
``parse_frame``. No side effects at import (the scapy layer is ``innet.wire.scapy_layer``).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

UDP_PORT = 18766
"""UDP destination port of innet messages towards the switch (0x494E, "IN")."""

HEADER = struct.Struct("!BBHHHIHHII")
"""msg_type, flags, job, worker, slot, chunk, count, num_workers, bitmap, epoch (network order)."""
HEADER_LEN = HEADER.size
HEADER_FIELDS = ("msg_type", "flags", "job", "worker", "slot", "chunk", "count",
                 "num_workers", "bitmap", "epoch")
"""Field names in wire order (also the scapy layer's and the P4 header's)."""
HEADER_BITS = (8, 8, 16, 16, 16, 32, 16, 16, 32, 32)
"""Width of each field of HEADER_FIELDS in bits."""

DEFAULT_K = 64
"""Values per packet of the default build (P4 ``INNET_K``)."""
SUPPORTED_K = (4, 64, 256, 1024, 2048)
"""The ``INNET_K`` values ``p4/innet/repeat.p4`` builds (2048 needs jumbo frames, MTU 9000)."""
IP_OVERHEAD = 20 + 8
"""IPv4 (no options) and UDP header bytes inside the link MTU."""
MAX_WORKERS = 32
"""Workers per job: the bitmap is 32 bits."""
VALUE_DTYPE = np.dtype(">i4")
"""Values on the wire: int32 two's complement, big-endian."""


class MsgType(enum.IntEnum):
    """``msg_type``."""

    CONTRIB = 1
    """Worker to switch: a chunk contribution."""
    RESULT = 2
    """Switch to worker: the aggregated (or optimized) chunk."""
    STATUS = 3
    """Switch to worker: answer to a retransmitted duplicate of an incomplete copy."""
    STALE = 4
    """Switch to worker: the CONTRIB's epoch is not the job's current one (the reply's
    ``epoch`` is the job's): another worker set attached to the job since."""
    REDUCE = 5
    """Member to switch, reduce-to: a worker's values, or the chunk owner's header-only
    request; the completed sum goes to the owner, header-only RESULTs to the workers."""
    BCAST = 6
    """Member to switch, broadcast: the chunk owner's values, or a worker's header-only
    request (its pull); the values go to the workers, a header-only RESULT to the owner."""


OWNER_TYPES = (MsgType.REDUCE, MsgType.BCAST)
"""Message types whose copies have the chunk's owner as a member (``innet_owners``)."""


class Flag(enum.IntFlag):
    """``flags`` bits."""

    VER = 0x01
    """Which of the slot's two copies; alternates at every reuse of the slot."""
    RETRANS = 0x02
    """Set by a worker on a retransmission."""
    HDRONLY = 0x04
    """No values follow the header (a REDUCE/BCAST request, or the switch's acknowledgement
    of a member's values); ``count`` is still the chunk's number of valid values."""


class Mode(enum.IntEnum):
    """Job modes (``innet_jobs`` action data ``mode``)."""

    SUM = 0
    """Result is the int32 sum of the contributions (allreduce)."""
    SGD = 1
    """Result is the parameter after ``w -= (lr*g) >> lr_shift``."""
    MOMENTUM = 2
    """Result is the parameter after ``m = ((beta*m) >> beta_shift) + g; w -= (lr*m) >> lr_shift``."""


class WireError(ValueError):
    """A message cannot be packed or parsed; names the field, constraint and value."""


def _empty_values() -> npt.NDArray[np.int32]:
    return np.zeros(0, dtype=np.int32)


@dataclass(eq=False)
class Message:
    """One innet message; ``values`` holds the ``count`` valid values (int32)."""

    msg_type: int
    """MsgType."""
    job: int = 0
    worker: int = 0
    slot: int = 0
    chunk: int = 0
    flags: int = 0
    """Flag bits."""
    num_workers: int = 0
    """Set by the switch; 0 from workers."""
    bitmap: int = 0
    """Set by the switch: workers that contributed to this copy; 0 from workers."""
    epoch: int = 0
    """The job incarnation the worker set attached with (``Controller.attach``); the switch
    echoes it, or puts the job's current one in a STALE."""
    values: npt.NDArray[np.int32] = field(default_factory=_empty_values)
    """The valid values (``count`` = len(values)); empty with ``HDRONLY``."""
    chunk_count: int | None = None
    """``count`` of a ``HDRONLY`` message (its values are not on the wire); None: len(values)."""

    @property
    def count(self) -> int:
        if self.chunk_count is not None:
            return self.chunk_count
        return int(len(self.values))

    @property
    def header_only(self) -> bool:
        return bool(self.flags & Flag.HDRONLY)

    @property
    def ver(self) -> int:
        return self.flags & Flag.VER

    def header_tuple(self) -> tuple[int, ...]:
        return (self.msg_type, self.flags, self.job, self.worker, self.slot, self.chunk,
                self.count, self.num_workers, self.bitmap, self.epoch)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return (self.header_tuple() == other.header_tuple()
                and np.array_equal(np.asarray(self.values, dtype=np.int64),
                                   np.asarray(other.values, dtype=np.int64)))

    def __repr__(self) -> str:
        names = {m.value: m.name for m in MsgType}
        return (f"Message({names.get(self.msg_type, self.msg_type)}, job={self.job}, "
                f"worker={self.worker}, slot={self.slot}, chunk={self.chunk}, "
                f"flags={self.flags:#x}, count={self.count}, num_workers={self.num_workers}, "
                f"bitmap={self.bitmap:#x}, epoch={self.epoch})")


def _check_fields(values: tuple[int, ...]) -> None:
    for name, bits, value in zip(HEADER_FIELDS, HEADER_BITS, values):
        if not 0 <= value < (1 << bits):
            raise WireError(f"innet header field {name!r}: {value} does not fit in {bits} bits")


def pack(msg: Message, k: int = DEFAULT_K) -> bytes:
    """Header plus K values (``msg.values`` zero-padded to K), the header alone with
    ``HDRONLY``; raises WireError."""
    if msg.count > k:
        raise WireError(f"innet message: count {msg.count} exceeds K={k} values per packet")
    if msg.header_only:
        if len(msg.values):
            raise WireError(f"innet message: HDRONLY with {len(msg.values)} values (it has none)")
        header = msg.header_tuple()
        _check_fields(header)
        return HEADER.pack(*header)
    values = np.asarray(msg.values)
    if values.size and (values.min() < -(1 << 31) or values.max() >= (1 << 31)):
        raise WireError(f"innet message values: outside int32 range "
                        f"[{int(values.min())}, {int(values.max())}]")
    header = msg.header_tuple()
    _check_fields(header)
    body = np.zeros(k, dtype=VALUE_DTYPE)
    body[:msg.count] = values
    return HEADER.pack(*header) + body.tobytes()


def unpack(data: bytes, k: int = DEFAULT_K) -> Message:
    """Parse header plus values (the header alone with ``HDRONLY``); raises WireError on a
    short or inconsistent message.

    Extra bytes after the K values (e.g. Ethernet padding) are ignored."""
    if len(data) < HEADER_LEN:
        raise WireError(f"innet message: {len(data)} bytes, shorter than the "
                        f"{HEADER_LEN}-byte header")
    msg_type, flags, job, worker, slot, chunk, count, num_workers, bitmap, epoch = \
        HEADER.unpack_from(data)
    if count > k:
        raise WireError(f"innet message: count {count} exceeds K={k}")
    if flags & Flag.HDRONLY:
        return Message(msg_type, job, worker, slot, chunk, flags, num_workers, bitmap, epoch,
                       _empty_values(), count)
    need = HEADER_LEN + 4 * k
    if len(data) < need:
        raise WireError(f"innet message: {len(data)} bytes, need {need} for K={k} values")
    values = np.frombuffer(data, dtype=VALUE_DTYPE, count=count, offset=HEADER_LEN)
    return Message(msg_type, job, worker, slot, chunk, flags, num_workers, bitmap, epoch,
                   values.astype(np.int32))


def message_len(k: int = DEFAULT_K) -> int:
    """Bytes of header plus K values."""
    return HEADER_LEN + 4 * k


def message_bytes(values: bool, k: int = DEFAULT_K) -> int:
    """UDP payload bytes of one message: with K values, or the header alone (HDRONLY)."""
    return message_len(k) if values else HEADER_LEN


def k_for_mtu(mtu: int) -> int:
    """The largest supported K whose innet packet (IPv4 + UDP + header + K values) fits an
    IP MTU of ``mtu`` bytes: 256 for 1500, 2048 for 9000. Raises WireError below K=4's 96."""
    fitting = [k for k in SUPPORTED_K if IP_OVERHEAD + message_len(k) <= mtu]
    if not fitting:
        raise WireError(f"MTU {mtu}: too small for an innet packet (K=4 needs "
                        f"{IP_OVERHEAD + message_len(SUPPORTED_K[0])} bytes)")
    return fitting[-1]


# -- Ethernet / IPv4 / UDP ---------------------------------------------------------------

ETH = struct.Struct("!6s6sH")
IPV4 = struct.Struct("!BBHHHBBH4s4s")
UDP = struct.Struct("!HHHH")
ETHERTYPE_IPV4 = 0x0800
IPPROTO_UDP = 17
FRAME_OVERHEAD = ETH.size + IPV4.size + UDP.size
"""Bytes of Ethernet + IPv4 (no options) + UDP headers: 42."""


def mac_bytes(mac: str) -> bytes:
    """``"02:00:00:00:00:01"`` as 6 bytes; raises WireError."""
    parts = mac.split(":")
    try:
        out = bytes(int(p, 16) for p in parts)
    except ValueError:
        out = b""
    if len(parts) != 6 or len(out) != 6:
        raise WireError(f"MAC address {mac!r}: expected six hex octets like 02:00:00:00:00:01")
    return out


def ip_bytes(ip: str) -> bytes:
    """Dotted IPv4 address as 4 bytes; raises WireError."""
    import socket

    if ip.count(".") == 3:
        try:
            return socket.inet_aton(ip)
        except OSError:
            pass
    raise WireError(f"IPv4 address {ip!r}: expected dotted quad like 10.0.0.1")


def ipv4_checksum(header: bytes) -> int:
    """Internet checksum of an IPv4 header (checksum field zero in the input)."""
    words = np.frombuffer(header, dtype=">u2")
    total = int(words.sum(dtype=np.uint64))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@dataclass(frozen=True)
class Endpoint:
    """One end of an innet flow at the Ethernet/IPv4/UDP level."""

    mac: str
    """Ethernet address."""
    ip: str
    """IPv4 address."""
    port: int = UDP_PORT
    """UDP port."""


def frame(src: Endpoint, dst: Endpoint, payload: bytes, ttl: int = 64,
          ident: int = 0) -> bytes:
    """An Ethernet/IPv4/UDP frame carrying ``payload`` (UDP checksum 0: none, as IPv4 allows)."""
    total = IPV4.size + UDP.size + len(payload)
    ip = IPV4.pack(0x45, 0, total, ident & 0xFFFF, 0x4000, ttl, IPPROTO_UDP, 0,
                   ip_bytes(src.ip), ip_bytes(dst.ip))
    ip = ip[:10] + struct.pack("!H", ipv4_checksum(ip)) + ip[12:]
    udp = UDP.pack(src.port, dst.port, UDP.size + len(payload), 0)
    return ETH.pack(mac_bytes(dst.mac), mac_bytes(src.mac), ETHERTYPE_IPV4) + ip + udp + payload


@dataclass(frozen=True)
class ParsedFrame:
    """Addresses and UDP payload of a received frame."""

    dst_mac: bytes
    src_mac: bytes
    src_ip: bytes
    dst_ip: bytes
    src_port: int
    dst_port: int
    payload: bytes


def parse_frame(data: bytes) -> ParsedFrame | None:
    """The UDP payload and addresses of an Ethernet/IPv4/UDP frame, None for anything else."""
    if len(data) < FRAME_OVERHEAD:
        return None
    dst_mac, src_mac, ethertype = ETH.unpack_from(data)
    if ethertype != ETHERTYPE_IPV4:
        return None
    ver_ihl, _, total, _, _, _, proto, _, src_ip, dst_ip = IPV4.unpack_from(data, ETH.size)
    ihl = (ver_ihl & 0x0F) * 4
    if ver_ihl >> 4 != 4 or proto != IPPROTO_UDP or ihl < IPV4.size:
        return None
    udp_at = ETH.size + ihl
    if len(data) < udp_at + UDP.size:
        return None
    sport, dport, length, _ = UDP.unpack_from(data, udp_at)
    end = min(len(data), udp_at + max(length, UDP.size))
    return ParsedFrame(dst_mac, src_mac, src_ip, dst_ip, sport, dport,
                       data[udp_at + UDP.size:end])
