"""What the rail models compute for a report, as typed records with the JSON ``innet model`` saves.

Why records: the model modules hand their rows to the tables, the figures and the saved
documents, and a row read by key from a dict fails only when a key is misspelt at run time.
Each record here is frozen, and its ``to_json`` gives the form (key names and nesting) of the
saved ``reproduce.json`` and ``model-*.json`` documents, so a document written today reads the
same as one written before the records existed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from innet.testbed.core.records import JsonRecord
from innet.testbed.rail.models import netcost

PlatformOptions = tuple[tuple[str, Any], ...]
"""Overrides of :class:`iteration.Platform` fields, as (field, value) pairs (hashable, so a
fitted efficiency can be cached on them)."""

Curve = tuple[tuple[float, float], ...]
"""Points ``(x, y)`` of one line of a figure."""


@dataclass(frozen=True)
class PublishedRunRow(JsonRecord):
    """The iteration model on one published DGX A100 run; ``error`` = model HFU / published HFU - 1."""

    model: str
    gpus: int
    published_s: float
    model_s: float
    published_hfu: float
    model_hfu: float
    error: float


@dataclass(frozen=True)
class FittedRunRow(PublishedRunRow):
    """A run the efficiency is fitted on, with the error of a fit that leaves the run out."""

    efficiency: float = 0.0
    """The efficiency fitted on all the runs (the one ``model_s`` uses)."""
    loo_error: float = 0.0
    """The error with the efficiency fitted on the other runs only."""
    paper_error: float | None = None
    """The Rail-only paper's error for this run (None: the paper gives none)."""


@dataclass(frozen=True)
class OutOfSampleRow(PublishedRunRow):
    """A published run the efficiency was not fitted on, with its configuration in words."""

    config: str = ""


@dataclass(frozen=True)
class H100Row(JsonRecord):
    """The iteration model on one published BF16 H100 run; errors are model MFU / published MFU - 1."""

    model: str
    gpus: int
    published_s: float
    model_s: float
    published_mfu: float
    model_mfu: float
    error: float
    error_unfused: float
    """The error with unfused attention (the model before it took the attention kernels as an input)."""
    config: str


@dataclass(frozen=True)
class H100Validation:
    """The H100 runs, their median |error|, and the median under each other value of a guess."""

    source: str
    attention: str
    guesses: tuple[tuple[str, int | str], ...]
    """The split details the source does not give, as (name, value used)."""
    rows: tuple[H100Row, ...]
    median_abs_error: float
    median_abs_error_unfused: float
    guess_effect: tuple[tuple[str, float | str], ...]
    """Per alternative (``"recompute=none"``, ...): the median |error| under it, or why the runs
    cannot be split that way."""

    def effect(self, alternative: str) -> float | str:
        """The median |error| under ``alternative`` (a key of :attr:`guess_effect`)."""
        for name, value in self.guess_effect:
            if name == alternative:
                return value
        raise KeyError(f"guess alternative {alternative!r}: none; known: {', '.join(n for n, _ in self.guess_effect)}")

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "attention": self.attention, "guesses": dict(self.guesses),
                "rows": [r.to_json() for r in self.rows], "median_abs_error": self.median_abs_error,
                "median_abs_error_unfused": self.median_abs_error_unfused, "guess_effect": dict(self.guess_effect)}


@dataclass(frozen=True)
class OutOfSample:
    """The iteration model on published runs it was not fitted to: A100 (HFU) and H100 (MFU)."""

    source: str
    efficiency: float
    rows: tuple[OutOfSampleRow, ...]
    median_abs_error: float
    h100: H100Validation

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "efficiency": self.efficiency, "rows": [r.to_json() for r in self.rows],
                "median_abs_error": self.median_abs_error, "h100": self.h100.to_json()}


@dataclass(frozen=True)
class FigureCurves:
    """The lines behind Figs. 8 and 10 under one setting, with the paper's points beside them."""

    fig8: tuple[tuple[str, Curve], ...]
    """Per model: (K, slowdown against K = N)."""
    fig10: tuple[tuple[int, Curve], ...]
    """Per HB domain size K: (global batch, performance relative to K = N)."""
    fig8_paper: tuple[tuple[str, float], ...]
    """Per model: the paper's slowdown at K = 256."""
    fig10_paper: tuple[tuple[int, int, float], ...]
    """(K, batch, the paper's relative performance)."""
    gpus: int

    def to_json(self) -> dict[str, Any]:
        return {"fig8": {m: [list(p) for p in pts] for m, pts in self.fig8},
                "fig10": {str(k): [list(p) for p in pts] for k, pts in self.fig10},
                "fig8_paper": dict(self.fig8_paper),
                "fig10_paper": {f"{k},{b}": v for k, b, v in self.fig10_paper}, "gpus": self.gpus}


