"""GPT model shapes and the work of one training step, as Korthikanti et al. count it.

Why a module of its own: the iteration-time model, the traffic matrix and the sweeps all
need the same numbers (parameters, FLOPs, bytes per layer), and the FLOP count must be the
one the published HFU values were computed with, or the validation compares two
different things. Source: Korthikanti et al., "Reducing Activation Recomputation in Large
Transformer Models" (MLSys 2023, arXiv 2205.05198), section 6 and appendix A:

* model FLOPs per iteration (no recomputation):
  ``72 B s l h^2 (1 + s/(6h) + V/(12 l h))``
* hardware FLOPs with selective recomputation (the attention core is recomputed):
  ``72 B s l h^2 (1 + s/(3h) + V/(12 l h))``
* hardware FLOPs with full recomputation: ``96 B s l h^2 (1 + s/(6h) + V/(16 l h))``

``B`` global batch (sequences), ``s`` sequence length, ``l`` layers, ``h`` hidden size,
``V`` vocabulary. Model FLOPs / (GPUs x peak x time) is MFU; hardware FLOPs / (...) is HFU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from innet.testbed.rail.models.railperf import ModelError

BYTES_PER_VALUE = 2
"""bf16/fp16 activations, weights and gradients on the wire."""

RECOMPUTE = ("none", "selective", "full")

ATTENTION = ("unfused", "fused")
"""How the attention core runs: ``unfused`` (separate ``QK^T``, softmax, dropout and ``xV``
kernels that pass the ``s x s`` scores through HBM, as Megatron's 2022 A100 runs did) or
``fused`` (one FlashAttention-style kernel that keeps the scores in on-chip SRAM; Dao et al.,
"FlashAttention", NeurIPS 2022, arXiv 2205.14135)."""

FUSED_BACKWARD_CORE_FLOPS = 2.5
"""Backward FLOPs of the fused attention core per forward FLOP. Dao et al. Algorithm 4: the
backward pass recomputes ``S = QK^T`` from Q and K (the scores were never stored) and then runs
``dV = P^T dO``, ``dP = dO V^T``, ``dQ = dS K``, ``dK = dS^T Q``: five ``s x s x d`` matrix
products against the forward's two (``QK^T``, ``PV``), where the unfused backward has four."""


@dataclass(frozen=True)
class GptModel:
    """A GPT (decoder-only transformer) shape."""

    name: str
    hidden: int
    """h."""
    layers: int
    """l."""
    heads: int
    """a: attention heads (the tensor-parallel degree must divide it)."""
    seq: int = 2048
    """s: sequence length in tokens."""
    vocab: int = 51200
    """V: vocabulary size (Megatron pads GPT-2's 50257 to 51200)."""

    def __post_init__(self) -> None:
        for name in ("hidden", "layers", "heads", "seq", "vocab"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ModelError(f"model {self.name} {name}={value!r}: must be an integer >= 1")
        if self.hidden % self.heads:
            raise ModelError(f"model {self.name} hidden={self.hidden}: must be a multiple of heads={self.heads}")

    @property
    def params(self) -> float:
        """Parameters: 12 l h^2 (attention and MLP) + 13 l h (biases, layer norms) + (V + s) h."""
        h, l = self.hidden, self.layers
        return 12 * l * h * h + 13 * l * h + (self.vocab + self.seq) * h

    def _base(self, batch: int) -> float:
        return 72.0 * batch * self.seq * self.layers * self.hidden ** 2

    def model_flops(self, batch: int) -> float:
        """FLOPs one iteration needs (forward + backward, no recomputation)."""
        s, h, l, v = self.seq, self.hidden, self.layers, self.vocab
        return self._base(batch) * (1 + s / (6 * h) + v / (12 * l * h))

    def hardware_flops(self, batch: int, recompute: str = "selective") -> float:
        """FLOPs the GPUs execute in one iteration, recomputation included."""
        s, h, l, v = self.seq, self.hidden, self.layers, self.vocab
        if recompute == "none":
            return self.model_flops(batch)
        if recompute == "selective":
            return self._base(batch) * (1 + s / (3 * h) + v / (12 * l * h))
        if recompute == "full":
            return 96.0 * batch * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))
        raise ModelError(f"recompute={recompute!r}: must be one of {', '.join(RECOMPUTE)}")


