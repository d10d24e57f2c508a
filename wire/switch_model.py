"""The switch's fixed-point arithmetic in numpy, bit for bit (docs/PROTOCOL.md, "Modes").

All state is int32 with wrapping; products are int64 (``lr`` and ``g`` sign-extended) and
``>>`` is arithmetic (floor). Used by tests and training runs to predict the switch's final
parameters exactly. The whole dataplane, packet by packet (slots, duplicates, REDUCE/BCAST,
epochs), is modelled in :mod:`innet.wire.dataplane_model` with this arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import numpy.typing as npt

from innet.wire import Mode

I32 = npt.NDArray[np.int32]


def wrap32(x: npt.ArrayLike) -> I32:
    """Two's-complement truncation of integers to int32."""
    return np.asarray(x, dtype=np.int64).astype(np.uint64).astype(np.uint32).view(np.int32)


def _i64(x: npt.ArrayLike) -> npt.NDArray[np.int64]:
    return np.asarray(x).astype(np.int64)


def mul_shift(a: int, x: npt.ArrayLike, shift: int) -> npt.NDArray[np.int64]:
    """``(int64(a) * int64(x)) >> shift`` (arithmetic); ``a`` and ``x`` are int32 values."""
    if not 0 <= shift <= 63:
        raise ValueError(f"shift {shift} is outside 0..63")
    return np.right_shift(np.int64(a) * _i64(x), shift)


def wrapping_sum(contributions: Sequence[npt.ArrayLike]) -> I32:
    """The switch's accumulator: int32 sum with wrapping."""
    total = np.zeros(np.shape(contributions[0]), dtype=np.int64)
    for c in contributions:
        total = _i64(wrap32(total + _i64(c)))
    return wrap32(total)


def sgd_step(w: npt.ArrayLike, g: npt.ArrayLike, lr: int, lr_shift: int) -> I32:
    """``w - ((lr * g) >> lr_shift)`` wrapped to int32."""
    return wrap32(_i64(w) - mul_shift(lr, g, lr_shift))


def momentum_step(w: npt.ArrayLike, m: npt.ArrayLike, g: npt.ArrayLike, lr: int, lr_shift: int,
                  beta: int, beta_shift: int) -> tuple[I32, I32]:
    """``m = ((beta*m) >> beta_shift) + g; w = w - ((lr*m) >> lr_shift)``; returns (w, m)."""
    m_new = wrap32(mul_shift(beta, m, beta_shift) + _i64(g))
    w_new = wrap32(_i64(w) - mul_shift(lr, m_new, lr_shift))
    return w_new, m_new


def momentum_unstep(w: npt.ArrayLike, m: npt.ArrayLike, lr: int, lr_shift: int) -> I32:
    """The parameters before the momentum step that left ``(w, m)``: ``w + ((lr*m) >> lr_shift)``.

    Exact in int32 with wrapping, because the step subtracted that very term from the old
    parameters and the new momentum ``m`` is what the switch stores. A controller uses it to
    undo the last step of a chunk whose step ran while others of the same step did not (an
    HB domain failed mid-step, docs/rail.md "Failures"); sgd stores nothing to undo with."""
    return wrap32(_i64(w) + mul_shift(lr, m, lr_shift))


@dataclass
class SwitchModel:
    """One job's parameter shard and optimizer state as the switch holds them."""

    mode: Mode
    params: I32
    lr: int = 0
    lr_shift: int = 0
    beta: int = 0
    beta_shift: int = 0
    momentum: I32 = field(default_factory=lambda: np.zeros(0, np.int32))

    def __post_init__(self) -> None:
        self.params = wrap32(self.params)
        if self.momentum.size != self.params.size:
            self.momentum = np.zeros(self.params.size, np.int32)

    def step(self, contributions: Sequence[npt.ArrayLike]) -> I32:
        """Apply one round of contributions; the RESULT values every worker receives."""
        g = wrapping_sum(contributions)
        if self.mode == Mode.SUM:
            return g
        if self.mode == Mode.SGD:
            self.params = sgd_step(self.params, g, self.lr, self.lr_shift)
        elif self.mode == Mode.MOMENTUM:
            self.params, self.momentum = momentum_step(self.params, self.momentum, g, self.lr,
                                                       self.lr_shift, self.beta, self.beta_shift)
        else:
            raise ValueError(f"mode {self.mode!r} is not one of sum, sgd, momentum")
        return self.params.copy()
