"""ModelInNetwork (LuWu mode) over a fake switch follows DDP + torch Adam's loss curve."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from innet.host.luwu.plan import LuwuPlan
from innet.host.luwu.worker import LuwuWorker
from innet.host.luwu.ooc_adam import AdamConfig
from innet.host.luwu.node import NodeConfig, OptimizerNode
from innet.host.agent.transport import UdpTransportConfig
from testkit.fake_innet_switch import DataplaneUdpSwitch

torch = pytest.importorskip("torch", reason="torch (optional dependency) is not installed")

K = 64


def _mlp() -> "torch.nn.Module":
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))


@pytest.mark.slow
def test_luwu_mode_matches_torch_adam_and_drops_parameters(tmp_path: Path) -> None:
    from innet.host.training.model import load_digits_dataset
    from innet.host.luwu.model_in_network import ModelInNetwork, flat_parameters, layer_table

    torch.set_num_threads(1)
    n, steps, batch = 2, 8, 32
    data = load_digits_dataset(seed=0)
    x, y = torch.from_numpy(data.x_train), torch.from_numpy(data.y_train)
    adam = AdamConfig(lr=0.01)
    # reference: one process, torch Adam on the union of the workers' batches (= DDP's mean)
    ref = _mlp()
    opt = torch.optim.Adam(ref.parameters(), lr=adam.lr)
    ref_losses = []
    for s in range(steps):
        idx = torch.arange(s * batch * n, (s + 1) * batch * n)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ref(x[idx]), y[idx])
        loss.backward()
        opt.step()
        ref_losses.append(loss.item())
    model = _mlp()
    plan = LuwuPlan(job=1, num_workers=n, nodes=("o1",), layer_sizes=tuple(l.size for l in layer_table(model)),
                    epoch=1, window=8, k=K)
    np.save(tmp_path / "init.npy", flat_parameters(model))
    losses = np.zeros((n, steps))
    between: list[int] = []
    peaks: list[int] = []
    errors: list[BaseException] = []
    with DataplaneUdpSwitch(K) as sw:
        sw.add_job(1, plan.num_workers, plan.window, plan.owner_ranges())
        udp = UdpTransportConfig("127.0.0.1", sw.address[1], "127.0.0.1")
        node = OptimizerNode(NodeConfig(plan, 0, str(tmp_path / "o1"), {}, steps, adam, str(tmp_path / "init.npy")), udp)

        def worker(rank: int) -> None:
            try:
                with LuwuWorker(plan, rank, udp) as w:
                    mnet = ModelInNetwork(_mlp(), w, pull_timeout=30)
                    for s in range(steps):
                        idx = torch.arange(s * batch * n + rank * batch, s * batch * n + (rank + 1) * batch)
                        loss = torch.nn.functional.cross_entropy(mnet.model(x[idx]), y[idx])
                        loss.backward()
                        mnet.step()
                        losses[rank, s] = loss.item()
                        between.append(mnet.resident_bytes)
                    peaks.append(mnet.peak_resident_bytes)
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=node.run)] + [threading.Thread(target=worker, args=(r,)) for r in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors
    mean = losses.mean(axis=0)
    np.testing.assert_allclose(mean, ref_losses, rtol=0, atol=2e-3)
    assert set(between) == {0}  # no parameters held between steps
    full = 4 * plan.total
    assert all(0 < p <= full for p in peaks)