@dataclass(frozen=True)
class LayerWork:
    """One transformer layer, one micro-batch, on one GPU of a ``t``-way tensor-parallel group.

    Matrix FLOPs run on the tensor cores; the element-wise kernels (layer norms, dropout,
    residual adds, GeLU, softmax) are bound by HBM bandwidth, so they are counted in bytes.
    The attention core (``QK^T``, softmax, dropout, ``xV``) is kept apart because selective
    recomputation runs it a second time."""

    matmul_flops: float
    """Forward FLOPs of the QKV, projection and MLP GEMMs."""
    core_flops: float
    """Forward FLOPs of ``QK^T`` and ``xV``."""
    vector_bytes: float
    """Forward HBM bytes of the element-wise kernels outside the attention core."""
    core_bytes: float
    """Forward HBM bytes of the attention core: unfused, softmax and dropout over the
    ``s x s`` scores and the ``QK^T``/``xV`` operands; fused, FlashAttention's reads of Q, K, V
    and writes of O (:func:`fused_attention_bytes`)."""


def fused_attention_bytes(seq: int, head_dim: int, sram_bytes: float) -> float:
    """HBM bytes of one head's fused attention forward pass (Dao et al. Algorithm 1).

    Blocks of ``B_c = ceil(M / 4d)`` keys and values (``M`` the on-chip SRAM in values) are
    loaded once each (``2 N d`` values); for each of the ``T_c = ceil(N / B_c)`` blocks the
    query rows and the running output are read and the output written (``3 N d`` values per
    block). Total ``(2 + 3 T_c) N d`` values, which is Dao et al. Theorem 2's
    ``Theta(N^2 d^2 / M)`` (against ``Theta(N d + N^2)`` unfused); the softmax statistics
    (``2 N`` per block) are left out as ``1/d`` of that."""
    if sram_bytes <= 0:
        raise ModelError(f"sram_bytes={sram_bytes!r}: must be > 0 for fused attention")
    sram_values = sram_bytes / BYTES_PER_VALUE
    block = max(1, math.ceil(sram_values / (4 * head_dim)))
    blocks = math.ceil(seq / block)
    return BYTES_PER_VALUE * (2 + 3 * blocks) * seq * head_dim


def layer_work(model: GptModel, microbatch: int, tp: int, sequence_parallel: bool = True,
               attention: str = "unfused", sram_bytes: float = 0.0) -> LayerWork:
    """Forward work of one layer; backward is twice the FLOPs and bytes (the usual rule).

    ``attention`` (:data:`ATTENTION`) changes only the attention core's HBM bytes: fused
    attention does the same ``QK^T`` and ``xV`` FLOPs but never writes the scores, so the
    softmax and dropout traffic is gone and :func:`fused_attention_bytes` (with ``sram_bytes``
    of on-chip SRAM per SM) is what remains."""
    if attention not in ATTENTION:
        raise ModelError(f"attention={attention!r}: must be one of {', '.join(ATTENTION)}")
    b, s, h, a = microbatch, model.seq, model.hidden, model.heads
    tokens = b * s
    # Layer norms, dropouts and residuals see s/t tokens with sequence parallelism, s without.
    elems = tokens * h / tp if sequence_parallel else tokens * h
    matmul = 2 * tokens * h * (3 * h + h + 4 * h + 4 * h) / tp
    core = 2 * 2 * tokens * s * h / tp
    scores = b * (a / tp) * s * s
    vector = (BYTES_PER_VALUE * (2 * elems) * 2        # two layer norms: read + write
              + (3 * BYTES_PER_VALUE + 1) * elems * 2  # two dropout+residual: 2 reads, 1 write, mask
              + 2 * BYTES_PER_VALUE * 4 * tokens * h / tp)  # GeLU over the 4h activations
    core_bytes = ((2 * BYTES_PER_VALUE) * scores                # softmax: read + write
                  + (2 * BYTES_PER_VALUE + 1) * scores          # dropout: read + write + mask
                  + 2 * BYTES_PER_VALUE * scores)               # QK^T writes, xV reads the scores
    if attention == "fused":
        core_bytes = b * (a / tp) * fused_attention_bytes(s, h // a, sram_bytes)
    return LayerWork(matmul, core, vector, core_bytes)


MODELS: dict[str, GptModel] = {
    m.name: m for m in (
        # Korthikanti et al. 2022, Table 3 (the runs whose HFU the Rail-only paper validates against).
        GptModel("gpt-22b", hidden=6144, layers=48, heads=64),
        GptModel("gpt-175b", hidden=12288, layers=96, heads=96),
        GptModel("gpt-530b", hidden=20480, layers=105, heads=128),
        GptModel("gpt-1t", hidden=25600, layers=128, heads=160),
        # Narayanan et al. 2021 (Megatron-LM, SC'21), Table 1: the 145.6B row (Rail-only's "GPT-146B").
        GptModel("gpt-146b", hidden=12288, layers=80, heads=96),
    )
}
"""The GPT shapes the Rail-only paper evaluates (sequence 2048, vocabulary 51200)."""


def model_by_name(name: str) -> GptModel:
    """The model called ``name``; the error lists the known ones."""
    try:
        return MODELS[name]
    except KeyError:
        raise ModelError(f"model {name!r}: unknown; known: {', '.join(MODELS)}") from None
