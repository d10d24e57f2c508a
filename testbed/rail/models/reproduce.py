"""Every quantitative claim of the Rail-only paper beside the number innet's models compute.

Why a module of its own: a reproduction is only worth something if each row is computed
when it is printed, from inputs that are named, and if every input the paper does not state
is shown as a guess together with what the row becomes under the other plausible values.
The paper's numbers below are data (each with its section or figure); innet's numbers come
from :mod:`iteration`, :mod:`sweeps`, :mod:`traffic`, :mod:`railperf` and :mod:`netcost` at
run time, under one of two :class:`Settings`: ``before`` (the models as they were: NVLink at
Calculon's 0.6, typical switch power, the 30k-GPU claim at 32,768 GPUs, Fig. 10 as time per
iteration) and ``after`` (each change cited in :data:`AFTER`'s docstring and docs/rail.md).

A row is within the paper's error when ``|innet - paper|`` is at most the tolerance: 10% of
the paper's number, or 1 point for a percentage under 10% (the paper states no error bars);
a bound ("> 99%") is within when innet's number satisfies it.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable, Mapping, TypeVar

from innet.testbed.rail.models import h100_runs, iteration, netcost, railperf, sweeps, traffic
from innet.testbed.rail.models.gpt import model_by_name
from innet.testbed.rail.models.railperf import ModelError
from innet.testbed.rail.models.records import (Alternative, FigureCurves, MoeRow, MoeSlowdown, MoeTimes, NetworkTotals,
                                               OutOfSample, OutOfSampleRow, PlatformOptions, Table2Row)

KINDS = ("value", "at_least", "at_most", "true")
_T = TypeVar("_T")


@dataclass(frozen=True)
class Settings:
    """Model choices that differ between the ``before`` and ``after`` reproductions."""

    name: str
    hb_efficiency: float
    """Fraction of the NVLink rate NCCL reaches (the H100 sweeps and the A100 validation)."""
    tp_overlap: float = 0.0
    """:attr:`iteration.Platform.tp_overlap` for the H100 sweeps."""
    dp_overlap: bool = True
    """:attr:`iteration.Platform.dp_overlap` for the H100 sweeps."""
    peak_power: bool = False
    """Switch power at its maximum with its port optics (the paper quotes peak power), plus the
    NIC-end transceivers; False: typical switch power plus every transceiver."""
    gpus_30k: int = 32768
    """The cluster the introduction's "30,000 GPUs" figures are computed for."""
    per_sequence: bool = False
    """Fig. 10's time axis: per sequence (True) or per iteration."""
    fig9_speedup: bool = False
    """Fig. 9's "performance improvement" from 4x bandwidth as a speedup, ``t_1x / t_4x - 1``
    (True), or as the share of iteration time saved, ``1 - t_4x / t_1x``."""
    tp_scheme: str = "sequence-parallel"
    """:data:`traffic.TP_SCHEMES` key for the Megatron traffic of Figs. 2-3."""
    options: PlatformOptions = ()
    """Further :class:`iteration.Platform` overrides (a model alternative, :data:`ALTERNATIVES`),
    applied to the published runs the efficiency is fitted on and checked against as well as
    to the paper's figures."""

    def efficiency(self) -> float:
        """The sustained-efficiency factor, fitted on the published A100 runs with this
        setting's NVLink efficiency and options (recomputed, never copied)."""
        return _calibrated(self.hb_efficiency, self.options)

    def platform_options(self) -> PlatformOptions:
        """The :class:`iteration.Platform` fields this setting sets (its options last, so they win)."""
        return (("efficiency", self.efficiency()), ("hb_efficiency", self.hb_efficiency),
                ("tp_overlap", self.tp_overlap), ("dp_overlap", self.dp_overlap), *self.options)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "efficiency": self.efficiency()}


@functools.lru_cache(maxsize=32)
def _calibrated(hb_efficiency: float, options: PlatformOptions = ()) -> float:
    """:func:`iteration.calibrate` (a pure function, so its result can be reused)."""
    return iteration.calibrate(hb_efficiency=hb_efficiency, options=options)


BEFORE = Settings("before", hb_efficiency=iteration.HB_EFFICIENCY)
AFTER = Settings("after", hb_efficiency=iteration.HB_EFFICIENCY_MEASURED, peak_power=True, gpus_30k=30000,
                 per_sequence=True, tp_scheme="megatron-2021", fig9_speedup=True)
"""The corrected model. NVLink at 370/450 of its rate (NCCL's measured bus bandwidth,
:data:`iteration.HB_EFFICIENCY_MEASURED`); TP collectives still exposed (the paper's 13.3%
from 4x HB bandwidth at K = 256 is impossible if they hide behind the GEMMs: with
``tp_overlap=1`` it is 1.8%); peak power = QM9700 maximum with its port optics plus the
NIC-end transceivers (the paper says "peak power"); the introduction's cluster at the
30,000 GPUs it names; Fig. 10 per sequence (the only reading in which time falls with the
batch on a fixed cluster); TP traffic of Megatron-LM 2021 (the runs section III-A uses);
Fig. 9's gains as speedups (section V-D measures performance as the inverse of iteration
time, relative performance = ideal time / time, so section V-C's "performance improvement"
from 4x bandwidth is t_1x / t_4x - 1)."""
SETTINGS = {s.name: s for s in (BEFORE, AFTER)}
DEFAULT = AFTER
"""The setting every ``innet model`` command uses unless told otherwise, so that a user gets
the same number for the same question from ``iteration``, ``sweep``, ``cost``, ``traffic``
and ``reproduce``."""


def default_parts() -> netcost.Parts:
    """Prices and power of :data:`DEFAULT` (peak power when the paper's reading is peak)."""
    return _parts(DEFAULT)


GuessValue = int | float | str
"""The value of an unstated input: a number (a batch, a cluster size, a price scale) or a named choice."""


@dataclass(frozen=True)
class Guess:
    """An input the paper does not state: the value used, the others tried, and why."""

    name: str
    value: GuessValue
    alternatives: tuple[GuessValue, ...]
    why: str


@dataclass(frozen=True)
class GuessArgs:
    """The guessed inputs a claim's computation is given (None: the claim has no such guess,
    and its computation uses its own default)."""

    batch: int | None = None
    gpus: int | None = None
    moe_batch: int | None = None
    radix: int | None = None
    grid: str | None = None
    fabric: str | None = None
    overlap: str | None = None
    grad_bytes: int | None = None
    held: str | None = None
    moe_recompute: str | None = None
    price_scale: float | None = None
    gain: str | None = None


