"""The Rail-only paper's figures 8, 9 and 10 recomputed with the iteration-time model.

Why: the paper's three design claims (an HB domain of 256 is within a few percent of one
fabric over every GPU; bigger HB domains want HB bandwidth more than NIC bandwidth; small HB
domains want big batches) are statements about these sweeps. Every point picks its best
parallelization (:func:`innet.testbed.rail.models.iteration.best`), as the paper does.

What the paper does not state, and we assume (docs/rail.md): global batch 4096 for
figures 8 and 9 (the batch of its GPT-1T traffic study, section III-B), and 32,768 GPUs for
figure 9 (the cluster of its figure 10). The paper's numbers are the ones its text quotes;
the figures' other points are not in our copy.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from innet.testbed.core.records import JsonRecord
from innet.testbed.rail.models import iteration
from innet.testbed.rail.models.gpt import model_by_name
from innet.testbed.rail.models.railperf import ModelError

HB_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
FIG8_GPUS = (16384, 32768, 65536)
FIG8_MODELS = ("gpt-1t", "gpt-146b")
DEFAULT_BATCH = 4096
FIG9_GPUS = 32768
FIG9_HB_SIZES = (8, 256)
FIG9_C_F = (2.4e12, 3.6e12, 4.8e12, 7.2e12, 9.6e12)
FIG9_C_S = (100e9, 200e9, 300e9, 400e9)
FIG10_GPUS = 32768
FIG10_BATCHES = (256, 512, 1024, 2048, 4096)

TIER_OPTIONS = ("hb_tier_size", "hb_cross_tier")
"""The :class:`iteration.Platform` fields of a two-tier HB domain."""
GH200_TIERS = {"hb_tier_size": iteration.GH200_TIER_SIZE, "hb_cross_tier": iteration.GH200_CROSS_TIER}
"""Platform options of DGX GH200's two NVSwitch tiers (8-GPU boards at half the NVLink rate)."""
MEGATRON_2021 = {"dp_overlap": False, "pp_overlap": False}
"""Platform options of Megatron-LM 2021's schedule: gradients reduced after the backward pass,
every pipeline send blocking."""

PAPER_FIG8 = {("gpt-146b", 256): 0.041, ("gpt-1t", 256): 0.009}
"""Slowdown against the ideal (K = N) at K = 256 (section V-B)."""
PAPER_FIG9 = {(8, "hb"): 0.080, (8, "nic"): 0.359, (256, "hb"): 0.133, (256, "nic"): 0.080}
"""Iteration-time reduction of GPT-1T from 4x the HB bandwidth (2.4 -> 9.6 Tbit/s) and 4x the
NIC bandwidth (100 -> 400 Gbit/s), at K = 8 and K = 256 (section V-C)."""
PAPER_FIG10 = {(8, 256): 0.65, (8, 4096): 0.85, (256, 256): 0.95, (256, 4096): 0.99}
"""GPT-1T on 32,768 GPUs: performance relative to the ideal at batch 256 and 4096 (section V-D)."""


@dataclass(frozen=True)
class SweepPoint:
    """One configuration: the best split found and its iteration time."""

    model: str
    gpus: int
    hb_size: int
    batch: int
    c_f_bps: float
    c_s_bps: float
    seconds: float
    hfu: float
    split: Split


Split = tuple[int, int, int, int, int]
"""(tp, pp, dp, microbatch, interleave) of the best split found."""


@dataclass(frozen=True)
class HbSizeRow(JsonRecord):
    """Figure 8: one model, cluster and K, and the slowdown against the ideal K = N."""

    model: str
    gpus: int
    hb_size: int
    batch: int
    seconds: float
    hfu: float
    split: Split
    slowdown: float
    paper_slowdown: float | None
    """The paper's number for this point (None: its text quotes none)."""


@dataclass(frozen=True)
class BandwidthRow(JsonRecord):
    """Figure 9: one K at one HB (``vary="hb"``) or NIC (``"nic"``) bandwidth per GPU."""

    model: str
    gpus: int
    hb_size: int
    batch: int
    vary: str
    bps: float
    seconds: float
    split: Split


@dataclass(frozen=True)
class BandwidthGain:
    """Figure 9: what 4x the varied bandwidth saves at one K, beside the paper's number."""

    model: str
    gpus: int
    hb_size: int
    batch: int
    vary: str
    gain_x4: float
    """1 - time at the highest bandwidth / time at the lowest."""
    paper_gain_x4: float | None

    @property
    def speedup_x4(self) -> float:
        """Time at the lowest bandwidth / time at the highest - 1: the reading ``innet model
        reproduce`` compares with the paper's "performance improvement" (section V-D measures
        performance as the inverse of iteration time)."""
        return self.gain_x4 / (1 - self.gain_x4)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "gpus": self.gpus, "hb_size": self.hb_size, "batch": self.batch,
                "vary": self.vary, "bps": None, "gain_x4": self.gain_x4, "paper_gain_x4": self.paper_gain_x4}


