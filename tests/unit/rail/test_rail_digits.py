"""innet.testbed.rail.digits: the digits run's config, padding and its sharded reference."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from innet.host.training.model import SoftmaxRegression, load_digits_dataset
from innet.host.training.loop import simulate_training
from innet.testbed.rail.grid import shard_bounds
from innet.testbed.rail.digits import DigitsConfig, StepLoss, accuracy, mean_losses, simulate


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
    lines = {0: [StepLoss(0, 0, 2.0), StepLoss(0, 1, 1.0)], 1: [StepLoss(1, 0, 4.0), StepLoss(1, 1, 3.0)]}
    assert mean_losses(lines, 2) == [3.0, 2.0]


def test_a_gpus_printed_lines_read_as_one_record() -> None:
    from innet.testbed.rail.workloads import GpuLines

    printed = [{"rank": 2, "ready": 5.0}, StepLoss(2, 0, 1.5, 6.0).to_json(), {"rank": 2, "final": [1, -2], "seconds": 1}]
    assert list(printed[1]) == ["rank", "step", "loss", "time"]  # the worker's line, keys in this order
    g = GpuLines.from_json_lines(printed)
    assert (g.rank, g.ready, g.steps) == (2, 5.0, (StepLoss(2, 0, 1.5, 6.0),))
    assert g.final is not None and g.final.dtype == np.int32 and g.final.tolist() == [1, -2]
