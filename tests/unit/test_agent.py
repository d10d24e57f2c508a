"""innet.host.agent.agent: agent processes against the fake switch (TEST DOUBLE)."""

from __future__ import annotations

import os
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from innet.wire import quantize as qz
from innet.wire import switch_model as sim
from innet import wire
from innet.host.agent.agent import Agent, AgentConfig, AgentError
from innet.host.agent.aggregator import AggregationError, JobConfig, Timing
from innet.host.agent.transport import TunnelTransportConfig, UdpTransportConfig
from innet.switch.ports import LossSpec, PortSet, UdpPort, UdpPortSpec

from testkit.fake_innet_switch import FakeInnetSwitch, FakeUdpSwitch, fake_frame_handler

K = 16


def _agents(configs: list[AgentConfig]) -> list[Agent]:
    agents: list[Agent] = []
    try:
        for config in configs:
            agents.append(Agent(config, capacity=64).start())
    except BaseException:
        for a in agents:
            a.close()
        raise
    return agents


def _udp(fake: FakeUdpSwitch) -> UdpTransportConfig:
    return UdpTransportConfig("127.0.0.1", fake.address[1], "127.0.0.1")


def test_allreduce_float_and_int_with_bound_exchange() -> None:
    n = 3
    fake_switch = FakeInnetSwitch(K)
    fake_switch.add_job(2, n, slot_count=4)
    rng = np.random.default_rng(0)
    xs = [rng.normal(scale=s, size=(10, 7)).astype(np.float32) for s in (1.0, 5.0, 0.1)]
    ints = [rng.integers(-1000, 1000, 500).astype(np.int32) for _ in range(n)]
    with FakeUdpSwitch(fake_switch) as fake:
        agents = _agents([AgentConfig(JobConfig(2, r, n, 4, K, epoch=1), _udp(fake)) for r in range(n)])
        try:
            with ThreadPoolExecutor(n) as pool:
                sums = list(pool.map(lambda a, x: a.allreduce(x), agents, xs))
            bound = max(float(np.max(np.abs(x))) for x in xs)
            f = qz.sum_frac_bits(np.float32(bound), n)
            assert agents[0].last is not None and agents[0].last.frac_bits == f
            for s in sums:
                assert s.shape == (10, 7) and s.dtype == np.float32
                assert np.max(np.abs(s - sum(xs))) <= n * 2.0 ** -(f + 1) + 1e-5
                assert np.array_equal(s, sums[0])
            # larger than the initial shared-memory capacity: segments grow
            for a, v in zip(agents, ints):
                a.push_int(v)
            outs = [a.pull_int(timeout=30) for a in agents]
            for out in outs:
                assert np.array_equal(out, sum(v.astype(np.int64) for v in ints))
        finally:
            for a in agents:
                a.close()


def test_push_pull_momentum_matches_simulation_bit_for_bit() -> None:
    n, size = 2, 40
    fmt = qz.FixedPointFormat(param_frac_bits=12, grad_frac_bits=14, num_workers=n)
    opt = qz.optimizer_params(0.1, n, 14, 12, beta=0.9)
    w0 = np.linspace(-1, 1, size).astype(np.float32)
    fake_switch = FakeInnetSwitch(K)
    fake_switch.add_job(4, n, 2, wire.Mode.MOMENTUM, fmt.params(w0).values, opt)
    model = sim.SwitchModel(wire.Mode.MOMENTUM, fmt.params(w0).values, opt.lr, opt.lr_shift,
                            opt.beta, opt.beta_shift)
    rng = np.random.default_rng(3)
    with FakeUdpSwitch(fake_switch) as fake:
        agents = _agents([AgentConfig(JobConfig(4, r, n, 2, K, epoch=1), _udp(fake), wire.Mode.MOMENTUM, fmt)
                          for r in range(n)])
        try:
            for _ in range(3):
                grads = [rng.normal(size=size).astype(np.float32) for _ in range(n)]
                for a, g in zip(agents, grads):
                    a.push(g)
                params = [a.pull(timeout=30) for a in agents]
                expected = model.step([fmt.grads(g).values for g in grads])
                assert np.array_equal(fmt.params(params[0]).values, expected)
                assert np.array_equal(params[0], params[1])
        finally:
            for a in agents:
                a.close()


