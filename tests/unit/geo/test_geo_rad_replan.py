"""A re-plan continues the compressed links where they were: no second warm-up, and the
error-feedback residuals, shared reference rows and held AdaTopK ratio carried."""

from __future__ import annotations

import numpy as np

from innet.host.geo.compress import CompressionConfig
from innet.host.geo.graph import mlp
from innet.host.geo.rad import merge_link_states, run_threads
from innet.host.geo.stages import Sgd

CONFIG = CompressionConfig("topk", ratio=0.25, row_topk=True, feedback_activations=True, reference="mean",
                           gradients="topk", warmup_steps=2, warmup="int8")
"""Every kind of carried state: residuals both ways, reference rows at both ends, an int8 warm-up."""


def _steps(n: int) -> list[list[dict[str, np.ndarray]]]:
    rng = np.random.default_rng(5)
    return [[{"x": rng.standard_normal((4, 8)), "y": rng.integers(0, 3, 4)} for _ in range(2)] for _ in range(n)]


def _params(graph):  # float64: bit-for-bit comparisons without float32 reassociation worries
    return {n: {k: v.astype(np.float64) for k, v in p.items()} for n, p in graph.init_params(2).items()}


def _run(graph, params, steps, **kw):
    return run_threads(graph, (2,), params, steps, Sgd(lr=0.1), compression=[CONFIG], **kw)


def test_a_replan_with_carried_state_continues_bit_for_bit_without_a_second_warmup() -> None:
    g = mlp([8, 16, 16, 3])
    steps = _steps(6)
    whole = _run(g, _params(g), steps)
    first = _run(g, _params(g), steps[:3])
    state = merge_link_states(first.link_states)
    assert set(state) == {"fwd/residual/relu0", "bwd/residual/relu0", "fwd/reference/relu0", "rx/reference/relu0"}
    assert np.array_equal(state["fwd/reference/relu0"], state["rx/reference/relu0"])  # both ends agree
    rest = _run(g, first.params, steps[3:], first_step=3, link_state=state)
    for n, p in whole.params.items():
        for k, v in p.items():
            assert np.array_equal(rest.params[n][k], v), (n, k)
    assert "int8" not in rest.stats[0].codecs_next and "int8" not in rest.stats[1].codecs_prev
    # without the carried state the same continuation is a different training run
    fresh = _run(g, first.params, steps[3:])
    assert fresh.stats[0].codecs_next.get("int8", 0) > 0  # the warm-up again
    assert any(not np.array_equal(fresh.params[n][k], v) for n, p in whole.params.items() for k, v in p.items())


def test_state_a_value_held_differently_by_two_stages_is_left_out() -> None:
    a = {"fwd/residual/h": np.ones(3), "rx/reference/h": np.zeros((1, 3))}
    b = {"fwd/residual/h": np.full(3, 2.0), "fwd/reference/h": np.zeros((1, 3))}
    merged = merge_link_states([a, b])
    assert set(merged) == {"rx/reference/h", "fwd/reference/h"}


def test_adatopk_held_ratio_is_carried() -> None:
    from innet.host.geo.compress import LinkCompressor

    config = CompressionConfig("adatopk", min_ratio=0.01)
    old = LinkCompressor(config, bandwidth_bps=2e6)
    x = {"h": np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)}
    old.compress(x, budget_s=0.002)
    new = LinkCompressor(config, bandwidth_bps=2.3e6)  # jitter within the band
    new.load_state(old.state(["h"]), ["h"])
    new.compress(x, budget_s=0.002)
    assert new.last_ratio == old.last_ratio


def test_a_stage_file_gives_its_link_state_to_its_own_replica_only(tmp_path) -> None:
    """The worker's ``params_out`` file: parameters, momentum and the link state side by side;
    the link state reaches only the pipeline with the same data seed (replicas' links differ)."""
    from innet.host.geo.stage_process import LINK, LINK_SEED, MOMENTUM, load_link_state, load_params

    path = tmp_path / "r0s1.npz"
    np.savez(path, **{"fc0/w": np.ones((2, 2)), f"{MOMENTUM}fc0/w": np.zeros((2, 2)),
                      f"{LINK}fwd/residual/relu0": np.full((4, 16), 0.5), LINK_SEED: np.asarray(7)})
    assert set(load_params(path)) == {"fc0"} and set(load_params(path, MOMENTUM)) == {"fc0"}
    state = load_link_state(path, 7)
    assert set(state) == {"fwd/residual/relu0"} and np.all(state["fwd/residual/relu0"] == 0.5)
    assert load_link_state(path, 1007) == {}
