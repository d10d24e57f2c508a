"""p4/innet.p4: builds for every K, carries PROTOCOL.md's control-plane names, and behaves
like an independent Python model of PROTOCOL.md (differential test on random loss/duplicate
schedules, and the per-job counters). Hand-derived packet tests are the STF files in
p4/innet.stf and p4/innet/tests/."""

from __future__ import annotations

import random
import re
import struct
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pytest
from finsy.proto import p4i

from innet.switch.frontend import compile_file, ir
from innet.switch.frontend.errors import P4Error
from innet.switch.p4info import build_p4info
from innet.switch.pipeline import KeySpec, Pipeline

PROGRAM = Path(__file__).resolve().parents[2] / "p4" / "innet.p4"
UDP_PORT = 0x494E
SWITCH_MAC, SWITCH_IP = 0x000000000100, 0x0A0000FE
CONTRIB, RESULT, STATUS, STALE = 1, 2, 3, 4
MASK32 = 0xFFFFFFFF


@lru_cache(maxsize=None)
def program(k: int = 4, **sizes: int) -> ir.Program:
    defines = {"INNET_K": str(k), **{f"INNET_{n.upper()}": str(v) for n, v in sizes.items()}}
    return compile_file(str(PROGRAM), defines=defines)


# ---------------------------------------------------------------- builds and P4Info

@pytest.mark.parametrize("k", [4, 64, 256, 1024, 2048])
def test_repeat_expands_to_every_index_once(k: int) -> None:
    """INNET_FOR_EACH(X) is X(0) .. X(K-1), in order (a full build of K=2048 takes ~50 s
    here, so the expansion is checked at the preprocessor, where its macros live)."""
    from innet.switch.frontend.preprocess import preprocess_source

    out = preprocess_source('#include "repeat.p4"\n#define X(i) <i>\nINNET_FOR_EACH(X)\n',
                            include_dirs=(str(PROGRAM.parent / "innet"),),
                            defines={"INNET_K": str(k)}).text
    assert [int(t) for t in re.findall(r"<\s*(\w+)\s*>", out)] == list(range(k))


@pytest.mark.parametrize("k", [4, 64, 256])  # 1024: tests/integration/test_innet_p4_jumbo.py (slow)
def test_builds_for_each_k(k: int) -> None:
    pl = Pipeline(program(k))
    regs = pl.registers
    assert len(regs) == 3 + 3 * k  # bitmap, count, epoch, then acc/param/mom per value
    for i in (0, k - 1):
        for kind in ("acc", "param", "mom"):
            assert f"MyIngress.innet_{kind}_{i}" in regs
    assert f"MyIngress.innet_acc_{k}" not in regs
    assert regs["MyIngress.innet_acc_0"].size == 2 * 1024
    assert regs[f"MyIngress.innet_param_{k - 1}"].size == 4096


def test_unsupported_k_is_a_located_error() -> None:
    with pytest.raises(P4Error, match="INNET_K must be 4, 64, 256, 1024 or 2048"):
        compile_file(str(PROGRAM), defines={"INNET_K": "100"})


def test_sizes_can_be_overridden() -> None:
    info = build_p4info(program(4, slots=8, max_jobs=4, param_chunks=32))
    regs = {r.preamble.name: r for r in info.registers}
    assert regs["MyIngress.innet_bitmap"].size == 16
    assert regs["MyIngress.innet_count"].size == 16
    assert regs["MyIngress.innet_acc_3"].size == 16
    assert regs["MyIngress.innet_mom_3"].size == 32
    assert {c.size for c in info.counters} == {4}