@dataclass(frozen=True)
class Probe:
    """Unstated inputs scanned only to show at which of their values a row would be within.

    Why: where no cited source fixes an input, the honest report of a miss is what the paper
    would need to state and which value of it would make innet agree. A probe is that
    information and nothing more: the row keeps its guess's value, whatever the scan finds."""

    names: tuple[str, ...]
    """Guess names (keys of the guess-to-argument map), one per scanned input."""
    values: tuple[tuple[GuessValue, ...], ...]
    """The combinations scanned, each one value per name."""

    @classmethod
    def over(cls, **scans: tuple[GuessValue, ...]) -> "Probe":
        """Every combination of the given values (keyword: guess name with ``_`` for spaces)."""
        import itertools

        names = tuple(k.replace("_", " ") for k in scans)
        return cls(names, tuple(itertools.product(*scans.values())))

    def label(self, combo: tuple[GuessValue, ...]) -> str:
        return ", ".join(f"{n}={v}" for n, v in zip(self.names, combo))


Inputs = Mapping[str, object]
"""The named inputs a claim's number was computed from (shown beside it, saved as given)."""

Compute = Callable[["Settings", GuessArgs], tuple[float, Inputs]]
"""How innet computes a claim's number: under a setting and the guesses' values."""


@dataclass(frozen=True)
class Claim:
    """One number of the paper and how innet computes it."""

    key: str
    where: str
    what: str
    paper: float
    unit: str
    """``%`` (stored as a fraction), ``GB``, ``$M``, ``MW`` or ``bool``."""
    compute: Compute
    kind: str = "value"
    guesses: tuple[Guess, ...] = ()
    cause: str = ""
    """Why innet differs, shown when the row is outside the tolerance."""
    probes: tuple[Probe, ...] = ()
    """Scans of unstated inputs reported beside a miss (information, never adopted)."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ModelError(f"claim {self.key} kind={self.kind!r}: must be one of {', '.join(KINDS)}")

    def tolerance(self) -> float:
        if self.unit == "%" and self.paper < 0.10:
            return 0.01
        return 0.1 * abs(self.paper)

    def within(self, value: float) -> bool:
        if self.kind == "at_least":
            return value >= self.paper
        if self.kind == "at_most":
            return value <= self.paper + (self.tolerance() if self.key.startswith("fig7") else 0.0)
        if self.kind == "true":
            return bool(value)
        return abs(value - self.paper) <= self.tolerance()


# ---------------------------------------------------------------- the computations


def _a2a(platform: str) -> Compute:
    def compute(s: Settings, g: GuessArgs) -> tuple[float, Inputs]:
        grid = railperf.SEED_PLATFORMS[platform]
        return railperf.alltoall_slowdown(grid), {"x": grid.x, "y": grid.y, "C_S": grid.c_s_bps, "C_F": grid.c_f_bps}
    return compute


@functools.lru_cache(maxsize=8)
def _megatron_numbers(tp_scheme: str, batch: int) -> tuple[dict[str, float], float, float]:
    """(shares, bytes of the busiest HB-domain pair, bytes GPU 0 sends GPU 48) of Megatron's
    GPT-1T run; only the numbers are kept, not the 3,072 x 3,072 matrices."""
    tm = traffic.megatron(model_by_name("gpt-1t"), iteration.Parallelism(8, 64, 6, 1), batch, 8, tp_scheme)
    return traffic.summary(tm), float(tm.total()[:8, :8].max()), float(tm.by_kind["pp"][0, 48])


def _or(value: _T | None, default: _T) -> _T:
    """A guess's value, or the claim's own default where the claim has no such guess."""
    return default if value is None else value


def _megatron_inputs(s: Settings, g: GuessArgs) -> dict[str, object]:
    return {"model": "gpt-1t", "tp/pp/dp": "8/64/6", "batch": _or(g.batch, 3072), "K": 8, "tp_scheme": s.tp_scheme}


def _traffic_share(key: str) -> Compute:
    def compute(s: Settings, g: GuessArgs) -> tuple[float, Inputs]:
        summary, _, _ = _megatron_numbers(s.tp_scheme, _or(g.batch, 3072))
        return summary[key], _megatron_inputs(s, g)
    return compute


def _hb_pair_gb(s: Settings, g: GuessArgs) -> tuple[float, Inputs]:
    _, hb_pair, _ = _megatron_numbers(s.tp_scheme, _or(g.batch, 3072))
    return hb_pair / 1e9, {**_megatron_inputs(s, g), "pair": "ring neighbour in one DGX"}


def _nic_pair_gb(s: Settings, g: GuessArgs) -> tuple[float, Inputs]:
    _, _, nic_pair = _megatron_numbers(s.tp_scheme, _or(g.batch, 3072))
    return nic_pair / 1e9, {**_megatron_inputs(s, g), "pair": "GPU 0 -> GPU 48 (next stage, same rail)"}


@functools.lru_cache(maxsize=2)
def _gh200_shares(tp_scheme: str) -> tuple[float, float]:
    """(DP bytes on the NIC / all bytes, DP bytes inside the HB domain / DP bytes)."""
    import numpy as np

    # DP 64 = 32 GPUs per domain x 2 domains with Megatron's rank order (tensor fastest, then
    # data) forces TP = 256 / 32 = 8, so PP = 4096 / (8 * 64) = 8.
    tm = traffic.megatron(model_by_name("gpt-1t"), iteration.Parallelism(8, 8, 64, 1), 4096, 256, tp_scheme)
    dp = tm.by_kind["dp"]
    domain = np.arange(tm.gpus) // 256
    inside = sum(float(dp[domain == d][:, domain == d].sum()) for d in np.unique(domain))
    everything = sum(float(m.sum()) for m in tm.by_kind.values())
    outside = float(dp.sum()) - inside
    return outside / everything, inside / float(dp.sum())


def _gh200(s: Settings, g: GuessArgs) -> tuple[tuple[float, float], Inputs]:
    return _gh200_shares(s.tp_scheme), {"model": "gpt-1t", "tp/pp/dp": "8/8/64", "batch": 4096, "K": 256, "tp_scheme": s.tp_scheme}


def _gh200_dp_nic(s: Settings, g: GuessArgs) -> tuple[float, Inputs]:
    shares, inputs = _gh200(s, g)
    return shares[0], inputs


def _gh200_dp_hb(s: Settings, g: GuessArgs) -> tuple[float, Inputs]:
    shares, inputs = _gh200(s, g)
    return shares[1], inputs


MOE_RECOMPUTE = "on (the script's default)"


def _moe_share(s: Settings, g: GuessArgs) -> tuple[float, Inputs]:
    batch = _or(g.moe_batch, 512)
    model = replace(traffic.MOE_1_3B, recompute=_or(g.moe_recompute, "off") == MOE_RECOMPUTE)
    summary = traffic.summary(traffic.moe(model, 128, batch, 8))
    return summary["a2a_share"], {"model": "moe-1.3b (128 experts)", "gpus": 128, "K": 8, "batch": batch,
                                  "activation checkpointing": model.recompute}


def _fig7(model: str) -> Compute:
    def compute(s: Settings, g: GuessArgs) -> tuple[float, Inputs]:
        i = next(j for j, r in enumerate(iteration.VALIDATION) if r.model == model)
        others = [r for j, r in enumerate(iteration.VALIDATION) if j != i]
        eff = iteration.calibrate(others, hb_efficiency=s.hb_efficiency, options=s.options)
        row = iteration.validation_rows(eff, s.hb_efficiency, options=s.options)[i]
        return abs(row.error), {"efficiency (fitted on the other three runs)": round(eff, 4),
                                "hb_efficiency": round(s.hb_efficiency, 3), "gpus": row.gpus,
                                "model_hfu": round(row.model_hfu, 4), "published_hfu": round(row.published_hfu, 4)}
    return compute


def _fabric(k: int, n: int, g: GuessArgs) -> dict[str, Any]:
    """Platform options of the K = 256 HB domain under the ``fabric`` guess (the ideal K = N
    stays one flat fabric, as the paper defines it)."""
    if g.fabric != GH200_TWO_TIERS or k != 256 or k >= n:
        return {}
    return dict(sweeps.GH200_TIERS)


def _schedule(g: GuessArgs) -> dict[str, Any]:
    """Platform options of the ``overlap`` and ``grad_bytes`` guesses, for the cluster and its
    ideal alike."""
    options = dict(sweeps.MEGATRON_2021) if g.overlap == MEGATRON_2021 else {}
    return {**options, **({"grad_bytes": g.grad_bytes} if g.grad_bytes is not None else {})}


def _fig8(model: str) -> Compute:
    def compute(s: Settings, g: GuessArgs) -> tuple[float, Inputs]:
        n, batch = _or(g.gpus, 32768), _or(g.batch, sweeps.DEFAULT_BATCH)
        opts = {**dict(s.platform_options()), **_schedule(g)}
        ideal = sweeps.point(model, n, n, batch, **opts)
        p = sweeps.point(model, n, 256, batch, **opts, **_fabric(256, n, g))
        return p.seconds / ideal.seconds - 1, {"gpus": n, "batch": batch, "K": 256, "split": p.split,
                                               **_rounded(opts), **_fabric(256, n, g)}
    return compute


def _fig9(k: int, vary: str) -> Compute:
    def compute(s: Settings, g: GuessArgs) -> tuple[float, Inputs]:
        n, batch = _or(g.gpus, 32768), _or(g.batch, sweeps.DEFAULT_BATCH)
        opts = {**dict(s.platform_options()), **_schedule(g), **_fabric(k, n, g)}
        c_f, c_s = HELD_BANDWIDTHS[_or(g.held, HELD_H100)]
        if vary == "hb":
            lo, hi = (sweeps.point("gpt-1t", n, k, batch, c_f_bps=bw, c_s_bps=c_s, **opts)
                      for bw in (2.4e12, 9.6e12))
        else:
            lo, hi = (sweeps.point("gpt-1t", n, k, batch, c_f_bps=c_f, c_s_bps=bw, **opts)
                      for bw in (100e9, 400e9))
        held = f"C_S {c_s / 1e9:g} Gbit/s" if vary == "hb" else f"C_F {c_f / 1e12:g} Tbit/s"
        speedup = g.gain == GAIN_SPEEDUP if g.gain in (GAIN_SPEEDUP, GAIN_TIME_SAVED) else s.fig9_speedup
        gain = lo.seconds / hi.seconds - 1 if speedup else 1 - hi.seconds / lo.seconds
        return gain, {"gpus": n, "batch": batch, "K": k, **_rounded(opts),
                      "gain": GAIN_SPEEDUP if speedup else GAIN_TIME_SAVED,
                                             "range": ("C_F 2.4->9.6 Tbit/s" if vary == "hb"
                                                       else "C_S 100->400 Gbit/s") + f", {held}"}
    return compute


GAIN_TIME_SAVED = "iteration time saved"
GAIN_SPEEDUP = "speedup"
HELD_H100 = "DGX H100 (3.6 Tbit/s, 400 Gbit/s)"
HELD_LOWEST = "the axes' lowest (2.4 Tbit/s, 100 Gbit/s)"
HELD_BANDWIDTHS = {HELD_H100: (3.6e12, 400e9), HELD_LOWEST: (2.4e12, 100e9)}
"""(C_F, C_S) at which Fig. 9 holds the bandwidth it does not vary, by reading."""


def _fig10(k: int, batch: int) -> Compute:
    def compute(s: Settings, g: GuessArgs) -> tuple[float, Inputs]:
        opts = {**dict(s.platform_options()), **_schedule(g)}
        ideal = sweeps.point("gpt-1t", sweeps.FIG10_GPUS, sweeps.FIG10_GPUS, batch, **opts)
        fabric = _fabric(k, sweeps.FIG10_GPUS, g)
        p = sweeps.point("gpt-1t", sweeps.FIG10_GPUS, k, batch, **opts, **fabric)
        return ideal.seconds / p.seconds, {"gpus": sweeps.FIG10_GPUS, "K": k, "batch": batch, **_rounded(opts),
                                           **fabric}
    return compute


def _fig10_falls(s: Settings, g: GuessArgs) -> tuple[float, Inputs]:
    opts = dict(s.platform_options())
    times = []
    for b in sweeps.FIG10_BATCHES:
        t = sweeps.point("gpt-1t", sweeps.FIG10_GPUS, 8, b, **opts).seconds
        times.append(t / b if s.per_sequence else t)
    falls = all(a > b for a, b in zip(times, times[1:]))
    return float(falls), {"gpus": sweeps.FIG10_GPUS, "K": 8, "metric": "s/sequence" if s.per_sequence else "s/iteration",
                          "times": [round(t, 4) for t in times]}


def _rounded(opts: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in opts.items()}


def _parts(s: Settings, price_scale: float = 1.0) -> netcost.Parts:
    """The setting's parts, prices times ``price_scale`` (a probe of the paper's unpublished
    prices; 1 everywhere a row is computed)."""
    parts = netcost.PEAK_PARTS if s.peak_power else netcost.PUBLIC_PARTS
    if price_scale == 1.0:
        return parts
    return replace(parts, switch_usd_per_port=parts.switch_usd_per_port * price_scale,
                   transceiver_usd=parts.transceiver_usd * price_scale)


def _intro(what: str) -> Compute:
    def compute(s: Settings, g: GuessArgs) -> tuple[float, Inputs]:
        radix = _or(g.radix, 64)
        net = netcost.rail_optimized(netcost.Cluster(s.gpus_30k, 8, radix), _parts(s, _or(g.price_scale, 1.0)))
        value = net.cost_usd / 1e6 if what == "cost" else net.power_w / 1e6
        return value, {"gpus": s.gpus_30k, "K": 8, "radix": radix, "switches": net.switches,
                       "transceivers": net.transceivers, "power": "peak" if s.peak_power else "typical"}
    return compute


def _table2(key: str, end: str) -> Compute:
    scale = {"cost_saving": 1.0, "power_saving": 1.0, "cost_saving_usd": 1e-6, "power_saving_w": 1e-6}[key]

    def compute(s: Settings, g: GuessArgs) -> tuple[float, Inputs]:
        grid = TABLE2_GRIDS[_or(g.grid, "all")]
        rows = [netcost.compare(c, _parts(s, _or(g.price_scale, 1.0))) for c in netcost.TABLE2_CLUSTERS if grid(c)]
        saving = [getattr(c, key) for c in rows if c.cost_saving > 0]
        value = (min(saving) if end == "low" else max(saving)) * scale
        return value, {"rows": f"{len(saving)} of {len(rows)} grid rows with a saving",
                       "power": "peak" if s.peak_power else "typical"}
    return compute


T2_THREE_TIER_32K = "32k-65k GPUs, radix 64/128"
TABLE2_GRIDS: dict[str, Callable[[netcost.Cluster], bool]] = {
    "all": lambda c: True,
    "radix 64/128": lambda c: c.radix >= 64,
    "32k-65k GPUs": lambda c: c.gpus >= 32768,
    T2_THREE_TIER_32K: lambda c: c.gpus >= 32768 and c.radix >= 64,
}
"""Which rows of :data:`netcost.TABLE2_CLUSTERS` Table II has: unknown (our copy has the
caption only), so the grid is a guess and these are its alternatives."""
_GRID_GUESS = Guess("Table II rows", "all", ("radix 64/128", "32k-65k GPUs", T2_THREE_TIER_32K),
                    "our copy of the paper has Table II's caption, not its rows: every combination of the sizes, "
                    "radices and HB domains its evaluation names")


# ---------------------------------------------------------------- the claims

_BATCH_GUESS = Guess("global batch", 4096, (1024, 2048), "not stated for Figs. 8-9; 4096 is the batch of the "
                     "paper's GPT-1T traffic study (section III-B) and the top of Fig. 10")
_GPUS_GUESS = Guess("cluster size", 32768, (16384, 65536), "not stated for the quoted numbers; 32,768 is Fig. 10's "
                    "cluster, the middle of Fig. 8's 16k-65k")
GH200_TWO_TIERS = "DGX GH200 two tiers"
_FABRIC_GUESS = Guess("K = 256 fabric", "flat", (GH200_TWO_TIERS,),
                      "the paper takes the 256-GPU GH200 domain as one full-bisection 3.6 Tbit/s fabric (section II) "
                      "and innet follows it; NVIDIA publishes 57.6 TB/s all-to-all for the DGX GH200, i.e. 8-GPU "
                      "boards joined at half the NVLink rate (iteration.GH200_CROSS_TIER), which slows groups "
                      "with one member per board by 2 (the alternative)")
MEGATRON_2021 = "nothing (Megatron-LM 2021)"
_OVERLAP_GUESS = Guess("communication overlap", "DP and PP", (MEGATRON_2021,),
                       "the paper assumes computation overlaps communication (section V-A lists it as an error "
                       "source) without saying which; innet hides the DP reduction behind the last backward pass "
                       "and the steady state's pipeline sends, TP exposed (Megatron-Core). The alternative is "
                       "Megatron-LM 2021, whose splits the paper follows: train_step reduces the gradients after "
                       "the backward pass and p2p_communication._communicate waits on every send")
_GRAD_GUESS = Guess("gradient reduce bytes", 2, (4,),
                    "Megatron-LM reduces bf16 training's gradients in fp32 (4 bytes) unless told "
                    "--grad-reduce-in-bf16 (arguments.py: 'bfloat16 requires gradient accumulation and all-reduce "
                    "to be done in fp32'); innet uses 2 because with 4 the published Megatron-Core H100 runs come "
                    "out slower than measured (the H100 validation prints the median under grad_bytes=4)")
_HELD_GUESS = Guess("other bandwidth held at", HELD_H100, (HELD_LOWEST,),
                    "Fig. 9 varies one bandwidth at a time and does not say where it holds the other; innet holds "
                    "it at the DGX H100's rates (the cluster of Figs. 8 and 10); the alternative holds it at the "
                    "start of its axis, the 1x of the figure's '4x'")
GAIN_AS_SETTING = "the setting's reading"
_GAIN_GUESS = Guess("Fig. 9 gain", GAIN_AS_SETTING, (GAIN_TIME_SAVED, GAIN_SPEEDUP),
                    "section V-C gives a 'performance improvement' for 4x bandwidth without a formula; 'after' "
                    "reads it as a speedup (t_1x / t_4x - 1) because section V-D measures performance as ideal "
                    "time / time, 'before' as the share of iteration time saved (1 - t_4x / t_1x); both are "
                    "shown")
_FIG9_CAUSE = ("the paper states neither the cluster size nor the batch behind Fig. 9, and the gains move by tens "
               "of points across them (guess columns; the scan of 16k-65k GPUs x batch 1k-8k gives 4x HB at "
               "K = 8 12-34%, never the paper's 8%, and the other rows agree each at its own combinations, none "
               "shared); hiding the TP collectives (tp_overlap 1) drops 4x HB at K = 256 below 2%, so the "
               "paper's model exposes them; neither Megatron-LM 2021's schedule nor DGX GH200's two tiers moves "
               "a row within, nor does holding the other bandwidth at its axis's start (4x HB at K = 8: 9.3% as "
               "a speedup, 8.5% as time saved). The paper would need to state the cluster, the batch and the "
               "held bandwidth of the figure")

_PRICE_SCALES = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0)
"""Multiples of innet's switch and transceiver prices scanned for the money rows (the paper's
prices, TopoOpt's, are not in any source reachable here)."""
_FIG89_PROBE = Probe.over(cluster_size=(16384, 32768, 65536), global_batch=(1024, 1536, 2048, 3072, 4096, 8192))
"""Figs. 8-9 name neither the cluster (16k-65k GPUs, section V-B) nor the batch."""


