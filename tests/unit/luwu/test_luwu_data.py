"""The training runs' batches: digits as before, and the synthetic task of the wide model."""

from __future__ import annotations

import numpy as np
import pytest

from innet.testbed.luwu.data import DIGITS, MODELS, WIDE, Batches

torch = pytest.importorskip("torch", reason="torch (optional dependency) is not installed")


def test_the_benchmark_model_has_at_least_10_m_parameters() -> None:
    assert WIDE.params >= 10_000_000 and WIDE.data == "synthetic"
    from innet.testbed.luwu.train import TrainSpec, build_model

    spec = TrainSpec(mode="local", data=WIDE.data, inputs=WIDE.inputs, hidden=WIDE.hidden)
    assert sum(p.numel() for p in build_model(spec).parameters()) == WIDE.params
    assert MODELS["digits"] == DIGITS and "10.51 M params" in WIDE.describe()


def test_synthetic_batches_are_the_same_in_every_process_and_the_union_is_the_local_batch() -> None:
    a = Batches("synthetic", 32, 10, batch=4, world=3, seed=7)
    b = Batches("synthetic", 32, 10, batch=4, world=3, seed=7)
    x1, y1 = a.train(5, range(1, 2))
    x2, y2 = b.train(5, range(1, 2))
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    xu, yu = a.train(5, range(3))
    assert xu.shape == (12, 32) and torch.equal(xu[4:8], x1) and torch.equal(yu[4:8], y1)
    assert not torch.equal(a.train(6, range(1, 2))[0], x1)  # a new batch every step
    xt, yt = a.test()
    assert xt.shape == (1024, 32) and len(set(yt.tolist())) > 5  # the teacher uses most classes


def test_digits_batches_are_the_old_slices_of_the_training_set() -> None:
    from innet.host.training.model import load_digits_dataset

    data = load_digits_dataset(seed=0)
    x, y = Batches("digits", 64, 10, batch=32, world=2, seed=0).train(30, range(1, 2))
    idx = (np.arange(30 * 64 + 32, 30 * 64 + 64)) % data.x_train.shape[0]  # wraps around the set
    np.testing.assert_array_equal(x.numpy(), data.x_train[idx])
    np.testing.assert_array_equal(y.numpy(), data.y_train[idx])


def test_unknown_data_set_is_named() -> None:
    with pytest.raises(ValueError, match="data set 'mnist': expected one of digits, synthetic"):
        Batches("mnist", 64, 10, 1, 1, 0)
