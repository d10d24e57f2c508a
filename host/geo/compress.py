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
from typing import Iterable, Mapping

import numpy as np

from innet.host.geo.codec import (Int4Rows, Int8Rows, MaskedRows, Sparse, Tensor, TopkRows, codec_name,
                                  column_bytes, column_dtype, mask_bytes)
from innet.host.geo.ops import Array

MODES = ("none", "int8", "topk", "adatopk")
ACTIVATION_CODECS = ("topk", "int8-fit", "int8")
GRADIENT_CODECS = ("masked", "topk", "int8", "int4")
VALUE_CODECS = ("fp32", "int8", "int8-bf16")
REFERENCES = ("none", "mean", "key")
INDEX_BYTES = 4
SCALE_BYTES = 4
INT4_SCALE_BYTES = 2
"""An int4 row's scale is bfloat16 (``codec.Int4Rows``)."""


class CompressionError(ValueError):
    """Bad compression settings; names the setting and the value."""


@dataclass(frozen=True)
class CompressionConfig:
    """How tensors crossing a compressed link are sent."""

    mode: str = "none"
    """``none`` (dense), ``int8`` (int8 per row both ways, gradients with error feedback), ``topk``
    (fixed ``ratio``) or ``adatopk`` (ratio from bandwidth and compute)."""
    ratio: float = 0.1
    """Fraction of elements kept by ``topk``."""
    min_ratio: float = 0.01
    """Lower bound of AdaTopK's ratio (a link too slow for anything still carries this much)."""
    max_ratio: float = 1.0
    """Upper bound of AdaTopK's ratio. Below 1 where top-k is part of the trained model (masked
    gradients): there a link with time to spare would otherwise send more columns, or dense,
    than the model was trained through (measured with masked gradients on the slow-link WAN on
    a loaded machine: the ratio rose to 0.71 with 12% dense messages and the test loss ended at
    1.66 against fixed top-k's 0.885). With every column's gradient sent (``int4``) 1 tracks
    dense (docs/geo.md)."""
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
    """Send ``warmup`` (dense or int8) for the first N training steps: the stages' activations move
    fastest early on, and top-k started from random weights can stall or diverge (docs/geo.md)."""
    warmup: str = "dense"
    """What warm-up steps send: ``dense`` or ``int8`` per row (the gradients with error feedback)."""
    activations: str = "topk"
    """How a forward message goes when the ratio is below 1. ``topk``: top-k at the ratio, like
    gradients. ``int8-fit``: int8 per row (``codec.Int8Rows``, 1 byte per element + a float32
    scale per row) when that fits the bytes top-k at the ratio would use (value + index per kept
    element), else top-k. ``int8``: always int8 per row, never sparsified, even where that
    exceeds the ratio's bytes: every token keeps its whole vector to within 1/254 of its
    largest element, which on the language model trains like dense where top-k stalls
    (docs/geo.md)."""
    gradients: str = "topk"
    """How a backward message goes when the ratio is below 1: ``masked`` (the gradient at exactly
    the positions the forward top-k kept, no indices: the exact gradient of the sparsified
    forward, so top-k is part of the model, trained and evaluated with it; needs per-row top-k
    activations), ``topk`` at the ratio with error feedback (the residual of one microbatch's
    samples lands on the next one's: biased), ``int8`` per row (always) with error feedback, or
    ``int4`` per row (``codec.Int4Rows``: 4 bits per element, a bfloat16 scale per row; warm-up
    steps too) with error feedback. Masked gradients reach upstream only through the kept
    columns, and on the language model that delayed learning (test loss +0.18 above dense at
    step 150, mean of 6 seeds); the gradient of every column as int4 tracked dense (-0.04) for
    about the bytes masked int8 values cost (docs/geo.md)."""
    reference: str = "none"
    """What per-row top-k activations are taken relative to, a reference row that sender and
    receiver keep identically from what crossed the link (no bytes): ``none``; ``mean`` (one
    row for all, a running mean); ``key`` (one row per value of an integer feed both stages have,
    ``reference_key``: on the language model the input token, since a token's residual vector
    varies little around its own mean). Only the deviation from it is sparsified, and what top-k
    drops stays in the deviation until it is large enough to be sent (error feedback through the
    shared reference, per key rather than per sample)."""
    reference_key: str = "tokens"
    """The feed whose values key the reference rows (``reference="key"``)."""
    reference_rate: float = 0.5
    """How far a reference row moves towards a key's mean sent row per message."""
    values: str = "fp32"
    """How per-row top-k sends the kept values (both directions): ``fp32`` (the tensor's type),
    ``int8`` with one float32 scale per row (top-k + int8 values) or ``int8-bf16`` with the
    scale as bfloat16 (2 bytes per row less: on 32-wide rows of 9 kept values, 15 bytes instead of
    17)."""
    ratio_band: float = 0.25
    """AdaTopK holds its ratio while the bandwidth's ratio stays within this fraction above or
    below it (``RatioHold``): with top-k part of the trained model, every change of the kept
    count changes the function the next stage learns from. Measured by replaying a bench run's
    ratio curve (0.25-0.68 from step to step at a constant rate) on the language model, test
    loss over seeds 0-2: unheld 1.019/0.840/0.822, held (0.25, 8) 0.898/0.877/0.817, fixed
    top-k 0.897/0.878/0.820; other bands (0.25, 4) and (0.5, 16) ended 0.88 and 0.92 on average,
    so runs this short differ by a few hundredths from chaos alone."""
    ratio_patience: int = 8
    """Messages in a row the bandwidth must allow a ratio above the band before AdaTopK raises it
    (a lower one is followed at once: the link cannot carry the held one)."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise CompressionError(f"compression mode {self.mode!r}: must be one of {', '.join(MODES)}")
        for name in ("ratio", "min_ratio", "max_ratio"):
            v = getattr(self, name)
            if not 0 < v <= 1:
                raise CompressionError(f"compression {name}={v!r}: must be within (0, 1]")
        if self.min_ratio > self.max_ratio:
            raise CompressionError(f"compression min_ratio={self.min_ratio!r} is above max_ratio={self.max_ratio!r}")
        if self.activations not in ACTIVATION_CODECS:
            raise CompressionError(f"compression activations={self.activations!r}: must be one of "
                                   f"{', '.join(ACTIVATION_CODECS)}")
        if self.gradients not in GRADIENT_CODECS:
            raise CompressionError(f"compression gradients={self.gradients!r}: must be one of "
                                   f"{', '.join(GRADIENT_CODECS)}")
        if self.reference not in REFERENCES:
            raise CompressionError(f"compression reference={self.reference!r}: must be one of {', '.join(REFERENCES)}")
        if self.reference != "none" and (self.activations != "topk" or not self.row_topk):
            raise CompressionError(f"compression reference={self.reference!r}: applies to per-row top-k "
                                   "activations (activations='topk', row_topk)")
        if not 0 < self.reference_rate <= 1:
            raise CompressionError(f"compression reference_rate={self.reference_rate!r}: must be within (0, 1]")
        if self.warmup not in ("dense", "int8"):
            raise CompressionError(f"compression warmup={self.warmup!r}: must be 'dense' or 'int8'")
        if not 0 <= self.ratio_band < 1:
            raise CompressionError(f"compression ratio_band={self.ratio_band!r}: must be within [0, 1)")
        if self.ratio_patience < 1:
            raise CompressionError(f"compression ratio_patience={self.ratio_patience!r}: must be >= 1")
        if self.values not in VALUE_CODECS:
            raise CompressionError(f"compression values={self.values!r}: must be one of {', '.join(VALUE_CODECS)}")
        if self.gradients == "masked" and (self.activations != "topk" or not self.row_topk or self.feedback_activations):
            raise CompressionError("compression gradients='masked': sends the gradient where the forward top-k "
                                   "kept values, so it needs activations='topk' with row_topk and no "
                                   "feedback_activations")
        if self.mode == "topk" and self.activations == "int8":
            raise CompressionError("compression mode 'topk' with activations='int8' sends int8, not top-k: "
                                   "use mode 'int8'")
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

    def int4(self, key: str, x: Array, feedback: bool = True) -> Int4Rows:
        """``x + residual`` as 4-bit integers per row (``Int4Rows``); the rounding error becomes
        the residual (not bit-exact as ``int8``'s: with 7 levels a value and its rounding can be
        more than a factor of two apart)."""
        acc = self.accumulate(key, x) if feedback else x
        sent = Int4Rows.of(acc)
        if feedback:
            self.residuals[key] = acc - sent.dense()
        return sent

    def dense(self, key: str, x: Array, feedback: bool = True) -> Array:
        """Send everything (residual included); the residual becomes empty."""
        acc = self.accumulate(key, x) if feedback else x
        self.residuals.pop(key, None)
        return acc


class RowReference:
    """Reference rows per tensor name and key, kept in step by both ends of a link: each end
    updates them from the rows as received (reference + the sent deviation), in message order,
    with the same arithmetic, so they agree bit for bit without sending them."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.tables: dict[str, Array] = {}

    def rows(self, name: str, x: Array, keys: Array | None) -> Array:
        """The reference of every row of ``x`` (rows, width); zeros for keys not seen yet."""
        width = x.shape[-1]
        table = self.tables.get(name)
        k = _keys(x, keys)
        if table is None or table.shape[1] != width:
            return np.zeros((len(k), width), x.dtype)
        out = np.zeros((len(k), width), x.dtype)
        known = k < len(table)
        out[known] = table[k[known]]
        return out

    def update(self, name: str, received: Array, keys: Array | None) -> None:
        """Move each key's row towards the mean of its rows in ``received`` (rows as received)."""
        m = received.reshape(-1, received.shape[-1])
        k = _keys(received, keys)
        size = int(k.max()) + 1 if len(k) else 0
        table = self.tables.get(name)
        if table is None or table.shape[1] != m.shape[1] or len(table) < size:
            grown = np.zeros((max(size, len(table) if table is not None else 0), m.shape[1]), m.dtype)
            if table is not None and table.shape[1] == m.shape[1]:
                grown[:len(table)] = table
            table = grown
        sums = np.zeros_like(table)
        np.add.at(sums, k, m)
        counts = np.bincount(k, minlength=len(table))
        seen = counts > 0
        means = sums[seen] / counts[seen][:, None].astype(m.dtype)
        table[seen] = table[seen] + m.dtype.type(self.rate) * (means - table[seen])
        self.tables[name] = table


