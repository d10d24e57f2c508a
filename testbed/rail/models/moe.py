"""Iteration time of a mixture-of-experts GPT on a rail network, by where the experts sit.

Why: the Rail-only paper argues with bytes (the all-to-all is 27% of MoE-1.3B's traffic, so
its 8-11% slowdown is "negligible by Amdahl's law"); what a cluster pays is time. This model
puts the all-to-all beside the computation and the gradient all-reduces of one iteration for
three placements of the experts:

* ``hb``: expert parallelism inside each HB domain (``K`` GPUs share all experts, each GPU
  holds ``experts / K`` of them); the all-to-all never leaves the domain, but every expert is
  replicated in each domain, so its gradients are all-reduced over the rail;
* ``rail-optimized``: one expert per GPU across domains, the all-to-all direct over the spine
  (:func:`railperf.alltoall_rail_optimized`);
* ``rail-only``: the same placement, the all-to-all by the two-step route through the HB
  domain (:func:`railperf.alltoall_rail_only`, the paper's section IV-B).

Per MoE layer and iteration four all-to-alls (dispatch and combine, forward and backward;
six when the backward recomputes the forward, :attr:`traffic.MoeModel.recompute`),
each GPU sending ``tokens x top_k x h`` bf16 values spread evenly over its expert group
(uniform routing, the paper's assumption). Computation: the model FLOPs of the dense GPT of
the same shape (top-1 routing activates one expert MLP per token, the size of the dense MLP;
its forward once more with recomputation), spread evenly, at the GPU's sustained efficiency;
gradients: hierarchical ring all-reduces (reduce-scatter in the HB domain, ring on the rail,
all-gather), not overlapped (DeepSpeed-MoE's default). Bandwidth terms only, as in the paper.
"""

from __future__ import annotations

from dataclasses import dataclass

from innet.testbed.rail.models import railperf
from innet.testbed.rail.models.gpt import BYTES_PER_VALUE, GptModel
from innet.testbed.rail.models.iteration import HB_EFFICIENCY_MEASURED, NIC_EFFICIENCY, Gpu
from innet.testbed.rail.models.railperf import ModelError
from innet.testbed.rail.models.traffic import MoeModel

PLACEMENTS = ("hb", "rail-optimized", "rail-only")


@dataclass(frozen=True)
class MoeCluster:
    """GPUs in HB domains of ``hb_size`` with their link rates and sustained efficiencies."""

    gpu: Gpu
    gpus: int
    hb_size: int
    c_f_bps: float
    c_s_bps: float
    efficiency: float
    """Sustained fraction of peak FLOP/s (:func:`iteration.calibrate`)."""
    hb_efficiency: float = HB_EFFICIENCY_MEASURED
    nic_efficiency: float = NIC_EFFICIENCY

    def __post_init__(self) -> None:
        if self.gpus < 1 or self.hb_size < 1 or self.gpus % self.hb_size:
            raise ModelError(f"hb_size={self.hb_size}: must divide gpus={self.gpus}")
        for name in ("c_f_bps", "c_s_bps", "efficiency", "hb_efficiency", "nic_efficiency"):
            if not getattr(self, name) > 0:
                raise ModelError(f"{name}={getattr(self, name)!r}: must be > 0")

    def grid(self, domains: int) -> railperf.Grid:
        """The x-by-y grid of ``domains`` HB domains at the effective link rates."""
        return railperf.Grid(self.hb_size, domains, self.c_s_bps * self.nic_efficiency,
                             self.c_f_bps * self.hb_efficiency)


@dataclass(frozen=True)
class MoeBreakdown:
    """Seconds of one iteration by cause."""

    placement: str
    compute: float
    alltoall: float
    dense_allreduce: float
    expert_allreduce: float

    @property
    def total(self) -> float:
        return self.compute + self.alltoall + self.dense_allreduce + self.expert_allreduce


def moe_iteration(model: MoeModel, cluster: MoeCluster, batch: int, placement: str) -> MoeBreakdown:
    """One iteration of ``model`` with a global ``batch`` of sequences (data parallel over all
    GPUs for the dense part, expert parallel as ``placement`` says)."""
    if placement not in PLACEMENTS:
        raise ModelError(f"placement={placement!r}: must be one of {', '.join(PLACEMENTS)}")
    n, k = cluster.gpus, cluster.hb_size
    if n % model.experts and placement != "hb":
        raise ModelError(f"gpus={n}: must be a multiple of experts={model.experts}")
    if placement == "hb" and model.experts % k:
        raise ModelError(f"experts={model.experts}: must be a multiple of hb_size={k} to place them in a domain")
    if batch < 1 or batch % n:
        raise ModelError(f"batch={batch}: must be a positive multiple of gpus={n}")
    dense = GptModel(model.name, model.hidden, model.layers, heads=max(1, model.hidden // 128), seq=model.seq,
                     vocab=model.vocab)
    flops = dense.hardware_flops(batch, "full") if model.recompute else dense.model_flops(batch)
    compute = flops / n / (cluster.gpu.peak_flops * cluster.efficiency)
    tokens = batch // n * model.seq
    sent = tokens * model.top_k * model.hidden * BYTES_PER_VALUE  # per GPU, per all-to-all
    passes = model.alltoalls_per_layer * model.moe_layers
    domains = n // k
    grid_all = cluster.grid(domains)
    if placement == "hb":
        a2a = passes * (k - 1) * (sent / k) * 8 / grid_all.c_f_bps if k > 1 else 0.0
        per_gpu_experts = model.experts // k
        replicas = domains
    else:
        group_domains = model.experts // k if model.experts >= k else 1
        grid = cluster.grid(group_domains)
        pair = sent / model.experts
        step = (railperf.alltoall_rail_optimized if placement == "rail-optimized" else railperf.alltoall_rail_only)
        a2a = passes * step(grid, pair)
        per_gpu_experts = 1
        replicas = n // model.experts
    dense_bytes = model.dense_params * BYTES_PER_VALUE
    dense_ar = railperf.allreduce_hierarchical_ring(grid_all, dense_bytes) if n > 1 else 0.0
    expert_bytes = per_gpu_experts * model.moe_layers * 8 * model.hidden ** 2 * BYTES_PER_VALUE
    expert_ar = (2 * (replicas - 1) * expert_bytes * 8 / (replicas * grid_all.c_s_bps)) if replicas > 1 else 0.0
    return MoeBreakdown(placement, compute, a2a, dense_ar, expert_ar)


def compare(model: MoeModel, cluster: MoeCluster, batch: int) -> dict[str, dict[str, float]]:
    """Every placement's breakdown, and rail-only's slowdown over rail-optimized (the
    all-to-all alone and the whole iteration)."""
    out: dict[str, dict[str, float]] = {}
    for placement in PLACEMENTS:
        r = moe_iteration(model, cluster, batch, placement)
        out[placement] = {"compute": r.compute, "alltoall": r.alltoall, "dense_allreduce": r.dense_allreduce,
                          "expert_allreduce": r.expert_allreduce, "total": r.total}
    ro, only = out["rail-optimized"], out["rail-only"]
    out["slowdown"] = {"alltoall": only["alltoall"] / ro["alltoall"] - 1 if ro["alltoall"] else 0.0,
                       "iteration": only["total"] / ro["total"] - 1,
                       "alltoall_time_share": ro["alltoall"] / ro["total"]}
    return out
