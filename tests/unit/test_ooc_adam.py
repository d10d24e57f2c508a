"""Out-of-core Adam/AdamW equals torch.optim step by step, also across a reopen (restart)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from innet.host.luwu.ooc_adam import AdamConfig, AdamState, AdamStateError

torch = pytest.importorskip("torch", reason="torch (optional dependency) is not installed")


def _torch_run(initial: np.ndarray, grads: list[np.ndarray], config: AdamConfig) -> list[np.ndarray]:
    p = torch.nn.Parameter(torch.from_numpy(initial.copy()))
    cls = torch.optim.AdamW if config.decoupled else torch.optim.Adam
    opt = cls([p], lr=config.lr, betas=(config.beta1, config.beta2), eps=config.eps,
              weight_decay=config.weight_decay)
    out = []
    for g in grads:
        p.grad = torch.from_numpy(g.copy())
        opt.step()
        out.append(p.detach().numpy().copy())
    return out


@pytest.mark.parametrize("config", [
    AdamConfig(lr=1e-2),
    AdamConfig(lr=3e-3, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.1),
    AdamConfig(lr=1e-2, weight_decay=0.05, decoupled=True),
], ids=["adam", "adam-l2", "adamw"])
def test_equals_torch_step_by_step_across_reopen(tmp_path: Path, config: AdamConfig) -> None:
    rng = np.random.default_rng(1)
    n = 1000
    initial = rng.normal(size=n).astype(np.float32)
    grads = [rng.normal(scale=s, size=n).astype(np.float32) for s in (1.0, 0.1, 3.0, 1e-3, 0.5, 2.0)]
    expected = _torch_run(initial, grads, config)
    state = AdamState.create(tmp_path / "s", initial, config, block=97)  # blocks not aligned to layers
    for t, g in enumerate(grads):
        if t == 3:  # the node restarts: reopen from disk, resume at the committed step
            del state
            state = AdamState.open(tmp_path / "s", block=128)
            assert state.step == 3 and state.config == config
        # one step applied in pieces, as layer gradients arrive (last layer first)
        state.update(600, g[600:])
        state.update(0, g[:600])
        assert state.commit_step() == t + 1
        np.testing.assert_allclose(state.read(), expected[t], rtol=1e-6, atol=1e-7)


def test_working_set_is_bounded_and_sparse_moments(tmp_path: Path) -> None:
    state = AdamState.create(tmp_path / "s", np.ones(1 << 16, np.float32), AdamConfig(), block=1024)
    assert state.working_set_bytes == 3 * 4 * 1024
    assert state.bytes_on_disk < 3 * 4 * (1 << 16)  # moments are sparse zeros until the first step
    m, v = state.read_moments()
    assert not m.any() and not v.any()


def test_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(AdamStateError, match=r"beta2=1\.0: must be within \[0, 1\)"):
        AdamConfig(beta2=1.0)
    with pytest.raises(AdamStateError, match="no state.json"):
        AdamState.open(tmp_path / "none")
    state = AdamState.create(tmp_path / "s", np.zeros(10, np.float32), AdamConfig())
    with pytest.raises(AdamStateError, match="exists already"):
        AdamState.create(tmp_path / "s", np.zeros(10, np.float32), AdamConfig())
    with pytest.raises(AdamStateError, match=r"range 8\.\.11 is outside the shard's 0\.\.9"):
        state.update(8, np.zeros(4, np.float32))
    with pytest.raises(AdamStateError, match="non-finite gradient"):
        state.update(0, np.array([np.nan], np.float32))
    (tmp_path / "s" / "exp_avg.f32").write_bytes(b"x")
    with pytest.raises(AdamStateError, match=r"exp_avg\.f32: expected 40 bytes, found 1"):
        AdamState.open(tmp_path / "s")
