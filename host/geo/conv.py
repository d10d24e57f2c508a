"""Convolution operators of the OP-DAG (NCHW, numpy): 2-D convolution, global average
pooling, and the reshape from flat features to an image.

Conv2d lowers to one matrix product over sliding windows (im2col via
``sliding_window_view``, no copy until the product) so a small ResNet trains at numpy's
matmul speed; backward scatters the window gradients back with one strided add per kernel
tap. The layout and the weight shape ``(out, in, k, k)`` are torch's, so weights move
between a ``nn.Conv2d`` and this operator unchanged.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from innet.host.geo.ops import Array, Op, OpError, Params


class Conv2d(Op):
    """``out[n, o] = sum_c W[o, c] * x[n, c] + b[o]`` over ``k x k`` windows (stride, zero padding)."""

    def __init__(self, c_in: int, c_out: int, k: int = 3, stride: int = 1, padding: int = 1,
                 bias: bool = True, std: float | None = None) -> None:
        if min(c_in, c_out, k, stride) < 1 or padding < 0:
            raise OpError(f"Conv2d({c_in}, {c_out}, k={k}, stride={stride}, padding={padding}): channels, kernel "
                          "and stride must be >= 1 and padding >= 0")
        self.c_in, self.c_out, self.k, self.stride, self.padding, self.bias = c_in, c_out, k, stride, padding, bias
        self.std = std if std is not None else math.sqrt(2.0 / (c_in * k * k))  # He init for ReLU nets

    def init(self, rng: np.random.Generator) -> Params:
        p = {"w": (rng.standard_normal((self.c_out, self.c_in, self.k, self.k)) * self.std).astype(np.float32)}
        if self.bias:
            p["b"] = np.zeros(self.c_out, np.float32)
        return p

    def _windows(self, x: Array) -> tuple[Array, int, int]:
        if x.ndim != 4 or x.shape[1] != self.c_in:
            raise OpError(f"{self.describe()}: input must be (N, {self.c_in}, H, W), got {x.shape}")
        pad = self.padding
        xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else x
        if xp.shape[2] < self.k or xp.shape[3] < self.k:
            raise OpError(f"{self.describe()}: padded input {xp.shape[2:]} is smaller than the kernel")
        win = sliding_window_view(xp, (self.k, self.k), axis=(2, 3))[:, :, ::self.stride, ::self.stride]
        return win, win.shape[2], win.shape[3]

    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        (x,) = xs
        win, ho, wo = self._windows(x)
        n = x.shape[0]
        cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(n * ho * wo, -1)
        w = p["w"].astype(x.dtype).reshape(self.c_out, -1)
        out = cols @ w.T
        if self.bias:
            out = out + p["b"].astype(x.dtype)
        return out.reshape(n, ho, wo, self.c_out).transpose(0, 3, 1, 2), (cols, x.shape, ho, wo)

    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        cols, shape, ho, wo = ctx
        n, c, h, w_ = shape
        g2 = g.transpose(0, 2, 3, 1).reshape(-1, self.c_out)
        grads: Params = {"w": (g2.T @ cols).reshape(self.c_out, c, self.k, self.k)}
        if self.bias:
            grads["b"] = g2.sum(axis=0)
        gcols = (g2 @ p["w"].astype(g.dtype).reshape(self.c_out, -1)).reshape(n, ho, wo, c, self.k, self.k)
        pad, s = self.padding, self.stride
        gxp = np.zeros((n, c, h + 2 * pad, w_ + 2 * pad), g.dtype)
        for i in range(self.k):
            for j in range(self.k):
                gxp[:, :, i:i + s * ho:s, j:j + s * wo:s] += gcols[:, :, :, :, i, j].transpose(0, 3, 1, 2)
        return [gxp[:, :, pad:pad + h, pad:pad + w_]], grads

    def describe(self) -> str:
        return f"Conv2d({self.c_in}, {self.c_out}, k={self.k}, stride={self.stride}, padding={self.padding})"


class GlobalAvgPool(Op):
    """``(N, C, H, W) -> (N, C)``: the mean over the spatial axes (ResNet's last pooling)."""

    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        (x,) = xs
        if x.ndim != 4:
            raise OpError(f"GlobalAvgPool: input must be (N, C, H, W), got {x.shape}")
        return x.mean(axis=(2, 3)), x.shape

    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        n, c, h, w = ctx
        return [np.broadcast_to(g[:, :, None, None] / (h * w), ctx).copy()], {}


class ToImage(Op):
    """``(N, C*H*W) -> (N, C, H, W)``: flat features (the digits task's 64) as an image."""

    def __init__(self, c: int, h: int, w: int) -> None:
        if min(c, h, w) < 1:
            raise OpError(f"ToImage({c}, {h}, {w}): sizes must be >= 1")
        self.shape = (c, h, w)

    def forward(self, xs: Sequence[Array], p: Mapping[str, Array]) -> tuple[Array, Any]:
        (x,) = xs
        if x.ndim != 2 or x.shape[1] != math.prod(self.shape):
            raise OpError(f"{self.describe()}: input must be (N, {math.prod(self.shape)}), got {x.shape}")
        return x.reshape(x.shape[0], *self.shape), x.shape

    def backward(self, ctx: Any, g: Array, p: Mapping[str, Array]) -> tuple[list[Array | None], Params]:
        return [g.reshape(ctx)], {}

    def describe(self) -> str:
        return "ToImage({}, {}, {})".format(*self.shape)
