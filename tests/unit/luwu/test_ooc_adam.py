"""Out-of-core Adam/AdamW against torch.optim (foreach), step by step and across a reopen;
the C kernel against its numpy twin; crash consistency of the two generations; refusal of a
corrupt state or one of another model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from innet.host.luwu.ooc_adam import STATE_FILE, AdamConfig, AdamState, AdamStateError, checksum_numpy

torch = pytest.importorskip("torch", reason="torch (optional dependency) is not installed")

CONFIGS = [
    AdamConfig(lr=1e-2),
    AdamConfig(lr=3e-3, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.1),
    AdamConfig(lr=1e-2, weight_decay=0.05, decoupled=True),
    AdamConfig(lr=1e-2, beta1=0.3),  # lerp weight >= 0.5: torch's other formula
]
IDS = ["adam", "adam-l2", "adamw", "adam-beta1-0.3"]


def _torch_run(initial: np.ndarray, grads: list[np.ndarray], config: AdamConfig) -> list[tuple[np.ndarray, ...]]:
    p = torch.nn.Parameter(torch.from_numpy(initial.copy()))
    cls = torch.optim.AdamW if config.decoupled else torch.optim.Adam
    opt = cls([p], lr=config.lr, betas=(config.beta1, config.beta2), eps=config.eps,
              weight_decay=config.weight_decay, foreach=True)
    out = []
    for g in grads:
        p.grad = torch.from_numpy(g.copy())
        opt.step()
        state = opt.state[p]
        out.append((p.detach().numpy().copy(), state["exp_avg"].numpy().copy(), state["exp_avg_sq"].numpy().copy()))
    return out


def _assert_like_torch(state: AdamState, expected: tuple[np.ndarray, ...], config: AdamConfig, steps: int) -> None:
    """Tolerance: torch's sqrt on an MKL build is not correctly rounded (ours is IEEE), so a
    parameter may differ by about one ulp of itself plus one of each step's update; without
    L2 decay (where p feeds back into the moments) the moments are bit-identical."""
    p, (m, v) = state.read(), state.read_moments()
    tp, tm, tv = expected
    bound = 2 * np.spacing(np.abs(tp)) + steps * config.lr * 2.0 ** -20
    assert np.all(np.abs(p - tp) <= bound), float(np.max(np.abs(p - tp) - bound))
    if config.weight_decay == 0 or config.decoupled:
        assert np.array_equal(m.view(np.int32), tm.view(np.int32))
        assert np.array_equal(v.view(np.int32), tv.view(np.int32))
    else:
        np.testing.assert_allclose(m, tm, rtol=1e-5, atol=1e-9)
        np.testing.assert_allclose(v, tv, rtol=1e-5, atol=1e-12)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_equals_torch_foreach_step_by_step_across_reopen(tmp_path: Path, config: AdamConfig) -> None:
    rng = np.random.default_rng(1)
    n = 20_011  # not a multiple of the vector width, the blocks or the pieces
    initial = rng.normal(size=n).astype(np.float32)
    grads = [rng.normal(scale=s, size=n).astype(np.float32) for s in (1.0, 0.1, 3.0, 1e-3, 0.5, 2.0)]
    expected = _torch_run(initial, grads, config)
    state = AdamState.create(tmp_path / "s", initial, config, block=997, model="m", threads=2)
    for t, g in enumerate(grads):
        if t == 3:  # the node restarts: reopen from disk (checksums verified), resume at the committed step
            state.close()
            state = AdamState.open(tmp_path / "s", block=128, model="m")
            assert state.step == 3 and state.config == config
        # one step applied in pieces, as layer gradients arrive (last layer first)
        state.update(10_000, g[10_000:])
        state.update(9_000, g[9_000:10_000])
        state.update(0, g[:9_000])
        assert state.commit_step() == t + 1
        _assert_like_torch(state, expected[t], config, t + 1)


def test_the_c_kernel_and_its_numpy_twin_agree_bit_for_bit(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    initial = rng.normal(size=5003).astype(np.float32)
    grads = [rng.normal(scale=s, size=5003).astype(np.float32) for s in (1.0, 1e-3, 10.0)]
    for config in CONFIGS:
        a = AdamState.create(tmp_path / f"c{len(list(tmp_path.iterdir()))}", initial, config, block=300, native=True)
        b = AdamState.create(tmp_path / f"n{len(list(tmp_path.iterdir()))}", initial, config, block=300, native=False)
        assert a.native and not b.native
        for g in grads:
            for s in (a, b):
                s.update(2000, g[2000:])
                s.update(0, g[:2000])
                s.commit_step()
        for x, y in zip((a.read(), *a.read_moments()), (b.read(), *b.read_moments())):
            assert np.array_equal(x.view(np.int32), y.view(np.int32)), config
        assert json.loads((a.directory / STATE_FILE).read_text())["checksums"] == \
            json.loads((b.directory / STATE_FILE).read_text())["checksums"]


def test_a_step_interrupted_midway_leaves_the_committed_step_intact(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    initial = rng.normal(size=3000).astype(np.float32)
    grads = [rng.normal(size=3000).astype(np.float32) for _ in range(3)]
    config = AdamConfig(lr=0.05)
    ref = AdamState.create(tmp_path / "ref", initial, config, block=256)
    state = AdamState.create(tmp_path / "s", initial, config, block=256)
    for s in (ref, state):
        s.update(0, grads[0])
        s.commit_step()
    state.update(1500, grads[1][1500:])  # half of step 2, then the process dies
    state.close()
    del state
    state = AdamState.open(tmp_path / "s")
    assert state.step == 1
    assert np.array_equal(state.read(), ref.read())
    for g in grads[1:]:  # the step runs again from the same gradients: bit-identical
        for s in (ref, state):
            s.update(1500, g[1500:])
            s.update(0, g[:1500])
            s.commit_step()
    assert np.array_equal(state.read().view(np.int32), ref.read().view(np.int32))


def test_rollback_returns_to_the_previous_step_while_it_is_intact(tmp_path: Path) -> None:
    initial = np.arange(100, dtype=np.float32)
    state = AdamState.create(tmp_path / "s", initial, AdamConfig(lr=0.1), block=16)
    state.update(0, np.ones(100, np.float32))
    state.commit_step()
    after_one = state.read()
    state.update(0, np.ones(100, np.float32))
    state.commit_step()
    assert state.rollback() == 1
    assert np.array_equal(AdamState.open(tmp_path / "s").read(), after_one)
    with pytest.raises(AdamStateError, match=r"step 1 cannot go back to 0"):
        state.rollback()  # only one generation back
    state.update(0, np.ones(50, np.float32))  # a step that leaves 50..99 alone
    state.commit_step()
    assert np.array_equal(state.read()[50:], after_one[50:])
    state.update(0, np.ones(50, np.float32))  # the older generation is being overwritten
    with pytest.raises(AdamStateError, match=r"state\.json: step 2 cannot go back to 1"):
        state.rollback()


def test_working_set_is_bounded_and_sparse_moments(tmp_path: Path) -> None:
    state = AdamState.create(tmp_path / "s", np.ones(1 << 16, np.float32), AdamConfig(), block=1024)
    assert state.working_set_bytes == 3 * 4 * 1024
    assert state.bytes_on_disk < 2 * 3 * 4 * (1 << 16) // 4  # moments and generation 1: sparse zeros
    m, v = state.read_moments()
    assert not m.any() and not v.any()


def test_checksum_is_additive_and_sees_one_changed_word() -> None:
    x = np.random.default_rng(4).normal(size=1000).astype(np.float32)
    whole = checksum_numpy(x, 0)
    assert whole == (checksum_numpy(x[:300], 0) + checksum_numpy(x[300:], 300)) % (1 << 64)
    y = x.copy()
    y.view(np.uint32)[777] ^= 1 << 31
    assert checksum_numpy(y, 0) != whole


def test_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(AdamStateError, match=r"beta2=1\.0: must be within \[0, 1\)"):
        AdamConfig(beta2=1.0)
    with pytest.raises(AdamStateError, match="no state.json"):
        AdamState.open(tmp_path / "none")
    state = AdamState.create(tmp_path / "s", np.ones(10, np.float32), AdamConfig(), model="model A")
    with pytest.raises(AdamStateError, match="exists already"):
        AdamState.create(tmp_path / "s", np.zeros(10, np.float32), AdamConfig())
    with pytest.raises(AdamStateError, match=r"range 8\.\.11 is outside the shard's 0\.\.9"):
        state.update(8, np.zeros(4, np.float32))
    with pytest.raises(AdamStateError, match="non-finite gradient"):
        state.update(0, np.array([np.nan], np.float32))
    state.update(0, np.zeros(4, np.float32))
    with pytest.raises(AdamStateError, match=r"range 2\.\.5 overlaps 0\.\.3, already updated in step 1"):
        state.update(2, np.zeros(4, np.float32))
    state.close()
    s = tmp_path / "s"
    with pytest.raises(AdamStateError, match=r"s/state\.json: belongs to model 'model A', this node's is 'model B'"):
        AdamState.open(s, model="model B")
    params = s / "params.0.f32"
    raw = bytearray(params.read_bytes())
    raw[13] ^= 0x40
    params.write_bytes(bytes(raw))
    corrupt = r"s/params\.0\.f32: checksum \w+ is not the committed \w+ \(the file is corrupt\)"
    with pytest.raises(AdamStateError, match=corrupt):
        AdamState.open(s)
    (s / "exp_avg.1.f32").write_bytes(b"x")
    with pytest.raises(AdamStateError, match=r"exp_avg\.1\.f32: expected 40 bytes, found 1"):
        AdamState.open(s)
    (s / STATE_FILE).write_text("{not json")
    with pytest.raises(AdamStateError, match=r"s/state\.json: not an innet-adam/2 file"):
        AdamState.open(s)
