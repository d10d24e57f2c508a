"""Batches of the PyTorch training runs: scikit-learn's digits, or a synthetic task.

The benchmark model has >= 10 M parameters (``WIDE``: an MLP 1024-2048-2048-2048-10); digits
has 64 features, so a large model would need a large input anyway, and reading a data set
would cost the same in every mode. The synthetic task is generated in each process from the
seed alone, so every mode and rank sees the same samples without a file: sample ``i`` of
worker ``r`` at step ``s`` comes from a generator seeded with ``(seed, s, r)``, its label is
the argmax of a fixed random linear "teacher" (a learnable task, so the loss falls and the
accuracy means something). Worker ``r`` of N trains at step ``s`` on its own batch; the
union over ranks is what the one-process ``local`` reference trains on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

DATASETS = ("digits", "synthetic")
TEST_SAMPLES = 1024
"""Held-out synthetic samples for the final accuracy."""


@dataclass(frozen=True)
class ModelShape:
    """An MLP's layer widths and the data set it trains on."""

    data: str
    inputs: int
    hidden: tuple[int, ...]
    classes: int = 10

    @property
    def sizes(self) -> tuple[int, ...]:
        return (self.inputs, *self.hidden, self.classes)

    @property
    def params(self) -> int:
        return sum(a * b + b for a, b in zip(self.sizes, self.sizes[1:]))

    def describe(self) -> str:
        return f"MLP {'-'.join(map(str, self.sizes))} ({self.params / 1e6:.2f} M params) on {self.data}"


DIGITS = ModelShape("digits", 64, (128, 64))
WIDE = ModelShape("synthetic", 1024, (2048, 2048, 2048))
"""The benchmark model: 10.5 M parameters."""
MODELS = {"digits": DIGITS, "wide": WIDE}


class Batches:
    """The training batches and the test set of one spec (see module docstring)."""

    def __init__(self, data: str, inputs: int, classes: int, batch: int, world: int, seed: int) -> None:
        if data not in DATASETS:
            raise ValueError(f"data set {data!r}: expected one of {', '.join(DATASETS)}")
        self.data, self.inputs, self.classes = data, inputs, classes
        self.batch, self.world, self.seed = batch, world, seed
        self._digits: Any = None
        if data == "digits":
            from innet.host.training.model import load_digits_dataset

            self._digits = load_digits_dataset(seed=seed)
            if inputs != self._digits.x_train.shape[1]:
                raise ValueError(f"digits has {self._digits.x_train.shape[1]} features, not {inputs}")
        else:
            self._teacher = np.random.default_rng([seed, 0x7EAC]).standard_normal((inputs, classes)).astype(np.float32)

    def _synthetic(self, key: list[int], n: int) -> tuple[np.ndarray, np.ndarray]:
        x = np.random.default_rng(key).standard_normal((n, self.inputs), dtype=np.float32)
        return x, np.argmax(x @ self._teacher, axis=1).astype(np.int64)

    def train(self, step: int, ranks: range) -> tuple[Any, Any]:
        """The concatenated batches of ``ranks`` at ``step`` (torch tensors)."""
        import torch

        if self._digits is not None:
            d = self._digits
            base = step * self.batch * self.world
            idx = np.concatenate([np.arange(base + r * self.batch, base + (r + 1) * self.batch) for r in ranks])
            idx %= d.x_train.shape[0]
            return torch.from_numpy(d.x_train[idx]), torch.from_numpy(d.y_train[idx])
        parts = [self._synthetic([self.seed, step, r], self.batch) for r in ranks]
        return (torch.from_numpy(np.concatenate([p[0] for p in parts])),
                torch.from_numpy(np.concatenate([p[1] for p in parts])))

    def test(self) -> tuple[Any, Any]:
        import torch

        if self._digits is not None:
            return torch.from_numpy(self._digits.x_test), torch.from_numpy(self._digits.y_test)
        x, y = self._synthetic([self.seed, -1 & 0xFFFFFFFF], TEST_SAMPLES)
        return torch.from_numpy(x), torch.from_numpy(y)
