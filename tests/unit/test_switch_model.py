"""innet.wire.dataplane_model against p4/innet.p4 on innet's executor: the same packets through
both, every output (port, addresses, lengths, innet header and values) and every register
and counter equal. Two packet sources: members following the protocol in lanes (plain
CONTRIB, REDUCE and BCAST copies, with loss, duplicates, retransmissions and new worker
sets) and random packets from a small field space (wrong roles, flags, ranks, types, cut
frames), so every rule of the P4 is exercised both ways."""

from __future__ import annotations

import random
import struct
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from innet.wire import dataplane_model as sm
from innet.wire import Flag, Mode, MsgType
from innet.switch.frontend import compile_file, ir
from innet.switch.pipeline import KeySpec, Pipeline

PROGRAM = Path(__file__).resolve().parents[2] / "p4" / "innet.p4"
K, SLOTS, PARAM_CHUNKS, MAX_JOBS = 4, 8, 16, 4
SWITCH_MAC, SWITCH_IP, UDP = 0x000000000100, 0x0A0000FE, 0x494E


@lru_cache(maxsize=None)
def program() -> ir.Program:
    return compile_file(str(PROGRAM), defines={"INNET_K": str(K), "INNET_SLOTS": str(SLOTS),
                                               "INNET_PARAM_CHUNKS": str(PARAM_CHUNKS),
                                               "INNET_MAX_JOBS": str(MAX_JOBS)})


def address(rank: int) -> tuple[int, int, int, int]:
    """(switch port, MAC, IP, UDP port) of member ``rank``."""
    return rank + 1, 0xA001 + rank, 0x0A000001 + rank, 0x1001 + rank


def ipv4(src: int, dst: int, length: int) -> bytes:
    h = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + length, 0, 0, 64, 17, 0, src, dst)
    s = sum(struct.unpack("!10H", h))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return h[:10] + struct.pack("!H", ~s & 0xFFFF) + h[12:]


def frame(rank: int, payload: bytes) -> tuple[int, bytes]:
    port, mac, ip, udp = address(rank)
    eth = SWITCH_MAC.to_bytes(6, "big") + mac.to_bytes(6, "big") + b"\x08\x00"
    return port, eth + ipv4(ip, SWITCH_IP, 8 + len(payload)) + struct.pack("!HHHH", udp, UDP, 8 + len(payload), 0) + payload


def decode(port: int, data: bytes) -> tuple[int, bytes]:
    """(port, innet payload) of a switch output, checked for PROTOCOL.md's addressing and
    for IPv4/UDP lengths that match the frame."""
    rank = port - 1
    _, mac, ip, udp = address(rank)
    assert int.from_bytes(data[0:6], "big") == mac and int.from_bytes(data[6:12], "big") == SWITCH_MAC
    total, = struct.unpack("!H", data[16:18])
    src, dst = struct.unpack("!II", data[26:34])
    sport, dport, length = struct.unpack("!HHH", data[34:40])
    assert (src, dst, sport, dport) == (SWITCH_IP, ip, UDP, udp)
    assert total == len(data) - 14 and length == len(data) - 34
    assert ipv4(src, dst, length)[:20] == data[14:34]  # TTL 64, checksum recomputed
    return port, data[42:]


