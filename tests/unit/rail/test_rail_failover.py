"""A spare HB domain resumes from the rail switches' state (innet.testbed.rail.failover),
checked packet by packet on the switch's dataplane model: a domain dies after sending any
subset of a step's chunks, the spare sends the rank's chunks of that step again from the
stream position the switches give, and every rail ends bit for bit where an uninterrupted
run ends."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from innet.wire import Flag, Mode, MsgType
from innet.wire.dataplane_model import InnetDataplane, InnetPacket, JobEntry
from innet.wire.switch_model import momentum_step, momentum_unstep
from innet.testbed.rail.failover import FailoverError, RailState, params_before, resume_point

K = 4
JOB = 1
LR, LR_SHIFT, BETA, BETA_SHIFT = 3, 4, 7, 3


@given(st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=8), st.data())
def test_momentum_unstep_undoes_the_step(w, data):
    n = len(w)
    m = np.array(data.draw(st.lists(st.integers(-2**31, 2**31 - 1), min_size=n, max_size=n)), np.int32)
    g = np.array(data.draw(st.lists(st.integers(-2**31, 2**31 - 1), min_size=n, max_size=n)), np.int32)
    lr = data.draw(st.integers(-2**31, 2**31 - 1))
    shift = data.draw(st.integers(0, 40))
    w0 = np.array(w, np.int32)
    w1, m1 = momentum_step(w0, m, g, lr, shift, 5, 3)
    assert np.array_equal(momentum_unstep(w1, m1, lr, shift), w0)


def gradient(rank: int, step: int, params: np.ndarray) -> np.ndarray:
    """Depends on the parameters, as a real model's does: wrong ones give other values."""
    seed = int(np.asarray(params, np.int64).sum() & 0xFFFFFFFF)
    return np.random.default_rng([rank, step, seed]).integers(-1000, 1000, params.size).astype(np.int32)


