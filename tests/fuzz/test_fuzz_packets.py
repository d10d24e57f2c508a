"""Packets into the executor for every program under p4/ (innet.p4 default build and
p4/examples/*.p4), with the control plane of each program's STF test (innet.p4: jobs,
workers, multicast groups, routes as the controller installs them).

Properties: no exception (``Pipeline.process`` documents none), no hang, output ports
0..510; for innet.p4 also the protocol's safety invariants (CONTRIB, REDUCE, BCAST) and
bit-exactness against the numpy models (``testkit.fake_innet_switch`` over
``innet.wire.switch_model`` for CONTRIB, ``innet.wire.dataplane_model`` for every message type). Every
example is a sequence of packets from the state right after the control plane was
applied; a failure prints the example's seed and writes a minimized STF reproducer.
"""

from __future__ import annotations

import random
from typing import Callable

import numpy as np
import packet_gen as gen
import pytest
from fuzzlib import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from packet_harness import (INNET_JOBS, INNET_OWNERS, INNET_P4, PROGRAMS, SWITCH_IP, SWITCH_MAC, Checker, Harness,
                            Problem, harness)
from packet_harness import worker_ip, worker_mac, worker_port, worker_udp

from innet.wire import dataplane_model as sm
from innet import wire
from innet.wire.quantize import OptimizerParams
from testkit.fake_innet_switch import FakeInnetSwitch

K = gen.K
IDS = [p.stem for p in PROGRAMS]
seeds = st.integers(0, 2**64 - 1)
Packet = tuple[int, bytes]


def sequence(rng: random.Random, make: Callable[[random.Random], Packet], longest: int = 16) -> list[Packet]:
    return [make(rng) for _ in range(rng.randint(1, longest))]


# ---------------------------------------------------------------- every program

@pytest.mark.parametrize("path", PROGRAMS, ids=IDS)
def test_random_packets(path) -> None:
    h = harness(path)

    @fuzz_settings(200)
    @given(seeds)
    def check(seed: int) -> None:
        h.check(sequence(random.Random(seed), gen.random_packet))

    check()


@pytest.mark.parametrize("path", PROGRAMS, ids=IDS)
def test_mutated_stf_packets(path) -> None:
    """The program's own STF packets (innet.p4: its STF packets and structured frames),
    mutated byte by byte."""
    h = harness(path)
    corpus = h.seeds + ([gen.innet_frame(random.Random(i)) for i in range(32)] if path == INNET_P4 else [])

    @fuzz_settings(200)
    @given(seeds)
    def check(seed: int) -> None:
        h.check(sequence(random.Random(seed), lambda rng: gen.mutate(rng, corpus)))

    check()


# ---------------------------------------------------------------- innet.p4, structure-aware

def _copy_state(h: Harness, idx: int) -> tuple[int, int, tuple[int, ...]]:
    regs = h.pipeline.registers
    return (regs["MyIngress.innet_bitmap"].cells[idx], regs["MyIngress.innet_count"].cells[idx],
            tuple(regs[f"MyIngress.innet_acc_{i}"].cells[idx] for i in range(K)))


class InnetInvariants(Checker):
    def __call__(self, h: Harness, port: int, data: bytes, run: Callable[[], list[Packet]]) -> None:
        """Duplicates never change a copy; a truncated contribution, or one whose HDRONLY flag
        contradicts its sender's role, changes nothing; a copy's count and bitmap never
        exceed its job's members (workers, and owners with REDUCE/BCAST); a completion goes
        to every member of the copy, once."""
        target = gen.addressed(data)
        before = _copy_state(h, target.idx) if target else None
        outputs = run()
        if target is None or before is None:
            return
        j, idx = target.job, target.idx
        after = _copy_state(h, idx)
        if target.inert and after != before:
            raise Problem(f"a contribution that must be dropped ({len(data)} of {gen.FULL} bytes, flags "
                          f"{data[43]:#x}) changed copy {idx} of job {j.job}: count {before[1]} -> {after[1]}")
        if before[0] & target.wbit and after != before:
            raise Problem(f"duplicate from worker {target.worker} changed copy {idx} of job {j.job}")
        ranks = set(range(j.num_workers)) | {o.rank for o in INNET_OWNERS if o.job == j.job}
        if after[1] > len(ranks) or after[0] & ~sum(1 << r for r in ranks):
            raise Problem(f"job {j.job} copy {idx}: count {after[1]} / bitmap {after[0]:#x} beyond its members "
                          f"{sorted(ranks)}")
        members = len(target.members)
        if after[1] == members and before[1] != members:
            got = sorted(p for p, _ in outputs)
            if got != sorted(worker_port(w) for w in target.members):
                raise Problem(f"completion of job {j.job} went to ports {got}")


def test_innet_structured_packets_keep_invariants() -> None:
    h = harness(INNET_P4)

    def frame(rng: random.Random) -> Packet:
        return gen.arp_frame(rng) if rng.random() < 0.05 else gen.innet_frame(rng)

    @fuzz_settings(300)
    @given(seeds)
    def check(seed: int) -> None:
        h.check(sequence(random.Random(seed), frame, longest=24), InnetInvariants())

    check()


# ---------------------------------------------------------------- innet.p4 vs the numpy model

def _signed(v: int) -> int:
    return v - (1 << 32) if v >> 31 else v


def _fake() -> FakeInnetSwitch:
    """The numpy model with the harness's jobs and initial parameters."""
    fake = FakeInnetSwitch(k=K)
    for j in INNET_JOBS:
        params = np.zeros((max(j.param_chunks, 1), K), np.int32)
        if j.job == 2:
            params[5 - j.param_base, 0] = 1000  # register_write innet_param_0 5 1000
        if j.job == 3:
            params[17 - j.param_base, 63] = -1000  # register_write innet_param_63 17 0xfffffc18
        opt = OptimizerParams(_signed(j.lr), j.lr_shift, _signed(j.beta), j.beta_shift)
        job = fake.add_job(j.job, j.num_workers, j.slot_count, wire.Mode(j.mode), params=params, opt=opt,
                           epoch=j.epoch)
        if not j.mode:
            job.params = np.zeros((0, K), np.int32)
    return fake


