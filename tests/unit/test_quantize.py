"""innet.wire.quantize: sum scale without overflow, saturation, hyperparameter integers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from innet.wire import quantize as qz


@pytest.mark.parametrize("bound", [1.0, 0.3, 3.0, 1e-6, 12345.678, 2.0 ** 20])
@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 32])
def test_sum_scale_is_largest_power_of_two_without_overflow(bound: float, n: int) -> None:
    f = qz.sum_frac_bits(bound, n)
    assert n * bound * 2.0 ** f <= 2 ** 31 - 1
    assert bound * 2.0 ** (f + 1) > (2 ** 31 - 1) // n  # one more bit would not fit
    # worst case: every worker at +bound (and at -bound) sums without wrapping
    for sign in (1, -1):
        q, f2 = qz.quantize_sum(np.full(4, sign * bound), bound, n)
        assert f2 == f and q.saturated == 0
        assert abs(int(q.values[0]) * n) <= 2 ** 31 - 1


def test_sum_scale_exact_values() -> None:
    # N=4, B=1: limit 536870911 = 2**29 - 1, so 2**28 is the largest scale
    assert qz.sum_frac_bits(1.0, 4) == 28
    assert qz.sum_frac_bits(1.0, 1) == 30
    assert qz.sum_frac_bits(2.0 ** 40, 1) == -10
    # rounding must not push a value past the per-worker limit: N=3, limit 715827882
    f = qz.sum_frac_bits(715827882.4, 3)
    assert f == -1


def test_saturation_is_clipped_and_counted_never_wrapped() -> None:
    x = np.array([0.5, 2.0, -3.0, 1.0, -1.0], np.float32)
    q, f = qz.quantize_sum(x, bound=1.0, num_workers=2)
    assert q.saturated == 2
    assert list(q.values) == [2 ** (f - 1), 2 ** f, -(2 ** f), 2 ** f, -(2 ** f)]
    total = q.values.astype(np.int64) * 2
    assert total.max() <= 2 ** 31 - 1 and total.min() >= -(2 ** 31)


def test_round_trip_precision() -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, 1000).astype(np.float32)
    q, f = qz.quantize_sum(x, 1.0, 8)
    back = qz.dequantize(q.values, f)
    assert back.dtype == np.float32
    assert np.max(np.abs(back - x)) <= 2.0 ** -(f + 1) + 1e-7


def test_non_finite_and_bad_settings_raise() -> None:
    with pytest.raises(qz.QuantizeError, match=r"1 non-finite values \(first at index 1: nan\)"):
        qz.quantize_sum([0.0, float("nan")], 1.0, 2)
    with pytest.raises(qz.QuantizeError, match="sum bound 0.0: must be a finite positive"):
        qz.sum_frac_bits(0.0, 2)
    with pytest.raises(qz.QuantizeError, match="num_workers 33 is outside 1..32"):
        qz.sum_frac_bits(1.0, 33)
    with pytest.raises(qz.QuantizeError, match="momentum beta 1.0"):
        qz.optimizer_params(0.1, 2, 16, 16, beta=1.0)


def test_quantize_clips_to_limit_and_rounds_half_even() -> None:
    q = qz.quantize([0.5, 1.5, -0.5, 10.0, -10.0], 0, limit=5)
    assert list(q.values) == [0, 2, 0, 5, -5] and q.saturated == 2


@pytest.mark.parametrize("x", [1.0, 0.1, 1e-3, 3.7, 123456.0, 2.0 ** -30])
def test_fixed_ratio(x: float) -> None:
    n, s = qz.fixed_ratio(x)
    assert 2 ** 23 <= n < 2 ** 24 or s == 0
    assert abs(n / 2 ** s - x) <= x * 2.0 ** -23


def test_fixed_ratio_limits() -> None:
    assert qz.fixed_ratio(0.0) == (0, 0)
    assert qz.fixed_ratio(0.5, precision=1) == (1, 1)
    with pytest.raises(qz.QuantizeError, match="does not fit a signed 32-bit integer"):
        qz.fixed_ratio(2.0 ** 40)


def test_optimizer_params_fold_averaging_and_scales() -> None:
    p = qz.optimizer_params(lr=0.5, num_workers=4, grad_frac_bits=20, param_frac_bits=16,
                            beta=0.9)
    # lr_f * 2**(16-20) / 4 = 0.5 / 64 = 2**-7 exactly
    assert (p.lr, p.lr_shift) == (2 ** 23, 30)
    assert math.isclose(p.effective_lr(4, 20, 16), 0.5)
    assert (p.beta, p.beta_shift) == (round(0.9 * 2 ** 24), 24)
    assert abs(p.effective_beta - 0.9) < 1e-7
    assert qz.optimizer_params(0.1, 2, 16, 16).beta == 0


def test_fixed_point_format() -> None:
    fmt = qz.FixedPointFormat(param_frac_bits=8, grad_frac_bits=10, num_workers=4)
    assert list(fmt.params([1.0, -0.5]).values) == [256, -128]
    g = fmt.grads([1e9, 1.0])
    assert g.saturated == 1 and int(g.values[0]) == (2 ** 31 - 1) // 4
    assert list(fmt.params_float(np.array([256, -64], np.int32))) == [1.0, -0.25]
