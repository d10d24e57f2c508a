"""Operators of the OP-DAG: each one a forward and a hand-written backward on numpy arrays.

An operator is stateless; its parameters live outside it (a dict per node) so that a stage
on another site can hold, update and ship them without the operator object. ``forward``
returns the output and a context (what ``backward`` needs); ``backward`` turns the gradient
of the output into gradients of the inputs (``None`` for inputs without one, such as token
ids) and of the parameters. The arithmetic follows the dtype of the inputs, so float64 runs
serve gradient checks and float32 runs serve training.
"""

from __future__ import annotations

import abc
import math
from typing import Any, Mapping, Sequence

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]
Params = dict[str, Array]
_GELU_C = math.sqrt(2.0 / math.pi)


class OpError(ValueError):
    """An operator got inputs of the wrong number or shape; the message names the operator."""


class Op(abc.ABC):
    """One operator: ``arity`` inputs, one output."""

    arity = 1

    def init(self, rng: np.random.Generator) -> Params:
        """Fresh parameters (float32); none by default."""
        return {}

    @abc.abstractmethod
    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        """Output and the context ``backward`` needs."""

    @abc.abstractmethod
    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        """Gradients of the inputs (in order) and of the parameters, given the output's ``g``."""

    def describe(self) -> str:
        return type(self).__name__


def _flat(x: Array) -> Array:
    return x.reshape(-1, x.shape[-1])


class Linear(Op):
    """``x @ W + b`` over the last axis."""

    def __init__(self, d_in: int, d_out: int, std: float | None = None) -> None:
        if d_in < 1 or d_out < 1:
            raise OpError(f"Linear({d_in}, {d_out}): widths must be >= 1")
        self.d_in, self.d_out = d_in, d_out
        self.std = std if std is not None else 1.0 / math.sqrt(d_in)

    def init(self, rng: np.random.Generator) -> Params:
        return {"w": (rng.standard_normal((self.d_in, self.d_out)) * self.std).astype(np.float32),
                "b": np.zeros(self.d_out, np.float32)}

    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        (x,) = xs
        if x.shape[-1] != self.d_in:
            raise OpError(f"Linear({self.d_in}, {self.d_out}): input has width {x.shape[-1]}")
        return x @ p["w"].astype(x.dtype) + p["b"].astype(x.dtype), x

    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        x = ctx
        gw = _flat(x).T @ _flat(g)
        gb = _flat(g).sum(axis=0)
        return [g @ p["w"].astype(g.dtype).T], {"w": gw, "b": gb}

    def describe(self) -> str:
        return f"Linear({self.d_in}, {self.d_out})"


class Relu(Op):
    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        (x,) = xs
        mask = x > 0
        return x * mask, mask

    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        return [g * ctx], {}


class Gelu(Op):
    """GPT-2's tanh approximation."""

    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        (x,) = xs
        t = np.tanh(_GELU_C * (x + 0.044715 * x ** 3))
        return 0.5 * x * (1 + t), (x, t)

    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        x, t = ctx
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _GELU_C * (1 + 3 * 0.044715 * x * x)
        return [g * d], {}


class LayerNorm(Op):
    """Normalise the last axis, then scale and shift."""

    def __init__(self, d: int, eps: float = 1e-5) -> None:
        self.d, self.eps = d, eps

    def init(self, rng: np.random.Generator) -> Params:
        return {"g": np.ones(self.d, np.float32), "b": np.zeros(self.d, np.float32)}

    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        (x,) = xs
        if x.shape[-1] != self.d:
            raise OpError(f"LayerNorm({self.d}): input has width {x.shape[-1]}")
        mu = x.mean(axis=-1, keepdims=True)
        inv = 1.0 / np.sqrt(x.var(axis=-1, keepdims=True) + self.eps)
        xhat = (x - mu) * inv
        return xhat * p["g"].astype(x.dtype) + p["b"].astype(x.dtype), (xhat, inv)

    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        xhat, inv = ctx
        gx_hat = g * p["g"].astype(g.dtype)
        gx = inv * (gx_hat - gx_hat.mean(axis=-1, keepdims=True)
                    - xhat * (gx_hat * xhat).mean(axis=-1, keepdims=True))
        return [gx], {"g": _flat(g * xhat).sum(axis=0), "b": _flat(g).sum(axis=0)}

    def describe(self) -> str:
        return f"LayerNorm({self.d})"


