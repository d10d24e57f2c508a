"""Per-GPU-pair traffic of one training iteration (the Rail-only paper's section III).

Why: the paper's case for removing the spine rests on where the bytes go (Figs. 2-5): with
Megatron's parallelization almost every GPU pair exchanges nothing, tensor parallelism
carries most bytes and stays inside the HB domain, and what leaves the HB domain stays on
one rail; a mixture-of-experts model adds a uniform all-to-all. This module computes the
``N x N`` matrix of bytes GPU ``i`` sends to GPU ``j`` from the model shape and the
parallelization, split by kind (tp, pp, dp, a2a), and the shares the paper quotes.

Collectives are rings (NCCL's default; bandwidth-optimal) and hierarchical when a group
spans HB domains (paper section III-B): a group with ``x`` members in each of ``y`` domains
runs a ring inside each domain on ``(x-1)/x`` of the data and a ring across the domains, among
the members of one rail, on ``(y-1)/(xy)`` of it. Ranks are Megatron's (tensor fastest, then
data, then pipeline).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from innet.testbed.rail.models.gpt import BYTES_PER_VALUE, GptModel
from innet.testbed.rail.models.iteration import TP_COLLECTIVES_PER_LAYER, Parallelism
from innet.testbed.rail.models.railperf import ModelError

KINDS = ("tp", "pp", "dp", "a2a")
MAX_GPUS = 4096
"""Largest cluster whose dense N x N matrices (8 bytes a pair, per kind) we build."""


def _check_size(gpus: int) -> None:
    if gpus < 1 or gpus > MAX_GPUS:
        raise ModelError(f"gpus={gpus}: the traffic matrix is built for 1..{MAX_GPUS} GPUs")


@dataclass(frozen=True, eq=False)
class TrafficMatrix:
    """Bytes from GPU ``i`` (row) to GPU ``j`` (column) in one iteration, by kind."""

    hb_size: int
    by_kind: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def gpus(self) -> int:
        return next(iter(self.by_kind.values())).shape[0]

    def total(self) -> np.ndarray:
        return np.sum(list(self.by_kind.values()), axis=0)


SPREADS = ("ring", "peers")
"""How an HB-domain collective's bytes land on GPU pairs: ``ring``, all on the ring successor
(one NCCL channel); ``peers``, evenly over the domain's other members (NVSwitch: NCCL runs
many channels whose rings start at different ranks, and a direct reduce-scatter/all-gather
sends each peer its own block)."""
TP_SCHEMES = {"sequence-parallel": TP_COLLECTIVES_PER_LAYER, "megatron-2021": 12}
"""All-gather/reduce-scatter passes per layer and micro-batch. ``sequence-parallel``:
Korthikanti et al. 2022 (6 all-gathers + 4 reduce-scatters). ``megatron-2021``: the runs of
Narayanan et al. 2021, which the paper's section III-A follows: 2 all-reduces forward, 2
backward and 2 more in the recomputed forward (full activation recomputation), each
all-reduce a reduce-scatter plus an all-gather."""


def _ring(matrix: np.ndarray, members: np.ndarray, nbytes: float, spread: str = "ring") -> None:
    """Each member sends ``nbytes`` to its successor on the ring ``members`` (``ring``) or
    ``nbytes/(len-1)`` to every other member (``peers``)."""
    n = len(members)
    if n < 2:
        return
    if spread == "ring":
        matrix[members, np.roll(members, -1)] += nbytes
    else:
        block = matrix[np.ix_(members, members)]
        block += nbytes / (n - 1)
        np.fill_diagonal(block, 0.0)
        matrix[np.ix_(members, members)] = block


def _collective(matrix: np.ndarray, group: np.ndarray, hb_size: int, total: float, passes: float,
                spread: str = "ring") -> None:
    """``passes`` all-gathers/reduce-scatters of ``total`` bytes over ``group``, hierarchical
    when the group spans HB domains (ring in each domain, then a ring per rail)."""
    domains = group // hb_size
    uniq = np.unique(domains)
    y = len(uniq)
    x = len(group) // y
    if x > 1:
        for d in uniq:
            _ring(matrix, group[domains == d], passes * (x - 1) / x * total, spread)
    if y > 1:
        rails = np.stack([group[domains == d] for d in uniq])  # y x x; column j: one rail
        for j in range(rails.shape[1]):
            _ring(matrix, rails[:, j], passes * (y - 1) / (x * y) * total)


def megatron(model: GptModel, par: Parallelism, batch: int, hb_size: int, tp_scheme: str = "sequence-parallel",
             spread: str = "ring") -> TrafficMatrix:
    """Traffic of Megatron-style GPT training: TP collectives per layer and micro-batch as
    ``tp_scheme`` counts them (:data:`TP_SCHEMES`), spread over pairs as ``spread`` says
    (:data:`SPREADS`, HB phases only), PP sends of ``b s h/t`` values each way per
    micro-batch, DP reduce-scatter + all-gather of the stage's bf16 gradients."""
    if tp_scheme not in TP_SCHEMES:
        raise ModelError(f"tp_scheme={tp_scheme!r}: must be one of {', '.join(TP_SCHEMES)}")
    if spread not in SPREADS:
        raise ModelError(f"spread={spread!r}: must be one of {', '.join(SPREADS)}")
    t, p, d, b = par.tp, par.pp, par.dp, par.microbatch
    n = t * p * d
    _check_size(n)
    if hb_size < 1 or n % hb_size:
        raise ModelError(f"hb_size={hb_size}: must divide gpus={n}")
    if batch % (d * b):
        raise ModelError(f"batch={batch}: must be a multiple of dp*microbatch={d}*{b}")
    m = batch // (d * b)
    kinds = {k: np.zeros((n, n)) for k in ("tp", "pp", "dp")}
    ranks = np.arange(n).reshape(p, d, t)  # rank = tp + t*(dp + d*pp)
    act = b * model.seq * model.hidden * BYTES_PER_VALUE
    layers = model.layers // p
    for s in range(p):
        for r in range(d):
            _collective(kinds["tp"], ranks[s, r], hb_size, act, TP_SCHEMES[tp_scheme] * layers * m, spread)
        for c in range(t):
            grads = model.params / (t * p) * BYTES_PER_VALUE
            _collective(kinds["dp"], ranks[s, :, c], hb_size, grads, 2)
        if s + 1 < p:
            src, dst = ranks[s].ravel(), ranks[s + 1].ravel()
            kinds["pp"][src, dst] += m * par.interleave * act / t
            kinds["pp"][dst, src] += m * par.interleave * act / t
    return TrafficMatrix(hb_size, kinds)


