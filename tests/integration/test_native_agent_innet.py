"""The native and the python agent datapaths against p4/innet.p4 on innet's executor
(loopback UDP switch ports): the same float and int results, in one job together too."""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import pytest

from innet.host.agent.agent import Agent, AgentConfig
from innet.host.agent.native import datapath as dp
from innet.host.agent.aggregator import Timing
from innet.native_build import NativeBuildError
from innet.switch.ports import LossSpec
from testkit.innet_test_switch import InnetTestSwitch


@pytest.fixture(scope="module", autouse=True)
def native_available() -> None:
    try:
        dp.load_native()
    except NativeBuildError as error:
        pytest.skip(f"native datapath needs a C compiler and cffi: {error}")


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


def _float_rounds(datapaths: tuple[str, ...], loss: LossSpec | None) -> tuple[list[list[np.ndarray]], list[str]]:
    n = len(datapaths)
    rng = np.random.default_rng(3)
    rounds = [[rng.normal(scale=10.0 ** r, size=size).astype(np.float32) for r in range(n)]
              for size in (700, 130)]
    with InnetTestSwitch(num_ports=n, loss=loss) as switch:
        configs = switch.add_job(1, n, window=8, timing=Timing(initial_rto=0.03, chunk_deadline=15))
        agents = _start([replace(c, datapath=d) for c, d in zip(configs, datapaths)])
        try:
            results: list[list[np.ndarray]] = [[] for _ in range(n)]
            for xs in rounds:
                out: list = [None] * n
                threads = [threading.Thread(target=lambda r=r: out.__setitem__(r, agents[r].allreduce(xs[r], 60)))
                           for r in range(n)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(90)
                for r in range(n):
                    results[r].append(out[r])
            used = [a.datapath or "" for a in agents]
        finally:
            for a in agents:
                a.close()
    return results, used


@pytest.mark.slow
def test_native_python_and_mixed_jobs_give_identical_sums() -> None:
    loss = LossSpec(drop=0.03, duplicate=0.03, reorder=0.03, seed=4)
    by_datapath = {}
    for datapaths in (("python", "python"), ("native", "native"), ("native", "python")):
        results, used = _float_rounds(datapaths, loss)
        assert used == list(datapaths)
        for r in range(1, len(results)):
            for a, b in zip(results[0], results[r]):
                assert a.tobytes() == b.tobytes()  # every worker gets the same bits
        by_datapath[datapaths] = results[0]
    reference = by_datapath[("python", "python")]
    for results in by_datapath.values():
        for a, b in zip(reference, results):
            assert a.tobytes() == b.tobytes()