@dataclass(frozen=True)
class BatchRow(JsonRecord):
    """Figure 10: one global batch and K, and the performance relative to the ideal K = N."""

    model: str
    gpus: int
    hb_size: int
    batch: int
    seconds: float
    seconds_per_sequence: float
    split: Split
    relative: float
    """Ideal time / time."""
    paper_relative: float | None


SweepRow = HbSizeRow | BandwidthRow | BandwidthGain | BatchRow
"""A row of any of the three figure sweeps."""


def point(model: str, gpus: int, hb_size: int, batch: int, c_f_bps: float = 3.6e12,
          c_s_bps: float = 400e9, network: str = "rail-only", **options: Any) -> SweepPoint:
    """The best split of one configuration; ``options`` override :class:`iteration.Platform`
    fields (``efficiency``, ``hb_efficiency``, ``tp_overlap``, ...). The ideal ``K = N`` is one
    flat fabric, as the paper defines it, so HB-tier options are dropped there."""
    m = model_by_name(model)
    if hb_size >= gpus:
        options = {k: v for k, v in options.items() if k not in TIER_OPTIONS}
    platform = replace(iteration.h100_cluster(gpus, hb_size, c_f_bps, c_s_bps, network), **options)
    par, r = iteration.best(m, platform, batch)
    return SweepPoint(model, gpus, hb_size, batch, c_f_bps, c_s_bps, r.total, r.hfu,
                 (par.tp, par.pp, par.dp, par.microbatch, par.interleave))


def hb_size_sweep(models: tuple[str, ...] = FIG8_MODELS, gpus: tuple[int, ...] = FIG8_GPUS,
                  batch: int = DEFAULT_BATCH, network: str = "rail-only", **options: Any) -> list[HbSizeRow]:
    """Figure 8: iteration time against K for each model and cluster, and the slowdown
    against the ideal K = N."""
    rows: list[HbSizeRow] = []
    for model in models:
        for n in gpus:
            ideal = point(model, n, n, batch, network=network, **options)
            for k in HB_SIZES:
                if k > n or n % k:
                    continue
                p = ideal if k == n else point(model, n, k, batch, network=network, **options)
                rows.append(HbSizeRow(model, n, k, batch, p.seconds, p.hfu, p.split, p.seconds / ideal.seconds - 1,
                                      PAPER_FIG8.get((model, k))))
    return rows


def bandwidth_sweep(model: str = "gpt-1t", gpus: int = FIG9_GPUS, batch: int = DEFAULT_BATCH,
                    hb_sizes: tuple[int, ...] = FIG9_HB_SIZES, **options: Any) -> list[BandwidthRow | BandwidthGain]:
    """Figure 9: iteration time against C_F (NIC at 400 Gbit/s) and against C_S (HB at
    3.6 Tbit/s), and the reduction from 4x each."""
    rows: list[BandwidthRow | BandwidthGain] = []
    for k in hb_sizes:
        for kind, values in (("hb", FIG9_C_F), ("nic", FIG9_C_S)):
            times = []
            for bw in values:
                p = (point(model, gpus, k, batch, c_f_bps=bw, **options) if kind == "hb"
                     else point(model, gpus, k, batch, c_s_bps=bw, **options))
                times.append(p.seconds)
                rows.append(BandwidthRow(model, gpus, k, batch, kind, bw, p.seconds, p.split))
            rows.append(BandwidthGain(model, gpus, k, batch, kind, 1 - times[-1] / times[0],
                                      PAPER_FIG9.get((k, kind)) if model == "gpt-1t" else None))
    return rows


def batch_sweep(model: str = "gpt-1t", gpus: int = FIG10_GPUS, batches: tuple[int, ...] = FIG10_BATCHES,
                hb_sizes: tuple[int, ...] | None = None, **options: Any) -> list[BatchRow]:
    """Figure 10: iteration time against the global batch for each K, and the performance
    relative to the ideal K = N (ideal time / time)."""
    if hb_sizes is None:
        hb_sizes = tuple(k for k in HB_SIZES if 8 <= k <= gpus and gpus % k == 0)
    rows: list[BatchRow] = []
    for b in batches:
        ideal = point(model, gpus, gpus, b, **options)
        for k in hb_sizes:
            p = ideal if k == gpus else point(model, gpus, k, b, **options)
            rows.append(BatchRow(model, gpus, k, b, p.seconds, p.seconds / b, p.split, ideal.seconds / p.seconds,
                                 PAPER_FIG10.get((k, b)) if (model, gpus) == ("gpt-1t", FIG10_GPUS) else None))
    return rows


def check_sweep_args(gpus: int, batch: int) -> None:
    """Raise a named error for a cluster or batch no sweep can use."""
    if gpus < 1:
        raise ModelError(f"gpus={gpus}: must be an integer >= 1")
    if batch < 1:
        raise ModelError(f"batch={batch}: must be an integer >= 1")
