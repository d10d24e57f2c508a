"""Packet generators for the executor fuzz tests, driven by a seeded ``random.Random``.

Why not hypothesis strategies per field: a drawn field costs tens of microseconds in
hypothesis, a packet through the executor a few; the long mode (10^6 packets) needs the
generator to be cheaper than the executor. Hypothesis draws each example's seed (so runs
are deterministic and a failure prints it), and the harness minimizes a failing packet
sequence itself.
"""

from __future__ import annotations

import random
import struct

import numpy as np
from packet_harness import INNET_JOBS, SWITCH_IP, SWITCH_MAC, InnetJob, worker_ip, worker_mac, worker_port, worker_udp

from innet.host import wire

K = wire.DEFAULT_K
FULL = wire.FRAME_OVERHEAD + wire.message_len(K)
"""Bytes of a complete innet frame of the default build (Ethernet/IPv4/UDP/innet/K values)."""
JOBS = {j.job: j for j in INNET_JOBS}

INTERESTING_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF)
INTERESTING_INT32 = (0, 1, -1, 2**31 - 1, -2**31, 1000, -1000, 2**30)


def port(rng: random.Random) -> int:
    """An ingress port: the usual ones, the CPU port, the edges of the 9-bit range."""
    if rng.random() < 0.7:
        return rng.choice((0, 1, 2, 3, 4, 5, 255, 510, 511))
    return rng.randrange(512)


def random_packet(rng: random.Random) -> tuple[int, bytes]:
    n = rng.choice((0, 1, 13, 14, 15, 33, 34, 41, 42, 65, 66, rng.randrange(400)))
    return port(rng), rng.randbytes(n)


def mutate(rng: random.Random, seeds: list[tuple[int, bytes]]) -> tuple[int, bytes]:
    """A seed packet with 1..6 byte-level mutations (flip, set, truncate, extend, insert,
    delete, splice with another seed)."""
    p, data = rng.choice(seeds)
    buf = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(7)
        at = rng.randint(0, max(len(buf), 1))
        if op == 0 and buf:
            buf[at % len(buf)] ^= 1 << rng.randrange(8)
        elif op == 1 and buf:
            buf[at % len(buf)] = rng.choice(INTERESTING_BYTES) if rng.random() < 0.5 else rng.randrange(256)
        elif op == 2:
            del buf[at:]
        elif op == 3:
            buf += rng.randbytes(rng.randint(1, 64))
        elif op == 4:
            buf[at:at] = rng.randbytes(rng.randint(1, 16))
        elif op == 5:
            del buf[at:at + rng.randint(1, 16)]
        elif op == 6:
            _, other = rng.choice(seeds)
            buf = buf[:at] + bytearray(other[rng.randint(0, len(other)):])
    return (port(rng) if rng.random() < 0.3 else p), bytes(buf)


def int32(rng: random.Random) -> int:
    return rng.choice(INTERESTING_INT32) if rng.random() < 0.3 else rng.randint(-2**31, 2**31 - 1)


BREAKABLE = ("msg_type", "flags", "job", "worker", "slot", "chunk", "count", "num_workers", "bitmap", "epoch",
             "udp_dport", "ip_dst", "ip_proto", "ip_header", "ethertype", "port", "length")