def _decode(outputs: list[Packet]) -> list[tuple[int, tuple[int, ...], list[int]]]:
    out = []
    for p, d in sorted(outputs, key=lambda o: o[0]):
        frame = wire.parse_frame(d)
        assert frame is not None
        m = wire.unpack(frame.payload, K)
        out.append((p, m.header_tuple(), m.values.tolist()))
    return out


def test_innet_bit_exact_with_numpy_model() -> None:
    """Well-formed contributions (duplicates, retransmissions, workers, slots and chunks
    one past the limit): every reply equals the numpy model's, bit for bit."""
    h = harness(INNET_P4)
    switch = wire.Endpoint(gen.mac(SWITCH_MAC), gen.ip(SWITCH_IP))

    def frame(msg: wire.Message) -> Packet:
        w = msg.worker % 32
        src = wire.Endpoint(gen.mac(worker_mac(w)), gen.ip(worker_ip(w)), worker_udp(w))
        return worker_port(w), wire.frame(src, switch, wire.pack(msg, K))

    @fuzz_settings(200)
    @given(seeds)
    def check(seed: int) -> None:
        rng = random.Random(seed)
        h.check([frame(gen.contribution(rng)) for _ in range(rng.randint(1, 40))], AgainstModel())

    check()


class AgainstModel(Checker):
    """Each packet's outputs equal the numpy model's reply to the same message."""

    def start(self) -> None:
        self.fake = _fake()

    def __call__(self, h: Harness, port: int, data: bytes, run: Callable[[], list[Packet]]) -> None:
        frame = wire.parse_frame(data)
        assert frame is not None
        msg = wire.unpack(frame.payload, K)
        got = _decode(run())
        want = []
        reply = self.fake.handle(msg)
        if reply is not None:
            kind, out = reply
            ranks = range(self.fake.jobs[msg.job].num_workers) if kind == "multicast" else [msg.worker]
            want = [(worker_port(r), out.header_tuple(), np.asarray(out.values).tolist()) for r in ranks]
        if got != want:
            raise Problem(f"reply differs from the numpy model for {msg!r}:\n  switch {got}\n  model  {want}")


# ---------------------------------------------------------------- innet.p4 vs innet.wire.dataplane_model

def _dataplane() -> sm.InnetDataplane:
    """The numpy dataplane model with the harness's control plane (packet_harness.innet_control)."""
    model = sm.InnetDataplane(K)
    groups: dict[int, int] = {}
    for j in INNET_JOBS:
        model.jobs[j.job] = sm.JobEntry(j.mode, j.num_workers, j.mcast_grp, j.slot_base, j.slot_count, j.param_base,
                                        j.param_chunks, j.lr, j.lr_shift, j.beta, j.beta_shift, j.epoch)
        model.workers |= {(j.job, w) for w in range(j.num_workers)}
        groups[j.mcast_grp] = max(groups.get(j.mcast_grp, 0), j.num_workers)
    model.groups = {grp: list(range(n)) for grp, n in groups.items()}
    for o in INNET_OWNERS:
        model.owners.append(sm.OwnerEntry(o.job, o.prefix, o.prefix_len, o.rank, o.mcast_grp))
        j = model.jobs[o.job]
        if j.mode == 0:
            model.workers.add((o.job, o.rank))
            model.groups[o.mcast_grp] = list(range(j.num_workers)) + [o.rank]
    model.param[5, 0] = 1000
    model.param[17, 63] = -1000
    return model


class AgainstDataplaneModel(Checker):
    """Each packet's outputs equal innet.wire.dataplane_model's: ports and innet payloads."""

    def start(self) -> None:
        self.model = _dataplane()

    def __call__(self, h: Harness, port: int, data: bytes, run: Callable[[], list[Packet]]) -> None:
        frame = wire.parse_frame(data)
        assert frame is not None
        got = []
        for p, d in sorted(run()):
            out = wire.parse_frame(d)
            assert out is not None
            got.append((p, out.payload))
        want = sorted((port if d.rank is None else worker_port(d.rank), d.packet.payload())
                      for d in self.model.process(sm.InnetPacket.parse(frame.payload, K)))
        if got != want:
            raise Problem(f"outputs differ from innet.wire.dataplane_model for {frame.payload[:24].hex()}:\n"
                          f"  switch {[(p, x.hex()) for p, x in got]}\n  model  {[(p, x.hex()) for p, x in want]}")


def test_innet_owner_ops_bit_exact_with_dataplane_model() -> None:
    """Members' CONTRIB, REDUCE and BCAST messages (values or header-only requests, some
    with the wrong role, rank, chunk or epoch): every output equals the dataplane model's,
    byte for byte."""
    h = harness(INNET_P4)
    switch = wire.Endpoint(gen.mac(SWITCH_MAC), gen.ip(SWITCH_IP))

    def frame(msg: wire.Message) -> Packet:
        w = msg.worker % 32
        src = wire.Endpoint(gen.mac(worker_mac(w)), gen.ip(worker_ip(w)), worker_udp(w))
        return worker_port(w), wire.frame(src, switch, wire.pack(msg, K))

    @fuzz_settings(200)
    @given(seeds)
    def check(seed: int) -> None:
        rng = random.Random(seed)
        h.check([frame(gen.member_message(rng)) for _ in range(rng.randint(1, 40))], AgainstDataplaneModel())

    check()