class Add(Op):
    """Residual connection: the sum of two inputs."""

    arity = 2

    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        a, b = xs
        if a.shape != b.shape:
            raise OpError(f"Add: input shapes {a.shape} and {b.shape} differ")
        return a + b, None

    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        return [g, g], {}


class Embedding(Op):
    """Token plus position embeddings: int ids (B, T) -> (B, T, d)."""

    def __init__(self, vocab: int, d: int, max_len: int, std: float = 0.02) -> None:
        self.vocab, self.d, self.max_len, self.std = vocab, d, max_len, std

    def init(self, rng: np.random.Generator) -> Params:
        return {"wte": (rng.standard_normal((self.vocab, self.d)) * self.std).astype(np.float32),
                "wpe": (rng.standard_normal((self.max_len, self.d)) * self.std).astype(np.float32)}

    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        (ids,) = xs
        if ids.ndim != 2 or ids.shape[1] > self.max_len:
            raise OpError(f"Embedding: ids must be (batch, T<={self.max_len}), got shape {ids.shape}")
        return p["wte"][ids] + p["wpe"][: ids.shape[1]], ids

    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        ids = ctx
        gwte = np.zeros((self.vocab, self.d), g.dtype)
        np.add.at(gwte, ids.reshape(-1), _flat(g))
        gwpe = np.zeros((self.max_len, self.d), g.dtype)
        gwpe[: ids.shape[1]] = g.sum(axis=0)
        return [None], {"wte": gwte, "wpe": gwpe}

    def describe(self) -> str:
        return f"Embedding({self.vocab}, {self.d})"


class CausalAttention(Op):
    """Multi-head causal self-attention core: (B, T, 3d) packed q|k|v -> (B, T, d).

    The projections around it are ordinary ``Linear`` nodes, so a partition may cut
    between them.
    """

    def __init__(self, d: int, heads: int) -> None:
        if d % heads:
            raise OpError(f"CausalAttention: width {d} is not a multiple of heads {heads}")
        self.d, self.heads = d, heads

    def _split(self, x: Array) -> Array:
        b, t, _ = x.shape
        return x.reshape(b, t, self.heads, self.d // self.heads).transpose(0, 2, 1, 3)

    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        (qkv,) = xs
        if qkv.ndim != 3 or qkv.shape[-1] != 3 * self.d:
            raise OpError(f"CausalAttention({self.d}): input must be (batch, T, {3 * self.d}), got {qkv.shape}")
        q, k, v = (self._split(a) for a in np.split(qkv, 3, axis=-1))
        t = qkv.shape[1]
        scale = 1.0 / math.sqrt(self.d // self.heads)
        s = (q @ k.transpose(0, 1, 3, 2)) * scale
        s = np.where(np.tril(np.ones((t, t), bool)), s, -np.inf)
        s = s - s.max(axis=-1, keepdims=True)
        a = np.exp(s)
        a /= a.sum(axis=-1, keepdims=True)
        o = a @ v
        b = qkv.shape[0]
        return o.transpose(0, 2, 1, 3).reshape(b, t, self.d), (q, k, v, a, scale)

    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        q, k, v, a, scale = ctx
        go = self._split(g)
        ga = go @ v.transpose(0, 1, 3, 2)
        gv = a.transpose(0, 1, 3, 2) @ go
        gs = a * (ga - (ga * a).sum(axis=-1, keepdims=True)) * scale
        gq = gs @ k
        gk = gs.transpose(0, 1, 3, 2) @ q
        b, _, t, _ = q.shape

        def merge(x: Array) -> Array:
            return x.transpose(0, 2, 1, 3).reshape(b, t, self.d)

        return [np.concatenate([merge(gq), merge(gk), merge(gv)], axis=-1)], {}

    def describe(self) -> str:
        return f"CausalAttention({self.d}, heads={self.heads})"


class SoftmaxCrossEntropy(Op):
    """Mean cross-entropy of logits (..., C) against int targets (...); a scalar output."""

    arity = 2

    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        logits, targets = xs
        z = _flat(logits)
        y = np.asarray(targets).reshape(-1)
        if len(y) != len(z):
            raise OpError(f"SoftmaxCrossEntropy: {len(z)} rows of logits but {len(y)} targets")
        z = z - z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        loss = -logp[np.arange(len(y)), y].mean()
        return np.asarray(loss, dtype=logits.dtype), (logp, y, logits.shape)

    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        logp, y, shape = ctx
        grad = np.exp(logp)
        grad[np.arange(len(y)), y] -= 1
        grad *= np.asarray(g, logp.dtype) / len(y)
        return [grad.reshape(shape), None], {}
