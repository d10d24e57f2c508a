"""Published BF16 H100 training runs the iteration model was not fitted to.

Why a module of its own: the one sustained-efficiency constant of :mod:`iteration` is fitted
on DGX A100 runs, and every figure of the Rail-only paper is about H100 clusters. These runs
check the model on H100 with nothing fitted to them: each entry is the run's configuration as
published, and the model's time for it is computed when asked for.

Source: NVIDIA Megatron-LM README, "Performance Benchmarking" (the weak-scaling table,
``images/model_table.png``, added in commit f2e5db402c44ae309aa6448bcb4ae87e8ae0f5f4 of
github.com/NVIDIA/Megatron-LM, 2024-07-15, still in d98e8a64ddf34856e74b24714e3bedb2f5a39553):
Megatron-Core r0.8.0 on H100 GPUs, GPT models with vocabulary 131,072 and sequence 4,096,
"fine-grained overlapping with DP (``--overlap-grad-reduce``, ``--overlap-param-gather``), TP
(``--tp-comm-overlap``), and PP". Per row the table gives heads, hidden size, layers, TP, PP,
DP, GPUs, global batch, per-GPU teraFLOP/s and MFU. The MFU column is the teraFLOP/s over
989 (H100 SXM dense BF16), so these are BF16 runs; the teraFLOP/s are Megatron's model FLOPs
(``num_floating_point_operations``: ``72 B s l h^2 (1 + s/6h + V/12lh)`` for these shapes,
:meth:`gpt.GptModel.model_flops`), so the published step time is ``model FLOPs / (GPUs x
teraFLOP/s)``. The README's strong-scaling figure (GPT-3 175B, 96-4,608 GPUs) gives no split
per point and is not used.

Attention kernels, an input from the source (:data:`ATTENTION`): fused. Megatron-Core r0.8's
training arguments default ``--transformer-impl`` to ``transformer_engine``
(``megatron/training/arguments.py``), whose GPT layer spec
(``megatron/core/models/gpt/gpt_layer_specs.py``, ``get_gpt_layer_with_transformer_engine_spec``)
runs the attention core as Transformer Engine's ``TEDotProductAttention``; Transformer Engine
(``transformer_engine/pytorch/attention.py``) enables its FlashAttention and cuDNN fused
backends unless ``NVTE_FLASH_ATTN=0``/``NVTE_FUSED_ATTN=0`` and picks one of them for BF16
causal attention on H100. The README names no setting that turns them off.

Inputs the source does not state, each a guess named in :data:`GUESSES`: micro-batch 1, no
interleaving (the README gives no ``--num-layers-per-virtual-pipeline-stage``), selective
recomputation (Transformer Engine's fused attention recomputes the attention core in the
backward pass, which is the work selective recomputation counts).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from typing import Sequence

from innet.testbed.rail.models.gpt import GptModel
from innet.testbed.rail.models.iteration import Parallelism, h100_cluster, iteration
from innet.testbed.rail.models.railperf import ModelError
from innet.testbed.rail.models.records import H100Row, H100Validation, PlatformOptions

SOURCE = ("Megatron-LM README weak-scaling table (images/model_table.png, NVIDIA/Megatron-LM "
          "f2e5db40); Megatron-Core r0.8.0, H100 BF16")
SEQ = 4096
VOCAB = 131072

ATTENTION = "fused"
"""The attention kernels of these runs, from the source (see the module docstring)."""



@dataclass(frozen=True)
class SplitGuess:
    """Split details the README table does not give (see the module docstring)."""

    microbatch: int = 1
    interleave: int = 1
    recompute: str = "selective"

    def pairs(self) -> tuple[tuple[str, int | str], ...]:
        return (("microbatch", self.microbatch), ("interleave", self.interleave), ("recompute", self.recompute))


GUESSES = SplitGuess()
"""The values used for what the README table does not give."""


@dataclass(frozen=True)
class H100Run:
    """One published H100 run: the model shape, the split, the batch and the measured rate."""

    params: str
    """The size as the source names it (e.g. ``"177B"``)."""
    heads: int
    hidden: int
    layers: int
    tp: int
    pp: int
    dp: int
    batch: int
    tflops_per_gpu: float
    """Published model teraFLOP/s per GPU."""

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def model(self) -> GptModel:
        return GptModel(f"gpt-{self.params.lower()}-h100", hidden=self.hidden, layers=self.layers,
                        heads=self.heads, seq=SEQ, vocab=VOCAB)

    def parallelism(self, guesses: SplitGuess = GUESSES, attention: str = ATTENTION) -> Parallelism:
        interleave = guesses.interleave
        if interleave > 1 and (self.pp == 1 or self.layers % (self.pp * interleave)):
            interleave = 1  # Megatron allows interleaving only with PP > 1 and whole chunks.
        return Parallelism(self.tp, self.pp, self.dp, microbatch=guesses.microbatch,
                           interleave=interleave, recompute=guesses.recompute, attention=attention)

    def published_seconds(self) -> float:
        """Step time implied by the published rate: model FLOPs / (GPUs x FLOP/s per GPU)."""
        if self.tflops_per_gpu <= 0:
            raise ModelError(f"run {self.params} tflops_per_gpu={self.tflops_per_gpu!r}: must be > 0")
        return self.model().model_flops(self.batch) / (self.gpus * self.tflops_per_gpu * 1e12)

    def published_mfu(self) -> float:
        return self.tflops_per_gpu * 1e12 / h100_cluster(self.gpus).gpu.peak_flops


MEGATRON_CORE_WEAK_SCALING: tuple[H100Run, ...] = (
    H100Run("1.7B", 16, 2048, 24, 1, 1, 48, 192, 408.8),
    H100Run("7.1B", 32, 4096, 30, 2, 1, 48, 192, 465.9),
    H100Run("16B", 48, 6144, 32, 4, 1, 48, 192, 489.1),
    H100Run("32B", 56, 7168, 48, 8, 1, 48, 192, 459.6),
    H100Run("70B", 64, 8192, 84, 8, 2, 48, 384, 419.7),
    H100Run("119B", 80, 10240, 92, 8, 4, 48, 768, 420.5),
    H100Run("177B", 96, 12288, 96, 8, 6, 48, 1152, 432.8),
    H100Run("314B", 128, 16384, 96, 8, 8, 48, 1536, 474.4),
    H100Run("462B", 144, 18432, 112, 8, 16, 48, 3072, 459.9),
)
"""The Megatron-LM README's weak-scaling table, row by row (source in the module docstring)."""