def innet_frame(rng: random.Random) -> tuple[int, bytes]:
    """Ethernet/IPv4/UDP/innet/K values: a valid contribution of a known job (worker,
    slot and chunk near their limits) with 0..3 fields broken, among them the length
    (truncated or extended payload)."""
    j = rng.choice(INNET_JOBS)
    broken = set(rng.sample(BREAKABLE, rng.choice((0, 0, 1, 1, 2, 3))))

    def pick(name: str, valid: int, bits: int) -> int:
        if name not in broken:
            return valid
        if rng.random() < 0.5:  # just past the edge
            return (valid + rng.choice((1, -1, 2))) % (1 << bits)
        return rng.randrange(1 << bits)

    w = pick("worker", rng.randrange(j.num_workers), 16)
    fields = (pick("msg_type", 1, 8), pick("flags", rng.randrange(4), 8), pick("job", j.job, 16), w,
              pick("slot", rng.randrange(j.slot_count), 16),
              pick("chunk", rng.randrange(max(j.param_chunks, 1)), 32),
              pick("count", K, 16), pick("num_workers", 0, 16), pick("bitmap", 0, 32), pick("epoch", j.epoch, 32))
    values = [int32(rng) for _ in range(rng.choice((1, 2, 4, K)))]
    payload = wire.HEADER.pack(*fields) + struct.pack(f"!{K}i", *(values * K)[:K])
    w %= 32
    udp = struct.pack("!HHHH", worker_udp(w), pick("udp_dport", wire.UDP_PORT, 16), 8 + len(payload), 0)
    ip = wire.IPV4.pack(0x45, 0, 28 + len(payload), 0, 0x4000, 64, pick("ip_proto", 17, 8), 0,
                        worker_ip(w).to_bytes(4, "big"), pick("ip_dst", SWITCH_IP, 32).to_bytes(4, "big"))
    ip = ip[:10] + struct.pack("!H", wire.ipv4_checksum(ip)) + ip[12:]
    if "ip_header" in broken:  # version/IHL, TOS, total length; checksum
        ip = rng.randbytes(4) + ip[4:10] + rng.randbytes(2) + ip[12:]
    eth = wire.ETH.pack(SWITCH_MAC.to_bytes(6, "big"), worker_mac(w).to_bytes(6, "big"),
                        pick("ethertype", wire.ETHERTYPE_IPV4, 16))
    data = eth + ip + udp + payload
    if "length" in broken:
        tail = rng.randint(-len(data), 64)
        data = data[:tail] if tail < 0 else data + rng.randbytes(tail)
    return pick("port", worker_port(w), 9) % 512, data


def arp_frame(rng: random.Random) -> tuple[int, bytes]:
    """An ARP request (or reply, or garbage oper) for the switch, a worker or anything."""
    from scapy.layers.l2 import ARP, Ether

    target = rng.choice((SWITCH_IP, worker_ip(0), worker_ip(3), 0, rng.getrandbits(32)))
    data = bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src=mac(worker_mac(0))) /
                 ARP(op=rng.choice((1, 1, 2, rng.getrandbits(16))), hwsrc=mac(worker_mac(0)),
                     psrc=ip(worker_ip(0)), pdst=ip(target)))
    if rng.random() < 0.3:
        data = data[:rng.randint(0, len(data))]
    return port(rng), data


def contribution(rng: random.Random) -> wire.Message:
    """A well-formed CONTRIB message as an agent sends it, near the jobs' limits
    (occasionally one past: a worker, slot or chunk the switch must drop; or of another
    epoch, which the switch answers STALE)."""
    j = rng.choice(INNET_JOBS)

    def near(limit: int) -> int:
        return limit if rng.random() < 0.05 else rng.randrange(max(limit, 1))

    count = K if rng.random() < 0.7 else rng.randint(0, K)
    values = [int32(rng) for _ in range(rng.choice((1, 2, 4)))]
    epoch = j.epoch if rng.random() < 0.95 else j.epoch + rng.choice((-1, 1))  # a stale worker set
    return wire.Message(wire.MsgType.CONTRIB, job=j.job, worker=near(j.num_workers), slot=near(j.slot_count),
                        chunk=near(j.param_chunks), flags=rng.randrange(4), epoch=epoch,
                        values=np.array((values * K)[:count], dtype=np.int32))


def ip(v: int) -> str:
    return ".".join(str(b) for b in v.to_bytes(4, "big"))


def mac(v: int) -> str:
    return ":".join(f"{b:02x}" for b in v.to_bytes(6, "big"))


def addressed(data: bytes) -> tuple[InnetJob, int, int, int] | None:
    """(job, worker, copy index, worker bit) of a frame innet.p4 aggregates (its parser's
    fixed offsets: no IPv4 options), None for anything else."""
    if len(data) < wire.FRAME_OVERHEAD + wire.HEADER_LEN or data[12:14] != b"\x08\x00" or data[23] != 17:
        return None
    if data[36:38] != wire.UDP_PORT.to_bytes(2, "big") or int.from_bytes(data[30:34], "big") != SWITCH_IP:
        return None
    msg, flags, job, worker, slot, chunk = struct.unpack_from("!BBHHHI", data, 42)
    j = JOBS.get(job)
    if j is None or msg != 1 or worker >= j.num_workers or slot >= j.slot_count:
        return None
    if j.mode != 0 and chunk >= j.param_chunks:
        return None
    return j, worker, ((j.slot_base + slot) << 1) | (flags & 1), 1 << worker
