"""innet.host.training.loop: workers training through agents and the fake switch (TEST DOUBLE)."""

from __future__ import annotations

import numpy as np
import pytest

from innet.wire import quantize as qz
from innet.host.agent.agent import AgentConfig
from innet.host.training.model import SoftmaxRegression, digits_arrays, load_digits_dataset
from innet.host.agent.aggregator import JobConfig
from innet.host.training.loop import (TrainConfig, float_training, initial_params, minibatch,
                              simulate_training, train_workers)
from innet.host.agent.transport import UdpTransportConfig
from innet.wire import Mode

from testkit.fake_innet_switch import FakeInnetSwitch, FakeUdpSwitch


@pytest.fixture(scope="module")
def digits():
    return load_digits_dataset()


def test_digits_read_from_the_shipped_csv_equal_scikit_learns_load_digits() -> None:
    from sklearn.datasets import load_digits

    data, target = digits_arrays()
    reference = load_digits()
    assert data.shape == (1797, 64)
    assert np.array_equal(data, reference.data) and np.array_equal(target, reference.target)


def test_gradient_matches_finite_differences(digits) -> None:
    model = SoftmaxRegression()
    params = model.init(1, scale=0.1).astype(np.float64).astype(np.float32)
    x, y = digits.x_train[:20], digits.y_train[:20]
    _, g = model.loss_and_gradient(params, x, y)
    for i in (0, 100, 640, 649):
        e = np.zeros_like(params)
        e[i] = 1e-2
        numeric = (model.loss_and_gradient(params + e, x, y)[0]
                   - model.loss_and_gradient(params - e, x, y)[0]) / 2e-2
        assert abs(numeric - g[i]) < 2e-3


def test_minibatches_are_deterministic_and_sharded(digits) -> None:
    config = TrainConfig(num_workers=2, fixed=qz.FixedPointFormat(16, 20, 2))
    a = minibatch(digits, config, 0, 3)
    assert np.array_equal(a[0], minibatch(digits, config, 0, 3)[0])
    assert not np.array_equal(a[0], minibatch(digits, config, 1, 3)[0])


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="must be SGD or MOMENTUM"):
        TrainConfig(mode=Mode.SUM)
    with pytest.raises(ValueError, match="format is for 4 workers, training uses 2"):
        TrainConfig(num_workers=2)


@pytest.mark.parametrize("mode,lr", [(Mode.SGD, 0.5), (Mode.MOMENTUM, 0.1)])
def test_fixed_point_simulation_tracks_float_training(digits, mode: Mode, lr: float) -> None:
    config = TrainConfig(num_workers=4, mode=mode, lr=lr, steps=60)
    simulated = simulate_training(digits, config)
    reference = float_training(digits, config)
    assert abs(simulated.accuracy - reference.accuracy) <= 0.01
    assert simulated.losses[-1] < 0.6 * simulated.losses[0]


@pytest.mark.parametrize("mode,lr", [(Mode.SGD, 0.5), (Mode.MOMENTUM, 0.1)])
def test_training_through_fake_switch_is_bit_exact(digits, mode: Mode, lr: float) -> None:
    n = 3
    config = TrainConfig(num_workers=n, mode=mode, lr=lr, steps=40, batch_size=16,
                         fixed=qz.FixedPointFormat(16, 20, n))
    model = SoftmaxRegression()
    k, window = 64, 4
    fake_switch = FakeInnetSwitch(k)
    fake_switch.add_job(1, n, window, mode, initial_params(config, model), config.optimizer)
    with FakeUdpSwitch(fake_switch) as fake:
        agents = [AgentConfig(JobConfig(1, r, n, window, k, epoch=1),
                              UdpTransportConfig("127.0.0.1", fake.address[1], "127.0.0.1"),
                              mode, config.fixed) for r in range(n)]
        result = train_workers(digits, config, agents, model)
    expected = simulate_training(digits, config, model)
    assert result.params_int is not None and expected.params_int is not None
    assert np.array_equal(result.params_int, expected.params_int)
    assert result.accuracy == expected.accuracy > 0.85
    reference = float_training(digits, config, model)
    assert abs(result.accuracy - reference.accuracy) <= 0.01
