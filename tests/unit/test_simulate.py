"""innet.wire.switch_model against hand-computed fixed-point steps."""

from __future__ import annotations

import numpy as np

from innet.wire import switch_model as sim
from innet.wire import Mode


def test_wrap32() -> None:
    assert list(sim.wrap32([2 ** 31, -(2 ** 31) - 1, 2 ** 32 + 5, -1])) == [-(2 ** 31), 2 ** 31 - 1, 5, -1]


def test_wrapping_sum() -> None:
    out = sim.wrapping_sum([np.array([2 ** 31 - 1, 5], np.int32), np.array([1, -7], np.int32)])
    assert out.dtype == np.int32 and list(out) == [-(2 ** 31), -2]


def test_mul_shift_is_arithmetic_floor() -> None:
    # 3 * -5 = -15; -15 >> 2 = floor(-3.75) = -4 (not -3 as truncation would give)
    assert list(sim.mul_shift(3, np.array([-5, 5], np.int32), 2)) == [-4, 3]
    # int64 product: (2**31-1)**2 does not overflow before the shift
    big = sim.mul_shift(2 ** 31 - 1, np.array([2 ** 31 - 1], np.int32), 31)
    assert int(big[0]) == ((2 ** 31 - 1) ** 2) >> 31


def test_sgd_step_by_hand() -> None:
    w = np.array([1000, -1000, 0], np.int32)
    g = np.array([10, 10, -3], np.int32)
    # lr=3, shift=2: (30>>2)=7, (30>>2)=7, (-9>>2)=-3
    assert list(sim.sgd_step(w, g, 3, 2)) == [993, -1007, 3]
    # wrap: w at int32 min minus a positive step wraps to max
    assert list(sim.sgd_step(np.array([-(2 ** 31)], np.int32), np.array([4], np.int32), 1, 2)) == [2 ** 31 - 1]


def test_momentum_step_by_hand() -> None:
    w = np.array([100, 100], np.int32)
    m = np.array([8, -8], np.int32)
    g = np.array([1, 1], np.int32)
    # beta=3, shift 2: (24>>2)=6, (-24>>2)=-6; m = 7, -5
    # lr=1, shift 1: 7>>1 = 3, -5>>1 = -3; w = 97, 103
    w2, m2 = sim.momentum_step(w, m, g, 1, 1, 3, 2)
    assert list(m2) == [7, -5] and list(w2) == [97, 103]


def test_switch_model_rounds() -> None:
    model = sim.SwitchModel(Mode.MOMENTUM, np.array([100, 100], np.int32), lr=1, lr_shift=1,
                            beta=3, beta_shift=2)
    r1 = model.step([np.array([4, -4], np.int32), np.array([4, -4], np.int32)])
    assert list(model.momentum) == [8, -8] and list(r1) == [96, 104]
    r2 = model.step([np.array([1, 1], np.int32)])
    assert list(r2) == [93, 107]
    s = sim.SwitchModel(Mode.SUM, np.zeros(0, np.int32))
    assert list(s.step([np.array([1, 2], np.int32), np.array([3, 4], np.int32)])) == [4, 6]
