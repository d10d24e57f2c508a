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


def test_dense_data_parallel_gpt_with_momentum_equals_single_site_sgd_on_the_global_batch() -> None:
    """Dense data parallel over three sites is single-site SGD on the three sites' batches
    together (every parameter, momentum on, several microbatches); a larger global batch at
    the same learning rate is what separates it from a pipeline on one site's batch."""
    from innet.host.geo.data import LmTask
    from innet.host.geo.graph import gpt

    g, task = gpt(16, 16, 2, 2, 8), LmTask.make(vocab=16, seq=8, seed=0)
    params, sites, steps, sgd = g.init_params(0), 3, 4, Sgd(0.1, 0.9)
    final: list[dict[str, dict[str, np.ndarray]]] = []
    train(g, params, sites, [task.batches(4, 2, 1000 * i) for i in range(sites)], steps, sgd, lambda i, j: None,
          evaluate=lambda p: final.append({n: {k: v.copy() for k, v in q.items()} for n, q in p.items()}) or 0.0)
    ref = {n: {k: v.copy() for k, v in p.items()} for n, p in params.items()}
    stage, opt = Stage(g, partition(g, ())[0], ref), SgdState(sgd)
    streams = [task.batches(4, 2, 1000 * i) for i in range(sites)]
    for _ in range(steps):
        mbs = [mb for stream in streams for mb in next(stream)]
        for mb, feeds in enumerate(mbs):
            stage.forward(mb, {}, feeds)
            stage.backward(mb, {}, loss_scale=1.0 / len(mbs))
        opt.step(stage.params, stage.take_grads())
    assert sorted(final[-1]) == sorted(stage.params)
    for n, p in stage.params.items():
        for k, v in p.items():
            np.testing.assert_allclose(final[-1][n][k], v, rtol=1e-4, atol=1e-6, err_msg=f"{n}.{k}")
    assert max(float(np.abs(v - params[n][k]).max()) for n, p in stage.params.items() for k, v in p.items()) > 1e-3
