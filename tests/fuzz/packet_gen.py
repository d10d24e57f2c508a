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
from dataclasses import dataclass

import numpy as np
from packet_harness import (INNET_JOBS, INNET_OWNERS, SWITCH_IP, SWITCH_MAC, InnetJob, owner_of, worker_ip, worker_mac,
                            worker_port, worker_udp)

from innet import wire

K = wire.DEFAULT_K
FULL = wire.FRAME_OVERHEAD + wire.message_len(K)
"""Bytes of a complete innet frame of the default build (Ethernet/IPv4/UDP/innet/K values)."""
HEADER_ONLY = wire.FRAME_OVERHEAD + wire.HEADER_LEN
"""Bytes of a header-only (HDRONLY) innet frame."""
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


def _member(rng: random.Random) -> tuple[InnetJob, int, int, int, bool]:
    """(job, msg_type, worker, chunk, carries values) of a valid packet: a CONTRIB of any
    job, or a REDUCE/BCAST of a job with owners from a worker or the chunk's owner."""
    kind = rng.choice((1, 1, 1, 5, 6))
    if kind == 1:
        j = rng.choice(INNET_JOBS)
        return j, 1, rng.randrange(j.num_workers), rng.randrange(max(j.param_chunks, 1)), True
    o = rng.choice(INNET_OWNERS)
    j = JOBS[o.job]
    chunk = o.prefix + rng.randrange(1 << (32 - o.prefix_len))
    worker = o.rank if rng.random() < 0.4 else rng.randrange(j.num_workers)
    return j, kind, worker, chunk, (kind == 5) != (worker == o.rank)


def innet_frame(rng: random.Random) -> tuple[int, bytes]:
    """Ethernet/IPv4/UDP/innet/K values (the header alone for a REDUCE/BCAST request): a
    valid packet of a known job (CONTRIB; REDUCE or BCAST from a worker or the chunk's
    owner; worker, slot and chunk near their limits) with 0..3 fields broken, among them
    the length (truncated or extended payload)."""
    j, kind, member, chunk, carries = _member(rng)
    broken = set(rng.sample(BREAKABLE, rng.choice((0, 0, 1, 1, 2, 3))))

    def pick(name: str, valid: int, bits: int) -> int:
        if name not in broken:
            return valid
        if rng.random() < 0.5:  # just past the edge
            return (valid + rng.choice((1, -1, 2))) % (1 << bits)
        return rng.randrange(1 << bits)

    w = pick("worker", member, 16)
    flags = rng.randrange(4) | (0 if carries else wire.Flag.HDRONLY)
    fields = (pick("msg_type", kind, 8), pick("flags", flags, 8), pick("job", j.job, 16), w,
              pick("slot", rng.randrange(j.slot_count), 16), pick("chunk", chunk, 32),
              pick("count", K, 16), pick("num_workers", 0, 16), pick("bitmap", 0, 32), pick("epoch", j.epoch, 32))
    values = [int32(rng) for _ in range(rng.choice((1, 2, 4, K)))]
    payload = wire.HEADER.pack(*fields) + (struct.pack(f"!{K}i", *(values * K)[:K]) if carries else b"")
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


def member_message(rng: random.Random) -> wire.Message:
    """A well-formed message as a job's member sends it: a CONTRIB, or a REDUCE/BCAST of a
    worker or an owner (values or a header-only request by its role), near the limits, now
    and then with the other role's flag, another member's rank, a chunk nobody owns or a
    stale epoch."""
    j, kind, worker, chunk, carries = _member(rng)
    if rng.random() < 0.05:
        carries = not carries
    if rng.random() < 0.05:
        worker = rng.choice((2, 3, 4, 5, 31))
    if rng.random() < 0.05:
        chunk = rng.choice((8, 16, 1 << 31))
    epoch = j.epoch if rng.random() < 0.95 else j.epoch + rng.choice((-1, 1))
    flags = rng.randrange(4) | (0 if carries else wire.Flag.HDRONLY)
    values = [int32(rng) for _ in range(rng.choice((1, 2, 4)))]
    # REDUCE/BCAST copies need three members: most of them go to two slots, so they complete
    slot = rng.randrange(2) if kind != wire.MsgType.CONTRIB and rng.random() < 0.8 else rng.randrange(j.slot_count)
    return wire.Message(kind, job=j.job, worker=worker, slot=slot, chunk=chunk,
                        flags=flags, epoch=epoch, values=np.array((values * K)[:K] if carries else [], np.int32),
                        chunk_count=None if carries else K)


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


@dataclass(frozen=True)
class Addressed:
    """A frame of a job's member for one slot copy, as innet.p4 sees it."""

    job: InnetJob
    worker: int
    idx: int
    """Copy index (2 * (slot_base + slot) + VER)."""
    wbit: int
    members: tuple[int, ...]
    """Ranks whose contributions complete the copy (a RESULT goes to each)."""
    inert: bool
    """The switch must leave the copy alone: values cut short, or the HDRONLY flag against
    the sender's role."""


def addressed(data: bytes) -> Addressed | None:
    """The copy a frame of a job's member addresses (its parser's fixed offsets: no IPv4
    options): a CONTRIB of a worker, a REDUCE/BCAST of a worker or the chunk's owner in a sum
    job; None for anything else."""
    if len(data) < HEADER_ONLY or data[12:14] != b"\x08\x00" or data[23] != 17:
        return None
    if data[36:38] != wire.UDP_PORT.to_bytes(2, "big") or int.from_bytes(data[30:34], "big") != SWITCH_IP:
        return None
    msg, flags, job, worker, slot, chunk = struct.unpack_from("!BBHHHI", data, 42)
    j = JOBS.get(job)
    if j is None or slot >= j.slot_count:
        return None
    workers = tuple(range(j.num_workers))
    if msg == wire.MsgType.CONTRIB:
        if worker >= j.num_workers or (j.mode != 0 and chunk >= j.param_chunks):
            return None
        members, carries = workers, True
    elif msg in wire.OWNER_TYPES:
        o = owner_of(job, chunk)
        if o is None or j.mode != 0 or (worker >= j.num_workers and worker != o.rank):
            return None
        members, carries = workers + (o.rank,), (msg == wire.MsgType.REDUCE) != (worker == o.rank)
    else:
        return None
    header_only = bool(flags & wire.Flag.HDRONLY)
    inert = header_only == carries or (carries and len(data) < FULL)
    return Addressed(j, worker, ((j.slot_base + slot) << 1) | (flags & 1), 1 << worker, members, inert)
