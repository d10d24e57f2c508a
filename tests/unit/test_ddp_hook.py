"""The DDP comm hook averages buckets through innet within the quantization bound."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from innet.wire import quantize as qz
from innet.host.agent.agent import Agent, AgentConfig
from innet.host.agent.aggregator import JobConfig
from innet.host.agent.transport import UdpTransportConfig
from testkit.fake_innet_switch import FakeInnetSwitch, FakeUdpSwitch

torch = pytest.importorskip("torch", reason="torch (optional dependency) is not installed")


class _Bucket:
    """What the hook uses of ``dist.GradBucket``."""

    def __init__(self, tensor: "torch.Tensor") -> None:
        self._t = tensor

    def buffer(self) -> "torch.Tensor":
        return self._t


def test_hook_average_is_within_the_quantization_bound_of_the_float_mean() -> None:
    from innet.host.pytorch import InnetHookState, innet_allreduce_hook

    n, k = 4, 64
    fake = FakeInnetSwitch(k)
    fake.add_job(1, n, slot_count=8)
    rng = np.random.default_rng(3)
    grads = [[rng.normal(scale=s, size=size).astype(np.float32) for s, size in ((1e-3, 1000), (5.0, 77))]
             for _ in range(n)]
    with FakeUdpSwitch(fake) as sw:
        udp = UdpTransportConfig("127.0.0.1", sw.address[1], "127.0.0.1")
        agents = [Agent(AgentConfig(JobConfig(1, r, n, 8, k, epoch=1), udp)).start() for r in range(n)]
        try:
            states = [InnetHookState(a, n) for a in agents]

            def rank(r: int) -> list[np.ndarray]:
                futures = [innet_allreduce_hook(states[r], _Bucket(torch.from_numpy(g.copy()))) for g in grads[r]]
                return [f.wait().numpy() for f in futures]

            with ThreadPoolExecutor(n) as pool:
                out = list(pool.map(rank, range(n)))
        finally:
            for a in agents:
                a.close()
    for b in range(2):
        mean = np.mean([grads[r][b] for r in range(n)], axis=0)  # what gloo's allreduce / N gives
        bound = max(float(np.max(np.abs(grads[r][b]))) for r in range(n))
        f = qz.sum_frac_bits(bound, n)
        # each of N values rounded by at most 2**-(f+1); the sum divided by N; float32 rounding
        limit = n * 2.0 ** -(f + 1) / n + 4 * np.finfo(np.float32).eps * bound
        assert limit <= n * bound * 2.0 ** -31 + 4 * np.finfo(np.float32).eps * bound  # docs' bound
        for r in range(n):
            assert np.max(np.abs(out[r][b] - mean)) <= limit
            assert np.array_equal(out[r][b], out[0][b])
    assert all(s.saturated == 0 and s.buckets == 2 for s in states)
