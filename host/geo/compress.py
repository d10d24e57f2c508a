"""Top-k sparsification with error feedback, fixed-ratio and adaptive (AdaTopK).

Error feedback keeps what top-k drops (for gradients; for activations only on request,
see ``CompressionConfig.feedback_activations``): per tensor key, the residual is added to the next
tensor sent under that key before choosing the top k. The bookkeeping is exact: the
elements of ``x + residual`` are *split* between the sent part and the new residual (no
arithmetic on them), so ``sent + new_residual == x + old_residual`` bit for bit.

AdaTopK (FusionLLM) compresses only on the slowest links and picks the ratio from the
measured bandwidth: the message should cross the link in no more than the stage's compute
time per microbatch, which is the period of a pipeline in its steady state. When the dense
message already fits it goes dense (flushing the residual with it). What a compressed message
carries is a separate choice (``CompressionConfig.activations`` / ``.gradients``): top-k at the
ratio, or int8 per row (the rounding error kept as the residual, as exact as top-k's split),
which on the language model trains like dense where top-k stalls (docs/geo.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from innet.host.geo.codec import Int8Rows, Sparse, Tensor
from innet.host.geo.ops import Array

MODES = ("none", "topk", "adatopk")
ACTIVATION_CODECS = ("topk", "int8-fit", "int8")
GRADIENT_CODECS = ("topk", "int8")
INDEX_BYTES = 4


class CompressionError(ValueError):
    """Bad compression settings; names the setting and the value."""


@dataclass(frozen=True)
class CompressionConfig:
    """How tensors crossing a compressed link are sent."""

    mode: str = "none"
    """``none`` (dense), ``topk`` (fixed ``ratio``) or ``adatopk`` (ratio from bandwidth and compute)."""
    ratio: float = 0.1
    """Fraction of elements kept by ``topk``."""
    min_ratio: float = 0.01
    """Lower bound of AdaTopK's ratio (a link too slow for anything still carries this much)."""
    feedback: bool = True
    """Keep the dropped part of gradients (error feedback)."""
    feedback_activations: bool = False
    """Keep it for activations too. Off by default: an activation's residual belongs to other
    samples, and adding it to the next microbatch's activations biases the forward pass
    (on digits, fixed 10% top-k on the logits with activation feedback ended at chance
    accuracy, 10.8%)."""
    row_topk: bool = False
    """Choose the top elements per row (last axis: per sample or token) instead of over the whole
    tensor, for activations (forward messages)."""
    warmup_steps: int = 0
    """Send dense for the first N training steps."""
    activations: str = "topk"
    """How a forward message goes when the ratio is below 1. ``topk``: top-k at the ratio, like
    gradients. ``int8-fit``: int8 per row (``codec.Int8Rows``, 1 byte per element + a float32
    scale per row) when that fits the bytes top-k at the ratio would use (value + index per kept
    element), else top-k. ``int8``: always int8 per row, never sparsified, even where that
    exceeds the ratio's bytes: every token keeps its whole vector to within 1/254 of its
    largest element, which on the language model trains like dense where top-k stalls
    (docs/geo.md)."""
    gradients: str = "topk"
    """How a backward message goes when the ratio is below 1: ``topk`` at the ratio, or ``int8``
    per row (always, like ``activations="int8"``), both with error feedback."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise CompressionError(f"compression mode {self.mode!r}: must be one of {', '.join(MODES)}")
        for name in ("ratio", "min_ratio"):
            v = getattr(self, name)
            if not 0 < v <= 1:
                raise CompressionError(f"compression {name}={v!r}: must be within (0, 1]")
        if self.activations not in ACTIVATION_CODECS:
            raise CompressionError(f"compression activations={self.activations!r}: must be one of "
                                   f"{', '.join(ACTIVATION_CODECS)}")
        if self.gradients not in GRADIENT_CODECS:
            raise CompressionError(f"compression gradients={self.gradients!r}: must be one of "
                                   f"{', '.join(GRADIENT_CODECS)}")
        if self.activations != "topk" and self.feedback_activations:
            raise CompressionError(f"compression activations={self.activations!r} with feedback_activations: "
                                   "int8 activations keep no residual")


class ErrorFeedback:
    """Residuals per tensor key."""

    def __init__(self) -> None:
        self.residuals: dict[str, Array] = {}

    def accumulate(self, key: str, x: Array) -> Array:
        r = self.residuals.get(key)
        if r is None or r.shape != x.shape:
            return np.array(x, copy=True)
        return x + r

    def topk(self, key: str, x: Array, k: int, feedback: bool = True, rows: bool = False) -> Sparse:
        """The ``k`` largest-magnitude elements of ``x + residual``; the rest becomes the residual.
        With ``rows``, the same share of every row (last axis) instead: each sample's (token's)
        vector keeps its own largest elements, none is dropped whole."""
        acc = self.accumulate(key, x) if feedback else np.array(x, copy=True)
        flat = acc.reshape(-1)
        n = flat.size
        k = max(1, min(int(k), n))
        width = acc.shape[-1] if acc.ndim >= 1 else 1
        if k == n:
            idx = np.arange(n, dtype=np.uint32)
        elif rows and acc.ndim >= 2 and width > 1:
            per = max(1, min(width, round(k / (n // width))))
            m = acc.reshape(-1, width)
            cols = np.argpartition(np.abs(m), width - per, axis=1)[:, width - per:]
            idx = np.sort((np.arange(len(m))[:, None] * width + cols).reshape(-1)).astype(np.uint32)
        else:
            idx = np.sort(np.argpartition(np.abs(flat), n - k)[n - k:]).astype(np.uint32)
        sent = Sparse(tuple(acc.shape), idx, flat[idx].copy())
        if feedback:
            flat[idx] = 0
            self.residuals[key] = acc
        return sent

    def int8(self, key: str, x: Array, feedback: bool = True) -> Int8Rows:
        """``x + residual`` as int8 per row; the rounding error becomes the residual. Exact like
        ``topk``: the residual ``acc - sent`` is a difference of two floats within a factor of two
        of each other (or ``sent == 0``), so ``sent + new_residual == x + old_residual`` bit for bit."""
        acc = self.accumulate(key, x) if feedback else x
        sent = Int8Rows.of(acc)
        if feedback:
            self.residuals[key] = acc - sent.dense()
        return sent

    def dense(self, key: str, x: Array, feedback: bool = True) -> Array:
        """Send everything (residual included); the residual becomes empty."""
        acc = self.accumulate(key, x) if feedback else x
        self.residuals.pop(key, None)
        return acc


def adaptive_ratio(elements: int, itemsize: int, bandwidth_bps: float, budget_s: float, min_ratio: float) -> float:
    """AdaTopK's ratio: 1.0 when the dense message crosses within ``budget_s``, else the ratio
    whose sparse form (value + 4-byte index per element) does, floored at ``min_ratio``."""
    if elements <= 0:
        return 1.0
    budget_bytes = bandwidth_bps / 8 * max(budget_s, 0.0)
    if elements * itemsize <= budget_bytes:
        return 1.0
    return min(1.0, max(min_ratio, budget_bytes / (elements * (itemsize + INDEX_BYTES))))


class LinkCompressor:
    """The sending side of one link direction: compresses a message's tensors per the config."""

    def __init__(self, config: CompressionConfig, bandwidth_bps: float | None = None,
                 direction: str = "bwd") -> None:
        if direction not in ("fwd", "bwd"):
            raise CompressionError(f"link direction {direction!r}: expected 'fwd' (activations) or 'bwd' (gradients)")
        self.config = config
        self.use_feedback = config.feedback and (direction == "bwd" or config.feedback_activations)
        self.rows = config.row_topk and direction == "fwd"
        self.int8 = config.activations if direction == "fwd" else config.gradients
        self.bandwidth_bps = bandwidth_bps
        """Measured bandwidth of the link (AdaTopK); set by the probe."""
        self.feedback = ErrorFeedback()
        self.last_ratio = 1.0

    def ratio(self, elements: int, itemsize: int, budget_s: float | None) -> float:
        c = self.config
        if c.mode == "none":
            return 1.0
        if c.mode == "topk":
            return c.ratio
        if self.bandwidth_bps is None or budget_s is None:
            raise CompressionError("adatopk needs the link's measured bandwidth and the stage's compute time")
        return adaptive_ratio(elements, itemsize, self.bandwidth_bps, budget_s, c.min_ratio)

    def compress(self, tensors: Mapping[str, Array], budget_s: float | None = None,
                 step: int | None = None) -> dict[str, Tensor]:
        """The message to send; ``step`` (the training step) lets ``warmup_steps`` send dense."""
        if self.config.mode == "none" or (step is not None and step < self.config.warmup_steps):
            self.last_ratio = 1.0
            return dict(tensors)
        floats = {k: v for k, v in tensors.items() if np.issubdtype(v.dtype, np.floating)}
        total = sum(v.size for v in floats.values())
        itemsize = max((v.dtype.itemsize for v in floats.values()), default=4)
        ratio = self.ratio(total, itemsize, budget_s)
        self.last_ratio = ratio
        out: dict[str, Tensor] = {}
        for key, v in tensors.items():
            if key not in floats:
                out[key] = v
            elif ratio < 1.0 and self.int8 != "topk" and v.ndim >= 1 and (self.int8 == "int8" or
                    ratio * (v.dtype.itemsize + INDEX_BYTES) >= 1.0 + 4.0 / max(v.shape[-1], 1)):
                out[key] = self.feedback.int8(key, v, self.use_feedback)  # int8-fit: fits top-k's bytes
            elif ratio >= 1.0:
                out[key] = self.feedback.dense(key, v, self.use_feedback)
            else:
                out[key] = self.feedback.topk(key, v, math.ceil(ratio * v.size), self.use_feedback, self.rows)
        return out