def _t2(key: str, what: str, paper: float, unit: str, saving: str, end: str, cause: str = "") -> Claim:
    """One end of one of Table II's ranges (section V-E), over the guessed grid of rows; the
    probe scans the grids (and, for money, the price scale)."""
    scans: dict[str, tuple[GuessValue, ...]] = {"Table_II_rows": tuple(TABLE2_GRIDS)}
    if unit == "$M":
        scans["price_scale"] = _PRICE_SCALES
    return Claim(key, "§V-E, Table II", what, paper, unit, _table2(saving, end), guesses=(_GRID_GUESS,), cause=cause,
                 probes=(Probe.over(**scans),))


CLAIMS: tuple[Claim, ...] = (
    Claim("a2a_a100", "§IV-B", "all-to-all slowdown, rail-only vs rail-optimized, DGX A100", 0.082, "%", _a2a("dgx-a100")),
    Claim("a2a_h100", "§IV-B", "all-to-all slowdown, DGX H100", 0.112, "%", _a2a("dgx-h100")),
    Claim("fig2_idle", "§III-A, Fig. 2b", "GPU pairs with no traffic (Megatron GPT-1T)", 0.99, "%",
          _traffic_share("idle_pairs"), "at_least"),
    Claim("fig2_tp_pairs", "§III-A, Fig. 2b", "GPU pairs carrying TP traffic", 0.0004, "%",
          _traffic_share("tp_pairs"), "at_most"),
    Claim("fig2_tp_share", "§III-A, Fig. 2a", "TP share of all bytes", 0.75, "%", _traffic_share("tp_share"), "at_least"),
    Claim("fig3_hb_pair", "§III-B, Fig. 3", "bytes per GPU pair inside the HB domain (GPT-1T)", 300.0, "GB",
          _hb_pair_gb, guesses=(Guess("global batch", 3072, (1026,), "Megatron-LM's GPT-1T run (Narayanan et al. "
                                      "2021, Table 1); the paper's figure does not state it"),),
          cause="ring collectives put a TP group's bytes on one neighbour (the paper's < 0.04% of pairs with TP "
                "traffic pins that: spreading over all 7 peers gives 0.23%); 300 GB is what a third of the "
                "micro-batches (batch 1026, guess column) moves, so the figure's batch or collective count is not Megatron's; "
                "the bytes grow linearly with the batch, so the paper would need to state the batch (or "
                "micro-batch count) behind Fig. 3",
          probes=(Probe.over(global_batch=(768, 864, 960)),)),
    Claim("fig3_nic_pair", "§III-B, Fig. 3", "bytes per GPU pair across HB domains (PP, same rail)", 6.0, "GB", _nic_pair_gb,
          cause="one PP hop sends b s h / t bf16 values (Megatron's scatter/gather) per micro-batch each way: "
                "13.1 MB x 512 = 6.7 GB, 12% above the '~6 GB' read off the figure's colour scale (the DP ring "
                "pairs carry 6.6 GB); the paper would need to print the pair's bytes or the batch behind Fig. 3",
          probes=(Probe.over(global_batch=(2880, 2976)),)),
    Claim("fig3_in_rail", "§III-B", "NIC-domain bytes that stay on one rail", 1.0, "%",
          _traffic_share("nic_in_rail_share"), "at_least"),
    Claim("fig4_dp_nic", "§III-B, Fig. 4", "DP bytes on the NIC, share of all bytes (GPT-1T, 16 GH200)", 0.008, "%",
          _gh200_dp_nic,
          cause="with DP 64 = 32 per domain x 2 domains Megatron's rank order forces TP 8, and TP then carries "
                "94% of the bytes; 0.8% needs DP to be about half of all bytes, i.e. about 3x less TP traffic "
                "than innet counts (the same factor as Fig. 3's 300 GB vs innet's ~1 TB); within only by the "
                "1-point rule"),
    Claim("fig4_dp_hb", "§III-B, Fig. 4", "allreduce bytes inside the HB domain (hierarchical)", 0.98, "%", _gh200_dp_hb),
    Claim("fig5_a2a_share", "§IV-B, Fig. 5", "all-to-all share of MoE-1.3B traffic", 0.27, "%", _moe_share,
          cause="27% needs the all-to-all to move 0.37x the dense all-reduce's bytes; DeepSpeed-MoE's published "
                "1.3B+MoE-128 run (batch 512, top-1, experts in every other layer, 2,048 tokens) gives 0.44 "
                "(31%), and its script's activation checkpointing, which redoes the forward's dispatch and "
                "combine, would raise it to 0.66 (40%, guess column); the share grows with the tokens per "
                "GPU and 27% is batch ~430 (guess column), so the paper would need to state its batch or GPU "
                "count",
          guesses=(Guess("MoE global batch", 512, (256, 1024), "the paper does not state it; 512 is DeepSpeed-MoE's "
                         "GPT-3 XL (1.3B) batch in Megatron-DeepSpeed's examples_deepspeed/MoE/"
                         "ds_pretrain_gpt_1.3B_MoE128.sh (GLOBAL_BATCH_SIZE=512, SEQ_LEN=2048)"),
                   Guess("MoE activation checkpointing", "off", (MOE_RECOMPUTE,),
                         "the paper counts bytes from the model and its parallelization and does not say; the "
                         "same script sets ACTIVATION_CHECKPOINT=true, which redoes each MoE layer's forward "
                         "all-to-alls in the backward pass; off matches the MoE iteration model and the "
                         "testbed measurement it is checked against")),
          probes=(Probe.over(MoE_global_batch=(256, 384, 512, 640)),)),
    Claim("fig7_1t", "§V-A, Fig. 7", "HFU error against Korthikanti et al., GPT-1T (at most)", 0.018, "%",
          _fig7("gpt-1t"), "at_most"),
    Claim("fig7_22b", "§V-A, Fig. 7", "HFU error, GPT-22B (at most)", 0.108, "%", _fig7("gpt-22b"), "at_most"),
    Claim("fig8_1t", "§V-B, Fig. 8", "GPT-1T slowdown at K = 256 vs one fabric (K = N)", 0.009, "%", _fig8("gpt-1t"),
          guesses=(_GPUS_GUESS, _BATCH_GUESS, _OVERLAP_GUESS, _GRAD_GUESS, _FABRIC_GUESS),
          cause="with NVLink at 0.6 of its rate the K = 256 domain's DP phase costs more than the ideal's; "
                "at the measured 0.82 ('after') it is within"),
    Claim("fig8_146b", "§V-B, Fig. 8", "GPT-146B slowdown at K = 256 vs K = N", 0.041, "%", _fig8("gpt-146b"),
          guesses=(_GPUS_GUESS, _BATCH_GUESS, _OVERLAP_GUESS, _GRAD_GUESS, _FABRIC_GUESS),
          cause="the best split (TP 8, PP 2, DP 2048 at 32,768 GPUs) hides its DP gradient reduction "
                "behind the last micro-batch's backward pass at K = 256 as at K = N, leaving only the pipeline "
                "sends (2 ms of 0.59 s); Megatron-LM 2021's schedule exposes the reduction and the sends (guess "
                "column 'communication overlap'), DGX GH200's two tiers slow the reduction's HB phase (guess "
                "column 'K = 256 fabric'), and the paper does not say which cluster size 4.1% is for; with DP "
                "and PP overlapped no scanned cluster x batch gives 3.7-4.5% (16k-65k GPUs x batch 1k-8k: "
                "0.15-12%, jumping with the best split). The paper would need to state its overlap "
                "assumptions, cluster and batch",
          probes=(_FIG89_PROBE,)),
    Claim("fig9_k8_hb", "§V-C, Fig. 9", "GPT-1T, K = 8: performance gained by 4x HB bandwidth", 0.080, "%",
          _fig9(8, "hb"), guesses=(_GPUS_GUESS, _BATCH_GUESS, _OVERLAP_GUESS, _GRAD_GUESS, _HELD_GUESS, _GAIN_GUESS),
          cause=_FIG9_CAUSE, probes=(_FIG89_PROBE,)),
    Claim("fig9_k8_nic", "§V-C, Fig. 9", "GPT-1T, K = 8: gained by 4x NIC bandwidth", 0.359, "%", _fig9(8, "nic"),
          guesses=(_GPUS_GUESS, _BATCH_GUESS, _OVERLAP_GUESS, _GRAD_GUESS, _HELD_GUESS, _GAIN_GUESS), cause=_FIG9_CAUSE,
          probes=(_FIG89_PROBE,)),
    Claim("fig9_k256_hb", "§V-C, Fig. 9", "GPT-1T, K = 256: gained by 4x HB bandwidth", 0.133, "%", _fig9(256, "hb"),
          guesses=(_GPUS_GUESS, _BATCH_GUESS, _OVERLAP_GUESS, _GRAD_GUESS, _FABRIC_GUESS, _HELD_GUESS, _GAIN_GUESS),
          cause=_FIG9_CAUSE, probes=(_FIG89_PROBE,)),
    Claim("fig9_k256_nic", "§V-C, Fig. 9", "GPT-1T, K = 256: gained by 4x NIC bandwidth", 0.080, "%", _fig9(256, "nic"),
          guesses=(_GPUS_GUESS, _BATCH_GUESS, _OVERLAP_GUESS, _GRAD_GUESS, _FABRIC_GUESS, _HELD_GUESS, _GAIN_GUESS),
          cause=_FIG9_CAUSE, probes=(_FIG89_PROBE,)),
    Claim("fig10_k8_256", "§V-D, Fig. 10", "GPT-1T, 32,768 GPUs, K = 8, batch 256: performance vs ideal", 0.65, "%",
          _fig10(8, 256), guesses=(_OVERLAP_GUESS, _GRAD_GUESS)),
    Claim("fig10_k8_4096", "§V-D, Fig. 10", "K = 8, batch 4096", 0.85, "%", _fig10(8, 4096), guesses=(_OVERLAP_GUESS, _GRAD_GUESS)),
    Claim("fig10_k256_256", "§V-D, Fig. 10", "K = 256, batch 256", 0.95, "%", _fig10(256, 256), guesses=(_OVERLAP_GUESS, _GRAD_GUESS, _FABRIC_GUESS)),
    Claim("fig10_k256_4096", "§V-D, Fig. 10", "K = 256, batch 4096", 0.99, "%", _fig10(256, 4096), guesses=(_OVERLAP_GUESS, _GRAD_GUESS, _FABRIC_GUESS)),
    Claim("fig10_falls", "§V-D, Fig. 10", "time falls as the batch grows (K = 8)", 1.0, "bool", _fig10_falls, "true",
          cause="an iteration over a bigger batch on a fixed cluster takes longer; only time per sequence "
                "(the 'after' reading) falls"),
    Claim("intro_cost", "§I", "rail-optimized network for ~30,000 GPUs: cost", 200.0, "$M", _intro("cost"),
          guesses=(Guess("switch radix", 64, (32, 128), "QM9700, the paper's ref. [31], has 64 ports of 400G"),),
          probes=(Probe.over(price_scale=_PRICE_SCALES),)),
    Claim("intro_power", "§I", "same network: peak power", 4.6, "MW", _intro("power"),
          guesses=(Guess("switch radix", 64, (32, 128), "QM9700, the paper's ref. [31]"),),
          cause="typical switch power (747 W) is not peak power; with the QM9700's maximum (1,720 W, its port "
                "optics included) and 9 W per NIC-end transceiver it is the 'after' row"),
    _t2("t2_cost_low", "cost saving, low end of the range", 0.38, "%", "cost_saving", "low",
        "the low end depends only on which rows Table II has, and our copy has its caption, not its rows: "
        "innet's grid keeps radix 32 (the setup names radix 32, 64 and 128), where a full-bisection Clos of "
        "16k-65k GPUs needs four tiers and rail-only drops one (26.6%); on the rows where rail-optimized "
        "has three tiers and rail-only drops one, 36.2%. The paper would need to list its rows (N, K, radix)"),
    _t2("t2_cost_high", "cost saving, high end", 0.77, "%", "cost_saving", "high"),
    _t2("t2_power_low", "power saving, low end", 0.37, "%", "power_saving", "low",
        "as the cost's low end: the radix-32 rows drop one of four tiers (27.3%); dropping one of three "
        "gives 37.5% with the paper's cited parts (QM9700 maximum 1,720 W with its port optics, ref. [31]; "
        "9 W per NIC-end MMA4Z00-NS400, ref. [30]), and two of three 75.0%: exactly the paper's 37% and "
        "75%. The paper would need to list its rows"),
    _t2("t2_power_high", "power saving, high end", 0.75, "%", "power_saving", "high", "see the low end"),
    _t2("t2_usd_low", "money saved, low end", 117.0, "$M", "cost_saving_usd", "low",
        "money saved is 2 x (switch price per port + transceiver price) per GPU per tier removed, so it "
        "hinges on the paper's prices (TopoOpt's, ref. [13]: not in any source reachable here) and on its "
        "rows. innet's prices reproduce section I's $200M for 30,000 GPUs, and the same price scan of that "
        "row is within at scale 1 only (JSON would_agree of intro_cost); Table II's $117M and $234M both "
        "need 1.5x those prices on the three-tier 32k-65k rows (scan), at which section I's network would "
        "cost ~$300M and the 6.9 MW end falls to 3.5 MW, and with the radix-32 rows the two ends need "
        "different scales. No one price set and "
        "row set gives section I and Table II together: the paper would need to state its per-part "
        "prices and its rows"),
    _t2("t2_usd_high", "money saved, high end", 234.0, "$M", "cost_saving_usd", "high", "see the low end"),
    _t2("t2_mw_low", "power saved, low end", 1.7, "MW", "power_saving_w", "low",
        "the power parts are the paper's cited ones, so only the rows are missing: the grid's smallest "
        "saving is one tier at 16,384 GPUs (0.88 MW); one tier at 32,768 GPUs saves 1.76 MW (scan), and "
        "the paper would need to state whether Table II has 16,384-GPU rows"),
    _t2("t2_mw_high", "power saved, high end", 6.9, "MW", "power_saving_w", "high"),
)
"""The paper's quantitative claims (numbers from our copy of the paper; sections and figures
as it numbers them)."""