def test_p4info_has_protocol_names() -> None:
    info = build_p4info(program(64))
    tables = {t.preamble.name: t for t in info.tables}
    actions = {a.preamble.id: a for a in info.actions}

    def table(name: str) -> tuple[list[str], dict[str, list[tuple[str, int]]]]:
        t = tables[name]
        acts = {actions[r.id].preamble.name: [(p.name, p.bitwidth) for p in actions[r.id].params]
                for r in t.action_refs}
        return [f.name for f in t.match_fields], acts

    keys, acts = table("MyIngress.innet_jobs")
    assert keys == ["hdr.innet.job"]
    assert acts["MyIngress.set_job"] == [
        ("mode", 8), ("num_workers", 8), ("mcast_grp", 16), ("slot_base", 32), ("slot_count", 32),
        ("param_base", 32), ("param_chunks", 32), ("lr", 32), ("lr_shift", 8), ("beta", 32),
        ("beta_shift", 8), ("epoch", 32)]
    keys, acts = table("MyIngress.innet_owners")
    assert keys == ["hdr.innet.job", "hdr.innet.chunk"]
    assert [f.match_type for f in tables["MyIngress.innet_owners"].match_fields] == [
        p4i.MatchField.EXACT, p4i.MatchField.LPM]
    assert acts["MyIngress.set_owner"] == [("rank", 8), ("mcast_grp", 16)]
    keys, acts = table("MyEgress.innet_workers")
    assert keys == ["hdr.innet.job", "standard_metadata.egress_rid"]
    assert acts["MyEgress.set_worker"] == [("mac", 48), ("ip", 32), ("udp_port", 16)]
    keys, acts = table("MyIngress.ipv4_lpm")
    assert keys == ["hdr.ipv4.dstAddr"]
    assert acts["MyIngress.ipv4_forward"] == [("mac", 48), ("port", 9)]
    keys, acts = table("MyIngress.arp_responder")
    assert keys == ["hdr.arp.targetIp"]
    assert acts["MyIngress.arp_reply"] == [("mac", 48)]
    keys, acts = table("MyIngress.switch_addr")
    assert keys == []
    assert acts["MyIngress.set_switch_addr"] == [("mac", 48), ("ip", 32)]

    regs = {r.preamble.name: (r.type_spec.bitstring.bit.bitwidth, r.size) for r in info.registers}
    assert regs["MyIngress.innet_bitmap"] == (32, 2048)
    assert regs["MyIngress.innet_count"] == (8, 2048)
    assert regs["MyIngress.innet_epoch"] == (32, 2048)
    for i in range(64):
        assert regs[f"MyIngress.innet_acc_{i}"] == (32, 2048)
        assert regs[f"MyIngress.innet_param_{i}"] == (32, 4096)
        assert regs[f"MyIngress.innet_mom_{i}"] == (32, 4096)
    counters = {c.preamble.name: (c.spec.unit, c.size) for c in info.counters}
    for name in ("innet_contributions", "innet_completions", "innet_duplicates", "innet_drops", "innet_stale"):
        assert counters[f"MyIngress.{name}"] == (p4i.CounterSpec.PACKETS, 16)


# ---------------------------------------------------------------- a model of PROTOCOL.md

@dataclass(frozen=True)
class Job:
    job: int
    mode: int
    num_workers: int
    mcast_grp: int
    slot_base: int
    slot_count: int
    param_base: int = 0
    param_chunks: int = 0
    lr: int = 0
    lr_shift: int = 0
    beta: int = 0
    beta_shift: int = 0
    epoch: int = 1


def s32(v: int) -> int:
    v &= MASK32
    return v - (1 << 32) if v >> 31 else v


def fixmul(a: int, b: int, shift: int) -> int:
    return ((s32(a) * s32(b)) >> shift) & MASK32  # Python >> on int is a floor shift