def _keys(x: Array, keys: Array | None) -> Array:
    rows = x.size // x.shape[-1]
    if keys is None:
        return np.zeros(rows, np.intp)
    k = np.asarray(keys).reshape(-1)
    if k.size != rows or not np.issubdtype(k.dtype, np.integer) or (k.size and int(k.min()) < 0):
        raise CompressionError(f"reference keys of shape {np.shape(keys)}: expected {rows} non-negative integers, "
                               f"one per row of the activation {x.shape}")
    return k.astype(np.intp)


def row_columns(x: Array, per: int) -> Array:
    """The columns of the ``per`` largest-magnitude elements of every row (last axis) of ``x``,
    ascending within each row: (rows, per)."""
    width = x.shape[-1]
    m = x.reshape(-1, width)
    per = max(1, min(int(per), width))
    if per == width:
        return np.broadcast_to(np.arange(width), (len(m), width)).copy()
    cols = np.argpartition(np.abs(m), width - per, axis=1)[:, width - per:]
    return np.sort(cols, axis=1)


def _int8_fits(ratio: float, itemsize: int, width: int) -> bool:
    """Int8 per row (a byte per element, a scale per row) costs no more than top-k at ``ratio``
    (value + index per kept element): ``activations="int8-fit"`` then sends int8."""
    return ratio * (itemsize + INDEX_BYTES) >= 1.0 + SCALE_BYTES / max(width, 1)