@dataclass(frozen=True)
class GuessOutcome:
    """One guess of a claim: the value used, why, and the claim's number under each alternative."""

    name: str
    value: GuessValue
    why: str
    alternatives: tuple[tuple[str, float], ...]
    """(the alternative as text, the claim's number under it)."""

    def under(self, alternative: str) -> float:
        """The claim's number under ``alternative`` (as :attr:`alternatives` names it)."""
        for name, value in self.alternatives:
            if name == alternative:
                return value
        raise KeyError(f"guess {self.name!r} alternative {alternative!r}: none; known: "
                       f"{', '.join(n for n, _ in self.alternatives)}")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "why": self.why, "alternatives": dict(self.alternatives)}


@dataclass(frozen=True)
class ProbeOutcome:
    """One probe of a claim: the row's number at each scanned combination and where it is within."""

    names: tuple[str, ...]
    scanned: tuple[tuple[str, float], ...]
    """(the combination as text, the claim's number under it)."""
    within_at: tuple[str, ...]
    """The combinations at which the row would be within (empty: none of those scanned)."""

    def text(self) -> str:
        """One line for the table: where the row would agree, or that no scanned value does."""
        if self.within_at:
            return "would be within at " + "; ".join(self.within_at)
        return f"within at no scanned {' x '.join(self.names)}"

    def to_json(self) -> dict[str, Any]:
        return {"inputs": list(self.names), "scanned": dict(self.scanned), "within_at": list(self.within_at),
                "adopted": False}


