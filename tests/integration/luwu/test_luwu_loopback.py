"""LuWu and the DDP hook on the loopback testbed (real innet-switch running innet.p4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch (optional dependency) is not installed")

from innet.wire import quantize as qz  # noqa: E402
from innet.testbed.backends.select import open_testbed  # noqa: E402
from innet.testbed.core.testbed import Testbed, TestbedError  # noqa: E402
from innet.testbed.luwu.hook_check import compare_gradients  # noqa: E402
from innet.testbed.luwu.run import RunConfig, luwu_star, run_training  # noqa: E402
from innet.testbed.luwu.status import NodeStatus  # noqa: E402
from innet.testbed.luwu.train import TrainSpec, run  # noqa: E402

STEPS = 25
LR = 0.01


@pytest.fixture(scope="module")
def testbed() -> Iterator[Testbed]:
    with open_testbed(luwu_star(workers=2, nodes=1), backend="loopback") as tb:
        yield tb


def _local(workers: int) -> tuple[list[float], float]:
    lines: list[dict[str, Any]] = []
    run(TrainSpec(mode="local", world=workers, steps=STEPS, lr=LR), lines.append)
    return [d["loss"] for d in lines if "step" in d], lines[-1]["accuracy"]


@pytest.mark.slow
def test_luwu_mode_trains_like_the_local_adam_baseline(testbed: Testbed, tmp_path: Path) -> None:
    losses, accuracy = _local(2)
    with pytest.raises(TestbedError, match="duplex needs agents with addresses of their own"):
        run_training(testbed, RunConfig(mode="luwu", workers=2, nodes=1, steps=STEPS, duplex=True), tmp_path)
    result = run_training(testbed, RunConfig(mode="luwu", workers=2, nodes=1, steps=STEPS, lr=LR), tmp_path)
    assert not result.errors, result.errors
    assert not result.duplex  # frame tunnels: one agent per host, the one-job schedule
    np.testing.assert_allclose(result.mean_loss, losses, rtol=0, atol=2e-3)
    assert all(abs(f.accuracy - accuracy) <= 0.01 for f in result.finals)
    assert all(f.tensor_bytes_between_steps == 0 for f in result.finals)  # nothing held between steps
    node = result.nodes[0]
    assert isinstance(node, NodeStatus) and node.step == STEPS and node.state == "done"


@pytest.mark.slow
def test_ddp_with_the_innet_hook_trains_like_gloo_ddp(testbed: Testbed) -> None:
    losses, accuracy = _local(2)  # = DDP + gloo (mean of the ranks' gradients), computed in one process
    result = run_training(testbed, RunConfig(mode="ddp-innet", workers=2, steps=STEPS, lr=LR))
    assert not result.errors, result.errors
    np.testing.assert_allclose(result.mean_loss, losses, rtol=0, atol=2e-3)
    assert all(abs(f.accuracy - accuracy) <= 0.01 and f.comm is not None and f.comm.saturated == 0 for f in result.finals)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["fsdp", "fsdp-offload"])
def test_fsdp2_trains_like_the_local_adam_baseline_on_shards(testbed: Testbed, mode: str) -> None:
    losses, accuracy = _local(2)  # FSDP2's reduce-scatter averages like DDP; Adam is per element
    result = run_training(testbed, RunConfig(mode=mode, workers=2, steps=STEPS, lr=LR))
    assert not result.errors, result.errors
    np.testing.assert_allclose(result.mean_loss, losses, rtol=0, atol=2e-3)
    for f in result.finals:
        assert abs(f.accuracy - accuracy) <= 0.01
        # half of parameters, gradients and both moments, plus two unsharded layers in flight:
        # less than DDP + Adam's 4 x 4P
        assert f.tensor_bytes_peak < 16 * f.params


@pytest.mark.slow
def test_the_innet_hook_averages_like_gloo_ddp_within_the_quantization_bound(testbed: Testbed,
                                                                              tmp_path: Path) -> None:
    n, steps = 2, 5
    ranks = compare_gradients(testbed, workers=n, steps=steps, out_dir=tmp_path)
    eps = float(np.finfo(np.float32).eps)
    for s in range(steps):
        local = np.stack([r.local[s] for r in ranks])
        bound = float(np.max(np.abs(local)))  # B: the largest |g| over the workers (one DDP bucket here)
        f = qz.sum_frac_bits(bound, n)
        limit = 2.0 ** -(f + 1) + 4 * eps * bound  # N values off by 2**-(f+1) each, summed, divided by N
        assert limit <= n * bound * 2.0 ** -31 + 4 * eps * bound  # the bound docs/luwu.md states
        for r in ranks:
            np.testing.assert_allclose(r.gloo[s], local.mean(axis=0), rtol=0, atol=4 * eps * bound)
            assert np.max(np.abs(r.innet[s] - r.gloo[s])) <= limit, (s, np.max(np.abs(r.innet[s] - r.gloo[s])), limit)
            assert np.array_equal(r.innet[s], ranks[0].innet[s])  # every rank got the same average
        assert np.max(np.abs(ranks[0].innet[s] - ranks[0].gloo[s])) > 0  # quantized, not gloo's floats


@pytest.mark.slow
def test_a_killed_optimizer_node_is_named_by_the_workers(testbed: Testbed, tmp_path: Path) -> None:
    deadline = 2.0
    result = run_training(testbed, RunConfig(mode="luwu", workers=2, nodes=1, steps=500, lr=LR,
                                             chunk_deadline=deadline, kill_node_at_step=2, timeout=20), tmp_path)
    failed = {name: text for name, text in result.errors.items() if name.startswith("train-")}
    assert set(failed) == {"train-h1", "train-h2"}
    for text in failed.values():
        assert "optimizer node o1 (rank 2) did not answer" in text
    # reported at the chunk deadline (the first chunk the node no longer answers), not at the
    # run's timeout; slack for scheduling on a loaded machine
    assert result.killed_at is not None and set(result.failed_at) == set(failed)
    for name, at in result.failed_at.items():
        assert 0 < at - result.killed_at <= deadline + 1.5, (name, at - result.killed_at)
