"""Data parallel across sites (baseline a): replicas stay identical and match one process."""

from __future__ import annotations


import numpy as np
import pytest

from innet.host.geo.channel import LinkShape
from innet.host.geo.dataparallel import DataParallelError, train
from innet.host.geo.graph import mlp
from innet.host.geo.stages import Sgd, SgdState, Stage, partition


def _batches(seed: int):
    rng = np.random.default_rng(seed)
    while True:  # a learnable task: the label is the largest of the first four inputs
        xs = [rng.standard_normal((8, 16)).astype(np.float32) for _ in range(2)]
        yield [{"x": x, "y": x[:, :4].argmax(axis=1)} for x in xs]


def test_dense_data_parallel_equals_one_process_on_the_mean_gradient() -> None:
    g = mlp([16, 32, 4])
    params = g.init_params(0)
    seen: list[float] = []
    train(g, params, 3, [_batches(s) for s in range(3)], 3, Sgd(0.1, 0.0), lambda i, j: LinkShape(50.0, 1.0),
          evaluate=lambda p: seen.append(float(p["fc0"]["w"].sum())) or 0.0, eval_every=3)
    # reference: one process averaging the three sites' gradients
    ref = {n: {k: v.copy() for k, v in p.items()} for n, p in params.items()}
    stage, opt = Stage(g, partition(g, ())[0], ref), SgdState(Sgd(0.1, 0.0))
    its = [_batches(s) for s in range(3)]
    for _ in range(3):
        total: dict = {}
        for it in its:
            mbs = next(it)
            for mb, feeds in enumerate(mbs):
                stage.forward(mb, {}, feeds)
                stage.backward(mb, {}, loss_scale=1 / len(mbs))
            for n, p in stage.take_grads().items():
                for k, v in p.items():
                    total.setdefault(n, {})[k] = total.get(n, {}).get(k, 0) + v.astype(np.float64)
        opt.step(stage.params, {n: {k: (v / 3).astype(np.float32) for k, v in p.items()} for n, p in total.items()})
    assert seen[-1] == pytest.approx(float(ref["fc0"]["w"].sum()), rel=1e-4)


def test_topk_data_parallel_sends_a_fraction_and_still_learns() -> None:
    g = mlp([16, 32, 4])
    log = train(g, g.init_params(0), 2, [_batches(s) for s in range(2)], 40, Sgd(0.1, 0.9),
                lambda i, j: None, ratio=0.1)
    dense = train(g, g.init_params(0), 2, [_batches(s) for s in range(2)], 40, Sgd(0.1, 0.9), lambda i, j: None)
    assert log.sent_bytes < 0.35 * dense.sent_bytes  # value + index per kept element, plus headers
    assert np.mean([l for _, l in log.steps[-5:]]) < 0.8 * np.mean([l for _, l in log.steps[:5]])


def test_one_site_is_refused() -> None:
    g = mlp([16, 4])
    with pytest.raises(DataParallelError, match="1 site; need at least 2"):
        train(g, g.init_params(0), 1, [_batches(0)], 1, Sgd(0.1, 0.0), lambda i, j: None)