@dataclass(frozen=True)
class ClaimRow:
    """One claim reproduced."""

    claim: Claim
    value: float
    inputs: Inputs
    within: bool
    guesses: tuple[GuessOutcome, ...] = ()
    """Per guess: its name, value, why, and the row's value under each alternative (empty when
    the guesses were not recomputed)."""
    probes: tuple[ProbeOutcome, ...] = ()
    """Per probe of the claim, where the row would be within (information, not adopted)."""

    @property
    def cause(self) -> str:
        """Why innet differs from the paper ("" when within, "not traced" when nobody knows),
        followed by what the probes found, labelled as not adopted."""
        if self.within:
            return ""
        found = " | ".join(p.text() for p in self.probes)
        return (self.claim.cause or "not traced") + (f" [scan, information only, not adopted: {found}]" if found else "")

    def to_json(self) -> dict[str, Any]:
        c = self.claim
        return {"key": c.key, "where": c.where, "what": c.what, "paper": c.paper, "unit": c.unit, "kind": c.kind,
                "tolerance": None if c.kind in ("at_least", "true") else c.tolerance(), "innet": self.value,
                "within": self.within, "inputs": dict(self.inputs), "guesses": [g.to_json() for g in self.guesses],
                "would_agree": [p.to_json() for p in self.probes],
                "cause": self.cause, "note": c.cause if self.within else ""}


