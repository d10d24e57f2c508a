"""Host agents against p4/innet.p4 on innet's executor, over loopback UDP switch ports."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from innet.wire import quantize as qz
from innet.host.agent.agent import Agent, AgentConfig
from innet.host.training.model import SoftmaxRegression, load_digits_dataset
from innet.host.agent.aggregator import AggregationError, Timing
from innet.host.training.loop import TrainConfig, initial_params, simulate_training, train_workers
from innet.wire import Mode
from innet.switch.ports import LossSpec

from testkit.innet_test_switch import InnetTestSwitch
from testkit.rank_sums import int32_sum


def _start(configs: list[AgentConfig]) -> list[Agent]:
    agents: list[Agent] = []
    try:
        for c in configs:
            agents.append(Agent(c).start())
    except BaseException:
        for a in agents:
            a.close()
        raise
    return agents


def _random(n: int, size: int, seed: int, bits: int = 31) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-(1 << bits), 1 << bits, size, dtype=np.int64).astype(np.int32) for _ in range(n)]


def _allreduce_rounds(agents: list[Agent], rounds: list[list[np.ndarray]]) -> None:
    for vectors in rounds:
        for a, v in zip(agents, vectors):
            a.push_int(v)
        expected = int32_sum(vectors)
        for a in agents:
            assert np.array_equal(a.pull_int(timeout=60), expected)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_exact_sums_several_rounds_reusing_slots(n: int) -> None:
    with InnetTestSwitch(num_ports=n) as switch:
        agents = _start(switch.add_job(3, n, window=8))
        try:
            # 1000 values = 16 chunks of 64 through 8 slots; three rounds: both copies reused
            _allreduce_rounds(agents, [_random(n, size, seed=n + i) for i, size in enumerate((1000, 1000, 77))])
        finally:
            for a in agents:
                a.close()
        chunks = 16 + 16 + 2
        counters = switch.counters(3)
        # retransmissions (timer expiries under load) may add duplicates, never contributions
        assert (counters["contributions"], counters["completions"], counters["drops"]) == \
            (n * chunks, chunks, 0)


def test_lossy_ports_loss_duplication_reordering() -> None:
    n = 4
    loss = LossSpec(drop=0.05, duplicate=0.05, reorder=0.05, seed=42)
    with InnetTestSwitch(num_ports=n, loss=loss) as switch:
        agents = _start(switch.add_job(2, n, window=16, timing=Timing(initial_rto=0.03, chunk_deadline=15)))
        try:
            _allreduce_rounds(agents, [_random(n, 3000, seed=s) for s in range(3)])
            assert sum(a.last.stats["retransmitted"] for a in agents if a.last) > 0
        finally:
            for a in agents:
                a.close()
        counters = switch.counters(2)
        chunks = 3 * -(-3000 // 64)
        assert counters["contributions"] == n * chunks  # every contribution counted exactly once
        assert counters["completions"] == chunks
        assert counters["duplicates"] > 0


def test_float_allreduce_with_exchanged_bound() -> None:
    n = 3
    rng = np.random.default_rng(9)
    xs = [rng.normal(scale=10 ** r, size=500).astype(np.float32) for r in range(n)]
    with InnetTestSwitch(num_ports=n) as switch:
        agents = _start(switch.add_job(1, n, window=4))
        try:
            out: list = [None] * n
            threads = [threading.Thread(target=lambda r=r: out.__setitem__(r, agents[r].allreduce(xs[r])))
                       for r in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            f = agents[0].last.frac_bits if agents[0].last else 0
            for o in out:
                assert np.max(np.abs(o - sum(xs))) <= n * 2.0 ** -(f + 1) + 1e-4
        finally:
            for a in agents:
                a.close()


def test_two_concurrent_jobs() -> None:
    with InnetTestSwitch(num_ports=5) as switch:
        job_a = switch.add_job(1, 3, window=8, ports=[1, 2, 3])
        job_b = switch.add_job(2, 2, window=4, ports=[4, 5])
        agents = _start(job_a + job_b)
        data_a = [_random(3, 2000, seed=s) for s in (1, 2)]
        data_b = [_random(2, 700, seed=s) for s in (3, 4)]
        errors: list[BaseException] = []

        def run(group: list[Agent], rounds: list[list[np.ndarray]]) -> None:
            try:
                _allreduce_rounds(group, rounds)
            except BaseException as error:
                errors.append(error)

        try:
            threads = [threading.Thread(target=run, args=(agents[:3], data_a)),
                       threading.Thread(target=run, args=(agents[3:], data_b))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            assert errors == []
        finally:
            for a in agents:
                a.close()
        assert switch.counters(1)["completions"] == 2 * 32
        assert switch.counters(2)["completions"] == 2 * 11


def test_dead_worker_is_named_within_the_deadline() -> None:
    n = 4
    with InnetTestSwitch(num_ports=n) as switch:
        configs = switch.add_job(5, n, window=4, timing=Timing(initial_rto=0.02, max_rto=0.2,
                                                                chunk_deadline=1.5))
        agents = _start([c for c in configs if c.job.rank != 2])
        try:
            for a in agents:
                a.push_int(np.arange(300, dtype=np.int32))
            for a in agents:
                with pytest.raises(AggregationError, match=r"job 5, worker \d: chunk \d+ \(slot \d+, copy 0\) "
                                   r"not complete after 1\.\d+ s .*missing workers \[2\] "
                                   r"\(switch bitmap 0xb of 4 workers\)") as info:
                    a.pull_int(timeout=30)
                assert info.value.missing == (2,)
        finally:
            for a in agents:
                a.close()


@pytest.mark.parametrize("mode,lr", [(Mode.SGD, 0.5), (Mode.MOMENTUM, 0.1)])
def test_training_final_params_equal_simulation(mode: Mode, lr: float) -> None:
    n = 3
    data = load_digits_dataset()
    model = SoftmaxRegression()
    config = TrainConfig(num_workers=n, mode=mode, lr=lr, steps=25,
                         fixed=qz.FixedPointFormat(16, 20, n))
    with InnetTestSwitch(num_ports=n) as switch:
        configs = switch.add_job(7, n, window=4, mode=mode, params=initial_params(config, model),
                                 opt=config.optimizer, fixed=config.fixed)
        result = train_workers(data, config, configs, model)
        stored = switch.read_params(7, model.size)
    expected = simulate_training(data, config, model)
    assert result.params_int is not None and expected.params_int is not None
    assert np.array_equal(result.params_int, expected.params_int)
    assert np.array_equal(stored, expected.params_int)
    assert result.accuracy == expected.accuracy
