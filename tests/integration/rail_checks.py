"""Checks shared by the loopback and Mininet rail tests: exact sums, bit-exact optimizer steps."""

from __future__ import annotations

from typing import Any

import numpy as np

from innet.host.simulate import SwitchModel
from innet.host.wire import Mode
from innet.testbed.bringup import WorkerResult
from innet.testbed.rail import shard_bounds
from innet.testbed.rail_testbed import RailTestbed
from innet.testbed.rail_worker import train_gradient


def assert_exact(results: list[list[WorkerResult]], sizes: list[int], gpus: int) -> None:
    assert len(results) == gpus
    assert [[r.elements for r in per_rank] for per_rank in results] == [sizes] * gpus
    assert all(r.ok for per_rank in results for r in per_rank), results


def expected_training(tb: RailTestbed, out: dict[str, Any], mode: str, steps: int) -> np.ndarray:
    """The parameters the numpy switch model gives for the same gradients, shard by shard,
    with each rail switch's installed optimizer integers."""
    initial = out["initial"]
    bounds = shard_bounds(initial.size, tb.options.k, tb.grid.x)
    gpus = tb.grid.x * tb.grid.y
    grads = [[train_gradient(r, s, initial.size) for r in range(gpus)] for s in range(steps)]
    parts = []
    for g, rail in enumerate(tb.grid.rails):
        info = out["jobs"][rail]
        a, b = bounds[g]
        model = SwitchModel(Mode[mode.upper()], initial[a:b].copy(), info.lr, info.lr_shift, info.beta,
                            info.beta_shift)
        for s in range(steps):
            model.step([grads[s][r][a:b] for r in range(gpus)])
        parts.append(model.params)
    return np.concatenate(parts)


def assert_training_bit_exact(tb: RailTestbed, mode: str, steps: int = 3, param_chunks: int = 5,
                              lr: float = 0.05, beta: float = 0.9) -> None:
    initial = np.random.default_rng(3).integers(-(1 << 20), 1 << 20, param_chunks * tb.options.k, dtype=np.int32)
    out = tb.run_training(mode, steps=steps, param_chunks=param_chunks, lr=lr, beta=beta, initial=initial)
    expect = expected_training(tb, out, mode, steps)
    assert sorted(out["finals"]) == list(range(tb.grid.x * tb.grid.y))
    for rank, final in out["finals"].items():
        assert np.array_equal(final, expect), f"rank {rank}"
    assert np.array_equal(out["registers"], expect)
    assert not np.array_equal(expect, initial)