def reproduce_claim(claim: Claim, settings: Settings, with_guesses: bool = True) -> ClaimRow:
    """Compute one claim under ``settings`` (and under each guess's alternatives)."""
    base = {g.name: g.value for g in claim.guesses}
    value, inputs = claim.compute(settings, _guess_args(base))
    guesses = []
    if with_guesses:
        for g in claim.guesses:
            effect = tuple((str(alt), claim.compute(settings, _guess_args({**base, g.name: alt}))[0])
                           for alt in g.alternatives)
            guesses.append(GuessOutcome(g.name, g.value, g.why, effect))
    probes = tuple(_probe(claim, settings, base, p) for p in claim.probes) if with_guesses else ()
    return ClaimRow(claim, float(value), inputs, claim.within(float(value)), tuple(guesses), probes)


def _probe(claim: Claim, settings: Settings, base: Mapping[str, GuessValue], probe: Probe) -> ProbeOutcome:
    """The claim under each of the probe's combinations (the other guesses at their values)."""
    scanned = []
    for combo in probe.values:
        value = claim.compute(settings, _guess_args({**base, **dict(zip(probe.names, combo))}))[0]
        scanned.append((probe.label(combo), float(value)))
    return ProbeOutcome(probe.names, tuple(scanned), tuple(label for label, v in scanned if claim.within(v)))