def adaptive_ratio(elements: int, itemsize: int, bandwidth_bps: float, budget_s: float, min_ratio: float,
                   kept_bytes: float | None = None, fixed_bytes: float = 0.0) -> float:
    """AdaTopK's ratio: 1.0 when the dense message crosses within ``budget_s``, else the ratio
    whose sparse form (``fixed_bytes`` plus ``kept_bytes`` per kept element; default value +
    4-byte index) does, floored at ``min_ratio``."""
    if elements <= 0:
        return 1.0
    budget_bytes = bandwidth_bps / 8 * max(budget_s, 0.0)
    if elements * itemsize <= budget_bytes:
        return 1.0
    per = kept_bytes if kept_bytes is not None else itemsize + INDEX_BYTES
    return min(1.0, max(min_ratio, (budget_bytes - fixed_bytes) / (elements * per)))


class RatioHold:
    """AdaTopK's ratio, held steady against a noisy bandwidth estimate. The ratio the link allows
    is followed at once when it is below the held one by more than ``band`` (the link cannot carry
    what is held), and raised only after ``patience`` messages in a row allowed more than
    ``band`` above it (or dense), to the least of them; dense (1.0) is never held once the link
    needs less.
    Within the band the held ratio stays, so the kept
    count per row, part of the function the next stage trains on, changes only when the link
    really did."""

    def __init__(self, band: float, patience: int) -> None:
        self.band = band
        self.patience = patience
        self.value: float | None = None
        self._above: list[float] = []

    def update(self, target: float) -> float:
        """The ratio to send at, given the one the bandwidth allows now."""
        if self.value is None or target < self.value * (1 - self.band) or (self.value >= 1.0 > target):
            self.value = target
            self._above.clear()
        elif target > self.value * (1 + self.band) or target >= 1.0 > self.value:
            # dense is another codec, not a few more columns: from within the band below it
            # (31 of 32 at most) the ratio would otherwise never reach it
            self._above.append(target)
            if len(self._above) >= self.patience:
                self.value = min(self._above)
                self._above.clear()
        else:
            self._above.clear()
        return self.value


