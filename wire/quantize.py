"""float32 <-> int32 fixed point for the switch, and the optimizer's integer hyperparameters.

Fixed point with ``f`` fractional bits represents ``x`` as ``q = round(x * 2**f)`` (int32);
``f`` may be negative (coarser than integers) for very large bounds.

**Sum (allreduce).** The switch adds N int32 contributions with wrapping, so the scale
must make the sum impossible to overflow. All workers agree on a bound ``B`` on ``|x|``
(configured, or exchanged: ``innet.host.agent.agent`` sends each worker's max-abs in a one-chunk
allreduce first). The per-worker integer limit is ``M = floor((2**31 - 1) / N)`` and the
scale is the largest power of two ``2**f`` with ``B * 2**f <= M``, i.e.
``N * B * 2**f <= 2**31 - 1`` with the floor taken so that rounding cannot push a value
past ``M`` (``M`` is an integer, so ``|x| <= B`` gives ``|round(x * 2**f)| <= M``). Then
``|sum| <= N * M <= 2**31 - 1``. A power of two makes the scale exact in float and lets
every worker derive the same ``f`` from the same ``(B, N)``. Values with ``|x| > B`` are
clipped to ``+-B`` and counted in ``Quantized.saturated`` (never wrapped); NaN or
infinite inputs raise ``QuantizeError``.

**Optimizer modes (sgd, momentum).** Parameters use ``param_frac_bits`` and gradients
``grad_frac_bits`` (per job). Each worker's gradient is clipped to ``M`` as above so the
switch's sum cannot overflow. The switch computes ``w -= (lr * g) >> lr_shift`` on the
summed integer gradient ``g``; for the float update ``w -= lr_f * mean(grad)``::

    lr / 2**lr_shift  ~=  lr_f * 2**(param_frac_bits - grad_frac_bits) / N

(the 1/N of averaging and the scale difference are folded into ``lr``), and
``beta / 2**beta_shift ~= beta_f``. ``fixed_ratio`` picks the shift that gives the integer
``precision`` significant bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

INT32_MAX = (1 << 31) - 1
INT32_MIN = -(1 << 31)
MAX_SHIFT = 62
"""Largest shift: ``(a * b) >> s`` is computed on int64 products."""

FloatArray = npt.NDArray[np.floating]
IntArray = npt.NDArray[np.int32]


class QuantizeError(ValueError):
    """A value or a fixed-point setting cannot be represented; names what and why."""


@dataclass(frozen=True)
class Quantized:
    """The int32 values and how many inputs were clipped."""

    values: IntArray
    saturated: int
    """Inputs outside the bound, clipped to it."""


def per_worker_limit(num_workers: int) -> int:
    """``floor((2**31 - 1) / N)``: the largest per-worker |value| whose N-sum fits int32."""
    if not 1 <= num_workers <= 32:
        raise QuantizeError(f"num_workers {num_workers} is outside 1..32")
    return INT32_MAX // num_workers


def bound_contribution(x: npt.NDArray[np.floating], rank: int, num_workers: int, what: str) -> npt.NDArray[np.int32]:
    """This member's part of a bound exchange: max |x| at index ``rank`` of ``num_workers``
    float32 values, as int32 bits (the switch's int32 sum of every member's is the list of
    their maxima, exactly: one non-zero term each). max |x| as max(max x, -min x): no
    temporary the size of ``x``. QuantizeError naming ``what`` for non-finite values."""
    local = np.float32(np.maximum(x.max(), -x.min())) if x.size else np.float32(0)
    if not np.isfinite(local):
        raise QuantizeError(f"{what}: non-finite values")
    one_hot = np.zeros(num_workers, np.float32)
    one_hot[rank] = local
    return one_hot.view(np.int32)


def exchanged_bound(summed: npt.NDArray[np.int32]) -> float:
    """The bound from the summed contributions (:func:`bound_contribution`); 1.0 when all are 0."""
    bound = float(np.max(summed.view(np.float32)))
    return bound if bound > 0 else 1.0


def sum_frac_bits(bound: float, num_workers: int) -> int:
    """Largest ``f`` with ``bound * 2**f <= floor((2**31 - 1) / N)`` (see module docstring)."""
    if not (math.isfinite(bound) and bound > 0):
        raise QuantizeError(f"sum bound {bound!r}: must be a finite positive number")
    limit = per_worker_limit(num_workers)
    mantissa, exponent = math.frexp(limit / bound)  # limit/bound = mantissa * 2**exponent
    f = exponent - 1
    while math.ldexp(bound, f) > limit:  # guard the float division's rounding
        f -= 1
    while math.ldexp(bound, f + 1) <= limit:
        f += 1
    if not -126 <= f <= 126:
        raise QuantizeError(f"sum bound {bound!r} with {num_workers} workers needs 2**{f}, "
                            "outside the float32 exponent range")
    return f


def _check_finite(x: npt.NDArray[np.floating], what: str) -> None:
    if not np.all(np.isfinite(x)):
        bad = np.flatnonzero(~np.isfinite(x))
        raise QuantizeError(f"{what}: {bad.size} non-finite values (first at index {bad[0]}: "
                            f"{x.flat[bad[0]]})")


def quantize(x: npt.ArrayLike, frac_bits: int, limit: int = INT32_MAX,
             what: str = "values") -> Quantized:
    """``round(x * 2**frac_bits)`` clipped to ``+-limit`` (clips counted); raises QuantizeError
    for NaN/inf. Rounding is half-to-even (numpy ``rint``) on float64."""
    arr = np.asarray(x, dtype=np.float64).ravel()
    _check_finite(arr, what)
    scaled = np.rint(np.ldexp(arr, frac_bits))
    over = np.abs(scaled) > limit
    saturated = int(np.count_nonzero(over))
    if saturated:
        np.clip(scaled, -limit, limit, out=scaled)
    return Quantized(scaled.astype(np.int32), saturated)


def quantize_sum(x: npt.ArrayLike, bound: float, num_workers: int) -> tuple[Quantized, int]:
    """Quantize one worker's contribution to a sum of ``num_workers``; (values, frac_bits).

    Values beyond ``bound`` are clipped to ``+-bound`` and counted."""
    f = sum_frac_bits(bound, num_workers)
    arr = np.asarray(x, dtype=np.float64).ravel()
    _check_finite(arr, "allreduce input")
    over = np.abs(arr) > bound
    saturated = int(np.count_nonzero(over))
    if saturated:
        arr = np.clip(arr, -bound, bound)
    q = quantize(arr, f, per_worker_limit(num_workers), "allreduce input")
    return Quantized(q.values, saturated + q.saturated), f


def dequantize(q: npt.ArrayLike, frac_bits: int) -> npt.NDArray[np.float32]:
    """``q / 2**frac_bits`` as float32 (exact for power-of-two scales up to float32 rounding)."""
    return np.ldexp(np.asarray(q, dtype=np.float64), -frac_bits).astype(np.float32)


def fixed_ratio(x: float, precision: int = 24, what: str = "ratio") -> tuple[int, int]:
    """``(n, s)`` with ``n / 2**s ~= x``, ``n`` rounded to ``precision`` significant bits,
    ``0 <= s <= MAX_SHIFT`` and ``n`` a positive int32 (0, 0 for x == 0)."""
    if not (math.isfinite(x) and x >= 0):
        raise QuantizeError(f"{what} {x!r}: must be finite and >= 0")
    if x == 0:
        return 0, 0
    _, exponent = math.frexp(x)  # x in [2**(e-1), 2**e)
    shift = min(max(precision - exponent, 0), MAX_SHIFT)
    n = round(math.ldexp(x, shift))
    if n > INT32_MAX:
        raise QuantizeError(f"{what} {x!r}: {n} does not fit a signed 32-bit integer")
    if n == 0:
        raise QuantizeError(f"{what} {x!r}: too small for a shift of at most {MAX_SHIFT}")
    return n, shift


@dataclass(frozen=True)
class OptimizerParams:
    """The integers of ``set_job``'s optimizer arguments."""

    lr: int
    lr_shift: int
    beta: int = 0
    beta_shift: int = 0

    def effective_lr(self, num_workers: int, grad_frac_bits: int, param_frac_bits: int) -> float:
        """The float learning rate these integers realise (for reports)."""
        return math.ldexp(self.lr, -self.lr_shift) * num_workers * 2.0 ** (grad_frac_bits - param_frac_bits)

    @property
    def effective_beta(self) -> float:
        return math.ldexp(self.beta, -self.beta_shift)