@dataclass(frozen=True)
class Alternative(JsonRecord):
    """One change to the model's structure judged on the published runs (median |error|)."""

    alternative: str
    options: PlatformOptions
    efficiency: float
    """The efficiency refitted on the A100 runs under the change."""
    a100_in_sample: float
    a100_out_of_sample: float
    h100: float
    within: int
    """How many of the paper's claims are within under the change (shown, not used to judge)."""
    claims: int

    def to_json(self) -> dict[str, Any]:
        return {"alternative": self.alternative, "options": dict(self.options), "efficiency": self.efficiency,
                "a100_in_sample": self.a100_in_sample, "a100_out_of_sample": self.a100_out_of_sample,
                "h100": self.h100, "within": self.within, "claims": self.claims}


@dataclass(frozen=True)
class MoeTimes(JsonRecord):
    """Seconds of one MoE iteration under one expert placement."""

    compute: float
    alltoall: float
    dense_allreduce: float
    expert_allreduce: float
    total: float


@dataclass(frozen=True)
class MoeSlowdown(JsonRecord):
    """Rail-only over rail-optimized: the all-to-all alone, the iteration, and the all-to-all's share."""

    alltoall: float
    iteration: float
    alltoall_time_share: float


@dataclass(frozen=True)
class MoeRow:
    """MoE-1.3B on one platform and batch: time per expert placement, and rail-only's slowdown
    beside the paper's Amdahl estimate."""

    platform: str
    batch: int
    hb: MoeTimes
    rail_optimized: MoeTimes
    rail_only: MoeTimes
    slowdown: MoeSlowdown
    paper_amdahl: float

    def to_json(self) -> dict[str, Any]:
        return {"platform": self.platform, "batch": self.batch, "hb": self.hb.to_json(),
                "rail-optimized": self.rail_optimized.to_json(), "rail-only": self.rail_only.to_json(),
                "slowdown": self.slowdown.to_json(), "paper_amdahl": self.paper_amdahl}


@dataclass(frozen=True)
class NetworkTotals(JsonRecord):
    """Switches per tier (leaves first), transceivers, cost and power of one network."""

    switches_per_tier: tuple[int, ...]
    transceivers: int
    cost_usd: float
    power_w: float

    @classmethod
    def of(cls, network: netcost.Network) -> "NetworkTotals":
        return cls(network.switches_per_tier, network.transceivers, network.cost_usd, network.power_w)


@dataclass(frozen=True)
class Table2Row:
    """One Table II cluster: both networks, the savings, and the paper's literal reading (the
    rail-optimized network minus its top tier) with whether that many tiers can connect a rail."""

    gpus: int
    hb_size: int
    radix: int
    rail_gpus: int
    rail_optimized: NetworkTotals
    rail_only: NetworkTotals
    cost_saving: float
    power_saving: float
    cost_saving_usd: float
    power_saving_w: float
    literal_tiers: int
    literal_capacity: int
    literal_feasible: bool
    agrees: bool
    """innet's rail-only network has exactly the literal reading's tiers."""

    def to_json(self) -> dict[str, Any]:
        return {"gpus": self.gpus, "K": self.hb_size, "radix": self.radix, "rail_gpus": self.rail_gpus,
                "rail_optimized": self.rail_optimized.to_json(), "rail_only": self.rail_only.to_json(),
                "cost_saving": self.cost_saving, "power_saving": self.power_saving,
                "cost_saving_usd": self.cost_saving_usd, "power_saving_w": self.power_saving_w,
                "literal_tiers": self.literal_tiers, "literal_capacity": self.literal_capacity,
                "literal_feasible": self.literal_feasible, "agrees": self.agrees}


@dataclass(frozen=True)
class CostRow:
    """Both networks of one cluster (counts per tier, cost, power) and rail-only's savings."""

    gpus: int
    gpus_per_domain: int
    radix: int
    rail_optimized: netcost.Network
    rail_only: netcost.Network
    cost_saving: float
    power_saving: float
    cost_saving_usd: float
    power_saving_w: float

    def to_json(self) -> dict[str, Any]:
        return {"gpus": self.gpus, "gpus_per_domain": self.gpus_per_domain, "radix": self.radix,
                "rail_optimized": {**asdict(self.rail_optimized), "switches": self.rail_optimized.switches},
                "rail_only": {**asdict(self.rail_only), "switches": self.rail_only.switches},
                "cost_saving": self.cost_saving, "power_saving": self.power_saving,
                "cost_saving_usd": self.cost_saving_usd, "power_saving_w": self.power_saving_w}


@dataclass(frozen=True)
class PerfRow(JsonRecord):
    """Completion times of both designs' collectives for one message size (seconds)."""

    bytes: int
    """Per GPU pair for the all-to-all, per GPU for the allreduce."""
    a2a_rail_optimized_s: float
    a2a_rail_only_s: float
    a2a_slowdown: float
    a2a_seed_estimate: float
    """The paper's estimate of the slowdown, C_S / C_F."""
    allreduce_hierarchical_ina_s: float
    allreduce_hierarchical_ring_s: float
    allreduce_flat_ina_s: float
    allreduce_flat_ring_s: float
