"""A small real model for the training demo: softmax regression on scikit-learn's digits.

``load_digits`` ships with scikit-learn (no download). Parameters are one flat float32
vector ``[W (features x classes) row-major, b (classes)]`` so that a worker can push its
gradient as one vector and pull the switch's parameters back into the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Dataset:
    """Train/test split; features scaled to [0, 1]."""

    x_train: F32
    y_train: npt.NDArray[np.int64]
    x_test: F32
    y_test: npt.NDArray[np.int64]

    def shard(self, rank: int, num_workers: int) -> tuple[F32, npt.NDArray[np.int64]]:
        """Worker ``rank``'s part of the training set (every num_workers-th sample)."""
        return self.x_train[rank::num_workers], self.y_train[rank::num_workers]


def digits_arrays() -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """scikit-learn's 8x8 digits as ``(data, target)``, equal to ``load_digits()``'s.

    Read straight from the CSV scikit-learn ships when it is where ``load_digits`` reads it:
    ``import sklearn`` alone takes over a second (it imports scipy), which every training
    worker process would pay just to parse an 1797-row file."""
    import gzip
    from importlib.util import find_spec

    spec = find_spec("sklearn")  # locates the package without running its __init__
    for root in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(root) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            with gzip.open(path, "rt") as f:
                data = np.loadtxt(f, delimiter=",")
            return data[:, :-1], data[:, -1].astype(np.int64)
    from sklearn.datasets import load_digits  # another layout: let scikit-learn find it

    digits = load_digits()
    return np.asarray(digits.data, np.float64), np.asarray(digits.target, np.int64)


def load_digits_dataset(seed: int = 0, test_fraction: float = 0.25) -> Dataset:
    """The 8x8 digits (1797 samples, 64 features, 10 classes), shuffled and split."""
    data, target = digits_arrays()
    x = (data / 16.0).astype(np.float32)
    y = target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    cut = int(round(len(y) * (1 - test_fraction)))
    return Dataset(x[:cut], y[:cut], x[cut:], y[cut:])


class Model(Protocol):
    """What training needs of a model: a flat float32 parameter vector and its gradient."""

    @property
    def size(self) -> int: ...

    def init(self, seed: int = 0) -> F32: ...

    def loss_and_gradient(self, params: F32, x: F32, y: npt.NDArray[np.int64]) -> tuple[float, F32]: ...

    def accuracy(self, params: F32, x: F32, y: npt.NDArray[np.int64]) -> float: ...


@dataclass(frozen=True)
class SoftmaxRegression:
    """Multinomial logistic regression with mean cross-entropy loss."""

    n_features: int = 64
    n_classes: int = 10

    @property
    def size(self) -> int:
        """Number of parameters."""
        return self.n_features * self.n_classes + self.n_classes

    def init(self, seed: int = 0, scale: float = 0.01) -> F32:
        rng = np.random.default_rng(seed)
        w = rng.normal(scale=scale, size=self.size).astype(np.float32)
        w[self.n_features * self.n_classes:] = 0
        return w

    def _split(self, params: F32) -> tuple[F32, F32]:
        cut = self.n_features * self.n_classes
        return params[:cut].reshape(self.n_features, self.n_classes), params[cut:]

    def logits(self, params: F32, x: F32) -> F32:
        w, b = self._split(np.asarray(params, np.float32))
        return x @ w + b  # type: ignore[no-any-return]

    def loss_and_gradient(self, params: F32, x: F32, y: npt.NDArray[np.int64]) -> tuple[float, F32]:
        """Mean cross-entropy over the batch and its gradient (float32)."""
        z = self.logits(params, x)
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        loss = float(-np.mean(np.log(p[np.arange(len(y)), y] + 1e-12)))
        p[np.arange(len(y)), y] -= 1.0
        p /= len(y)
        grad_w = x.T @ p
        grad_b = p.sum(axis=0)
        return loss, np.concatenate([grad_w.ravel(), grad_b]).astype(np.float32)

    def accuracy(self, params: F32, x: F32, y: npt.NDArray[np.int64]) -> float:
        return float(np.mean(np.argmax(self.logits(params, x), axis=1) == y))


@dataclass(frozen=True)
class Mlp:
    """A ReLU multilayer perceptron with mean cross-entropy loss, in numpy: the digits model
    made as large as a test needs (64-1024-1024-10 has 1,126,410 parameters) to train with
    the switches as the optimizer. Parameters are one flat float32 vector, layer by layer
    ``[W (inputs x outputs) row-major, b (outputs)]``."""

    hidden: tuple[int, ...] = (1024, 1024)
    n_features: int = 64
    n_classes: int = 10

    @property
    def widths(self) -> tuple[int, ...]:
        return (self.n_features, *self.hidden, self.n_classes)

    @property
    def size(self) -> int:
        """Number of parameters."""
        w = self.widths
        return sum(a * b + b for a, b in zip(w[:-1], w[1:]))

    def init(self, seed: int = 0) -> F32:
        """He-normal weights, zero biases."""
        rng = np.random.default_rng(seed)
        parts = []
        for a, b in zip(self.widths[:-1], self.widths[1:]):
            parts += [rng.normal(scale=np.sqrt(2.0 / a), size=a * b).astype(np.float32), np.zeros(b, np.float32)]
        return np.concatenate(parts)

    def _layers(self, params: F32) -> list[tuple[F32, F32]]:
        out, at = [], 0
        p = np.asarray(params, np.float32)
        for a, b in zip(self.widths[:-1], self.widths[1:]):
            out.append((p[at:at + a * b].reshape(a, b), p[at + a * b:at + a * b + b]))
            at += a * b + b
        return out

    def logits(self, params: F32, x: F32) -> F32:
        h = x
        layers = self._layers(params)
        for i, (w, b) in enumerate(layers):
            h = h @ w + b
            if i < len(layers) - 1:
                h = np.maximum(h, 0)
        return h

    def loss_and_gradient(self, params: F32, x: F32, y: npt.NDArray[np.int64]) -> tuple[float, F32]:
        """Mean cross-entropy over the batch and its gradient (float32)."""
        layers = self._layers(params)
        acts = [x]
        for i, (w, b) in enumerate(layers):
            z = acts[-1] @ w + b
            acts.append(np.maximum(z, 0) if i < len(layers) - 1 else z)
        z = acts[-1] - acts[-1].max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        loss = float(-np.mean(np.log(p[np.arange(len(y)), y] + 1e-12)))
        p[np.arange(len(y)), y] -= 1.0
        delta = p / len(y)
        grads: list[F32] = []
        for i in reversed(range(len(layers))):
            w, _ = layers[i]
            grads = [(acts[i].T @ delta).ravel(), delta.sum(axis=0), *grads]
            if i:
                delta = (delta @ w.T) * (acts[i] > 0)
        return loss, np.concatenate(grads).astype(np.float32)

    def accuracy(self, params: F32, x: F32, y: npt.NDArray[np.int64]) -> float:
        return float(np.mean(np.argmax(self.logits(params, x), axis=1) == y))