@dataclass(frozen=True)
class MoeModel:
    """A GPT with mixture-of-experts MLPs in every ``moe_every``-th layer, one expert per GPU
    (expert parallelism), the rest data parallel (DeepSpeed-MoE)."""

    name: str
    hidden: int
    layers: int
    experts: int
    moe_every: int = 2
    top_k: int = 1
    seq: int = 2048
    vocab: int = 51200
    recompute: bool = False
    """Whether the backward pass redoes each layer's forward (activation checkpointing), and
    with it the MoE layers' dispatch and combine all-to-alls. Megatron-DeepSpeed's
    1.3B+MoE-128 script turns it on (``ACTIVATION_CHECKPOINT="true"``); off by default, as
    in the MoE iteration model and the testbed's all-to-all measurement it is checked against."""

    @property
    def moe_layers(self) -> int:
        return self.layers // self.moe_every

    @property
    def alltoalls_per_layer(self) -> int:
        """All-to-alls per MoE layer and iteration: dispatch and combine forward and backward,
        and the forward's again when the backward recomputes it."""
        return 6 if self.recompute else 4

    @property
    def dense_params(self) -> float:
        """Parameters every GPU holds (and all-reduces): all but the experts' MLPs."""
        h = self.hidden
        return 12 * self.layers * h * h - self.moe_layers * 8 * h * h + (self.vocab + self.seq) * h


MOE_1_3B = MoeModel("moe-1.3b", hidden=2048, layers=24, experts=128)
"""DeepSpeed-MoE's 1.3B+MoE-128 (Rajbhandari et al. 2022): the 1.3B GPT (h 2048, 24 layers)
with 128 experts in every other layer, top-1 gating; the Rail-only paper's Fig. 5."""


def moe(model: MoeModel, gpus: int, batch: int, hb_size: int) -> TrafficMatrix:
    """Traffic of one iteration with uniform token routing: per MoE layer, two all-to-alls
    forward (dispatch, combine) and two backward (two more with ``model.recompute``), each
    GPU's ``tokens x h`` values spread evenly over the ``experts`` GPUs; plus the all-reduce
    of the dense parameters."""
    _check_size(gpus)
    if gpus % model.experts:
        raise ModelError(f"gpus={gpus}: must be a multiple of experts={model.experts}")
    if hb_size < 1 or gpus % hb_size:
        raise ModelError(f"hb_size={hb_size}: must divide gpus={gpus}")
    if batch % gpus:
        raise ModelError(f"batch={batch}: must be a multiple of gpus={gpus}")
    tokens = batch // gpus * model.seq
    a2a = np.zeros((gpus, gpus))
    per_peer = (model.alltoalls_per_layer * model.moe_layers * model.top_k * tokens * model.hidden * BYTES_PER_VALUE
                / model.experts)
    for g in range(gpus // model.experts):
        block = slice(g * model.experts, (g + 1) * model.experts)
        a2a[block, block] += per_peer
    np.fill_diagonal(a2a, 0.0)
    dp = np.zeros((gpus, gpus))
    _collective(dp, np.arange(gpus), hb_size, model.dense_params * BYTES_PER_VALUE, 2)
    return TrafficMatrix(hb_size, {"a2a": a2a, "dp": dp})


def summary(tm: TrafficMatrix) -> dict[str, float]:
    """The shares the paper quotes, as fractions."""
    total = tm.total()
    n, k = tm.gpus, tm.hb_size
    idx = np.arange(n)
    same_domain = (idx[:, None] // k) == (idx[None, :] // k)
    same_rail = (idx[:, None] % k) == (idx[None, :] % k)
    off_diag = ~np.eye(n, dtype=bool)
    all_bytes = float(total.sum())
    nic = total[~same_domain]
    out = {"gpus": float(n), "hb_size": float(k), "bytes": all_bytes,
           "idle_pairs": float(np.count_nonzero(total[off_diag] == 0)) / (n * (n - 1)),
           "hb_share": float(total[same_domain].sum()) / all_bytes if all_bytes else 0.0,
           "nic_in_rail_share": float(total[~same_domain & same_rail].sum()) / float(nic.sum()) if nic.sum() else 1.0}
    for kind in KINDS:
        if kind in tm.by_kind:
            part = tm.by_kind[kind]
            out[f"{kind}_share"] = float(part.sum()) / all_bytes if all_bytes else 0.0
            out[f"{kind}_pairs"] = float(np.count_nonzero(part[off_diag])) / (n * (n - 1))
            out[f"{kind}_hb_share"] = float(part[same_domain].sum()) / float(part.sum()) if part.sum() else 0.0
    return out