@dataclass
class Model:
    """PROTOCOL.md's switch behaviour, written from the text."""

    k: int
    jobs: dict[int, Job]
    bitmap: dict[int, int] = field(default_factory=dict)
    count: dict[int, int] = field(default_factory=dict)
    epoch: dict[int, int] = field(default_factory=dict)
    acc: dict[int, list[int]] = field(default_factory=dict)
    param: dict[int, list[int]] = field(default_factory=dict)
    mom: dict[int, list[int]] = field(default_factory=dict)
    counters: dict[str, dict[int, int]] = field(default_factory=dict)

    def bump(self, name: str, j: int) -> None:
        c = self.counters.setdefault(name, {})
        c[j] = c.get(j, 0) + 1

    def contrib(self, job: int, w: int, s: int, ver: int, retrans: bool, chunk: int,
                values: list[int], epoch: int = 1) -> tuple[str, int, list[int]]:
        """('drop' | 'status' | 'stale' | 'unicast' | 'multicast', bitmap, values)."""
        jb = self.jobs.get(job)
        if jb is None or job >= 16:
            self.bump("innet_drops", 0)
            return "drop", 0, values
        if w >= jb.num_workers or s >= jb.slot_count or (jb.mode != 0 and chunk >= jb.param_chunks):
            self.bump("innet_drops", job)
            return "drop", 0, values
        if epoch != jb.epoch:
            self.bump("innet_stale", job)
            return "stale", 0, values
        idx = (jb.slot_base + s) * 2 + ver
        bit = 1 << w
        nw = jb.num_workers
        if self.epoch.get(idx, 0) != jb.epoch:
            self.bitmap[idx], self.count[idx] = 0, 0
        self.epoch[idx] = jb.epoch
        if self.bitmap.get(idx, 0) & bit:
            self.bump("innet_duplicates", job)
            if self.count.get(idx, 0) == nw:
                return "unicast", self.bitmap[idx], list(self.acc[idx])
            if retrans:
                return "status", self.bitmap[idx], values
            return "drop", 0, values
        self.bump("innet_contributions", job)
        self.bitmap[idx ^ 1] = self.bitmap.get(idx ^ 1, 0) & ~bit
        if self.count.get(idx, 0) in (0, nw):
            self.acc[idx] = [v & MASK32 for v in values]
            self.count[idx], self.bitmap[idx] = 1, bit
        else:
            self.acc[idx] = [(a + v) & MASK32 for a, v in zip(self.acc[idx], values)]
            self.count[idx] += 1
            self.bitmap[idx] |= bit
        if self.count[idx] != nw:
            return "drop", 0, values
        self.bump("innet_completions", job)
        p = jb.param_base + chunk
        g = self.acc[idx]
        if jb.mode in (1, 2):
            w_ = self.param.setdefault(p, [0] * self.k)
            m_ = self.mom.setdefault(p, [0] * self.k)
            for i in range(self.k):
                step = g[i]
                if jb.mode == 2:
                    m_[i] = (fixmul(jb.beta, m_[i], jb.beta_shift) + g[i]) & MASK32
                    step = m_[i]
                w_[i] = (w_[i] - fixmul(jb.lr, step, jb.lr_shift)) & MASK32
            self.acc[idx] = list(w_)
        return "multicast", self.bitmap[idx], list(self.acc[idx])


# ---------------------------------------------------------------- packets

def ipv4(src: int, dst: int, payload: int) -> bytes:
    h = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + payload, 0, 0, 64, 17, 0, src, dst)
    s = sum(struct.unpack("!10H", h))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return h[:10] + struct.pack("!H", ~s & 0xFFFF) + h[12:]


def worker_addr(w: int) -> tuple[int, int, int, int]:
    """(switch port, MAC, IP, UDP port) of worker rank w."""
    return w + 1, 0xA001 + w, 0x0A000001 + w, 0x1001 + w


def contrib(job: int, w: int, s: int, ver: int, retrans: bool, chunk: int, values: list[int],
            msg: int = CONTRIB, epoch: int = 1) -> tuple[int, bytes]:
    port, mac, ip, udp = worker_addr(w)
    n = 8 + 24 + 4 * len(values)
    eth = SWITCH_MAC.to_bytes(6, "big") + mac.to_bytes(6, "big") + b"\x08\x00"
    hdr = struct.pack("!BBHHHIHHII", msg, ver | (2 if retrans else 0), job, w, s, chunk, len(values), 0, 0,
                      epoch)
    body = struct.pack("!HHHH", udp, UDP_PORT, n, 0) + hdr + b"".join(
        (v & MASK32).to_bytes(4, "big") for v in values)
    return port, eth + ipv4(ip, SWITCH_IP, n) + body


