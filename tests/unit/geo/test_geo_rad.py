"""OP-DAG partitions and remote autodiff in one process: a pipeline of stages over in-process
links trains exactly like the whole graph in one place."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from innet.host.geo.channel import LinkShape
from innet.host.geo.graph import GraphError, gpt, loss_and_grads, mlp
from innet.host.geo.rad import run_threads
from innet.host.geo.stages import Sgd, SgdState, boundaries, partition


def _as64(params):
    return {n: {k: v.astype(np.float64) for k, v in p.items()} for n, p in params.items()}


def _reference(graph, params, steps, sgd):
    opt = SgdState(sgd)
    losses = []
    for mbs in steps:
        acc: dict = {}
        total = 0.0
        for feeds in mbs:
            loss, g = loss_and_grads(graph, feeds, params, scale=1.0 / len(mbs))
            total += loss / len(mbs)
            for n, gp in g.items():
                for k, v in gp.items():
                    acc.setdefault(n, {})[k] = acc.get(n, {}).get(k, 0) + v
        opt.step(params, acc)
        losses.append(total)
    return losses


def _mlp_steps(n_steps: int, microbatches: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [[{"x": rng.standard_normal((4, 8)), "y": rng.integers(0, 3, 4)} for _ in range(microbatches)]
            for _ in range(n_steps)]


def _gpt_steps(n_steps: int, microbatches: int, vocab: int, seq: int, seed: int = 0):
    """The same microbatches every step (so the loss must fall)."""
    rng = np.random.default_rng(seed)
    mbs = []
    for _ in range(microbatches):
        toks = rng.integers(0, vocab, (2, seq + 1))
        mbs.append({"tokens": toks[:, :-1], "targets": toks[:, 1:]})
    return [mbs] * n_steps


def test_boundaries_carry_residuals_through_the_middle_stage() -> None:
    g = gpt(vocab=11, d=8, heads=2, layers=1, seq=4)
    names = [n.name for n in g.nodes]
    # cut after the attention projection and after the second LayerNorm: the residual
    # stream b0res1 is needed by b0res2 in the last stage, so it crosses both boundaries
    cuts = (names.index("b0proj") + 1, names.index("b0ln2") + 1)
    b = boundaries(g, cuts)
    assert set(b[0]) == {"emb", "b0proj"}
    assert set(b[1]) == {"b0res1", "b0ln2"}
    plans = partition(g, cuts)
    assert plans[1].inputs == b[0] and plans[1].outputs == b[1] and plans[2].outputs == ()


def test_partition_rejects_bad_cuts() -> None:
    with pytest.raises(GraphError, match=r"cuts \[3, 2\] must be increasing and within 1..3"):
        partition(mlp([8, 6, 3]), (3, 2))


def test_mlp_pipeline_equals_single_process() -> None:
    g = mlp([8, 16, 12, 3])
    params = _as64(g.init_params(1))
    ref = _as64(g.init_params(1))
    steps = _mlp_steps(5, 3)
    sgd = Sgd(lr=0.2, momentum=0.9)
    ref_losses = _reference(g, ref, steps, sgd)
    result = run_threads(g, (2, 4), params, steps, sgd)
    np.testing.assert_allclose(result.losses, ref_losses, rtol=1e-12)
    for n, p in ref.items():
        for k, v in p.items():
            np.testing.assert_allclose(result.params[n][k], v, rtol=1e-10, atol=1e-12)
    assert all(b > 0 for b in result.bytes_per_link)


def test_gpt_block_pipeline_equals_single_process() -> None:
    g = gpt(vocab=13, d=8, heads=2, layers=2, seq=5)
    params = _as64(g.init_params(2))
    ref = _as64(g.init_params(2))
    steps = _gpt_steps(3, 2, 13, 5)
    sgd = Sgd(lr=0.5)
    ref_losses = _reference(g, ref, steps, sgd)
    names = [n.name for n in g.nodes]
    cuts = (names.index("b0attn") + 1, names.index("b1res1") + 1)
    result = run_threads(g, cuts, params, steps, sgd)
    np.testing.assert_allclose(result.losses, ref_losses, rtol=1e-12)
    for n, p in ref.items():
        for k, v in p.items():
            np.testing.assert_allclose(result.params[n][k], v, rtol=1e-9, atol=1e-12)
    assert ref_losses[-1] < ref_losses[0]


def test_float32_pipeline_within_tolerance_over_shaped_links() -> None:
    g = mlp([8, 16, 3])
    params = g.init_params(3)
    ref = g.init_params(3)
    steps = [[{k: v.astype(np.float32) if k == "x" else v for k, v in mb.items()} for mb in s]
             for s in _mlp_steps(3, 2)]
    sgd = Sgd(lr=0.1)
    _reference(g, ref, steps, sgd)
    result = run_threads(g, (2,), params, steps, sgd, shapes=[LinkShape(bw_mbps=200, delay_ms=1.0)], probe=True)
    for n, p in ref.items():
        for k, v in p.items():
            np.testing.assert_allclose(result.params[n][k], v, rtol=1e-5, atol=1e-6)
    assert result.stats[0].bandwidth_next_bps is not None and result.stats[0].bandwidth_next_bps < 400e6


def test_compression_applies_only_on_the_configured_boundary() -> None:
    from innet.host.geo.compress import CompressionConfig

    g = mlp([8, 64, 64, 3])
    steps = _mlp_steps(4, 2)
    dense = run_threads(g, (2, 4), _as64(g.init_params(1)), steps, Sgd(lr=0.1))
    sparse = run_threads(g, (2, 4), _as64(g.init_params(1)), steps, Sgd(lr=0.1),
                         compression=[CompressionConfig("topk", ratio=0.1), None])
    assert sparse.bytes_per_link[0] < 0.4 * dense.bytes_per_link[0]
    assert sparse.bytes_per_link[1] == pytest.approx(dense.bytes_per_link[1], rel=0.01)  # tags differ slightly
    assert sparse.stats[0].ratios_next == [0.1] * 8 and sparse.stats[1].ratios_prev == [0.1] * 8
    assert sparse.stats[1].ratios_next == [1.0] * 8
    ada = run_threads(g, (2, 4), _as64(g.init_params(1)), steps, Sgd(lr=0.1), probe=True,
                      shapes=[LinkShape(bw_mbps=5.0, delay_ms=0.0), None],
                      compression=[CompressionConfig("adatopk", min_ratio=0.02), None])
    assert all(0.02 <= r < 1.0 for r in ada.stats[0].ratios_next)


def test_every_stage_learns_the_pipeline_period_from_its_neighbours() -> None:
    """AdaTopK's budget is the slowest stage's compute, which the light stage learns from tags."""
    import threading
    import time

    from innet.host.geo.channel import QueueChannel
    from innet.host.geo.rad import StageRunner
    from innet.host.geo.stages import Stage

    g = mlp([8, 8, 400, 400, 3])  # fc0 relu0 | fc1 relu1 fc2 relu2 fc3 loss: stage 1 is heavy
    plans = partition(g, (2,))
    params = _as64(g.init_params(1))
    a, z = QueueChannel.pair()
    light = StageRunner(Stage(g, plans[0], {n: params[n] for n in plans[0].nodes if n in params}), None, a, Sgd())
    heavy = StageRunner(Stage(g, plans[1], {n: params[n] for n in plans[1].nodes if n in params}), z, None, Sgd())
    # The heavy stage's compute is made slow by a fixed sleep, so the ordering below does not
    # depend on how busy the machine is.
    backward = heavy.stage.backward

    def slow_backward(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.2)
        return backward(*args, **kwargs)

    heavy.stage.backward = slow_backward  # type: ignore[method-assign]
    rng = np.random.default_rng(0)
    steps = [[{"x": rng.standard_normal((64, 8)), "y": rng.integers(0, 3, 64)}] * 2 for _ in range(4)]
    t = threading.Thread(target=lambda: [heavy.step(s, mbs) for s, mbs in enumerate(steps)])
    t.start()
    for s, mbs in enumerate(steps):
        light.step(s, mbs)
    t.join()
    assert heavy._mb_compute is not None and light._mb_compute is not None
    assert heavy._mb_compute >= 0.2 > 3 * light._mb_compute
    assert light.period_s >= 0.2 > 3 * light._mb_compute  # it knows it is not the bottleneck
    assert light._budget(0.0) == light.period_s


def test_backward_compression_can_differ_from_forward() -> None:
    """``compression_bwd`` compresses only the gradients (the ablation's 'gradients only')."""
    from innet.host.geo.compress import CompressionConfig

    g = mlp([8, 16, 3])
    steps = _mlp_steps(2, 2)
    top = CompressionConfig("topk", ratio=0.25)
    r = run_threads(g, (2,), _as64(g.init_params(0)), steps, Sgd(0.1), compression=[None], compression_bwd=[top])
    assert set(r.stats[0].ratios_next) == {1.0} and set(r.stats[1].ratios_prev) == {0.25}