_GUESS_ARGS = {"global batch": "batch", "cluster size": "gpus", "MoE global batch": "moe_batch", "switch radix": "radix",
               "Table II rows": "grid", "K = 256 fabric": "fabric",
               "communication overlap": "overlap", "gradient reduce bytes": "grad_bytes",
               "other bandwidth held at": "held", "MoE activation checkpointing": "moe_recompute",
               "price scale": "price_scale", "Fig. 9 gain": "gain"}


def _guess_args(values: Mapping[str, GuessValue]) -> GuessArgs:
    return GuessArgs(**{_GUESS_ARGS[k]: v for k, v in values.items()})  # type: ignore[arg-type]  # each guess has its field's type


def reproduce(settings: Settings = AFTER, claims: tuple[Claim, ...] = CLAIMS, with_guesses: bool = True) -> list[ClaimRow]:
    """Every claim under ``settings``."""
    return [reproduce_claim(c, settings, with_guesses) for c in claims]


def settings_by_name(name: str) -> Settings:
    try:
        return SETTINGS[name]
    except KeyError:
        raise ModelError(f"setting {name!r}: unknown; known: {', '.join(SETTINGS)}") from None


def with_overrides(settings: Settings, **changes: Any) -> Settings:
    """``settings`` with some fields changed (the CLI's ``--hb-efficiency`` and friends)."""
    return replace(settings, **{k: v for k, v in changes.items() if v is not None})


def fmt(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value:.2%}" if abs(value) < 0.01 else f"{value:.1%}"
    if unit == "bool":
        return "yes" if value else "no"
    return f"{value:,.1f} {unit}" if unit != "$M" else f"${value:,.1f}M"


def figure_curves(settings: Settings, gpus: int = 32768) -> FigureCurves:
    """The curves behind Figs. 8 and 10 under ``settings`` (for the PNGs, beside the paper's
    points): Fig. 8's slowdown against K at ``gpus`` GPUs and batch 4096 (both guesses), and
    Fig. 10's performance relative to the ideal against the batch at K = 8 and 256."""
    opts = dict(settings.platform_options())
    fig8 = tuple((m, tuple((r.hb_size, r.slowdown) for r in
                           sweeps.hb_size_sweep((m,), (gpus,), sweeps.DEFAULT_BATCH, **opts)))
                 for m in sweeps.FIG8_MODELS)
    fig10 = tuple((k, tuple((r.batch, r.relative) for r in
                            sweeps.batch_sweep("gpt-1t", sweeps.FIG10_GPUS, sweeps.FIG10_BATCHES, (k,), **opts)))
                  for k in (8, 256))
    return FigureCurves(fig8, fig10, tuple((m, v) for (m, _), v in sweeps.PAPER_FIG8.items()),
                        tuple((k, b, v) for (k, b), v in sweeps.PAPER_FIG10.items()), gpus)


def out_of_sample(settings: Settings) -> OutOfSample:
    """The iteration model on published runs it was not fitted to
    (:data:`iteration.OUT_OF_SAMPLE`), with the efficiency fitted on :data:`iteration.VALIDATION`
    under this setting's NVLink efficiency: per run the published and modelled time and HFU,
    the error (model HFU / published HFU - 1), and the median absolute error; under ``h100``
    the same for the published BF16 H100 runs of :mod:`h100_runs` (MFU, nothing fitted)."""
    import statistics

    rows = []
    for row, run in zip(iteration.validation_rows(settings.efficiency(), settings.hb_efficiency,
                                                  iteration.OUT_OF_SAMPLE, settings.options), iteration.OUT_OF_SAMPLE):
        config = (f"TP {run.par.tp} PP {run.par.pp} DP {run.par.dp} b {run.par.microbatch} "
                  f"v {run.par.interleave}, recompute {run.par.recompute}, "
                  f"{'sequence parallel' if run.par.sequence_parallel else 'TP all-reduce'}")
        rows.append(OutOfSampleRow(**vars(row), config=config))
    return OutOfSample("Korthikanti et al. 2022 (arXiv 2205.05198), Table 5, full recompute; DGX A100",
                       settings.efficiency(), tuple(rows), statistics.median(abs(r.error) for r in rows),
                       h100_runs.summary(settings.efficiency(), settings.hb_efficiency, settings.options))