@dataclass(frozen=True)
class Reply:
    port: int
    msg: int
    bitmap: int
    num_workers: int
    values: tuple[int, ...]
    epoch: int = 1


def decode(port: int, data: bytes, k: int) -> Reply:
    """An innet packet from the switch, checked for the addressing PROTOCOL.md gives it."""
    ip = data[14:34]
    udp = data[34:42]
    dst_mac = int.from_bytes(data[0:6], "big")
    src_ip, dst_ip = struct.unpack("!II", ip[12:20])
    sport, dport = struct.unpack("!HH", udp[:4])
    w = port - 1
    assert (dst_mac, dst_ip, src_ip, sport) == (worker_addr(w)[1], worker_addr(w)[2], SWITCH_IP, UDP_PORT)
    assert dport == worker_addr(w)[3]
    msg, _, _, _, _, _, _, nw, bitmap, epoch = struct.unpack("!BBHHHIHHII", data[42:66])
    values = struct.unpack(f"!{k}I", data[66:66 + 4 * k])
    assert len(data) == 66 + 4 * k
    return Reply(port, msg, bitmap, nw, values, epoch)


def load(jobs: list[Job], k: int = 4) -> Pipeline:
    pl = Pipeline(program(k))
    pl.table_set_default("switch_addr", "set_switch_addr", {"mac": SWITCH_MAC, "ip": SWITCH_IP})
    for jb in jobs:
        pl.table_insert("innet_jobs", [KeySpec(jb.job)], "set_job", {
            "mode": jb.mode, "num_workers": jb.num_workers, "mcast_grp": jb.mcast_grp,
            "slot_base": jb.slot_base, "slot_count": jb.slot_count, "param_base": jb.param_base,
            "param_chunks": jb.param_chunks, "lr": jb.lr & MASK32, "lr_shift": jb.lr_shift,
            "beta": jb.beta & MASK32, "beta_shift": jb.beta_shift, "epoch": jb.epoch})
        pl.pre.group_create(jb.mcast_grp)
        for w in range(jb.num_workers):
            port, mac, ip, udp = worker_addr(w)
            pl.pre.node_associate(jb.mcast_grp, pl.pre.node_create(w, [port]))
            pl.table_insert("innet_workers", [KeySpec(jb.job), KeySpec(w)], "set_worker",
                            {"mac": mac, "ip": ip, "udp_port": udp})
    return pl


def expected(model: Model, jb: Job, w: int, s: int, ver: int, retrans: bool, chunk: int,
             values: list[int], epoch: int = 1) -> list[Reply]:
    kind, bitmap, vals = model.contrib(jb.job, w, s, ver, retrans, chunk, values, epoch)
    nw = jb.num_workers
    masked = tuple(v & MASK32 for v in vals)
    if kind == "drop":
        return []
    if kind == "multicast":
        return [Reply(r + 1, RESULT, bitmap, nw, masked, epoch) for r in range(nw)]
    if kind == "stale":
        return [Reply(w + 1, STALE, 0, nw, masked, jb.epoch)]
    return [Reply(w + 1, STATUS if kind == "status" else RESULT, bitmap, nw, masked, epoch)]


# ---------------------------------------------------------------- behaviour vs the model

Grads = dict[tuple[int, int], list[int]]


