"""LuWu and the DDP hook on the loopback testbed (real innet-switch running innet.p4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch (optional dependency) is not installed")

from innet.testbed.loopback import LoopbackTestbed  # noqa: E402
from innet.testbed.luwu import RunConfig, luwu_star, run_training  # noqa: E402
from innet.testbed.luwu_train import TrainSpec, run  # noqa: E402

STEPS = 25
LR = 0.01


@pytest.fixture(scope="module")
def testbed() -> Iterator[LoopbackTestbed]:
    with LoopbackTestbed(luwu_star(workers=2, nodes=1)) as tb:
        yield tb


def _local(workers: int) -> tuple[list[float], float]:
    lines: list[dict[str, Any]] = []
    run(TrainSpec(mode="local", world=workers, steps=STEPS, lr=LR), lines.append)
    return [d["loss"] for d in lines if "step" in d], lines[-1]["accuracy"]


@pytest.mark.slow
def test_luwu_mode_trains_like_the_local_adam_baseline(testbed: LoopbackTestbed, tmp_path: Path) -> None:
    losses, accuracy = _local(2)
    result = run_training(testbed, RunConfig(mode="luwu", workers=2, nodes=1, steps=STEPS, lr=LR), tmp_path)
    assert not result.errors, result.errors
    np.testing.assert_allclose(result.mean_loss, losses, rtol=0, atol=2e-3)
    assert all(abs(f["accuracy"] - accuracy) <= 0.01 for f in result.finals)
    assert all(f["tensor_bytes_between_steps"] == 0 for f in result.finals)  # nothing held between steps
    assert result.nodes[0]["step"] == STEPS and result.nodes[0]["state"] == "done"


@pytest.mark.slow
def test_ddp_with_the_innet_hook_trains_like_gloo_ddp(testbed: LoopbackTestbed) -> None:
    losses, accuracy = _local(2)  # = DDP + gloo (mean of the ranks' gradients), computed in one process
    result = run_training(testbed, RunConfig(mode="ddp-innet", workers=2, steps=STEPS, lr=LR))
    assert not result.errors, result.errors
    np.testing.assert_allclose(result.mean_loss, losses, rtol=0, atol=2e-3)
    assert all(abs(f["accuracy"] - accuracy) <= 0.01 and f["comm"]["saturated"] == 0 for f in result.finals)


@pytest.mark.slow
def test_a_killed_optimizer_node_is_named_by_the_workers(testbed: LoopbackTestbed, tmp_path: Path) -> None:
    result = run_training(testbed, RunConfig(mode="luwu", workers=2, nodes=1, steps=500, lr=LR,
                                             chunk_deadline=2.0, kill_node_at_step=2, timeout=20), tmp_path)
    failed = {name: text for name, text in result.errors.items() if name.startswith("train-")}
    assert set(failed) == {"train-h1", "train-h2"}
    for text in failed.values():
        assert "optimizer node o1 (rank 2) did not answer" in text