def validation_rows(efficiency: float, hb_efficiency: float, runs: Sequence[H100Run] = MEGATRON_CORE_WEAK_SCALING,
                    guesses: SplitGuess = GUESSES, platform_options: PlatformOptions = ()) -> list[H100Row]:
    """The iteration model on each run: DGX H100 (K = 8, NVLink 3.6 Tbit/s, 400 Gbit/s NIC
    per GPU, a rail-optimized network as the runs had), TP and DP overlap on as the source
    states, fused attention as the source's defaults give, ``efficiency`` and
    ``hb_efficiency`` as given (fitted elsewhere, never here).
    ``error`` = model MFU / published MFU - 1 (= published time / model time - 1).

    ``error_unfused`` is the same run with unfused attention (the ``s x s`` scores through HBM,
    as the 2022 A100 runs did): the model before it took the attention kernels as an input.
    ``platform_options`` override further :class:`iteration.Platform` fields."""
    rows: list[H100Row] = []
    for run in runs:
        platform = replace(h100_cluster(run.gpus, network="rail-optimized"), efficiency=efficiency,
                           hb_efficiency=hb_efficiency, tp_overlap=1.0, dp_overlap=True, **dict(platform_options))
        par = run.parallelism(guesses)
        r = iteration(run.model(), platform, par, run.batch)
        unfused = iteration(run.model(), platform, replace(par, attention="unfused"), run.batch)
        published = run.published_mfu()
        rows.append(H100Row(f"GPT-{run.params}", run.gpus, run.published_seconds(), r.total, published, r.mfu,
                            r.mfu / published - 1, unfused.mfu / published - 1,
                            (f"h {run.hidden} l {run.layers} a {run.heads}, TP {run.tp} PP {run.pp} "
                             f"DP {run.dp}, B {run.batch}, b {par.microbatch} v {par.interleave}, "
                             f"recompute {par.recompute}, attention {par.attention}")))
    return rows


ALTERNATIVE_GUESSES = {"recompute=none": replace(GUESSES, recompute="none"),
                       "recompute=full": replace(GUESSES, recompute="full"),
                       "microbatch=2": replace(GUESSES, microbatch=2),
                       "interleave=2": replace(GUESSES, interleave=2)}
"""The other plausible value of each guess, by the name the summary shows."""


def summary(efficiency: float, hb_efficiency: float, platform_options: PlatformOptions = ()) -> H100Validation:
    """Rows, median |error|, and the median under each other plausible value of every guess
    (its effect, so a reader sees how much the unstated inputs matter). ``interleave=2`` is
    applied to the runs where Megatron allows it (PP > 1, layers per stage even)."""
    rows = validation_rows(efficiency, hb_efficiency, platform_options=platform_options)
    effect: list[tuple[str, float | str]] = []
    for name, g in ALTERNATIVE_GUESSES.items():
        try:
            effect.append((name, _median(validation_rows(efficiency, hb_efficiency, guesses=g,
                                                         platform_options=platform_options))))
        except ModelError as error:
            effect.append((name, str(error)))
    # Megatron's default for bf16: gradients reduced in fp32 (iteration.Platform.grad_bytes).
    effect.append(("grad_bytes=4", _median(validation_rows(efficiency, hb_efficiency,
                                                           platform_options=(*platform_options, ("grad_bytes", 4))))))
    return H100Validation(SOURCE, ATTENTION, GUESSES.pairs(), tuple(rows), _median(rows),
                          _median(rows, unfused=True), tuple(effect))


def _median(rows: list[H100Row], unfused: bool = False) -> float:
    return statistics.median(abs(r.error_unfused if unfused else r.error) for r in rows)