def run_schedule(jb: Job, rounds: int, seed: int, k: int = 4) -> tuple[Pipeline, Model, int, Grads]:
    """Workers stream `rounds` chunks through the job's slots; packets are lost, duplicated
    and retransmitted at random, but every worker keeps the protocol's rule (chunk c + S of
    a slot only after the result of chunk c). Every switch output is compared with the model.
    Returns the pipeline, the model, the number of packets sent and the gradients
    (worker, chunk) -> values."""
    rng = random.Random(seed)
    pl, model = load([jb], k), Model(k, {jb.job: jb})
    grads = {(w, c): [rng.randint(-2**31, 2**31 - 1) if rng.random() < 0.2 else rng.randint(-999, 999)
                      for _ in range(k)] for w in range(jb.num_workers) for c in range(rounds)}
    nxt = [0] * jb.num_workers  # next chunk each worker sends
    have: list[set[int]] = [set() for _ in range(jb.num_workers)]  # results received
    results: dict[int, tuple[int, ...]] = {}
    sent = 0
    while any(len(h) < rounds for h in have):
        w = rng.randrange(jb.num_workers)
        c = nxt[w]
        if c < rounds and (c < jb.slot_count or c - jb.slot_count in have[w]) and rng.random() < 0.6:
            nxt[w] += 1
            retrans = False
        else:
            pending = [x for x in range(nxt[w]) if x not in have[w]]
            if not pending:
                continue
            c, retrans = rng.choice(pending), rng.random() < 0.8
        s, ver = c % jb.slot_count, (c // jb.slot_count) % 2
        port, data = contrib(jb.job, w, s, ver, retrans, c, grads[(w, c)])
        want = expected(model, jb, w, s, ver, retrans, c, grads[(w, c)])
        got = [decode(p, d, k) for p, d in pl.process(port, data)]
        sent += 1
        assert sorted(got, key=lambda r: r.port) == want, f"packet {sent}: worker {w} chunk {c}"
        for r in got:
            if r.msg == RESULT and rng.random() < 0.7:  # the rest is lost on the way back
                results.setdefault(c, r.values)
                assert results[c] == r.values
                have[r.port - 1].add(c)
    return pl, model, sent, grads


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_random_loss_schedule_matches_model(mode: int) -> None:
    jb = Job(job=3, mode=mode, num_workers=3, mcast_grp=1, slot_base=5, slot_count=2, param_base=7,
             param_chunks=12, lr=-3 if mode == 1 else 5, lr_shift=3, beta=7, beta_shift=3)
    pl, model, sent, _ = run_schedule(jb, rounds=12, seed=mode)
    assert sent > 36
    for name in ("innet_contributions", "innet_completions", "innet_duplicates", "innet_drops"):
        assert pl.counter_read(name, 3)[0] == model.counters.get(name, {}).get(3, 0), name
    assert pl.counter_read("innet_completions", 3)[0] == 12
    assert pl.counter_read("innet_contributions", 3)[0] == 36  # never double-counted
    if mode:
        for c in range(12):
            assert [pl.register_read(f"innet_param_{i}", 7 + c) for i in range(4)] == model.param[7 + c]


def test_sum_results_are_exact_sums_with_k64() -> None:
    """Independent of the model: every finished chunk is the int32 sum of its gradients."""
    jb = Job(job=1, mode=0, num_workers=4, mcast_grp=2, slot_base=0, slot_count=3)
    pl, _, _, grads = run_schedule(jb, rounds=9, seed=11, k=64)
    for c in range(6, 9):  # the last use of each slot is still stored
        idx = (c % 3) * 2 + (c // 3) % 2
        want = [sum(grads[(w, c)][i] for w in range(4)) & MASK32 for i in range(64)]
        assert [pl.register_read(f"innet_acc_{i}", idx) for i in range(64)] == want


def test_counters_per_job() -> None:
    """Hand-counted: job 1 (2 workers) and drops of unknown jobs at index 0."""
    j1 = Job(job=1, mode=0, num_workers=2, mcast_grp=1, slot_base=0, slot_count=2)
    j2 = Job(job=2, mode=1, num_workers=2, mcast_grp=2, slot_base=2, slot_count=2, param_chunks=1)
    pl = load([j1, j2])
    v = [1, 2, 3, 4]
    packets = [
        contrib(1, 0, 0, 0, False, 0, v),  # contribution
        contrib(1, 0, 0, 0, False, 0, v),  # duplicate (dropped)
        contrib(1, 0, 0, 0, True, 0, v),   # duplicate (STATUS)
        contrib(1, 1, 0, 0, False, 0, v),  # contribution + completion
        contrib(1, 1, 0, 0, True, 0, v),   # duplicate (RESULT)
        contrib(1, 2, 0, 0, False, 0, v),  # drop: worker 2 of 2
        contrib(1, 0, 2, 0, False, 0, v),  # drop: slot 2 of 2
        contrib(7, 0, 0, 0, False, 0, v),  # drop: unknown job -> index 0
        contrib(2, 0, 0, 0, False, 1, v),  # drop: chunk 1 of 1 param chunks (sgd)
        contrib(1, 0, 1, 0, False, 0, v, msg=RESULT),  # drop: not a CONTRIB
    ]
    outs = [len(pl.process(port, data)) for port, data in packets]
    assert outs == [0, 0, 1, 2, 1, 0, 0, 0, 0, 0]
    got = {name: [pl.counter_read(name, j)[0] for j in range(3)]
           for name in ("innet_contributions", "innet_completions", "innet_duplicates", "innet_drops")}
    assert got == {
        "innet_contributions": [0, 2, 0],
        "innet_completions": [0, 1, 0],
        "innet_duplicates": [0, 3, 0],
        "innet_drops": [1, 3, 1],
    }


# ---------------------------------------------------------------- epochs (worker sets)

def attach(pl: Pipeline, jb: Job, epoch: int) -> Job:
    """What Controller.attach does: MODIFY the job entry to a new epoch."""
    new = Job(**{**jb.__dict__, "epoch": epoch})
    pl.table_modify("innet_jobs", [KeySpec(jb.job)], "set_job", {
        "mode": new.mode, "num_workers": new.num_workers, "mcast_grp": new.mcast_grp,
        "slot_base": new.slot_base, "slot_count": new.slot_count, "param_base": new.param_base,
        "param_chunks": new.param_chunks, "lr": new.lr & MASK32, "lr_shift": new.lr_shift,
        "beta": new.beta & MASK32, "beta_shift": new.beta_shift, "epoch": new.epoch})
    return new


def test_reused_job_never_returns_an_earlier_sets_result() -> None:
    """The F1 reproducer at the switch: a second worker set starts at stream position 0, on
    slot copies the first set left complete. With a new epoch the copy counts as empty: the
    first contribution is not answered with the old sum, and the new sum is exact."""
    jb = Job(job=1, mode=0, num_workers=2, mcast_grp=1, slot_base=0, slot_count=2)
    pl = load([jb])
    for w in range(2):
        outs = pl.process(*contrib(1, w, 0, 0, False, 0, [w + 1] * 4))
    assert [decode(p, d, 4).values for p, d in outs] == [(3,) * 4] * 2
    # the same worker set (same epoch) retransmitting gets the stored result, as before
    (p, d), = pl.process(*contrib(1, 0, 0, 0, True, 0, [1] * 4))
    assert decode(p, d, 4).msg == RESULT
    jb = attach(pl, jb, 2)
    assert pl.process(*contrib(1, 0, 0, 0, False, 0, [10] * 4, epoch=2)) == []  # a fresh copy
    assert pl.register_read("innet_epoch", 0) == 2 and pl.register_read("innet_count", 0) == 1
    outs = pl.process(*contrib(1, 1, 0, 0, True, 0, [20] * 4, epoch=2))
    assert [decode(p, d, 4) for p, d in outs] == [Reply(r + 1, RESULT, 3, 2, (30,) * 4, 2) for r in range(2)]


def test_stale_worker_set_is_answered_stale_and_changes_nothing() -> None:
    jb = Job(job=1, mode=0, num_workers=2, mcast_grp=1, slot_base=0, slot_count=2)
    pl = load([jb])
    attach(pl, jb, 5)
    before = {n: [pl.register_read(n, i) for i in range(4)] for n in ("innet_bitmap", "innet_count", "innet_epoch")}
    (p, d), = pl.process(*contrib(1, 1, 1, 1, True, 0, [7] * 4, epoch=4))
    assert decode(p, d, 4) == Reply(2, STALE, 0, 2, (7,) * 4, 5)  # the job's epoch, to the sender only
    assert {n: [pl.register_read(n, i) for i in range(4)] for n in before} == before
    assert pl.counter_read("innet_stale", 1)[0] == 1


@pytest.mark.parametrize("seed", [0, 1])
def test_worker_sets_one_after_another_match_model(seed: int) -> None:
    """Random lossy schedules of three worker sets on one job, each starting at stream
    position 0 on the previous sets' slot copies, with delayed packets of the previous sets
    interleaved: every output equals the model's, every result is the exact sum of its set."""
    rng = random.Random(seed)
    jb = Job(job=2, mode=0, num_workers=3, mcast_grp=1, slot_base=1, slot_count=2)
    pl, model = load([jb]), Model(4, {jb.job: jb})
    delayed: list[tuple[int, int, int, int, int, list[int]]] = []  # sent by earlier sets
    for epoch in (1, 2, 3):
        if epoch > 1:
            jb = attach(pl, jb, epoch)
            model.jobs[jb.job] = jb
        grads = {(w, c): [rng.randint(-999, 999) for _ in range(4)] for w in range(3) for c in range(5)}
        nxt = [0] * 3
        have: list[set[int]] = [set() for _ in range(3)]
        sent: list[tuple[int, int, int, int, int, list[int]]] = []
        while any(len(h) < 5 for h in have):
            if delayed and rng.random() < 0.1:
                w, s, ver, c, old, vals = delayed.pop()
                got = [decode(p, d, 4) for p, d in pl.process(*contrib(jb.job, w, s, ver, True, c, vals, epoch=old))]
                assert got == expected(model, jb, w, s, ver, True, c, vals, old)
                assert [r.msg for r in got] == [STALE]
                continue
            w = rng.randrange(3)
            c = nxt[w]
            if c < 5 and (c < 2 or c - 2 in have[w]) and rng.random() < 0.6:
                nxt[w] += 1
                retrans = False
            else:
                pending = [x for x in range(nxt[w]) if x not in have[w]]
                if not pending:
                    continue
                c, retrans = rng.choice(pending), True
            s, ver = c % 2, (c // 2) % 2
            got = [decode(p, d, 4) for p, d in pl.process(*contrib(jb.job, w, s, ver, retrans, c, grads[(w, c)],
                                                                   epoch=epoch))]
            assert sorted(got, key=lambda r: r.port) == expected(model, jb, w, s, ver, retrans, c, grads[(w, c)],
                                                                 epoch)
            sent.append((w, s, ver, c, epoch, grads[(w, c)]))
            for r in got:
                if r.msg == RESULT and rng.random() < 0.7:
                    assert r.epoch == epoch
                    assert r.values == tuple(sum(grads[(x, c)][i] for x in range(3)) & MASK32 for i in range(4))
                    have[r.port - 1].add(c)
        delayed += rng.sample(sent, 10)
    assert pl.counter_read("innet_stale", 2)[0] == model.counters["innet_stale"][2] > 0
def test_truncated_contribution_is_dropped_and_changes_nothing() -> None:
    """Found by tests/fuzz (innet invariants): a CONTRIB frame cut inside its K values
    (parser error PacketTooShort, ``innet_values`` invalid) was aggregated as a full
    contribution and could complete a chunk with the missing values read as 0."""
    jb = Job(job=1, mode=0, num_workers=1, mcast_grp=1, slot_base=0, slot_count=2)
    pl = load([jb])
    port, data = contrib(1, 0, 0, 0, False, 0, [5, 6, 7, 8])
    for cut in (len(data) - 1, len(data) - 4, 66 + 1, 66):  # 66: Ethernet+IPv4+UDP (42) + innet header (24)
        assert pl.process(port, data[:cut]) == [], cut
    assert pl.register_read("innet_count", 0) == 0
    assert pl.register_read("innet_bitmap", 0) == 0
    assert pl.counter_read("innet_contributions", 1)[0] == 0
    assert pl.counter_read("innet_drops", 1)[0] == 4
    assert len(pl.process(port, data)) == 1  # the whole frame still completes the chunk