class LinkCompressor:
    """The sending side of one link direction: compresses a message's tensors per the config.

    Forward (``fwd``) messages carry activations, backward (``bwd``) their gradients. With per-row
    top-k activations and ``gradients="masked"``, :meth:`compress` of a forward message records
    the columns it kept per microbatch (``kept``), and the backward compressor of the receiving
    stage is handed the same columns (``masks``) to send the gradient at exactly those places."""

    def __init__(self, config: CompressionConfig, bandwidth_bps: float | None = None,
                 direction: str = "bwd") -> None:
        if direction not in ("fwd", "bwd"):
            raise CompressionError(f"link direction {direction!r}: expected 'fwd' (activations) or 'bwd' (gradients)")
        self.config = config
        self.direction = direction
        self.use_feedback = config.feedback and (direction == "bwd" or config.feedback_activations)
        self.rows = config.row_topk and direction == "fwd"
        self.int8 = config.activations if direction == "fwd" else config.gradients
        if config.mode == "int8":
            self.int8 = "int8"
        self.int8_values = config.values in ("int8", "int8-bf16")
        self.scale16 = config.values == "int8-bf16"
        self.scale_bytes = INT4_SCALE_BYTES if self.scale16 else SCALE_BYTES
        """Bytes of an int8 value row's scale (``values="int8-bf16"``: bfloat16)."""
        self.bandwidth_bps = bandwidth_bps
        """Measured bandwidth of the link (AdaTopK); set by the probe and by the receiver's meter."""
        self.feedback = ErrorFeedback()
        self.last_ratio = 1.0
        self.last_codecs: tuple[str, ...] = ()
        self.hold = RatioHold(config.ratio_band, config.ratio_patience)
        """AdaTopK's held ratio; state a re-plan carries with the rest of the link's."""
        self.reference = RowReference(config.reference_rate)
        """The rows top-k activations are sent relative to (``config.reference``)."""
        self._keyed = config.reference == "key"
        """What the last message's float tensors were sent as (``codec.codec_name``)."""

    def kept_bytes(self, width: int) -> tuple[tuple[float, float], ...]:
        """The layouts of this direction's top-k, each as (bytes per kept element, bytes per row):
        per-row top-k sends its columns as indices or as a bitmask per row, whichever is smaller
        (``codec.column_bytes``)."""
        value = 1 if self.int8_values else 4
        scales = self.scale_bytes if self.int8_values else 0
        if self.rows:
            return ((value + int(column_dtype(width).itemsize), scales), (value, scales + mask_bytes(width)))
        return ((4 + INDEX_BYTES, 0),)

    def state(self, names: Iterable[str]) -> dict[str, Array]:
        """What this link end learnt about the tensors ``names`` that a re-plan can carry to
        whichever stage sends or receives them next: the error-feedback residual, the reference
        rows (identical at both ends) and the held AdaTopK ratio, keyed ``residual/NAME``,
        ``reference/NAME`` and ``hold/NAME``."""
        out: dict[str, Array] = {}
        for name in names:
            if name in self.feedback.residuals:
                out[f"residual/{name}"] = self.feedback.residuals[name]
            if name in self.reference.tables:
                out[f"reference/{name}"] = self.reference.tables[name]
            if self.hold.value is not None:
                out[f"hold/{name}"] = np.asarray(self.hold.value)
        return out

    def load_state(self, state: Mapping[str, Array], names: Iterable[str]) -> None:
        """Take up ``state`` (as :meth:`state` wrote it) for the tensors ``names`` this end handles."""
        for name in names:
            if f"residual/{name}" in state:
                self.feedback.residuals[name] = np.array(state[f"residual/{name}"], copy=True)
            if f"reference/{name}" in state:
                self.reference.tables[name] = np.array(state[f"reference/{name}"], copy=True)
            if f"hold/{name}" in state:
                self.hold.value = float(state[f"hold/{name}"])

    def predicted_bytes(self, shapes: Mapping[str, tuple[int, ...]], ratio: float, step: int | None = None,
                        itemsize: int = 4) -> int:
        """Payload bytes (the encoded message without its JSON header) of a message of float
        tensors of ``shapes`` sent at ``ratio`` in training step ``step``: what the cost model
        should charge a link, by the codec this compressor actually picks (dense, int8 per row,
        top-k, per-row top-k with float or int8 values, masked gradients), not ``ratio`` times
        dense."""
        c = self.config
        warm = step is not None and step < c.warmup_steps
        total = 0
        for shape in shapes.values():
            size = int(np.prod(shape)) if shape else 1
            width = shape[-1] if shape else 1
            rows = size // max(width, 1)
            int8_rows = size + SCALE_BYTES * rows
            if c.mode == "none" or (warm and c.warmup == "dense"):
                total += size * itemsize
            elif c.mode != "int8" and self.int8 == "int4" and shape and (warm or ratio < 1.0):
                total += (size + 1) // 2 + INT4_SCALE_BYTES * rows
            elif warm or c.mode == "int8" or (ratio < 1.0 and self.int8 == "int8" and shape):
                total += int8_rows
            elif self.int8 == "masked":
                per = math.ceil(ratio * width - 1e-9) if ratio < 1.0 else width
                total += size * itemsize if ratio >= 1.0 else \
                    rows * per * (1 if self.int8_values else itemsize) + \
                    (self.scale_bytes * rows if self.int8_values else 0)
            elif ratio < 1.0 and self.int8 == "int8-fit" and shape and \
                    _int8_fits(ratio, itemsize, width):
                total += int8_rows
            elif ratio >= 1.0:
                total += size * itemsize
            elif self.rows and len(shape) >= 2 and width > 1:
                per = max(1, min(width, math.ceil(ratio * width - 1e-9)))
                value = 1 if self.int8_values else itemsize
                scales = self.scale_bytes if self.int8_values else 0
                total += rows * (per * value + column_bytes(width, per) + scales)
            else:
                k = max(1, min(math.ceil(ratio * size), size))
                total += k * (itemsize + INDEX_BYTES)
        return total

    def ratio(self, elements: int, itemsize: int, budget_s: float | None, width: int = 1, rows: int = 1) -> float:
        c = self.config
        if c.mode in ("none", "int8"):
            return 1.0
        if c.mode == "topk":
            return c.ratio
        if self.bandwidth_bps is None or budget_s is None:
            raise CompressionError("adatopk needs the link's measured bandwidth and the stage's compute time")
        # the layout that keeps the most within the budget (the codec sends the smaller one)
        allowed = max(adaptive_ratio(elements, itemsize, self.bandwidth_bps, budget_s, c.min_ratio, per, row * rows)
                      for per, row in self.kept_bytes(width))
        if allowed >= 1.0 and elements * itemsize > self.bandwidth_bps / 8 * budget_s:
            # a sparse layout could carry every column (int8 values and a bitmask), but ratio 1
            # sends the dense tensor, which does not fit: the most a sparse message keeps
            allowed = max(c.min_ratio, 1.0 - 1.0 / max(width if self.rows else elements, 2))
        return self.hold.update(min(c.max_ratio, allowed))

    def compress(self, tensors: Mapping[str, Array], budget_s: float | None = None,
                 step: int | None = None, masks: Mapping[str, Array] | None = None,
                 kept: dict[str, Array] | None = None, keys: Array | None = None) -> dict[str, Tensor]:
        """The message to send; ``step`` (the training step) lets ``warmup_steps`` send dense.
        ``masks`` (backward): per tensor the columns its forward top-k kept, for masked gradients;
        ``kept`` (forward): filled with the columns this message's per-row top-k keeps; ``keys``:
        the reference key of every row (``reference="key"``)."""
        warm = step is not None and step < self.config.warmup_steps
        if self.config.mode == "none" or (warm and self.config.warmup == "dense"):
            self.last_ratio = 1.0
            self.last_codecs = tuple("dense" for v in tensors.values() if np.issubdtype(v.dtype, np.floating))
            if self.config.mode != "none":  # the receiver sees these rows too: the reference warms up
                for key, v in tensors.items():
                    self.observe(key, v, keys)
            return dict(tensors)
        if warm:  # int8 warm-up
            self.last_ratio = 1.0
            quantise = self.feedback.int4 if self.int8 == "int4" else self.feedback.int8
            warm_msg: dict[str, Tensor] = {
                k: quantise(k, v, self.use_feedback) if np.issubdtype(v.dtype, np.floating) and v.ndim >= 1
                else v for k, v in tensors.items()}
            for key, t in warm_msg.items():
                if isinstance(t, Int8Rows):
                    self.observe(key, t.dense(), keys)
            self.last_codecs = tuple(codec_name(t) for k, t in warm_msg.items()
                                     if np.issubdtype(tensors[k].dtype, np.floating))
            return warm_msg
        floats = {k: v for k, v in tensors.items() if np.issubdtype(v.dtype, np.floating)}
        total = sum(v.size for v in floats.values())
        itemsize = max((v.dtype.itemsize for v in floats.values()), default=4)
        width = max((v.shape[-1] for v in floats.values() if v.ndim), default=1)
        rows = sum(v.size // max(v.shape[-1], 1) for v in floats.values() if v.ndim)
        ratio = self.ratio(total, itemsize, budget_s, width, rows)
        self.last_ratio = ratio
        out: dict[str, Tensor] = {}
        for key, v in tensors.items():
            if key not in floats:
                out[key] = v
            elif self.int8 == "masked":
                cols = masks.get(key) if masks is not None else None
                if cols is not None:
                    out[key] = MaskedRows.of(v, cols, self.int8_values, self.scale16)
                else:  # its forward went dense
                    out[key] = self.feedback.dense(key, v, self.use_feedback)
            elif ratio < 1.0 and self.int8 == "int4" and v.ndim >= 1:
                out[key] = self.feedback.int4(key, v, self.use_feedback)
            elif ratio < 1.0 and self.int8 != "topk" and v.ndim >= 1 and (self.int8 == "int8" or
                    _int8_fits(ratio, v.dtype.itemsize, v.shape[-1])):
                out[key] = self.feedback.int8(key, v, self.use_feedback)  # int8-fit: fits top-k's bytes
            elif self.config.mode == "int8" and v.ndim >= 1:
                out[key] = self.feedback.int8(key, v, self.use_feedback)
            elif ratio >= 1.0:
                out[key] = self.feedback.dense(key, v, self.use_feedback)
                self.observe(key, v, keys)  # the receiver moves its reference towards these rows too
            elif self.rows and v.ndim >= 2 and v.shape[-1] > 1:
                acc = self.feedback.accumulate(key, v) if self.use_feedback else v
                ref = self._reference(key, acc, keys)
                cols = row_columns(acc if ref is None else acc - ref.reshape(acc.shape),
                                   math.ceil(ratio * v.shape[-1] - 1e-9))
                sent = TopkRows.of(acc if ref is None else acc - ref.reshape(acc.shape), cols, self.int8_values,
                                   referenced=ref is not None, scale16=self.scale16)
                if ref is not None:
                    self.reference.update(key, ref.reshape(acc.shape) + sent.dense(), keys if self._keyed else None)
                if self.use_feedback:
                    self.feedback.residuals[key] = acc - sent.dense()
                if kept is not None:
                    kept[key] = cols
                out[key] = sent
            else:
                out[key] = self.feedback.topk(key, v, math.ceil(ratio * v.size), self.use_feedback, self.rows)
        self.last_codecs = tuple(codec_name(out[k]) for k in floats)
        return out

    def _reference(self, name: str, x: Array, keys: Array | None) -> Array | None:
        if self.config.reference == "none" or self.direction != "fwd":
            return None
        if self._keyed and keys is None:
            raise CompressionError(f"compression reference='key': no {self.config.reference_key!r} feed for "
                                   f"the rows of {name!r}")
        return self.reference.rows(name, x, keys if self._keyed else None)

    def observe(self, name: str, x: Array, keys: Array | None) -> None:
        """A forward tensor that crossed dense (warm-up): both ends move the reference towards it."""
        if self.config.reference != "none" and self.direction == "fwd" and np.issubdtype(x.dtype, np.floating) \
                and x.ndim >= 2 and x.shape[-1] > 1:
            self.reference.update(name, x, keys if self._keyed else None)

    def receive(self, name: str, t: TopkRows, keys: Array | None) -> Array:
        """The receiving end of a referenced per-row top-k: reference + deviation, and the
        reference updated exactly as the sender updated its own."""
        dev = t.dense()
        if not t.referenced:
            return dev
        ref = self._reference(name, dev, keys)
        assert ref is not None
        out = ref.reshape(dev.shape) + dev
        self.reference.update(name, out, keys if self._keyed else None)
        return out

    def infer(self, tensors: Mapping[str, Array], keys: Array | None = None) -> dict[str, Array]:
        """``tensors`` as the receiver sees them through this link's per-row top-k at the last
        ratio, without touching the residuals: the evaluation forward of a model trained with
        top-k activations (the sparsification is part of that model). Other codecs: unchanged."""
        if not (self.rows and self.config.activations == "topk" and self.last_ratio < 1.0):
            return dict(tensors)
        out: dict[str, Array] = {}
        for key, v in tensors.items():
            if np.issubdtype(v.dtype, np.floating) and v.ndim >= 2 and v.shape[-1] > 1:
                ref = self._reference(key, v, keys)
                dev = v if ref is None else v - ref.reshape(v.shape)
                cols = row_columns(dev, math.ceil(self.last_ratio * v.shape[-1] - 1e-9))
                out[key] = TopkRows.of(dev, cols, self.int8_values, scale16=self.scale16).dense() + \
                    (0 if ref is None else ref.reshape(v.shape))
            else:
                out[key] = v
        return out