def optimizer_params(lr: float, num_workers: int, grad_frac_bits: int, param_frac_bits: int,
                     beta: float = 0.0, precision: int = 24) -> OptimizerParams:
    """(lr, lr_shift, beta, beta_shift) for averaging SGD/momentum over ``num_workers``.

    ``lr / 2**lr_shift ~= lr_f * 2**(param_frac_bits - grad_frac_bits) / N``; see the
    module docstring."""
    per_worker_limit(num_workers)
    if not 0 <= beta < 1:
        raise QuantizeError(f"momentum beta {beta!r}: must be in [0, 1)")
    folded = lr * 2.0 ** (param_frac_bits - grad_frac_bits) / num_workers
    lr_i, lr_s = fixed_ratio(folded, precision, "learning rate (folded with 1/N and scales)")
    beta_i, beta_s = fixed_ratio(beta, precision, "momentum beta")
    return OptimizerParams(lr_i, lr_s, beta_i, beta_s)


@dataclass(frozen=True)
class FixedPointFormat:
    """Per-job fixed point of the optimizer modes."""

    param_frac_bits: int = 16
    """Fractional bits of parameters (and momentum is in gradient units)."""
    grad_frac_bits: int = 16
    """Fractional bits of each worker's gradient."""
    num_workers: int = 1
    """Workers whose gradients the switch sums."""

    def params(self, w: npt.ArrayLike) -> Quantized:
        """Parameters as int32 (clipped to the int32 range, counted)."""
        return quantize(w, self.param_frac_bits, INT32_MAX, "parameters")

    def grads(self, g: npt.ArrayLike) -> Quantized:
        """One worker's gradient, clipped so the N-sum cannot overflow."""
        return quantize(g, self.grad_frac_bits, per_worker_limit(self.num_workers), "gradients")

    def params_float(self, q: npt.ArrayLike) -> npt.NDArray[np.float32]:
        return dequantize(q, self.param_frac_bits)
