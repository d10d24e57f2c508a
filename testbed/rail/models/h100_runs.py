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
from typing import Any, Sequence

from innet.testbed.rail.models.gpt import GptModel
from innet.testbed.rail.models.iteration import Parallelism, h100_cluster, iteration
from innet.testbed.rail.models.railperf import ModelError

SOURCE = ("Megatron-LM README weak-scaling table (images/model_table.png, NVIDIA/Megatron-LM "
          "f2e5db40); Megatron-Core r0.8.0, H100 BF16")
SEQ = 4096
VOCAB = 131072

ATTENTION = "fused"
"""The attention kernels of these runs, from the source (see the module docstring)."""

GUESSES = {"microbatch": 1, "interleave": 1, "recompute": "selective"}
"""Split details the README table does not give (see the module docstring)."""


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

    def parallelism(self, guesses: dict[str, Any] | None = None, attention: str = ATTENTION) -> Parallelism:
        g = {**GUESSES, **(guesses or {})}
        interleave = int(g["interleave"])
        if interleave > 1 and (self.pp == 1 or self.layers % (self.pp * interleave)):
            interleave = 1  # Megatron allows interleaving only with PP > 1 and whole chunks.
        return Parallelism(self.tp, self.pp, self.dp, microbatch=int(g["microbatch"]),
                           interleave=interleave, recompute=str(g["recompute"]), attention=attention)

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
                    guesses: dict[str, Any] | None = None,
                    platform_options: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The iteration model on each run: DGX H100 (K = 8, NVLink 3.6 Tbit/s, 400 Gbit/s NIC
    per GPU, a rail-optimized network as the runs had), TP and DP overlap on as the source
    states, fused attention as the source's defaults give, ``efficiency`` and
    ``hb_efficiency`` as given (fitted elsewhere, never here).
    ``error`` = model MFU / published MFU - 1 (= published time / model time - 1).

    ``error_unfused`` is the same run with unfused attention (the ``s x s`` scores through HBM,
    as the 2022 A100 runs did): the model before it took the attention kernels as an input.
    ``platform_options`` override further :class:`iteration.Platform` fields."""
    rows: list[dict[str, Any]] = []
    for run in runs:
        platform = replace(h100_cluster(run.gpus, network="rail-optimized"), efficiency=efficiency,
                           hb_efficiency=hb_efficiency, tp_overlap=1.0, dp_overlap=True, **(platform_options or {}))
        par = run.parallelism(guesses)
        r = iteration(run.model(), platform, par, run.batch)
        unfused = iteration(run.model(), platform, replace(par, attention="unfused"), run.batch)
        published = run.published_mfu()
        rows.append({"model": f"GPT-{run.params}", "gpus": run.gpus, "published_s": run.published_seconds(),
                     "model_s": r.total, "published_mfu": published, "model_mfu": r.mfu,
                     "error": r.mfu / published - 1, "error_unfused": unfused.mfu / published - 1,
                     "config": (f"h {run.hidden} l {run.layers} a {run.heads}, TP {run.tp} PP {run.pp} "
                                f"DP {run.dp}, B {run.batch}, b {par.microbatch} v {par.interleave}, "
                                f"recompute {par.recompute}, attention {par.attention}")})
    return rows


def summary(efficiency: float, hb_efficiency: float, platform_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Rows, median |error|, and the median under each other plausible value of every guess
    (its effect, so a reader sees how much the unstated inputs matter). ``interleave=2`` is
    applied to the runs where Megatron allows it (PP > 1, layers per stage even)."""
    rows = validation_rows(efficiency, hb_efficiency, platform_options=platform_options)
    alternatives: dict[str, dict[str, Any]] = {"recompute=none": {"recompute": "none"},
                                               "recompute=full": {"recompute": "full"},
                                               "microbatch=2": {"microbatch": 2},
                                               "interleave=2": {"interleave": 2}}
    effect: dict[str, float | str] = {}
    for name, g in alternatives.items():
        try:
            effect[name] = _median(validation_rows(efficiency, hb_efficiency, guesses=g,
                                                   platform_options=platform_options))
        except ModelError as error:
            effect[name] = str(error)
    # Megatron's default for bf16: gradients reduced in fp32 (iteration.Platform.grad_bytes).
    effect["grad_bytes=4"] = _median(validation_rows(efficiency, hb_efficiency,
                                                     platform_options={**(platform_options or {}), "grad_bytes": 4}))
    return {"source": SOURCE, "attention": ATTENTION, "guesses": dict(GUESSES), "rows": rows,
            "median_abs_error": _median(rows), "median_abs_error_unfused": _median(rows, "error_unfused"),
            "guess_effect": effect}


def _median(rows: list[dict[str, Any]], key: str = "error") -> float:
    return statistics.median(abs(float(r[key])) for r in rows)
