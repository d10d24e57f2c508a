"""innet.testbed.rail.digits: the digits run's config, padding and its sharded reference."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from innet.host.training.model import SoftmaxRegression, load_digits_dataset
from innet.host.training.loop import simulate_training
from innet.testbed.rail.grid import shard_bounds
from innet.testbed.rail.digits import DigitsConfig, accuracy, mean_losses, simulate


def test_initial_parameters_fill_whole_chunks_with_zero_padding() -> None:
    config = DigitsConfig(gpus=4)
    initial = config.initial(64)
    assert config.param_chunks(64) == 11 and initial.size == 704  # 650 parameters
    assert not initial[650:].any() and initial[:640].any()


def test_sharded_reference_equals_the_single_switch_model_with_the_same_integers() -> None:
    """Sharding the vector over rails changes nothing when every rail holds the same integers."""
    config = DigitsConfig(gpus=4, steps=4)
    opt = config.train_config().optimizer
    job = SimpleNamespace(lr=opt.lr, lr_shift=opt.lr_shift, beta=opt.beta, beta_shift=opt.beta_shift)
    initial = config.initial(64)
    sharded = simulate(config, initial, shard_bounds(initial.size, 64, 3), [job] * 3)
    single = simulate_training(load_digits_dataset(), config.train_config()).params_int
    assert single is not None and np.array_equal(sharded[:SoftmaxRegression().size], single)
    assert not sharded[650:].any()
    assert accuracy(config, sharded) > 0.5


@pytest.mark.parametrize(("fields", "message"), [
    ({"mode": "adam"}, r"digits training mode 'adam': must be sgd or momentum"),
    ({"steps": 0}, r"digits training steps 0: must be >= 1"),
])
def test_bad_config_is_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DigitsConfig(gpus=4, **fields)  # type: ignore[arg-type]


def test_mean_losses_per_step_over_gpus() -> None:
    lines = {0: [{"rank": 0, "step": 0, "loss": 2.0}, {"rank": 0, "step": 1, "loss": 1.0}, {"rank": 0, "final": []}],
             1: [{"rank": 1, "step": 0, "loss": 4.0}, {"rank": 1, "step": 1, "loss": 3.0}]}
    assert mean_losses(lines, 2) == [3.0, 2.0]
