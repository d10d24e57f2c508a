"""Iteration time and HFU of GPT training with tensor, pipeline and data parallelism on a
rail network: the Rail-only paper's analytical model (its section V, "similar to Calculon").

Why an analytical model: the paper's claims about HB-domain size, bandwidths and batch size
(figures 8-10) are about clusters of 16k-65k H100s; they can only be checked by a model that
is first checked against published runs (``VALIDATION``, docs/rail.md).

One iteration on ``N = t p d`` GPUs (tensor, pipeline, data parallel), global batch ``B`` in
micro-batches of ``b``, ``m = B/(d b)`` micro-batches per pipeline, interleaving ``v``:

* per layer and micro-batch, forward = GEMM FLOPs / (peak x e) + element-wise bytes /
  (HBM x e) (:func:`innet.testbed.rail.models.gpt.layer_work`), backward twice that, plus the
  attention core once more (selective recomputation); ``e`` is one sustained-efficiency
  factor for the GPU, fitted to the published runs (:func:`calibrate`); the attention core's
  bytes depend on the run's kernels (:attr:`Parallelism.attention`: unfused, the default, or
  fused FlashAttention-style);
* tensor parallelism with sequence parallelism (Korthikanti et al.): per layer and
  micro-batch 6 all-gathers and 4 reduce-scatters of ``b s h`` values (forward 2+2, backward
  2+2, plus the all-gather redone for the weight gradient), not overlapped;
* pipeline: 1F1B, ``(m + (p-1)/v)`` stage-times; the point-to-point sends of ``b s h / t``
  values overlap the next micro-batch's computation in the steady state (the paper assumes
  overlap), so only the ``2(pv-1)`` sends of the fill and the drain are exposed
  (:attr:`Platform.pp_overlap` off: Megatron-LM 2021's blocking sends, ``2(mv + p - 1)``);
* data parallelism: a reduce-scatter and an all-gather of the stage's gradients (bf16), which
  overlap the last micro-batch's backward pass (the paper assumes overlap); the rest is
  exposed;
* optimizer: Adam over the GPU's shard of the parameters, HBM-bound (30 bytes/parameter).

Collectives are hierarchical (paper section III-B, IV-B): a group with ``x`` members in each
of ``y`` HB domains runs the HB phase at ``C_F`` and the rail phase at ``C_S``:
``T_AG = T_RS = (x-1)/x M/C_F + (y-1)/(x y) M/C_S`` for ``M`` bytes gathered, and an allreduce
is both. Ranks are placed as Megatron does (tensor fastest, then data, then pipeline), so
each collective's rail phase pairs GPUs of the same local rank (one rail) whenever the group
is a grid; when it is not, rail-only forwards the rail phase's bytes through the HB domain
first (the paper's two-step route, one more ``M/C_F`` share), rail-optimized sends them over
the spine. ``K = N`` is the paper's ideal: one HB domain, everything at ``C_F``.

An HB domain is one flat full-bisection fabric, as the paper takes it; a two-tier domain
(:attr:`Platform.hb_tier_size`, the DGX GH200's 8-GPU boards joined at half the NVLink rate)
slows the HB phase of groups that leave their board on every ring hop (:func:`tier_slowdown`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Iterable, Sequence

import numpy as np

from innet.testbed.rail.models.gpt import (ATTENTION, BYTES_PER_VALUE, FUSED_BACKWARD_CORE_FLOPS, RECOMPUTE,
                                            GptModel, layer_work, model_by_name)
from innet.testbed.rail.models.railperf import ModelError
from innet.testbed.rail.models.records import PublishedRunRow

NETWORKS = ("rail-only", "rail-optimized")
TP_COLLECTIVES_PER_LAYER = 10
"""All-gathers + reduce-scatters per layer and micro-batch with sequence parallelism."""
COLUMN_GEMM_SHARE = 7 / 12
"""Share of a layer's GEMM FLOPs in its column-parallel layers: QKV (3h^2) and the first MLP
layer (4h^2) of 3h^2 + h^2 + 4h^2 + 4h^2."""
ADAM_BYTES_PER_PARAM = 30
"""HBM traffic of one fused Adam step per parameter: read fp32 master, m, v, grad (16),
write master, m, v (12), write the bf16 copy (2)."""
ACTIVATION_BYTES = 34
"""Korthikanti et al. eq. 2: bytes per token and hidden unit of one layer's stored
activations with sequence parallelism and selective recomputation (divided by t)."""


@dataclass(frozen=True)
class Gpu:
    """Datasheet figures of one GPU (dense bf16)."""

    name: str
    peak_flops: float
    """Tensor-core FLOP/s, dense bf16."""
    hbm_bytes_s: float
    """HBM bandwidth, bytes/s."""
    memory_bytes: float
    """HBM capacity, bytes."""
    sram_bytes: float = 0.0
    """On-chip SRAM (combined L1/shared memory) per SM, bytes: the ``M`` of fused attention's
    HBM traffic (:func:`gpt.fused_attention_bytes`)."""


A100 = Gpu("a100", peak_flops=312e12, hbm_bytes_s=2.039e12, memory_bytes=80e9, sram_bytes=192 * 1024)
"""A100 SXM4 80GB datasheet: 312 TFLOPS bf16 dense, 2,039 GB/s; 192 KB SRAM per SM (the
figure Dao et al. use for A100)."""
H100 = Gpu("h100", peak_flops=989e12, hbm_bytes_s=3.35e12, memory_bytes=80e9, sram_bytes=256 * 1024)
"""H100 SXM5 datasheet: 989 TFLOPS bf16 dense (1,979 with sparsity), 3.35 TB/s; 256 KB of
combined L1/shared memory per SM (NVIDIA H100 Tensor Core GPU Architecture whitepaper)."""

FITTED_EFFICIENCY = 0.737
"""Sustained fraction of peak FLOP/s and HBM bandwidth: the least-squares fit of the four
published Megatron runs (:func:`calibrate`; a unit test recomputes it). Used for A100 and,
carried over unfitted, for H100 too; :mod:`h100_runs` checks it on published BF16 H100 runs
(docs/rail.md)."""
HB_EFFICIENCY = 0.6
"""Fraction of ``C_F`` NCCL collectives reach inside an NVLink domain as Calculon's published
A100 system description sets it (calculon/examples/a100.json); kept as the "before" setting."""
HB_EFFICIENCY_MEASURED = 370 / 450
"""Fraction of ``C_F`` NCCL reaches on NVLink as measured: 370 GB/s of the 450 GB/s line rate
on DGX H100 ("with the protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of
370GB/s", NCCL maintainer S. Jeaugey, github.com/NVIDIA/nccl-tests/issues/212, 2024-05-06)."""
NIC_EFFICIENCY = 0.9
"""Fraction of ``C_S`` reached on the NIC (same source)."""
GH200_TIER_SIZE = 8
"""GPUs under one first-tier NVSwitch group of a DGX GH200: its eight-superchip boards, joined
by the second NVSwitch tier into one 256-GPU NVLink domain (the paper's K = 256, section II)."""
GH200_ALL_TO_ALL_BYTES_S = 57.6e12
"""All-to-all bandwidth NVIDIA publishes for the 256-GPU DGX GH200 NVLink Switch System
("deliver 57.6 terabytes per second (TB/s) of all-to-all bandwidth", NVIDIA Hopper
architecture page): 225 GB/s per GPU, half the 450 GB/s each way of its 18 NVLink4 links
(900 GB/s bidirectional), so the second tier is tapered 2:1 although the paper calls the
domain full bisection."""
GH200_CROSS_TIER = GH200_ALL_TO_ALL_BYTES_S / 256 / 450e9
"""Bandwidth per GPU between first-tier groups over the NVLink rate: 0.5."""


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or not math.isfinite(value):
        raise ModelError(f"{name}={value!r}: must be a number > 0")


def _count(name: str, value: int, low: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ModelError(f"{name}={value!r}: must be an integer >= {low}")


@dataclass(frozen=True)
class Platform:
    """A cluster: ``gpus`` GPUs in HB domains of ``hb_size``, joined by a rail network."""

    gpu: Gpu
    gpus: int
    """N."""
    hb_size: int
    """K: GPUs per HB domain; ``K = N`` is one fabric over every GPU (the paper's ideal)."""
    c_f_bps: float
    """HB-domain bandwidth per GPU, bit/s each way."""
    c_s_bps: float
    """NIC (rail) bandwidth per GPU, bit/s each way."""
    network: str = "rail-only"
    efficiency: float = FITTED_EFFICIENCY
    hb_efficiency: float = HB_EFFICIENCY
    nic_efficiency: float = NIC_EFFICIENCY
    tp_overlap: float = 0.0
    """Fraction of each layer's GEMM time the tensor-parallel collectives can hide behind:
    0 is Megatron 2022 (collectives on the critical path, the published A100 runs); 1 is
    Megatron-Core's ``--tp-comm-overlap`` (Transformer Engine splits each all-gather /
    reduce-scatter and the GEMM that consumes or produces it into chunks and runs them at
    once), what the paper's model assumes (section V-A names "the assumption of overlap
    between computation and communication" as an error source)."""
    tp_async_backward: bool = False
    """Whether the backward pass's input-gradient reduce-scatters (all-reduces without sequence
    parallelism) and the all-gathers redone for the weight gradients run beside the
    column-parallel layers' GEMMs, as Megatron-LM's
    ``LinearWithGradAccumulationAndAsyncCommunication.backward`` launches them asynchronously;
    only what exceeds those GEMMs is then exposed. Off by default: the published runs fit
    worse with it (``innet model reproduce``, model alternatives)."""
    last_stage_logits: bool = False
    """Whether the output layer's logits load the last pipeline stage alone (Megatron builds
    the output layer on the last stage only), which then paces the steady state; False
    spreads them over the stages. Off by default for the same reason."""
    dp_overlap: bool = True
    """Whether the gradient reduce-scatter/all-gather overlaps the last micro-batch's backward
    pass (Megatron-Core's ``--overlap-grad-reduce``); False is Megatron 2021/2022, which
    reduces the gradients after the backward pass."""
    grad_bytes: int = 2
    """Bytes per gradient value the DP reduce-scatter moves; the all-gather that follows
    carries the updated bf16 parameters (2 bytes, the distributed optimizer). 2 (bf16) by
    default; Megatron-LM reduces in fp32 (4) for bf16 training unless ``--grad-reduce-in-bf16``
    is given (``arguments.py``: "bfloat16 requires gradient accumulation and all-reduce to be
    done in fp32"), but with 4 the published Megatron-Core H100 runs come out slower than
    measured (:func:`h100_runs.summary` prints the median error under ``grad_bytes=4``), so 4
    is shown as an alternative, not used."""
    pp_overlap: bool = True
    """Whether the steady state's point-to-point sends overlap computation; False is
    Megatron-LM 2021/2022, whose ``p2p_communication._communicate`` waits on every
    ``batch_isend_irecv`` request and synchronizes the device, so each micro-batch's forward
    and backward send is on the critical path."""
    hb_tier_size: int = 0
    """GPUs per first-tier switch group inside an HB domain (:data:`GH200_TIER_SIZE` for a DGX
    GH200); 0 is one flat full-bisection tier, the paper's reading of every HB domain."""
    hb_cross_tier: float = 1.0
    """Bandwidth per GPU between first-tier groups as a fraction of ``C_F``
    (:data:`GH200_CROSS_TIER` for a DGX GH200)."""

    def __post_init__(self) -> None:
        _count("gpus", self.gpus)
        _count("hb_size", self.hb_size)
        if self.hb_size > self.gpus or self.gpus % self.hb_size:
            raise ModelError(f"hb_size={self.hb_size}: must divide gpus={self.gpus}")
        _positive("c_f (HB bandwidth)", self.c_f_bps)
        _positive("c_s (NIC bandwidth)", self.c_s_bps)
        if self.network not in NETWORKS:
            raise ModelError(f"network={self.network!r}: must be one of {', '.join(NETWORKS)}")
        for name in ("efficiency", "hb_efficiency", "nic_efficiency"):
            value = getattr(self, name)
            _positive(name, value)
            if value > 1:
                raise ModelError(f"{name}={value!r}: must be within (0, 1]")
        if isinstance(self.tp_overlap, bool) or not 0 <= self.tp_overlap <= 1:
            raise ModelError(f"tp_overlap={self.tp_overlap!r}: must be within [0, 1]")
        if self.grad_bytes not in (2, 4):
            raise ModelError(f"grad_bytes={self.grad_bytes!r}: must be 2 (bf16) or 4 (fp32)")
        _count("hb_tier_size", self.hb_tier_size, low=0)
        _positive("hb_cross_tier", self.hb_cross_tier)
        if self.hb_cross_tier > 1:
            raise ModelError(f"hb_cross_tier={self.hb_cross_tier!r}: must be within (0, 1]")

    @property
    def hb_bytes_s(self) -> float:
        return self.c_f_bps / 8 * self.hb_efficiency

    @property
    def nic_bytes_s(self) -> float:
        return self.c_s_bps / 8 * self.nic_efficiency


def dgx_a100(gpus: int) -> Platform:
    """DGX A100 servers: K = 8, NVLink 2.4 Tbit/s, one 200 Gbit/s HDR NIC per GPU."""
    return Platform(A100, gpus, 8, 2.4e12, 200e9)


def h100_cluster(gpus: int, hb_size: int = 8, c_f_bps: float = 3.6e12, c_s_bps: float = 400e9,
                 network: str = "rail-only") -> Platform:
    """H100 GPUs (NVLink 3.6 Tbit/s, one 400 Gbit/s NIC each) in HB domains of ``hb_size``."""
    return Platform(H100, gpus, hb_size, c_f_bps, c_s_bps, network)


@dataclass(frozen=True)
class Parallelism:
    """How a model is split: ``tp * pp * dp`` must be the platform's GPU count."""

    tp: int
    pp: int
    dp: int
    microbatch: int = 1
    interleave: int = 1
    """v: model chunks per pipeline stage (Megatron's interleaved 1F1B)."""
    recompute: str = "selective"
    """Activation recomputation: ``none``, ``selective`` (the attention core, Korthikanti et
    al.) or ``full`` (every layer's forward pass again before its backward pass)."""
    sequence_parallel: bool = True
    """Korthikanti et al.'s sequence parallelism (TP as all-gathers and reduce-scatters, the
    element-wise kernels split over the TP ranks); False is Megatron 2021 (TP all-reduces)."""
    attention: str = "unfused"
    """The attention kernels a run used (:data:`gpt.ATTENTION`): ``unfused`` as in the 2022
    A100 runs every figure here is built on, ``fused`` (FlashAttention-style) for runs that
    state it. Fused attention keeps the ``s x s`` scores on chip and recomputes ``QK^T`` in
    its backward pass (:data:`gpt.FUSED_BACKWARD_CORE_FLOPS`)."""

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "microbatch", "interleave"):
            _count(name, getattr(self, name))
        if self.recompute not in RECOMPUTE:
            raise ModelError(f"recompute={self.recompute!r}: must be one of {', '.join(RECOMPUTE)}")
        if self.attention not in ATTENTION:
            raise ModelError(f"attention={self.attention!r}: must be one of {', '.join(ATTENTION)}")

    @property
    def tp_async_collectives(self) -> int:
        """Of :attr:`tp_collectives`, the passes Megatron can run beside the backward GEMMs:
        the two input-gradient reduce-scatters and the two redone all-gathers (sequence
        parallelism), or the two input-gradient all-reduces (without)."""
        return 4

    @property
    def tp_collectives(self) -> int:
        """All-gather/reduce-scatter passes per layer and micro-batch (an all-reduce is two):
        forward 4, backward 4 (sequence parallelism adds the all-gather redone for the weight
        gradients: 6), and the forward's 4 again under full recomputation."""
        base = TP_COLLECTIVES_PER_LAYER if self.sequence_parallel else 8
        return base + (4 if self.recompute == "full" else 0)


@dataclass(frozen=True)
class GroupShape:
    """Where one communication group's members sit: ``x`` per HB domain, ``y`` domains."""

    x: int
    y: int
    aligned: bool
    """True when the j-th member of every domain has the same local rank (one rail)."""


@functools.lru_cache(maxsize=4096)
def strided_shape(size: int, stride: int, hb_size: int) -> GroupShape:
    """The shape of the group ``0, stride, ..., (size-1)*stride`` (every Megatron group is a
    translate of one of these)."""
    if size == 1:
        return GroupShape(1, 1, True)
    if stride >= hb_size:
        return GroupShape(1, size, stride % hb_size == 0)
    if hb_size % stride == 0:
        x = min(size, hb_size // stride)
        if size % x == 0:
            return GroupShape(x, size // x, True)
    return group_shape(np.arange(size) * stride, hb_size)


def group_shape(ranks: np.ndarray, hb_size: int) -> GroupShape:
    """The shape of the group of global ``ranks`` on HB domains of ``hb_size``."""
    domains, counts = np.unique(ranks // hb_size, return_counts=True)
    if len(domains) == 1:
        return GroupShape(int(counts[0]), 1, True)
    local = [np.sort(ranks[ranks // hb_size == d] % hb_size) for d in domains]
    aligned = all(len(a) == len(local[0]) and bool(np.all(a == local[0])) for a in local)
    return GroupShape(int(counts.max()), len(domains), aligned)


def tier_slowdown(shape: GroupShape, stride: int, platform: Platform) -> float:
    """How much slower the HB phase of a group with members ``stride`` ranks apart runs on a
    two-tier HB domain (:attr:`Platform.hb_tier_size`) than on a flat one.

    Every group of a collective runs at once. A ring through ``r`` members per first-tier
    group of ``G`` GPUs leaves that group once per ``r`` hops, so ``G / r`` flows at the full
    per-GPU rate share ``G x hb_cross_tier`` of uplink: the phase slows by
    ``max(1, 1 / (r hb_cross_tier))``, and not at all when the group fits in one tier group.
    On a DGX GH200 (cross-tier 0.5) only groups with one member per board slow down, by 2."""
    tier = platform.hb_tier_size
    if tier == 0 or tier >= platform.hb_size or shape.x < 2 or (shape.x - 1) * stride < tier:
        return 1.0
    per_tier = max(1, tier // stride)
    return max(1.0, 1.0 / (per_tier * platform.hb_cross_tier))


def gather_time(shape: GroupShape, total_bytes: float, platform: Platform, hb_slowdown: float = 1.0) -> float:
    """Seconds of a hierarchical all-gather (or reduce-scatter) of ``total_bytes``; the HB
    phase takes ``hb_slowdown`` times its flat-fabric time (:func:`tier_slowdown`)."""
    x, y = shape.x, shape.y
    t = (x - 1) / x * total_bytes / platform.hb_bytes_s * hb_slowdown if x > 1 else 0.0
    if y > 1:
        rail_bytes = (y - 1) / (x * y) * total_bytes
        t += rail_bytes / platform.nic_bytes_s
        if not shape.aligned and platform.network == "rail-only":
            t += rail_bytes / platform.hb_bytes_s  # forwarded through the HB domain first
    return t


def p2p_time(src: int, dst: int, nbytes: float, platform: Platform) -> float:
    """Seconds to send ``nbytes`` from rank ``src`` to ``dst``."""
    k = platform.hb_size
    if src // k == dst // k:
        return nbytes / platform.hb_bytes_s
    t = nbytes / platform.nic_bytes_s
    if src % k != dst % k and platform.network == "rail-only":
        t += nbytes / platform.hb_bytes_s
    return t


@dataclass(frozen=True)
class Breakdown:
    """One iteration's time, split by cause (seconds), and the utilization it gives."""

    compute: float
    """m micro-batches of the stage's computation (TP communication excluded)."""
    bubble: float
    """Pipeline fill and drain."""
    tensor: float
    """Exposed tensor-parallel collectives (m micro-batches plus their share of the bubble)."""
    pipeline: float
    """Exposed point-to-point sends between stages (pipeline fill and drain)."""
    data: float
    """Exposed data-parallel gradient reduce-scatter + all-gather."""
    optimizer: float
    total: float
    hfu: float
    mfu: float
    memory_bytes: float
    """Peak bytes per GPU (weights, gradients, sharded optimizer state, activations)."""


def memory_bytes(model: GptModel, par: Parallelism, micro_batches: int) -> float:
    """Per-GPU memory of the first pipeline stage (the one holding the most activations)."""
    params = model.params / (par.tp * par.pp)
    in_flight = min(micro_batches, par.pp)
    acts = ACTIVATION_BYTES * model.seq * par.microbatch * model.hidden / par.tp * (model.layers / par.pp) * in_flight
    if par.interleave > 1:
        acts *= 1 + (par.pp - 1) / (par.pp * par.interleave)
    return params * (2 + 4) + params * 12 / par.dp + acts


def _check(model: GptModel, platform: Platform, par: Parallelism, batch: int) -> int:
    _count("batch", batch)
    if par.tp * par.pp * par.dp != platform.gpus:
        raise ModelError(f"tp*pp*dp={par.tp}*{par.pp}*{par.dp}={par.tp * par.pp * par.dp}: "
                         f"must equal gpus={platform.gpus}")
    if model.heads % par.tp:
        raise ModelError(f"tp={par.tp}: must divide {model.name} heads={model.heads}")
    if model.layers % (par.pp * par.interleave):
        raise ModelError(f"pp*interleave={par.pp}*{par.interleave}: must divide {model.name} "
                         f"layers={model.layers}")
    if batch % (par.dp * par.microbatch):
        raise ModelError(f"batch={batch}: must be a multiple of dp*microbatch={par.dp}*{par.microbatch}")
    return batch // (par.dp * par.microbatch)


def iteration(model: GptModel, platform: Platform, par: Parallelism, batch: int) -> Breakdown:
    """Time of one training iteration of ``model`` with global ``batch`` sequences."""
    m = _check(model, platform, par, batch)
    gpu, e = platform.gpu, platform.efficiency
    flops_s, hbm_s = gpu.peak_flops * e, gpu.hbm_bytes_s * e
    t, p, d, b, v = par.tp, par.pp, par.dp, par.microbatch, par.interleave
    w = layer_work(model, b, t, par.sequence_parallel, par.attention, gpu.sram_bytes)
    fwd = (w.matmul_flops + w.core_flops) / flops_s + (w.vector_bytes + w.core_bytes) / hbm_s
    recompute = {"none": 0.0, "selective": w.core_flops / flops_s + w.core_bytes / hbm_s, "full": fwd}[par.recompute]
    # Fused attention's backward redoes QK^T (Dao et al. Algorithm 4): half a forward core more.
    fused_extra = (FUSED_BACKWARD_CORE_FLOPS - 2) * w.core_flops / flops_s if par.attention == "fused" else 0.0
    layer = 3 * fwd + recompute + fused_extra
    logits = 6 * b * model.seq * model.hidden * model.vocab / t / flops_s  # spread over the stages
    stage = model.layers / p * layer + logits / p
    tp_shape = strided_shape(t, 1, platform.hb_size)
    act = b * model.seq * model.hidden * BYTES_PER_VALUE
    tp_time = gather_time(tp_shape, act, platform, tier_slowdown(tp_shape, 1, platform))
    tp_layer = 0.0
    if t > 1:
        beside = par.tp_async_collectives if platform.tp_async_backward else 0
        # The QKV and first MLP GEMMs again, for the input and the weight gradients.
        column_backward = 2 * COLUMN_GEMM_SHARE * w.matmul_flops / flops_s
        tp_layer = (par.tp_collectives - beside) * tp_time + max(0.0, beside * tp_time - column_backward)
    # Overlapped collectives hide behind the forward and backward GEMMs of the same layer.
    tp_layer = max(0.0, tp_layer - platform.tp_overlap * 3 * w.matmul_flops / flops_s)
    tp_stage = model.layers / p * tp_layer
    steps = m + (p - 1) / v
    # With the logits on the last stage that stage paces the steady state; fill and drain
    # take the average stage.
    paced = model.layers / p * layer + logits if platform.last_stage_logits else stage
    compute, bubble = m * paced, (p - 1) / v * stage
    tensor = steps * tp_stage
    pipeline = 0.0
    if p > 1:
        send = p2p_time(0, t * d, act / t, platform)
        # Blocking sends: one each way per micro-batch chunk, plus the fill and the drain.
        pipeline = 2 * (p * v - 1 if platform.pp_overlap else m * v + p - 1) * send
    data = 0.0
    if d > 1:
        dp_shape = strided_shape(d, t, platform.hb_size)
        values = model.params / (t * p)
        slowdown = tier_slowdown(dp_shape, t, platform)
        scatter = gather_time(dp_shape, values * platform.grad_bytes, platform, slowdown)
        gather = gather_time(dp_shape, values * BYTES_PER_VALUE, platform, slowdown)
        backward_last = 2 * (model.layers / p) * fwd if platform.dp_overlap else 0.0
        data = max(0.0, scatter + gather - backward_last)
    optimizer = ADAM_BYTES_PER_PARAM * model.params / (t * p * d) / hbm_s
    total = compute + bubble + tensor + pipeline + data + optimizer
    peak = platform.gpus * gpu.peak_flops * total
    return Breakdown(compute, bubble, tensor, pipeline, data, optimizer, total,
                     model.hardware_flops(batch, par.recompute) / peak, model.model_flops(batch) / peak,
                     memory_bytes(model, par, m))


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def candidates(model: GptModel, gpus: int, batch: int,
               microbatches: Sequence[int] = (1, 2, 4, 8), interleaves: Sequence[int] = (1, 2, 4)
               ) -> Iterable[Parallelism]:
    """Every split Megatron could run: t | heads, p*v | layers, t*p*d = N, d*b | B."""
    for t in _divisors(model.heads):
        if gpus % t:
            continue
        for p in _divisors(model.layers):
            if (gpus // t) % p:
                continue
            d = gpus // (t * p)
            for b in microbatches:
                if batch % (d * b):
                    continue
                m = batch // (d * b)
                for v in interleaves:
                    if model.layers % (p * v) or (v > 1 and (p == 1 or m % p)):
                        continue
                    yield Parallelism(t, p, d, b, v)


def best(model: GptModel, platform: Platform, batch: int) -> tuple[Parallelism, Breakdown]:
    """The split with the shortest iteration that fits in GPU memory (the paper optimizes the
    parallelization strategy for every configuration it plots)."""
    found: tuple[Parallelism, Breakdown] | None = None
    for par in candidates(model, platform.gpus, batch):
        m = batch // (par.dp * par.microbatch)
        if memory_bytes(model, par, m) > platform.gpu.memory_bytes:
            continue
        r = iteration(model, platform, par, batch)
        if found is None or r.total < found[1].total:
            found = (par, r)
    if found is None:
        raise ModelError(f"{model.name} with batch={batch} fits no split of {platform.gpus} "
                         f"{platform.gpu.name} GPUs ({platform.gpu.memory_bytes / 1e9:g} GB each)")
    return found


@dataclass(frozen=True)
class IterationResult:
    """One network's iteration of a configuration: the split used and the time breakdown."""

    network: str
    split: Parallelism
    breakdown: Breakdown

    def to_json(self) -> dict[str, Any]:
        return {"network": self.network, "split": asdict(self.split), "breakdown": asdict(self.breakdown)}


@dataclass(frozen=True)
class PublishedRun:
    """A measured Megatron run: configuration and iteration time."""

    model: str
    gpus: int
    par: Parallelism
    batch: int
    seconds: float

    def hfu(self) -> float:
        """HFU of the run: hardware FLOPs (its recomputation) / (GPUs x 312 TFLOP/s x time)."""
        return (model_by_name(self.model).hardware_flops(self.batch, self.par.recompute)
                / (self.gpus * A100.peak_flops * self.seconds))


VALIDATION = (
    PublishedRun("gpt-22b", 8, Parallelism(8, 1, 1, 4), 4, 1.10),
    PublishedRun("gpt-175b", 64, Parallelism(8, 8, 1, 1, 3), 64, 13.75),
    PublishedRun("gpt-530b", 280, Parallelism(8, 35, 1, 1, 3), 280, 37.83),
    PublishedRun("gpt-1t", 512, Parallelism(8, 64, 1, 1, 1), 512, 71.49),
)
"""Korthikanti et al. 2022, Table 5 "present work" (sequence parallelism + selective
recomputation) on DGX A100: iteration times; configurations from their Table 3 (as Calculon's
public validation files encode them: interleaving 3 for 175B and 530B). These are the runs
whose HFU the Rail-only paper's Fig. 7 compares with (1.8% error for 1T, 10.8% for 22B)."""


OUT_OF_SAMPLE = (
    PublishedRun("gpt-22b", 8, Parallelism(8, 1, 1, 4, recompute="full", sequence_parallel=False), 4, 1.42),
    PublishedRun("gpt-175b", 64, Parallelism(8, 8, 1, 1, 3, recompute="full", sequence_parallel=False), 64, 18.13),
    PublishedRun("gpt-530b", 280, Parallelism(8, 35, 1, 1, 3, recompute="full", sequence_parallel=False), 280, 49.05),
    PublishedRun("gpt-1t", 512, Parallelism(8, 64, 1, 1, 1, recompute="full", sequence_parallel=False), 512, 94.42),
)
"""Korthikanti et al. 2022, Table 5 "full recompute" (Megatron before sequence parallelism:
TP all-reduces, every layer recomputed) on the same DGX A100 clusters and splits (Calculon's
validation files ``validation/<model>_full.json`` encode them: ``tensor_par_comm_type: ar``,
``activation_recompute: full``). No constant is fitted to them: they check the model's
structure (more compute, more TP traffic) with the efficiency fitted on :data:`VALIDATION`."""


def validation_rows(efficiency: float = FITTED_EFFICIENCY, hb_efficiency: float = HB_EFFICIENCY,
                    runs: Sequence[PublishedRun] = VALIDATION,
                    options: tuple[tuple[str, Any], ...] = ()) -> list[PublishedRunRow]:
    """Model vs published HFU for each run; ``error`` = model/published - 1. ``options``
    override further :class:`Platform` fields (a model alternative)."""
    rows: list[PublishedRunRow] = []
    for run in runs:
        platform = replace(dgx_a100(run.gpus), efficiency=efficiency, hb_efficiency=hb_efficiency, **dict(options))
        r = iteration(model_by_name(run.model), platform, run.par, run.batch)
        rows.append(PublishedRunRow(run.model, run.gpus, run.seconds, r.total, run.hfu(), r.hfu, r.hfu / run.hfu() - 1))
    return rows


def calibrate(runs: Sequence[PublishedRun] = VALIDATION, hb_efficiency: float = HB_EFFICIENCY,
              options: tuple[tuple[str, Any], ...] = ()) -> float:
    """The efficiency minimizing the squared log-error of the iteration times of ``runs``
    (under the :class:`Platform` field overrides ``options``).

    The model's time is ``a/e + c`` (compute over efficiency plus network), so the fit is a
    one-dimensional search; golden section over (0.05, 1]."""

    def loss(eff: float) -> float:
        total = 0.0
        for run in runs:
            platform = replace(dgx_a100(run.gpus), efficiency=eff, hb_efficiency=hb_efficiency, **dict(options))
            r = iteration(model_by_name(run.model), platform, run.par, run.batch)
            total += math.log(r.total / run.seconds) ** 2
        return total

    lo, hi = 0.05, 1.0
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = loss(a), loss(b)
    for _ in range(80):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = loss(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = loss(b)
    return (lo + hi) / 2