class Rails:
    """``len(chunks)`` rail switches (dataplane models) holding one job of ``y`` workers."""

    def __init__(self, y: int, window: int, chunks: list[int]) -> None:
        self.y, self.window, self.chunks = y, window, chunks
        self.switches = []
        for c in chunks:
            dp = InnetDataplane(k=K, slots=16, param_chunks=16, jobs={JOB: JobEntry(
                Mode.MOMENTUM, y, 1, 0, window, 0, c, LR, LR_SHIFT, BETA, BETA_SHIFT, epoch=1)},
                groups={1: list(range(y))}, workers={(JOB, r) for r in range(y)})
            self.switches.append(dp)
        self.results: list[dict[tuple[int, int], np.ndarray]] = [{} for _ in chunks]
        """Per rail: (rank, chunk) -> the RESULT values delivered to that rank."""

    def send(self, rail: int, rank: int, step: int, chunk: int, grads: np.ndarray) -> None:
        p = step * self.chunks[rail] + chunk
        pkt = InnetPacket(MsgType.CONTRIB, int(Flag.VER) if (p // self.window) % 2 else 0, JOB, rank, p % self.window, chunk, K, 0, 0, 1,
                          grads[rail][chunk * K:(chunk + 1) * K])
        for d in self.switches[rail].process(pkt):
            if d.packet.msg_type == MsgType.RESULT:
                self.results[rail][(rank if d.rank is None else d.rank, chunk)] = d.packet.values

    def params(self) -> np.ndarray:
        return np.concatenate([dp.param[:c].reshape(-1) for dp, c in zip(self.switches, self.chunks)])

    def split(self, vector: np.ndarray) -> list[np.ndarray]:
        bounds = np.cumsum([0] + [c * K for c in self.chunks])
        return [vector[a:b] for a, b in zip(bounds, bounds[1:])]

    def state(self) -> list[RailState]:
        out = []
        for g, (dp, c) in enumerate(zip(self.switches, self.chunks)):
            cells = slice(0, 2 * self.window)
            out.append(RailState(f"r{g}", c, self.window, self.y, 1, int(dp.counters["completions"][JOB]),
                                 dp.count[cells].astype(np.int64), dp.bitmap[cells].astype(np.int64),
                                 dp.copy_epoch[cells].astype(np.int64)))
        return out


def run_steps(rails: Rails, steps: range, params: np.ndarray) -> np.ndarray:
    for s in steps:
        grads = [rails.split(gradient(r, s, params)) for r in range(rails.y)]
        for g, c in enumerate(rails.chunks):
            for i in range(c):
                for r in range(rails.y):
                    rails.send(g, r, s, i, grads[r])
        params = rails.params()
    return params


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_spare_resumes_exactly_from_any_mid_step_failure(data):
    y = data.draw(st.integers(2, 4), label="domains")
    window = data.draw(st.integers(1, 6), label="window")
    chunks = data.draw(st.lists(st.integers(0, window), min_size=1, max_size=3).filter(any), label="chunks")
    steps = 4
    fail_step = data.draw(st.integers(0, steps - 1), label="fail step")
    dead = data.draw(st.integers(0, y - 1), label="dead rank")
    total = sum(chunks) * K
    start = np.random.default_rng(1).integers(-5000, 5000, total).astype(np.int32)

    reference = Rails(y, window, chunks)
    for g, dp in enumerate(reference.switches):
        dp.param[:chunks[g]] = reference.split(start)[g].reshape(-1, K)
    expect = run_steps(reference, range(steps), start.copy())

    rails = Rails(y, window, chunks)
    for g, dp in enumerate(rails.switches):
        dp.param[:chunks[g]] = rails.split(start)[g].reshape(-1, K)
    params = run_steps(rails, range(fail_step), start.copy())
    # the failure: the dead rank sent a subset of its chunks of the step, the others a subset too
    grads = [rails.split(gradient(r, fail_step, params)) for r in range(y)]
    pending = []
    for g, c in enumerate(chunks):
        for i in range(c):
            for r in range(y):
                if data.draw(st.booleans()):
                    rails.send(g, r, fail_step, i, grads[r])
                elif r != dead:
                    pending.append((g, r, i))
    point = resume_point(rails.state())
    if not pending and point.step == fail_step + 1:  # every chunk of the step completed: the next one
        params = rails.params()
        grads = [rails.split(gradient(r, point.step, params)) for r in range(y)]
        pending = [(g, r, i) for g, c in enumerate(chunks) for i in range(c) for r in range(y) if r != dead]
    assert point.step == fail_step or point.step == fail_step + 1 and point.applied_chunks == 0
    before = np.concatenate([params_before(point, g, dp.param[:c].reshape(-1), dp.mom[:c].reshape(-1), LR,
                                           LR_SHIFT, K) for g, (dp, c) in enumerate(zip(rails.switches, chunks))])
    assert np.array_equal(before, params)  # the parameters the step started from
    if point.step == steps:  # the failure came after the last step: nothing to resume
        assert np.array_equal(rails.params(), expect)
        return
    # the spare: the dead rank's contributions of the step, from the rails' first positions of it
    rails.results = [{} for _ in chunks]
    spare = rails.split(gradient(dead, point.step, before))
    for g, c in enumerate(chunks):
        for i in range(c):
            rails.send(g, dead, point.step, i, spare)
    for g, r, i in pending:  # the survivors' retransmissions
        rails.send(g, r, point.step, i, grads[r])
    for g, c in enumerate(chunks):
        for i in range(c):
            assert (dead, i) in rails.results[g], f"rail {g} chunk {i}: no result for the spare"
    final = run_steps(rails, range(point.step + 1, steps), rails.params())
    assert np.array_equal(final, expect)


def test_too_many_chunks_per_step_for_the_window_is_refused():
    rails = Rails(2, 2, [3])
    with pytest.raises(FailoverError, match="exceed the job's window of 2 slots"):
        resume_point(rails.state())


def test_a_rail_two_steps_ahead_is_not_a_failure_state():
    rails = Rails(2, 4, [2, 2])
    ahead = rails.state()
    ahead[1] = RailState("r1", 2, 4, 2, 1, 6, ahead[1].count, ahead[1].bitmap, ahead[1].copy_epoch)
    with pytest.raises(FailoverError, match="rail r1: 6 completions is more than one step ahead of step 0"):
        resume_point(ahead)



@pytest.mark.parametrize(("args", "message"), [
    (["--rank", "2"], "--rank 2: must be one of the job's domains 0..1"),
    (["--domains", "1"], "--domains 1: the job needs at least 2 HB domains besides the spare"),
    (["--kill-at", "0"], "--kill-at 0: completions must be at least 1"),
    (["--nic-bw", "0"], "--nic-bw 0.0 / --hb-bw 1000.0: link rates must be positive"),
])
def test_the_failover_bench_refuses_impossible_values(args: list[str], message: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from innet.cli import main

    assert main(["bench", "rail-failover", *args]) == 2
    assert capsys.readouterr().err.strip() == f"innet bench rail-failover: {message}"
