"""Checks shared by the loopback and Mininet rail tests: exact sums, bit-exact optimizer steps."""

from __future__ import annotations

from typing import Any

import numpy as np

from innet.testbed.core.testbed import WorkerResult
from innet.testbed.rail import workloads
from innet.testbed.rail.testbed import RailTestbed


def assert_exact(results: list[list[WorkerResult]], sizes: list[int], gpus: int) -> None:
    assert len(results) == gpus
    assert [[r.elements for r in per_rank] for per_rank in results] == [sizes] * gpus
    assert all(r.ok for per_rank in results for r in per_rank), results


def assert_training_bit_exact(tb: RailTestbed, mode: str, steps: int = 3, param_chunks: int = 5,
                              lr: float = 0.05, beta: float = 0.9) -> None:
    initial = np.random.default_rng(3).integers(-(1 << 20), 1 << 20, param_chunks * tb.options.k, dtype=np.int32)
    out = workloads.training(tb, mode, steps=steps, param_chunks=param_chunks, lr=lr, beta=beta, initial=initial)
    expect = workloads.predict_training(tb, out, mode, steps)
    assert sorted(out.finals) == list(range(tb.grid.x * tb.grid.y))
    for rank, final in out.finals.items():
        assert np.array_equal(final, expect), f"rank {rank}"
    assert np.array_equal(out.registers, expect)
    assert not np.array_equal(expect, initial)


def assert_digits_trained(tb: RailTestbed, steps: int = 20, tolerance: float = 0.03,
                          **config_fields: Any) -> dict[str, float]:
    """Digits training on the rail switches: every GPU ends with the switches' registers,
    bit-exact with the sharded numpy model; accuracy near float32 training's. The accuracies."""
    from innet.testbed.rail.grid import shard_bounds
    from innet.testbed.rail.digits import DigitsConfig, accuracy, float_accuracy, simulate

    config = DigitsConfig(gpus=tb.grid.x * tb.grid.y, steps=steps, **config_fields)
    out = workloads.digits(tb, config, timeout=900)
    expect = simulate(config, out.initial, shard_bounds(out.initial.size, tb.options.k, tb.grid.x),
                      [out.jobs[rail] for rail in tb.grid.rails])
    assert sorted(out.finals) == list(range(config.gpus))
    for rank, final in out.finals.items():
        assert np.array_equal(final, expect), f"rank {rank}"
    assert np.array_equal(out.registers, expect)
    got, reference = accuracy(config, expect), float_accuracy(config)
    assert got >= reference - tolerance and got > 0.8, (got, reference)
    return {"accuracy": got, "float_reference": reference}