class Both:
    """The P4 pipeline and the model, configured alike."""

    def __init__(self) -> None:
        self.pl = Pipeline(program())
        self.model = sm.InnetDataplane(K, SLOTS, PARAM_CHUNKS, MAX_JOBS)
        self.pl.table_set_default("switch_addr", "set_switch_addr", {"mac": SWITCH_MAC, "ip": SWITCH_IP})
        self.kinds: Counter[str] = Counter()

    def job(self, job: int, entry: sm.JobEntry, modify: bool = False) -> None:
        params = {name: getattr(entry, name) & 0xFFFFFFFF for name in (
            "mode", "num_workers", "mcast_grp", "slot_base", "slot_count", "param_base", "param_chunks",
            "lr", "lr_shift", "beta", "beta_shift", "epoch")}
        (self.pl.table_modify if modify else self.pl.table_insert)("innet_jobs", [KeySpec(job)], "set_job", params)
        self.model.jobs[job] = entry

    def owner(self, entry: sm.OwnerEntry) -> None:
        self.pl.table_insert("innet_owners", [KeySpec(entry.job), KeySpec(entry.prefix, prefix_len=entry.prefix_len)],
                             "set_owner", {"rank": entry.rank, "mcast_grp": entry.mcast_grp})
        self.model.owners.append(entry)

    def group(self, group: int, ranks: list[int]) -> None:
        self.pl.pre.group_create(group)
        for r in ranks:
            self.pl.pre.node_associate(group, self.pl.pre.node_create(r, [address(r)[0]]))
        self.model.groups[group] = ranks

    def worker(self, job: int, rank: int) -> None:
        _, mac, ip, udp = address(rank)
        self.pl.table_insert("innet_workers", [KeySpec(job), KeySpec(rank)], "set_worker",
                             {"mac": mac, "ip": ip, "udp_port": udp})
        self.model.workers.add((job, rank))

    def send(self, rank: int, pkt: sm.InnetPacket, cut: int = 0) -> list[sm.Delivery]:
        """``pkt`` from member ``rank`` (``cut`` bytes short) through both; outputs equal."""
        payload = pkt.payload()
        payload = payload[:len(payload) - cut]
        port, data = frame(rank, payload)
        got = sorted(decode(p, d) for p, d in self.pl.process(port, data))
        want = self.model.process(sm.InnetPacket.parse(payload, K)) if len(payload) >= 24 else []
        expected = sorted((port if d.rank is None else address(d.rank)[0], d.packet.payload()) for d in want)
        assert got == expected, f"packet {pkt} from rank {rank} (cut {cut})"
        for d in want:
            kind = MsgType(d.packet.msg_type).name + ("/hdronly" if d.packet.values is None else "")
            self.kinds[("unicast " if d.rank is None else "multicast ") + kind] += 1
        return want

    def check_state(self) -> None:
        m = self.model
        for name, reg in (("innet_bitmap", m.bitmap), ("innet_count", m.count), ("innet_epoch", m.copy_epoch)):
            assert self.pl.register_read(name) == [int(v) for v in reg], name
        for stem, reg in (("acc", m.acc), ("param", m.param), ("mom", m.mom)):
            for i in range(K):
                assert self.pl.register_read(f"innet_{stem}_{i}") == [int(v) & 0xFFFFFFFF for v in reg[:, i]], (stem, i)
        for name in sm.COUNTERS:
            assert [self.pl.counter_read(f"innet_{name}", j)[0] for j in range(MAX_JOBS)] == list(m.counters[name]), name


N = 3  # workers of job 1; owners are ranks 3 (chunks 0..5) and 4 (chunks 6..11)
OWNERS = {3: range(0, 6), 4: range(6, 12)}
LANE = 2  # slots per lane: plain lane at slots 0..1, owner 3 at 2..3, owner 4 at 4..5


def setup() -> Both:
    both = Both()
    both.job(1, sm.JobEntry(Mode.SUM, N, 1, slot_base=1, slot_count=3 * LANE))
    both.job(2, sm.JobEntry(Mode.MOMENTUM, 2, 2, slot_base=7, slot_count=1, param_base=3, param_chunks=4,
                            lr=-3, lr_shift=2, beta=5, beta_shift=3))
    both.owner(sm.OwnerEntry(1, 0, 30, 3, 13))   # chunks 0..3
    both.owner(sm.OwnerEntry(1, 4, 31, 3, 13))   # chunks 4..5
    both.owner(sm.OwnerEntry(1, 6, 31, 4, 14))   # chunks 6..7
    both.owner(sm.OwnerEntry(1, 8, 30, 4, 14))   # chunks 8..11
    both.owner(sm.OwnerEntry(2, 0, 28, 1, 2))    # an owner of a momentum job: its REDUCEs drop
    both.group(1, [0, 1, 2])
    both.group(2, [0, 1])
    both.group(13, [0, 1, 2, 3])
    both.group(14, [0, 1, 2, 4])
    for r in range(5):
        both.worker(1, r)
    for r in range(2):
        both.worker(2, r)
    return both


def _values(rng: random.Random) -> np.ndarray:
    return np.array([rng.randint(-2**31, 2**31 - 1) if rng.random() < 0.3 else rng.randint(-99, 99)
                     for _ in range(K)], np.int32)