def test_frame_tunnel_through_lossy_switch_ports() -> None:
    n = 4
    fake_switch = FakeInnetSwitch(K)
    fake_switch.add_job(7, n, slot_count=8)
    switch_ep = wire.Endpoint("02:00:00:00:00:fe", "10.0.0.254")
    workers = {(7, r): (r + 1, wire.Endpoint(f"02:00:00:00:00:{r + 1:02x}", f"10.0.0.{r + 1}", 40000 + r))
               for r in range(n)}
    loss = LossSpec(drop=0.05, duplicate=0.05, reorder=0.05, seed=11)
    ports = [UdpPort(UdpPortSpec.parse(f"{r + 1}@127.0.0.1:0"), loss) for r in range(n)]
    portset = PortSet(ports, fake_frame_handler(fake_switch, switch_ep, workers))
    portset.start()
    rng = np.random.default_rng(5)
    data = [rng.integers(-(1 << 20), 1 << 20, 3000).astype(np.int32) for _ in range(n)]
    try:
        agents = _agents([AgentConfig(JobConfig(7, r, n, 8, K, epoch=1), TunnelTransportConfig(
            ports[r].address, workers[(7, r)][1], switch_ep), timing=Timing(initial_rto=0.02))
            for r in range(n)])
        try:
            for round_ in range(2):
                for a, d in zip(agents, data):
                    a.push_int(d + round_)
                for a in agents:
                    assert np.array_equal(a.pull_int(timeout=60),
                                          sum(d.astype(np.int64) + round_ for d in data))
            assert agents[0].last is not None and agents[0].last.stats["retransmitted"] > 0
        finally:
            for a in agents:
                a.close()
    finally:
        portset.close()
    chunks = 2 * -(-3000 // K)
    assert fake_switch.jobs[7].counters["contributions"] == n * chunks


def test_dead_worker_error_raised_by_pull() -> None:
    n = 3
    fake_switch = FakeInnetSwitch(K)
    fake_switch.add_job(6, n, slot_count=4)
    timing = Timing(initial_rto=0.01, max_rto=0.1, chunk_deadline=1.0)
    with FakeUdpSwitch(fake_switch) as fake:
        agents = _agents([AgentConfig(JobConfig(6, r, n, 4, K, epoch=1), _udp(fake), timing=timing)
                          for r in (0, 2)])
        try:
            for a in agents:
                a.push_int(np.arange(100, dtype=np.int32))
            for a in agents:
                with pytest.raises(AggregationError, match=r"job 6, worker \d: chunk \d+ .*missing workers \[1\]") as info:
                    a.pull_int(timeout=20)
                assert info.value.missing == (1,) and info.value.job == 6
            # the agent survives an aggregation error and serves the next operation
            assert agents[0]._process is not None and agents[0]._process.is_alive()
        finally:
            for a in agents:
                a.close()


def test_misuse_and_start_errors() -> None:
    busy = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    busy.bind(("127.0.0.1", 0))
    try:
        config = AgentConfig(JobConfig(1, 0, 1, epoch=1), UdpTransportConfig("127.0.0.1", 9, "127.0.0.1",
                                                                     busy.getsockname()[1]))
        with pytest.raises(AgentError, match=r"agent of job 1, worker 0: UDP transport: cannot bind UDP 127\.0\.0\.1:\d+"):
            Agent(config).start()
    finally:
        busy.close()
    agent = Agent(AgentConfig(JobConfig(1, 0, 1, epoch=1), UdpTransportConfig("127.0.0.1", 9)))
    with pytest.raises(AgentError, match="is not running"):
        agent.push_int([1])
    with agent:
        with pytest.raises(AgentError, match="push\\(\\) needs an sgd/momentum job"):
            agent.push([1.0])
        with pytest.raises(AgentError, match="nothing to pull"):
            agent.pull_int()


def test_process_that_cannot_start_is_one_agent_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failing process start (fork refused, spawn unpicklable) is reported as itself, not
    hidden behind close() joining a process that never started."""
    import multiprocessing.process

    def refuse(self: object) -> None:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
    agent = Agent(AgentConfig(JobConfig(1, 0, 1, epoch=1), UdpTransportConfig("127.0.0.1", 9)))
    with pytest.raises(AgentError, match=r"agent of job 1, worker 0: cannot start its process: .*temporarily"):
        agent.start()
    agent.close()  # still safe


def test_close_releases_process_and_shared_memory() -> None:
    fake_switch = FakeInnetSwitch(K)
    fake_switch.add_job(1, 1, 2)
    with FakeUdpSwitch(fake_switch) as fake:
        agent = Agent(AgentConfig(JobConfig(1, 0, 1, 2, K, epoch=1), _udp(fake)), capacity=8).start()
        process = agent._process
        names = [s.name for s in agent._segments or ()]
        assert list(agent.allreduce_int(np.arange(20, dtype=np.int32))) == list(range(20))
        names += [s.name for s in agent._segments or ()]
        agent.close()
        agent.close()
    assert process is not None and not process.is_alive()
    for name in set(names):
        assert not os.path.exists(f"/dev/shm/{name.lstrip('/')}")


def test_agent_process_killed_is_reported() -> None:
    fake_switch = FakeInnetSwitch(K)
    with FakeUdpSwitch(fake_switch) as fake:
        fake.silent = True
        with Agent(AgentConfig(JobConfig(1, 0, 2, 2, K, epoch=1), _udp(fake))) as agent:
            agent.push_int(np.arange(4, dtype=np.int32))
            killer = threading.Timer(0.3, agent._process.kill)
            killer.start()
            with pytest.raises(AgentError, match=r"agent process of job 1, worker 0 died \(exit code -9\)"):
                agent.pull_int(timeout=20)
            killer.join()