ALTERNATIVES: dict[str, PlatformOptions] = {
    "TP backward collectives beside the GEMMs": (("tp_async_backward", True),),
    "logits on the last pipeline stage": (("last_stage_logits", True),),
    "gradients reduced in fp32": (("grad_bytes", 4),),
    "blocking pipeline sends": (("pp_overlap", False),),
    "DGX GH200 two tiers above K = 8": tuple(sweeps.GH200_TIERS.items()),
}
"""Changes to the model's structure, each with a source (:class:`iteration.Platform`'s field
docstrings): Megatron-LM's asynchronous backward TP collectives, its output layer on the last
stage, its fp32 gradient reduction for bf16, its blocking pipeline sends, and DGX GH200's
published two-tier bandwidth. Each is judged on the published runs (efficiency refitted under
it), not on the paper's numbers; the claims count is shown beside, not used."""


def model_alternatives(settings: Settings) -> list[Alternative]:
    """For ``settings`` and each of :data:`ALTERNATIVES` on top of it: the efficiency refitted on
    the A100 runs, the median |error| on them (in-sample), on the A100 full-recompute runs and
    on the H100 runs (out of sample), and how many of the paper's claims are within."""
    import statistics

    rows = []
    for name, options in {"as used": (), **ALTERNATIVES}.items():
        s = replace(settings, options=settings.options + options)
        fitted = iteration.validation_rows(s.efficiency(), s.hb_efficiency, options=s.options)
        oos = out_of_sample(s)
        claims = reproduce(s, with_guesses=False)
        rows.append(Alternative(name, options, s.efficiency(),
                                statistics.median(abs(r.error) for r in fitted),
                                oos.median_abs_error, oos.h100.median_abs_error,
                                sum(r.within for r in claims), len(claims)))
    return rows


MOE_PLATFORMS = {"dgx-a100": (iteration.A100, 2.4e12, 200e9), "dgx-h100": (iteration.H100, 3.6e12, 400e9)}
"""The paper's Fig. 5 platform (16 DGX A100) and its H100 counterpart: GPU, C_F, C_S."""


def moe_section(settings: Settings, batches: tuple[int, ...] = (256, 512)) -> list[MoeRow]:
    """MoE-1.3B on 128 GPUs (K = 8): iteration time by expert placement and rail-only's
    slowdown, the all-to-all alone and the whole iteration (:mod:`moe`), beside the paper's
    Amdahl estimate (27% of the bytes x 8.2% / 11.2%)."""
    from innet.testbed.rail.models import moe

    rows = []
    for name, (gpu, c_f, c_s) in MOE_PLATFORMS.items():
        cluster = moe.MoeCluster(gpu, 128, 8, c_f, c_s, settings.efficiency(), settings.hb_efficiency)
        for batch in batches:
            r = moe.compare(traffic.MOE_1_3B, cluster, batch)
            paper_slowdown = 0.082 if name == "dgx-a100" else 0.112
            rows.append(MoeRow(name, batch, MoeTimes(**r["hb"]), MoeTimes(**r["rail-optimized"]),
                               MoeTimes(**r["rail-only"]), MoeSlowdown(**r["slowdown"]), 0.27 * paper_slowdown))
    return rows


def table2_rows(settings: Settings) -> list[Table2Row]:
    """Table II row by row on innet's grid: both networks' switches per tier, transceivers,
    cost and power, and the savings; beside them the paper's literal reading of section IV-A
    ("remove the spine": rail-only = rail-optimized minus its top tier, ``tiers(N) - 1`` tiers
    per rail) with whether that many tiers can connect a rail of ``N/K`` GPUs at full
    bisection (``2 (k/2)^t`` endpoints on ``t`` tiers). Where it cannot, innet's count (the
    fewest tiers that can) is the right one."""
    parts = _parts(settings)
    rows = []
    for c in netcost.TABLE2_CLUSTERS:
        comp = netcost.compare(c, parts)
        rail = c.gpus // c.gpus_per_domain
        literal_tiers = comp.rail_optimized.tiers - 1
        capacity = c.radix if literal_tiers == 1 else 2 * (c.radix // 2) ** literal_tiers
        rows.append(Table2Row(c.gpus, c.gpus_per_domain, c.radix, rail, NetworkTotals.of(comp.rail_optimized),
                              NetworkTotals.of(comp.rail_only), comp.cost_saving, comp.power_saving,
                              comp.cost_saving_usd, comp.power_saving_w, literal_tiers, capacity,
                              literal_tiers >= 1 and rail <= capacity, comp.rail_only.tiers == literal_tiers))
    return rows


@dataclass(frozen=True)
class Reproduction:
    """Everything ``innet model reproduce`` computed: every claim under every setting, and (when
    computed) per setting the Fig. 8/10 curves, the out-of-sample validation, MoE and Table II,
    with the model alternatives judged under the last setting."""

    settings: tuple[Settings, ...]
    rows: Mapping[str, tuple[ClaimRow, ...]]
    """Per setting name, one row per claim (the same claims in the same order)."""
    curves: Mapping[str, FigureCurves] | None = None
    out_of_sample: Mapping[str, OutOfSample] | None = None
    moe: Mapping[str, tuple[MoeRow, ...]] | None = None
    table2: Mapping[str, tuple[Table2Row, ...]] | None = None
    alternatives: tuple[Alternative, ...] | None = None

    def within(self, setting: str) -> int:
        """How many of the claims are within the paper's error under ``setting``."""
        return sum(r.within for r in self.rows[setting])

    @property
    def claims(self) -> int:
        return len(next(iter(self.rows.values()))) if self.rows else 0

    def to_json(self) -> dict[str, Any]:
        """The ``reproduce.json`` document (sections left out when not computed)."""
        return {"model": "reproduce",
                **({"curves": {n: c.to_json() for n, c in self.curves.items()}} if self.curves else {}),
                **({"out_of_sample": {n: v.to_json() for n, v in self.out_of_sample.items()}}
                   if self.out_of_sample else {}),
                **({"moe": {n: [r.to_json() for r in rs] for n, rs in self.moe.items()}} if self.moe else {}),
                **({"table2": {n: [r.to_json() for r in rs] for n, rs in self.table2.items()}}
                   if self.table2 else {}),
                **({"alternatives": [a.to_json() for a in self.alternatives]} if self.alternatives else {}),
                "settings": {s.name: s.to_json() for s in self.settings},
                "rows": {name: [r.to_json() for r in rs] for name, rs in self.rows.items()},
                "within": {name: self.within(name) for name in self.rows}, "claims": self.claims}