def test_protocol_lanes_with_loss_match_model() -> None:
    """Members run plain, REDUCE and BCAST operations in lanes (each lane's slots always
    have the same members), losing results, retransmitting and sending plain duplicates;
    later a new worker set (epoch) starts over with stale packets of the old one mixed in."""
    rng = random.Random(7)
    both = setup()
    for epoch in (1, 2):
        if epoch == 2:
            both.job(1, sm.JobEntry(Mode.SUM, N, 1, slot_base=1, slot_count=3 * LANE, epoch=2), modify=True)
        # per lane: the members, and the operations of the stream in order
        # (kind, chunk): plain ops have no owner; each owner lane alternates REDUCE and BCAST
        lanes = {0: [(MsgType.CONTRIB, c) for c in range(5)]}
        for lane, (owner, chunks) in enumerate(OWNERS.items(), start=1):
            lanes[lane] = [(kind, c) for c in list(chunks)[:4] for kind in (MsgType.REDUCE, MsgType.BCAST)]
        for lane, ops in lanes.items():
            owner = None if lane == 0 else list(OWNERS)[lane - 1]
            members = list(range(N)) + ([] if owner is None else [owner])
            nxt = dict.fromkeys(members, 0)
            have: dict[int, set[int]] = {m: set() for m in members}
            while any(len(h) < len(ops) for h in have.values()):
                m = rng.choice(members)
                pos = nxt[m]
                if pos < len(ops) and (pos < LANE or pos - LANE in have[m]) and rng.random() < 0.6:
                    nxt[m] += 1
                    retrans = False
                else:
                    pending = [p for p in range(nxt[m]) if p not in have[m]]
                    if not pending:
                        continue
                    pos, retrans = rng.choice(pending), rng.random() < 0.8
                kind, chunk = ops[pos]
                slot = lane * LANE + pos % LANE
                ver = (pos // LANE) % 2
                data = (kind == MsgType.CONTRIB or (kind == MsgType.REDUCE) != (m == owner))
                flags = ver | (Flag.RETRANS if retrans else 0) | (0 if data else Flag.HDRONLY)
                pkt = sm.InnetPacket(kind, flags, 1, m, slot, chunk, K, 0, 0, epoch,
                                     _values(rng) if data else None)
                if epoch == 2 and rng.random() < 0.05:  # a delayed packet of the first set
                    assert [d.packet.msg_type for d in both.send(m, replace_epoch(pkt, 1))] == [MsgType.STALE]
                for d in both.send(m, pkt):
                    to = m if d.rank is None else d.rank
                    if d.packet.msg_type == MsgType.RESULT and rng.random() < 0.7:
                        have[to].add(pos)
    both.check_state()
    assert {"multicast RESULT", "multicast RESULT/hdronly", "unicast RESULT", "unicast RESULT/hdronly",
            "unicast STATUS", "unicast STATUS/hdronly", "unicast STALE", "unicast STALE/hdronly"} <= set(both.kinds)


def replace_epoch(pkt: sm.InnetPacket, epoch: int) -> sm.InnetPacket:
    from dataclasses import replace

    return replace(pkt, epoch=epoch)


def _plausible(rng: random.Random) -> tuple[int, sm.InnetPacket]:
    """A packet of job 1 that is often a valid contribution: a member's role-consistent
    REDUCE/BCAST/CONTRIB for one of few copies, now and then with a wrong flag or rank."""
    kind = rng.choice([MsgType.CONTRIB, MsgType.REDUCE, MsgType.BCAST])
    chunk = rng.randrange(12)
    owner = 3 if chunk < 6 else 4
    rank = rng.choice([0, 1, 2, owner] if kind != MsgType.CONTRIB else [0, 1, 2])
    if rng.random() < 0.05:
        rank = rng.choice([3, 4, 5])
    data = kind == MsgType.CONTRIB or (kind == MsgType.REDUCE) != (rank == owner)
    if rng.random() < 0.05:
        data = not data
    flags = rng.randrange(4) | (0 if data else Flag.HDRONLY)
    return rank, sm.InnetPacket(kind, flags, 1, rank, rng.randrange(2), chunk, K, 0, 0,
                                rng.choice([1] * 9 + [2]), _values(rng) if data else None)


def _wild(rng: random.Random) -> tuple[int, sm.InnetPacket]:
    """Any field from a small range around the valid ones."""
    kind = rng.choice([MsgType.CONTRIB, MsgType.REDUCE, MsgType.BCAST, MsgType.RESULT, MsgType.STATUS, 9])
    rank = rng.choice([0, 1, 2, 3, 4, 5, 31])
    flags = rng.randrange(8) | rng.choice([0, 0, 0, 0x80])
    values = None if flags & Flag.HDRONLY else _values(rng)
    return rank, sm.InnetPacket(kind, flags, rng.choice([1, 2, 3, 5]), rank, rng.randrange(4), rng.randrange(20),
                                rng.randrange(K + 1), rng.randrange(3), rng.randrange(3), rng.choice([0, 1, 2]),
                                values)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_packets_match_model(seed: int) -> None:
    """Random packets, mostly plausible ones of job 1 (so that they complete copies and
    collide), the rest anything, some cut short; job 1's entry is rewritten (epoch, members,
    slots) now and then."""
    rng = random.Random(seed)
    both = setup()
    for i in range(1500):
        if rng.random() < 0.01:
            both.job(1, sm.JobEntry(Mode.SUM, rng.choice([2, 3, 3, 4]), 1, slot_base=rng.choice([1, 5]),
                                    slot_count=rng.choice([2, 3]), epoch=rng.choice([1, 1, 2])), modify=True)
        rank, pkt = _plausible(rng) if rng.random() < 0.8 else _wild(rng)
        cut = rng.choice([0] * 20 + [1, 4, 4 * K]) if pkt.values is not None else 0
        both.send(rank, pkt, cut)
    both.check_state()
    counters = both.model.counters
    assert counters["completions"][1] > 20 and counters["duplicates"][1] > 100
    assert counters["stale"][1] > 20 and sum(counters["drops"]) > 100
